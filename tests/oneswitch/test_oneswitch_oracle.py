"""OVS differential oracle: the virtual switch (one reference bridge) vs. its
translation (one bridge per physical switch, joined by patch ports), fed the
same random packets at every virtual port. 1,000+ random virtual rules over
five seeds and four topologies (three with k = 3, sNIC-to-sNIC via the host, one where the host only carries transit traffic),
then port remaps and flow mods applied plan step by plan step with packets
injected after every step."""

import random

import pytest

from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.oneswitch.translate import Compiler, TranslationError, translate
from tandem.rules.ir import OFPP_ANY, FlowMod, GotoTable, Match, Rule
from tandem.backends.ovs_sandbox import OvsSandbox

pytestmark = [pytest.mark.ovs]

TOPOS = {
    "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                         [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                         {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"}),
    "k2": Topology.build({"host": "host", "snic0": "snic"}, [("host:200", "snic0:7")],
                         {1: "host:1", 2: "host:2", 3: "host:3", 5: "snic0:1", 6: "snic0:2"}),
    "k3wide": Topology.build({"hv": "host", "a": "snic", "b": "snic"}, [("hv:50", "a:50"), ("hv:51", "b:50")],
                             {10: "hv:1", 11: "a:1", 12: "a:2", 13: "b:1", 14: "b:2"}),
    # the host has no virtual port: it only carries sNIC-to-sNIC traffic
    "transit": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                              {1: "s0:1", 2: "s0:2", 3: "s1:1"}),
}

# (topology, seed, rules, tables): 1,150 virtual rules in total
CASES = [("k3", 1, 300, 3), ("k2", 2, 250, 2), ("k3wide", 3, 250, 4), ("k3", 4, 200, 1), ("transit", 5, 150, 2)]


@pytest.fixture(scope="module")
def sb():
    with OvsSandbox() as s:
        yield s


def _fail(report, n=3):
    return "\n".join(str(m) for m in report.mismatches[:n])


@pytest.mark.parametrize("topo_name, seed, n, tables", CASES)
def test_translation_forwards_exactly_like_the_virtual_switch(sb, topo_name, seed, n, tables):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    rules, groups = oracle_ruleset(rng, n, topo, tables=tables, n_groups=3)
    tr = translate(rules, topo, groups)
    with Oracle(sb, topo, packet_in=True) as o:
        o.load_virtual(rules, groups)
        o.load_translation(tr)
        report = o.compare(random_packets(rng, rules, topo, per_port=40))
    assert report.outputs > report.packets // 4  # packets really hit rules and leave ports
    assert not report.mismatches, _fail(report)
    assert not report.packet_in_mismatches, "\n".join(report.packet_in_mismatches[:3])


def test_controller_output_sends_the_same_packet_ins(sb):
    """CONTROLLER output: same frames, virtual in_port, table and cookie as the virtual switch."""
    from pathlib import Path

    from tandem.oneswitch.topology import load_topology
    from tandem.rules.ofctl import parse_flows, parse_rule
    from tandem.rules.packets import build_frame

    examples = Path(__file__).resolve().parents[2] / "examples" / "oneswitch"
    topo = load_topology(examples / "topology.yaml")
    rules = parse_flows((examples / "rules.flows").read_text())
    rules += [parse_rule("table=1,priority=99,cookie=0x77,tcp,actions=CONTROLLER:64,output:4"),
              parse_rule("priority=90,tcp,tp_dst=22,actions=goto_table:1")]
    frames = [build_frame(eth_type=0x0800, ip_proto=17, udp_dst=67, payload=bytes(range(i))) for i in (0, 8, 90)]
    frames += [build_frame(eth_type=0x0800, ip_proto=6, tcp_dst=22, payload=bytes(100))]
    packets = [(v, f) for v in sorted(topo.port_map) for f in frames]
    with Oracle(sb, topo, packet_in=True) as o:
        o.load_virtual(rules)
        o.load_translation(translate(rules, topo))
        report = o.compare(packets)
    assert report.packet_ins == len(packets)  # every frame went to the controller once
    assert not report.packet_in_mismatches, "\n".join(report.packet_in_mismatches[:3])
    assert not report.mismatches, _fail(report)


@pytest.mark.parametrize("topo_name, vport, new", [
    ("k3", 3, "snic1:2"),  # snic0 loses its only port
    ("k3", 1, "snic0:2"),
    ("k3", 4, "snic1:3"),  # same switch, another port
    ("k3", 2, "host:7"),
    ("transit", 3, "h:5"),  # the transit-only host gets its first port
])
def test_port_remap_never_loses_or_duplicates_a_packet(sb, topo_name, vport, new):
    topo = TOPOS[topo_name]
    new = PortRef.parse(new)
    rng = random.Random(100 + vport)
    rules, groups = oracle_ruleset(rng, 120, topo, tables=3, n_groups=3)
    state = OneSwitchState(topo, groups)
    for r in rules:
        state.apply(FlowMod("add", r))
    plan = state.remap(vport, new)
    assert plan.new_ingress_ready <= plan.old_ingress_until or new.switch == topo.port_map[vport].switch
    old = topo.port_map[vport]
    packets = random_packets(rng, rules, topo, per_port=25)
    with Oracle(sb, topo, spare_ports={new.switch: [new.port]}) as o:
        o.load_virtual(rules, groups)
        o.load_translation(translate(rules, topo, groups))
        o.remap(vport, new)  # frames leaving either location count as leaving vport
        for applied in range(len(plan.steps) + 1):
            if applied:
                o.apply_step(plan.steps[applied - 1])
            where = {v: [topo.port_map[v]] for v in topo.port_map}
            where[vport] = ([old] if applied <= plan.old_ingress_until else []) + \
                           ([new] if applied >= plan.new_ingress_ready else [])
            assert where[vport], "the plan must leave the port reachable at every state"
            report = o.compare(packets, where)
            assert not report.mismatches, f"after {applied}/{len(plan.steps)} steps:\n{_fail(report)}"
        # the final physical state is exactly the fresh translation of the new topology
        fresh = translate(rules, state.topo, groups, ids=state.ids)
        for sw in topo.switch_names:
            assert sorted(map(repr, state.physical_rules(sw))) == sorted(map(repr, fresh.per_switch[sw]))


def _random_mod(rng, state, topo, fresh):
    existing = state.virtual_rules()
    kind = rng.choice(["add", "add", "modify", "modify_strict", "delete", "delete_strict"])
    if kind == "add" or not existing:
        return FlowMod("add", fresh)
    target = rng.choice(existing)
    if kind.endswith("_strict"):
        base = target
    else:
        v = rng.choice(sorted(topo.port_map))
        match = rng.choice([target.match, Match.of(in_port=v), Match.of(eth_type=0x0800), Match()])
        base = Rule(match, (), target.table, target.priority)
    if kind.startswith("modify"):
        return FlowMod(kind, Rule(base.match, fresh.instructions if fresh.table == base.table else (),
                                  base.table, base.priority))
    out_port = rng.choice([OFPP_ANY, OFPP_ANY, rng.choice(sorted(topo.port_map))])
    return FlowMod(kind, Rule(base.match, (), base.table, base.priority), out_port=out_port)


def test_flow_mods_follow_ovs_semantics_and_every_step_is_old_or_new(sb):
    topo = TOPOS["k3"]
    rng = random.Random(7)
    rules, groups = oracle_ruleset(rng, 80, topo, tables=2, n_groups=2)
    extra, _ = oracle_ruleset(rng, 40, topo, tables=2, n_groups=0)
    state = OneSwitchState(topo, groups)
    for r in rules:
        state.apply(FlowMod("add", r))
    packets = random_packets(rng, rules + extra, topo, per_port=15)
    with Oracle(sb, topo) as o:
        new_ref = o.add_reference()
        o.load_virtual(rules, groups)
        o.load_virtual(rules, groups, ref=new_ref)
        o.load_translation(state.translation())
        applied_mods, kinds, ops = 0, set(), 0
        for fresh in extra[:14]:
            mod = _random_mod(rng, state, topo, fresh)
            try:
                plan = state.apply(mod)
            except TranslationError:
                continue  # refused: state unchanged, nothing to apply
            o.apply_virtual(mod, new_ref)  # OVS applies the same FlowMod to the "new" reference
            for step in plan.steps:
                o.apply_step(step)
                report = o.compare(packets)  # each packet: as the old or as the new virtual switch
                assert not report.mismatches, f"{mod.command}: {_fail(report)}"
            # afterwards the physical switches equal the new reference alone
            o.refs.remove(o.ref)
            report = o.compare(packets)
            o.refs.insert(0, o.ref)
            assert not report.mismatches, f"after {mod.command}:\n{_fail(report)}"
            o.apply_virtual(mod, o.ref)  # old reference catches up
            applied_mods += 1
            kinds.add(mod.command)
            ops += len(plan)
        assert applied_mods >= 8 and len(kinds) >= 4 and ops > applied_mods, (applied_mods, kinds, ops)


# ---------------------------------------------------------------- the flow-id mark: no tag limit


def _push_then_goto(rng: random.Random, r: Rule) -> Rule:
    """``r`` with a VLAN push (0x8100 or 0x88a8, random VID) in front of its
    apply-actions: with a goto, the VLAN-tag scheme refused such a rule ("may
    pass two VLAN tags on to table …") unless it matched untagged packets only."""
    from tandem.rules.ir import ApplyActions, PushVlan, SetField
    from tandem.rules.prereq import rule_problems

    push = (PushVlan(rng.choice((0x8100, 0x88A8))), SetField("vlan_vid", 0x1000 | rng.randrange(1, 4095)))
    ins, done = [], False
    for i in r.instructions:
        if isinstance(i, ApplyActions) and not done:
            i, done = ApplyActions(push + i.actions), True
        ins.append(i)
    if not done:
        ins.insert(0, ApplyActions(push))
    new = Rule(r.match, tuple(ins), r.table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout)
    return r if rule_problems(new) else new  # e.g. a third push_vlan: OVS would refuse it


def _formerly_refused(r: Rule) -> bool:
    from tandem.rules.ir import ApplyActions, GotoTable, PushVlan

    untagged_only = (fm := r.match.get("vlan_vid")) is not None and not fm.value & 0x1000 and (fm.mask or 0x1FFF) & 0x1000
    pushes = any(isinstance(a, PushVlan) for i in r.instructions if isinstance(i, ApplyActions) for a in i.actions)
    return pushes and r.instruction(GotoTable) is not None and not untagged_only


@pytest.mark.parametrize("topo_name, seed", [("k3", 11), ("k3wide", 12), ("transit", 13)])
def test_vlan_pushes_with_metadata_and_goto_translate_and_forward_like_the_virtual_switch(sb, topo_name, seed):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    rules, groups = oracle_ruleset(rng, 300, topo, tables=4, n_groups=2)
    rules = [_push_then_goto(rng, r) if r.instruction(GotoTable) is not None and rng.random() < 0.7 else r
             for r in rules]
    refused: list[str] = []
    comp = Compiler(topo, groups=groups)
    for r in rules:
        try:
            comp.add(r)
        except TranslationError as e:
            refused.append(e.reason)
    assert not any("VLAN" in why or "tag" in why for why in refused), refused
    kept = [r for r in comp.vrules.values()]
    assert sum(map(_formerly_refused, kept)) >= 40  # the rules the tag scheme refused are really here
    tr = translate(kept, topo, groups)
    with Oracle(sb, topo) as o:
        o.load_virtual(kept, groups)
        o.load_translation(tr)
        report = o.compare(random_packets(rng, kept, topo, per_port=40))
    assert report.outputs > report.packets // 4
    assert not report.mismatches, _fail(report)


def test_double_tagged_frames_keep_both_tags_across_pcie(sb):
    """A frame with two tags (or one plus a pushed one) crosses PCIe whole: the
    flow id is the packet mark, never a third tag."""
    from scapy.all import Dot1AD, Dot1Q, Ether, IP, UDP

    from tandem.rules.ir import ApplyActions, Output, PushVlan, SetField

    topo = TOPOS["k3"]
    rules = [
        Rule(Match.of(in_port=1), (ApplyActions((Output(3), Output(4))),), 0, 10),
        Rule(Match.of(in_port=2), (ApplyActions((PushVlan(0x88A8), SetField("vlan_vid", 0x1123), Output(3))),), 0, 10),
        Rule(Match.of(in_port=3), (ApplyActions((PushVlan(0x8100), SetField("vlan_vid", 0x1007))), GotoTable(1)), 0, 10),
        Rule(Match(), (ApplyActions((Output(4),)),), 1, 5),
    ]
    qinq = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1AD(vlan=10) / Dot1Q(vlan=20)
                 / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))
    single = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1Q(vlan=30)
                   / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))
    tr = translate(rules, topo)
    with Oracle(sb, topo) as o:
        o.load_virtual(rules)
        o.load_translation(tr)
        packets = [(1, qinq), (2, single), (3, single)]
        report = o.compare(packets)
        assert not report.mismatches, _fail(report)
        assert report.outputs == 4
    # and the bytes that left carry both tags: check on a fresh run, capturing the physical ports
    with Oracle(sb, topo) as o:
        o.load_translation(tr)
        sb.inject(o.bridge["host"], 1, [qinq])
        sb.inject(o.bridge["host"], 2, [single])
        sb.settle(quiet_s=0.1)
        out = sb.take_all_output()
        snic0 = out.get((o.bridge["snic0"], 1), [])
        snic1 = out.get((o.bridge["snic1"], 1), [])
    tags = lambda f: [f[12:14].hex(), f[16:18].hex()]  # noqa: E731
    assert sorted(map(tags, snic0)) == [["88a8", "8100"], ["88a8", "8100"]]  # QinQ as sent; pushed S-tag over the C-tag
    assert [tags(f) for f in snic1] == [["88a8", "8100"]]
    assert qinq in snic0 and qinq in snic1
