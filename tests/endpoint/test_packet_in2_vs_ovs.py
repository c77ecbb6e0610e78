"""Open vSwitch's packet-in extensions through OneSwitch, against one plain
Open vSwitch 3.1 bridge side by side: the same controllers (OpenFlow's packet-in
format, NXT_PACKET_IN2, a controller id set with NXT_SET_CONTROLLER_ID) connect
to both, the same flows with ``controller(reason=…,max_len=…,id=…,userdata=…)``
go to both, the same frames enter both (the virtual ports are numbered as the
bridge's), and each controller must receive the same packet-ins, byte for byte.
The rules run on every physical switch of the three-switch topology (a packet-in
from an sNIC, one after a goto, one from a group bucket)."""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import FlowMod, Group
from tandem.rules.ofctl import parse_group, parse_rule

pytestmark = [pytest.mark.ovs]
TOPO = Path(__file__).with_name("three_switches.yaml")
WHERE = {1: ("tnd-host", 1), 2: ("tnd-snic0", 1), 3: ("tnd-snic1", 1), 4: ("tnd-snic0", 2)}  # virtual port -> bridge port

FLOWS = [
    "table=0,priority=5,cookie=0x11,in_port=1,actions=controller(reason=group,userdata=01.02.03),"
    "controller(id=7,max_len=20,userdata=aa),output:2",
    "table=0,priority=5,cookie=0x12,in_port=2,actions=load:5->NXM_NX_REG0[],controller(reason=no_match),"
    "controller(id=7,reason=invalid_ttl),CONTROLLER:65535,output:3",
    "table=0,priority=5,cookie=0x13,in_port=3,actions=write_metadata:0x99/0xff,goto_table:1",
    "table=1,priority=5,cookie=0x14,actions=controller(reason=action_set,max_len=14,userdata=00.01.02.03.04.05.06.07.08),"
    "group:1",
    "table=0,priority=1,cookie=0x15,actions=CONTROLLER:65535",
]
GROUP = "group_id=1,type=all,bucket=controller(id=7,reason=packet_out,userdata=bb.cc),output:1"
FRAME = bytes.fromhex("020000000002020000000001080045000028000000004006000000000000000000000000") + bytes(range(30))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plain_bridge_listening(sb: OvsSandbox) -> int:
    """Bridge "plain" with ports 1-4 and a passive controller target: the port it listens on."""
    sb.add_bridge("plain", [1, 2, 3, 4])
    port = _free_port()
    # a passive controller target is a service connection to OVS: it must be asked to send async messages
    sb.vsctl("--", "--id=@c", "create", "Controller", f"target=\"ptcp:{port}:127.0.0.1\"",
             "enable_async_messages=true", "--", "set", "Bridge", "plain", "controller=@c")
    return port


async def _connect(port: int) -> OFClient:
    for _ in range(100):
        try:
            return await OFClient.connect(port)
        except OSError:
            await asyncio.sleep(0.05)
    raise ConnectionError(f"nothing listens on {port}")


async def _controllers(port: int) -> list[OFClient]:
    """Four controllers: OpenFlow packet-ins (id 0), NXT_PACKET_IN2 (id 0), NXT_PACKET_IN2 with id 7,
    Nicira's old NXT_PACKET_IN (id 0)."""
    cs = [await _connect(port) for _ in range(4)]
    for c in cs:  # (Open vSwitch sends a service connection no packet-in before a miss_send_len is set)
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))
    cs[1].send(P.encode_set_packet_in_format(cs[1].next_xid(), P.NXPIF_NXT_PACKET_IN2))
    cs[2].send(P.encode_set_packet_in_format(cs[2].next_xid(), P.NXPIF_NXT_PACKET_IN2))
    cs[2].send(P.encode_set_controller_id(cs[2].next_xid(), 7))
    cs[3].send(P.encode_set_packet_in_format(cs[3].next_xid(), P.NXPIF_NXT_PACKET_IN))
    # every OpenFlow 1.3 packet-in reason (invalid_ttl is not in Open vSwitch's default)
    cs[2].send(W.header(W.OFPT_SET_ASYNC, cs[2].next_xid(), struct.pack("!6I", 0x7, 0, 0x7, 0, 0xF, 0)))
    for c in cs:
        assert errors_in(await c.barrier()) == []
    return cs


async def _default_async(c: OFClient) -> bytes:
    return (await c.request(lambda x: W.header(W.OFPT_GET_ASYNC_REQUEST, x), W.OFPT_GET_ASYNC_REPLY)).body


async def _program(c: OFClient) -> None:
    g = parse_group(GROUP)
    c.send(M.encode_group_mod(c.next_xid(), "add", g))
    for text in FLOWS:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await c.barrier()) == []


async def _packet_ins(c: OFClient, quiet: float = 1.0) -> list[bytes]:
    out = []
    while True:
        try:
            m = await c.recv(timeout=quiet)
        except asyncio.TimeoutError:
            return sorted(out)
        if m.type in (W.OFPT_PACKET_IN, W.OFPT_EXPERIMENTER):
            out.append(W.header(m.type, m.xid, m.body))


@async_test
async def test_controllers_receive_the_same_packet_ins_as_from_one_ovs_bridge():
    with OvsSandbox() as sb:
        ovs = await _controllers(plain_bridge_listening(sb))
        async_ovs = await _default_async(ovs[0])
        await _program(ovs[0])
        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _controllers(await ep.listen("ptcp:0:127.0.0.1"))
        async_one = await _default_async(one[0])
        await _program(one[0])
        for v in (1, 2, 3, 4):
            sb.inject("plain", v, [FRAME])
            sb.inject(*WHERE[v], [FRAME])
        got_ovs = [await _packet_ins(c) for c in ovs]
        got_one = [await _packet_ins(c) for c in one]
        await ep.close()
        await backend.close()
    assert async_one == async_ovs == struct.pack("!6I", 0x3, 0, 0x7, 0x7, 0xF, 0)  # (no invalid_ttl by default)
    assert [len(g) for g in got_ovs] == [5, 5, 2, 5]  # id 7: rules 0x11 and 0x12 (Open vSwitch 3.1 sends none from the bucket)
    for i, (want, got) in enumerate(zip(got_ovs, got_one)):
        assert got == want, f"controller {i}:\n" + "\n".join(f"  ovs {a.hex()}\n  one {b.hex()}" for a, b in zip(want, got))
