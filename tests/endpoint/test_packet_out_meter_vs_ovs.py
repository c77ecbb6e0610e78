"""A PACKET_OUT's ``controller(meter_id=M)`` through OneSwitch, against one plain Open
vSwitch 3.1 bridge side by side (the harness of ``test_packet_in_of_vs_ovs.py``): the same
meters, rules, frames and PACKET_OUTs on both; the same packet-ins, byte for byte and in
the order sent, and the same meter counters (oneswitch/packet_out_meter.py).

Measured on the bridge: the packet-in passes meter M when the PACKET_OUT runs, from the
bucket M's flows use (also inside a clone); a kb/s band charges the frame as changed so
far (a 122-byte frame passes a 1 kbit burst once; after push_vlan, 126 bytes, never); the
token is spent when nothing is sent too (a reason above 5, a controller id no connection
has); without meter M every packet-in goes. A pktps bucket refills at its rate while the
PACKET_OUTs go in, so a count may exceed the burst by ceil(rate x the seconds they took)."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from endpoint_helpers import errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import FRAME, _connect
from test_packet_in_of_vs_ovs import _both
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import Controller, FlowMod
from tandem.rules.meters import Meter, MeterBand, MeterMod
from tandem.rules.ofctl import parse_actions, parse_rule
from tandem.rules.ofwire_meter import decode_meter_stats, encode_meter_mod

pytestmark = [pytest.mark.ovs]


def _pktps(mid: int, rate: int, burst: int) -> Meter:
    return Meter(mid, (MeterBand("drop", rate, burst),), pktps=True, burst=True, stats=True)


async def _in_order(c, quiet: float = 1.0) -> list[bytes]:
    """Every packet-in ``c`` receives until it is quiet, in the order received."""
    out = []
    while True:
        try:
            m = await c.recv(timeout=quiet)
        except asyncio.TimeoutError:
            return out
        if m.type in (W.OFPT_PACKET_IN, W.OFPT_EXPERIMENTER):
            out.append(W.header(m.type, m.xid, m.body))


async def _run(port: int, meters: list, flows: list[str], steps: list, inject) -> tuple:
    """NXT_PACKET_IN2 and OpenFlow controllers, ``meters`` and ``flows`` added, then ``steps``
    ((in_port, actions, frame) PACKET_OUTs, or ("inject", v, n)): the packet-ins in order, each
    meter's (packet_in_count, band 0's packet count), and the seconds the steps took."""
    cs = [await _connect(port) for _ in range(2)]
    for c in cs:
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))
    cs[0].send(P.encode_set_packet_in_format(cs[0].next_xid(), P.NXPIF_NXT_PACKET_IN2))
    for c in cs:
        assert errors_in(await c.barrier()) == []
    sender = await _connect(port)
    for m in meters:
        sender.send(encode_meter_mod(sender.next_xid(), MeterMod("add", m)))
    for f in flows:
        sender.send(M.encode_flow_mod(sender.next_xid(), FlowMod("add", parse_rule(f))))
    assert errors_in(await sender.barrier()) == []
    t0 = time.monotonic()
    for step in steps:
        if step[0] == "inject":
            assert errors_in(await sender.barrier()) == []  # (the PACKET_OUTs before it have run)
            inject(step[1], FRAME, step[2])
            await asyncio.sleep(0.2)  # (the frames meet the meter before what comes next)
            continue
        in_port, acts, frame = step
        acts = tuple(parse_actions(acts)) if isinstance(acts, str) else acts
        sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, in_port, acts, frame)))
    assert errors_in(await sender.barrier()) == []
    took = time.monotonic() - t0
    pins = [await _in_order(c) for c in cs]
    counts = []
    for m in meters:
        reply = await sender.request(lambda x: S.encode_multipart_request(
            x, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=m.meter_id)), W.OFPT_MULTIPART_REPLY)
        [st] = decode_meter_stats(S.decode_multipart_reply(reply.body)[2])
        counts.append((st.packet_in_count, st.band_stats[0][0]))
    return pins, counts, took


def _userdata(pins: list[bytes]) -> list[bytes]:
    return [P.decode_packet_in2(m[8:]).userdata for m in pins]


async def _side_by_side(meters: list, flows: list[str], steps: list) -> list[tuple]:
    """(userdata of the NXT_PACKET_IN2 packet-ins in order, meter counts, seconds taken) of the
    bridge and of OneSwitch. Exact (byte for byte, in order, counters equal) when both took under
    0.9 s, as no rate-1 bucket regained a token then; else each side is held to its bounds."""
    runs: list[tuple] = []

    async def drive(port: int, inject) -> list:
        pins, counts, took = await _run(port, meters, flows, steps, inject)
        runs.append((counts, took))
        return pins

    got_ovs, got_one = await _both(drive)
    if max(took for _, took in runs) < 0.9:
        assert got_one == got_ovs
        assert runs[0][0] == runs[1][0]
    return [(_userdata(got[0]), counts, took) for got, (counts, took) in zip((got_ovs, got_one), runs)]


CONTROLLER = 0xFFFFFFFD


@async_test
async def test_a_burst_of_packet_outs_passes_the_meter_burst_in_order():
    # 12 PACKET_OUTs from ports on every switch and from CONTROLLER, through pktps meter 1 (rate 1,
    # burst 3), some inside a clone; meter 5 does not exist (every one goes); unmetered ones between
    steps = [(v, f"controller(meter_id=1,userdata={i:02x}),controller(userdata=f{i % 10:x}),"
                 f"clone(controller(meter_id=5,userdata=e{i % 10:x}))", FRAME) for i, v in enumerate([1, 2, 3, 4] * 2)]
    steps += [(CONTROLLER, f"clone(push_vlan:0x8100,controller(meter_id=1,userdata=c{i:x})),output:2", FRAME)
              for i in range(4)]
    for got, counts, took in await _side_by_side([_pktps(1, 1, 3)], [], steps):
        passed = [u for u in got if u[0] >> 4 in (0x0, 0xC)]  # (the metered ones: 00..07, c0..c3)
        assert 3 <= len(passed) <= 3 + math.ceil(took), (got, took)
        assert got[:3] == [b"\x00", b"\xf0", b"\xe0"]  # (in the order sent)
        assert len(got) - len(passed) == 16 and counts == [(12, 12 - len(passed))]


@async_test
async def test_the_packet_outs_spend_the_budget_of_the_snic_where_the_meters_rules_run():
    # meter 1's rule runs on snic0 (virtual port 2): two frames spend two of its three tokens, so one
    # PACKET_OUT packet-in passes (the host's bucket, full, would pass three); then the flow's own
    # controller(meter_id=1) packet-ins meet the bucket the PACKET_OUTs drained
    flows = ["table=0,priority=5,in_port=2,actions=meter:1,output:4",
             "table=0,priority=5,in_port=4,actions=controller(meter_id=1,userdata=aa),output:2"]
    steps = [("inject", 2, 2), *[(3, f"controller(meter_id=1,userdata={i:02x})", FRAME) for i in range(4)],
             ("inject", 4, 2)]
    for got, counts, took in await _side_by_side([_pktps(1, 1, 3)], flows, steps):
        assert got[:1] == [b"\x00"] and len(got) <= 1 + math.ceil(took), (got, took)
        assert counts[0] == (8, 8 - 2 - len(got))


@async_test
async def test_a_kbps_band_charges_the_frame_as_changed_and_tokens_go_to_packet_ins_that_send_nothing():
    frame = FRAME + bytes(122 - len(FRAME))  # 976 bits: a 1 kbit burst passes it once; 126 bytes never
    kbps = [Meter(m, (MeterBand("drop", 1, 1),), burst=True, stats=True) for m in (2, 3)]
    steps = [(1, "controller(meter_id=2,userdata=02)", frame), (1, "controller(meter_id=2,userdata=02)", frame),
             (2, "push_vlan:0x8100,controller(meter_id=3,userdata=03)", frame),
             (4, "clone(push_vlan:0x8100,controller(meter_id=3,userdata=03))", frame),
             # meter 4: reason 7 (sends nothing) and an id no controller has take the two tokens
             (3, (Controller(reason=7, meter_id=4), Controller(controller_id=9, meter_id=4),
                  Controller(meter_id=4, userdata=b"\x04")), FRAME)]
    for got, counts, took in await _side_by_side([*kbps, _pktps(4, 1, 2)], [], steps):
        if took < 0.9:  # (1 kbit/s refills a 976-bit frame in 0.976 s)
            assert got == [b"\x02"] and counts == [(2, 1), (2, 2), (3, 1)]
        assert counts[1] == (2, 2)  # (126 bytes never pass a 1 kbit bucket)


@pytest.mark.parametrize("run", ["run_dp", "run_translation"])
def test_random_packet_outs_with_metered_packet_ins_run_as_in_open_vswitch(run):
    """A bounded run of ``tandem bench packet_out_oracle -- --packet-ins --meters``: the same
    packet-ins and meter counters per batch (testing/packet_out_meters.py)."""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing import packet_out_oracle as PO

    with OvsSandbox() as sb:
        r = getattr(PO, run)(sb, 200, seed=3, packet_ins=True, meters=True)
    assert r.packet_outs >= 200 and r.metered > 50 and r.packet_ins > 100
    assert not r.mismatches, r.mismatches[0]


def test_the_oracle_names_meters_in_packet_ins_at_the_top_and_in_clones():
    import random

    from tandem.rules.ir import Clone
    from tandem.testing.packet_out_meters import metered_actions, with_meters

    acts = tuple(parse_actions("controller(userdata=01),clone(controller(id=2),clone(controller(reason=no_match))),output:1"))
    drawn = [with_meters(random.Random(s), acts) for s in range(40)]
    assert all(len(d) == 3 and type(d[1]) is Clone and d[2] == acts[2] for d in drawn)
    assert {metered_actions(d) for d in drawn} == {0, 1, 2, 3}
    assert metered_actions(parse_actions("controller(meter_id=9),clone(controller(meter_id=2))")) == 1  # (9: no such meter)
