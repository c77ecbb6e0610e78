"""Translating Open vSwitch's resubmit and output_reg (docs/oneswitch.md section 7),
pure (no OVS): which forms are translated and to what, which are refused and why.
The OVS oracle: ``tandem bench of13_oracle -- --items resubmit,output_reg``.

Topology: virtual ports 1, 2 on the host (physical 1, 2), 3 on snic0 (physical 1),
4 on snic1 (physical 1); PCIe host:100-snic0:100, host:101-snic1:100."""

import pytest

from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import Compiler, TranslationError, translate
from tandem.rules.ir import (
    OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_TABLE, ApplyActions, Bucket, GotoTable, Group, GroupAction, Match,
    MoveField, Output, OutputReg, Resubmit, Rule, SetField, StackPop, StackPush, Subfield, WriteActions,
)

TOPO = Topology.build(
    {"host": "host", "snic0": "snic", "snic1": "snic"},
    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
    {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"},
)
SAVE, RESTORE = StackPush(Subfield("pkt_mark", 0, 32)), StackPop(Subfield("pkt_mark", 0, 32))


def rule(*actions, table=0, priority=100, write=None, goto=None, **match):
    ins = [ApplyActions(tuple(actions))] if actions else []
    if write is not None:
        ins.append(WriteActions(tuple(write)))
    if goto is not None:
        ins.append(GotoTable(goto))
    return Rule(Match.of(**match), tuple(ins), table=table, priority=priority)


def copies(r, groups=()):
    tr = translate([r], TOPO, list(groups))
    return {sw: [p for p in rules if p.table == r.table and p.priority == r.priority]
            for sw, rules in tr.per_switch.items()}


def test_resubmit_into_a_later_table_keeps_its_form_on_every_switch():
    got = copies(rule(Resubmit(OFPP_IN_PORT, 2), Output(1), table=1))
    assert set(got) == {"host", "snic0", "snic1"}
    assert got["host"][0].apply_actions == (Resubmit(OFPP_IN_PORT, 2), Output(1))
    # a remote output before a resubmit saves and restores the packet's mark: the rules it finds may read it
    tagged = got["snic0"][0].apply_actions
    assert tagged[0] == Resubmit(OFPP_IN_PORT, 2) and tagged[1] == SAVE and tagged[-1] == RESTORE


def test_a_table_0_rule_that_resubmits_never_leaves_the_flow_id_in_the_mark():
    # without the resubmit the remote output would be the bare form (nothing after it sees the mark)
    (bare,) = copies(rule(Output(3), in_port=1))["host"]
    assert SAVE not in bare.apply_actions
    (saved,) = copies(rule(Resubmit(OFPP_IN_PORT, 1), Output(3), in_port=1))["host"]
    assert saved.apply_actions[1] == SAVE and saved.apply_actions[-1] == RESTORE


def test_resubmit_with_the_in_port_the_rule_matches_keeps_that_ports_number():
    # (another rule's resubmit(3,1) may find it with the packet's own in_port, which Open
    # vSwitch restores after the lookup: test_cross_port_homing.py measures it)
    (only,) = copies(rule(Resubmit(3, 2), Resubmit(3), table=1, in_port=3))["snic0"]
    assert only.apply_actions == (Resubmit(1, 2), Resubmit(1, 1))  # (3 is snic0:1)


@pytest.mark.parametrize("r, port", [
    (rule(Resubmit(OFPP_IN_PORT, 0), table=1), OFPP_IN_PORT),
    (rule(Resubmit(1), in_port=1), 1),  # resubmit:1 in a table-0 rule that matches in_port=1 (host:1)
    (rule(Output(OFPP_TABLE), table=2), OFPP_IN_PORT),  # output:TABLE from a rule: Open vSwitch looks table 0 up
])
def test_a_lookup_in_table_0_from_a_rule_runs_with_the_mark_at_0(r, port):
    """Physical table 0 tells copies from delivery rules by a mark of 0, and a PCIe output may
    have left a flow id there; the virtual mark is 0 while no virtual rule uses it."""
    got = [c for cs in copies(r).values() for c in cs]
    assert got and all(c.apply_actions == (SetField("pkt_mark", 0), Resubmit(port, 0)) for c in got)


def test_a_lookup_in_table_0_and_a_use_of_the_mark_refuse_each_other():
    for first, second in ((rule(Resubmit(OFPP_IN_PORT, 0), table=1), rule(Output(2), pkt_mark=5, priority=3)),
                          (rule(SetField("pkt_mark", 5), Output(2), table=2), rule(Output(OFPP_TABLE), table=1))):
        comp = Compiler(TOPO)
        comp.add(first)
        with pytest.raises(TranslationError, match="table 0 up again"):
            comp.add(second)
    single = Topology.build({"h": "host"}, [], {1: "h:1", 2: "h:2"})  # one switch too: its copies match mark 0
    with pytest.raises(TranslationError, match="table 0 up again"):
        translate([rule(Output(OFPP_TABLE), table=1), rule(SetField("pkt_mark", 5), Output(2), table=2)], single)


@pytest.mark.parametrize("r, why", [
    (rule(Resubmit(OFPP_IN_PORT, 254)), "254"),
    (rule(Resubmit(2, 3), table=1), "port of host, not of snic0"),  # its copies run on every switch
    (rule(Resubmit(3, 3), table=1, in_port=1), "port of snic0, not of host"),
    (rule(Resubmit(OFPP_LOCAL, 3), table=1), "port of host, not of snic0"),
    (rule(Resubmit(77, 3), table=1, in_port=1), "no port has that number"),
])
def test_resubmit_forms_that_are_refused(r, why):
    with pytest.raises(TranslationError, match=why) as e:
        translate([r], TOPO)
    assert e.value.of_error == (2, 5)


def test_a_written_resubmit_into_a_later_table_is_kept_in_the_action_set():
    (c,) = copies(rule(write=[SetField("eth_src", 5), Resubmit(OFPP_IN_PORT, 3)], table=1, in_port=1))["host"]
    assert c.instructions[0] == WriteActions((SetField("eth_src", 5), Resubmit(OFPP_IN_PORT, 3)))


def test_resubmit_in_a_group_bucket_with_another_in_port_is_refused():
    g = Group(1, "all", (Bucket((Resubmit(2, 0),)),))  # (the accepted ones: test_bucket_resubmit.py, test_table0_lookup_translate.py)
    with pytest.raises(TranslationError, match="group bucket"):
        translate([rule(GroupAction(1), in_port=1)], TOPO, [g])


def test_with_a_resubmit_a_flow_id_writer_and_a_mark_observer_conflict_whatever_their_tables():
    """Written outputs and the mark (docs/oneswitch.md section 2): without resubmits an
    observer in an earlier table than the flow-id writer is safe; a resubmit may run it after."""
    writer = rule(write=[Output(3)], table=2, in_port=1)
    observer = rule(Output(2), table=1, write=[SetField("pkt_mark", 5)], pkt_mark=0)
    comp = Compiler(TOPO)
    comp.add(writer)
    comp.add(observer)
    with pytest.raises(TranslationError, match="resubmit"):
        comp.add(rule(Resubmit(OFPP_IN_PORT, 1), table=3))


@pytest.mark.parametrize("actions, match, out", [
    ((SetField("reg0", 3, 0xFFFF), OutputReg(Subfield("reg0", 0, 16))), {}, Output(3)),  # loaded: port 3 is on snic0
    ((OutputReg(Subfield("reg5", 8, 16)),), {"reg5": 0x200}, Output(2)),  # the match fixes it
    ((SetField("reg1", 0xFFFD0000, 0xFFFF0000), OutputReg(Subfield("reg1", 16, 16), 128)), {},
     Output(OFPP_CONTROLLER, 128)),  # OpenFlow 1.0 reserved numbers are the reserved ports
    ((SetField("reg1", 0xFFFB), OutputReg(Subfield("reg1", 0, 32))), {}, Output(OFPP_FLOOD)),
    ((OutputReg(Subfield("in_port", 0, 16)),), {"in_port": 4}, Output(4)),  # the virtual in_port, not the physical
])
def test_output_reg_whose_port_the_rule_fixes_is_that_output(actions, match, out):
    r = Rule(Match.of(**match), (ApplyActions(actions),), priority=7)
    want = translate([Rule(Match.of(**match), (ApplyActions(actions[:-1] + (out,)),), priority=7)], TOPO)
    assert translate([r], TOPO).per_switch == want.per_switch


def test_output_reg_of_a_number_above_0xffff_sends_nothing():
    r = rule(SetField("reg2", 0x10005), OutputReg(Subfield("reg2", 0, 32)), Output(2), in_port=1)
    assert copies(r)["host"][0].apply_actions == (SetField("reg2", 0x10005), Output(2))


@pytest.mark.parametrize("actions, match", [
    ((SetField("reg0", 3, 0xFF), OutputReg(Subfield("reg0", 0, 16))), {}),  # half loaded
    ((SetField("reg0", 3, 0xFFFF), Resubmit(OFPP_IN_PORT, 2), OutputReg(Subfield("reg0", 0, 16))), {}),
    ((MoveField(Subfield("reg1", 0, 16), Subfield("reg0", 0, 16)), OutputReg(Subfield("reg0", 0, 16))), {"reg0": 3}),
])
def test_output_reg_whose_port_is_only_known_at_run_time_is_refused(actions, match):
    with pytest.raises(TranslationError, match="output_reg") as e:
        translate([Rule(Match.of(**match), (ApplyActions(actions),), table=1)], TOPO)
    assert e.value.of_error == (2, 5)


def test_resubmit_with_another_port_of_the_same_switch_names_its_physical_port():
    # ports 1 and 2 are the host's: a rule naming 1 runs there only
    (c,) = copies(rule(Resubmit(2, 3), Resubmit(OFPP_LOCAL), table=1, in_port=1))["host"]
    assert c.apply_actions == (Resubmit(2, 3), Resubmit(OFPP_LOCAL, 1))  # (its own table, named)
    topo = Topology.build({"h": "host", "s": "snic"}, [("h:9", "s:9")], {5: "h:1", 6: "h:2", 7: "s:1"})
    (c,) = translate([rule(Resubmit(6, 2), write=[Resubmit(6, 3)], table=1, in_port=5)], topo).per_switch["h"]
    assert c.instructions == (ApplyActions((Resubmit(2, 2),)), WriteActions((Resubmit(2, 3),)))


@pytest.mark.parametrize("specialised", [
    rule(MoveField(Subfield("in_port", 0, 16), Subfield("reg0", 0, 16)), Output(2), table=2, in_port=1),
    rule(write=[Output(OFPP_FLOOD)], table=2),
])
def test_another_in_port_and_copies_specialised_to_theirs_refuse_each_other(specialised):
    """A rule found by a lookup with another in_port runs with the packet's own: a copy
    that made a move of in_port a load of the port it matches, or that leaves that port
    out of a written FLOOD, would be wrong there."""
    changer = rule(Resubmit(2, 2), table=1, in_port=1)
    for first, second in ((changer, specialised), (specialised, changer)):
        comp = Compiler(TOPO)
        comp.add(first)
        with pytest.raises(TranslationError, match="another in_port"):
            comp.add(second)
