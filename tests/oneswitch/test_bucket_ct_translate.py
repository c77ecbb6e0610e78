"""``ct`` and ``ct_clear`` in group buckets through OneSwitch (oneswitch/bucket_ct.py),
against Open vSwitch: every sNIC port homed to the host while a group holds ct (also
when no rule has a ct action: the firewall below keeps all of its ct in buckets), the
mark reset before a bucket's ``ct(table=0)``, recirculating groups in the mark ledger;
and random rule sets applying such groups (generate_ct_bucket.py)."""

import random

import pytest

from tandem.oneswitch import bucket_ct
from tandem.oneswitch.extension import CT, extend, ports_to_extend, ports_to_release, split_meters
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.state import OneSwitchState
from tandem.rules.generate_ct import ct_traces
from tandem.rules.generate_ct_bucket import bucket_ct_ruleset, uses_bucket_ct
from tandem.rules.ir import Bucket, Ct, FlowMod, Group, SetField
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, translation_vs_ovs

TOPOS = ct_topologies()
# k3: inside is virtual port 3 (snic0), outside port 4 (snic1); no rule has a ct action
GROUPS = ["group_id=1,type=indirect,bucket=ct(table=1,zone=3)",
          "group_id=2,type=all,bucket=ct(commit,zone=3,exec(set_field:0x7->ct_mark)),bucket=output:4"]
FIREWALL = ["table=0,priority=10,ip,actions=group:1",
            "table=1,priority=20,ip,in_port=3,ct_state=+trk+new,actions=group:2",
            "table=1,priority=20,ip,in_port=3,ct_state=+trk+est,actions=output:4",
            "table=1,priority=20,ip,in_port=4,ct_state=+trk+est+rpl,ct_mark=0x7,actions=output:3",
            "table=1,priority=10,ip,ct_state=+trk,actions=output:1"]


def _firewall_rounds() -> list:
    out = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=4000, udp_dst=53)
    reply = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4000)
    probe = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4001)
    return [[(4, probe)], [(3, out)], [(4, reply)], [(3, out)], [(4, reply)]]


def test_a_group_with_ct_in_a_bucket_homes_every_port_and_its_end_releases_them():
    topo = TOPOS["k3"]
    groups = [parse_group(g) for g in GROUPS]
    state = OneSwitchState(topo)
    assert ports_to_extend(state, None, groups) == [3, 4, 5]
    assert split_meters(state, None, groups) == {CT: {"host", "snic0", "snic1"}}
    clear_only = [Group(3, "all", (Bucket((parse_rule("actions=ct_clear").apply_actions[0],)),))]
    assert ports_to_extend(state, None, clear_only) == []  # (ct_clear alone: every packet is untracked anyway)
    extend(state, ports_to_extend(state, None, groups))
    state.set_groups(groups)
    assert ports_to_release(state) == []  # the group keeps them on the host
    state.set_groups([])
    assert ports_to_release(state) == [3, 4, 5]


@pytest.mark.ovs
def test_a_firewall_whose_ct_is_all_in_buckets_matches_one_ovs_bridge():
    topo = TOPOS["k3"]
    rules, groups = [parse_rule(t) for t in FIREWALL], [parse_group(g) for g in GROUPS]
    state, report = translation_vs_ovs(topo, rules, _firewall_rounds(), groups)
    assert state.topo.ingress_switches == (topo.host,)
    for sw in topo.switch_names:  # only the host's tracker is used (the sandbox's physical bridges share
        if sw != topo.host:       # one tracker, so the oracle alone would not tell: test_ct_oracle.py)
            assert not [g for g in state.comp.physical_groups(sw) if bucket_ct.ct_groups([g])]
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:3]))
    assert report.expected_by_port[3] == 2 and report.expected_by_port[4] == 2 and report.expected_by_port[1] == 1


def test_a_buckets_ct_into_table_0_runs_with_the_mark_at_0_and_is_refused_where_the_mark_is_used():
    groups = [parse_group("group_id=1,type=all,bucket=set_field:0x5->reg0,ct(table=0,zone=NXM_NX_REG0[0..15])")]
    state = OneSwitchState(TOPOS["k3"], groups)
    state.apply(FlowMod("add", parse_rule("priority=5,ip,actions=group:1")))
    (g,) = [g for g in state.comp.physical_groups("host") if g.group_id == 1]
    (b,) = g.buckets
    assert b.actions[-2:] == (SetField("pkt_mark", 0), Ct(zone_src=b.actions[-1].zone_src, table=0))
    with pytest.raises(TranslationError, match="table 0"):
        state.apply(FlowMod("add", parse_rule("table=1,priority=5,pkt_mark=0x3,actions=output:3")))


def test_recirculating_groups_count_in_the_mark_ledger():
    groups = [parse_group("group_id=1,type=all,bucket=ct(table=2)"), parse_group("group_id=2,type=all,bucket=ct(commit)")]
    assert bucket_ct.recirc_groups(groups) == {1} and bucket_ct.ct_groups(groups) == {1, 2}
    state = OneSwitchState(TOPOS["k3"], groups)
    assert state.comp.marks.resubmitters == 1 and 1 in state.comp.marks.observing


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed", [("k3", 1), ("chain", 2)])
def test_random_rule_sets_applying_groups_with_ct_match_one_ovs_bridge(topo_name, seed):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    rules, groups = bucket_ct_ruleset(rng, 120, sorted(topo.port_map))
    rounds = ct_traces(rng, cross_pairs(topo), 16)
    _, report = translation_vs_ovs(topo, rules, rounds, groups)
    assert sum(map(uses_bucket_ct, rules)) >= 30
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:3]))
    assert report.outputs >= 5
