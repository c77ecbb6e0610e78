"""Lookups in table 0 written into the action set and in group buckets under OneSwitch,
the cases random rule sets meet rarely: the packet reaches the lookup carrying a flow id
a PCIe output left in the mark (the bare form of a table-0 rule an earlier lookup found),
and a written resubmit's mark reset meets an earlier table's written flow id. The OVS
oracle compares every frame with the virtual switch, and must catch a translation
without the reset, and one that lets the reset clear a flow id (``table0_lookup.py``,
docs/oneswitch.md section 7). Random rule sets: ``tandem bench of13_oracle -- --items
write_output_table,write_resubmit0,bucket_output_table,bucket_resubmit0``."""

from __future__ import annotations

import pytest

from test_resubmit_translation_oracle import K3, _compare, _frames, sb  # noqa: F401  (sb: the sandbox fixture)
from tandem.oneswitch import compiler, rule_analysis
from tandem.oneswitch.mark_ledger import MarkLedger
from tandem.oneswitch.translate import TranslationError, translate
from tandem.rules.ir import OFPP_TABLE, Output, SetField
from tandem.rules.ofctl import parse_rule

pytestmark = pytest.mark.ovs

# reg0 counts the lookups: the first, from apply-actions, finds a rule that sends to another
# switch in the bare form (the flow id stays in the mark); the second is the written one
# (or the bucket's), which must find the reg0=2 rule
_FIRST = "priority=9,reg0=0,actions=load:1->NXM_NX_REG0[],resubmit(,0),load:2->NXM_NX_REG0[],"
_FOUND = ["priority=8,reg0=1,actions=output:4", "priority=8,reg0=2,actions=output:3"]
CASES = {
    "write_actions(output:TABLE)": ([_FIRST + "write_actions(output:TABLE)"] + _FOUND, []),
    "write_actions(resubmit(,0))": ([_FIRST + "write_actions(resubmit(,0))"] + _FOUND, []),
    "bucket output:TABLE": ([_FIRST + "group:1"] + _FOUND, ["group_id=1,type=all,bucket=output:TABLE"]),
    "bucket resubmit(,0)": ([_FIRST + "group:1"] + _FOUND, ["group_id=1,type=indirect,bucket=resubmit(,0)"]),
    "output_reg at TABLE's number": ([_FIRST + "load:0xfff9->NXM_NX_REG1[0..15],output:NXM_NX_REG1[0..15]"] + _FOUND, []),
}


@pytest.mark.parametrize("case", CASES)
def test_a_written_or_bucket_lookup_in_table_0_meets_what_the_virtual_switch_meets(sb, monkeypatch, case):
    lines, groups = CASES[case]
    rep = _compare(sb, K3, lines, _frames(), groups)
    assert rep.mismatches == [] and rep.outputs == 18  # (to 4, then 3; not back to the in_port)
    # without the mark set to 0 for the lookup, the flow id the first lookup's rule left is seen
    monkeypatch.setattr(compiler, "WRITTEN_TABLE", (Output(OFPP_TABLE),))
    monkeypatch.setattr(compiler, "bucket_table0", lambda a: (a,))
    monkeypatch.setattr(rule_analysis, "_ZERO_MARK", SetField("reg15", 0))  # (the written resubmit's)
    monkeypatch.setattr(compiler, "_ZERO_MARK", SetField("reg15", 0))  # (output_reg's)
    assert _compare(sb, K3, lines, _frames(), groups).mismatches


# a written output to snic1's port in table 0 (for in_port=1 only: no copy on snic1), then
# a written resubmit into table 0 in table 1: the output wins, with its flow id
LEDGER = ["priority=9,in_port=1,actions=write_actions(output:4),goto_table:1",
          "table=1,priority=9,actions=write_actions(resubmit(,0))"]


def test_a_written_resubmits_mark_reset_after_an_earlier_flow_id_is_refused_as_it_would_lose_it(sb, monkeypatch):
    with pytest.raises(TranslationError, match="would clear"):
        translate([parse_rule(t) for t in LEDGER], K3, [])
    monkeypatch.setattr(MarkLedger, "_zeroed_id", lambda self: None)
    rep = _compare(sb, K3, LEDGER, [f for f in _frames() if f[0] == 1])
    assert rep.mismatches  # (the output crosses PCIe with mark 0, and snic1 has no copy to take it)
