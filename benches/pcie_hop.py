"""Cost of OneSwitch's flow-id hand-off over PCIe in the emulator (dp-core pipelines).

The UNO SD-WAN example at 10 Gbps, 10,000 flows, 1 s simulated, at the placement
`tandem run` decides (both NFs on the sNIC, so every packet crosses PCIe to the
VM on the host). Two installs of the same translation, measured side by side,
alternating, in one process:
- unmarked: `tandem run`'s install, where `untag_single_destination` sends a
  single-destination PCIe direction without its flow id (an in_port rule in
  table 0 outputs at once);
- flow id: the translation as is: the sNIC sets the flow id in the packet mark
  (`set_field:<id>->pkt_mark, output:<PCIe>`), the host matches it in table 0
  (`pkt_mark=<id> -> output`).
Prints medians of --repeat runs (wall and this thread's CPU time), the ratio,
that both deliver the same packets, and `uptime`.

    tandem bench pcie_hop [--repeat 5] [--gbps 10] [--flows 10000] [--sim-seconds 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import tandem.oneswitch.scenario as oneswitch_scenario
from tandem.emu.scenario import build_from_scenario
from tandem.model.load import load_scenario
from tandem.placement.from_scenario import decide

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "uno-sdwan.yaml"
_UNTAG = oneswitch_scenario.untag_single_destination


def _keep_flow_ids(per_switch, groups, topo):
    return {s: list(rs) for s, rs in per_switch.items()}, 0


def once(sc, placement: dict, marked: bool, sim_s: float) -> dict:
    oneswitch_scenario.untag_single_destination = _keep_flow_ids if marked else _UNTAG
    try:
        m, _ = build_from_scenario(sc, placement=placement, switching="rules")
    finally:
        oneswitch_scenario.untag_single_destination = _UNTAG
    t, c = time.perf_counter(), time.thread_time()
    met = m.run(sim_s)
    f = met["flows"]["wan-in"]
    return {"wall": time.perf_counter() - t, "cpu": time.thread_time() - c, "tx": f["tx_packets"], "rx": f["rx_packets"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gbps", type=float, default=10.0)
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--sim-seconds", type=float, default=1.0)
    a = ap.parse_args()
    sc = load_scenario(EXAMPLE)
    src = sc.traffic["wan-in"].model_copy(update={"bandwidth": a.gbps * 1e9, "flows": a.flows})
    sc = sc.model_copy(update={"traffic": {"wan-in": src}})
    d = decide(sc)
    print(f"uno-sdwan at {a.gbps:g} Gbps, {a.flows} flows, {a.sim_seconds:g} s simulated; placement: "
          + ", ".join(f"{n}->{v}" for n, v in sorted(d.placement.items())))
    runs: dict[str, list[dict]] = {"unmarked": [], "flow id": []}
    for _ in range(a.repeat):
        for name in runs:
            runs[name].append(once(sc, d.placement, name == "flow id", a.sim_seconds))
    med = {}
    for name, rs in runs.items():
        med[name] = (statistics.median(r["wall"] for r in rs), statistics.median(r["cpu"] for r in rs))
        print(f"  {name:9s} wall {med[name][0]:.3f} s, cpu {med[name][1]:.3f} s (median of {a.repeat});"
              f" {rs[0]['tx']} packets offered, {rs[0]['rx']} delivered")
    same = {(r["tx"], r["rx"]) for rs in runs.values() for r in rs}
    print(f"  same packets delivered by both: {'yes' if len(same) == 1 else 'NO ' + str(same)}")
    print(f"  ratio flow id / unmarked: wall {med['flow id'][0] / med['unmarked'][0]:.2f},"
          f" cpu {med['flow id'][1] / med['unmarked'][1]:.2f}")
    print("  uptime:", os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
