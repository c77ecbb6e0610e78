"""``ct(commit,nat(...),alg=tftp)`` in ovs-ofctl text and on the wire (NXAST_CT with alg 69
and a nested NXAST_NAT); ``alg=ftp`` beside a nat stays refused (docs/endpoint.md). The
golden bytes are Tandem's own encoding; ``ovs-ofctl ofp-print`` reads them as the flow
named."""

from __future__ import annotations

import subprocess

import pytest

from test_ofwire_nx_golden import needs_ofctl
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Ct, CtNat, FlowMod, Match, Output, Rule, RuleError
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule

MOD = FlowMod("add", Rule(Match.of(eth_type=0x0800, ip_proto=17, udp_dst=69), (ApplyActions((
    Ct(commit=True, exec=(("ct_mark", 3, None),), nat=CtNat("src", 0x0A000064), alg="tftp"), Output(2))),),
    table=1, priority=7))
RAW = ("040e00a000000094000000000000000000000000000000000100000000000007ffffffffffffffffffffffff000000000001001580000a"
       "02080080001401118000200200450000000004005800000000ffff00400000232000230001000000000000ff0000000045ffff001800"
       "00232000240000000100010a00006400000000001900100001d60400000003000000000000001000000002ffff000000000000")
SHOWN = "ADD table:1 priority=7,udp,tp_dst=69 actions=ct(commit,nat(src=10.0.0.100),exec(set_field:0x3->ct_mark),alg=tftp),output:2"


def test_tftp_nat_flow_mod_matches_its_golden_bytes():
    assert M.encode_flow_mod(0x94, MOD).hex() == RAW
    assert M.decode_flow_mod(bytes.fromhex(RAW)[8:]).mod == MOD


@needs_ofctl
def test_open_vswitch_reads_the_tftp_nat_golden_bytes_as_the_same_flow():
    out = subprocess.run(["ovs-ofctl", "ofp-print", RAW], capture_output=True, text=True, check=True).stdout
    assert SHOWN in out, out


@pytest.mark.parametrize("text", [
    "table=1,priority=7,udp,udp_dst=69,actions=ct(commit,nat(src=10.0.0.100),exec(set_field:0x3->ct_mark),alg=tftp),output:2",
    "udp6,actions=ct(commit,nat(dst=[2001:db8::8]:69),alg=tftp)",
    "udp,actions=ct(table=1,nat,alg=tftp)",
])
def test_tftp_nat_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_ftp_beside_a_nat_stays_refused_in_text_wire_and_ir():
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule("tcp,actions=ct(commit,nat(src=10.0.0.1),alg=ftp)")
    assert "alg together with nat is not supported by OneSwitch" in str(e.value)
    raw = W.encode_action(Ct(commit=True, nat=CtNat("src", 0x0A000001), alg="tftp"))
    assert W.decode_actions(raw) == [Ct(commit=True, nat=CtNat("src", 0x0A000001), alg="tftp")]
    with pytest.raises(W.OFError) as e:
        W.decode_actions(raw[:22] + (21).to_bytes(2, "big") + raw[24:])
    assert (e.value.etype, e.value.code) == (2, 3) and "alg=ftp together with nat" in str(e.value)
    with pytest.raises(RuleError):
        Ct(commit=True, nat=CtNat("src", 0x0A000001), alg="ftp")
