"""Nicira learn through OneSwitch, against Open vSwitch.

While any virtual rule learns, every sNIC port is extended to the host (extension.py,
``LEARN``), so the host's table holds every learned flow. Random learning rule sets
(generate_learn.py) are translated on a host + 2 sNIC topology and on a chain, traffic
runs one packet at a time, and every frame leaving every virtual port must equal what
one OVS bridge with the virtual rules sends; the flows the host learned (ports mapped
back to virtual numbers) must be the ones that bridge learned. Also: the translation of
the forms OneSwitch takes, the ones it refuses, and that the ports stay on the host
after the last learning rule goes (learned flows outlive it)."""

import pytest

from tandem.oneswitch.extension import LEARN, one_switch, ports_to_extend, ports_to_release, split_meters
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.state import OneSwitchState
from tandem.rules.ir import Bucket, FlowMod, Group, Learn, LearnSpec, LEARN_MATCH, Output, Subfield
from tandem.rules.ofctl import parse_rule
from tandem.testing.learn_oracle import TOPOS, build, run_learn_oracle



@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed, n_rules, n_packets", [("k3", 1, 60, 80), ("chain", 2, 60, 80)])
def test_learning_rules_through_oneswitch_match_one_ovs_bridge(topo_name, seed, n_rules, n_packets):
    r = run_learn_oracle(TOPOS[topo_name], seed, n_rules, n_packets)
    assert not r.traffic.mismatches, "\n".join(map(str, r.traffic.mismatches[:3]))
    assert not r.learned_mismatches, "\n".join(r.learned_mismatches[:5])
    assert r.learning_rules >= n_rules // 3 and r.learned_ref >= 5  # flows were learned, and compared
    assert r.traffic.packets == n_packets and r.traffic.outputs > n_packets // 3


def test_a_learning_rule_homes_every_port_and_they_stay_after_it():
    topo = TOPOS["k3"]
    state = OneSwitchState(topo)
    rule = parse_rule("priority=5,actions=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),"
                      "goto_table:1")
    assert one_switch(rule) == [LEARN]
    assert ports_to_extend(state, rule) == [3, 4, 5] and split_meters(state, rule) == {LEARN: {"host", "snic0", "snic1"}}
    state, _ = build(topo, [rule])
    assert state.topo.ingress_switches == ("host",)
    state.apply(FlowMod("delete_strict", rule))
    assert ports_to_release(state) == []  # its learned flows are still on the host


def test_an_immediate_in_port_is_the_ports_host_number():
    topo = TOPOS["k3"]
    rule = parse_rule("priority=5,actions=learn(table=1,in_port=3,NXM_OF_IN_PORT[]=0x1,OXM_OF_IN_PORT[]=0x63,"
                      "NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:OXM_OF_IN_PORT[]),goto_table:1")
    state, _ = build(topo, [rule])
    hosted = state.extensions[3].hosted.port
    (copy,) = [r for r in state.physical_rules("host") if r.priority == 5]
    (learn,) = [a for a in copy.apply_actions if isinstance(a, Learn)]
    assert [s.value for s in learn.specs if s.src is None] == [hosted, 1, 99]  # 99: no port, so never matches
    assert learn.specs[3:] == rule.apply_actions[0].specs[3:]


@pytest.mark.parametrize("text, why", [
    ("actions=learn(table=0,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])", "learns into tables 1..254"),
    ("actions=learn(table=1,load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15])", "host's port number"),
    ("actions=learn(table=1,NXM_NX_REG0[]=OXM_OF_IN_PORT[])", "host's port number"),
    ("actions=learn(table=1,OXM_OF_IN_PORT[]=NXM_NX_REG0[])", "host's port number"),
    ("actions=learn(table=1,NXM_OF_IN_PORT[0..7])", "host's port number"),
    ("actions=learn(table=1,output:NXM_NX_REG0[0..15])", "only to the port in_port holds"),
    ("actions=learn(table=1,in_port=LOCAL)", "reserved port"),
])
def test_learn_forms_oneswitch_cannot_make_exact_are_refused_with_their_reason(text, why):
    state = OneSwitchState(TOPOS["k3"])
    with pytest.raises(TranslationError, match=why):
        state.apply(FlowMod("add", parse_rule(text)))


def test_learn_in_a_group_bucket_is_left_out_of_the_physical_bucket():
    """Open vSwitch runs a bucket as an action set, which has no place for learn (bucket_ct.py)."""
    learn = Learn((LearnSpec(LEARN_MATCH, Subfield.whole("eth_src"), dst=Subfield.whole("eth_dst")),))
    state = OneSwitchState(TOPOS["k3"], [Group(1, "all", (Bucket((learn, Output(3))), Bucket((learn,))))])
    state.apply(FlowMod("add", parse_rule("priority=5,actions=group:1")))
    (g,) = [g for g in state.comp.physical_groups("host") if g.group_id == 1]
    assert not any(type(a) is Learn for b in g.buckets for a in b.actions)
    assert [len(b.actions) for b in g.buckets] == [2, 0]  # (the mark's flow id and the PCIe output; nothing)
    assert not state.comp.learning


def test_deleting_the_last_delete_learned_rule_deletes_the_tables_rules_with_its_cookie():
    state, _ = build(TOPOS["k3"], [parse_rule(t) for t in (
        "priority=5,ip,actions=learn(table=2,cookie=0x7,delete_learned,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),goto_table:2",
        "priority=6,arp,actions=learn(table=2,cookie=0x7,delete_learned,NXM_OF_ETH_SRC[]),goto_table:2",
        "table=2,cookie=0x7,priority=1,actions=output:3",  # (as a learned flow would be: same table and cookie)
        "table=2,cookie=0x8,priority=2,actions=output:4",
        "table=1,cookie=0x7,priority=3,actions=output:4",
    )])
    state.apply(FlowMod("delete_strict", parse_rule("priority=5,ip,actions=drop")))
    assert len(state.virtual_rules()) == 4  # another rule still learns into (table 2, cookie 7)
    plan = state.apply(FlowMod("delete_strict", parse_rule("priority=6,arp,actions=drop")))
    assert sorted((r.table, r.cookie) for r in state.virtual_rules()) == [(1, 7), (2, 8)]
    assert any(o.op.startswith("delete") and o.rule.table == 2 and o.rule.cookie == 7 for o in plan.ops())


def test_the_hosts_learned_flows_show_in_virtual_terms():
    from tandem.oneswitch.learn_translate import learned_flows
    from tandem.rules.ofwire_stats import FlowStatsEntry

    topo = TOPOS["k3"]
    learner = parse_rule("priority=5,actions=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),"
                         "goto_table:1")
    state, _ = build(topo, [learner, parse_rule("table=1,priority=1,in_port=4,actions=output:1")])
    hosted = state.extensions[4].hosted.port
    phys = [FlowStatsEntry(r, 3, 0, 0, 7, 700) for r in state.physical_rules("host")]
    flow = parse_rule(f"table=1,priority=9,in_port={hosted},dl_dst=02:00:00:00:00:01,actions=output:{hosted},output:77")
    phys.append(FlowStatsEntry(flow, 2, 5, 0, 3, 300))
    (got,) = learned_flows(state, phys)
    assert got.rule == parse_rule("table=1,priority=9,in_port=4,dl_dst=02:00:00:00:00:01,actions=output:4,output:77")
    assert (got.duration_sec, got.packet_count, got.byte_count) == (2, 3, 300)
    assert learned_flows(OneSwitchState(topo), phys) == []  # nothing learns: no flow is taken for a learned one


@pytest.mark.parametrize("seed", range(1, 41))
def test_the_generators_draw_valid_rule_sets_that_oneswitch_takes(seed):
    import random

    from tandem.rules.generate_learn import learn_ruleset
    from tandem.rules.generate_normal import normal_ruleset
    from tandem.rules.prereq import rule_problems

    for make in (learn_ruleset, normal_ruleset):
        rules = make(random.Random(seed), 150, [1, 2, 3, 4, 5])
        assert [p for r in rules for p in rule_problems(r)] == []
        state, _ = build(TOPOS["k3"], rules)  # every rule translates (homed)
        assert len(state.virtual_rules()) == len({(r.table, r.priority, r.match) for r in rules})


@pytest.mark.ovs
def test_dp_core_learns_as_one_ovs_bridge():
    """The emulator's switch runs the same learning rule sets as one OVS bridge:
    frames and, at the end, the learned flows (match, priority, cookie, timeouts, actions)."""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing.learn_dp_oracle import run_learn_dp_oracle

    with OvsSandbox() as sb:
        for seed in (1, 2):
            r = run_learn_dp_oracle(sb, seed, 60, 80)
            assert not r.traffic.mismatches, "\n".join(r.traffic.mismatches[:3])
            assert not r.learned_mismatches, "\n".join(r.learned_mismatches[:5])
            assert r.learning_rules >= 20 and r.learned_ref >= 5
            assert r.traffic.packets == 80 and r.traffic.outputs > 20
