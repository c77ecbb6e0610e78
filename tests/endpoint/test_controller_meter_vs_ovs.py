"""``controller(meter_id=M)`` and ``controller(reason=N)`` with N above 5 through OneSwitch,
against one plain Open vSwitch 3.1 bridge side by side (the harness of
``test_packet_in_of_vs_ovs.py``): the same controllers, the same rules sent to both as
binary FLOW_MODs (ovs-ofctl reads no reason above 5 back), the same frames.

Reasons (measured): 6 (Open vSwitch's explicit table miss) sends a packet-in with reason
``no_match``, passed by the async config's ``no_match`` bit; 7 and 8..255 send none,
whatever the async config. Compared byte for byte.

Meters: a pktps meter of rate 2 and burst 3 named by rules on the host's port 1 and on
snic0's port 2; 20 frames into each at once. One budget lets 3 packet-ins through plus
what the bucket refills while the frames go in (2 a second), on each side: so each count
must lie in 3 .. 3 + ceil(2 × the seconds the injection took), below the 6 two budgets
(one per switch: measured before the fast lane declined these rules) give while it takes
under a second. The virtual meter counts every packet-in it saw (40) and dropped, as the
bridge does."""

from __future__ import annotations

import math
import struct
import time

import pytest

from endpoint_helpers import errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import FRAME, WHERE, _connect, _packet_ins
from test_packet_in_of_vs_ovs import _both, _same
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, Controller, FlowMod, GotoTable, Match, Output, Rule, FieldMatch
from tandem.rules.meters import Meter, MeterBand, MeterMod
from tandem.rules.ofwire_meter import decode_meter_stats, encode_meter_mod

pytestmark = [pytest.mark.ovs]


def _rule(table: int, priority: int, cookie: int, in_port: int | None, *ins) -> Rule:
    match = Match((("in_port", FieldMatch(in_port)),)) if in_port is not None else Match(())
    return Rule(match, tuple(ins), table, priority, cookie)


REASON_RULES = [
    _rule(0, 5, 0x31, 1, ApplyActions((Controller(reason=6, subtype=20), Controller(reason=7), Controller(reason=8),
                                       Output(2)))),
    _rule(0, 5, 0x32, 2, ApplyActions((Controller(reason=6, userdata=b"\xaa"), Controller(reason=31, userdata=b"\xbb"))),
          GotoTable(1)),
    _rule(1, 0, 0x33, None, ApplyActions((Controller(reason=6, max_len=20, userdata=b"\xcc"), Controller(reason=9)))),
    _rule(0, 5, 0x34, 3, ApplyActions((Controller(reason=6, controller_id=7), Controller(reason=7, controller_id=7)))),
]
REASON_PACKET_OUT = (Controller(reason=6, userdata=b"\x09"), Controller(reason=7), Controller(reason=9, controller_id=7))


async def _controllers(port: int) -> list:
    """OpenFlow packet-ins (default async: no_match and action), NXT_PACKET_IN2, NXT_PACKET_IN2 with
    controller id 7, OpenFlow ones whose async config takes only action, only no_match, and every bit
    (6 and 7 too)."""
    cs = [await _connect(port) for _ in range(6)]
    for c in cs:
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))
    for c in cs[1:3]:
        c.send(P.encode_set_packet_in_format(c.next_xid(), P.NXPIF_NXT_PACKET_IN2))
    cs[2].send(P.encode_set_controller_id(cs[2].next_xid(), 7))
    for c, mask in ((cs[3], 0x2), (cs[4], 0x1), (cs[5], 0xFFFFFFFF)):
        c.send(W.header(W.OFPT_SET_ASYNC, c.next_xid(), struct.pack("!6I", mask, 0, 0x7, 0x7, 0xF, 0)))
    for c in cs:
        assert errors_in(await c.barrier()) == []
    return cs


@async_test
async def test_reasons_above_5_as_from_one_ovs_bridge():
    async def drive(port: int, inject) -> list:
        cs = await _controllers(port)
        sender = await _connect(port)  # (its barriers would swallow packet-ins)
        for r in REASON_RULES:
            sender.send(M.encode_flow_mod(sender.next_xid(), FlowMod("add", r)))
        assert errors_in(await sender.barrier()) == []
        for v in (1, 2, 3):
            inject(v, FRAME)
        sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, 4, REASON_PACKET_OUT, FRAME)))
        assert errors_in(await sender.barrier()) == []
        return [await _packet_ins(c) for c in cs]

    got_ovs, got_one = await _both(drive)
    # id 0: port 1 one (6), port 2 two (6, and 6 in table 1's miss flow), the PACKET_OUT one (6); id 7: port 3's 6
    assert [len(g) for g in got_ovs] == [4, 4, 1, 0, 4, 4]
    for m in got_ovs[0]:
        assert M.decode_packet_in(m[8:]).reason == 0  # no_match
    _same(got_ovs, got_one)


METER = Meter(1, (MeterBand("drop", 2, 3),), pktps=True, burst=True, stats=True)
METER_RULES = [
    _rule(0, 5, 0x41, 1, ApplyActions((Controller(meter_id=1, userdata=b"\x01"), Output(3)))),
    _rule(0, 5, 0x42, 2, ApplyActions((Controller(meter_id=1, userdata=b"\x02"), Output(4)))),
]
N = 20


async def _with_meter(port: int, rules: list) -> tuple:
    """The NXT_PACKET_IN2 controller and a sender, after METER and ``rules`` are added."""
    cs = await _controllers(port)
    c, sender = cs[1], await _connect(port)
    sender.send(encode_meter_mod(sender.next_xid(), MeterMod("add", METER)))
    for r in rules:
        sender.send(M.encode_flow_mod(sender.next_xid(), FlowMod("add", r)))
    return c, sender


@async_test
async def test_a_burst_of_metered_packet_ins_is_cut_as_by_one_ovs_bridge():
    outs: list[tuple] = []

    async def drive(port: int, inject) -> list:
        c, sender = await _with_meter(port, METER_RULES)
        assert errors_in(await sender.barrier()) == []
        t0 = time.monotonic()
        for v in (1, 2):
            inject(v, FRAME, N)
        took = time.monotonic() - t0
        pins = await _packet_ins(c)
        m = await sender.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=1)),
                            W.OFPT_MULTIPART_REPLY)
        [st] = decode_meter_stats(S.decode_multipart_reply(m.body)[2])
        outs.append((took, st))
        return [pins]

    got_ovs, got_one = await _both(drive)
    for (took, st), (pins,) in zip(outs, (got_ovs, got_one)):
        assert 3 <= len(pins) <= 3 + math.ceil(2 * took), (len(pins), took)
        assert (st.packet_in_count, st.band_stats[0][0]) == (2 * N, 2 * N - len(pins))
    assert got_one[0][:3] == got_ovs[0][:3]  # (the burst: port 1's first three, in the order sent)


# potail: meter ids above 0xffff0000 name no meter OneSwitch can hold (its METER_MOD takes 1..0xffff0000); Open
# vSwitch leaves such a packet-in unmetered while it has no meter of that id (its controller and slowpath meters
# can be configured over OpenFlow on one bridge, not on OneSwitch: refusal table)
RESERVED_RULES = [
    _rule(0, 5, 0x51, 1, ApplyActions((Controller(meter_id=0xFFFFFFFE, userdata=b"\x01"), Output(3)))),
    _rule(0, 5, 0x52, 2, ApplyActions((Controller(meter_id=0xFFFFFFFD, userdata=b"\x02"),
                                       Controller(meter_id=1, userdata=b"\x03")))),
    _rule(0, 5, 0x53, 3, ApplyActions((Controller(meter_id=0xFFFFFFFF), Controller(meter_id=0xFFFF0001, reason=0)))),
]
RESERVED_PACKET_OUT = (Controller(meter_id=0xFFFFFFFE, userdata=b"\x04"), Output(4))


@async_test
async def test_meter_ids_above_0xffff0000_pass_every_packet_in_as_one_ovs_bridge():
    async def drive(port: int, inject) -> list:
        c, sender = await _with_meter(port, RESERVED_RULES)
        for _ in range(3):
            sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, 2, RESERVED_PACKET_OUT,
                                                                               FRAME)))
        assert errors_in(await sender.barrier()) == []
        for v in (1, 2, 3):
            inject(v, FRAME, 10)
        return [await _packet_ins(c)]

    got_ovs, got_one = await _both(drive)
    # port 1: 10; port 2: 10 unmetered and 3 through meter 1 (burst 3); port 3: 2 x 10; the PACKET_OUTs: 3
    assert 10 + 10 + 3 + 20 + 3 <= len(got_ovs[0]) <= 10 + 10 + 5 + 20 + 3
    assert len(got_one[0]) == len(got_ovs[0])
    assert sorted(got_one[0]) == sorted(got_ovs[0])
