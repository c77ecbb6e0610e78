"""Connection tracking through OneSwitch, against Open vSwitch.

While any virtual rule has a ``ct`` action every sNIC port is extended to the host
(extension.py, ``CT``), so the host's one tracker sees both directions of every
connection. Random ct rule sets (generate_ct.py: every rule uses ct) are translated
on a host + 2 sNIC topology and on a chain, connection traces run between ports of
different switches (each direction entering on its own switch), and every frame
leaving every virtual port must equal what one OVS bridge with the virtual rules
sends (its tracker in a sandbox of its own: ct_oracle.SplitSandbox). The rule sets
include ct / ct_clear written into the action set and recirculation back into the
rule's own or an earlier table. Also: ports come back when the last ct rule goes;
ct forms OneSwitch refuses."""

import random

import pytest

from tandem.oneswitch.extension import CT, ports_to_extend, ports_to_release, release, split_meters, extend
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.state import OneSwitchState
from tandem.rules.generate_ct import ct_ruleset, ct_traces
from tandem.rules.ir import FlowMod, Group, Bucket, Ct, CtClear, Output
from tandem.rules.ofctl import parse_rule
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, translation_vs_ovs

TOPOS = ct_topologies()


def run_oracle(topo_name: str, seed: int, n_rules: int, n_conns: int):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    rules = ct_ruleset(rng, n_rules, sorted(topo.port_map))
    rounds = ct_traces(rng, cross_pairs(topo), n_conns)
    state, report = translation_vs_ovs(topo, rules, rounds)
    assert state.topo.ingress_switches == (topo.host,)  # every pipeline runs on the host
    for sw in topo.switch_names:  # and only the host's tracker is ever used (the sandbox's bridges share
        if sw != topo.host:       # one tracker, so the oracle alone would not tell)
            assert not [r for r in state.physical_rules(sw) if any(isinstance(a, (Ct, CtClear)) for a in r.apply_actions)]
    return rules, report


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed, n_rules, n_conns", [("k3", 1, 150, 24), ("chain", 2, 120, 20)])
def test_ct_rules_through_oneswitch_match_one_ovs_bridge(topo_name, seed, n_rules, n_conns):
    rules, report = run_oracle(topo_name, seed, n_rules, n_conns)
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:3]))
    assert report.packets >= 3 * n_conns and report.outputs > report.packets // 4
    assert len(report.expected_by_port) >= 3


def test_a_ct_rule_extends_every_snic_port_and_its_removal_releases_them():
    topo = TOPOS["k3"]
    state = OneSwitchState(topo)
    plain = parse_rule("priority=5,ip,actions=output:3")
    state.apply(FlowMod("add", plain))
    ct = parse_rule("table=1,priority=5,ip,ct_state=+trk+new,actions=ct(commit),output:4")
    assert ports_to_extend(state) == [] and ports_to_extend(state, ct) == [3, 4, 5]
    assert split_meters(state, ct) == {CT: {"host", "snic0", "snic1"}}
    # ct_clear and ct_* matches alone see only untracked packets: no tracker, nothing moves
    assert ports_to_extend(state, parse_rule("ip,ct_state=-trk,actions=ct_clear,output:4")) == []
    for plan in extend(state, [3, 4, 5]):
        pass
    state.apply(FlowMod("add", ct))
    assert ports_to_release(state) == []
    state.apply(FlowMod("delete_strict", ct))
    assert ports_to_release(state) == [3, 4, 5]
    release(state)
    assert state.extensions == {} and state.topo == topo


def test_ct_into_table_0_is_written_with_a_mark_of_0_and_refused_where_the_mark_is_used():
    """A copy recirculated into table 0 is looked up there as by resubmit(,0): physical
    table 0 tells the copies of virtual table 0 from the delivery rules by mark 0."""
    state = OneSwitchState(TOPOS["k3"])
    for plan in extend(state, [3, 4, 5]):
        pass
    state.apply(FlowMod("add", parse_rule("table=2,priority=5,ip,actions=ct(table=0),output:1")))
    state.apply(FlowMod("add", parse_rule("table=3,priority=5,ip,actions=ct(table=1),output:1")))
    host = {r.table: r.apply_actions for r in state.physical_rules("host") if r.priority == 5}
    assert [type(a).__name__ for a in host[2]][-3:] == ["SetField", "Ct", "Output"] and host[2][-3].field == "pkt_mark"
    assert [type(a).__name__ for a in host[3]] == ["Ct", "Output"]  # (into table 1: as it is)
    with pytest.raises(TranslationError, match="looks table 0 up again"):
        state.apply(FlowMod("add", parse_rule("table=1,priority=6,ip,actions=set_field:5->pkt_mark,output:2")))


def test_ct_in_a_group_bucket_stays_in_the_physical_bucket():
    """(homing, the mark and the oracle: test_bucket_ct_translate.py)"""
    state = OneSwitchState(TOPOS["k3"], [Group(1, "all", (Bucket((Ct(commit=True), Output(3))), Bucket((CtClear(),))))])
    state.apply(FlowMod("add", parse_rule("priority=5,actions=group:1")))
    (g,) = [g for g in state.comp.physical_groups("host") if g.group_id == 1]
    assert [type(b.actions[0]) for b in g.buckets] == [Ct, CtClear]


def test_a_ct_written_into_the_action_set_extends_every_snic_port_too():
    state = OneSwitchState(TOPOS["k3"])
    assert ports_to_extend(state, parse_rule("table=1,ip,actions=write_actions(ct(commit))")) == [3, 4, 5]
