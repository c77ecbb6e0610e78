"""``output_reg`` inside a flow's ``clone(…)``: translated as in the rule's own list when
the rule fixes the number it holds (its match, or loads before it — in the rule's list
ahead of the clone or in the clone), TABLE's number as a lookup in table 0 with the mark
at 0; one only the pipeline knows, or NORMAL's, stays refused there. Against Open
vSwitch 3.1: a bounded run of ``tandem bench of13_oracle -- --items clone_output_reg``."""

import pytest

from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.translate import translate
from tandem.rules.ir import OFPP_IN_PORT, Clone, Output, Resubmit, SetField
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs

ITEM = ("clone_output_reg",)


def _clone(rule):
    (c,) = [a for a in rule.apply_actions if type(a) is Clone]
    return c


def _copies(text, topo="k2"):
    rule = parse_rule(text)
    return dict(translate([rule], TOPOS[topo]).derived_rules(rule))


def test_a_load_before_the_clone_fixes_the_port_the_copy_outputs_to():
    copies = _copies("priority=5,actions=set_field:0x5->reg0,clone(output:NXM_NX_REG0[0..15]),output:2")
    assert _clone(copies["snic0"]).actions == (Output(1),)  # virtual port 5 is snic0:1
    host = _clone(copies["host"]).actions
    assert Output(200) in host and any(type(a) is SetField and a.field == "pkt_mark" and a.value for a in host)  # (PCIe, a flow id)


def test_tables_number_inside_a_clone_is_a_lookup_in_table_0_with_the_mark_at_0():
    copies = _copies("priority=5,actions=clone(load:0xfff9->NXM_NX_REG1[0..15],output:NXM_NX_REG1[0..15]),output:2")
    for r in copies.values():
        assert _clone(r).actions[-2:] == (SetField("pkt_mark", 0), Resubmit(OFPP_IN_PORT, 0))


@pytest.mark.parametrize("text, why", [
    ("priority=5,actions=clone(output:NXM_NX_REG1[0..15]),output:2", "do not fix the port number"),
    ("priority=5,actions=clone(load:0xfffa->NXM_NX_REG1[0..15],output:NXM_NX_REG1[0..15])", "NORMAL inside clone"),
])
def test_a_number_only_the_pipeline_knows_or_normal_stays_refused_inside_a_clone(text, why):
    with pytest.raises(TranslationError, match=why):
        _copies(text)


@pytest.mark.ovs
def test_dp_core_and_the_translation_run_clones_with_output_reg_as_open_vswitch():
    assert_item_runs_as_ovs(ITEM[0])
