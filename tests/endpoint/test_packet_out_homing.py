"""Homing on demand at the endpoint (oneswitch/packet_out_whole.py), on the fake backend:
a NORMAL PACKET_OUT homes every sNIC port; the ports go back before the next FLOW_MOD; a
backend that cannot build port pairs refuses the PACKET_OUT with nothing changed; the
counters a move carried are dropped with their rule (carried_counters.py)."""

from __future__ import annotations

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.carried_counters import add_carried, drop
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.packet_out_whole import ports_to_home
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import OFPP_CONTROLLER, OFPP_NORMAL, FlowMod, Output
from tandem.rules.ofctl import parse_actions, parse_rule
from tandem.testing.packet_out_oracle import TOPOLOGY

FRAME = bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(46)
NORMAL_PO = M.WirePacketOut(W.OFP_NO_BUFFER, OFPP_CONTROLLER, (Output(OFPP_NORMAL),), FRAME)


async def _start(pairs: bool = True):
    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    backend = make_backend("fake")
    if not pairs:
        backend.extension_pairs = False
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    return ep, backend, c


def _away(ep) -> list[int]:
    return sorted(v for v, ref in ep.state.topo.port_map.items() if ref.switch != ep.state.topo.host)


def test_the_predicate_asks_for_ports_only_for_normal_while_some_are_away():
    ep = type("Ep", (), {})()
    ep.groups, ep.backend = {}, object()
    ep.state = OneSwitchState(Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"]))
    assert ports_to_home(ep, parse_actions("output:2,set_field:5->reg0,output:3")) == []
    assert ports_to_home(ep, parse_actions("push_vlan:0x8100,NORMAL")) == [2, 3, 4]


@async_test
async def test_a_normal_packet_out_homes_the_ports_which_go_back_before_the_next_flow_mod():
    ep, backend, c = await _start()
    try:
        c.send(M.encode_packet_out(c.next_xid(), NORMAL_PO))
        assert errors_in(await c.barrier()) == []
        assert _away(ep) == [] and sorted(ep.state.extensions) == [2, 3, 4]
        c.send(M.encode_packet_out(c.next_xid(), NORMAL_PO))  # (homed: nothing moves again)
        assert errors_in(await c.barrier()) == [] and sorted(ep.state.extensions) == [2, 3, 4]
        # the next FLOW_MOD: the ports go back first, and the rule is checked and translated as without the homing
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule("priority=3,in_port=2,actions=output:3"))))
        assert errors_in(await c.barrier()) == []
        assert _away(ep) == [2, 3, 4] and not ep.state.extensions and not ep.homed_on_demand
        # a rule that homes them (ct) keeps them there: nothing goes back for it
        c.send(M.encode_packet_out(c.next_xid(), NORMAL_PO))
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule("priority=4,ip,actions=ct(commit),output:3"))))
        assert errors_in(await c.barrier()) == [] and _away(ep) == []
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_a_backend_without_port_pairs_refuses_the_packet_out_and_nothing_moves():
    ep, backend, c = await _start(pairs=False)
    try:
        c.send(M.encode_packet_out(c.next_xid(), NORMAL_PO))
        assert [e[1:] for e in errors_in(await c.barrier())] == [(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT)]
        assert _away(ep) == [2, 3, 4] and not ep.state.extensions
    finally:
        await ep.close()
        await backend.close()


def test_carried_counters_are_added_and_dropped_with_their_rule():
    ep = type("Ep", (), {})()
    ep.carried = {("k",): (3, 180)}
    assert add_carried(ep, {("k",): (1, 60), ("j",): (2, 2)}) == {("k",): (4, 240), ("j",): (2, 2)}
    drop(ep, ("k",))
    assert add_carried(ep, {("k",): (1, 60)}) == {("k",): (1, 60)}
