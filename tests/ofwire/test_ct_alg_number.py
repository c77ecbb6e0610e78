"""``ct(alg=N)`` with an NXAST_CT alg number Open vSwitch 3.1 has no ALG for (any but 0,
21 and 69): OVS takes it on the wire with any IP protocol in the match and prints it
``alg=N`` (measured: ``ovs-ofctl dump-flows`` of a dummy bridge; its text parser reads
only ``ftp`` / ``tftp``, so the oracles send such flows on the wire). Tandem keeps the
number (``Ct.alg == "80"``), prints it as OVS does and reads its own print back; its
golden bytes are test_ct_alg.py's GOLDEN "80"."""

from __future__ import annotations

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import Ct, CtNat, FlowMod, RuleError, ct_alg_number
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule


@pytest.mark.parametrize("text", [
    "table=1,priority=5,tcp,tp_dst=21,actions=ct(commit,exec(set_field:0x7->ct_mark),alg=80),output:2",
    "udp6,actions=ct(commit,table=2,alg=2121),write_actions(ct(alg=65535))",
    "ip,actions=ct(commit,alg=1)",  # (no protocol needed: OVS checks only ftp's and tftp's)
    "ip,actions=ct(commit,nat(src=10.0.0.1),alg=20)",  # (beside a nat: OVS runs the nat alone)
])
def test_alg_number_text_and_wire_round_trip(text):
    rule = parse_rule(text)
    printed = format_rule(rule)
    assert "alg=" in printed and parse_rule(printed) == rule
    assert M.decode_flow_mod(M.encode_flow_mod(1, FlowMod("add", rule))[8:]).mod.rule == rule


@pytest.mark.parametrize("text, why", [
    ("tcp,actions=ct(commit,alg=21)", 'invalid conntrack helper "21"'),  # (21 and 69 are written ftp / tftp)
    ("udp,actions=ct(commit,alg=69)", 'invalid conntrack helper "69"'),
    ("tcp,actions=ct(commit,alg=0)", 'invalid conntrack helper "0"'),
    ("tcp,actions=ct(commit,alg=65536)", 'invalid conntrack helper "65536"'),
    ("tcp,actions=ct(commit,alg=080)", 'invalid conntrack helper "080"'),
])
def test_bad_alg_number_text_is_one_precise_error(text, why):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_wire_alg_numbers_decode_as_numbers_and_ftp_tftp_by_name():
    ftp = W.encode_action(Ct(commit=True, alg="ftp"))
    for port, alg in ((21, "ftp"), (69, "tftp"), (20, "20"), (80, "80"), (0xFFFF, "65535"), (0, None)):
        assert W.decode_actions(ftp[:22] + port.to_bytes(2, "big")) == [Ct(commit=True, alg=alg)]
    nat = W.encode_action(Ct(commit=True, nat=CtNat("src", 0x0A000001, 0x0A000001)))
    assert W.decode_actions(nat[:22] + (80).to_bytes(2, "big") + nat[24:])[0].alg == "80"
    assert [ct_alg_number(x) for x in ("80", "21", "69", "0", "65536", "080", "ftp", None, 80)] == [80] + [None] * 8
    with pytest.raises(RuleError):
        Ct(commit=True, alg="21")
