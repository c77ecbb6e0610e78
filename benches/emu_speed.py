"""Emulation speed: simulated packets per wall-clock second, one core.

Path: host switch -> PCIe (32 Gb/s) -> sNIC switch -> 10 GbE port, 64 B frames
offered at 10 GbE line rate (14.88 Mpps). Two switch kinds: the fixed port map
and dp-core's OpenFlow pipeline (one in_port -> output rule per switch).
Prints the median of --repeat runs (each --sim-seconds of simulated time).

    tandem bench emu_speed [--sim-seconds 0.2] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from tandem.emu.machine import Machine
from tandem.rules.ir import ApplyActions, Match, Output, Rule


def build(openflow: bool) -> Machine:
    m = Machine(1)
    m.device("host", 8, 2.7e9)
    m.device("snic", 36, 1.2e9)
    m.pcie("pcie", "host", "snic", 32e9, latency_s=1e-6)
    h_vm, h_up, s_up = m.new_port("host"), m.new_port("host"), m.new_port("snic")
    m.pcie_pair("pcie", m.sw("host", h_up), m.sw("snic", s_up))
    out = m.eth("snic", "snic.p0", 10e9)
    if openflow:
        from tandem.dataplane.convert import rule_args

        for dev, i, o in (("host", h_vm, h_up), ("snic", s_up, out)):
            m.emu.use_openflow(m.devices[dev], 1, [i, o])
            rule = Rule(Match.of(in_port=i), (ApplyActions((Output(o),)),), priority=10)
            m.emu.switch_flow_mod(m.devices[dev], {"command": "add", **rule_args(rule)})
    else:
        m.forward("host", h_vm, h_up)
        m.forward("snic", s_up, out)
    m.source("vm", m.sw("host", h_vm), pps=14.88e6, flows=1024, line_bps=10e9)
    return m


def once(openflow: bool, sim_s: float) -> tuple[float, float, int]:
    """(packets per wall-second, packets per CPU-second of this thread, packets)."""
    m = build(openflow)
    t, c = time.perf_counter(), time.thread_time()
    met = m.run(sim_s)
    wall, cpu = time.perf_counter() - t, time.thread_time() - c
    n = met["flows"]["vm"]["rx_packets"]
    return n / wall, n / cpu, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-seconds", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    print(f"host switch -> PCIe -> sNIC switch -> 10 GbE, 64 B, {a.sim_seconds:g} s simulated per run, "
          f"median of {a.repeat}")
    print("(the CPU-second figure is the same work measured in this thread's CPU time: it is what one")
    print(" core delivers when the machine is not shared; the wall figure includes time other processes took)")
    for label, of in (("port map", False), ("OpenFlow pipeline (dp-core)", True)):
        runs = [once(of, a.sim_seconds) for _ in range(a.repeat)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"  {label:30s} {wall / 1e6:6.2f} Mpps per wall-second, {cpu / 1e6:6.2f} Mpps per CPU-second"
              f"  (wall runs: {', '.join(f'{r[0] / 1e6:.2f}' for r in runs)}; {runs[0][2]} packets each)")


if __name__ == "__main__":
    main()
