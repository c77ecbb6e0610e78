"""The emulator's switch (dp-core) against one Open vSwitch bridge, for rules that
output to NORMAL.

A random NORMAL rule set (generate_normal.py) is loaded on one OVS bridge
(``OvsOracle``'s ``br-oracle``, its MAC table cut to ``mac_table_size`` entries so
that a full table evicts, its last port no-flood) and on a dp-core ``Switch`` configured
the same way. Traffic (``normal_dp_traffic``) goes in one packet at a time, the
datapath's flows deleted after each (each packet is translated, and learned from,
by OVS itself); the frames every port sends must be equal, and so must the MAC
tables — entries (port, VLAN, MAC) in least-recently-used order, as
``ovs-appctl fdb/show`` lists them — after every ``check_every`` packets and at the
end. dp-core's clock is OVS's (``time.monotonic_ns``: OVS's ``time_now()`` is
CLOCK_MONOTONIC seconds), and no packet is sent in the last 0.4 s of a second, so
both see each packet in the same second (whether an entry is refreshed depends on
it).

Used by tests/dataplane/test_normal_dp.py and ``tandem bench learn_oracle --normal --dp``.
State: the sandbox bridge. Cost: one OVS round trip per packet.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter

from tandem.dataplane.switch import Switch
from tandem.oneswitch.extension import uses_normal
from tandem.rules.generate_learn import MACS
from tandem.rules.generate_normal import normal_ruleset, normal_traffic
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.learn_oracle import LearnReport

N_TABLES = 2
# Destinations Open vSwitch reserves (NORMAL drops them), and hosts beyond generate_learn's
RESERVED = (0x0180_C200_0000, 0x0180_C200_000E, 0x0100_0CCC_CCCC, 0x00E0_2B00_0004)
MORE_MACS = tuple(0x0200_0000_0100 | i for i in range(12))


def normal_dp_traffic(rng: random.Random, ports: list[int], n: int) -> list[tuple[int, bytes]]:
    """``normal_traffic`` plus what NORMAL treats specially: priority tags (VID 0, with
    and without a priority), reserved and multicast destinations, a multicast source,
    gratuitous ARPs, and more hosts than the table holds. Pure: randomness from ``rng``."""
    out = []
    for v, frame in normal_traffic(rng, ports, n):
        r = rng.random()
        if r < 0.06:  # a priority tag
            frame = frame[:12] + bytes((0x81, 0x00, rng.choice((0x00, 0x60)), 0x00)) + frame[12:]
        elif r < 0.1:
            frame = build_frame(eth_src=rng.choice(MACS), eth_dst=rng.choice(RESERVED))
        elif r < 0.13:
            frame = build_frame(eth_src=rng.choice(MACS), eth_dst=0x0100_5E00_0001)
        elif r < 0.15:
            frame = build_frame(eth_src=0x0100_5E00_0002, eth_dst=rng.choice(MACS))
        elif r < 0.2:  # a gratuitous ARP: a reply, or a request for the sender's own address
            ip = 0x0A00_0009
            frame = build_frame(eth_src=rng.choice(MACS), eth_dst=0xFFFF_FFFF_FFFF, eth_type=0x0806,
                                arp_op=rng.choice((1, 2)), arp_spa=ip, arp_tpa=ip if rng.random() < 0.7 else ip + 1)
        elif r < 0.35:
            frame = build_frame(eth_src=rng.choice(MORE_MACS), eth_dst=rng.choice(MACS + MORE_MACS))
        out.append((v, frame))
    return out


_FDB = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9a-f:]{17})\s+\d+\s*$")


def ovs_fdb(sb, bridge: str) -> list[tuple[int, int, int]]:
    """``bridge``'s MAC table as ``fdb/show`` lists it: (port, VLAN, MAC), LRU first."""
    rows = []
    for line in sb.appctl("fdb/show", bridge).splitlines():
        m = _FDB.match(line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), int(m.group(3).replace(":", ""), 16)))
    return rows


def dp_fdb(sw: Switch) -> list[tuple[int, int, int]]:
    return [(p, v, m) for p, v, m, _ in sw.pipeline.mac_entries()]


def fdb_text(rows) -> str:
    """MAC table rows as port/VLAN/MAC words."""
    return " ".join(f"{p}/{v}/{m:012x}" for p, v, m in rows)


def run_normal_dp_oracle(sb, seed: int, n_rules: int, n_packets: int, ports=(1, 2, 3, 4, 5),
                         mac_table_size: int = 10, check_every: int = 10, ruleset=normal_ruleset) -> LearnReport:
    """One rule set; ``report.traffic.mismatches`` the packets that differ,
    ``report.learned_mismatches`` the MAC table checks that did, ``report.learned_ref``
    OVS's entries at the end."""
    rng = random.Random(seed)
    ports = list(ports)
    rules = ruleset(rng, n_rules, ports)  # (normal_ruleset, or generate_bundle_normal's)
    o = _oracle(sb, ports)
    br = o.BRIDGE
    sb.vsctl("set", "bridge", br, f"other_config:mac-table-size={mac_table_size}")
    sb.appctl("fdb/flush", br)
    o._load(rules, [])
    sb.appctl("dpctl/del-flows")
    sw = Switch(ports, N_TABLES, drop_malformed=False)
    sw.pipeline.set_mac_table_config(300, mac_table_size)
    sw.pipeline.set_no_flood(ports[-1], True)
    sw.add_rules(rules)
    report = LearnReport(rules=len(rules), learning_rules=sum(1 for r in rules if uses_normal(r)))
    rep = report.traffic
    for i, (in_port, frame) in enumerate(normal_dp_traffic(rng, ports, n_packets)):
        ours: dict[int, list[bytes]] = {p: [] for p in ports}
        sw.pipeline.set_now_ns(_in_one_second())
        for port, out in sw.process(in_port, frame):
            ours[port].append(out)
        theirs = o._send([(in_port, frame)], sum(len(v) for v in ours.values()))
        sb.appctl("dpctl/del-flows")
        rep.packets += 1
        rep.outputs += sum(len(v) for v in ours.values())
        if any(Counter(ours[p]) != Counter(theirs[p]) for p in ports):
            rep.mismatches.append(f"packet {rep.packets} in_port {in_port} {frame.hex()}: dp-core {ours} OVS {theirs}")
        if (i + 1) % check_every == 0 or i + 1 == n_packets:
            sw.pipeline.set_now_ns(time.monotonic_ns())
            want, got = ovs_fdb(sb, br), dp_fdb(sw)
            if want != got:
                report.learned_mismatches.append(f"after packet {i + 1}: dp-core {fdb_text(got)} OVS {fdb_text(want)}")
            report.learned_ref = len(want)
    return report


def _in_one_second(margin_ns: int = 400_000_000) -> int:
    """Now, waiting first past the next whole second when fewer than ``margin_ns``
    are left of this one, so that OVS's translation of the packet sent next falls in
    the same second as dp-core's (a refresh within one second is no refresh)."""
    t = time.monotonic_ns()
    left = 1_000_000_000 - t % 1_000_000_000
    if left < margin_ns:
        time.sleep((left + 5_000_000) / 1e9)
        t = time.monotonic_ns()
    return t


def _oracle(sb, ports) -> OvsOracle:
    """``br-oracle`` with ``ports``, its last port no-flood (made once per sandbox)."""
    if OvsOracle.BRIDGE not in sb.bridges:
        o = OvsOracle(sb, ports)
        sb.no_flood(o.BRIDGE, [ports[-1]])
        return o
    o = OvsOracle.__new__(OvsOracle)
    o.sb, o.ports = sb, list(ports)
    return o
