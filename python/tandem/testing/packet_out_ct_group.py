"""PACKET_OUT oracle for groups with ``ct`` in a bucket (``packet_out_oracle --ct-groups``).

Each set: a connection-tracking rule set and its groups with ct in their buckets
(``generate_ct_bucket.bucket_ct_ruleset``: ``ct(table=T)`` with an immediate zone or
one from ``reg0``, ``ct(commit,exec(ct_mark/ct_label…))`` into a table or not, ct
beside ``ct_clear`` or an output; with ``nat`` also the rules' cts and about half the
buckets' commits translate addresses, ``generate_ct_nat``), loaded by FLOW_MOD and
GROUP_MOD into one Open vSwitch 3.1 bridge and into OneSwitch's endpoint over OVS
bridges (a host and two sNICs; the endpoint homes every port on the host). Then the
packets of connection traces (``generate_ct_tcp.ct_traces`` / ``nat_traces``, each
direction entering on its own port) go in as PACKET_OUTs in trace order, each from its
port or, now and then, CONTROLLER, whose actions apply one or more of the groups
among field sets (eth_src, eth_dst, reg0), a VLAN push, outputs to ports, IN_PORT,
FLOOD and ALL, notes, clones and now and then an ``exit`` (``random_ct_group_actions``;
with ``packet_ins``, OneSwitch only, also packet-ins at the top, after ``check_pkt_larger``
or ``ct_clear``, in clones: ``with_host_packet_ins``).
Both sides run in ``ovs-vswitchd``s of their own (one tracker each). About 40 % of the
outputs of the rules in tables 1 and 2, where the buckets' copies go, are outputs to
CONTROLLER. After each batch the frames every port sent (multisets per port), the
packet-ins (OpenFlow's: frame, reason, table, cookie and match, the ``ct_*`` fields
included), the errors and the tracker's connections (``dpctl/dump-conntrack``, sorted)
must be equal.
Used by ``benches/packet_out_oracle.py`` and tests. State: two sandboxes per set.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field, replace

from tandem.rules import ofwire_msgs as M
from tandem.rules.generate import random_value
from tandem.rules.ofctl import parse_actions
from tandem.rules.generate_ct import ct_ruleset
from tandem.rules.generate_ct_bucket import bucket_ct_ruleset, uses_bucket_nat, with_bucket_nat
from tandem.rules.generate_ct_nat import nat_ruleset, nat_traces
from tandem.rules.generate_ct_tcp import ct_traces
from tandem.oneswitch.translate import packet_in_state
from tandem.testing.packet_out_packet_ins import ask_for_packet_ins, controller_streams
from tandem.rules.ir import (
    OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, Action, ApplyActions, Clone, Ct, Exit, FlowMod, Group, GroupAction,
    Note, Output, PushVlan, SetField,
)

PORTS = (1, 2, 3, 4)


def _segment(rng: random.Random, groups: list[int], depth: int, pushes: list[int]) -> list[Action]:
    x = rng.random()
    if x < 0.25:
        f = rng.choice(("eth_src", "eth_dst", "reg0"))
        return [SetField(f, random_value(rng, f) if f != "reg0" else rng.randrange(4))]
    if x < 0.3 and pushes:  # (one VLAN push per PACKET_OUT)
        pushes.pop()
        return [PushVlan(0x8100), SetField("vlan_vid", 0x1000 | rng.randrange(1, 4095))]
    if x < 0.5:
        return [Output(rng.choice(PORTS))]
    if x < 0.56:
        return [Output(rng.choice((OFPP_IN_PORT, OFPP_FLOOD, OFPP_ALL)))]
    if x < 0.8:
        return [GroupAction(rng.choice(groups))]
    if x < 0.83:
        return [Note(b"\x01\x02")]
    if x < 0.85:
        return [Exit()]
    if depth < 2:
        return [Clone(tuple(a for _ in range(rng.randint(0, 3)) for a in _segment(rng, groups, depth + 1, pushes)))]
    return [Output(rng.choice(PORTS))]


def random_ct_group_actions(rng: random.Random, groups: list[int]) -> tuple[Action, ...]:
    """An action list (module doc) that applies at least one of ``groups`` at its top."""
    pushes = [1]
    acts: list[Action] = []
    for _ in range(rng.randint(1, 5)):
        acts += _segment(rng, groups, 0, pushes)
    at = rng.randint(0, len(acts))
    if not any(type(a) is GroupAction for a in acts):
        acts.insert(at, GroupAction(rng.choice(groups)))
    return tuple(acts)


def with_packet_ins(rng: random.Random, rules: list, share: float = 0.4) -> list:
    """``rules`` with about ``share`` of the outputs of their apply-actions in tables 1 and 2
    (where the buckets' ``ct(table=T)`` copies go) made outputs to CONTROLLER."""
    out = []
    for r in rules:
        if r.table and any(type(i) is ApplyActions for i in r.instructions):
            r = replace(r, instructions=tuple(ApplyActions(tuple(
                Output(OFPP_CONTROLLER) if type(a) is Output and rng.random() < share else a for a in i.actions))
                if type(i) is ApplyActions else i for i in r.instructions))
        out.append(r)
    return out


def ct_group_set(rng: random.Random, n_rules: int, nat: bool) -> tuple[list, list[Group]]:
    """A rule set and its groups (module doc); ``nat``: nats in the rules and the buckets' commits."""
    rules, groups = bucket_ct_ruleset(rng, n_rules, list(PORTS), nat_ruleset if nat else ct_ruleset)
    return with_packet_ins(rng, rules), with_bucket_nat(rng, groups) if nat else groups


@dataclass
class CtGroupResult:
    packet_outs: int = 0
    group_calls: int = 0
    recirculating: int = 0  # PACKET_OUTs applying a group whose bucket holds ct(table=T)
    nat_groups: int = 0  # PACKET_OUTs applying a group whose bucket commits with a nat
    frames: int = 0
    connections: int = 0  # tracker entries compared (summed over batches)
    packet_ins: int = 0  # from the rules the recirculated copies meet (OpenFlow packet-ins, byte for byte)
    mismatches: list[str] = field(default_factory=list)

    def count(self, pos: list, by_id: dict, theirs: Counter, connections: int) -> None:
        """Add one batch: its PACKET_OUTs, the groups they call, the plain bridge's frames and
        packet-ins and its tracker's connections."""
        self.packet_outs += len(pos)
        self.frames += sum(v for k, v in theirs.items() if k[0] != "packet-in")
        self.packet_ins += sum(v for k, v in theirs.items() if k[0] == "packet-in")
        self.connections += connections
        called = [[by_id[a.group_id] for a in _calls(acts)] for _, acts, _ in pos]
        self.group_calls += sum(map(len, called))
        self.recirculating += sum(any(_recirculates(g) for g in gs) for gs in called)
        self.nat_groups += sum(any(uses_bucket_nat(g) for g in gs) for gs in called)


def _draw_set(rng: random.Random, n_rules: int, nat: bool, per_set: int) -> tuple[list, list, list]:
    """A set's rules, groups and the packets of its connection traces, in trace order."""
    rules, groups = ct_group_set(rng, n_rules, nat)
    pairs = [(a, b) for a in PORTS for b in PORTS if a != b]
    rounds = (nat_traces if nat else ct_traces)(rng, pairs, max(4, per_set // 6))
    return rules, groups, [pf for rd in rounds for pf in rd][:per_set]


_HOST_PACKET_INS = ("CONTROLLER", "controller(userdata=01.02)", "controller(reason=no_match,id=0)",
                    "check_pkt_larger(100)->NXM_NX_REG1[0],move:NXM_NX_REG1[0]->NXM_OF_ETH_SRC[0],CONTROLLER",
                    "ct_clear,CONTROLLER", "clone(controller(max_len=64))")


# (the emulator backend's host, dp-core, runs these: no check_pkt_larger, oneswitch/packet_out_ct_group.py)
_EMU_PACKET_INS = tuple(t for t in _HOST_PACKET_INS if "check_pkt_larger" not in t)


def with_host_packet_ins(rng: random.Random, acts: tuple[Action, ...], emu: bool = False) -> tuple[Action, ...]:
    """``acts`` with one to two packet-ins (CONTROLLER, ``controller(…)``, after
    ``check_pkt_larger`` or ``ct_clear``, in a clone) at random places of its top list: the
    OVS backend's host runs them (oneswitch/packet_out_whole.py; ``--ct-groups --packet-ins``);
    ``emu``: without check_pkt_larger, as the emulator backend's host runs them."""
    out = list(acts)
    for _ in range(rng.randint(1, 2)):
        out[rng.randint(0, len(out)):0] = parse_actions(rng.choice(_EMU_PACKET_INS if emu else _HOST_PACKET_INS))
    return tuple(out)


def _draw_batch(rng: random.Random, packets: list, group_ids: list[int], packet_ins: bool = False,
                emu: bool = False) -> list:
    """(in_port, actions, frame) per packet: from its port or, a fifth of the time, CONTROLLER."""
    pos = []
    for in_port, frame in packets:
        acts = random_ct_group_actions(rng, group_ids)
        acts = with_host_packet_ins(rng, acts, emu) if packet_ins else acts
        pos.append((OFPP_CONTROLLER if rng.random() < 0.2 else in_port, acts, frame))
    return pos


def _packet_in_key(m: bytes) -> tuple:
    """A packet-in as compared: its frame, reason, table, cookie and match (module doc)."""
    pi = M.decode_packet_in(m[8:])
    fields = tuple(sorted((k, fm.value, fm.mask) for k, fm in pi.match.fields))
    return ("packet-in", pi.data, pi.reason, pi.table_id, pi.cookie, fields)


def _conntrack(sb) -> list[str]:
    return sorted(line for line in sb.appctl("dpctl/dump-conntrack").splitlines() if line.strip())


def run_ct_groups(n: int, seed: int = 0, batch: int = 20, per_set: int = 100, n_rules: int = 40,
                  nat: bool = False, packet_ins: bool = False) -> CtGroupResult:
    """OneSwitch's endpoint over OVS bridges against one plain bridge (module doc), ``n``
    PACKET_OUTs in sets of ``per_set``."""
    from tandem.backends.ovs import OvsBackend
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology
    from tandem.testing.packet_out_oracle import TOPOLOGY, _Conn, _packet_out

    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    wires = {v: (f"tnd-{w.switch}", w.port) for v, w in topo.port_map.items()}
    res = CtGroupResult()
    br = "po-ct-plain"

    async def one_set(s: int, sb, ref) -> None:
        rng = random.Random(f"po-ct:{seed}:{s}:{nat}")
        rules, groups, trace = _draw_set(rng, n_rules, nat, per_set)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        port = await ep.listen("ptcp:0:127.0.0.1")
        one = await _Conn(*await asyncio.open_connection("127.0.0.1", port)).hello()
        ovs = await _Conn(*await controller_streams(ref, br)).hello()
        for c in (ovs, one):
            ask_for_packet_ins(c)
        try:
            for c in (ovs, one):
                for g in groups:
                    c.send(lambda x, g=g: M.encode_group_mod(x, "add", g))
                for r in rules:
                    c.send(lambda x, r=r: M.encode_flow_mod(x, FlowMod("add", r)))
            errors = (await ovs.barrier(), await one.barrier())
            if errors != ([], []):
                res.mismatches.append(f"set {s}: loading the rules and groups: errors (ovs, oneswitch) {errors}")
                return
            by_id = {g.group_id: g for g in groups}
            for i in range(0, len(trace), batch):
                pos = _draw_batch(rng, trace[i:i + batch], sorted(by_id), packet_ins, emu=True)
                for in_port, acts, frame in pos:
                    for c in (ovs, one):
                        c.send(_packet_out(in_port, acts, frame))
                errors = (await ovs.barrier(), await one.barrier())
                sb.settle()
                ref.settle()
                errors = (errors[0] + await ovs.barrier(), errors[1] + await one.barrier())  # (later packet-ins)
                out = {**sb.take_all_output(), **ref.take_all_output()}
                theirs = Counter((p, f) for p in PORTS for f in out.get((br, p), []))
                ours = Counter((v, f) for v, w in wires.items() for f in out.get(w, []))
                theirs.update(map(_packet_in_key, ovs.packet_ins))
                ours.update(map(_packet_in_key, one.packet_ins))
                ovs.packet_ins.clear()
                one.packet_ins.clear()
                cts = (_conntrack(ref), _conntrack(sb))
                res.count(pos, by_id, theirs, len(cts[0]))
                if errors != ([], []) or ours != theirs or cts[0] != cts[1]:
                    shown = "\n  ".join(f"in_port {p:#x} actions {[str(a) for a in acts]} frame {f.hex()}"
                                        for p, acts, f in pos)
                    res.mismatches.append(
                        f"set {s} batch {i // batch}: errors (ovs, oneswitch) {errors}\n  {shown}\n"
                        f"  ours-only frames {sorted(map(_shown, (ours - theirs).elements()))}\n"
                        f"  ovs-only frames {sorted(map(_shown, (theirs - ours).elements()))}\n"
                        f"  conntrack ours-only {sorted(set(cts[1]) - set(cts[0]))}\n"
                        f"  conntrack ovs-only {sorted(set(cts[0]) - set(cts[1]))}")
                    return  # (the trackers differ from here on)
        finally:
            one.close()
            ovs.close()
            await ep.close()
            await backend.close()

    s = 0
    while res.packet_outs < n:
        with OvsSandbox() as sb, OvsSandbox() as ref:
            ref.add_bridge(br, PORTS)
            asyncio.run(one_set(s, sb, ref))
        s += 1
        if len(res.mismatches) >= 5:
            break
    return res


def run_dp_ct_groups(n: int, seed: int = 0, batch: int = 20, per_set: int = 100, n_rules: int = 40,
                     nat: bool = False, packet_ins: bool = False) -> CtGroupResult:
    """dp-core (a ``Switch`` with the rules and groups running each PACKET_OUT with
    ``Switch.packet_out``, as the emulator backend's host does) against one plain bridge in
    a vswitchd of its own, sets and PACKET_OUTs drawn as for ``run_ct_groups`` (``nat``: in
    the rules and the buckets' commits, dp-core ``pipeline/bucket_nat.rs``): frames, packet-ins (frame
    and the state dp-core lists, the ct_* fields and eth_type included) and the number of connections the trackers hold,
    after every batch (``packet_ins``: also the host's packet-ins of ``with_host_packet_ins``
    without check_pkt_larger, as the emulator backend's host sends them)."""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.dataplane.switch import Switch
    from tandem.testing.packet_out_oracle import _Conn, _packet_out

    res = CtGroupResult()
    br = "po-ct-plain"

    async def one_set(s: int, ref) -> None:
        rng = random.Random(f"po-ct:{seed}:{s}:{nat}")
        rules, groups, trace = _draw_set(rng, n_rules, nat, per_set)
        sw = Switch(PORTS, 3, drop_malformed=False)
        sw.add_groups(groups)
        sw.add_rules(rules)
        ovs = await _Conn(*await controller_streams(ref, br)).hello()
        ask_for_packet_ins(ovs)
        try:
            for g in groups:
                ovs.send(lambda x, g=g: M.encode_group_mod(x, "add", g))
            for r in rules:
                ovs.send(lambda x, r=r: M.encode_flow_mod(x, FlowMod("add", r)))
            errors = await ovs.barrier()
            if errors:
                res.mismatches.append(f"set {s}: loading the rules and groups: OVS errors {errors}")
                return
            by_id = {g.group_id: g for g in groups}
            for i in range(0, len(trace), batch):
                pos = _draw_batch(rng, trace[i:i + batch], sorted(by_id), packet_ins, emu=True)
                ours: Counter = Counter()
                for in_port, acts, frame in pos:
                    fates = sw.packet_out(in_port, acts, frame)
                    ours.update((p, f) for p, f in fates if p in PORTS)  # (IN_PORT from CONTROLLER: none, as OVS)
                    ours.update(("packet-in", c.frame, tuple(sorted(packet_in_state(c.meta, True))))
                                for c in fates.controller)
                    ovs.send(_packet_out(in_port, acts, frame))
                errors = await ovs.barrier()
                ref.settle()
                errors += await ovs.barrier()
                theirs = Counter((p, f) for p in PORTS for f in ref.take_output(br, p))
                for m in ovs.packet_ins:
                    pi = M.decode_packet_in(m[8:])
                    theirs[("packet-in", pi.data, tuple(sorted((k, fm.value) for k, fm in pi.match.fields
                                                              if k != "in_port")))] += 1
                ovs.packet_ins.clear()
                conns = (len(_conntrack(ref)), sw.pipeline.ct_stats()[0])
                res.count(pos, by_id, theirs, conns[0])
                if errors or ours != theirs or conns[0] != conns[1]:
                    shown = "\n  ".join(f"in_port {p:#x} actions {[str(a) for a in acts]} frame {f.hex()}"
                                        for p, acts, f in pos)
                    res.mismatches.append(
                        f"set {s} batch {i // batch}: OVS errors {errors}, connections (ovs, dp-core) {conns}\n  {shown}\n"
                        f"  dp-core-only {sorted(map(_shown, (ours - theirs).elements()))}\n"
                        f"  ovs-only {sorted(map(_shown, (theirs - ours).elements()))}")
                    return
        finally:
            ovs.close()

    s = 0
    while res.packet_outs < n:
        with OvsSandbox() as ref:
            ref.add_bridge(br, PORTS)
            asyncio.run(one_set(s, ref))
        s += 1
        if len(res.mismatches) >= 5:
            break
    return res


def _shown(key: tuple) -> str:
    return f"{key[0]} {key[1].hex()} {key[2:]}"


def _calls(acts) -> list[GroupAction]:
    out = []
    for a in acts:
        if type(a) is GroupAction:
            out.append(a)
        elif type(a) is Clone:
            out += _calls(a.actions)
    return out


def _recirculates(g: Group) -> bool:
    return any(type(a) is Ct and a.table is not None for b in g.buckets for a in b.actions)


__all__ = ["CtGroupResult", "random_ct_group_actions", "run_ct_groups", "run_dp_ct_groups", "ct_group_set"]
