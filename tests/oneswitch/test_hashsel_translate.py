"""Translating Open vSwitch's multipath, bundle and bundle_load (docs/oneswitch.md
section 7, "Hash selection"), pure: which forms are translated and to what, which
are refused and why. The OVS oracle, ports down included: tests/oneswitch/test_of13_translation.py
(bounded) and ``tandem bench of13_oracle -- --items multipath,bundle,bundle_load``.

Topology: virtual ports 1, 2 on the host (physical 1, 2), 3 on snic0 (physical 1),
4 on snic1 (physical 1); PCIe host:100-snic0:100, host:101-snic1:100."""

import pytest

from test_oneswitch_translate import TOPO
from tandem.oneswitch.translate import TranslationError, translate
from tandem.rules.ir import (
    OFPG_ANY, OFPP_ANY, ApplyActions, Bucket, Bundle, Group, GroupAction, Match, MoveField, Multipath, Output, Rule,
    SetField, Subfield,
)

REG0 = Subfield("reg0", 0, 16)


def rule(*actions, priority=100, **match):
    return Rule(Match.of(**match), (ApplyActions(tuple(actions)),), priority=priority)


def copies(r, groups=(), down=()):
    tr = translate([r], TOPO, list(groups), down=down)
    return {sw: [p for p in rules if p.table == r.table and p.priority == r.priority]
            for sw, rules in tr.per_switch.items()}, tr


def test_multipath_is_kept_as_it_is_on_every_switch():
    mp = Multipath("symmetric_l3l4+udp", 5, "hrw", 7, 0, REG0)
    got, _ = copies(rule(mp, MoveField(REG0, Subfield("eth_src", 0, 16)), Output(1)))
    assert got["host"][0].apply_actions == (mp, MoveField(REG0, Subfield("eth_src", 0, 16)), Output(1))
    assert got["snic0"][0].apply_actions[0] == mp


def test_active_backup_bundle_is_a_fast_failover_group_watching_each_member():
    got, tr = copies(rule(Bundle("eth_src", 0, "active_backup", (3, 1, 99)), in_port=2))
    ((copy,),) = [got["host"]]
    (ga,) = copy.apply_actions
    gid = ga.group_id
    (g,) = [g for g in tr.groups["host"] if g.group_id == gid]
    assert g.type == "fast_failover" and len(g.buckets) == 3
    b3, b1, b99 = g.buckets
    # member 3 is on snic0: watched through its ("live", 3) group, sent over PCIe with its flow id
    assert b3.watch_port == OFPP_ANY and b3.watch_group != OFPG_ANY
    assert any(isinstance(a, SetField) and a.field == "pkt_mark" for a in b3.actions) and b3.actions[-1] == Output(100)
    # member 1 is the host's own port 1: watched directly
    assert (b1.watch_port, b1.watch_group, b1.actions) == (1, OFPG_ANY, (Output(1),))
    # 99 is no virtual port: its ("live", 99) group has no bucket, so it is never live; it sends nothing
    (g99,) = [x for x in tr.groups["host"] if x.group_id == b99.watch_group]
    assert g99.buckets == () and b99.actions == ()


def test_a_member_going_down_empties_its_live_group_on_the_other_switches():
    _, tr = copies(rule(Bundle("eth_src", 0, "active_backup", (3, 1)), in_port=2), down=(3,))
    ff = next(g for g in tr.groups["host"] if g.type == "fast_failover" and len(g.buckets) == 2)
    (g3,) = [g for g in tr.groups["host"] if g.group_id == ff.buckets[0].watch_group]
    assert g3.buckets == ()


def test_hrw_bundle_with_members_on_its_own_switch_keeps_their_indices_with_physical_numbers():
    got, _ = copies(rule(Bundle("symmetric_l4", 9, "hrw", (2, 1)), in_port=1))
    assert got["host"][0].apply_actions == (Bundle("symmetric_l4", 9, "hrw", (2, 1)),)
    got, _ = copies(rule(Bundle("symmetric_l4", 9, "hrw", (3,)), in_port=3))
    assert got["snic0"][0].apply_actions == (Bundle("symmetric_l4", 9, "hrw", (1,)),)  # virtual 3 is snic0's 1


@pytest.mark.parametrize("action, why", [
    (Bundle("eth_src", 0, "hrw", (1, 3)), "member 3 in a rule that runs on host: it is a port of snic0"),
    (Bundle("eth_src", 0, "hrw", (1, 99)), "member 99 in a rule that runs on host: no virtual port has that number"),
    (Bundle("eth_src", 0, "active_backup", (1, 3), REG0), "bundle_load with member 3"),
])
def test_forms_that_would_need_liveness_of_other_switches_are_refused(action, why):
    with pytest.raises(TranslationError, match=why):
        translate([rule(action, in_port=1)], TOPO)


def test_bundle_load_must_load_the_virtual_number():
    got, _ = copies(rule(Bundle("nw_src", 1, "active_backup", (2, 1), REG0), in_port=1))
    assert got["host"][0].apply_actions == (Bundle("nw_src", 1, "active_backup", (2, 1), REG0),)
    with pytest.raises(TranslationError, match="its number on snic0 is 1, and bundle_load must load the virtual"):
        translate([rule(Bundle("nw_src", 1, "hrw", (3,), REG0), in_port=3)], TOPO)


def test_a_rule_without_in_port_is_translated_on_every_switch_or_refused():
    # copies run on every switch: an active_backup bundle works everywhere, an hrw one nowhere but its members' switch
    got, _ = copies(rule(Bundle("eth_src", 0, "active_backup", (1, 3))))
    assert all(isinstance(c[0].apply_actions[0], GroupAction) for c in got.values())
    with pytest.raises(TranslationError, match="runs on snic0"):
        translate([rule(Bundle("eth_src", 0, "hrw", (1, 2)))], TOPO)


def test_a_bundle_or_multipath_in_a_group_bucket_is_left_out_as_open_vswitch_ignores_it():
    # (Open vSwitch 3.1 runs a bucket as an action set, which has no place for them;
    # dp-core's ActionSet drops them too: tests/dataplane/test_hashsel_oracle.py)
    g = Group(5, "all", (Bucket((SetField("eth_dst", 7), Bundle("eth_src", 0, "active_backup", (1, 3)),
                                 Multipath("eth_src", 0, "hrw", 2, 0, REG0), Bundle("eth_src", 0, "hrw", (3,)),
                                 Output(2))),))
    _, tr = copies(rule(GroupAction(5), in_port=1), groups=[g])
    (pg,) = [x for x in tr.groups["host"] if x.group_id == 5]
    assert [b.actions for b in pg.buckets] == [(SetField("eth_dst", 7), Output(2))]



def test_a_member_going_down_later_is_one_modify_of_its_live_group():
    from tandem.oneswitch.state import OneSwitchState
    from tandem.rules.ir import FlowMod

    st = OneSwitchState(TOPO)
    st.apply(FlowMod("add", rule(Bundle("eth_src", 0, "active_backup", (3, 1)), in_port=1)))
    ff = next(g for g in st.physical_groups("host") if g.type == "fast_failover" and len(g.buckets) == 2)
    watched = ff.buckets[0].watch_group
    plan = st.set_port_live(3, False)
    ops = [op for step in plan.steps for op in step]
    host = [op for op in ops if op.switch == "host"]
    assert [(op.op, op.group.group_id, op.group.buckets) for op in host] == [("modify_group", watched, ())]
    plan = st.set_port_live(3, True)
    (up,) = [op for step in plan.steps for op in step if op.switch == "host"]
    assert up.group.group_id == watched and len(up.group.buckets) == 1


def test_reserved_members_of_an_active_backup_bundle_are_always_live_buckets():
    from tandem.rules.ir import OFPP_IN_PORT, OFPP_LOCAL

    got, tr = copies(rule(Bundle("eth_src", 0, "active_backup", (OFPP_ANY, OFPP_IN_PORT, OFPP_LOCAL, 3)), in_port=4))
    ((copy,),) = [got["snic1"]]
    (g,) = [g for g in tr.groups["snic1"] if g.group_id == copy.apply_actions[0].group_id]
    none, in_port, local, b3 = g.buckets
    # each reserved member watches snic1's PCIe port (always live); NONE outputs nothing, IN_PORT is the
    # packet's own port, LOCAL is the host's (over PCIe with its flow id)
    assert [b.watch_port for b in (none, in_port, local)] == [100] * 3
    assert none.actions == () and in_port.actions == (Output(OFPP_IN_PORT),)
    assert any(isinstance(a, SetField) and a.field == "pkt_mark" for a in local.actions) and local.actions[-1] == Output(100)
    assert b3.watch_group != OFPG_ANY  # (port 3 is snic0's)


def test_hrw_keeps_in_port_and_none_everywhere_and_local_on_the_host_only():
    from tandem.rules.ir import OFPP_IN_PORT, OFPP_LOCAL

    b = Bundle("eth_src", 0, "hrw", (OFPP_IN_PORT, OFPP_ANY, OFPP_LOCAL, 2))
    got, _ = copies(rule(b, in_port=1))
    assert got["host"][0].apply_actions == (Bundle("eth_src", 0, "hrw", (OFPP_IN_PORT, OFPP_ANY, OFPP_LOCAL, 2)),)
    with pytest.raises(TranslationError, match="member LOCAL in a rule that runs on snic0: it is a port of host"):
        copies(rule(Bundle("eth_src", 0, "hrw", (OFPP_IN_PORT, OFPP_LOCAL)), in_port=3))
    # bundle_load loads LOCAL's number on any switch (always live)
    load = Bundle("eth_src", 0, "hrw", (OFPP_LOCAL, OFPP_IN_PORT, OFPP_ANY), REG0)
    got, _ = copies(rule(load, in_port=3))
    assert got["snic0"][0].apply_actions == (load,)


@pytest.mark.parametrize("member,alg", [("TABLE", "active_backup"), ("TABLE", "hrw"), ("FLOOD", "hrw"), ("ALL", "hrw")])
def test_a_bundle_choosing_table_or_an_hrw_flood_is_refused(member, alg):  # (NORMAL: test_bundle_normal.py)
    from tandem.rules.ir import RESERVED_PORT_NAMES

    port = next(p for p, n in RESERVED_PORT_NAMES.items() if n == member)
    with pytest.raises(TranslationError, match=f"bundle\\({alg}\\) with member {member}") as e:
        copies(rule(Bundle("eth_src", 0, alg, (1, port)), in_port=1))
    assert e.value.of_error == (2, 4)  # OFPBAC_BAD_OUT_PORT


@pytest.mark.parametrize("member", ["FLOOD", "ALL"])
def test_an_active_backup_flood_member_applies_an_all_group_of_its_outputs(member):
    from tandem.rules.ir import OFPP_ALL, OFPP_FLOOD

    port = OFPP_FLOOD if member == "FLOOD" else OFPP_ALL
    got, tr = copies(rule(Bundle("eth_src", 0, "active_backup", (3, port, 2)), in_port=1))
    ((copy,),) = [got["host"]]
    groups = {g.group_id: g for g in tr.groups["host"]}
    ff = groups[copy.apply_actions[0].group_id]
    b3, flood, b2 = ff.buckets
    assert ff.type == "fast_failover" and flood.watch_port == 100  # (always live: a PCIe port)
    (apply,) = flood.actions
    every = groups[apply.group_id]
    # on the host: its ports 1 and 2 (an output to the in_port sends nothing) and LOCAL, and one copy over
    # each PCIe port with its flow id in the mark; each bucket one output, its mark set right before
    outs = sorted(b.actions[-1].port for b in every.buckets)
    assert every.type == "all" and outs == [1, 2, 100, 101, 0xFFFFFFFE]
    for b in every.buckets:
        assert sum(isinstance(a, Output) for a in b.actions) == 1
        marks = [a for a in b.actions if isinstance(a, SetField) and a.field == "pkt_mark"]
        assert (len(marks) == 1) == (b.actions[-1].port in (100, 101))
    assert b2.actions == (Output(2),)


def test_an_active_backup_flood_member_first_in_a_bundle_on_an_snic():
    from tandem.rules.ir import OFPP_FLOOD

    got, tr = copies(rule(Bundle("eth_src", 0, "active_backup", (OFPP_FLOOD, 1)), in_port=4))
    ((copy,),) = [got["snic1"]]
    groups = {g.group_id: g for g in tr.groups["snic1"]}
    flood = groups[copy.apply_actions[0].group_id].buckets[0]
    # snic1 has no port but the in_port (virtual 4, physical 1: sends nothing): the flood's other outputs are
    # copies over its PCIe port, each with its own flow id
    (apply,) = flood.actions
    every = groups[apply.group_id]
    pcie = [b for b in every.buckets if b.actions[-1] == Output(100)]
    assert every.type == "all" and len(pcie) >= 2 and {b.actions[-1] for b in every.buckets} == {Output(1), Output(100)}
    marks = [next(a.value for a in b.actions if isinstance(a, SetField) and a.field == "pkt_mark") for b in pcie]
    assert len(set(marks)) == len(marks)
