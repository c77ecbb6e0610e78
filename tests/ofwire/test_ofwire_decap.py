"""Open vSwitch's ``decap`` in the one form OneSwitch runs (rules/decap.py): ovs-ofctl
text round trip, golden wire bytes that ``ovs-ofctl ofp-print`` reads back as the same
flow (OVS's own FLOW_STATS bytes for it: tests/endpoint/test_nx_flow_stats_vs_ovs.py,
priority 39), and the forms refused, each with its reason, in text and on the wire."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from tandem.rules import decap as DEC
from tandem.rules import ofctl
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Clone, Decap, FlowMod, GotoTable, Match, Output, Rule, SetField
from tandem.rules.ofctl_lex import OfctlSyntaxError
from test_ofwire_encap import _apply, _write, needs_ofctl

GOLDEN = Path(__file__).parent / "golden" / "flow_mod_nx_decap.hex"

TEXT = ("eth_type=0x894f,nsh_np=3,actions=set_field:0x5->reg0,decap(packet_type(ns=1,type=0x894f)),"
        "decap(packet_type(ns=0,type=0)),set_field:0x7->pkt_mark,output:2,goto_table:1")
RULE = Rule(Match.of(eth_type=0x894F, nsh_np=3), (
    ApplyActions((SetField("reg0", 5), Decap(DEC.PT_NSH), Decap(DEC.PT_ETHERNET), SetField("pkt_mark", 7), Output(2))),
    GotoTable(1)))


def test_text_round_trip():
    r = ofctl.parse_rule(TEXT)
    assert r == RULE
    assert ofctl.parse_rule(ofctl.format_rule(r)) == r
    plain = ofctl.parse_rule("eth_type=0x894f,nsh_np=3,actions=decap(),decap(),output:2")
    assert plain.instructions[0].actions[:2] == (Decap(None), Decap(None))
    assert "actions=decap(),decap(),output:2" in ofctl.format_rule(plain)
    # (the default packet type written out is the default)
    assert ofctl.parse_rule("eth_type=0x894f,nsh_np=3,actions=decap(packet_type(ns=0,type=0xfffe)),decap()") == \
        ofctl.parse_rule("eth_type=0x894f,nsh_np=3,actions=decap(),decap()")


def test_golden_wire_bytes_and_round_trip():
    from tandem.testing.of13_oracle import rule_items

    assert "decap" in rule_items(RULE)
    raw = M.encode_flow_mod(0x7D, FlowMod("add", RULE))
    assert raw.hex() == GOLDEN.read_text().strip()
    assert M.decode_flow_mod(raw[8:]).mod.rule == RULE
    # nx_action_decap: 2 pad bytes, the new packet type ((0,0xfffe): "the next protocol")
    assert DEC.encode_decap(Decap(None)).hex() == "ffff001000002320002f00000000fffe"
    assert DEC.encode_decap(Decap(DEC.PT_NSH)).hex() == "ffff001000002320002f00000001894f"
    assert DEC.decode_decap(bytes.fromhex("ffff001000002320002f00000000fffe")) == Decap(None)


@needs_ofctl
def test_ovs_ofctl_reads_the_golden_bytes_as_the_flow():
    out = subprocess.run(["ovs-ofctl", "ofp-print", GOLDEN.read_text().strip()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    assert ("actions=set_field:0x5->reg0,decap(packet_type(ns=1,type=0x894f)),decap(packet_type(ns=0,type=0)),"
            "set_field:0x7->pkt_mark,output:2,goto_table:1") in out


@pytest.mark.parametrize("text, reason", [
    ("eth_type=0x894f,nsh_np=3,actions=decap(),output:1", "only as the pair"),
    ("eth_type=0x894f,nsh_np=3,actions=decap(),decap(),decap(),decap()", "only as the pair"),
    ("eth_type=0x894f,nsh_np=3,actions=decap(),set_field:5->nsh_spi,decap()", "only as the pair"),
    ("eth_type=0x894f,nsh_np=3,actions=decap(packet_type(ns=1,type=0x800)),decap()", "packet_type(ns=1,type=0x894f)"),
    ("eth_type=0x894f,actions=decap(),decap(),output:1", "needs eth_type=0x894f,nsh_np=3"),
    ("actions=decap(),decap(),output:1", "needs eth_type=0x894f,nsh_np=3"),
    ("eth_type=0x894f,nsh_np=3,actions=decap(),decap(),set_field:0a:0b:0c:0d:0e:0f->eth_dst", "touch no packet header"),
    ("eth_type=0x894f,nsh_np=3,actions=resubmit(,1),decap(),decap()", "may change the packet type"),
    ("eth_type=0x894f,nsh_np=3,actions=push_mpls:0x8847,decap(),decap()", "may change the packet type"),
    ("eth_type=0x894f,nsh_np=3,actions=write_actions(decap())", "supported only after an apply-actions list"),
    ("eth_type=0x894f,nsh_np=3,actions=clone(decap(),decap(),output:1)", "inside clone"),
    ("eth_type=0x894f,nsh_np=3,actions=decap(foo)", "expected decap()"),
])
def test_text_refuses_the_other_forms(text, reason):
    with pytest.raises(OfctlSyntaxError) as e:
        ofctl.parse_rule(text)
    assert reason in str(e.value)


DECAP = DEC.encode_decap(Decap(None))
OUT1 = W.encode_action(Output(1))


@pytest.mark.parametrize("instructions, code, reason", [
    (_apply(DECAP, OUT1), 3, "only as the pair"),
    (_apply(DECAP, OUT1, DECAP), 3, "only as the pair"),
    (_apply(struct.pack("!HHIH2xI", 0xFFFF, 24, 0x2320, 47, 0xFFFE) + bytes(8)), 1, "expected 16"),  # OFPBAC_BAD_LEN
    (_write(DECAP, DECAP), 3, "supported only after an apply-actions list"),  # (decap_set.py)
])
def test_wire_refuses_the_other_forms(instructions, code, reason):
    with pytest.raises(W.OFError) as e:
        W.decode_instructions(instructions)
    assert (e.value.etype, e.value.code) == (2, code) and reason in str(e.value)
    assert W.decode_instructions(_apply(DECAP, DECAP, OUT1)) == [ApplyActions((Decap(None), Decap(None), Output(1)))]


def test_group_buckets_and_packet_outs_refuse_decap():
    from tandem.rules.ir import RuleError
    from tandem.rules.ofctl import parse_group

    with pytest.raises(RuleError, match="not in a group bucket"):
        parse_group("group_id=1,type=all,bucket=decap(),decap(),output:1")
    with pytest.raises(W.OFError, match="apply_actions only") as e:
        W.decode_actions(DECAP + DECAP + OUT1, bucket=True)
    assert (e.value.etype, e.value.code) == (2, 0)
    raw = M.encode_packet_out(1, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (Decap(None), Decap(None), Output(2)), bytes(60)))
    with pytest.raises(W.OFError, match="apply_actions only"):
        M.decode_packet_out(raw[8:])
    with pytest.raises(W.OFError, match="inside clone"):
        W.decode_instructions(W.encode_instructions((ApplyActions((Clone((Decap(None), Decap(None))), Output(1))),)))
