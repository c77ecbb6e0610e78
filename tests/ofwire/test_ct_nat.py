"""The ``nat`` of ``ct`` in ovs-ofctl text and on the wire (rules/ct_nat.py), as
Open vSwitch 3.1 writes them, and where it is refused: OneSwitch's translator, the
endpoint and dp-core's conversion (no tracker here runs network address
translation). Golden bytes and Open vSwitch's reading of them: test_ofwire_ct.py."""

from __future__ import annotations

import struct

import pytest

from tandem.rules import ofwire as W
from tandem.rules.ct_nat import decode_nat, encode_nat, format_nat, parse_nat
from tandem.rules.ir import Ct, CtNat, FlowMod, RuleError
from tandem.rules.ofctl import parse_rule

FORMS = {
    "nat": CtNat(),
    "nat(src)": CtNat("src"),
    "nat(dst=10.0.0.1)": CtNat("dst", 0x0A000001),
    "nat(src=10.0.0.1-10.0.0.9:1000-2000,random)": CtNat("src", 0x0A000001, 0x0A000009, port_min=1000, port_max=2000,
                                                       random=True),
    "nat(dst=[::1]:80,persistent,hash)": CtNat("dst", 1, v6=True, port_min=80, persistent=True, hash=True),
    "nat(src=[fe80::1]-[fe80::2])": CtNat("src", 0xFE80 << 112 | 1, 0xFE80 << 112 | 2, True),
}


@pytest.mark.parametrize("text", sorted(FORMS))
def test_nat_text_and_wire_round_trip(text):
    n = FORMS[text]
    assert parse_nat(text) == n and format_nat(n) == text
    raw = encode_nat(n)
    assert len(raw) % 8 == 0 and struct.unpack_from("!HHIH", raw) == (0xFFFF, len(raw), 0x2320, 36)
    assert decode_nat(raw) == n


def test_one_address_or_port_is_written_as_one():
    assert format_nat(parse_nat("nat(src=10.0.0.1-10.0.0.1:5-5)")) == "nat(src=10.0.0.1:5)"
    assert format_nat(parse_nat("nat(src,persistent)")) == "nat(src)"  # (OVS keeps flags only beside a range)
    # layout: flags src|random, range ipv4 min|max|port min, then the values
    assert encode_nat(CtNat("src", 1, 2, port_min=7, random=True)) == struct.pack(
        "!HHIH2xHHIIH6x", 0xFFFF, 32, 0x2320, 36, 1 | 16, 1 | 2 | 16, 1, 2, 7)


@pytest.mark.parametrize("raw, why", [
    (struct.pack("!HHIH2xHH", 0xFFFF, 16, 0x2320, 36, 3, 0), "both src and dst"),
    (struct.pack("!HHIH2xHH", 0xFFFF, 16, 0x2320, 36, 1, 1), "cut short"),
    (struct.pack("!HHIH2xHHII", 0xFFFF, 24, 0x2320, 36, 1, 3, 9, 2), "below its start"),
    (struct.pack("!HHIH2xHH", 0xFFFF, 16, 0x2320, 36, 0x40, 0), "unknown flags"),
])
def test_bad_nat_bytes_are_one_error(raw, why):
    with pytest.raises(RuleError, match=why):
        decode_nat(raw)


def test_nat_is_refused_by_the_translator_and_by_dp_core():
    from tandem.dataplane.convert import action_args
    from tandem.oneswitch.ids import TranslationError
    from tandem.oneswitch.state import OneSwitchState
    from tandem.testing.ct_oracle import ct_topologies

    rule = parse_rule("ip,actions=ct(commit,nat(src=10.0.0.1)),output:1")
    assert W.decode_actions(W.encode_action(rule.apply_actions[0])) == [rule.apply_actions[0]]
    with pytest.raises(TranslationError, match="network address translation") as e:
        OneSwitchState(ct_topologies()["k3"]).apply(FlowMod("add", rule))
    assert e.value.of_error == (2, 3)  # BAD_ACTION/BAD_EXP_TYPE
    with pytest.raises(ValueError, match="network address translation"):
        action_args(Ct(nat=CtNat()))
