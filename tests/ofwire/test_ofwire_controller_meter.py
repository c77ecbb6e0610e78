"""Open vSwitch's ``controller(meter_id=M)`` and ``controller(reason=N)`` with N above 5:
ovs-ofctl text (meter_id both ways; a reason above 5 has no text form ovs-ofctl reads,
so it is refused with one precise line) and the wire with golden bytes. The meter_id
golden bytes are Open vSwitch 3.1's own encoding (``ovs-ofctl parse-flow``); those of
the reasons above 5, which ovs-ofctl cannot parse, are Tandem's, and ``ovs-ofctl
ofp-print`` must read them as it prints them (``reason=`` for 6 and 7, ``reason=N``
above)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from test_ofwire_controller import ovs_encoding, ovs_printed
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Controller, FlowMod, Match, Output, Rule, RuleError, sent_reason
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule

GOLDEN = Path(__file__).parent / "golden"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

METERED_TEXT = ("controller(meter_id=1),controller(reason=no_match,max_len=100,id=3,userdata=aa,meter_id=7),"
                "controller(id=9,meter_id=4294901760)")
METERED = (Controller(meter_id=1), Controller(100, 3, 0, b"\xaa", meter_id=7), Controller(controller_id=9, meter_id=0xFFFF0000))
REASONS = (Controller(reason=6, subtype=20), Controller(reason=7, subtype=37), Controller(reason=8, controller_id=2),
           Controller(reason=255, userdata=b"\1\2", meter_id=4))
REASONS_PRINTED = "controller(reason=),controller(reason=),controller(reason=8,id=2),controller(reason=255,userdata=01.02,meter_id=4)"


def _golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / name).read_text().strip())


def _ofp_print(actions: tuple) -> str:
    raw = M.encode_flow_mod(7, FlowMod("add", Rule(Match(()), (ApplyActions(actions),), priority=3)))
    return subprocess.run(["ovs-ofctl", "ofp-print", raw.hex()], capture_output=True, text=True, check=True).stdout


def test_meter_id_text_reads_and_prints_as_ovs_ofctl_does():
    r = parse_rule("actions=" + METERED_TEXT)
    assert r.instructions[0].actions == METERED
    assert all(a.subtype == 37 for a in METERED)  # (a meter_id needs NXAST_CONTROLLER2)
    assert format_rule(r).split("actions=")[1] == METERED_TEXT
    # 0 is Open vSwitch 3.1's "no meter" (ovs-ofctl reads controller(meter_id=0) as CONTROLLER:65535)
    assert parse_rule("actions=controller(id=2,meter_id=0)").instructions[0].actions == (Controller(controller_id=2),)
    assert parse_rule("actions=controller(meter_id=0)").instructions[0].actions == (Output(0xFFFFFFFD),)


@needs_ofctl
def test_ovs_ofctl_prints_the_same_meter_id_text():
    assert ovs_printed(METERED_TEXT) == METERED_TEXT


def test_meter_id_wire_matches_the_golden_bytes_and_reads_back():
    gold = _golden("actions_nx_controller_meter.hex")
    assert W.encode_actions(METERED) == gold
    assert tuple(W.decode_actions(gold)) == METERED


@needs_ofctl
def test_meter_id_golden_bytes_are_open_vswitchs_own_encoding():
    assert ovs_encoding(METERED_TEXT) == _golden("actions_nx_controller_meter.hex")


def test_reasons_above_5_wire_matches_the_golden_bytes_and_reads_back():
    gold = _golden("actions_nx_controller_reasons.hex")
    assert W.encode_actions(REASONS) == gold
    assert tuple(W.decode_actions(gold)) == REASONS
    # a reason byte above 5 in either Nicira action, as Open vSwitch takes it
    plain9 = struct.pack("!HHIHHHBx", 0xFFFF, 16, 0x2320, 20, 0xFFFF, 0, 9)
    assert W.decode_actions(plain9) == [Controller(reason=9, subtype=20)]


@needs_ofctl
def test_open_vswitch_prints_the_reasons_above_5_as_tandem_does():
    assert "actions=" + REASONS_PRINTED in _ofp_print(REASONS)
    assert format_rule(Rule(Match(()), (ApplyActions(REASONS),))).split("actions=")[1] == REASONS_PRINTED


def test_sent_reason_is_open_vswitchs():
    assert [sent_reason(n) for n in (0, 1, 5, 6, 7, 8, 255)] == [0, 1, 5, 0, None, None, None]
    with pytest.raises(RuleError, match="0..255"):
        Controller(reason=256)


@pytest.mark.parametrize("text, why", [
    ("controller(reason=6)", "reason 6: reasons above 5 .* come on the wire only; ovs-ofctl names none"),
    ("controller(reason=)", "reason 6 or 7 .*: reasons above 5"),
    ("controller(reason=200,id=3)", "reason 200"),
])
def test_text_refusals_are_one_precise_error(text, why):
    with pytest.raises(OfctlSyntaxError, match=why) as e:
        parse_rule("actions=" + text)
    assert "\n" not in str(e.value)


# meter ids above 0xffff0000 (Open vSwitch's slowpath 0xfffffffd and controller 0xfffffffe meters, OFPM_ALL and
# ids no meter has), as ovs-ofctl reads, prints and encodes them (golden bytes: its own encoding)
RESERVED_TEXT = ("controller(meter_id=4294967295),controller(id=3,meter_id=4294967294),controller(meter_id=4294967293),"
                 "controller(meter_id=4294901761)")
RESERVED = (Controller(meter_id=0xFFFFFFFF), Controller(controller_id=3, meter_id=0xFFFFFFFE),
            Controller(meter_id=0xFFFFFFFD), Controller(meter_id=0xFFFF0001))


def test_meter_ids_above_0xffff0000_read_print_and_encode_as_open_vswitch():
    r = parse_rule("actions=" + RESERVED_TEXT)
    assert r.instructions[0].actions == RESERVED
    assert format_rule(r).split("actions=")[1] == RESERVED_TEXT
    assert parse_rule("actions=controller(meter_id=0xfffffffe)").instructions[0].actions == (RESERVED[1].__class__(
        meter_id=0xFFFFFFFE),)
    gold = _golden("actions_nx_controller_meter_reserved.hex")
    assert W.encode_actions(RESERVED) == gold
    assert tuple(W.decode_actions(gold)) == RESERVED
    with pytest.raises(OfctlSyntaxError, match="meter_id"):
        parse_rule("actions=controller(meter_id=4294967296)")


@needs_ofctl
def test_meter_ids_above_0xffff0000_as_ovs_ofctl_prints_and_encodes_them():
    assert ovs_printed(RESERVED_TEXT) == RESERVED_TEXT
    assert ovs_encoding(RESERVED_TEXT) == _golden("actions_nx_controller_meter_reserved.hex")


def test_wire_meter_id_0_is_no_meter():
    body = struct.pack("!IH6x", 0x2320, 37) + struct.pack("!HHI", 5, 8, 0)
    assert W.decode_actions(struct.pack("!HH", 0xFFFF, 4 + len(body)) + body) == [Controller(subtype=37)]


@needs_ofctl
def test_ovs_ofctl_reads_meter_id_0_as_no_meter():
    assert ovs_printed("controller(id=2,meter_id=0)") == "controller(id=2)"
