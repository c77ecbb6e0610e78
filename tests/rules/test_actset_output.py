"""Open vSwitch's ``actset_output`` match field (issue 15): text (a port number, a
reserved port's name, or UNSET), the wire (ONF's experimenter OXM 43, exact, 32
bits), and the errors Open vSwitch gives for a mask or a number that is no port."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from tandem.rules import ofwire as W
from tandem.rules.actset_output import OFPP_UNSET
from tandem.rules.ir import OFPP_CONTROLLER, OFPP_LOCAL, FieldMatch, Match
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule

sys.path.insert(0, str(Path(__file__).parents[1] / "ofwire"))
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402


@pytest.mark.parametrize("text", [
    "table=1,actset_output=3,actions=output:1",
    "table=2,priority=9,ip,actset_output=UNSET,actions=write_actions(output:2),goto_table:3",
    "table=1,actset_output=LOCAL,actions=clear_actions",
    "table=3,actset_output=CONTROLLER,reg0=5,actions=drop",
    "actset_output=65279,actions=drop",
])
def test_text_and_wire_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("spelling, value", [
    ("3", 3), ("0x3", 3), ("unset", OFPP_UNSET), ("UNSET", OFPP_UNSET), ("local", OFPP_LOCAL),
    ("CONTROLLER", OFPP_CONTROLLER),
])
def test_every_spelling_is_one_exact_match(spelling, value):
    rule = parse_rule(f"table=1,actset_output={spelling},actions=drop")
    assert rule.match == Match.of(actset_output=value)
    shown = {OFPP_UNSET: "UNSET", OFPP_LOCAL: "LOCAL", OFPP_CONTROLLER: "CONTROLLER"}.get(value, str(value))
    assert format_rule(rule) == f"table=1,priority=32768,actset_output={shown},actions=drop"


@pytest.mark.parametrize("text, words", [
    ("actset_output=3/0xff,actions=drop", "cannot be masked"),
    ("actset_output=bogus,actions=drop", "actset_output"),
    ("actions=set_field:3->actset_output", "actset_output"),
])
def test_what_ovs_refuses_gets_one_precise_error(text, words):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert words in str(e.value) and len(str(e.value).strip().splitlines()) == 1


def _onf(value: int, mask: int | None = None) -> bytes:
    body = struct.pack("!I", value) + (b"" if mask is None else struct.pack("!I", mask))
    return struct.pack("!II", 0xFFFF << 16 | 43 << 9 | (mask is not None) << 8 | 4 + len(body), 0x4F4E4600) + body


def test_the_wire_is_onf_experimenter_oxm_43():
    assert W.encode_match(Match.of(actset_output=3)) == struct.pack("!HH", 1, 16) + _onf(3)
    fields, _ = W.decode_oxm(_onf(OFPP_UNSET))
    assert fields == [("actset_output", FieldMatch(OFPP_UNSET))]


@pytest.mark.parametrize("oxm, code", [
    (_onf(0xFF00), W.OFPBMC_BAD_VALUE),  # (Open vSwitch: "port 65280 is outside the supported range")
    (_onf(0x10000), W.OFPBMC_BAD_VALUE),
    (_onf(3, 0xFF), W.OFPBMC_BAD_MASK),
])
def test_what_ovs_refuses_on_the_wire_it_refuses_with_the_same_error(oxm, code):
    with pytest.raises(W.OFError) as e:
        W.decode_oxm(oxm)
    assert (e.value.etype, e.value.code) == (W.OFPET_BAD_MATCH, code)
