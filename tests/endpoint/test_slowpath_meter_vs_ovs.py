"""OpenFlow's slowpath meter (0xfffffffd) through OneSwitch, against one plain Open vSwitch
3.1 bridge side by side (the harness of ``test_packet_in_of_vs_ovs.py``): the same METER_MODs,
rules, frames and PACKET_OUTs on both (oneswitch/controller_meter.py).

Measured on the bridge (userspace datapath): METER_MOD add, modify and delete of it are
taken like meter 1's (a second add is METER_EXISTS); METER_CONFIG and METER show it; it
meters the packet-ins of ``controller(meter_id=0xfffffffd)`` (a flow's, a PACKET_OUT's)
and nothing else: plain ``controller`` flows, invalid_ttl packet-ins and PACKET_OUT
packet-ins left its counters at 0 (the bridge has no slow-pathed datapath flow to meter);
deleted, the rules naming it send every packet-in. So OneSwitch holds it as a meter like
any other: on every physical switch, the port extension keeping the rules that name it on
one switch, a PACKET_OUT's packet-in probed through the switch holding its budget.

A pktps bucket of burst 4 refills at rate 1 while the frames and PACKET_OUTs go in, so the
count of packet-ins it passes lies in 4 .. 4 + ceil(the seconds they took), below the 8
that two budgets would pass."""

from __future__ import annotations

import math
import time

import pytest

from endpoint_helpers import errors_in
from test_controller_meter_vs_ovs import _controllers, _rule
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import FRAME, _connect, _free_port, _packet_ins
from test_packet_in_of_vs_ovs import _both
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ir import ApplyActions, Controller, DecTtl, FieldMatch, FlowMod, Match, Output, Rule
from tandem.rules.meters import OFPM_ALL, OFPM_SLOWPATH, Meter, MeterBand, MeterMod
from tandem.rules.ofwire_meter import OFPMMFC_METER_EXISTS, decode_meter_stats, encode_meter_mod

pytestmark = [pytest.mark.ovs]

SLOWPATH = Meter(OFPM_SLOWPATH, (MeterBand("drop", 2, 3),), pktps=True, burst=True, stats=True)
MODIFIED = Meter(OFPM_SLOWPATH, (MeterBand("drop", 1, 4),), pktps=True, burst=True, stats=True)
RULES = [  # virtual ports 1 (host) and 2 (snic0) name it; 3 (snic1) sends plain packet-ins
    _rule(0, 5, 0x61, 1, ApplyActions((Controller(meter_id=OFPM_SLOWPATH, userdata=b"\x01"), Output(3)))),
    _rule(0, 5, 0x62, 2, ApplyActions((Controller(meter_id=OFPM_SLOWPATH, userdata=b"\x02"), Output(4)))),
    _rule(0, 5, 0x63, 3, ApplyActions((Controller(userdata=b"\x03"),))),
]
PACKET_OUT = (Controller(meter_id=OFPM_SLOWPATH, userdata=b"\x04"), Output(1))
N, N_PLAIN, N_OUT = 10, 5, 6


async def _multipart(c, kind: int, mid: int) -> bytes:
    m = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(kind, 0, meter_id=mid)),
                        W.OFPT_MULTIPART_REPLY)
    return S.decode_multipart_reply(m.body)[2]


@async_test
async def test_slowpath_meter_mod_config_stats_and_one_budget_as_one_ovs_bridge():
    outs: list[tuple] = []

    async def drive(port: int, inject) -> list:
        c, sender = (await _controllers(port))[1], await _connect(port)  # (NXT_PACKET_IN2: userdata)
        sender.send(encode_meter_mod(sender.next_xid(), MeterMod("add", SLOWPATH)))
        assert errors_in(await sender.barrier()) == []
        sender.send(encode_meter_mod(sender.next_xid(), MeterMod("add", SLOWPATH)))
        exists = errors_in(await sender.barrier())
        sender.send(encode_meter_mod(sender.next_xid(), MeterMod("modify", MODIFIED)))
        for r in RULES:
            sender.send(M.encode_flow_mod(sender.next_xid(), FlowMod("add", r)))
        assert errors_in(await sender.barrier()) == []
        config = await _multipart(sender, S.OFPMP_METER_CONFIG, OFPM_SLOWPATH)
        t0 = time.monotonic()
        inject(1, FRAME, N)
        inject(2, FRAME, N)
        inject(3, FRAME, N_PLAIN)
        for _ in range(N_OUT):
            sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, 4, PACKET_OUT, FRAME)))
        assert errors_in(await sender.barrier()) == []
        took = time.monotonic() - t0
        pins = await _packet_ins(c)
        [st] = decode_meter_stats(await _multipart(sender, S.OFPMP_METER, OFPM_SLOWPATH))
        sender.send(encode_meter_mod(sender.next_xid(), MeterMod("delete", Meter(OFPM_SLOWPATH))))
        assert errors_in(await sender.barrier()) == []
        left = await _multipart(sender, S.OFPMP_METER_CONFIG, OFPM_ALL)
        inject(1, FRAME, N_PLAIN)  # (deleted: the rule naming it sends every packet-in)
        after = await _packet_ins(c)
        outs.append((took, st, pins))
        return [[e[1:] for e in exists], config, left, after]

    got_ovs, got_one = await _both(drive)
    assert got_ovs[0] == [(W.OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS)]
    assert got_ovs[1][4:8] == OFPM_SLOWPATH.to_bytes(4, "big") and got_ovs[2] == b""
    assert len(got_ovs[3]) == N_PLAIN
    assert got_one == got_ovs  # errors, METER_CONFIG bytes, the table after the delete, the packet-ins after it
    for took, st, pins in outs:
        assert st.flow_count == 0 and st.packet_in_count == 2 * N + N_OUT, st
        passed = 2 * N + N_OUT - st.band_stats[0][0]
        assert 4 <= passed <= 4 + math.ceil(took), (passed, took)
        assert len(pins) == passed + N_PLAIN, (len(pins), passed)
        assert st.byte_in_count == (2 * N + N_OUT) * len(FRAME)


CONTROLLER_METER = Meter(0xFFFFFFFE, (MeterBand("drop", 2, 3),), pktps=True, burst=True, stats=True)
METER_1 = Meter(1, (MeterBand("drop", 2, 3),), pktps=True, burst=True, stats=True)


@async_test
async def test_what_ovs_controller_meter_meters_which_oneswitch_refuses():
    """The measurements behind the refusal row of OpenFlow's controller meter (docs/endpoint.md):
    on one bridge it meters the packet-ins of a plain ``controller`` flow, of
    ``controller(meter_id=5)`` added while meter 5 did not exist, of a PACKET_OUT's CONTROLLER
    and invalid_ttl ones (counted though no controller takes them), not those meter 1 meters;
    the slowpath meter beside it counts none of them."""
    ttl1 = FRAME[:22] + b"\x01" + FRAME[23:]
    rules = [Rule(Match((("in_port", FieldMatch(p)), ("eth_type", FieldMatch(0x0800)))), (ApplyActions(acts),), 0, 5, 0)
             for p, acts in ((1, (Output(0xFFFFFFFD),)), (2, (Controller(meter_id=1),)), (3, (DecTtl(), Output(4))),
                             (4, (Controller(meter_id=5),)))]
    counts = []
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2, 3, 4])
        port = _free_port()  # (no inactivity probe: the connections answer no echo while the buckets refill)
        sb.vsctl("--", "--id=@c", "create", "Controller", f"target=\"ptcp:{port}:127.0.0.1\"", "enable_async_messages=true",
                 "inactivity_probe=0", "--", "set", "Bridge", "plain", "controller=@c")
        c, sender = (await _controllers(port))[0], await _connect(port)  # (OpenFlow 1.3's async config: no invalid_ttl)
        for m in (CONTROLLER_METER, SLOWPATH, METER_1):
            sender.send(encode_meter_mod(sender.next_xid(), MeterMod("add", m)))
        for r in rules:
            sender.send(M.encode_flow_mod(sender.next_xid(), FlowMod("add", r)))
        assert errors_in(await sender.barrier()) == []

        async def burst(send) -> None:
            await _packet_ins(c, quiet=2.0)  # (the buckets refill: 2 a second, burst 3)
            send()
            got = await _packet_ins(c)
            stats = {st.meter_id: (st.packet_in_count, st.band_stats[0][0])
                     for st in decode_meter_stats(await _multipart(sender, S.OFPMP_METER, OFPM_ALL))}
            counts.append((len(got), stats))

        for p in (1, 2, 3, 4):
            await burst(lambda p=p: sb.inject("plain", p, [ttl1 if p == 3 else FRAME] * 20))

        def packet_outs() -> None:
            for _ in range(20):
                sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, 1, (Output(0xFFFFFFFD),),
                                                                                   FRAME)))
        await burst(packet_outs)
    ctl = [st[0xFFFFFFFE] for _, st in counts]
    assert [n for n, _ in counts] == [3, 3, 0, 3, 3]
    assert ctl == [(20, 17), (20, 17), (40, 34), (60, 51), (80, 68)]  # (meter 1's burst: not the controller meter's)
    assert counts[-1][1][1] == (20, 17) and counts[-1][1][OFPM_SLOWPATH] == (0, 0)
