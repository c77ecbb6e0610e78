"""``ct(commit,nat(...),alg=tftp|ftp)`` in ovs-ofctl text and on the wire (NXAST_CT with alg 69
or 21 and a nested NXAST_NAT), taken by the text parser, the wire codec and the IR alike.
Golden bytes: test_ct_alg.py's GOLDEN, "tftp beside a nat", "ftp beside a nat" and "ftp
beside an IPv6 nat"."""

from __future__ import annotations

import pytest

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it
from tandem.rules import ofwire as W
from tandem.rules.ir import Ct, CtNat
from tandem.rules.ofctl import parse_rule


@pytest.mark.parametrize("text", [
    "table=1,priority=7,udp,udp_dst=69,actions=ct(commit,nat(src=10.0.0.100),exec(set_field:0x3->ct_mark),alg=tftp),output:2",
    "udp6,actions=ct(commit,nat(dst=[2001:db8::8]:69),alg=tftp)",
    "udp,actions=ct(table=1,nat,alg=tftp)",
    # ftpnat2
    "table=1,priority=7,tcp,tp_dst=21,actions=ct(commit,nat(src=10.0.0.100),exec(set_field:0x3->ct_mark),alg=ftp),output:2",
    "tcp6,actions=ct(commit,nat(dst=[2001:db8::8]:2121),alg=ftp)",
    "tcp,actions=ct(table=1,nat,alg=ftp)",
])
def test_alg_nat_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_ftp_beside_a_nat_is_taken_in_text_wire_and_ir():
    ct = Ct(commit=True, nat=CtNat("src", 0x0A000001), alg="ftp")
    assert parse_rule("tcp,actions=ct(commit,nat(src=10.0.0.1),alg=ftp)").apply_actions == (ct,)
    raw = W.encode_action(ct)
    assert W.decode_actions(raw) == [ct]
    assert W.decode_actions(raw[:22] + (69).to_bytes(2, "big") + raw[24:]) == [Ct(commit=True, nat=CtNat("src", 0x0A000001), alg="tftp")]
