"""``controller(pause)`` (NXAC2PT_PAUSE) and the pause's packet-in and NXT_RESUME: ovs-ofctl
text both ways (pause printed after userdata, before meter_id; ``controller(pause)`` is no
output to CONTROLLER), the action's wire bytes (Open vSwitch 3.1's own encoding, measured with
``ovs-ofctl parse-flow``), and an NXT_PACKET_IN2 with its NXPINT_CONTINUATION as Open vSwitch 3.1
sent it (captured from a bridge: ``load:5->reg0,controller(pause,userdata=aa.bb)``) read and
written back byte for byte, its properties sent back as NXT_RESUME."""

from __future__ import annotations

import shutil

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import Controller
from tandem.rules.ofctl import format_actions, parse_actions
from test_ofwire_controller import ovs_encoding, ovs_printed

needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

CASES = [  # text as ovs-ofctl prints it, the action, Open vSwitch 3.1's bytes
    ("controller(pause)", Controller(pause=True), "ffff00180000232000250000000000000004000400000000"),
    ("controller(max_len=20,userdata=aa.bb,pause,meter_id=3)",
     Controller(20, userdata=b"\xaa\xbb", meter_id=3, pause=True),
     "ffff0030000023200025000000000000000000080014000000030006aabb000000040004000000000005000800000003"),
    ("controller(reason=no_match,id=7,pause)", Controller(controller_id=7, reason=0, pause=True),
     "ffff0028000023200025000000000000000100080007000000020005000000000004000400000000"),
]
# an NXT_PACKET_IN2 of a pause (Open vSwitch 3.1's bytes, after the OpenFlow header)
PAUSED = bytes.fromhex(
    "000023200000001e00000046020000000002020000000001080045000028000000004006000000000000000000000000000102030405"
    "060708090a0b0c0d0e0f101112131415161718191a1b1c1d0000000300050000000000040010000000000000000000000011000500050100"
    "0000000600148000000400000001000100040000000500000000000800700000000080000014d95508bdcd4a172748c2498a603304600000"
    "00008006004800000000ffff0018000023200007001f000102040000000000000006ffff001800002320001b000000010004002000000000"
    "0000ffff001000002320000efff801000000800800080000000100070006aabb0000")


@pytest.mark.parametrize("text, action, golden", CASES)
def test_text_and_wire_as_open_vswitch(text, action, golden):
    assert tuple(parse_actions(text)) == (action,)
    assert format_actions([action]) == text
    assert W.encode_actions([action]).hex() == golden
    assert tuple(W.decode_actions(bytes.fromhex(golden))) == (action,)


@needs_ofctl
@pytest.mark.parametrize("text, action, golden", CASES)
def test_golden_bytes_are_ovs_ofctls(text, action, golden):
    assert ovs_encoding(text).hex() == golden
    assert ovs_printed(text) == text


def test_paused_packet_in_reads_and_writes_back_byte_for_byte():
    pi = P.decode_packet_in2(PAUSED)
    assert (pi.table_id, pi.cookie, pi.reason, pi.userdata) == (0, 0x11, 1, b"\xaa\xbb")
    assert pi.continuation[:8] == bytes.fromhex("0000000080000014")  # (padding, then NXCPT_BRIDGE: the bridge's UUID)
    assert len(pi.continuation) == 108 and pi.match.get("reg0").value == 5
    assert P.encode_packet_in2(0, pi)[8:] == PAUSED
    resume = P.encode_resume(9, pi)
    assert resume[:16] == W.header(W.OFPT_EXPERIMENTER, 9, resume[16:] + bytes(8))[:8] + bytes.fromhex("000023200000001c")
    assert resume[16:] == PAUSED[8:] and P.decode_resume(resume[8:]) == pi
