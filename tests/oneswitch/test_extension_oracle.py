"""Port extensions (oneswitch/extension.py) against the OVS oracle.

Random rule sets (all match/action features, groups, several tables; the
seeds and sizes of tests/oneswitch/test_oneswitch_oracle.py, whose rule sets
OVS 3.1 runs without hitting its own recirculation assertion) are translated,
then every sNIC port is extended to the host plan step by plan step (the port
pairs built by the plan's ``PairOp`` step as patch ports, through the sNIC in
between on a chain topology), then moved back (``retract``) and extended again
(reusing the pairs); after every step random frames enter at each virtual
port's *real* port and what leaves every virtual port (and every packet-in)
must equal the reference bridge.

Every rule set also has rules of table 0 at priority 65535, the wire rules'
priority, whose copies on the wire's switch match the extended port (tied
copies), of three kinds: "overlap" (a wildcard rule and one per sNIC port
with more fields than in_port: copies that overlap the ingress wire rule),
"exact" (``in_port=<port>`` and nothing else on one port, whose copy has the
ingress wire rule's own match: an add of one replaces the other) and
"wildcard" (a rule with no match at all: every sNIC port's copy is exact).
They must hand over in both directions with every frame running one
complete pipeline; two deliberately broken orderings of the exact case are
caught. Also: a port moved by a remap since the start is extended from where
it is now; a wildcard metered rule runs its only copy on the host; deleting
it releases every extension."""

import random

import pytest

from tandem.backends.base import PairOp
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import (
    EXT_PORT_BASE, Hop, extend, ports_to_extend, ports_to_release, release, retract, wire_rules,
)
from tandem.oneswitch.ids import INFRA_COOKIE, WIRE_PRIORITY, is_delivery_key, pkey
from tandem.oneswitch.plan import PhysicalOp
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.rules.generate import ACTION_SET_FEATURES, NX_FEATURES
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets

TOPOS = {
    "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                         [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                         {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"}),
    # the host has no virtual port of its own
    "transit": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                              {1: "s0:1", 2: "s0:2", 3: "s1:1"}),
    # s1 has no link to the host: its ports are extended through s0
    "chain": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:10", "s0:10"), ("s0:11", "s1:10")],
                            {1: "h:1", 2: "s0:1", 3: "s1:1", 4: "s1:2"}),
}
P = PortRef
NX_ACTION_SETS = ACTION_SET_FEATURES | NX_FEATURES


def test_pairs_follow_the_path_to_the_host_and_are_built_once():
    st = OneSwitchState(TOPOS["chain"])
    plans = extend(st, [2, 3])
    built = [op for p in plans for op in p.ops() if isinstance(op, PairOp)]
    assert plans[0].steps == [built]  # the pairs first, on their own
    n = EXT_PORT_BASE
    assert st.extensions[2].hops == (Hop(P("s0", n), P("h", n)),)
    # the same number on both ends of a pair: the lowest free on both switches
    assert st.extensions[3].hops == (Hop(P("s1", n + 1), P("s0", n + 1)), Hop(P("s0", n + 2), P("h", n + 2)))
    assert {(o.switch, o.port, o.peer, o.peer_port) for o in built} == {("s0", n, "h", n), ("s1", n + 1, "s0", n + 1),
                                                                         ("s0", n + 2, "h", n + 2)}
    # s0 passes s1's frames on: in_port=<pair from s1> -> <pair to the host> and back
    [(s1, eg1, in1), (s0, eg0, in0)] = wire_rules(st.extensions[3])
    assert (s1, s0) == ("s1", "s0")
    assert (in1.match.get("in_port").value, in1.instructions[0].actions[0].port) == (1, n + 1)
    assert (eg1.match.get("in_port").value, eg1.instructions[0].actions[0].port) == (n + 1, 1)
    assert (in0.match.get("in_port").value, in0.instructions[0].actions[0].port) == (n + 1, n + 2)
    assert (eg0.match.get("in_port").value, eg0.instructions[0].actions[0].port) == (n + 2, n + 1)
    # table 0, above everything a copy or a delivery rule can tie with
    assert {(r.table, r.priority, r.cookie) for r in (in1, eg1, in0, eg0)} == {(0, WIRE_PRIORITY, INFRA_COOKIE)}
    assert st.topo.port_map[3] == P("h", n + 2) and st.wire_of(3) == P("s1", 1)
    for plan in retract(st, [2, 3]):  # back home; the pairs stay
        assert not [op for op in plan.ops() if isinstance(op, PairOp)]
    assert st.extensions == {} and st.topo == TOPOS["chain"]
    again = extend(st, [3])
    assert not [op for p in again for op in p.ops() if isinstance(op, PairOp)]  # reused
    assert st.extensions[3].hops[0].near == P("s1", n + 1)
    # a number taken on either end is skipped
    busy = Topology.build({"h": "host", "s": "snic"}, [("h:1", f"s:{EXT_PORT_BASE}")], {1: "s:1", 2: "s:2"})
    st = OneSwitchState(busy)
    extend(st, [1, 2])
    assert [st.extensions[v].hosted.port for v in (1, 2)] == [EXT_PORT_BASE + 1, EXT_PORT_BASE + 2]


def test_a_port_whose_return_makes_two_copies_coincide_returns_with_one_entry_for_both():
    st = OneSwitchState(TOPOS["k3"])
    metered = parse_rule("priority=9,udp,actions=meter:1,output:1")
    st.apply(FlowMod("add", metered))
    extend(st, ports_to_extend(st))
    assert sorted(st.extensions) == [3, 4]
    # accepted while port 3 runs on the host (the host's copy of a wildcard rule is one);
    # on snic0 the wildcard rule's copy for port 3 is the other rule's copy: one entry stands for both
    rules = [parse_rule(text) for text in ("priority=65535,tcp,actions=output:1", "priority=65535,in_port=3,tcp,actions=output:2")]
    for r in rules:
        st.apply(FlowMod("add", r))
    st.apply(FlowMod("delete_strict", metered))
    assert ports_to_release(st) == [3, 4]
    release(st)  # (overlap_share.py: before, port 3 stayed extended)
    assert not st.extensions
    sw, port = TOPOS["k3"].port_map[3].switch, TOPOS["k3"].port_map[3].port
    tied = [p for p in st.comp.rules[sw].values() if p.priority == 65535 and p.match.get("in_port")
            and p.match.get("in_port").value == port]
    assert len(tied) == 1 and sum((sw, tied[0]) in st.ingress_rules(r) for r in rules) == 1


def _tied_rules(kind: str, snic_ports: list[int], tables: int) -> list:
    """Rules of table 0 at priority 65535 whose sNIC copies match an sNIC port (see the
    module doc); none overlaps another (which of two would win is the controller's
    problem, not the translation's)."""
    goto = ",goto_table:1" if tables > 1 else ""
    if kind == "wildcard":
        return [parse_rule(f"priority=65535,actions=set_field:02:00:00:00:00:07->eth_src{goto}")]
    if kind == "exact":
        first, *others = snic_ports
        return [parse_rule(f"priority=65535,in_port={first},actions=set_field:02:00:00:00:00:08->eth_src,"
                           f"output:{others[0] if others else 1}{goto}")] + \
            [parse_rule(f"priority=65535,in_port={v},tcp,actions=output:{snic_ports[0]},FLOOD") for v in others]
    return [parse_rule("priority=65535,udp,tp_dst=4789,actions=set_field:02:00:00:00:00:09->eth_dst,IN_PORT,"
                       f"output:{snic_ports[-1]}")] + \
        [parse_rule(f"priority=65535,in_port={v},tcp,actions=output:{snic_ports[0]},FLOOD") for v in snic_ports]


def _setup(topo_name, seed, n, tables, tied, features=None):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    rules, groups = oracle_ruleset(rng, n, topo, tables=tables, n_groups=3, features=features)
    snic_ports = [v for v, ref in sorted(topo.port_map.items()) if ref.switch != topo.host]
    rules = [r for r in rules if not (r.table == 0 and r.priority == WIRE_PRIORITY)] + _tied_rules(tied, snic_ports, tables)
    state = OneSwitchState(topo, groups)
    for r in rules:
        state.apply(FlowMod("add", r))
    return topo, rng, rules, groups, state


def _check_steps(o, rng, rules, topo, plans, label, ingress=None):
    checked = 0
    for k, plan in enumerate(plans):
        for i, step in enumerate(plan.steps):
            o.apply_step(step)
            report = o.compare(random_packets(rng, rules, topo, per_port=6), ingress=ingress)
            assert not report.mismatches, f"{label} plan {k} step {i}: " + "\n".join(map(str, report.mismatches[:3]))
            assert not report.packet_in_mismatches, "\n".join(report.packet_in_mismatches[:3])
            checked += report.packets
    return checked


def _is_wire(op) -> bool:
    return op.rule is not None and op.rule.cookie == INFRA_COOKIE and op.rule.priority == WIRE_PRIORITY


def _key(sw, r):
    return sw, pkey(r)


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed, n, tables, only, tied, features", [
    ("k3", 1, 300, 3, None, "overlap", None), ("k3", 4, 200, 1, None, "exact", None),
    ("transit", 5, 150, 2, None, "exact", None), ("chain", 7, 200, 2, None, "overlap", None),
    ("chain", 8, 150, 2, None, "wildcard", None),
    ("transit", 5, 150, 2, [1], "exact", None),  # one of s0's two ports: s0 keeps a pipeline for the other
    # virtual rules that set and match the mark and registers and write outputs: a frame on
    # an extension's wire carries the virtual mark (no flow id), unseen on its real port
    ("k3", 9, 200, 2, None, "overlap", NX_ACTION_SETS),
])
def test_extending_and_retracting_ports_keeps_every_packet_fate(topo_name, seed, n, tables, only, tied, features):
    topo, rng, rules, groups, state = _setup(topo_name, seed, n, tables, tied, features)
    vports = [v for v, ref in topo.port_map.items() if ref.switch != topo.host and (only is None or v in only)]
    with OvsSandbox() as sb, Oracle(sb, topo, packet_in=True) as o:
        o.load_virtual(rules, groups)
        o.load_translation(state.translation())
        before = {sw: {pkey(r): r for r in state.physical_rules(sw)} for sw in topo.switch_names}
        plans = extend(state, vports)
        for v in vports:
            o.remap(v, state.extensions[v].hosted)  # packet-ins from the host's end stand for the port
        checked = _check_steps(o, rng, rules, topo, plans, "extend")
        if only is None:
            assert state.topo.ingress_switches == (topo.host,)  # every pipeline now runs on the host
            for sw in {state.extensions[v].wire.switch for v in vports}:  # no virtual table copies remain on the sNICs
                assert all(is_delivery_key(pkey(r)) or r.cookie == INFRA_COOKIE and r.priority == WIRE_PRIORITY
                           for r in state.physical_rules(sw))
        want = {(sw, r) for v in vports for sw, eg, ing in wire_rules(state.extensions[v]) for r in (eg, ing)}
        assert {(op.switch, op.rule) for p in plans for op in p.ops() if op.op == "add" and _is_wire(op)} == want
        # the tied copies: overlapping ones became wires at the switch-over, an exact one was
        # replaced by the ingress rule and is not deleted after it (that would delete the wire)
        ingress = {_key(sw, ing) for v in vports for sw, _, ing in wire_rules(state.extensions[v])[:1]}
        exact = [k for k in ingress if k[1] in before[k[0]]]
        handed = [op for p in plans for op in p.ops() if op.op == "modify_strict" and op.rule.priority == WIRE_PRIORITY]
        assert bool(exact) == (tied != "overlap") and (len(handed) >= 2 * len(vports) if tied == "overlap" else True)
        assert not [op for p in plans for op in p.ops() if op.op == "delete_strict" and _key(op.switch, op.rule) in ingress]
        e = state.extensions[vports[0]]
        dumped = sb.dump_flows(o.bridge[e.wire.switch])
        assert any(f"in_port={e.wire.port} " in f and f"output:{e.hops[0].near.port}" in f for f in dumped), dumped
        report = o.compare(random_packets(rng, rules, topo, per_port=40))
        assert report.outputs > report.packets // 4
        assert not report.mismatches, "\n".join(str(m) for m in report.mismatches[:3])
        # back to the wires (every wire rule deleted, or replaced by the copy with its match),
        # then out again over the same pairs
        back = retract(state, vports)
        gone = {_key(op.switch, op.rule) for p in back for op in p.ops() if op.op == "delete_strict" and _is_wire(op)}
        replaced = {_key(op.switch, op.rule) for p in back for op in p.ops() if op.op == "add" and not _is_wire(op)
                    and _key(op.switch, op.rule) in ingress}
        assert gone | replaced == {_key(sw, r) for sw, r in want} and not gone & replaced
        assert len(replaced) == len(exact)
        checked += _check_steps(o, rng, rules, topo, back, "retract")
        assert state.extensions == {} and state.topo == topo
        # every copy back where it was (delivery rules carry new flow ids)
        assert {sw: {k for k in map(pkey, state.physical_rules(sw)) if not is_delivery_key(k)}
                for sw in topo.switch_names} == {sw: {k for k in rs if not is_delivery_key(k)} for sw, rs in before.items()}
        again = extend(state, vports)
        assert not [op for p in again for op in p.ops() if isinstance(op, PairOp)]
        checked += _check_steps(o, rng, rules, topo, again, "extend again")
        assert checked > 0


def _broken_extend(plans: list, sw: str, ingress) -> list:
    """The ingress rule replaced an exact copy; the remap's delete of that copy kept (after it)."""
    last = plans[-1]
    last.steps.append([PhysicalOp(sw, "delete_strict", rule=ingress)])
    return plans


def _broken_retract(plans: list, sw: str, ingress) -> list:
    """The exact copy added with the remap's other copies (replacing the ingress rule) and the
    ingress rule deleted at the switch-over (deleting the copy)."""
    plan = plans[-1]
    at = plan.old_ingress_until - 1
    [copy] = [op for op in plan.steps[at] if op.op == "add" and pkey(op.rule) == pkey(ingress)]
    plan.steps[at] = [op for op in plan.steps[at] if op is not copy] + [PhysicalOp(sw, "delete_strict", rule=ingress)]
    plan.steps[at - 1].append(copy)
    return plans


@pytest.mark.ovs
@pytest.mark.parametrize("direction", ["extend", "retract"])
def test_the_oracle_catches_an_exact_tie_handed_over_the_naive_way(direction):
    topo, rng, rules, groups, state = _setup("k3", 4, 200, 1, "exact")
    v = 3  # snic0:1, whose 65535 rule is in_port=3 alone
    with OvsSandbox() as sb, Oracle(sb, topo) as o:
        o.load_virtual(rules, groups)
        o.load_translation(state.translation())
        plans = extend(state, [v])
        e = state.extensions[v]
        o.remap(v, e.hosted)
        sw, _, ingress = wire_rules(e)[0]
        if direction == "extend":
            plans = _broken_extend(plans, sw, ingress)
        else:
            _check_steps(o, rng, rules, topo, plans, "extend")
            plans = retract(state, [v])
            plans = _broken_retract(plans, sw, ingress)
        found = 0
        for plan in plans:
            for step in plan.steps:
                o.apply_step(step)
                found += len(o.compare(random_packets(rng, rules, topo, per_port=12)).mismatches)
        assert found > 0, "a plan that deletes the wire (or the copy that replaced it) went unnoticed"


@pytest.mark.ovs
def test_a_metered_rule_extends_ports_moved_since_the_start_and_its_deletion_releases_them():
    topo = TOPOS["chain"]
    rng = random.Random(11)
    rules, groups = oracle_ruleset(rng, 150, topo, tables=2, n_groups=2)
    state = OneSwitchState(topo, groups)
    for r in rules:
        state.apply(FlowMod("add", r))
    moved = P("s1", 7)  # virtual 2 (s0:1) moves to s1, as an NF migration moves an NF's port
    with OvsSandbox() as sb, Oracle(sb, topo, spare_ports={"s1": [7]}) as o:
        o.load_virtual(rules, groups)
        o.load_translation(state.translation())
        o.remap(2, moved)
        for step in state.remap(2, moved).steps:
            o.apply_step(step)
        here = {v: [state.wire_of(v)] for v in topo.port_map}
        assert not o.compare(random_packets(rng, rules, topo, per_port=10), ingress=here).mismatches
        for br in [o.ref, *o.bridge.values()]:
            sb.ofctl("add-meter", br, "meter=1,kbps,burst,stats,bands=type=drop,rate=10000000,burst_size=10000000")
        metered = parse_rule("table=0,priority=65000,udp,actions=meter:1,output:1")
        assert ports_to_extend(state, metered) == [2, 3, 4]
        plans = extend(state, [2, 3, 4])
        assert state.extensions[2].wire == moved and len(state.extensions[2].hops) == 2  # s1 -> s0 -> host
        for v in (2, 3, 4):
            o.remap(v, state.extensions[v].hosted)
        _check_steps(o, rng, rules, topo, plans, "extend", ingress=here)
        plan = state.apply(FlowMod("add", metered))
        assert {op.switch for op in plan.ops()} == {topo.host}  # its only copy, on the host
        o.load_virtual([metered])
        for step in plan.steps:
            o.apply_step(step)
        packets = random_packets(rng, [metered, *rules], topo, per_port=30)
        report = o.compare(packets, ingress=here)
        assert not report.mismatches, "\n".join(str(m) for m in report.mismatches[:3])
        assert ports_to_release(state) == []  # still needed
        plan = state.apply(FlowMod("delete_strict", metered))
        sb.ofctl("del-flows", o.ref, "--strict", "table=0,priority=65000,udp")
        for step in plan.steps:
            o.apply_step(step)
        assert ports_to_release(state) == [2, 3, 4]
        _check_steps(o, rng, rules, topo, retract(state, [2, 3, 4]), "retract", ingress=here)
        assert state.extensions == {} and state.topo.port_map[2] == moved
