"""OneSwitchState: OpenFlow 1.3 flow-mod semantics on the virtual tables, the
order of update plans, remap bookkeeping and packet-in mapping (pure)."""

import pytest

from tandem.oneswitch.plan import PhysicalOp
from tandem.oneswitch.state import FlowModError, OneSwitchState
from tandem.rules.matching import covers, overlaps
from tandem.oneswitch.topology import PortRef, Topology
from tandem.oneswitch.translate import TranslationError, is_delivery_key, pkey
from tandem.rules.ir import OFPP_LOCAL, ApplyActions, Bucket, FlowMod, GotoTable, Group, GroupAction, Match, Output, Rule

TOPO = Topology.build(
    {"host": "host", "snic0": "snic", "snic1": "snic"},
    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
    {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"},
)


def R(out=None, table=0, priority=100, cookie=0, goto=None, **match):
    ins = []
    if out is not None:
        ins.append(ApplyActions(tuple(Output(p) for p in (out if isinstance(out, tuple) else (out,)))))
    if goto is not None:
        ins.append(GotoTable(goto))
    return Rule(Match.of(**match), tuple(ins), table=table, priority=priority, cookie=cookie)


def loaded(*rules):
    st = OneSwitchState(TOPO)
    for r in rules:
        st.apply(FlowMod("add", r))
    return st


def test_covers_and_overlaps_follow_masks():
    assert covers(Match.of(eth_type=0x800), Match.of(eth_type=0x800, ipv4_dst=(0x0A000000, 0xFF000000)))
    assert not covers(Match.of(eth_type=0x800, ipv4_dst=(0x0A000000, 0xFF000000)), Match.of(eth_type=0x800))
    assert covers(Match.of(eth_type=0x800, ipv4_dst=(0x0A000000, 0xFF000000)),
                  Match.of(eth_type=0x800, ipv4_dst=0x0A010203))
    assert overlaps(Match.of(in_port=1), Match.of(eth_type=0x800))
    assert not overlaps(Match.of(in_port=1), Match.of(in_port=2))


def test_add_replaces_identical_match_and_priority_with_an_add_op():
    st = loaded(R(3, in_port=1))
    plan = st.apply(FlowMod("add", R(4, in_port=1, cookie=9)))
    assert [r.cookie for r in st.virtual_rules()] == [9]
    copy_ops = [op for op in plan.ops() if op.rule is not None and not is_delivery_key(pkey(op.rule))]
    assert [op.op for op in copy_ops] == ["add"]  # OpenFlow add: replace (and reset counters)


def test_modify_non_strict_changes_more_specific_rules_only_and_keeps_cookie():
    st = loaded(R(3, in_port=1, eth_type=0x800, priority=5, cookie=1), R(3, in_port=1, priority=6, cookie=2),
                R(3, in_port=2, eth_type=0x800, priority=7, cookie=3))
    plan = st.apply(FlowMod("modify", R(2, eth_type=0x800)))
    outs = {r.priority: (r.outputs(), r.cookie) for r in st.virtual_rules()}
    assert outs == {5: ([2], 1), 6: ([3], 2), 7: ([2], 3)}
    assert {op.op for op in plan.ops() if op.rule is not None and not is_delivery_key(pkey(op.rule))} == {"modify_strict"}


def test_modify_strict_and_cookie_mask_select_exactly():
    st = loaded(R(3, in_port=1, priority=5, cookie=0x10), R(3, in_port=1, eth_type=0x800, priority=5, cookie=0x20))
    st.apply(FlowMod("modify_strict", R(4, in_port=1, priority=5)))
    assert {r.cookie: r.outputs() for r in st.virtual_rules()} == {0x10: [4], 0x20: [3]}
    st.apply(FlowMod("modify", R(2, cookie=0x20), cookie_mask=0xF0))
    assert {r.cookie: r.outputs() for r in st.virtual_rules()} == {0x10: [4], 0x20: [2]}


def test_delete_with_out_port_strict_and_all_tables():
    st = loaded(R(3, in_port=1, priority=1), R(4, in_port=1, eth_type=0x800, priority=2),
                R(4, table=1, priority=3), R(2, in_port=2, priority=4, goto=1))
    st.apply(FlowMod("delete", R(), out_port=4))
    assert sorted(r.priority for r in st.virtual_rules()) == [1, 3, 4]  # only table 0's output:4 rule went
    st.apply(FlowMod("delete_strict", R(in_port=1, priority=9)))  # wrong priority: nothing
    assert len(st.virtual_rules()) == 3
    st.apply(FlowMod("delete", R(), all_tables=True, out_port=4))
    assert sorted(r.priority for r in st.virtual_rules()) == [1, 4]
    plan = st.apply(FlowMod("delete", R(), all_tables=True))
    assert st.virtual_rules() == [] and all(st.physical_rules(s) == [] for s in TOPO.switch_names)
    assert plan.counts()["delete_strict"] > 2


def test_check_overlap_and_failed_mods_leave_state_unchanged():
    st = loaded(R(3, in_port=1, priority=5))
    with pytest.raises(FlowModError, match="OFPFMFC_OVERLAP"):
        st.apply(FlowMod("add", R(4, eth_type=0x800, priority=5), check_overlap=True))
    before = [repr(st.physical_rules(s)) for s in TOPO.switch_names]
    with pytest.raises(TranslationError, match="output:0x10000"):
        st.apply(FlowMod("modify", R(0x10000)))
    assert [repr(st.physical_rules(s)) for s in TOPO.switch_names] == before
    assert st.virtual_rules()[0].outputs() == [3]


def test_plan_order_shared_first_adds_top_down_deletes_bottom_up_shared_last():
    st = OneSwitchState(TOPO)
    plan = st.apply(FlowMod("add", R(3, in_port=1)))
    kinds = [[(op.op, is_delivery_key(pkey(op.rule))) for op in step] for step in plan.steps]
    assert kinds == [[("add", True)], [("add", False)]]  # the delivery rule first, then the copy that sends into it
    st.apply(FlowMod("add", R(3, in_port=2, priority=50)))
    st.apply(FlowMod("add", R(3, in_port=2, eth_type=0x800, priority=60)))
    plan = st.apply(FlowMod("delete", R()))
    prios = [[op.rule.priority for op in step] for step in plan.steps]
    assert prios[:3] == [[50], [60], [100]]  # ascending priority: a packet never falls to a stale lower rule
    assert all(is_delivery_key(pkey(op.rule)) for op in plan.steps[-1])


def test_plan_ops_are_well_formed():
    with pytest.raises(ValueError):
        PhysicalOp("host", "frobnicate", rule=R())
    with pytest.raises(ValueError):
        PhysicalOp("host", "add")


def test_remap_moves_copies_retags_and_reuses_freed_tags():
    st = loaded(R(3, in_port=1), R(1, in_port=3, priority=7))
    old_tag = st.ids.tags[("port", 3)]
    plan = st.remap(3, PortRef("snic1", 2))
    assert st.topo.port_map[3] == PortRef("snic1", 2)
    assert st.ids.tags[("port", 3)] != old_tag and old_tag not in st.ids.tags.values()  # freed after the plan
    moved = [op for op in plan.ops() if op.rule is not None and op.rule.priority == 7]
    assert {(op.switch, op.op) for op in moved} == {("snic1", "add"), ("snic0", "delete_strict")}
    assert plan.new_ingress_ready <= plan.old_ingress_until
    assert st.ingress_rules(R(1, in_port=3, priority=7))[0][0] == "snic1"
    st.apply(FlowMod("add", R(2, in_port=4, priority=3)))  # another destination can now reuse the freed tag
    st.remap(2, PortRef("snic0", 5))
    assert old_tag in st.ids.tags.values()


def test_remap_to_the_same_switch_pauses_the_port_for_one_step():
    st = loaded(R(3, in_port=1), R(1, eth_type=0x800, priority=7))
    plan = st.remap(1, PortRef("host", 9))
    assert plan.old_ingress_until < plan.new_ingress_ready


def test_packet_in_maps_back_to_the_virtual_port_and_tables():
    st = loaded(R(3, in_port=1))
    assert st.to_virtual_packet_in("snic1", 1, b"abc") == (4, b"abc")
    with pytest.raises(ValueError, match="snic0:100"):
        st.to_virtual_packet_in("snic0", 100, b"abc")
    assert [st.virtual_table(t) for t in (0, 1, 253, 254)] == [0, 1, 253, None]  # virtual table t is physical t
    assert st.to_virtual_packet_in("host", OFPP_LOCAL, b"x") == (OFPP_LOCAL, b"x")  # the host's LOCAL is the switch's
    ((sw, phys),) = st.ingress_rules(R(3, in_port=1))
    assert sw == "host" and st.virtual_rule_of(sw, phys) == R(3, in_port=1)


def test_set_groups_keeps_flow_ids_and_orders_group_changes():
    st = OneSwitchState(TOPO, [Group(1, "all", (Bucket((Output(3),)),))])
    st.apply(FlowMod("add", Rule(Match.of(in_port=1), (ApplyActions((GroupAction(1),)),))))
    st.remap(4, PortRef("snic1", 2))  # flow ids are no longer the fresh-topology ones
    tags = dict(st.ids.tags)
    plan = st.set_groups([Group(1, "all", (Bucket((Output(4),)),))])
    assert all(st.ids.tags[d] == t for d, t in tags.items())
    ops = [op.op for op in plan.ops()]
    assert "modify_group" in ops and ops.index("modify_group") > max(i for i, o in enumerate(ops) if o == "add")
    with pytest.raises(TranslationError, match="group:1 refers to a group that does not exist"):
        st.set_groups([])
    assert [g.group_id for g in st.physical_groups("host")] == [1]
