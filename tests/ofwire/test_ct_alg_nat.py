"""``ct(commit,nat(...),alg=tftp)`` in ovs-ofctl text and on the wire (NXAST_CT with alg 69
and a nested NXAST_NAT); ``alg=ftp`` beside a nat stays refused (docs/endpoint.md). Its
golden bytes: test_ct_alg.py's GOLDEN, "tftp beside a nat"."""

from __future__ import annotations

import pytest

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it
from tandem.rules import ofwire as W
from tandem.rules.ir import Ct, CtNat, RuleError
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule


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
