"""``output(port=P,max_len=N)`` in a PACKET_OUT (oneswitch/endpoint_trunc.py): Open vSwitch
cuts the frame as last committed; the endpoint follows those commits and sends each cut
frame as it is. Measured cases through OneSwitch over OVS bridges (the bounded run of
``tandem bench packet_out_oracle -- --truncs`` is in test_packet_out_clone.py)."""

from __future__ import annotations

import asyncio

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint_trunc import trunc_problem
from tandem.rules.ofctl import parse_actions

pytestmark = [pytest.mark.ovs]


def test_what_a_packet_out_holding_output_trunc_may_not_hold_is_named():
    assert trunc_problem(parse_actions("push_vlan:0x8100,output:3,output(port=2,max_len=20)")) is None
    assert trunc_problem(parse_actions("output:1,group:1")) is None  # (no output_trunc)
    assert trunc_problem(parse_actions("push_vlan:0x8100,clone(clone(output(port=2,max_len=20)),output:3)")) is None
    for text in ("output(port=2,max_len=20),group:1", "clone(output(port=2,max_len=20)),group:1",
                 "output(port=2,max_len=20),bundle(eth_src,0,hrw,ofport,members:2,3)",
                 "clone(output(port=2,max_len=20)),output:NXM_NX_REG0[0..15]"):  # (test_packet_out_trunc_commits)
        assert trunc_problem(parse_actions(text)) is None, text
    for text in ("output(port=2,max_len=20),output:TABLE", "output(port=2,max_len=20),output:NORMAL"):
        why = trunc_problem(parse_actions(text))
        assert why and why.startswith("output(port=P,max_len=N) in a PACKET_OUT that holds"), text


def test_measured_cuts_through_oneswitch():
    """push_vlan then output(port=2,max_len=20) sends 24 bytes (the push comes after the cut);
    after an output that commits the push, 20; around clones as Open vSwitch 3.1 commits."""
    from tandem.testing.packet_out_oracle import TOPOLOGY, _Conn, _packet_out
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology

    frame = bytes.fromhex("020000000002020000000001080045000028000000004006") + bytes(42)
    cases = {"push_vlan:0x8100,output(port=2,max_len=20)": [24], "push_vlan:0x8100,output:3,output(port=2,max_len=20)":
             [20], "output(port=2,max_len=20),push_vlan:0x8100,output(port=4,max_len=20)": [20, 24],
             # clones, measured on OVS 3.1 (endpoint_trunc.py): a last clone runs inline, any other holding
             # output_trunc commits first; a datapath clone's own last clone runs inline too
             "push_vlan:0x8100,clone(output(port=2,max_len=20))": [24],
             "push_vlan:0x8100,clone(output(port=2,max_len=20)),note:01": [20],
             "output(port=4,max_len=30),push_vlan:0x8100,clone(output(port=2,max_len=20))": [24, 30],
             "clone(output(port=2,max_len=64),push_vlan:0x8100,clone(output(port=4,max_len=24))),output:3": [64, 28],
             "push_vlan:0x8100,clone(clone(output(port=2,max_len=20))),output:3": [20],
             "clone(push_vlan:0x8100,output:3),output(port=2,max_len=20)": [16],
             # (a cut below 14 bytes sends nothing, nor any later frame to that port)
             "output:2,clone(push_vlan:0x8100,output:3),output(port=2,max_len=17),output:4,output:2": [66, 66]}
    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    with OvsSandbox() as sb:
        async def go() -> dict:
            backend = OvsBackend(sandbox=sb)
            await backend.start(layout_for(topo))
            ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
            c = await _Conn(*await asyncio.open_connection("127.0.0.1", await ep.listen("ptcp:0:127.0.0.1"))).hello()
            got = {}
            wires = {v: (f"tnd-{w.switch}", w.port) for v, w in topo.port_map.items()}
            for text in cases:
                c.send(_packet_out(1, parse_actions(text), frame))
                assert await c.barrier() == []
                sb.settle()
                out = sb.take_all_output()
                got[text] = [len(f) for v in (2, 4) for f in out.get(wires[v], [])]
            c.close()
            await ep.close()
            await backend.close()
            return got
        assert asyncio.run(go()) == cases


def test_a_cut_frame_leaves_the_emulator_as_open_vswitch_cuts_it():
    """On the emulator backend too: the cut frame goes out as it is (not parsed, not dropped)."""
    from endpoint_helpers import OFClient, emu_endpoint, errors_in
    from tandem.rules import ofwire as W
    from tandem.rules import ofwire_msgs as M

    frame = bytes.fromhex("020000000002020000000001080045000028000000004006") + bytes(42)

    async def go() -> list:
        ep, backend = await emu_endpoint()
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(
            W.OFP_NO_BUFFER, 1, parse_actions("push_vlan:0x8100,output(port=3,max_len=20)"), frame)))
        assert errors_in(await c.barrier()) == []
        backend.run_for(0.01)
        out = backend.take_output("snic1", 1)
        await ep.close()
        await backend.close()
        return out

    assert asyncio.run(go()) == [frame[:12] + b"\x81\x00\x00\x00" + frame[12:20]]  # (24 bytes: the push after the cut)
