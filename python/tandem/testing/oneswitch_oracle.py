"""Differential oracle: the virtual switch vs. its translation, both in real Open vSwitch.

Inputs: an ``OvsSandbox``, a ``Topology``, virtual rules and groups, and a
translation (or an update plan). It builds one *reference* bridge whose
OpenFlow ports are the virtual port numbers and holds the virtual rules, and
one bridge per physical switch (its virtual ports' physical numbers plus any
spare ports for remaps) joined by patch ports at the PCIe port numbers,
holding the translated rules. ``compare(packets)`` injects every frame at its
virtual port on the reference bridge and at the mapped physical port, and
checks that the multiset of frames leaving each virtual port is byte
identical. Each injected frame gets a 4-byte id appended after its end (kept
as Ethernet trailer by OVS), so a mismatch names the packet that caused it.

Used by tests/oneswitch (``make test``) and benches/translate.py. State: the
bridges it created (``close`` removes them). Cost: two ``ovs-ofctl add-flows``
calls per bridge and one ``ovs-appctl`` per 64 frames per port.
"""

from __future__ import annotations

import itertools
import re
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

from tandem.rules.ir import (
    FlowMod, Match, OFPP_ANY, OFPP_LOCAL, Group, Rule,
)
from tandem.rules.ofctl import format_group, format_rule
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.ovs_flows import add_rules, needs_wire

from tandem.oneswitch.plan import PhysicalOp
from tandem.oneswitch.topology import PortRef, Topology
from tandem.oneswitch.translate import Translation, packet_in_state, vkey
from tandem.oneswitch.packet_in_ext import virtual_packet_in

_names = itertools.count()


@dataclass
class Mismatch:
    """One injected packet whose outputs differ between the virtual and physical switches."""

    in_port: int
    frame: bytes
    expected: list[tuple[int, bytes]]  # (virtual out port, frame) from the reference bridge
    got: list[tuple[int, bytes]]

    def __str__(self) -> str:
        def fmt(xs: list[tuple[int, bytes]]) -> str:
            return "; ".join(f"port {p}: {f.hex()}" for p, f in sorted(xs)) or "nothing"

        return f"packet in at virtual port {self.in_port} ({self.frame.hex()}):\n  expected {fmt(self.expected)}\n  got      {fmt(self.got)}"


@dataclass
class OracleReport:
    packets: int = 0
    outputs: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    packet_ins: int = 0  # with packet-in capture: packet-ins seen from the reference bridge
    packet_in_mismatches: list[str] = field(default_factory=list)
    expected_by_port: Counter = field(default_factory=Counter)  # frames the (first) reference sent per virtual port


# (OVS lists the packet's pipeline state, e.g. reg0=0x5,pkt_mark=0x3, before in_port)
_PIN_HEAD = re.compile(r"PACKET_IN.*?(?:table_id=(\d+) )?cookie=(0x[0-9a-f]+) total_len=(\d+) (?:(\S*?),)?in_port=(\d+|LOCAL|CONTROLLER).*?data_len=(\d+)")
_PORT_NAMES = {"LOCAL": OFPP_LOCAL, "CONTROLLER": 0xFFFFFFFD}
_HEX = re.compile(r"^[0-9a-f]{8}  ((?:[0-9a-f]{2}[ -]?)+)")


class PacketInRecord(NamedTuple):
    table: int
    cookie: int
    port: int
    data: bytes
    complete: bool
    state: str
    reason: str = ""  # as ``ovs-ofctl monitor`` prints it (``via action``)
    userdata: bytes = b""
    paused: bool = False  # (a controller(pause)'s: the monitor prints its continuation)


_VIA = re.compile(r"\(via (\w+)\)")
_USERDATA = re.compile(r"^ userdata=([0-9a-f.]+)")


def _reason_userdata(head: str, rest: list[str]) -> tuple[str, bytes]:
    """The reason and NXT_PACKET_IN2 userdata of one monitored packet-in."""
    via = _VIA.search(head)
    ud = next((m.group(1) for m in map(_USERDATA.match, rest[:1]) if m), "")
    return (via.group(1) if via else ""), bytes.fromhex(ud.replace(".", ""))


class PacketInMonitor:
    """``ovs-ofctl monitor`` on one bridge (it takes packet-ins as a controller
    would), line-buffered into a file and parsed incrementally into
    (table, cookie, in_port, frame, complete, state) records; ``state`` is the
    pipeline state OVS lists before in_port (``reg0=0x5,pkt_mark=0x3`` ...)."""

    def __init__(self, sb: OvsSandbox, bridge: str, resume: bool = False) -> None:
        """``resume``: the monitor sends each paused packet-in back as NXT_RESUME (controller(pause))."""
        import subprocess

        self.path = sb.dir / f"{bridge}.packet-in.txt"
        self._file = open(self.path, "w")
        self._proc = subprocess.Popen(
            ["stdbuf", "-oL", "ovs-ofctl", "-O", "OpenFlow13", "monitor", sb.mgmt(bridge), "65534", "-m",
             *(["resume"] if resume else [])],
            stdout=self._file, stderr=subprocess.STDOUT, env=sb._env)
        self._offset = 0

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def take(self) -> list[PacketInRecord]:
        text = self.path.read_text()[self._offset:]
        out, consumed = [], 0
        lines = text.split("\n")
        i, pos = 0, 0
        while i < len(lines):
            line = lines[i]
            m = _PIN_HEAD.search(line)
            if not m:
                pos += len(line) + 1
                i += 1
                continue
            table, cookie, total, state, port, dlen = m.groups()
            data, j, p2 = b"", i + 1, pos + len(line) + 1
            while j < len(lines) and len(data) < int(dlen):
                h = _HEX.match(lines[j])
                if h:
                    data += bytes.fromhex(h.group(1).replace("-", " ").replace(" ", ""))
                if j == len(lines) - 1:  # last (possibly partial) line
                    break
                p2 += len(lines[j]) + 1
                j += 1
            if len(data) < int(dlen):
                break  # record still being written
            out.append(PacketInRecord(int(table or 0), int(cookie, 16), _PORT_NAMES.get(port) or int(port), data,
                                      int(dlen) == int(total), state or "", *_reason_userdata(line, lines[i + 1:j + 1]),
                                      any(x.startswith(" continuation.") for x in lines[i + 1:j + 1])))
            i, pos = j, p2
            consumed = pos
        self._offset += consumed
        return out

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except Exception:
            self._proc.kill()
        self._file.close()


class Oracle:
    """Reference bridge + physical bridges in one sandbox (see module doc)."""

    def __init__(self, sb: OvsSandbox, topo: Topology, spare_ports: Mapping[str, Iterable[int]] = {},
                 packet_in: bool = False, resume: bool = False) -> None:
        self.sb = sb
        self.topo = topo
        n = next(_names)
        self._n = n
        self.ref = f"vref{n}"
        self.refs = [self.ref]  # reference bridges; a packet passes if it matches any of them
        self.bridge = {s: f"ph{n}s{i}" for i, s in enumerate(topo.switch_names)}
        self._uid = 0
        self.quiet_s = 0.1
        sb.add_bridge(self.ref, sorted(topo.port_map))
        sb.capture_local(self.ref)
        for s in topo.switch_names:
            ports = {topo.port_map[v].port for v in topo.local_vports(s)} | set(spare_ports.get(s, ()))
            sb.add_bridge(self.bridge[s], sorted(ports))
        for link in topo.links:
            sb.add_patch(self.bridge[link.a.switch], link.a.port, self.bridge[link.b.switch], link.b.port)
        # where each physical capture port counts as a virtual port (updated on remap)
        self.locations: dict[int, set[PortRef]] = {v: {ref} for v, ref in topo.port_map.items()}
        if self.bridge:
            self.capture_host_local()
        # packet-in capture (controller output): one monitor per bridge
        self.monitors: dict[str, PacketInMonitor] = {}
        self.mark_used = True  # (load_translation: the translation's) packet-in states: translate.packet_in_state
        self.nx_packet_ins = False  # compare packet-ins' reasons and userdata too (controller(...) rule sets)
        if packet_in:
            for b in [self.ref, *self.bridge.values()]:
                self.monitors[b] = PacketInMonitor(sb, b, resume)
            time.sleep(0.3)  # let the monitors connect before traffic
        if resume:  # (a resumed packet's frames come a monitor's round trip later)
            self.quiet_s = 0.3

    def capture_host_local(self) -> None:
        """The virtual switch's LOCAL port is the host switch's: record it there."""
        self.sb.capture_local(self.bridge[self.topo.host])
        self.locations[OFPP_LOCAL] = {PortRef(self.topo.host, OFPP_LOCAL)}

    def close(self) -> None:
        for m in self.monitors.values():
            m.close()
        for b in [*self.refs, *self.bridge.values()]:
            self.sb.del_bridge(b)

    def add_reference(self) -> str:
        """A second reference bridge (e.g. the virtual switch *after* a flow mod):
        during an update each packet must match one of the references."""
        name = f"vref{self._n}r{len(self.refs)}"
        self.sb.add_bridge(name, sorted(self.topo.port_map))
        self.sb.capture_local(name)
        self.refs.append(name)
        return name

    def __enter__(self) -> "Oracle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ loading
    def load_virtual(self, rules: Sequence[Rule], groups: Sequence[Group] = (), ref: str | None = None) -> None:
        ref = ref or self.ref
        if groups:
            self.sb.add_groups(ref, [format_group(g) for g in groups])
        if rules:
            add_rules(self.sb, ref, rules)

    def apply_virtual(self, mod: FlowMod, ref: str) -> None:
        """Send a controller FlowMod to a reference bridge via ovs-ofctl (OVS's own
        OpenFlow 1.3 semantics, to check OneSwitchState's against)."""
        r = mod.rule
        head = Rule(r.match, (), r.table, r.priority, r.cookie if mod.command == "add" else 0)
        text = format_rule(head).split(",actions=", 1)[0]
        if mod.cookie_mask:
            text += f",cookie={r.cookie:#x}/{mod.cookie_mask:#x}"
        strict = ["--strict"] if mod.command.endswith("_strict") else []
        if not strict:  # non-strict commands ignore priority and ovs-ofctl refuses it
            text = text.replace(f",priority={r.priority}", "", 1)
        if mod.command == "add":
            self.sb.ofctl("add-flow", ref, format_rule(r))
        elif mod.command.startswith("modify"):
            acts = format_rule(Rule(Match(), r.instructions)).split(",actions=", 1)[1]
            self.sb.ofctl("mod-flows", ref, *strict, f"{text},actions={acts}")
        else:
            if mod.out_port != OFPP_ANY:
                text += f",out_port={mod.out_port}"
            if mod.all_tables:
                text = text.replace(f"table={r.table},", "", 1)
            self.sb.ofctl("del-flows", ref, *strict, text)

    def load_translation(self, tr: Translation) -> None:
        self.mark_used = tr.mark_used
        for s, br in self.bridge.items():
            internal = [g for g in tr.groups[s]]
            if internal:
                self.sb.add_groups(br, [format_group(g) for g in internal])
            if tr.per_switch[s]:
                add_rules(self.sb, br, tr.per_switch[s])

    def apply_step(self, step: Sequence[PhysicalOp]) -> None:
        """Apply one plan step: port pairs (``PairOp``: patch ports), then per switch
        group adds, flow mods, group mods/deletes."""
        by_sw: dict[str, list[PhysicalOp]] = {}
        for op in step:
            if op.op == "add_pair":
                self.sb.add_patch(self.bridge[op.switch], op.port, self.bridge[op.peer], op.peer_port)
                continue
            by_sw.setdefault(op.switch, []).append(op)
        for s, ops in by_sw.items():
            br = self.bridge[s]
            flows = [_flow_line(op) for op in ops if op.rule is not None and not _wire_add(op)]
            if any(_wire_add(op) for op in ops):
                add_rules(self.sb, br, [op.rule for op in ops if _wire_add(op)])
            group_adds = [format_group(op.group) for op in ops if op.op == "add_group"]
            if group_adds:
                self.sb.add_groups(br, group_adds)
            if flows:
                self.sb.add_flows(br, flows)
            for op in ops:
                if op.op == "modify_group":
                    self.sb.ofctl("mod-group", br, format_group(op.group))
                elif op.op == "delete_group":
                    self.sb.ofctl("del-groups", br, f"group_id={op.group.group_id}")

    def set_down(self, vports: Sequence[int]) -> None:
        """Set virtual ports ``vports`` admin-down: on the reference bridges and on
        their wires' physical bridges (they still send and receive in OVS's dummy
        ports; their liveness is what changes: fast-failover buckets, bundle members)."""
        for v in vports:
            for ref in self.refs:
                self.sb.appctl("netdev-dummy/set-admin-state", self.sb.bridges[ref].ports[v], "down")
            wire = self.topo.port_map[v]
            self.sb.appctl("netdev-dummy/set-admin-state", self.sb.bridges[self.bridge[wire.switch]].ports[wire.port],
                           "down")

    def remap(self, vport: int, new: PortRef) -> None:  # noqa: D401
        """Frames leaving ``new`` now also count as leaving ``vport`` (old location kept)."""
        self.locations[vport].add(new)

    # ------------------------------------------------------------ packets
    def compare(self, packets: Sequence[tuple[int, bytes]],
                ingress: Mapping[int, Sequence[PortRef]] | None = None) -> OracleReport:
        """Inject ``(virtual in_port, frame)`` pairs into both sides and compare.
        ``ingress`` overrides where a virtual port's traffic enters the physical
        switches (during a remap: old and/or new location); each location gets
        its own copy of the packet and is compared separately."""
        ref_in: dict[int, list[bytes]] = {}  # the same frames go to every reference bridge
        phys_in: dict[PortRef, list[bytes]] = {}
        origin: dict[bytes, tuple[int, bytes]] = {}
        ref_id: dict[bytes, bytes] = {}  # phys uid -> ref uid (same packet)
        for vin, frame in packets:
            ref_uid = self._next_uid()
            ref_in.setdefault(vin, []).append(frame + ref_uid)
            origin[ref_uid] = (vin, frame)
            locs = ingress[vin] if ingress is not None else [self.topo.port_map.get(vin) or PortRef(self.topo.host, vin)]
            for k, loc in enumerate(locs):
                # (the first location's copy carries the reference's id: a frame cut into its
                # id by output(port=P,max_len=N) then ends in the same bytes on both sides)
                uid = ref_uid if k == 0 else self._next_uid()
                phys_in.setdefault(loc, []).append(frame + uid)
                ref_id[uid] = ref_uid
        for ref in self.refs:
            for v, frames in ref_in.items():
                self._inject(ref, v, frames)
        for loc, frames in phys_in.items():
            self._inject(self.bridge[loc.switch], loc.port, frames)
        # a loaded machine can stall vswitchd (and slow-path upcalls) beyond the
        # sandbox's default 50 ms quiet window: wait for a longer quiet period
        self.sb.settle(quiet_s=self.quiet_s, timeout_s=120)
        out = self.sb.take_all_output()
        expected: dict[tuple[str, bytes], Counter] = {(ref, u): Counter() for ref in self.refs for u in origin}
        got: dict[bytes, Counter] = {u: Counter() for u in ref_id}
        where = {(self.bridge[ref.switch], ref.port): v for v, refs in self.locations.items() for ref in refs}
        n_out = 0
        # frames cut shorter than their id (output(port=P,max_len=N)) are compared as one multiset
        cut_expected: dict[str, Counter] = {ref: Counter() for ref in self.refs}
        cut_got: Counter = Counter()
        for (br, port), frames in out.items():
            for f in frames:
                uid, body = f[-4:], f[:-4]
                if (br, uid) in expected:
                    expected[(br, uid)][(port, body)] += 1
                elif (br, port) in where and uid in got:
                    got[uid][(where[(br, port)], body)] += 1
                    n_out += 1
                elif br in cut_expected:
                    cut_expected[br][(port, f)] += 1
                elif (br, port) in where:
                    cut_got[(where[(br, port)], f)] += 1
                    n_out += 1
        report = OracleReport(packets=len(ref_id), outputs=n_out)
        for (br, _), c in expected.items():
            if br == self.refs[0]:
                for port, _body in c.elements():
                    report.expected_by_port[port] += 1
        if self.monitors and len(self.refs) == 1:
            self._compare_packet_ins(report, where)
        if all(cut_got != c for c in cut_expected.values()):
            report.mismatches.append(Mismatch(0, b"(frames cut shorter than their id, all packets)",
                                              sorted(cut_expected[self.refs[0]].elements()), sorted(cut_got.elements())))
        for uid, ref_uid in ref_id.items():
            if all(got[uid] != expected[(ref, ref_uid)] for ref in self.refs):
                vin, frame = origin[ref_uid]
                report.mismatches.append(Mismatch(vin, frame, sorted(expected[(self.refs[0], ref_uid)].elements()),
                                                  sorted(got[uid].elements())))
        return report

    def _compare_packet_ins(self, report: OracleReport, where: dict[tuple[str, int], int]) -> None:
        """Packet-ins must match too: same virtual in_port, table, cookie, frame
        (the 4-byte id is cut off complete frames; truncated ones never reach it) and
        pipeline state (metadata, registers, the packet mark: a flow id left in the
        mark would show here)."""
        prev = None
        while True:  # wait until the monitors stop writing
            cur = tuple(m.size() for m in self.monitors.values())
            if cur == prev:
                break
            prev = cur
            time.sleep(0.1)
        expected: Counter = Counter()
        got: Counter = Counter()
        for br, mon in self.monitors.items():
            for table, cookie, port, data, complete, state, reason, userdata, paused in mon.take():
                key_data = data[:-4] if complete else data
                if br == self.ref:
                    expected[(port, table, cookie, key_data, state, *self._nx_key(reason, userdata))] += 1
                else:
                    nx = virtual_packet_in(userdata, paused)  # a virtual controller(...): its id, reason, userdata
                    if nx is not None:
                        if nx.controller_id != 0 or nx.reason == 2:  # (the monitor: id 0, no invalid_ttl)
                            continue
                        reason, userdata = ("no_match" if nx.reason == 0 else "action"), nx.userdata
                    v = where.get((br, port), port if port == OFPP_LOCAL else None)
                    got[(v, table, cookie, key_data, _virtual_state(state, self.mark_used),
                         *self._nx_key(reason, userdata))] += 1
        report.packet_ins = sum(expected.values())
        for key in expected.keys() | got.keys():
            if expected[key] != got[key]:
                report.packet_in_mismatches.append(
                    f"packet-in at virtual port {key[0]} table {key[1]} cookie {key[2]:#x} [{key[4]}] {key[3].hex()}: "
                    f"expected {expected[key]}, got {got[key]}")

    def _nx_key(self, reason: str, userdata: bytes) -> tuple:
        """With ``nx_packet_ins``: a packet-in's reason and userdata are compared too."""
        return (reason, userdata.hex()) if self.nx_packet_ins else ()

    def _inject(self, bridge: str, port: int, frames: list[bytes]) -> None:
        self.sb.inject(bridge, port, frames)  # chunked and waited for (see OvsSandbox.inject)

    def _next_uid(self) -> bytes:
        self._uid += 1
        # (scattered over 32 bits, one to one: a frame cut short by output(port=P,max_len=N)
        # rarely ends in bytes that look like an id, as small counters did: 0a000001 ...)
        return ((self._uid * 0x9E3779B1) & 0xFFFF_FFFF).to_bytes(4, "big")


def _virtual_state(state: str, mark_used: bool) -> str:
    """A physical packet-in's pipeline state (``reg0=0x5,pkt_mark=0x3``) as the
    endpoint passes it on (``translate.packet_in_state``)."""
    pairs = [tuple(p.split("=", 1)) for p in state.split(",") if p]
    return ",".join(f"{k}={v}" for k, v in packet_in_state(pairs, mark_used))


def _wire_add(op: PhysicalOp) -> bool:
    """An add of a rule ovs-ofctl cannot send (``ovs_flows.needs_wire``)."""
    return op.op == "add" and op.rule is not None and needs_wire(op.rule)


def _flow_line(op: PhysicalOp) -> str:
    """One ``ovs-ofctl add-flows`` line for a flow op (deletes carry no actions)."""
    r = op.rule
    if op.op == "delete_strict":  # match + priority only: no actions, no cookie
        r = Rule(r.match, (), r.table, r.priority)
        return "delete_strict " + format_rule(r).split(",actions=", 1)[0]
    text = format_rule(r)
    return f"{op.op} {text}"


# ---------------------------------------------------------------- workloads


def oracle_ruleset(rng: random.Random, n: int, topo: Topology, tables: int = 3,
                   n_groups: int = 4, refused: list[str] | None = None,
                   features: frozenset[str] | None = None,
                   keep: "Callable[[Rule], bool] | None" = None,
                   watch_groups: bool = False, groups: list[Group] | None = None) -> tuple[list[Rule], list[Group]]:
    """Random virtual rules + groups from ``tandem.rules.generate`` that OVS loads
    and OneSwitch must translate: every match/action feature (fast-failover
    groups watch ports on any switch; outputs to LOCAL, the host's). Rules the translator
    rejects by design (docs/oneswitch.md, "Limits") are redrawn; their reasons
    are appended to ``refused`` if given. ``features`` defaults to the
    generator's ``ALL_FEATURES``; ``keep`` (if given) picks the drawn rules to use;
    ``watch_groups``: fast-failover buckets may also watch the set's groups; ``groups``
    (if given) are the set's groups instead of random ones."""
    from tandem.rules.generate import ALL_FEATURES, random_groups, random_ruleset

    from tandem.oneswitch.translate import Compiler, TranslationError

    ports = sorted(topo.port_map)
    if groups is None:
        groups = random_groups(rng, n_groups, ports, watch_groups=watch_groups) if n_groups else []
    base = ALL_FEATURES if features is None else features
    feats = base if groups else base - {"groups"}
    comp = Compiler(topo, groups=groups)
    rules: list[Rule] = []
    taken: set[tuple[int, int]] = set()  # (table, priority) of kept rules, when ``keep`` draws in many rounds
    while len(rules) < n:
        draw = n - len(rules) if keep is None else 400
        for r in random_ruleset(rng, draw, ports, tables, feats, groups=[g.group_id for g in groups]):
            if keep is not None:
                if len(rules) == n or not keep(r) or (r.table, r.priority) in taken:
                    continue
                taken.add((r.table, r.priority))
            if vkey(r) in comp.vrules:
                continue
            try:
                comp.add(r)  # drop the few the translator rejects by design (see docs)
            except TranslationError as e:
                if refused is not None:
                    refused.append(e.reason)
                continue
            rules.append(r)
    return rules, groups


def random_packets(rng: random.Random, rules: Sequence[Rule], topo: Topology, per_port: int,
                   of13: bool = False) -> list[tuple[int, bytes]]:
    """``per_port`` frames for every virtual port, most built to hit some rule
    (``of13``: also SCTP, ICMPv6 ND, flow-label, ARP SHA/THA and MPLS TC/BOS frames)."""
    from tandem.rules.packets import random_frame

    out = []
    for v in sorted(topo.port_map):
        hints = [r for r in rules if r.match.get("in_port") is None or r.match.get("in_port").value == v]
        for _ in range(per_port):
            out.append((v, random_frame(rng, hints or None, of13=of13)))
    return out
