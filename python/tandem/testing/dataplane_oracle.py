"""Differential check of the emulated switch against Open vSwitch.

For a rule set (rules + groups) and a list of ``(in_port, frame)`` packets,
``compare(sandbox, ...)`` loads the same rules into a dummy OVS bridge and into
a ``Switch``, sends every packet through both and compares, port by port, the
frames each emitted (as multisets: OVS does not promise an order between
packets that arrived on different ports). On a difference it replays the
packets one at a time to name the packets that differ.

Inputs: an ``OvsSandbox`` (test support), rule-IR rules and groups. State: one
bridge, reused across rule sets. Cost: a few ovs-ofctl calls per rule set plus
one ovs-appctl call per run of packets with the same in_port.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from tandem.rules.generate import ALL_FEATURES, OF13_FEATURES, random_group, random_ruleset
from tandem.rules.ir import Group, Rule
from tandem.rules.ofctl import format_group, format_rule
from tandem.rules.packets import random_packet
from tandem.backends.ovs_sandbox import OvsSandbox, read_pcap

from tandem.dataplane.switch import Switch
from tandem.testing.ovs_flows import add_rules

# Groups whose bucket choice is deterministic in both switches (select hashes differ).
ORACLE_GROUP_TYPES = ("all", "indirect")


@dataclass
class Mismatch:
    in_port: int
    frame: bytes
    ours: dict[int, list[bytes]]
    ovs: dict[int, list[bytes]]

    def __str__(self) -> str:
        def show(d: dict[int, list[bytes]]) -> str:
            return "; ".join(f"port {p}: {[f.hex() for f in fs]}" for p, fs in sorted(d.items()) if fs) or "nothing"
        return f"in_port {self.in_port} frame {self.frame.hex()}\n  ours: {show(self.ours)}\n  ovs:  {show(self.ovs)}"


@dataclass
class RulesetResult:
    packets: int
    mismatches: list[Mismatch] = field(default_factory=list)
    frames_compared: int = 0
    timeouts_shrunk: int = 0  # rules a fin_timeout shrank (compare(..., timeouts=True): testing/fin_oracle.py)


class OvsOracle:
    """One dummy bridge ``br-oracle`` with ports ``ports`` in a sandbox."""

    BRIDGE = "br-oracle"

    def __init__(self, sandbox: OvsSandbox, ports: Sequence[int] = (1, 2, 3, 4)) -> None:
        self.sb = sandbox
        self.ports = list(ports)
        # Parse two VLAN tags like the emulator (OVS defaults to one).
        sandbox.vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=2")
        sandbox.add_bridge(self.BRIDGE, ports=self.ports)

    def _load(self, rules: Sequence[Rule], groups: Sequence[Group]) -> None:
        sb, br = self.sb, self.BRIDGE
        sb.ofctl("del-flows", br)
        sb.ofctl("del-groups", br)
        if groups:
            sb.add_groups(br, [format_group(g) for g in groups])
        if rules:
            add_rules(sb, br, rules)

    def _counts(self) -> dict[int, int]:
        br = self.sb.bridges[self.BRIDGE]
        return {p: len(read_pcap(self.sb.dir / f"{iface}.pcap")) for p, iface in br.ports.items()}

    def _send(self, packets: Sequence[tuple[int, bytes]], expect: int) -> dict[int, list[bytes]]:
        """Inject packets (runs of equal in_port per call); wait for ``expect`` frames, then quiet."""
        base = sum(self._counts().values())
        i = 0
        while i < len(packets):
            j = i
            while j < len(packets) and packets[j][0] == packets[i][0] and j - i < 64:
                j += 1
            self.sb.inject(self.BRIDGE, packets[i][0], [f for _, f in packets[i:j]])
            i = j
        deadline = time.monotonic() + 10.0
        while sum(self._counts().values()) - base < expect and time.monotonic() < deadline:
            time.sleep(0.01)
        self.sb.settle(quiet_s=0.03)
        return {p: self.sb.take_output(self.BRIDGE, p) for p in self.ports}

    purge = False  # drop OVS's datapath flows after each load (no flow from an earlier rule set lingers)
    dp_view = None  # a function of the rules giving what dp-core is given of them (OneSwitch's endpoint's view), or none
    _down: frozenset[int] = frozenset()

    def _set_down(self, down: Sequence[int]) -> None:
        """Set exactly the ports ``down`` admin-down on the bridge (the others up)."""
        br = self.sb.bridges[self.BRIDGE]
        for p in self._down ^ set(down):
            self.sb.appctl("netdev-dummy/set-admin-state", br.ports[p], "down" if p in down else "up")
        self._down = frozenset(down)

    def compare(self, rules: Sequence[Rule], groups: Sequence[Group], packets: Sequence[tuple[int, bytes]],
                n_tables: int, down: Sequence[int] = (), timeouts: bool = False) -> RulesetResult:
        """``down``: ports set admin-down on both sides for this rule set (their liveness:
        fast-failover buckets, bundle members; they still send and receive, in OVS's
        dummy ports as in dp-core)."""
        self._load(rules, groups)
        self._set_down(down)
        if self.purge:
            self.sb.appctl("revalidator/purge")
        sw = Switch(self.ports, n_tables, drop_malformed=False)
        sw.add_groups(groups)
        ids = sw.add_rules(self.dp_view(rules) if self.dp_view else rules)
        for p in down:
            sw.pipeline.set_port_live(p, False)
        ours_per_packet = []
        for in_port, frame in packets:
            d: dict[int, list[bytes]] = {p: [] for p in self.ports}
            for port, out in sw.process(in_port, frame):
                d[port].append(out)
            ours_per_packet.append(d)
        total = sum(len(fs) for d in ours_per_packet for fs in d.values())
        ovs = self._send(packets, total)
        res = RulesetResult(len(packets), frames_compared=total)
        if timeouts:  # each rule's (idle, hard) after the packets, as a fin_timeout may shrink them
            from tandem.testing.fin_oracle import dp_timeouts, ovs_timeouts, shrunk, timeout_mismatches
            ours_t = dp_timeouts(sw.pipeline, rules, ids)
            res.mismatches += timeout_mismatches(ours_t, ovs_timeouts(self.sb, self.BRIDGE))  # type: ignore[arg-type]
            res.timeouts_shrunk = shrunk(rules, ours_t)
        same = all(
            Counter(ovs[p]) == Counter(f for d in ours_per_packet for f in d[p]) for p in self.ports
        )
        if same:
            return res
        # Replay one packet at a time to name the packets that differ.
        for (in_port, frame), ours in zip(packets, ours_per_packet):
            theirs = self._send([(in_port, frame)], sum(len(v) for v in ours.values()))
            if any(Counter(theirs[p]) != Counter(ours[p]) for p in self.ports):
                res.mismatches.append(Mismatch(in_port, frame, ours, theirs))
        return res


def random_case(rng: random.Random, ports: Sequence[int], n_rules: int, n_tables: int, n_groups: int,
                n_packets: int, features: frozenset[str] = ALL_FEATURES) -> tuple[list[Rule], list[Group], list[tuple[int, bytes]]]:
    """A seeded random rule set (multi-table, masks, priorities, VLAN push/pop,
    set-field, all/indirect groups) and packets biased to hit its rules."""
    groups = []
    gid = 1
    while len(groups) < n_groups:
        g = random_group(rng, gid, ports)
        if g.type in ORACLE_GROUP_TYPES:
            groups.append(g)
            gid += 1
    rules = random_ruleset(rng, n_rules, ports, n_tables, features, groups=[g.group_id for g in groups])
    of13 = bool(features & OF13_FEATURES)  # frames with SCTP, ND, flow labels ... too
    packets = [random_packet(rng, rules, ports, of13=of13) for _ in range(n_packets)]
    return rules, groups, packets
