"""Lookups in table 0 written into the action set and in group buckets, as OneSwitch
translates them (``oneswitch/table0_lookup.py``, docs/oneswitch.md section 7), pure
(no OVS). The OVS oracle: ``tandem bench of13_oracle -- --items
write_output_table,write_resubmit0,bucket_output_table,bucket_resubmit0``.

Topology: virtual ports 1, 2 on the host (physical 1, 2), 3 on snic0 (physical 1),
4 on snic1 (physical 1); PCIe host:100-snic0:100, host:101-snic1:100."""

import pytest

from test_resubmit_output_reg_translate import TOPO, rule
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import Compiler, TranslationError, translate
from tandem.rules.ir import OFPP_IN_PORT, OFPP_TABLE, Bucket, Group, GroupAction, Output, Resubmit, SetField, WriteActions
from tandem.rules.ir import Ct

ZERO = SetField("pkt_mark", 0)


def written(r, sw="host", groups=()):
    (c,) = [p for p in translate([r], TOPO, list(groups)).per_switch[sw] if p.table == r.table and p.priority == r.priority]
    (w,) = [i for i in c.instructions if type(i) is WriteActions]
    return w.actions


def test_written_output_table_stays_the_sets_output_with_the_mark_reset_after_the_lists_set_fields():
    acts = written(rule(write=[SetField("eth_src", 5), Output(3), Output(OFPP_TABLE)], table=1, in_port=1))
    # (the earlier output:3 is replaced, as in the action set; the reset follows eth_src)
    assert acts == (SetField("eth_src", 5), ZERO, Output(OFPP_TABLE))


def test_a_later_written_output_replaces_output_table_with_its_own_flow_id_last():
    acts = written(rule(write=[Output(OFPP_TABLE), SetField("eth_dst", 9), Output(3)], table=1, in_port=1))
    assert acts[0] == SetField("eth_dst", 9) and acts[-1] == Output(100)  # the PCIe port toward snic0
    assert acts[-2].field == "pkt_mark" and acts[-2].value != 0 and ZERO not in acts


def test_written_resubmit_into_table_0_resets_the_mark_before_the_kept_outputs_flow_id():
    acts = written(rule(write=[Resubmit(OFPP_IN_PORT, 0), Output(3)], table=1, in_port=1))
    assert acts[:2] == (ZERO, Resubmit(OFPP_IN_PORT, 0)) and acts[-1] == Output(100)
    assert acts[-2].field == "pkt_mark" and acts[-2].value != 0


@pytest.mark.parametrize("look, phys", [
    (Resubmit(2), Resubmit(2, 0)),  # resubmit:2 written: table 0 (the action set runs as table 0), port 2's number
    (Resubmit(1), Resubmit(1, 0)),  # the port the rule matches: kept (a rule may find this one with another in_port)
])
def test_written_resubmit_port_looks_table_0_up_with_that_ports_physical_number(look, phys):
    assert written(rule(write=[look], table=1, in_port=1)) == (ZERO, phys)


def test_written_resubmit_into_table_0_after_a_written_flow_id_is_refused():
    """Its reset runs even when an output wins: after an earlier table's flow id it would
    send that output on with mark 0. Before it, the output's id comes later."""
    early, late = rule(write=[Output(3)], table=1, in_port=1, goto=2), rule(write=[Resubmit(OFPP_IN_PORT, 0)], table=2)
    comp = Compiler(TOPO)
    comp.add(early)
    with pytest.raises(TranslationError, match="would clear"):
        comp.add(late)
    comp = Compiler(TOPO)
    comp.add(rule(write=[Resubmit(OFPP_IN_PORT, 0)], table=1, goto=2))
    comp.add(rule(write=[Output(3)], table=2, in_port=1))  # (the flow id follows the reset)
    with pytest.raises(TranslationError, match="any other"):  # a resubmit lets the tables run in any order
        comp.add(rule(Resubmit(OFPP_IN_PORT, 3), table=2, priority=7))
    single = Topology.build({"h": "host"}, [], {1: "h:1", 2: "h:2"})  # no flow ids on one switch
    translate([early, late], single)


def test_written_output_table_after_a_written_flow_id_is_fine():
    comp = Compiler(TOPO)
    comp.add(rule(write=[Output(3)], table=1, in_port=1, goto=2))
    comp.add(rule(write=[Output(OFPP_TABLE)], table=2))


@pytest.mark.parametrize("look", [Output(OFPP_TABLE), Resubmit(OFPP_IN_PORT, 0)])
def test_a_buckets_lookup_in_table_0_resets_the_mark_after_its_set_fields(look):
    g = Group(1, "all", (Bucket((look, SetField("eth_src", 7))), Bucket((look, Output(3)))))
    tr = translate([rule(GroupAction(1), in_port=1)], TOPO, [g])
    (pg,) = [x for x in tr.groups["host"] if x.group_id == 1]
    # (the second bucket's lookup is dropped for its output, as in an action set)
    assert pg.buckets[0].actions == (SetField("eth_src", 7), ZERO, look)
    assert pg.buckets[1].actions[-1] == Output(100) and ZERO not in pg.buckets[1].actions


@pytest.mark.parametrize("lookup", [
    rule(write=[Output(OFPP_TABLE)], table=1),
    rule(write=[Resubmit(OFPP_IN_PORT, 0)], table=1),
    rule(write=[Ct(table=0)], table=1, eth_type=0x0800),  # (ctbucket: test_ct_written_table0.py)
])
def test_a_written_lookup_in_table_0_and_a_use_of_the_mark_refuse_each_other(lookup):
    user = rule(Output(2), pkt_mark=5, priority=3, table=2)
    for first, second in ((lookup, user), (user, lookup)):
        comp = Compiler(TOPO)
        comp.add(first)
        with pytest.raises(TranslationError, match="table 0 up again"):
            comp.add(second)


def test_a_group_whose_bucket_looks_table_0_up_refuses_rules_that_use_the_mark():
    g = Group(1, "indirect", (Bucket((Output(OFPP_TABLE),)),))
    comp = Compiler(TOPO, groups=[g])
    with pytest.raises(TranslationError, match="table 0 up again"):
        comp.add(rule(Output(2), pkt_mark=5, priority=3, table=2))


def test_output_reg_the_rule_fixes_at_tables_number_is_a_lookup_in_table_0():
    from tandem.rules.ir import OutputReg, Subfield

    load = SetField("reg0", 0xFFF9, 0xFFFF)
    r = rule(load, OutputReg(Subfield("reg0", 0, 16)), Output(2), table=1, in_port=1)
    (c,) = [p for p in translate([r], TOPO).per_switch["host"] if p.table == 1]
    assert c.apply_actions == (load, ZERO, Resubmit(OFPP_IN_PORT, 0), Output(2))
    comp = Compiler(TOPO)  # (and the ledger counts it as such a lookup)
    comp.add(r)
    with pytest.raises(TranslationError, match="table 0 up again"):
        comp.add(rule(Output(2), pkt_mark=5, priority=3, table=2))
