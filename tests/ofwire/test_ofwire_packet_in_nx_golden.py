"""Nicira's old NXT_PACKET_IN (packet-in format 1) with tunnel fields in its NXM match, against
the bytes Open vSwitch 3.1 sent (measured: a PACKET_OUT from port 1 writing the fields, then
output:CONTROLLER, to a connection that set format 1; tun_flags goes masked, NXM_NX_TUN_FLAGS_W
0x0001/0x0001, tunnel_id as NXM_NX_TUN_ID, metadata last as OXM). Side by side with a bridge:
tests/endpoint/test_packet_out_tunnel_packet_in_vs_ovs.py."""

import pytest

from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import FieldMatch, Match

FRAME = bytes.fromhex("020000000002020000000001080045000028000000004006000000000000000000000000") + bytes(range(30))
_HEAD = "ffffffff00420100ffffffffffffffff"  # (buffer id, total length 66, reason action, table 0, no cookie)

GOLDEN = [  # (state in the match after in_port=1; OVS's bytes before the frame)
    ({"tunnel_id": 5, "tun_src": 0x0A010101, "tun_dst": 0x0A010102, "reg1": 0x33},
     "0404009c000000000000232000000011" + _HEAD + "002a00000000000000000002000100012008000000000000000500013e04"
     "0a010101000140040a01010200010204000000330000000000000000"),
    ({"tun_ipv6_src": 0x20010DB8 << 96 | 1, "tun_ipv6_dst": 0x20010DB8 << 96 | 2},
     "0404009c000000000000232000000011" + _HEAD + "002e0000000000000000000200010001da1020010db800000000000000"
     "00000000010001dc1020010db800000000000000000000000200000000"),
    ({"tun_flags": (1, 1), "tun_dst": 0x0A010102},
     "04040084000000000000232000000011" + _HEAD + "00160000000000000000000200010001d10400010001000140040a0101"
     "0200000000"),
    ({"tun_gbp_id": 0x1234, "tun_gbp_flags": 5},
     "04040084000000000000232000000011" + _HEAD + "001100000000000000000002000100014c02123400014e010500000000"
     "0000000000"),
]


def _match(state: dict) -> list:
    return [(k, FieldMatch(*v) if isinstance(v, tuple) else FieldMatch(v)) for k, v in state.items()]


@pytest.mark.parametrize("state, before_frame", GOLDEN)
def test_old_packet_in_with_tunnel_fields_is_open_vswitchs(state, before_frame):
    raw = P.encode_nx_packet_in(0, P.WirePacketIn2(FRAME, len(FRAME), 0, 0xFFFF_FFFF_FFFF_FFFF, 1,
                                                   Match((("in_port", FieldMatch(1)), *_match(state)))))
    assert raw.hex() == before_frame + FRAME.hex()


def test_old_packet_in_orders_state_as_open_vswitch_whatever_the_match_order():
    """in_port, tunnel fields, registers, pkt_mark, metadata last (nx_put_raw), whichever order
    the match lists them in; every NXM header is one Open vSwitch reads back (no field dropped)."""
    state = {"metadata": 9, "pkt_mark": 7, "reg0": 1, "tun_gbp_id": 0xFFFF, "tun_flags": (1, 1)}
    raw = P.encode_nx_packet_in(0, P.WirePacketIn2(FRAME, len(FRAME), 0, 0xFFFF_FFFF_FFFF_FFFF, 1,
                                                   Match((*_match(state), ("in_port", FieldMatch(1))))))
    nxm = raw[40:40 + int.from_bytes(raw[32:34], "big")]
    assert nxm.hex() == ("0000000200010001d10400010001" "00014c02ffff" "0001000400000001" "0001420400000007"
                         "800004080000000000000009")
