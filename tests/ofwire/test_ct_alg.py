"""``ct(alg=ftp|tftp)`` in ovs-ofctl text and on the wire (NXAST_CT's ``alg``: the
ALG's port, 21 or 69). The golden bytes below are Tandem's own encoding; Open vSwitch
confirms their meaning (``ovs-ofctl ofp-print`` reads each as the flow named)."""

from __future__ import annotations

import subprocess

import pytest

from test_ofwire_nx_golden import needs_ofctl
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Ct, CtNat, FlowMod, Match, Output, Rule, RuleError, WriteActions
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule

# name -> (xid, flow mod, golden bytes, what ovs-ofctl ofp-print shows)
GOLDEN = {
    "ftp": (0x91, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ip_proto=6, tcp_dst=21),
        (ApplyActions((Ct(commit=True, exec=(("ct_mark", 7, None),), alg="ftp"), Output(2))),), table=1, priority=5)),
        "040e008800000091000000000000000000000000000000000100000000000005ffffffffffffffffffffffff000000000001001580000a"
        "020800800014010680001c0200150000000004004000000000ffff00280000232000230001000000000000ff000000001500190010000"
        "1d60400000007000000000000001000000002ffff000000000000",
        "ADD table:1 priority=5,tcp,tp_dst=21 actions=ct(commit,exec(set_field:0x7->ct_mark),alg=ftp),output:2"),
    "tftp": (0x92, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD, ip_proto=17),
        (ApplyActions((Ct(commit=True, zone=5, table=2, alg="tftp"),)), WriteActions((Ct(alg="tftp"),))),
        table=1, priority=6)),
        "040e008000000092000000000000000000000000000000000100000000000006ffffffffffffffffffffffff000000000001000f80000a"
        "0286dd8000140111000004002000000000ffff001800002320002300010000000000050200000000450003002000000000ffff0018000"
        "0232000230000000000000000ff0000000045",
        "ADD table:1 priority=6,udp6 actions=ct(commit,table=2,zone=5,alg=tftp),write_actions(ct(alg=tftp))"),
    # ftpnat: an alg number (test_ct_alg_number.py: "ftp" with alg 80), alg=tftp beside a nat (test_ct_alg_nat.py)
    "80": (0x93, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ip_proto=6, tcp_dst=21),
        (ApplyActions((Ct(commit=True, exec=(("ct_mark", 7, None),), alg="80"), Output(2))),), table=1, priority=5)),
        "040e008800000093000000000000000000000000000000000100000000000005ffffffffffffffffffffffff000000000001001580000a"
        "020800800014010680001c0200150000000004004000000000ffff00280000232000230001000000000000ff000000005000190010000"
        "1d60400000007000000000000001000000002ffff000000000000",
        "ADD table:1 priority=5,tcp,tp_dst=21 actions=ct(commit,exec(set_field:0x7->ct_mark),alg=80),output:2"),
    "tftp beside a nat": (0x94, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ip_proto=17, udp_dst=69),
        (ApplyActions((Ct(commit=True, exec=(("ct_mark", 3, None),), nat=CtNat("src", 0x0A000064), alg="tftp"),
                       Output(2))),), table=1, priority=7)),
        "040e00a000000094000000000000000000000000000000000100000000000007ffffffffffffffffffffffff000000000001001580000a"
        "02080080001401118000200200450000000004005800000000ffff00400000232000230001000000000000ff0000000045ffff001800"
        "00232000240000000100010a00006400000000001900100001d60400000003000000000000001000000002ffff000000000000",
        "ADD table:1 priority=7,udp,tp_dst=69 actions=ct(commit,nat(src=10.0.0.100),exec(set_field:0x3->ct_mark),alg=tftp),output:2"),
    # ftpnat2: alg=ftp beside a nat (test_ct_alg_nat.py; dp-core's ct_alg_ftp_nat.rs)
    "ftp beside a nat": (0x95, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ip_proto=6, tcp_dst=21),
        (ApplyActions((Ct(commit=True, nat=CtNat("dst", 0x0A000002, port_min=2121), alg="ftp"), Output(2))),),
        table=1, priority=8)),
        "040e009000000095000000000000000000000000000000000100000000000008ffffffffffffffffffffffff000000000001001580000a"
        "020800800014010680001c0200150000000004004800000000ffff00300000232000230001000000000000ff0000000015ffff001800"
        "00232000240000000200110a000002084900000000001000000002ffff000000000000",
        "ADD table:1 priority=8,tcp,tp_dst=21 actions=ct(commit,nat(dst=10.0.0.2:2121),alg=ftp),output:2"),
    "ftp beside an IPv6 nat": (0x96, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD, ip_proto=6),
        (ApplyActions((Ct(commit=True, zone=3, nat=CtNat("src", 0x20010DB8 << 96 | 9, v6=True), alg="ftp"), Output(2))),),
        table=1, priority=9)),
        "040e009000000096000000000000000000000000000000000100000000000009ffffffffffffffffffffffff000000000001000f80000a"
        "0286dd8000140106000004005000000000ffff00380000232000230001000000000003ff0000000015ffff0020000023200024000000"
        "01000420010db80000000000000000000000090000001000000002ffff000000000000",
        "ADD table:1 priority=9,tcp6 actions=ct(commit,zone=3,nat(src=2001:db8::9),alg=ftp),output:2"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_ct_alg_flow_mod_matches_its_golden_bytes(name):
    xid, mod, raw, _ = GOLDEN[name]
    assert M.encode_flow_mod(xid, mod).hex() == raw
    assert M.decode_flow_mod(bytes.fromhex(raw)[8:]).mod == mod


@needs_ofctl
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_open_vswitch_reads_the_ct_alg_golden_bytes_as_the_same_flow(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", GOLDEN[name][2]], capture_output=True, text=True, check=True).stdout
    assert GOLDEN[name][3] in out, out


@pytest.mark.parametrize("text", [
    "table=1,priority=5,tcp,tp_dst=21,actions=ct(commit,exec(set_field:0x7->ct_mark),alg=ftp),output:2",
    "tcp6,actions=ct(alg=ftp),ct(commit,zone=NXM_NX_REG0[0..15],table=1,alg=ftp)",
    "udp,actions=ct(commit,force,table=2,alg=tftp),write_actions(ct(commit,alg=tftp))",
    "ip,nw_proto=17,actions=ct(commit,alg=tftp)",
])
def test_ct_alg_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("text, why", [
    ("udp,actions=ct(commit,alg=ftp)", "ct alg=ftp needs tcp in the match"),  # (OVS: MATCH_INCONSISTENT)
    ("ip,actions=ct(commit,alg=tftp)", "ct alg=tftp needs udp in the match"),
    ("tcp,actions=ct(commit,alg=http)", 'invalid conntrack helper "http"'),  # (as Open vSwitch says it)
    ("tcp,actions=ct(commit,alg=FTP)", 'invalid conntrack helper "FTP"'),
])
def test_bad_ct_alg_text_is_one_precise_error(text, why):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value)


def test_wire_alg_numbers():
    ftp = W.encode_action(Ct(commit=True, alg="ftp"))
    assert ftp[22:24] == (21).to_bytes(2, "big") and W.decode_actions(ftp) == [Ct(commit=True, alg="ftp")]
    # (any other number: kept as a number, run as no ALG: test_ct_alg_number.py)
    nat = W.encode_action(Ct(commit=True, nat=CtNat("src", 0x0A000001, 0x0A000001)))
    assert W.decode_actions(nat[:22] + (21).to_bytes(2, "big") + nat[24:]) == [  # (alg beside nat: ct_alg_ftp_nat.rs)
        Ct(commit=True, nat=CtNat("src", 0x0A000001, 0x0A000001), alg="ftp")]
    with pytest.raises(RuleError):
        Ct(commit=True, alg="sip")
