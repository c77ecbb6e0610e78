"""NXT_PACKET_IN2, NXT_SET_PACKET_IN_FORMAT and NXT_SET_CONTROLLER_ID on the wire
(their bytes against Open vSwitch's are checked in tests/endpoint/test_packet_in2_vs_ovs.py)."""

import struct

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import Match


def test_packet_in2_round_trip_and_optional_properties():
    full = P.WirePacketIn2(b"\1" * 20, 20, 3, 0x77, 1, Match.of(in_port=2, reg1=5), b"\xaa\xbb")
    cut = P.WirePacketIn2(b"\2" * 10, 64, 0, 0xFFFF_FFFF_FFFF_FFFF, 0, Match.of(in_port=1))
    for pi in (full, cut):
        raw = P.encode_packet_in2(0, pi)
        assert struct.unpack_from("!BBH", raw) == (4, W.OFPT_EXPERIMENTER, len(raw)) and len(raw) % 8 == 0
        assert P.decode_packet_in2(raw[8:]) == pi
    assert b"\x00\x01\x00\x08\x00\x00\x00\x40" in P.encode_packet_in2(0, cut)  # NXPINT_FULL_LEN only when cut
    assert struct.pack("!HH", 4, 16) not in P.encode_packet_in2(0, cut)  # no cookie when no rule matched


def test_set_messages_round_trip_and_bad_lengths():
    assert P.decode_set_packet_in_format(P.encode_set_packet_in_format(1, 2)[8:]) == 2
    assert P.decode_set_controller_id(P.encode_set_controller_id(1, 513)[8:]) == 513
    with pytest.raises(W.OFError):
        P.decode_set_controller_id(P.encode_set_packet_in_format(1, 2)[8:])
    with pytest.raises(W.OFError, match="length"):
        P.decode_packet_in2(struct.pack("!IIHH", 0x2320, 30, 0, 200))
