"""Packet-ins of flows after a ``ct`` action through OneSwitch, against one plain Open vSwitch
3.1 bridge side by side (the harness of ``test_packet_in_of_vs_ovs.py``), in OpenFlow 1.3's
PACKET_IN, NXT_PACKET_IN and NXT_PACKET_IN2: the match lists the tracker's state (ct_state
+trk+new, +est, +rpl, +inv; ct_zone, ct_mark, ct_label; the original direction's
ct_nw_*/ct_ipv6_*/ct_tp_* tuple) in Open vSwitch's order, byte for byte, for IPv4 and IPv6,
TCP, UDP and ICMP frames: a ``ct(commit,zone=Z,exec(…))`` then an output to CONTROLLER or a
``controller(…)``, and a ``ct(table=T)`` whose table T sends to CONTROLLER. The same against
OneSwitch over the emulator backend (dp-core's packet-ins)."""

from __future__ import annotations

import pytest

from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import WHERE, _packet_ins
from test_packet_in_of_vs_ovs import _both, _controllers
from tandem.rules import ofwire_msgs as M
from tandem.rules.generate_ct import _tcp_frame
from tandem.rules.ir import FieldMatch, FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from endpoint_helpers import emu_endpoint, errors_in

pytestmark = [pytest.mark.ovs]

FLOWS = [
    "table=0,priority=5,cookie=0x41,in_port=1,ip,actions=ct(commit,zone=5,exec(set_field:0x2a->ct_mark,"
    "set_field:0x1234->ct_label)),CONTROLLER:65535",
    "table=0,priority=5,cookie=0x42,in_port=1,ipv6,actions=ct(commit,exec(set_field:0x2b->ct_mark)),"
    "controller(userdata=01)",
    "table=0,priority=5,cookie=0x43,in_port=2,ip,actions=ct(table=1,zone=7)",
    "table=0,priority=5,cookie=0x44,in_port=2,ipv6,actions=ct(table=1)",
    "table=0,priority=5,cookie=0x45,in_port=3,ip,actions=ct(commit,table=2)",
    "table=0,priority=5,cookie=0x46,in_port=3,ipv6,actions=ct(commit,zone=9,table=2)",
    "table=0,priority=5,cookie=0x49,in_port=4,ip,actions=ct(commit,zone=3,table=1,exec(set_field:0x2a->ct_mark,"
    "set_field:0x1234->ct_label))",
    "table=1,priority=5,cookie=0x47,actions=CONTROLLER:65535",
    "table=2,priority=5,cookie=0x48,actions=controller(reason=action,userdata=02)",
]
A4, B4, A6, B6 = 0x0A000001, 0x0A000002, 0x20010DB8 << 96 | 1, 0x20010DB8 << 96 | 2
SYN, ACK = 0x02, 0x10


def _bad_checksum(frame: bytes) -> bytes:
    """``frame`` (IPv4 TCP) with its TCP checksum broken: Open vSwitch's tracker finds it invalid
    (dp-core's checks no checksum: the emulator's run leaves it out)."""
    return frame[:50] + bytes([frame[50] ^ 0xFF]) + frame[51:]


BAD = _bad_checksum(_tcp_frame(False, A4, B4, 2005, 80, 1, 0, SYN))


def _udp(v6: bool, src: int, dst: int, sport: int, dport: int) -> bytes:
    if v6:
        return build_frame(eth_type=0x86DD, ipv6_src=src, ipv6_dst=dst, ip_proto=17, udp_src=sport, udp_dst=dport)
    return build_frame(ipv4_src=src, ipv4_dst=dst, ip_proto=17, udp_src=sport, udp_dst=dport)


FRAMES = [  # (virtual in_port, frame), in order
    (1, _tcp_frame(False, A4, B4, 1000, 80, 1, 0, SYN)), (1, _udp(False, A4, B4, 1001, 53)),
    (1, _tcp_frame(True, A6, B6, 1002, 80, 1, 0, SYN)), (1, _udp(True, A6, B6, 1003, 53)),
    (2, _tcp_frame(False, A4, B4, 2000, 80, 1, 0, SYN)), (2, _tcp_frame(False, A4, B4, 2001, 80, 1, 7, ACK)),  # (an ACK alone: +new, measured)
    (2, _udp(False, A4, B4, 2002, 53)), (2, _udp(True, A6, B6, 2003, 53)),
    (2, _tcp_frame(True, A6, B6, 2004, 80, 1, 7, ACK)), (2, BAD),
    (4, _tcp_frame(False, A4, B4, 4000, 80, 1, 0, SYN)), (4, _udp(True, A6, B6, 4001, 53)),
    (4, _udp(True, B6, A6, 53, 4001)),
    # ICMP echoes: the original direction's ct_tp_src/ct_tp_dst are the type and code (code 0 listed)
    (2, build_frame(ipv4_src=A4, ipv4_dst=B4, ip_proto=1, icmpv4_type=8, icmpv4_code=0)),
    (3, build_frame(eth_type=0x86DD, ipv6_src=A6, ipv6_dst=B6, ip_proto=58, icmpv6_type=128, icmpv6_code=0)),
    # committed, then the reply (+est+rpl) and the original direction again (+est)
    (3, _udp(False, A4, B4, 3000, 53)), (3, _udp(False, B4, A4, 53, 3000)), (3, _udp(False, A4, B4, 3000, 53)),
    (3, _tcp_frame(False, A4, B4, 3001, 80, 100, 0, SYN)), (3, _tcp_frame(False, B4, A4, 80, 3001, 500, 101, SYN | ACK)),
    (3, _udp(True, A6, B6, 3002, 53)), (3, _udp(True, B6, A6, 53, 3002)),
    (3, _tcp_frame(True, A6, B6, 3003, 80, 100, 0, SYN)), (3, _tcp_frame(True, B6, A6, 80, 3003, 500, 101, SYN | ACK)),
]


async def _drive(port: int, inject, frames: list = FRAMES) -> list:
    cs = (await _controllers(port))[:3]  # OpenFlow's PACKET_IN, NXT_PACKET_IN2, NXT_PACKET_IN
    for text in FLOWS:
        cs[0].send(M.encode_flow_mod(cs[0].next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await cs[0].barrier()) == []
    for v, frame in frames:
        inject(v, frame)
    return [await _packet_ins(c) for c in cs]


async def _emulated() -> list:
    """``_drive`` against OneSwitch over the emulator backend (dp-core's switches)."""
    ep, backend = await emu_endpoint()
    try:
        def inject(v: int, frame: bytes) -> None:
            backend.inject(WHERE[v][0].removeprefix("tnd-"), WHERE[v][1], frame)
            backend.run_for(0.001)
        return await _drive(await ep.listen("ptcp:0:127.0.0.1"), inject, [(v, f) for v, f in FRAMES if f != BAD])
    finally:
        await ep.close()
        await backend.close()


def _differences(got_ovs: list, got: list) -> list:
    return [(i, a.hex(), b.hex()) for i, (want, have) in enumerate(zip(got_ovs, got)) for a, b in zip(want, have)
            if a != b] + [(i, len(want), len(have)) for i, (want, have) in enumerate(zip(got_ovs, got))
                          if len(want) != len(have)]


@async_test
async def test_packet_ins_after_ct_list_the_tracker_state_as_one_ovs_bridge():
    got_ovs, got_one = await _both(_drive)
    # (the two IPv6 frames into port 4's ct(commit,table=1,exec(set_field:0x1->ct_label)) send none, on both)
    assert [len(g) for g in got_ovs] == [len(FRAMES) - 2] * 3
    pins = [M.decode_packet_in(m[8:]).match for m in got_ovs[0]]
    assert {m.get("ct_state") for m in pins} == {None, *(FieldMatch(s, 0xFF) for s in (0x21, 0x22, 0x2A, 0x30))}
    assert {m.get("ct_tp_dst") for m in pins if m.get("ct_nw_proto") in (FieldMatch(1), FieldMatch(58))} == {FieldMatch(0)}
    assert _differences(got_ovs, got_one) == []
    without_bad = [[m for m in g if BAD not in m] for g in got_ovs]
    assert [len(g) for g in without_bad] == [len(FRAMES) - 3] * 3
    assert _differences(without_bad, await _emulated()) == []  # dp-core's packet-ins, through the same endpoint
