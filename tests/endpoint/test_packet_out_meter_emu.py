"""A PACKET_OUT's ``controller(meter_id=M)`` over the emulator backend: the endpoint's
packet-in passes meter M of the emulated switch where M's rules run (dp-core
``Pipeline::meter_packet_in``; oneswitch/packet_out_meter.py), in modelled time, so the
counts are exact: one budget with the flows' meter instruction, the bucket's refill, the
meter's counters, and a DSCP-remark band remarking the packet-in's frame."""

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_controller_meter_emu import _packet_ins
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import FlowMod
from tandem.rules.meters import Meter, MeterBand, MeterMod
from tandem.rules.ofctl import parse_actions, parse_rule
from tandem.rules.ofwire_meter import decode_meter_stats, encode_meter_mod

# IPv4 with DSCP AF11 (10): a remark band raises it to AF12 (12)
FRAME = bytes.fromhex("020000000002020000000001080045280014000000004001000000000000000000000000")


async def _meter_counts(c: OFClient, mid: int) -> tuple:
    reply = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=mid)),
                            W.OFPT_MULTIPART_REPLY)
    [st] = decode_meter_stats(S.decode_multipart_reply(reply.body)[2])
    return st.packet_in_count, st.band_stats[0][0]


def _packet_out(c: OFClient, in_port: int, actions: str) -> None:
    c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(0xFFFFFFFF, in_port, tuple(parse_actions(actions)), FRAME)))


@async_test
async def test_packet_out_packet_ins_spend_the_budget_of_the_meters_switch_in_modelled_time():
    ep, backend = await emu_endpoint()
    port = await ep.listen("ptcp:0:127.0.0.1")
    c, s = await OFClient.connect(port), await OFClient.connect(port)  # (packet-ins read on c; s's barriers)
    s.send(encode_meter_mod(s.next_xid(), MeterMod("add", Meter(1, (MeterBand("drop", 1, 3),), pktps=True, burst=True,
                                                                  stats=True))))
    s.send(M.encode_flow_mod(s.next_xid(), FlowMod("add", parse_rule("priority=5,in_port=2,actions=meter:1,output:4"))))
    assert errors_in(await s.barrier()) == []
    emu, dev = backend.machine.emu, backend.machine.devices
    for i in range(2):  # virtual port 2 is snic0's port 1: two of the three tokens
        emu.inject(("switch", dev["snic0"], 1), FRAME, backend.now_s * 1e9 + i * 1e5)
    backend.run_for(0.001)
    assert len(backend.take_output("snic0", 2)) == 2
    for i in range(4):  # from ports on three switches and from CONTROLLER, one in a clone
        _packet_out(s, [1, 3, 4, 0xFFFFFFFD][i], f"controller(meter_id=1,userdata=0{i}),output:2" if i < 3
                    else "clone(controller(meter_id=1,userdata=03))")
    assert errors_in(await s.barrier()) == []
    got = await _packet_ins(c)
    assert [pi.match.get("in_port").value for pi in got] == [1]  # (the one token left; the host's bucket is full)
    backend.run_for(0.001)
    assert len(backend.take_output("snic0", 1)) == 3  # (output:2 goes on: virtual port 2)
    backend.run_for(1.0)  # one token refilled
    for _ in range(2):
        _packet_out(s, 3, "controller(meter_id=1)")
    assert errors_in(await s.barrier()) == []
    assert len(await _packet_ins(c)) == 1
    assert await _meter_counts(s, 1) == (8, 4)
    await ep.close()
    await backend.close()


@async_test
async def test_a_dscp_remark_band_remarks_the_packet_out_packet_in():
    ep, backend = await emu_endpoint()
    port = await ep.listen("ptcp:0:127.0.0.1")
    c, s = await OFClient.connect(port), await OFClient.connect(port)  # (packet-ins read on c; s's barriers)
    s.send(encode_meter_mod(s.next_xid(), MeterMod("add", Meter(2, (MeterBand("dscp_remark", 1, 1, 1),), pktps=True,
                                                                  burst=True, stats=True))))
    assert errors_in(await s.barrier()) == []
    for _ in range(2):
        _packet_out(s, 1, "controller(meter_id=2),output:3")
    assert errors_in(await s.barrier()) == []
    got = await _packet_ins(c)
    assert [pi.data[15] >> 2 for pi in got] == [10, 12]  # AF11, then AF12 (over the one-packet burst)
    backend.run_for(0.001)
    assert [f[15] >> 2 for f in backend.take_output("snic1", 1)] == [10, 10]  # (the frames themselves as sent)
    assert await _meter_counts(s, 2) == (2, 1)
    await ep.close()
    await backend.close()
