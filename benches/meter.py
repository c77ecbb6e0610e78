"""Meters in the emulator: a 1 Mb/s drop band against a 10 Mb/s flow.

The rule ``in_port=1 → meter:1, output:3`` (port 3 on another switch: frames
cross the modelled PCIe link) runs on the emulator backend of the three-switch
test topology; a constant-rate UDP flow is offered for ``--seconds`` of
modelled time and the rate leaving port 3 is measured, for several packet
sizes and burst settings. Prints passed rate, its error against the band
rate, and the meter's counters (packets/bytes in, dropped by the band).
Last lines: one budget across two ingress switches - the wildcard rule
``ip → meter:1, output:1`` with the flow offered at a port of *each* sNIC;
the sNIC ports are extended to the host (oneswitch/extension.py), so the
total passed must be the band rate, not twice it: on the three-switch
topology (both sNICs linked to the host) and on a chain (host - snic0 -
snic1, snic1's port extended through snic0).

    tandem bench meter [--seconds 10] [--offered-mbps 10] [--rate-kbps 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from tandem.backends.base import MeterOp
from tandem.backends.emu import EmuBackend
from tandem.oneswitch.endpoint import layout_for
from tandem.oneswitch.extension import extend, ports_to_extend
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology, load_topology
from tandem.oneswitch.ids import N_PHYSICAL_TABLES
from tandem.rules.ir import FlowMod
from tandem.rules.meters import Meter, MeterBand
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame

TOPO = Path(__file__).resolve().parents[1] / "tests" / "endpoint" / "three_switches.yaml"
# host:1 is virtual 1; snic0:1 and snic1:1 are the two ingress ports; snic1 has no link to the host
CHAIN = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                       [("host:100", "snic0:100"), ("snic0:101", "snic1:100")], {1: "host:1", 2: "snic0:1", 3: "snic1:1"})


async def _metered_backend(burst_kbit: int, rate_kbps: int, topo: Topology | None = None):
    """Three-switch emulator backend with meter 1 (one drop band) on every switch."""
    topo = topo or load_topology(TOPO)
    b = EmuBackend(n_tables=N_PHYSICAL_TABLES)
    await b.start(layout_for(topo))
    try:
        m = Meter(1, (MeterBand("drop", rate_kbps, burst_kbit),), burst=burst_kbit > 0, stats=True)
        await b.apply([MeterOp(sw, "add", m) for sw in b.switches()])
    except BaseException:
        await b.close()
        raise
    return topo, b


async def one(size: int, burst_kbit: int, seconds: float, offered_bps: float, rate_kbps: int) -> str:
    topo, b = await _metered_backend(burst_kbit, rate_kbps)
    try:
        st = OneSwitchState(topo)
        await b.apply_steps(st.apply(FlowMod("add", parse_rule("priority=10,in_port=1,actions=meter:1,output:3"))).steps)
        frame = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=5000, payload=bytes(size - 42))
        gap = size * 8 * 1e9 / offered_bps
        n = int(seconds * 1e9 / gap)
        dev = b.machine.devices["host"]
        t0 = time.perf_counter()
        for i in range(n):
            b.machine.emu.inject(("switch", dev, 1), frame, i * gap)
        b.run_for(seconds + 0.1)
        wall = time.perf_counter() - t0
        out = len(b.take_output("snic1", 1))
        rate = out * size * 8 / seconds
        [ms] = await b.meter_stats("host")
        err = (rate - rate_kbps * 1e3) / (rate_kbps * 1e3) * 100
        burst = f"{burst_kbit} kbit" if burst_kbit else "default (1 s)"
        return (f"{size:5d} B  burst {burst:>13}: offered {n} pkts, passed {out} = {rate / 1e6:.4f} Mb/s "
                f"({err:+.2f} %); meter in {ms.packet_in_count} pkts / {ms.byte_in_count} B, band dropped "
                f"{ms.band_stats[0][0]} pkts / {ms.band_stats[0][1]} B  [{wall:.2f} s wall]")
    finally:
        await b.close()


async def two_ingress(size: int, burst_kbit: int, seconds: float, offered_bps: float, rate_kbps: int,
                      chain: bool = False) -> str:
    topo, b = await _metered_backend(burst_kbit, rate_kbps, CHAIN if chain else None)
    try:
        st = OneSwitchState(topo)
        rule = parse_rule("priority=10,ip,actions=meter:1,output:1")
        for plan in extend(st, ports_to_extend(st, rule)):  # what the endpoint does for this rule
            await b.apply_steps(plan.steps)
        await b.apply_steps(st.apply(FlowMod("add", rule)).steps)
        frame = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=5000, payload=bytes(size - 42))
        gap = size * 8 * 1e9 / offered_bps
        n = int(seconds * 1e9 / gap)
        for sw, phase in (("snic0", 0.0), ("snic1", gap / 2)):
            dev = b.machine.devices[sw]
            for i in range(n):
                b.machine.emu.inject(("switch", dev, 1), frame, i * gap + phase)
        b.run_for(seconds + 0.1)
        out = len(b.take_output("host", 1))
        rate = out * size * 8 / seconds
        stats = [ms for sw in b.switches() for ms in await b.meter_stats(sw)]
        pin, dropped = sum(s.packet_in_count for s in stats), sum(s.band_stats[0][0] for s in stats)
        err = (rate - rate_kbps * 1e3) / (rate_kbps * 1e3) * 100
        where = "chain host-snic0-snic1" if chain else "two ingress switches"
        return (f"{where}, {size} B, burst {burst_kbit} kbit: offered 2 x {n} pkts, passed {out} = "
                f"{rate / 1e6:.4f} Mb/s in total ({err:+.2f} %); meter in {pin} pkts, band dropped {dropped} pkts "
                f"(in - dropped - passed = {pin - dropped - out})")
    finally:
        await b.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--offered-mbps", type=float, default=10.0)
    ap.add_argument("--rate-kbps", type=int, default=1000)
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}; {a.offered_mbps} Mb/s offered for {a.seconds} s (modelled) "
          f"into a {a.rate_kbps} kb/s drop band")
    for size, burst in [(64, 20), (1250, 20), (1500, 20), (1250, 0)]:
        print(asyncio.run(one(size, burst, a.seconds, a.offered_mbps * 1e6, a.rate_kbps)), flush=True)
    print(asyncio.run(two_ingress(1250, 20, a.seconds, a.offered_mbps * 1e6, a.rate_kbps)), flush=True)
    print(asyncio.run(two_ingress(1250, 20, a.seconds, a.offered_mbps * 1e6, a.rate_kbps, chain=True)), flush=True)


if __name__ == "__main__":
    main()
