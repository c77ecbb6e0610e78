"""`tandem run` speed: the UNO SD-WAN example at 10 Gbps, 10,000 flows, 1 s simulated.

The scenario is examples/uno-sdwan.yaml with its source raised to 10 Gbps and
10,000 concurrent flows; the placement is the one `tandem run` decides (UNO:
both NFs on the sNIC), so every packet takes eth0 -> SECGW -> L7FW on the
sNIC switch, crosses PCIe and is delivered to the VM by the host switch.
Two switchings, measured side by side, alternating, in one process:
- rules: dp-core OpenFlow pipelines on host and sNIC holding the OneSwitch
  translation of the chain's virtual rules (what `tandem run` does);
- portmap: the fixed port maps of the named fast path (the baseline).
Wall time is the emulator's run (build excluded, printed apart); the CPU
figure is this thread's CPU time (what one core takes when the machine is
not shared). Prints medians of --repeat runs, the ratio rules/portmap of
simulated-packets-per-second (>= 0.8 is the target), and `uptime`.

    tandem bench run_speed [--repeat 5] [--gbps 10] [--flows 10000] [--sim-seconds 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from tandem.emu.scenario import build_from_scenario
from tandem.model.load import load_scenario
from tandem.placement.from_scenario import decide

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "uno-sdwan.yaml"


def scenario(gbps: float, flows: int):
    sc = load_scenario(EXAMPLE)
    src = sc.traffic["wan-in"].model_copy(update={"bandwidth": gbps * 1e9, "flows": flows})
    return sc.model_copy(update={"traffic": {"wan-in": src}})


def once(sc, placement: dict, switching: str, sim_s: float) -> dict:
    t0 = time.perf_counter()
    m, _ = build_from_scenario(sc, placement=placement, switching=switching)
    t1, c1 = time.perf_counter(), time.thread_time()
    met = m.run(sim_s)
    wall, cpu = time.perf_counter() - t1, time.thread_time() - c1
    f = met["flows"]["wan-in"]
    return {"build": t1 - t0, "wall": wall, "cpu": cpu, "tx": f["tx_packets"], "rx": f["rx_packets"],
            "gbps": f["throughput_gbps"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gbps", type=float, default=10.0)
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--sim-seconds", type=float, default=1.0)
    a = ap.parse_args()
    sc = scenario(a.gbps, a.flows)
    d = decide(sc)
    print(f"uno-sdwan at {a.gbps:g} Gbps, {a.flows} flows, {a.sim_seconds:g} s simulated; placement ({d.mode}): "
          + ", ".join(f"{n}->{v}" for n, v in sorted(d.placement.items())))
    runs: dict[str, list[dict]] = {"portmap": [], "rules": []}
    for _ in range(a.repeat):
        for sw in ("portmap", "rules"):
            runs[sw].append(once(sc, d.placement, sw, a.sim_seconds))
    med = {}
    for sw, rs in runs.items():
        wall = statistics.median(r["wall"] for r in rs)
        cpu = statistics.median(r["cpu"] for r in rs)
        build = statistics.median(r["build"] for r in rs)
        med[sw] = (wall, cpu)
        r0 = rs[0]
        walls = ", ".join(f"{r['wall']:.3f}" for r in rs)
        print(f"  {sw:8s} wall {wall:.3f} s (runs {walls}), cpu {cpu:.3f} s,"
              f" build {build * 1e3:.0f} ms; {r0['tx']} packets offered, {r0['rx']} delivered, {r0['gbps']:.2f} Gb/s")
    same = {(r["tx"], r["rx"]) for rs in runs.values() for r in rs}
    print(f"  same packets delivered by both: {'yes' if len(same) == 1 else 'NO ' + str(same)}")
    print(f"  ratio rules/portmap (simulated packets per wall-second): {med['portmap'][0] / med['rules'][0]:.2f};"
          f" per CPU-second: {med['portmap'][1] / med['rules'][1]:.2f}")
    print(f"  rules run <= 1 s: wall {med['rules'][0]:.3f} s ({'yes' if med['rules'][0] <= 1.0 else 'no'}),"
          f" CPU {med['rules'][1]:.3f} s ({'yes' if med['rules'][1] <= 1.0 else 'no'}; wall on an idle core)")
    try:
        print("  uptime:", os.popen("uptime").read().strip())
    except OSError:
        pass


if __name__ == "__main__":
    main()
