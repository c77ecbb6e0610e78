"""Open vSwitch's ``tun_flags`` (NXM_NX_TUN_FLAGS, issue 15): its flag syntax in text
(``+oam``, ``-oam``, ``oam``, numbers), the wire (16 bits, one public flag; a mask's
other bits are dropped as Open vSwitch drops them), and the errors OVS gives for
flags it does not know."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from tandem.rules import ofwire as W
from tandem.rules.ir import FieldMatch, Match, MoveField, SetField, Subfield
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule

sys.path.insert(0, str(Path(__file__).parents[1] / "ofwire"))
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402


@pytest.mark.parametrize("text", [
    "tun_flags=+oam,actions=set_field:0->tun_flags,output:1",
    "table=1,tun_flags=-oam,tun_gbp_flags=0x5,actions=set_field:oam->tun_flags,goto_table:2",
    "tun_flags=oam,actions=load:0x1->NXM_NX_TUN_FLAGS[],move:NXM_NX_TUN_FLAGS[]->NXM_NX_REG0[7],output:2",
    "actions=move:NXM_NX_REG0[3]->NXM_NX_TUN_FLAGS[0],push:NXM_NX_TUN_FLAGS[],pop:NXM_NX_TUN_FLAGS[],output:3",
])
def test_text_and_wire_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("spelling, value", [
    ("+oam", 1), ("oam", 1), ("0x1", 1), ("0x1/0x1", 1), ("1", 1), ("-oam", 0), ("0", 0), ("0/1", 0),
])
def test_every_spelling_ovs_takes_is_one_exact_match(spelling, value):
    rule = parse_rule(f"tun_flags={spelling},actions=drop")
    assert rule.match == Match.of(tun_flags=value)
    assert format_rule(rule) == f"table=0,priority=32768,tun_flags={'oam' if value else '0'},actions=drop"


def test_set_field_and_load_write_the_one_bit():
    acts = parse_rule("actions=set_field:oam->tun_flags,set_field:+oam->tun_flags,load:1->NXM_NX_TUN_FLAGS[]").apply_actions
    assert acts[0] == acts[1] == SetField("tun_flags", 1)
    assert acts[2] in (SetField("tun_flags", 1), SetField("tun_flags", 1, 1))
    mv = parse_rule("actions=move:NXM_NX_REG0[3]->NXM_NX_TUN_FLAGS[]").apply_actions[0]
    assert mv == MoveField(Subfield("reg0", 3, 1), Subfield("tun_flags", 0, 1))


@pytest.mark.parametrize("text, words", [
    ("tun_flags=2,actions=drop", "tun_flags"),  # ovs-ofctl: "2: unknown tunnel flag(s)"
    ("tun_flags=+bfd,actions=drop", "bfd"),
    ("tun_flags=+oam-oam,actions=drop", "twice"),  # ovs-ofctl: "Each tunnel flag can be specified only once"
    ("actions=load:2->NXM_NX_TUN_FLAGS[]", "does not fit 1 bits"),
    ("actions=move:NXM_NX_TUN_FLAGS[]->NXM_NX_REG0[0..15]", "bits"),
])
def test_what_ovs_refuses_gets_one_precise_error(text, words):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert words in str(e.value) and len(str(e.value).strip().splitlines()) == 1


def _nxm(value: bytes, mask: bytes | None = None) -> bytes:
    return struct.pack("!I", 1 << 16 | 104 << 9 | (mask is not None) << 8 | len(value + (mask or b""))) + value + (mask or b"")


def test_the_wire_is_16_bits_and_a_wider_mask_is_cut_to_the_flag():
    assert W.encode_match(Match.of(tun_flags=1)) == struct.pack("!HH", 1, 10) + _nxm(b"\0\1") + bytes(6)
    fields, _ = W.decode_oxm(_nxm(b"\0\1", b"\xff\xff"))
    assert fields == [("tun_flags", FieldMatch(1))]
    with pytest.raises(W.OFError) as e:  # (as Open vSwitch: bits beyond the public flags are a bad value)
        W.decode_oxm(_nxm(b"\0\2"))
    assert (e.value.etype, e.value.code) == (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_VALUE)
