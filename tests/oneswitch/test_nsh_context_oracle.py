"""NSH context matches without ``nsh_mdtype=1`` (rules/nsh.py) translated: every physical
copy keeps the context match as the virtual rule holds it (the OVS backend sends it on the
wire, and ovs-ofctl's text sends it too, measured), so each copy meets what the virtual
rule meets. Against Open vSwitch 3.1: a bounded run of ``tandem bench of13_oracle --
--items match:nsh_context`` (dp-core and the translation)."""

import pytest

from tandem.oneswitch.translate import translate
from tandem.rules.ir import FieldMatch
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS


@pytest.mark.parametrize("text", [
    "priority=5,eth_type=0x894f,nsh_c1=0x11,actions=output:5",
    "table=1,priority=5,eth_type=0x894f,nsh_mdtype=2,nsh_c2=0x0,nsh_c4=0x1100/0xff00,actions=output:1,output:6",
])
def test_every_copy_keeps_the_context_match(text):
    rule = parse_rule(text)
    copies = dict(translate([rule], TOPOS["k2"]).derived_rules(rule))
    assert set(copies) == {"host", "snic0"}
    for copy in copies.values():
        for field in ("nsh_mdtype", "nsh_c1", "nsh_c2", "nsh_c4"):
            assert copy.match.get(field) == rule.match.get(field), (field, copy)
        assert copy.match.get("eth_type") == FieldMatch(0x894F)


@pytest.mark.ovs
def test_dp_core_and_the_translation_run_context_matches_as_open_vswitch():
    """(More packets per rule set than ``assert_item_runs_as_ovs`` sends: many NSH frames
    meet no rule.)"""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing.of13_oracle import run_dp, run_translation

    item = ("match:nsh_context",)
    with OvsSandbox() as sb:
        (dp,) = run_dp(sb, item, per_item=150, seed=4, set_size=50, packets_per_set=150).values()
        (tr,) = run_translation(sb, TOPOS, item, per_item=150, seed=4, set_size=50, per_port=20).values()
    for r in (dp, tr):
        assert r.item_rules >= 150 and r.frames > 100, r
        assert not r.mismatches, "\n".join(r.mismatches[:3])
