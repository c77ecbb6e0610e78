"""A packet-in's match after ``ct(commit,zone=3,table=1,exec(set_field:0x2a->ct_mark,
set_field:0x1234->ct_label))`` then CONTROLLER in table 1, in the three packet-in formats, as
Open vSwitch 3.1 sent them (captured from one bridge: tests/endpoint/test_packet_in_ct_vs_ovs.py):
in_port, eth_type, ct_state masked 0xff, ct_zone, ct_mark, ct_label, then the original
direction's addresses, protocol and ports; eth_type as NXM_OF_ETH_TYPE in NXT_PACKET_IN."""

from __future__ import annotations

from tandem.oneswitch.packet_in_ext import encode_for
from tandem.rules.ir import FieldMatch, Match
from tandem.rules.ofwire_packet_in2 import NXPIF_NXT_PACKET_IN, NXPIF_NXT_PACKET_IN2

FRAME = bytes.fromhex("02000000000202000000000108004500002800004000400626ce0a0000010a0000020fa000500000000100000000"
                      "5002ffff8bef0000000000000000")
MATCH = Match((("in_port", FieldMatch(4)), ("ct_label", FieldMatch(0x1234)), ("ct_tp_dst", FieldMatch(80)),
               ("ct_nw_proto", FieldMatch(6)), ("ct_state", FieldMatch(0x21, 0xFF)), ("eth_type", FieldMatch(0x0800)),
               ("ct_nw_dst", FieldMatch(0x0A000002)), ("ct_zone", FieldMatch(3)), ("ct_tp_src", FieldMatch(4000)),
               ("ct_mark", FieldMatch(0x2A)), ("ct_nw_src", FieldMatch(0x0A000001))))
OVS = {  # packet-in format -> Open vSwitch 3.1's message
    0: (
        "040a00be00000000ffffffff003c0101000000000000004700010061800000040000000480000a0208000001d3080000"
        "0021000000ff0001d40200030001d6040000002a0001d810000000000000000000000000000012340001f0040a000001"
        "0001f2040a0000020001ee01060001f8020fa00001fa0200500000000000000000000200000000020200000000010800"
        "4500002800004000400626ce0a0000010a0000020fa0005000000001000000005002ffff8bef0000000000000000"
    ),
    NXPIF_NXT_PACKET_IN2: (
        "040400d800000000000023200000001e0000004002000000000202000000000108004500002800004000400626ce0a00"
        "00010a0000020fa0005000000001000000005002ffff8bef000000000000000000030005010000000004001000000000"
        "0000000000000047000500050100000000060061800000040000000480000a0208000001d30800000021000000ff0001"
        "d40200030001d6040000002a0001d810000000000000000000000000000012340001f0040a0000010001f2040a000002"
        "0001ee01060001f8020fa00001fa02005000000000000000"
    ),
    NXPIF_NXT_PACKET_IN: (
        "040400c6000000000000232000000011ffffffff003c01010000000000000047005b0000000000000000000200040000"
        "060208000001d30800000021000000ff0001d40200030001d6040000002a0001d8100000000000000000000000000000"
        "12340001f0040a0000010001f2040a0000020001ee01060001f8020fa00001fa02005000000000000000020000000002"
        "02000000000108004500002800004000400626ce0a0000010a0000020fa0005000000001000000005002ffff8bef0000"
        "000000000000"
    ),
}


def test_the_ct_fields_of_a_packet_in_are_laid_out_as_open_vswitch_sends_them():
    for fmt, want in OVS.items():
        got = encode_for(fmt, len(FRAME), 0xFFFF_FFFF, 1, 1, 0x47, MATCH, FRAME, b"")
        assert got.hex() == want, f"format {fmt}"
