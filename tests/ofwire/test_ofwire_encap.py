"""Open vSwitch's ``encap`` in the one form OneSwitch runs (rules/encap.py): ovs-ofctl
text round trip, golden wire bytes that ``ovs-ofctl ofp-print`` reads back as the same
flow (OVS's own FLOW_STATS bytes for it: tests/endpoint/test_nx_flow_stats_vs_ovs.py,
priority 32), and the forms refused, each with its reason, in text and on the wire."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tandem.rules import encap as ENC
from tandem.rules import ofctl
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Clone, EncapEthernet, EncapNsh, FlowMod, GotoTable, Match, Output, Rule, SetField
from tandem.rules.ofctl_lex import OfctlSyntaxError

GOLDEN = Path(__file__).parent / "golden" / "flow_mod_nx_encap.hex"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

SFC = ("ip,actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,set_field:3->nsh_si,encap(ethernet),"
       "set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2,encap(nsh),encap(ethernet),goto_table:1")
RULE = Rule(Match.of(eth_type=0x0800), (
    ApplyActions((EncapNsh(1), SetField("nsh_spi", 0x55), SetField("nsh_si", 3), EncapEthernet(),
                  SetField("eth_dst", 0x0A0B0C0D0E0F), Output(2), EncapNsh(None), EncapEthernet())), GotoTable(1)))


def test_text_round_trip():
    r = ofctl.parse_rule(SFC)
    assert r == RULE
    assert ofctl.parse_rule(ofctl.format_rule(r)) == r
    assert "encap(nsh(md_type=1))," in ofctl.format_rule(r) and ",encap(nsh),encap(ethernet)," in ofctl.format_rule(r)


def test_golden_wire_bytes_and_round_trip():
    from tandem.testing.of13_oracle import rule_items

    assert "encap" in rule_items(RULE)
    raw = M.encode_flow_mod(0x7C, FlowMod("add", RULE))
    assert raw.hex() == GOLDEN.read_text().strip()
    assert M.decode_flow_mod(raw[8:]).mod.rule == RULE
    # nx_action_encap: hdr_size 0, the new packet type, NSH's MD-type property (length 5, padded to 8)
    assert ENC.encode_encap(EncapNsh(1)).hex() == "ffff001800002320002e00000001894f0004010501000000"
    assert ENC.encode_encap(EncapNsh(None)).hex() == "ffff001000002320002e00000001894f"
    assert ENC.encode_encap(EncapEthernet()).hex() == "ffff001000002320002e000000000000"
    # a property length that counts the padding is read too
    assert ENC.decode_encap(bytes.fromhex("ffff001800002320002e00000001894f0004010801000000")) == EncapNsh(1)


@needs_ofctl
def test_ovs_ofctl_reads_the_golden_bytes_as_the_flow():
    out = subprocess.run(["ovs-ofctl", "ofp-print", GOLDEN.read_text().strip()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    assert ("ip actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,set_field:3->nsh_si,encap(ethernet),"
            "set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2,encap(nsh),encap(ethernet),goto_table:1") in out


@pytest.mark.parametrize("text, reason", [
    ("actions=encap(nsh),output:1", "only set_field on NSH fields"),
    ("actions=output:1,encap(nsh),set_field:5->nsh_spi", "must be followed by encap(ethernet)"),
    ("actions=encap(ethernet),output:1", "only right after encap(nsh"),
    ("actions=encap(nsh),encap(nsh),encap(ethernet)", "inside encap(nsh)"),
    ("actions=encap(nsh),output:1,encap(ethernet)", "only set_field on NSH fields"),
    ("actions=encap(nsh),set_field:0x1/0xf->nsh_c1,encap(ethernet)", "only set_field on NSH fields"),
    ("actions=encap(nsh(md_type=2)),encap(ethernet)", "MD type 1 and no TLVs only"),
    ("actions=encap(nsh(md_type=2,tlv(0x1000,10,0x12345678))),encap(ethernet)", "MD type 1 and no TLVs only"),
    ("actions=encap(mpls),output:1", "encap(nsh(md_type=1)) and encap(ethernet) only"),
    ("actions=check_pkt_larger(100)->NXM_NX_REG1[0],encap(nsh),encap(ethernet),output:2", "vswitchd aborts"),
    ("actions=write_actions(encap(nsh),encap(ethernet))", "apply_actions only"),
    ("ip,actions=encap(nsh),set_field:1.2.3.4->ip_src,encap(ethernet)", "needs ip"),  # (as Open vSwitch)
])
def test_text_refuses_the_other_forms(text, reason):
    with pytest.raises(OfctlSyntaxError) as e:
        ofctl.parse_rule(text)
    assert reason in str(e.value)


def _apply(*actions: bytes) -> bytes:
    acts = b"".join(actions)
    return struct.pack("!HH4x", 4, 8 + len(acts)) + acts


def _write(*actions: bytes) -> bytes:
    acts = b"".join(actions)
    return struct.pack("!HH4x", 3, 8 + len(acts)) + acts


def golden_flow_mod(rule, golden: Path, xid: int) -> None:
    """``rule``'s FLOW_MOD is the golden file's bytes and decodes back to ``rule`` (also test_ofwire_decap_set.py)."""
    raw = M.encode_flow_mod(xid, FlowMod("add", rule))
    assert raw.hex() == golden.read_text().strip()
    assert M.decode_flow_mod(raw[8:]).mod.rule == rule


def ofp_print(golden: Path) -> str:
    """What ``ovs-ofctl ofp-print`` reads in the golden file's bytes (no error in it)."""
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden.read_text().strip()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    return out


NSH1, ETH = ENC.encode_encap(EncapNsh(1)), ENC.encode_encap(EncapEthernet())
OUT1 = W.encode_action(Output(1))
MPLS = struct.pack("!HHIHHI", 0xFFFF, 16, 0x2320, 46, 0, 1 << 16 | 0x8847)
MD2 = struct.pack("!HHIHHIHBBB3x", 0xFFFF, 24, 0x2320, 46, 0, ENC.PT_NSH, 4, 1, 5, 2)


@pytest.mark.parametrize("instructions, code, reason", [
    (_apply(NSH1, OUT1), 3, "only set_field on NSH fields"),
    (_apply(OUT1, NSH1), 3, "must be followed by encap(ethernet)"),
    (_apply(ETH, OUT1), 3, "only right after encap(nsh"),
    (_apply(MPLS, OUT1), 3, "encap to packet type (1,0x8847)"),
    (_apply(MD2, ETH), 3, "MD type 1 only"),
    (_write(NSH1, ETH), 0, "apply_actions only"),  # OFPBAC_BAD_TYPE
])
def test_wire_refuses_the_other_forms(instructions, code, reason):
    with pytest.raises(W.OFError) as e:
        W.decode_instructions(instructions)
    assert (e.value.etype, e.value.code) == (2, code) and reason in str(e.value)
    assert W.decode_instructions(_apply(NSH1, ETH, OUT1)) == [ApplyActions((EncapNsh(1), EncapEthernet(), Output(1)))]


def test_group_buckets_refuse_encap():  # (a PACKET_OUT takes the pattern: test_ofwire_encap_set.py)
    from tandem.rules.ir import RuleError
    from tandem.rules.ofctl import parse_group

    with pytest.raises(RuleError, match="not in a group bucket"):
        parse_group("group_id=1,type=all,bucket=encap(nsh),encap(ethernet),output:1")
    with pytest.raises(W.OFError, match="apply_actions only") as e:
        W.decode_actions(NSH1 + ETH + OUT1, bucket=True)
    assert (e.value.etype, e.value.code) == (2, 0)
    # (inside a clone too)
    with pytest.raises(W.OFError, match="inside clone"):
        W.decode_instructions(W.encode_instructions((ApplyActions((Clone((EncapNsh(1), EncapEthernet())), Output(1))),)))
