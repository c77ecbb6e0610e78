"""A PACKET_OUT's ``controller(meter_id=M)`` over the fake backend: what the endpoint asks
of ``Backend.meter_packet_in`` (which switch, which meter, which frame), that it sends
the packet-in only when the meter passes it, and one error (the reason logged) when the
switch cannot answer (oneswitch/packet_out_meter.py)."""

from endpoint_helpers import THREE_SWITCHES, OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.base import BackendError
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.meters import Meter, MeterBand, MeterMod
from tandem.rules.ofctl import parse_actions, parse_rule
from tandem.rules.ofwire_meter import encode_meter_mod

FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


async def _endpoint():
    topo = load_topology(THREE_SWITCHES)
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    port = await ep.listen("ptcp:0:127.0.0.1")
    return ep, backend, await OFClient.connect(port)


def _packet_out(c: OFClient, in_port: int, actions: str) -> None:
    c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(0xFFFFFFFF, in_port, tuple(parse_actions(actions)), FRAME)))


@async_test
async def test_the_meters_switch_meters_the_changed_frame_and_a_drop_sends_nothing():
    ep, backend, c = await _endpoint()
    try:
        c.send(encode_meter_mod(c.next_xid(), MeterMod("add", Meter(1, (MeterBand("drop", 1, 1),), pktps=True))))
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule("priority=5,in_port=3,actions=meter:1,output:1"))))
        _packet_out(c, 1, "push_vlan:0x8100,controller(meter_id=1,userdata=01),controller(meter_id=7,userdata=02)")
        msgs = await c.barrier()
        assert errors_in(msgs) == []
        # meter 1's rule runs on snic1 (virtual port 3): its budget; meter 7 does not exist: not asked
        assert [(sw, mid, len(f)) for sw, mid, f in backend.metered] == [("snic1", 1, len(FRAME) + 4)]
        assert [len(M.decode_packet_in(m.body).data) for m in msgs if m.type == W.OFPT_PACKET_IN] == [len(FRAME) + 4] * 2
        backend.dropping.add(("snic1", 1))
        _packet_out(c, 2, "controller(meter_id=1,userdata=01),clone(controller(meter_id=1,userdata=03)),output:3")
        msgs = await c.barrier()
        assert errors_in(msgs) == [] and not [m for m in msgs if m.type == W.OFPT_PACKET_IN]
        assert len(backend.metered) == 3
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_a_switch_that_does_not_answer_is_one_error_line():
    ep, backend, c = await _endpoint()

    async def silent(switch: str, meter_id: int, frame: bytes):
        raise BackendError(f"switch {switch} did not run meter {meter_id} on a packet-in within 5 s", switch)

    backend.meter_packet_in = silent
    try:
        c.send(encode_meter_mod(c.next_xid(), MeterMod("add", Meter(1, (MeterBand("drop", 1, 1),), pktps=True))))
        _packet_out(c, 1, "output:2,controller(meter_id=1)")
        msgs = await c.barrier()
        [(_, etype, code)] = errors_in(msgs)
        assert (etype, code) == (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM)
        assert [sw for sw, *_ in backend.sent] == ["snic0"]  # (the output before it went)
    finally:
        await ep.close()
        await backend.close()
