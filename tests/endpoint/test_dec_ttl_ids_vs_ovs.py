"""``dec_ttl(ids)`` through OneSwitch, against one plain Open vSwitch 3.1 bridge side by
side (the harness of ``test_packet_in2_vs_ovs.py``): controllers with different ids
(NXT_SET_CONTROLLER_ID) and packet-in formats connect to both, the same flows and
frames go to both, and each controller must receive the same ``invalid_ttl``
packet-ins, byte for byte: one per listed id (an id listed twice: two), none to an id
no connection has, none to a connection whose async config leaves invalid_ttl out.
OneSwitch keeps the physical action; each physical switch has a connection to the
endpoint per controller id in use (``backends/ovs.py``; on the emulator backend
dp-core's packet-ins carry their id), and the endpoint sends a packet-in that came on
id N's connection to the virtual connections with id N. Run over the OVS backend and
over the emulator backend."""

from __future__ import annotations

import struct

import pytest

from endpoint_helpers import errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import TOPO, WHERE, _connect, _packet_ins, plain_bridge_listening
from tandem.backends.factory import make_backend
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.ids import N_PHYSICAL_TABLES
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_group, parse_rule

pytestmark = [pytest.mark.ovs]

FLOWS = [
    "table=0,priority=5,cookie=0x31,in_port=1,ip,actions=dec_ttl(7,0,7,9),output:2",
    "table=0,priority=5,cookie=0x32,in_port=2,ip,actions=load:3->NXM_NX_REG1[],dec_ttl(9,5),output:3",
    "table=0,priority=5,cookie=0x33,in_port=3,ip,actions=write_actions(dec_ttl(0,7),output:1),goto_table:1",
    "table=1,priority=5,cookie=0x34,actions=write_metadata:0x42/0xff",
    "table=0,priority=5,cookie=0x35,in_port=4,ip,actions=group:1",
]
GROUP = "group_id=1,type=all,bucket=dec_ttl(9),output:1,bucket=dec_ttl,output:2"
TTL_1 = bytes.fromhex("020000000002020000000001080045000028000000000106000000000000000000000000") + bytes(range(30))
TTL_9 = TTL_1[:22] + b"\x09" + TTL_1[23:]


async def _controllers(port: int) -> list:
    """id 0 (OpenFlow packet-ins), id 7 (NXT_PACKET_IN2), id 9 (OpenFlow), id 7 (Nicira's
    old NXT_PACKET_IN), all taking invalid_ttl; and id 7 with the default async config."""
    cs = [await _connect(port) for _ in range(5)]
    for c in cs:
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))
    for c, fmt, cid in ((cs[1], P.NXPIF_NXT_PACKET_IN2, 7), (cs[2], None, 9), (cs[3], P.NXPIF_NXT_PACKET_IN, 7),
                        (cs[4], None, 7)):
        if fmt is not None:
            c.send(P.encode_set_packet_in_format(c.next_xid(), fmt))
        c.send(P.encode_set_controller_id(c.next_xid(), cid))
    for c in cs[:4]:
        c.send(W.header(W.OFPT_SET_ASYNC, c.next_xid(), struct.pack("!6I", 0x7, 0, 0x7, 0, 0xF, 0)))
    for c in cs:
        assert errors_in(await c.barrier()) == []
    return cs


async def _program(c) -> None:
    c.send(M.encode_group_mod(c.next_xid(), "add", parse_group(GROUP)))
    for text in FLOWS:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await c.barrier()) == []


def _same(want: list, got: list) -> None:
    for i, (w, g) in enumerate(zip(want, got)):
        assert g == w, f"controller {i}:\n" + "\n".join(f"  ovs {a.hex()}\n  one {b.hex()}" for a, b in zip(w, g))


async def _on_one_bridge(sb: OvsSandbox) -> list:
    ovs = await _controllers(plain_bridge_listening(sb))
    await _program(ovs[0])
    for v in (1, 2, 3, 4):
        sb.inject("plain", v, [TTL_1, TTL_9])
    return [await _packet_ins(c) for c in ovs]


@async_test
async def test_dec_ttl_ids_packet_ins_reach_each_listed_id_as_from_one_ovs_bridge():
    with OvsSandbox() as sb:
        want = await _on_one_bridge(sb)
        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _controllers(await ep.listen("ptcp:0:127.0.0.1"))
        await _program(one[0])
        for v in (1, 2, 3, 4):
            sb.inject(*WHERE[v], [TTL_1, TTL_9])
        got = [await _packet_ins(c) for c in one]
        await ep.close()
        await backend.close()
    # id 0: rule 0x31's, the action set's 0 and the bucket's plain dec_ttl; id 7: two from 0x31, one written;
    # id 9: 0x31, 0x32, the bucket's (id 5 has no connection); the id-7 connection without invalid_ttl: none
    assert [len(g) for g in want] == [3, 3, 3, 3, 0]
    _same(want, got)


@async_test
async def test_dec_ttl_ids_packet_ins_on_the_emulator_backend_as_from_one_ovs_bridge():
    with OvsSandbox() as sb:
        want = await _on_one_bridge(sb)
    topo = load_topology(TOPO)
    backend = make_backend("emu", n_tables=N_PHYSICAL_TABLES)
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    one = await _controllers(await ep.listen("ptcp:0:127.0.0.1"))
    await _program(one[0])
    for v in (1, 2, 3, 4):
        for frame in (TTL_1, TTL_9):
            sw, port = WHERE[v]
            backend.inject(sw.removeprefix("tnd-"), port, frame)
    backend.run_for(0.01)
    got = [await _packet_ins(c) for c in one]
    await ep.close()
    await backend.close()
    _same(want, got)


ORDER_FLOWS = ["table=0,priority=5,cookie=0x41,in_port=1,ip,actions=controller(id=7,userdata=01),dec_ttl(7,0,7),output:2"]


async def _in_order(c, quiet: float = 1.0) -> list[bytes]:
    out = []
    while True:
        try:
            m = await c.recv(timeout=quiet)
        except Exception:  # (quiet: asyncio.TimeoutError)
            return out
        if m.type in (W.OFPT_PACKET_IN, W.OFPT_EXPERIMENTER):
            out.append(W.header(m.type, 0, m.body))


@async_test
async def test_an_ids_packet_ins_come_in_the_order_one_bridge_sends_them():
    # controller(id=7) and dec_ttl(7,…) of one rule: both reach id 7's connections in the order Open vSwitch
    # sends them, since the physical controller(…) goes to the physical connection with id 7 too
    frames = [TTL_1[:-1] + bytes([i]) for i in range(6)]
    with OvsSandbox() as sb:
        ovs = await _controllers(plain_bridge_listening(sb))
        for text in ORDER_FLOWS:
            ovs[0].send(M.encode_flow_mod(ovs[0].next_xid(), FlowMod("add", parse_rule(text))))
        assert errors_in(await ovs[0].barrier()) == []
        sb.inject("plain", 1, frames)
        want = [await _in_order(c) for c in ovs]
        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _controllers(await ep.listen("ptcp:0:127.0.0.1"))
        for text in ORDER_FLOWS:
            one[0].send(M.encode_flow_mod(one[0].next_xid(), FlowMod("add", parse_rule(text))))
        assert errors_in(await one[0].barrier()) == []
        sb.inject(*WHERE[1], frames)
        got = [await _in_order(c) for c in one]
        await ep.close()
        await backend.close()
    assert [len(g) for g in want] == [6, 18, 0, 18, 6]  # (the last: id 7 without invalid_ttl gets controller(id=7)'s)
    _same(want, got)
