"""``controller(meter_id=M)`` and wire reasons above 5 over the emulator backend: dp-core
runs the physical action (its packet-in through the emulated switch's meter M), the port
extension keeps every rule naming M on one switch, and the endpoint sends reason 6 as
``no_match`` and nothing for 7 and above. In modelled time: a pktps meter of rate 2
burst 3 named by rules on the host's port 1 and snic0's port 2, 20 frames into each
within 10 ms: exactly 3 packet-ins in all (one bucket; two would pass 6), and every
frame goes on."""

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, Controller, FieldMatch, FlowMod, Match, Output, Rule
from tandem.rules.meters import Meter, MeterBand, MeterMod
from tandem.rules.ofwire_meter import encode_meter_mod

FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


def _rule(in_port: int, *actions) -> Rule:
    return Rule(Match((("in_port", FieldMatch(in_port)),)), (ApplyActions(actions),), 0, 5, 0x50 + in_port)


async def _packet_ins(c: OFClient) -> list:
    out = []
    while True:
        x = c.next_xid()
        c.send(M.encode_echo_request(x, b""))
        msgs = await c.until(W.OFPT_ECHO_REPLY, x)
        got = [M.decode_packet_in(m.body) for m in msgs if m.type == W.OFPT_PACKET_IN]
        if not got:
            return out
        out += got


@async_test
async def test_metered_packet_ins_are_one_budget_and_reasons_above_5_as_open_vswitch_on_the_emulator():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    c.send(encode_meter_mod(c.next_xid(), MeterMod("add", Meter(1, (MeterBand("drop", 2, 3),), pktps=True, burst=True))))
    for r in (_rule(1, Controller(meter_id=1, userdata=b"\1"), Output(3)),
              _rule(2, Controller(meter_id=1, userdata=b"\2"), Output(4)),
              _rule(4, Controller(reason=6, userdata=b"\6"), Controller(reason=7), Controller(reason=31))):
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
    assert errors_in(await c.barrier()) == []
    assert ep.state.topo.port_map[2].switch == "host"  # extended: meter 1's rules run on one switch
    emu, dev = backend.machine.emu, backend.machine.devices
    at = backend.now_s * 1e9
    for i in range(20):  # (times in ns)
        emu.inject(("switch", dev["host"], 1), FRAME, at + i * 2.5e5)
        emu.inject(("switch", dev["snic0"], 1), FRAME, at + i * 2.5e5 + 1e5)
    emu.inject(("switch", dev["snic0"], 2), FRAME, at + 6e6)  # virtual port 4: reasons 6, 7, 31
    backend.run_for(0.01)
    assert len(backend.take_output("snic1", 1)) == 20 and len(backend.take_output("snic0", 2)) == 20
    got = await _packet_ins(c)
    # one bucket of 3: the first three frames, port 1, port 2, port 1 in modelled time
    assert sorted((pi.match.get("in_port").value, pi.reason) for pi in got) == [(1, 1), (1, 1), (2, 1), (4, M.OFPR_NO_MATCH)]
    await ep.close()
    await backend.close()
