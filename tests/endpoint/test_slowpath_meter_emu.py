"""OpenFlow's slowpath meter (0xfffffffd) over the emulator backend: a meter like any other
(Open vSwitch 3.1 runs it for ``controller(meter_id=0xfffffffd)`` only, measured:
``test_slowpath_meter_vs_ovs.py``), held by dp-core on every emulated switch, one budget
through the port extension and the PACKET_OUT probe. In modelled time, so exact: a pktps
meter of rate 2 burst 3 named by rules on the host's port 1 and snic0's port 2, 20 frames
into each within 10 ms: 3 packet-ins in all; a plain ``controller`` flow on snic1 is not
metered; after a modelled second (2 tokens) 2 of 3 PACKET_OUT packet-ins pass."""

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_controller_meter_emu import FRAME, _packet_ins, _rule
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import Controller, FlowMod, Output
from tandem.rules.meters import OFPM_SLOWPATH, Meter, MeterBand, MeterMod
from tandem.rules.ofwire_meter import OFPMMFC_METER_EXISTS, decode_meter_stats, encode_meter_config, encode_meter_mod

SLOWPATH = Meter(OFPM_SLOWPATH, (MeterBand("drop", 2, 3),), pktps=True, burst=True, stats=True)


@async_test
async def test_slowpath_meter_is_one_budget_in_modelled_time_on_the_emulator():
    ep, backend = await emu_endpoint()
    port = await ep.listen("ptcp:0:127.0.0.1")
    c, s = await OFClient.connect(port), await OFClient.connect(port)  # (packet-ins read on c; s's barriers)
    s.send(encode_meter_mod(s.next_xid(), MeterMod("add", SLOWPATH)))
    assert errors_in(await s.barrier()) == []
    s.send(encode_meter_mod(s.next_xid(), MeterMod("add", SLOWPATH)))
    assert [e[1:] for e in errors_in(await s.barrier())] == [(W.OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS)]
    for r in (_rule(1, Controller(meter_id=OFPM_SLOWPATH, userdata=b"\1"), Output(3)),
              _rule(2, Controller(meter_id=OFPM_SLOWPATH, userdata=b"\2"), Output(4)),
              _rule(3, Controller(userdata=b"\3"))):
        s.send(M.encode_flow_mod(s.next_xid(), FlowMod("add", r)))
    assert errors_in(await s.barrier()) == []
    assert ep.state.topo.port_map[2].switch == "host"  # extended: the slowpath meter's rules run on one switch
    reply = await s.request(lambda x: S.encode_multipart_request(
        x, S.MultipartRequest(S.OFPMP_METER_CONFIG, 0, meter_id=OFPM_SLOWPATH)), W.OFPT_MULTIPART_REPLY)
    assert S.decode_multipart_reply(reply.body)[2] == encode_meter_config(SLOWPATH)
    emu, dev = backend.machine.emu, backend.machine.devices
    at = backend.now_s * 1e9
    for i in range(20):  # (times in ns)
        emu.inject(("switch", dev["host"], 1), FRAME, at + i * 2.5e5)
        emu.inject(("switch", dev["snic0"], 1), FRAME, at + i * 2.5e5 + 1e5)
    for i in range(4):
        emu.inject(("switch", dev["snic1"], 1), FRAME, at + i * 1e6)
    backend.run_for(0.01)
    assert len(backend.take_output("snic1", 1)) == 20 and len(backend.take_output("snic0", 2)) == 20
    got = await _packet_ins(c)
    assert sorted(pi.match.get("in_port").value for pi in got) == [1, 1, 2, 3, 3, 3, 3]
    backend.run_for(1.0)  # two tokens refilled
    for _ in range(3):
        s.send(M.encode_packet_out(s.next_xid(), M.WirePacketOut(
            W.OFP_NO_BUFFER, 4, (Controller(meter_id=OFPM_SLOWPATH, userdata=b"\4"),), FRAME)))
    assert errors_in(await s.barrier()) == []
    assert len(await _packet_ins(c)) == 2
    reply = await s.request(lambda x: S.encode_multipart_request(
        x, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=OFPM_SLOWPATH)), W.OFPT_MULTIPART_REPLY)
    [st] = decode_meter_stats(S.decode_multipart_reply(reply.body)[2])
    assert (st.flow_count, st.packet_in_count, st.byte_in_count, st.band_stats) == (
        0, 43, 43 * len(FRAME), ((38, 38 * len(FRAME)),))
    s.send(encode_meter_mod(s.next_xid(), MeterMod("delete", Meter(OFPM_SLOWPATH))))
    assert errors_in(await s.barrier()) == []
    assert OFPM_SLOWPATH not in ep.meters
    await ep.close()
    await backend.close()
