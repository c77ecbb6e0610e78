"""Pure translator tests, one per case of UNO §3.3.1 and beyond (no OVS needed).

Topology for all cases: virtual ports 1, 2 on the host (physical 1, 2), 3 on
snic0 (physical 1), 4 on snic1 (physical 1); PCIe pairs host:100-snic0:100 and
host:101-snic1:100. The OVS oracle (test_oneswitch_oracle.py) checks behaviour;
these tests pin down the shape of each case.
"""

import pytest

from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import (
    INTERNAL_GROUP_BASE, TAG_FIELD, Compiler, FlowIds, TranslationError, is_delivery_key, packet_in_state, pkey, translate,
    vkey,
)
from tandem.rules.ir import (
    OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL, ApplyActions, Bucket,
    GotoTable, Group, GroupAction, Match, MoveField, Output, PushVlan, Rule, SetField, StackPop, StackPush, Subfield,
    WriteActions, WriteMetadata,
)

TOPO = Topology.build(
    {"host": "host", "snic0": "snic", "snic1": "snic"},
    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
    {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"},
)


def rule(*actions, table=0, priority=100, goto=None, write=None, meta=None, **match):
    ins = []
    if actions:
        ins.append(ApplyActions(tuple(actions)))
    if write is not None:
        ins.append(WriteActions(tuple(write)))
    if meta is not None:
        ins.append(WriteMetadata(*meta))
    if goto is not None:
        ins.append(GotoTable(goto))
    return Rule(Match.of(**match), tuple(ins), table=table, priority=priority)


def copies(tr, r):
    return {sw: p for sw, p in tr.derived_rules(r)}


def tag_of(tr_or_ids, dest):
    ids = tr_or_ids if isinstance(tr_or_ids, FlowIds) else None
    return ids.tags[dest]


def tagged(tag, link):
    return [SetField(TAG_FIELD, tag), Output(link)]


def saved(tag, link):
    """A PCIe output whose flow id a later action could see: the packet's own mark restored after it."""
    return [MARK_PUSH, *tagged(tag, link), MARK_POP]


MARK_PUSH = StackPush(Subfield("pkt_mark", 0, 32))
MARK_POP = StackPop(Subfield("pkt_mark", 0, 32))


def delivery(tr, sw):
    return {r.match.get(TAG_FIELD).value: r.apply_actions for r in tr.per_switch[sw] if is_delivery_key(pkey(r))}


def no_mark(match: Match) -> Match:
    """A wildcard-in_port copy of a table-0 rule: the rule's match and pkt_mark=0."""
    return match.with_field(TAG_FIELD, 0)


def test_no_ports_rule_goes_to_every_switch_with_virtual_ports():
    r = rule(SetField("eth_dst", 0x020000000009), eth_type=0x0800)
    tr = translate([r], TOPO)
    c = copies(tr, r)
    assert set(c) == {"host", "snic0", "snic1"}
    for p in c.values():  # virtual table 0 is physical table 0; marked PCIe arrivals never match the copy
        assert p.match == no_mark(r.match) and p.table == 0 and p.apply_actions == r.apply_actions
    assert all(not delivery(tr, s) for s in c)  # nothing crosses PCIe
    r5 = rule(SetField("eth_dst", 0x020000000009), table=5, eth_type=0x0800)  # later tables need no mark match
    assert {p.match for p in copies(translate([r5], TOPO), r5).values()} == {r5.match}


def test_ingress_only_rule_lives_on_the_ingress_switch_with_physical_in_port():
    r = rule(in_port=3, eth_type=0x0800)  # drop
    tr = translate([r], TOPO)
    assert copies(tr, r) == {"snic0": Rule(Match.of(in_port=1, eth_type=0x0800), (), table=0, priority=100)}
    assert tr.stats.physical["host"] == 0 and tr.stats.physical["snic1"] == 0


def test_ingress_and_egress_on_the_same_switch_is_a_plain_output():
    r = rule(Output(2), in_port=1)
    c = copies(translate([r], TOPO), r)
    assert c["host"].apply_actions == (Output(2),)


def test_ingress_and_egress_on_different_switches_mark_on_ingress_match_on_egress():
    ids = FlowIds.for_topology(TOPO)
    r = rule(Output(3), in_port=1)  # UNO Fig. 6(a), first rule
    tr = translate([r], TOPO, ids=ids)
    t3 = ids.tags[("port", 3)]
    assert list(copies(tr, r)["host"].apply_actions) == tagged(t3, 100)
    assert delivery(tr, "snic0") == {t3: (Output(1),)}  # the frame's bytes were never changed
    (d,) = tr.per_switch["snic0"]  # in table 0, matching the mark alone: no dispatch table
    assert (d.table, d.match) == (0, Match.of(pkt_mark=t3))


def test_multi_ingress_ambiguity_is_resolved_by_destination_tags():
    ids = FlowIds.for_topology(TOPO)
    # UNO Fig. 6(a): two flows share the host->sNIC hop but go to different ports
    topo = Topology.build({"host": "host", "snic0": "snic"}, [("host:100", "snic0:100")],
                          {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic0:2"})
    ids = FlowIds.for_topology(topo)
    r1, r2 = rule(Output(3), in_port=1), rule(Output(4), in_port=2)
    tr = translate([r1, r2], topo, ids=ids)
    t3, t4 = ids.tags[("port", 3)], ids.tags[("port", 4)]
    assert t3 != t4
    assert delivery(tr, "snic0") == {t3: (Output(1),), t4: (Output(2),)}


def test_multi_egress_mixed_local_and_remote_keeps_action_order():
    ids = FlowIds.for_topology(TOPO)
    # UNO Fig. 6(b): rewrite, then one local and one remote output
    r = rule(SetField("ipv4_src", 0x01010101), Output(2), Output(4), in_port=1, eth_type=0x0800, ipv4_src=0x0A000001)
    tr = translate([r], TOPO, ids=ids)
    acts = list(copies(tr, r)["host"].apply_actions)
    assert acts == [SetField("ipv4_src", 0x01010101), Output(2), *tagged(ids.tags[("port", 4)], 101)]


def test_several_remote_switches_get_one_mark_each():
    ids = FlowIds.for_topology(TOPO)
    r = rule(Output(3), Output(4), in_port=1)
    tr = translate([r], TOPO, ids=ids)
    t3, t4 = ids.tags[("port", 3)], ids.tags[("port", 4)]
    assert list(copies(tr, r)["host"].apply_actions) == [*tagged(t3, 100), *tagged(t4, 101)]
    # a packet-in after them lists the packet's mark: its own is restored for it
    r = rule(Output(3), Output(OFPP_CONTROLLER), in_port=1)
    assert list(copies(translate([r], TOPO, ids=ids), r)["host"].apply_actions) == [*saved(t3, 100),
                                                                                     Output(OFPP_CONTROLLER)]


def test_k3_snic_to_snic_transits_the_host():
    ids = FlowIds.for_topology(TOPO)
    r = rule(Output(4), in_port=3)
    tr = translate([r], TOPO, ids=ids)
    t4 = ids.tags[("port", 4)]
    assert list(copies(tr, r)["snic0"].apply_actions) == tagged(t4, 100)
    assert delivery(tr, "host") == {t4: (Output(101),)}  # forward, mark kept
    assert delivery(tr, "snic1") == {t4: (Output(1),)}
    assert len(tr.per_switch["host"]) == 1  # the transit rule alone


def test_transit_and_delivery_rules_are_shared_between_virtual_rules():
    rules = [rule(Output(4), in_port=3, priority=p) for p in range(1, 21)]
    tr = translate(rules, TOPO)
    assert tr.stats.physical["snic0"] == 20  # 20 copies
    assert tr.stats.physical["host"] == 1  # one transit rule
    assert tr.stats.physical["snic1"] == 1  # one delivery rule


def test_multi_table_pipeline_stays_on_the_ingress_switch_with_metadata():
    r0 = rule(in_port=3, goto=2, meta=(0x5, 0xFF))
    r2 = rule(Output(4), table=2, metadata=(0x5, 0xFF))
    tr = translate([r0, r2], TOPO)
    c0, c2 = copies(tr, r0), copies(tr, r2)
    assert c0["snic0"].goto == 2 and c0["snic0"].instruction(WriteMetadata) == WriteMetadata(0x5, 0xFF)
    assert {s: p.table for s, p in c2.items()} == {"host": 2, "snic0": 2, "snic1": 2}
    assert c2["snic0"].match.get("metadata").value == 0x5


def test_tenant_vlan_push_set_match_survive_and_never_meet_the_tag():
    ids = FlowIds.for_topology(TOPO)
    r = rule(PushVlan(0x8100), SetField("vlan_vid", 0x1064), Output(3), in_port=1, vlan_vid=0)
    tr = translate([r], TOPO, ids=ids)
    acts = list(copies(tr, r)["host"].apply_actions)
    assert acts == [PushVlan(0x8100), SetField("vlan_vid", 0x1064), *tagged(ids.tags[("port", 3)], 100)]
    m = rule(Output(2), in_port=4, vlan_vid=0x1064)
    assert copies(translate([m], TOPO), m)["snic1"].match.get("vlan_vid").value == 0x1064


def test_a_rule_pushing_a_second_tag_crosses_pcie_unchanged():
    # the packet may already carry a tag: two after the push; the mark adds no third
    ids = FlowIds.for_topology(TOPO)
    push = (PushVlan(0x8100), SetField("vlan_vid", 0x1064))
    r = rule(*push, Output(3), Output(2), in_port=1)
    tr = translate([r], TOPO, ids=ids)
    assert list(copies(tr, r)["host"].apply_actions) == [*push, *tagged(ids.tags[("port", 3)], 100), Output(2)]
    assert delivery(tr, "snic0") == {ids.tags[("port", 3)]: (Output(1),)}
    assert set(ids.tags) == {("port", v) for v in (1, 2, 3, 4)} | {("switch", s) for s in ("host", "snic0", "snic1")}


def test_vlan_push_metadata_and_goto_are_translated():
    # refused by the VLAN-tag scheme ("may pass two VLAN tags on to table 1")
    r0 = rule(PushVlan(0x8100), SetField("vlan_vid", 0x1064), in_port=1, goto=1, meta=(0x3, 0xF))
    r1 = rule(PushVlan(0x88A8), Output(3), table=1, metadata=(0x3, 0xF))
    ids = FlowIds.for_topology(TOPO)
    tr = translate([r0, r1], TOPO, ids=ids)
    assert copies(tr, r0)["host"].goto == 1
    # (table 1: an action set written in table 0 could still see the mark, so it is restored)
    assert list(copies(tr, r1)["host"].apply_actions) == [PushVlan(0x88A8), *saved(ids.tags[("port", 3)], 100)]


def test_virtual_rules_use_the_mark_and_registers_as_on_one_switch():
    ids = FlowIds.for_topology(TOPO)
    r0 = rule(SetField("pkt_mark", 5), SetField("reg3", 9, 0xF), Output(3), Output(2), goto=1, in_port=1)
    r1 = rule(Output(4), table=1, pkt_mark=5, reg3=(9, 0xF))
    tr = translate([r0, r1], TOPO, ids=ids)
    # the virtual mark is set, saved around the PCIe output (table 1 matches it), then local output
    assert list(copies(tr, r0)["host"].apply_actions) == [SetField("pkt_mark", 5), SetField("reg3", 9, 0xF),
                                                          *saved(ids.tags[("port", 3)], 100), Output(2)]
    assert copies(tr, r1)["host"].match == r1.match  # copied as it is, on every switch
    assert list(copies(tr, r1)["snic0"].apply_actions) == saved(ids.tags[("port", 4)], 100)[:3] + [MARK_POP]
    # a group's bucket runs on a copy of the packet: nothing to restore there
    g = Group(1, "all", (Bucket((SetField("pkt_mark", 1), Output(4))),))
    tr = translate([rule(GroupAction(1), in_port=1)], TOPO, [g], ids=ids)
    bucket = next(x for x in tr.groups["host"] if x.group_id == 1).buckets[0]
    assert list(bucket.actions) == [SetField("pkt_mark", 1), *tagged(ids.tags[("port", 4)], 101)]


def test_a_move_from_in_port_reads_the_virtual_port():
    sub = Subfield("in_port", 0, 16)
    r = rule(MoveField(sub, Subfield("reg0", 8, 16)), Output(2), in_port=3)
    tr = translate([r], TOPO)
    assert list(copies(tr, r)["snic0"].apply_actions)[0] == SetField("reg0", 3 << 8, 0xFFFF << 8)
    # a wildcard-in_port rule: one copy per in_port, each knowing its port
    w = rule(MoveField(sub, Subfield("reg0", 0, 16)), Output(2), table=1)
    got = {(sw, c.match.get("in_port").value, c.apply_actions[0]) for sw, c in translate([w], TOPO).derived_rules(w)}
    assert got == {("host", 1, SetField("reg0", 1, 0xFFFF)), ("host", 2, SetField("reg0", 2, 0xFFFF)),
                   ("host", OFPP_LOCAL, SetField("reg0", 0xFFFE, 0xFFFF)),
                   ("host", OFPP_CONTROLLER, SetField("reg0", 0xFFFD, 0xFFFF)),
                   ("snic0", 1, SetField("reg0", 3, 0xFFFF)), ("snic1", 1, SetField("reg0", 4, 0xFFFF))}
    for bad in (rule(StackPush(sub), Output(2), in_port=3), rule(StackPush(sub), Output(2))):
        with pytest.raises(TranslationError, match="reads in_port") as e:
            translate([bad], TOPO)
        assert e.value.of_error == (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT
    with pytest.raises(TranslationError, match="reads in_port"):
        Compiler(TOPO, groups=[Group(1, "all", (Bucket((MoveField(sub, Subfield("reg0", 0, 16)), Output(2))),))])


def test_set_field_before_remote_output_is_applied_on_the_ingress_switch():
    ids = FlowIds.for_topology(TOPO)
    r = rule(SetField("eth_dst", 0x02000000000A), Output(4), SetField("eth_dst", 0x02000000000B), Output(2), in_port=1)
    acts = list(copies(translate([r], TOPO, ids=ids), r)["host"].apply_actions)
    assert acts == [SetField("eth_dst", 0x02000000000A), *tagged(ids.tags[("port", 4)], 101),
                    SetField("eth_dst", 0x02000000000B), Output(2)]


def test_in_port_output_and_same_switch_return_never_cross_pcie():
    r = rule(Output(OFPP_IN_PORT), Output(4), in_port=4)
    c = copies(translate([r], TOPO), r)
    # output:4 is the packet's own port: physical output:1 == in_port, dropped by OVS as on the virtual switch
    assert c["snic1"].apply_actions == (Output(OFPP_IN_PORT), Output(1))


def test_flood_expands_to_local_ports_and_one_mark_per_other_switch():
    ids = FlowIds.for_topology(TOPO)
    r = rule(Output(OFPP_FLOOD), eth_type=0x0806)
    tr = translate([r], TOPO, ids=ids)
    c = copies(tr, r)
    fs0, fs1 = ids.tags[("switch", "snic0")], ids.tags[("switch", "snic1")]
    # the host's LOCAL port is the virtual switch's: FLOOD reaches it, as on one bridge
    assert list(c["host"].apply_actions) == [Output(1), Output(2), Output(OFPP_LOCAL), *tagged(fs0, 100), *tagged(fs1, 101)]
    fh = ids.tags[("switch", "host")]
    assert delivery(tr, "host")[fh] == (Output(1), Output(2), Output(OFPP_LOCAL))


def test_controller_output_is_kept_on_the_ingress_switch():
    r = rule(Output(OFPP_CONTROLLER, 128), eth_type=0x0800)
    assert all(p.apply_actions == (Output(OFPP_CONTROLLER, 128),) for p in copies(translate([r], TOPO), r).values())


def written(tr, r, sw):
    (w,) = [i for i in copies(tr, r)[sw].instructions if isinstance(i, WriteActions)]
    return list(w.actions)


def test_written_outputs_stay_the_action_sets_output_so_a_written_group_still_wins():
    ids = FlowIds.for_topology(TOPO)
    r = rule(write=[SetField("eth_src", 0x020000000001), Output(4)], in_port=1)
    tr = translate([r], TOPO, ids=ids)
    # the action set runs set-fields (the mark among them) before its output
    assert written(tr, r, "host") == [SetField("eth_src", 0x020000000001), *tagged(ids.tags[("port", 4)], 101)]
    assert not tr.groups["host"]
    g = Group(1, "all", (Bucket((Output(2),)),))
    rules = [rule(write=[GroupAction(1)], goto=1), rule(table=1, write=[Output(3)]), rule(table=1, priority=5, write=[Output(77)])]
    tr = translate(rules, TOPO, [g], ids=ids)  # once refused: the output's internal group replaced the written group
    assert written(tr, rules[0], "host") == [GroupAction(1)]
    assert written(tr, rules[1], "host") == tagged(ids.tags[("port", 3)], 100)
    # an output that sends nothing still replaces an earlier written output: to a port no switch has
    assert written(tr, rules[2], "snic0") == [Output(0)]


def test_a_written_list_keeps_the_output_that_counts_and_sets_its_flow_id_last():
    ids = FlowIds.for_topology(TOPO)
    mark5, g = SetField("pkt_mark", 5), Group(1, "all", (Bucket((Output(2),)),))
    later_set = rule(write=[Output(3), mark5], in_port=1)  # OVS sets 5, then... the flow id must win
    two = rule(write=[Output(3), Output(2)], in_port=1, priority=9)  # the last output counts
    grouped = rule(write=[Output(3), GroupAction(1)], in_port=1, priority=8)  # the group wins over any output
    tr = translate([later_set, two, grouped], TOPO, [g], ids=ids)
    assert written(tr, later_set, "host") == [mark5, *tagged(ids.tags[("port", 3)], 100)]
    assert written(tr, two, "host") == [Output(2)]
    assert written(tr, grouped, "host") == [GroupAction(1)]


MOVE_MARK = MoveField(Subfield("pkt_mark", 0, 16), Subfield("eth_src", 0, 16))


@pytest.mark.parametrize("later, groups", [
    (rule(table=1, write=[SetField("pkt_mark", 5)]), []),  # would overwrite the flow id
    (rule(table=1, write=[MOVE_MARK, Output(2)]), []),  # would copy the flow id into the frame
    (rule(Output(2), table=1, write=[Output(OFPP_CONTROLLER)], pkt_mark=0), []),  # a packet-in would list it
    (rule(table=1, write=[GroupAction(1)]), [Group(1, "all", (Bucket((MOVE_MARK, Output(2))),))]),
])
def test_the_mark_a_written_output_leaves_is_refused_where_the_virtual_pipeline_would_see_it(later, groups):
    """(docs/oneswitch.md section 2; the OVS oracle: test_mark_scheme_oracle.py)"""
    first = rule(write=[Output(3)], in_port=1, goto=1)
    for order in ([first, later], [later, first]):  # whichever comes second is refused
        comp = Compiler(TOPO, groups=groups)
        comp.add(order[0])
        with pytest.raises(TranslationError, match="section 2"):
            comp.add(order[1])
        assert list(comp.vrules.values()) == [order[0]]
    # on one switch no flow id is ever set, nor by a written IN_PORT anywhere (a written
    # output to a port counts wherever the port is: a remap may move it to another switch)
    translate([first, later], Topology.build({"h": "host"}, [], {1: "h:1", 2: "h:2", 3: "h:3"}), groups)
    translate([rule(write=[Output(OFPP_IN_PORT)], in_port=1, goto=1), later], TOPO, groups)


def test_without_a_use_of_the_mark_packet_ins_leave_the_flow_id_out():
    """A written output:CONTROLLER after a written remote output sees the flow id in the
    physical mark; while no virtual rule or group uses the mark the virtual one is 0, so
    the packet-in leaves pkt_mark out (as Open vSwitch leaves a 0 out) and the rule set
    is accepted. A rule that uses the mark is then the one refused."""
    rules = [rule(write=[Output(3)], in_port=1, goto=1), rule(table=1, write=[Output(OFPP_CONTROLLER)])]
    comp = Compiler(TOPO)
    for r in rules:
        comp.add(r)
    assert not comp.marks.used
    assert packet_in_state([("reg0", 7), ("pkt_mark", 3), ("metadata", 0)], comp.marks.used) == [("reg0", 7)]
    with pytest.raises(TranslationError, match="section 2"):
        comp.add(rule(Output(2), table=2, pkt_mark=7))
    comp.add(rule(Output(2), table=2, reg0=7))
    assert not comp.marks.used and not translate(rules, TOPO).mark_used
    comp.remove(vkey(rules[1]))
    comp.add(rule(Output(2), table=2, pkt_mark=7))  # no written CONTROLLER left after the written output
    assert comp.marks.used and packet_in_state([("pkt_mark", 3)], True) == [("pkt_mark", 3)]


def test_written_flood_goes_to_the_next_switch_which_fans_it_out_and_returns_the_rest():
    ids = FlowIds.for_topology(TOPO)
    r = rule(write=[Output(OFPP_FLOOD)], eth_type=0x0806)
    tr = translate([r], TOPO, ids=ids)
    c = tr.derived_rules(r)
    # one copy per in_port: the fan-out must leave out the packet's own port
    ins = {(sw, p.match.get("in_port").value) for sw, p in c}
    assert ins == {("host", 1), ("host", 2), ("host", OFPP_LOCAL), ("host", OFPP_CONTROLLER), ("snic0", 1), ("snic1", 1)}
    (snic0_copy,) = [p for sw, p in c if sw == "snic0"]
    fl3, ex3 = ids.tags[("flood", 3)], ids.tags[("except", 3)]
    assert list(snic0_copy.instructions[0].actions) == tagged(fl3, 100)
    # the host (next toward it) outputs its ports and LOCAL, sends snic1 its flood id and snic0 "all but 3"
    # (back to snic0 on the link it came in by: IN_PORT)
    assert delivery(tr, "host")[fl3] == (Output(1), Output(2), Output(OFPP_LOCAL), SetField(TAG_FIELD, ex3),
                                         Output(OFPP_IN_PORT), *tagged(ids.tags[("switch", "snic1")], 101))
    assert delivery(tr, "snic0")[ex3] == ()  # snic0 has no other port
    (h1,) = [p for sw, p in c if sw == "host" and p.match.get("in_port").value == 1]
    fl1 = ids.tags[("flood", 1)]
    assert list(h1.instructions[0].actions) == tagged(fl1, 100)  # the host's FLOOD fans out from snic0
    assert delivery(tr, "snic0")[fl1] == (Output(1), SetField(TAG_FIELD, ids.tags[("except", 1)]), Output(OFPP_IN_PORT),
                                          SetField(TAG_FIELD, ids.tags[("switch", "snic1")]), Output(OFPP_IN_PORT))
    one = Topology.build({"h": "host"}, [], {1: "h:1", 2: "h:2"})
    (c1,) = copies(translate([r], one), r).values()  # a single switch: physical ALL is exactly FLOOD
    assert c1.instructions == (WriteActions((Output(OFPP_ALL),)),)


def test_table0_priority_65535_wildcard_copies_are_per_port_on_snics():
    r = rule(Output(2), priority=0xFFFF, eth_type=0x88CC)
    c = translate([r], TOPO).derived_rules(r)
    assert sorted((sw, p.match.get("in_port") and p.match.get("in_port").value) for sw, p in c) == [
        ("host", None), ("snic0", 1), ("snic1", 1)]  # so an extension wire never ties with a copy (extension.py)
    both = Rule(Match.of(in_port=3, eth_type=0x88CC), r.instructions, priority=0xFFFF)
    tr = translate([r, both], TOPO)  # two equal-priority overlapping rules whose copies coincide: one entry for both
    assert len(tr.derived_rules(r)) + len(tr.derived_rules(both)) == 3  # (test_overlap_share.py)


def test_virtual_groups_are_translated_per_switch_with_split_buckets():
    set_dst = SetField("eth_dst", 0x020000000005)
    g = Group(7, "indirect", (Bucket((set_dst, Output(OFPP_FLOOD))),))
    r = rule(GroupAction(7), in_port=4)
    ids = FlowIds.for_topology(TOPO)
    tr = translate([r], TOPO, [g], ids=ids)
    (pg,) = [x for x in tr.groups["snic1"] if x.group_id == 7]
    (split,) = pg.buckets[0].actions
    (inner,) = [x for x in tr.groups["snic1"] if x.group_id == split.group_id]
    assert inner.type == "all"  # one bucket per physical output of the FLOOD, each with the change
    assert [list(b.actions) for b in inner.buckets] == [[set_dst, Output(1)]] + [
        [set_dst, *tagged(ids.tags[("switch", sw)], 100)] for sw in ("host", "snic0")]


def test_a_bucket_runs_its_last_output_only_as_open_vswitch_does():
    """A bucket is an action set: of ``output:3,output:1`` Open vSwitch 3.1 runs output:1
    only (measured, tests/oneswitch/test_bucket_resubmit_oracle.py), and a group beats
    an output."""
    ids = FlowIds.for_topology(TOPO)
    g = Group(7, "all", (Bucket((SetField("eth_dst", 5), Output(3), Output(1))), Bucket((Output(1), GroupAction(8)))))
    tr = translate([rule(GroupAction(7), in_port=4)], TOPO, [g, Group(8, "all", (Bucket((Output(2),)),))], ids=ids)
    (pg,) = [x for x in tr.groups["snic1"] if x.group_id == 7]
    assert [b.actions for b in pg.buckets] == [(SetField("eth_dst", 5), *tagged(ids.tags[("port", 1)], 100)),
                                               (GroupAction(8),)]


def test_ports_that_are_no_virtual_port_are_kept_as_open_vswitch_keeps_them():
    ids = FlowIds.for_topology(TOPO)
    never = rule(Output(2), in_port=9)  # no port 9: the rule never matches
    drop9 = rule(SetField("eth_dst", 5), Output(9), Output(3), in_port=1)  # output:9 sends nothing
    tr = translate([never, drop9], TOPO, ids=ids)
    assert tr.derived_rules(never) == [] and never in tr.virtual.values()
    assert list(copies(tr, drop9)["host"].apply_actions) == [SetField("eth_dst", 5), *tagged(ids.tags[("port", 3)], 100)]
    local = rule(Output(OFPP_LOCAL), in_port=3)  # LOCAL is the host's LOCAL port
    tr = translate([local, rule(Output(4), in_port=OFPP_LOCAL)], TOPO, ids=ids)
    assert list(copies(tr, local)["snic0"].apply_actions) == tagged(ids.tags[("port", OFPP_LOCAL)], 100)
    assert delivery(tr, "host")[ids.tags[("port", OFPP_LOCAL)]] == (Output(OFPP_LOCAL),)
    assert {sw for sw, _ in tr.derived_rules(rule(Output(4), in_port=OFPP_LOCAL))} == {"host"}


@pytest.mark.parametrize("bad, reason, code", [
    (rule(Output(0xFF00), in_port=1), r"output:0xff00 is outside 0..0xfeff", (2, 4)),
    (rule(Output(1), in_port=0x10000), r"in_port=0x10000 is outside 0..0xfeff", (4, 7)),
    (rule(Output(OFPP_NORMAL)), r"NORMAL runs on the host switch only", (2, 4)),  # (not homed: docs/oneswitch.md §6)
    (rule(Output(1), table=254), r"table 254 > 253", (5, 2)),
    (rule(GroupAction(5)), r"group:5 refers to a group that does not exist", None),
])
def test_untranslatable_rules_are_rejected_naming_rule_and_reason(bad, reason, code):
    with pytest.raises(TranslationError, match=reason) as e:
        translate([bad], TOPO)
    assert "priority=100" in str(e.value)  # the rule's own text is in the message
    assert e.value.of_error == code


def test_every_table_open_vswitch_offers_is_the_same_physical_table():
    rules = [rule(Output(3), table=253, in_port=1), rule(table=252, goto=253), rule(table=253, priority=5, goto=254)]
    tr = translate(rules, TOPO)
    assert [(p.table, p.goto) for r in rules for _, p in tr.derived_rules(r)][:3] == [(253, None), (252, 253), (252, 253)]
    assert {p.goto for _, p in tr.derived_rules(rules[2])} == {254}  # Open vSwitch's own table: drops


def test_reserved_group_ids_are_rejected():
    with pytest.raises(TranslationError, match="reserved"):
        Compiler(TOPO, groups=[Group(INTERNAL_GROUP_BASE + 1, "all", ())])


def test_failed_add_changes_nothing_and_replacing_add_keeps_counts():
    comp = Compiler(TOPO)
    comp.add(rule(Output(3), in_port=1))
    before = {s: dict(comp.rules[s]) for s in comp.rules}
    comp.take_journal()
    with pytest.raises(TranslationError):
        comp.add(rule(Output(0x10000), in_port=2))
    assert comp.take_journal() == {} and {s: dict(comp.rules[s]) for s in comp.rules} == before
    comp.add(rule(Output(4), in_port=1))  # same table/priority/match: replaces
    assert len(comp.vrules) == 1 and len(comp.rules["host"]) == 1  # the copy
    assert comp.rules["snic0"] == {} and len(comp.rules["snic1"]) == 1  # delivery moved to snic1


def test_flow_ids_reuse_freed_tags_lowest_first():
    ids = FlowIds.for_topology(TOPO)
    old = ids.tags[("port", 3)]
    new = ids.retag(("port", 3))
    assert new != old and old in ids.tags.values()  # old stays reserved while retired
    ids.release_retired()
    assert ids.tag(("port", 99)) == old  # freed id is reused
    # after retags and releases, each new tag is still the lowest free one
    for i in range(40):
        used = set(ids.tags.values())
        lowest = min(set(range(1, 4095)) - used)
        assert ids.tag(("switch", f"s{i}")) == lowest
        if i % 7 == 0:
            ids.retag(("port", 99))
        if i % 11 == 0:
            ids.release_retired()


def test_ratio_and_counts_in_stats():
    rules = [rule(Output(2), in_port=1, priority=1), rule(Output(3), eth_type=0x0800, priority=2)]
    st = translate(rules, TOPO).stats
    assert st.virtual == 2 and st.total == sum(st.physical.values())
    assert st.ratio == pytest.approx(st.total / 2)
    assert st.total - st.shared == 1 + 3  # one copy + three copies of the wildcard rule


def test_batch_translation_leaves_the_collector_as_it_found_it() -> None:
    import gc

    r = rule(Output(3), in_port=1)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            translate([r], TOPO)
            assert gc.isenabled() == enabled and gc.get_freeze_count() == 0
        # a process that keeps objects frozen (before fork) keeps them frozen
        gc.enable()
        gc.freeze()
        frozen = gc.get_freeze_count()
        translate([r], TOPO)
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_table0_copies_take_pkt_mark_0_as_the_one_mark_a_virtual_packet_has_there():
    """The layout's one assumption: a packet from a virtual port has mark 0 in table 0.
    A table-0 rule whose own pkt_mark match excludes 0 never matches there and gets no
    copy (with or without in_port); one that admits 0 is copied with pkt_mark=0 (the
    oracle: test_mark_scheme_oracle.py)."""
    dead = rule(Output(2), pkt_mark=5)
    dead_port = rule(Output(2), in_port=3, pkt_mark=(4, 4))
    masked = rule(Output(2), priority=7, pkt_mark=(0, 0xFF00), eth_type=0x0800)
    later = rule(Output(2), table=1, pkt_mark=5)
    tr = translate([dead, dead_port, masked, later], TOPO)
    assert tr.derived_rules(dead) == [] and tr.derived_rules(dead_port) == []
    assert {p.match for _, p in tr.derived_rules(masked)} == {Match.of(pkt_mark=0, eth_type=0x0800)}
    assert {p.match for _, p in tr.derived_rules(later)} == {later.match}  # later tables: as written


def test_in_port_controller_runs_on_the_host():
    r = rule(Output(3), in_port=OFPP_CONTROLLER)  # a PACKET_OUT's frames sent to TABLE
    assert [(sw, p.match.get("in_port").value) for sw, p in translate([r], TOPO).derived_rules(r)] == [
        ("host", OFPP_CONTROLLER)]
