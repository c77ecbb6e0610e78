"""Pure translator tests, one per case of UNO §3.3.1 and beyond (no OVS needed).

Topology for all cases: virtual ports 1, 2 on the host (physical 1, 2), 3 on
snic0 (physical 1), 4 on snic1 (physical 1); PCIe pairs host:100-snic0:100 and
host:101-snic1:100. The OVS oracle (test_oneswitch_oracle.py) checks behaviour;
these tests pin down the shape of each case.
"""

import pytest

from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import (
    DELIVERY_TABLE, INTERNAL_GROUP_BASE, TAG_FIELD, Compiler, FlowIds, TranslationError, translate,
)
from tandem.rules.ir import (
    OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, ApplyActions, Bucket, GotoTable, Group,
    GroupAction, Match, MoveField, Output, PushVlan, Rule, SetField, StackPop, StackPush, Subfield, WriteActions,
    WriteMetadata,
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
    return {r.match.get(TAG_FIELD).value: r.apply_actions for r in tr.per_switch[sw] if r.table == DELIVERY_TABLE}


def test_no_ports_rule_goes_to_every_switch_with_virtual_ports():
    r = rule(SetField("eth_dst", 0x020000000009), eth_type=0x0800)
    tr = translate([r], TOPO)
    c = copies(tr, r)
    assert set(c) == {"host", "snic0", "snic1"}
    for p in c.values():
        assert p.match == r.match and p.table == 1 and p.apply_actions == r.apply_actions
    assert all(not delivery(tr, s) for s in c)  # nothing crosses PCIe


def test_ingress_only_rule_lives_on_the_ingress_switch_with_physical_in_port():
    r = rule(in_port=3, eth_type=0x0800)  # drop
    tr = translate([r], TOPO)
    assert copies(tr, r) == {"snic0": Rule(Match.of(in_port=1, eth_type=0x0800), (), table=1, priority=100)}
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
    disp = [x for x in tr.per_switch["snic0"] if x.table == 0]
    assert Rule(Match.of(in_port=100), (GotoTable(DELIVERY_TABLE),), 0, 1, cookie=disp[0].cookie) in disp


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
    host_disp = {x.match.get("in_port").value for x in tr.per_switch["host"] if x.table == 0 and x.priority == 1}
    assert host_disp == {100}


def test_transit_and_delivery_rules_are_shared_between_virtual_rules():
    rules = [rule(Output(4), in_port=3, priority=p) for p in range(1, 21)]
    tr = translate(rules, TOPO)
    assert tr.stats.physical["snic0"] == 20 + 1 + 0  # 20 copies + catch-all dispatch
    assert tr.stats.physical["host"] == 2  # one dispatch, one transit rule
    assert tr.stats.physical["snic1"] == 2  # one dispatch, one delivery rule


def test_multi_table_pipeline_stays_on_the_ingress_switch_with_metadata():
    r0 = rule(in_port=3, goto=2, meta=(0x5, 0xFF))
    r2 = rule(Output(4), table=2, metadata=(0x5, 0xFF))
    tr = translate([r0, r2], TOPO)
    c0, c2 = copies(tr, r0), copies(tr, r2)
    assert c0["snic0"].goto == 3 and c0["snic0"].instruction(WriteMetadata) == WriteMetadata(0x5, 0xFF)
    assert {s: p.table for s, p in c2.items()} == {"host": 3, "snic0": 3, "snic1": 3}
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
    assert copies(tr, r0)["host"].goto == 2
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
    for bad in (rule(MoveField(sub, Subfield("reg0", 0, 16)), Output(2)),  # in_port not pinned
                rule(StackPush(sub), Output(2), in_port=3)):
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
    assert list(c["host"].apply_actions) == [Output(1), Output(2), *tagged(fs0, 100), *tagged(fs1, 101)]
    fh = ids.tags[("switch", "host")]
    assert delivery(tr, "host")[fh] == (Output(1), Output(2))


def test_controller_output_is_kept_on_the_ingress_switch():
    r = rule(Output(OFPP_CONTROLLER, 128), eth_type=0x0800)
    assert all(p.apply_actions == (Output(OFPP_CONTROLLER, 128),) for p in copies(translate([r], TOPO), r).values())


def test_written_outputs_become_internal_groups():
    ids = FlowIds.for_topology(TOPO)
    r = rule(write=[SetField("eth_src", 0x020000000001), Output(4)], in_port=1)
    tr = translate([r], TOPO, ids=ids)
    (w,) = [i for i in copies(tr, r)["host"].instructions if isinstance(i, WriteActions)]
    gid = w.actions[1].group_id
    assert gid >= INTERNAL_GROUP_BASE
    (g,) = [g for g in tr.groups["host"] if g.group_id == gid]
    t4 = ids.tags[("port", 4)]
    assert g.type == "indirect" and list(g.buckets[0].actions) == tagged(t4, 101)


def test_virtual_groups_are_translated_per_switch_with_split_buckets():
    g = Group(7, "indirect", (Bucket((SetField("eth_dst", 0x020000000005), Output(3), Output(1))),))
    r = rule(GroupAction(7), in_port=4)
    ids = FlowIds.for_topology(TOPO)
    tr = translate([r], TOPO, [g], ids=ids)
    (pg,) = [x for x in tr.groups["snic1"] if x.group_id == 7]
    (split,) = pg.buckets[0].actions
    (inner,) = [x for x in tr.groups["snic1"] if x.group_id == split.group_id]
    assert inner.type == "all" and len(inner.buckets) == 2  # one bucket per output
    set_dst = SetField("eth_dst", 0x020000000005)
    assert [list(b.actions) for b in inner.buckets] == [[set_dst, *tagged(ids.tags[("port", v)], 100)] for v in (3, 1)]


@pytest.mark.parametrize("bad, reason", [
    (rule(Output(9), in_port=1), r"output:9 is not a virtual port \(known: 1, 2, 3, 4\)"),
    (rule(Output(1), in_port=9), r"in_port=9 is not a virtual port"),
    (rule(Output(OFPP_LOCAL)), r"reserved port LOCAL"),
    (rule(Output(1), table=252), r"table 252 > 251"),
    (rule(GroupAction(5)), r"group:5 refers to a group that does not exist"),
])
def test_untranslatable_rules_are_rejected_naming_rule_and_reason(bad, reason):
    with pytest.raises(TranslationError, match=reason) as e:
        translate([bad], TOPO)
    assert "priority=100" in str(e.value)  # the rule's own text is in the message


def test_reserved_group_ids_and_group_then_output_pipeline_are_rejected():
    with pytest.raises(TranslationError, match="reserved"):
        Compiler(TOPO, groups=[Group(INTERNAL_GROUP_BASE + 1, "all", ())])
    g = Group(1, "all", (Bucket((Output(2),)),))
    comp = Compiler(TOPO, groups=[g])
    comp.add(rule(write=[GroupAction(1)], goto=1))
    with pytest.raises(TranslationError, match="run the group and ignore the output"):
        comp.add(rule(table=1, write=[Output(3)]))


def test_failed_add_changes_nothing_and_replacing_add_keeps_counts():
    comp = Compiler(TOPO)
    comp.add(rule(Output(3), in_port=1))
    before = {s: dict(comp.rules[s]) for s in comp.rules}
    comp.take_journal()
    with pytest.raises(TranslationError):
        comp.add(rule(Output(99), in_port=2))
    assert comp.take_journal() == {} and {s: dict(comp.rules[s]) for s in comp.rules} == before
    comp.add(rule(Output(4), in_port=1))  # same table/priority/match: replaces
    assert len(comp.vrules) == 1 and len(comp.rules["host"]) == 2  # the copy + the catch-all dispatch
    assert comp.rules["snic0"] == {} and len(comp.rules["snic1"]) == 2  # delivery moved to snic1 (+ link dispatch)


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
