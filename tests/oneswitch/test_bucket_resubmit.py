"""A resubmit in a group bucket (``oneswitch/bucket_resubmit.py``, docs/oneswitch.md
section 7), pure (no OVS): the forms translated and to what, the forms refused and
why, and the mark bookkeeping such a group brings. The OVS oracle: ``tandem bench
of13_oracle -- --items group_resubmit`` (tests/oneswitch/test_bucket_resubmit_oracle.py).

Topology: virtual ports 1, 2 on the host (physical 1, 2), 3 on snic0 (physical 1),
4 on snic1 (physical 1); PCIe host:100-snic0:100, host:101-snic1:100."""

import pytest

from tandem.oneswitch.translate import Compiler, TranslationError, translate
from tandem.rules.ir import (
    OFPP_IN_PORT, ApplyActions, Bucket, Group, GroupAction, Match, Output, Resubmit, Rule, SetField, StackPop,
    StackPush, Subfield, WriteActions,
)

from test_resubmit_output_reg_translate import TOPO
SAVE, RESTORE = StackPush(Subfield("pkt_mark", 0, 32)), StackPop(Subfield("pkt_mark", 0, 32))


def calls(gid, *after, table=0, **match):
    return Rule(Match.of(**match), (ApplyActions((GroupAction(gid),) + after),), table=table, priority=5)


@pytest.mark.parametrize("gtype", ["all", "indirect", "fast_failover", "select"])
def test_a_bucket_resubmit_into_a_later_table_stays_on_every_switch(gtype):
    watch = 3 if gtype == "fast_failover" else 0xFFFFFFFF
    g = Group(1, gtype, (Bucket((SetField("eth_dst", 9), Resubmit(OFPP_IN_PORT, 2)), watch_port=watch),))
    tr = translate([calls(1)], TOPO, [g])
    assert set(tr.groups) == {"host", "snic0", "snic1"}
    for sw, groups in tr.groups.items():
        (pg,) = [x for x in groups if x.group_id == 1]
        assert pg.buckets[0].actions == (SetField("eth_dst", 9), Resubmit(OFPP_IN_PORT, 2))


def test_a_bucket_that_outputs_drops_its_resubmit_as_open_vswitch_does():
    g = Group(1, "all", (Bucket((Resubmit(OFPP_IN_PORT, 2), Output(2))),))
    (pg,) = [x for x in translate([calls(1)], TOPO, [g]).groups["host"] if x.group_id == 1]
    assert [b.actions for b in pg.buckets] == [(Output(2),)]


@pytest.mark.parametrize("a, why", [
    (Resubmit(OFPP_IN_PORT, 254), "254"),
    (Resubmit(2, 3), "another in_port"),
    (Resubmit(2, 255), "another in_port"),  # (one without a table names an in_port)
])
def test_bucket_resubmit_forms_refused(a, why):
    g = Group(1, "all", (Bucket((a,)),))
    with pytest.raises(TranslationError, match="group bucket") as e:
        translate([], TOPO, [g])
    assert why in str(e.value) and e.value.of_error == (2, 5)


def test_a_table_0_rule_calling_such_a_group_restores_the_mark_around_its_pcie_output():
    g = Group(1, "all", (Bucket((Resubmit(OFPP_IN_PORT, 2),)),))
    (c,) = [r for r in translate([calls(1, Output(3), in_port=1)], TOPO, [g]).per_switch["host"] if r.priority == 5]
    acts = c.apply_actions
    assert acts[0] == GroupAction(1) and acts[1] == SAVE and acts[-1] == RESTORE  # (rules it finds may write the set)
    without = translate([calls(1, Output(3), in_port=1)], TOPO, [Group(1, "all", (Bucket((Output(2),)),))])
    (plain,) = [r for r in without.per_switch["host"] if r.priority == 5]
    assert plain.apply_actions[1] != SAVE  # (the bare form, when no bucket resubmits)


def test_such_a_group_lets_tables_run_in_any_order_for_the_mark_ledger():
    """A written output's flow id in table 2 and a mark observer in table 1: apart only
    when nothing resubmits (docs/oneswitch.md section 2)."""
    writer = Rule(Match.of(), (WriteActions((Output(3),)),), table=2, priority=1)
    observer = Rule(Match.of(pkt_mark=7), (WriteActions((SetField("pkt_mark", 1),)),), table=1, priority=1)
    plain = Compiler(TOPO, groups=[Group(1, "all", (Bucket((Output(2),)),))])
    plain.add(writer)
    plain.add(observer)
    comp = Compiler(TOPO, groups=[Group(1, "all", (Bucket((Resubmit(OFPP_IN_PORT, 2),)),))])
    comp.add(writer)
    with pytest.raises(TranslationError, match="table"):
        comp.add(observer)
