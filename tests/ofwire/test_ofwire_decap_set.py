"""The SFC decap pair split between apply-actions and the action set (rules/decap_set.py):
ovs-ofctl text round trip, golden wire bytes that ``ovs-ofctl ofp-print`` reads back as the
same flow, and the other split forms refused, each with its reason, in text and on the wire."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.rules import decap as DEC
from tandem.rules import ofctl
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Decap, FlowMod, Match, Output, PushVlan, Rule, SetField, WriteActions
from tandem.rules.ofctl_lex import OfctlSyntaxError

from test_ofwire_encap import _apply, _write, golden_flow_mod, needs_ofctl, ofp_print

GOLDEN = Path(__file__).parent / "golden" / "flow_mod_nx_decap_write.hex"
M_NSH = "eth_type=0x894f,nsh_np=3"
SPLIT = f"{M_NSH},actions=output:3,decap(),write_actions(set_field:0x5->reg0,decap(),push_vlan:0x8100,output:2)"
RULE = Rule(Match.of(eth_type=0x894F, nsh_np=3), (
    ApplyActions((Output(3), Decap(None))),
    WriteActions((SetField("reg0", 5), Decap(None), PushVlan(0x8100), Output(2)))))


def test_text_round_trip():
    r = ofctl.parse_rule(SPLIT)
    assert r == RULE
    assert ofctl.parse_rule(ofctl.format_rule(r)) == r
    typed = ofctl.parse_rule(f"{M_NSH},actions=decap(packet_type(ns=1,type=0x894f)),"
                             "write_actions(decap(packet_type(ns=0,type=0)),output:2)")
    assert ofctl.parse_rule(ofctl.format_rule(typed)) == typed


def test_golden_wire_bytes_and_round_trip():
    from tandem.testing.of13_oracle import rule_items

    assert "write:decap" in rule_items(RULE) and "decap" not in rule_items(RULE)
    golden_flow_mod(RULE, GOLDEN, 0x7E)


@needs_ofctl
def test_ovs_ofctl_reads_the_golden_bytes_as_the_flow():
    assert ("actions=output:3,decap(),write_actions(set_field:0x5->reg0,decap(),push_vlan:0x8100,output:2)"
            in ofp_print(GOLDEN))


@pytest.mark.parametrize("text, reason", [
    (f"{M_NSH},actions=write_actions(decap(),output:1)", "supported only after an apply-actions list that ends in"),
    (f"{M_NSH},actions=decap(),output:3,write_actions(decap(),output:1)", "supported only after"),
    (f"{M_NSH},actions=push_mpls:0x8847,decap(),write_actions(decap(),output:1)", "supported only after"),
    (f"{M_NSH},actions=decap()", "only with decap() written into the same rule's action set"),
    (f"{M_NSH},actions=decap(),write_actions(output:1)", "only with decap() written"),
    (f"{M_NSH},actions=decap(),write_actions(decap(),decap(),output:1)", "keeps only the one written last"),
    (f"{M_NSH},actions=decap(),write_actions(decap(packet_type(ns=1,type=0x800)),output:1)", "keeps only the one"),
    (f"{M_NSH},actions=decap(),write_actions(decap(),output:1),goto_table:1", "without goto_table only"),
    (f"{M_NSH},actions=decap(),write_actions(decap(),pop_vlan,output:1)", "pop_vlan written beside decap()"),
    (f"{M_NSH},actions=decap(),write_actions(decap(),group:1)", "group:1 written beside decap()"),
    (f"{M_NSH},actions=decap(),write_actions(decap(),set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:1)",
     "OFPBAC_MATCH_INCONSISTENT"),
    ("eth_type=0x894f,actions=decap(),write_actions(decap(),output:1)", "needs eth_type=0x894f,nsh_np=3"),
])
def test_text_refuses_the_other_split_forms(text, reason):
    with pytest.raises(OfctlSyntaxError) as e:
        ofctl.parse_rule(text)
    assert reason in str(e.value)


DECAP = DEC.encode_decap(Decap(None))
OUT1 = W.encode_action(Output(1))
GOTO1 = bytes.fromhex("0001000801000000")


@pytest.mark.parametrize("instructions, reason", [
    (_write(DECAP, OUT1), "supported only after an apply-actions list that ends in"),
    (_apply(DECAP), "only with decap() written"),
    (_apply(DECAP) + _write(DECAP, DECAP, OUT1), "keeps only the one written last"),
    (_apply(DECAP) + _write(DECAP, OUT1) + GOTO1, "without goto_table only"),
])
def test_wire_refuses_the_other_split_forms(instructions, reason):
    with pytest.raises(W.OFError) as e:
        W.decode_instructions(instructions)
    assert (e.value.etype, e.value.code) == (2, 3) and reason in str(e.value)  # OFPBAC_BAD_EXP_TYPE
    assert W.decode_instructions(_apply(DECAP) + _write(DECAP, OUT1)) == [
        ApplyActions((Decap(None),)), WriteActions((Decap(None), Output(1)))]


def test_buckets_and_packet_outs_still_refuse_decap():
    with pytest.raises(W.OFError, match="apply_actions only"):
        W.decode_actions(DECAP + OUT1, bucket=True)
    raw = M.encode_packet_out(1, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (Decap(None), Output(2)), bytes(60)))
    with pytest.raises(W.OFError, match="apply_actions only"):
        M.decode_packet_out(raw[8:])


def test_random_split_rules_round_trip_in_text_and_on_the_wire():
    from test_ofwire_encap_set import item_rules_round_trip

    item_rules_round_trip("write:decap")
