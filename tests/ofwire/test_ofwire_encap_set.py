"""The SFC encap pair split between apply-actions and the action set (rules/encap_set.py):
ovs-ofctl text round trip, golden wire bytes that ``ovs-ofctl ofp-print`` reads back as the
same flow, and the split forms refused, each with its reason, in text and on the wire."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tandem.rules import ofctl
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import (
    ApplyActions, EncapEthernet, EncapNsh, FlowMod, Match, Output, PushVlan, Rule, SetField, WriteActions,
)
from tandem.rules.ofctl_lex import OfctlSyntaxError

from test_ofwire_encap import ETH, NSH1, OUT1, _apply, _write, needs_ofctl

GOLDEN = Path(__file__).parent / "golden" / "flow_mod_nx_encap_write.hex"

SPLIT = ("ip,actions=output:3,encap(nsh(md_type=1)),set_field:0x55->nsh_spi,write_actions(encap(ethernet),"
         "set_field:0a:0b:0c:0d:0e:0f->eth_dst,push_vlan:0x8100,set_field:4106->vlan_vid,output:2)")
RULE = Rule(Match.of(eth_type=0x0800), (
    ApplyActions((Output(3), EncapNsh(1), SetField("nsh_spi", 0x55))),
    WriteActions((EncapEthernet(), SetField("eth_dst", 0x0A0B0C0D0E0F), PushVlan(0x8100), SetField("vlan_vid", 0x100A),
                  Output(2)))))


def test_text_round_trip():
    r = ofctl.parse_rule(SPLIT)
    assert r == RULE
    assert ofctl.parse_rule(ofctl.format_rule(r)) == r
    assert ",write_actions(encap(ethernet)," in ofctl.format_rule(r)


def test_golden_wire_bytes_and_round_trip():
    from tandem.testing.of13_oracle import rule_items

    assert "write:encap" in rule_items(RULE) and "encap" not in rule_items(RULE)
    raw = M.encode_flow_mod(0x7D, FlowMod("add", RULE))
    assert raw.hex() == GOLDEN.read_text().strip()
    assert M.decode_flow_mod(raw[8:]).mod.rule == RULE


@needs_ofctl
def test_ovs_ofctl_reads_the_golden_bytes_as_the_flow():
    out = subprocess.run(["ovs-ofctl", "ofp-print", GOLDEN.read_text().strip()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    assert ("ip actions=output:3,encap(nsh(md_type=1)),set_field:0x55->nsh_spi,write_actions(encap(ethernet),"
            "set_field:0a:0b:0c:0d:0e:0f->eth_dst,push_vlan:0x8100,set_field:4106->vlan_vid,output:2)") in out


@pytest.mark.parametrize("text, reason", [
    ("actions=write_actions(encap(ethernet),output:1)", "ends in encap(nsh(md_type=1)) and NSH set_fields"),
    ("actions=encap(nsh),output:3,write_actions(encap(ethernet),output:1)", "ends in encap(nsh(md_type=1))"),
    ("actions=encap(nsh),set_field:1/1->nsh_c1,write_actions(encap(ethernet),output:1)", "ends in encap(nsh(md_type=1))"),
    ("actions=encap(nsh),write_actions(output:1)", "must be followed by encap(ethernet)"),
    ("actions=encap(nsh),write_actions(encap(ethernet),output:1),goto_table:1", "without goto_table only"),
    ("actions=encap(nsh),write_actions(encap(ethernet),pop_vlan,output:1)", "with pop_vlan"),
    ("actions=check_pkt_larger(100)->NXM_NX_REG1[0],encap(nsh),write_actions(encap(ethernet),output:1)", "vswitchd aborts"),
    ("actions=encap(nsh),write_actions(encap(nsh),encap(ethernet),output:1)", "apply_actions only"),
])
def test_text_refuses_the_other_split_forms(text, reason):
    with pytest.raises(OfctlSyntaxError) as e:
        ofctl.parse_rule(text)
    assert reason in str(e.value)


OUT3 = W.encode_action(Output(3))
GOTO1 = bytes.fromhex("0001000801000000")


@pytest.mark.parametrize("instructions, code, reason", [
    (_write(ETH, OUT1), 3, "ends in encap(nsh(md_type=1))"),
    (_apply(NSH1, OUT3) + _write(ETH, OUT1), 3, "only set_field on NSH fields"),
    (_apply(NSH1) + _write(OUT1), 3, "must be followed by encap(ethernet)"),
    (_apply(NSH1) + _write(ETH, OUT1) + GOTO1, 3, "without goto_table only"),
    (_apply(NSH1) + _write(NSH1, ETH, OUT1), 0, "apply_actions only"),  # OFPBAC_BAD_TYPE
])
def test_wire_refuses_the_other_split_forms(instructions, code, reason):
    with pytest.raises(W.OFError) as e:
        W.decode_instructions(instructions)
    assert (e.value.etype, e.value.code) == (2, code) and reason in str(e.value)
    assert W.decode_instructions(_apply(NSH1) + _write(ETH, OUT1)) == [
        ApplyActions((EncapNsh(1),)), WriteActions((EncapEthernet(), Output(1)))]


def test_buckets_still_refuse_a_lone_encap_ethernet():
    with pytest.raises(W.OFError, match="apply_actions only"):
        W.decode_actions(ETH + OUT1, bucket=True)


def _packet_out(actions) -> tuple:
    raw = M.encode_packet_out(1, M.WirePacketOut(W.OFP_NO_BUFFER, 1, tuple(actions), bytes(60)))
    return M.decode_packet_out(raw[8:]).actions


def test_a_packet_out_takes_the_whole_pattern_and_outputs_after_it():
    acts = (Output(3), EncapNsh(1), SetField("nsh_spi", 5), EncapEthernet(), SetField("eth_dst", 1), Output(2))
    assert _packet_out(acts) == acts


@pytest.mark.parametrize("actions, code, reason", [
    ((EncapEthernet(), Output(2)), 3, "only right after encap(nsh"),
    ((EncapNsh(1), Output(2)), 3, "only set_field on NSH fields"),
    ((EncapNsh(1), EncapEthernet(), Output(0xFFFFFFFD)), 0, "output to port 0x"),  # CONTROLLER
    ((EncapNsh(1), EncapEthernet(), Output(0xFFFFFFFA)), 0, "output to port 0x"),  # NORMAL
    ((EncapNsh(1), EncapEthernet(), Output(0xFFFFFFF9)), 0, "output to port 0x"),  # TABLE
])
def test_a_packet_out_refuses_the_other_forms(actions, code, reason):
    with pytest.raises(W.OFError) as e:
        _packet_out(actions)
    assert (e.value.etype, e.value.code) == (2, code) and reason in str(e.value)


def test_before_the_written_encap_ethernet_only_nsh_and_pipeline_fields_are_set():
    # (Open vSwitch checks the written list in its order: no Ethernet header before encap(ethernet), measured)
    ok = ofctl.parse_rule("actions=encap(nsh),write_actions(set_field:5->nsh_spi,set_field:3->reg1,dec_nsh_ttl,"
                          "push_vlan:0x8100,encap(ethernet),output:2)")
    assert ofctl.parse_rule(ofctl.format_rule(ok)) == ok
    with pytest.raises(OfctlSyntaxError, match="OFPBAC_MATCH_INCONSISTENT"):
        ofctl.parse_rule("actions=encap(nsh),write_actions(set_field:0a:0b:0c:0d:0e:0f->eth_dst,encap(ethernet),output:2)")


def test_random_split_rules_round_trip_in_text_and_on_the_wire():
    item_rules_round_trip("write:encap")


def item_rules_round_trip(item: str) -> None:
    """Random rules that use an of13_oracle ``item`` round-trip in text and on the wire (also
    test_ofwire_decap_set.py)."""
    import random

    from tandem.rules.generate import random_ruleset
    from tandem.testing.of13_oracle import item_features, rule_items

    rules = [r for r in random_ruleset(random.Random(5), 600, [1, 2, 3, 4], tables=3,
                                       features=item_features(item)) if item in rule_items(r)]
    assert len(rules) > 50
    for r in rules:
        assert ofctl.parse_rule(ofctl.format_rule(r)) == r
        assert M.decode_flow_mod(M.encode_flow_mod(1, FlowMod("add", r))[8:]).mod.rule == r
