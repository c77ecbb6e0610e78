"""Packet-ins of plain ``output:CONTROLLER:N`` and of table-miss flows through OneSwitch,
against one plain Open vSwitch 3.1 bridge side by side (the harness of
``test_packet_in2_vs_ovs.py``): the same controllers, flows and frames on both, and
each controller must receive the same packet-ins, byte for byte.

Open vSwitch 3.1 ignores max_len and miss_send_len: every packet-in carries the whole
frame, unbuffered. A table-miss flow (priority 0, matching everything) sends its
packet-ins with reason ``no_match``, also ``controller(reason=action)`` and those in a
``clone``; its written actions keep ``action``. Its copies on the physical switches
are no table-miss flows there (``pkt_mark=0`` in table 0)."""

from __future__ import annotations

import struct

import pytest

from endpoint_helpers import errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import FRAME, TOPO, WHERE, _connect, _free_port, _packet_ins
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules import ir
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_actions, parse_group, parse_rule

pytestmark = [pytest.mark.ovs]

FLOWS = [
    "table=0,priority=5,cookie=0x21,in_port=1,actions=CONTROLLER:20",
    "table=0,priority=5,cookie=0x22,in_port=2,actions=controller(reason=action,userdata=01),goto_table:1",
    # a table-miss flow in table 1: its copies there are table-miss flows of their switches too
    "table=1,priority=0,cookie=0x23,actions=CONTROLLER:10,clone(controller(max_len=5)),write_actions(CONTROLLER:0)",
    "table=0,priority=0,cookie=0x24,in_port=4,actions=CONTROLLER:30",  # priority 0, but no table-miss flow
    "table=0,priority=0,cookie=0x25,actions=controller(userdata=02),output:1,CONTROLLER:0",  # the table-miss flow
]
MISS_SEND_LEN = 50


async def _controllers(port: int) -> list:
    """OpenFlow packet-ins, NXT_PACKET_IN2, Nicira's old NXT_PACKET_IN (all miss_send_len 50), and two
    OpenFlow ones whose async config takes only no_match, only action."""
    cs = [await _connect(port) for _ in range(5)]
    for c in cs:
        c.send(M.encode_set_config(c.next_xid(), 0, MISS_SEND_LEN))
    cs[1].send(P.encode_set_packet_in_format(cs[1].next_xid(), P.NXPIF_NXT_PACKET_IN2))
    cs[2].send(P.encode_set_packet_in_format(cs[2].next_xid(), P.NXPIF_NXT_PACKET_IN))
    for c, mask in ((cs[3], 0x1), (cs[4], 0x2)):
        c.send(W.header(W.OFPT_SET_ASYNC, c.next_xid(), struct.pack("!6I", mask, 0, 0x7, 0x7, 0xF, 0)))
    for c in cs:
        assert errors_in(await c.barrier()) == []
    return cs


async def _program(c) -> None:
    for text in FLOWS:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await c.barrier()) == []


async def _both(drive, sent=None) -> tuple:
    """``drive(port, inject)`` against one plain bridge, then against OneSwitch on the three
    switches (``inject(v, frame)`` sends a frame into virtual port v, ``inject(v, frame, n)``
    n of them at once); both results. With ``sent``, each result is paired with
    ``sent(frames)`` of what the ports sent (virtual port -> frames). The bridges share one
    datapath's connection tracker, emptied between the two runs."""
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2, 3, 4])
        port = _free_port()
        sb.vsctl("--", "--id=@c", "create", "Controller", f"target=\"ptcp:{port}:127.0.0.1\"",
                 "enable_async_messages=true", "--", "set", "Bridge", "plain", "controller=@c")
        got_ovs = await drive(port, lambda v, frame, n=1: sb.inject("plain", v, [frame] * n))
        if sent is not None:
            sb.settle()
            got_ovs = (got_ovs, sent({p: f for (br, p), f in sb.take_all_output().items() if br == "plain" and f}))
        sb.appctl("dpctl/flush-conntrack")
        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        try:
            got_one = await drive(await ep.listen("ptcp:0:127.0.0.1"), lambda v, frame, n=1: sb.inject(*WHERE[v], [frame] * n))
            if sent is not None:
                sb.settle()
                out = sb.take_all_output()
                got_one = (got_one, sent({v: out[w] for v, w in WHERE.items() if out.get(w)}))
        finally:
            await ep.close()
            await backend.close()
    return got_ovs, got_one


def _same(got_ovs: list, got_one: list) -> None:
    for i, (want, got) in enumerate(zip(got_ovs, got_one)):
        assert got == want, f"controller {i}:\n" + "\n".join(f"  ovs {a.hex()}\n  one {b.hex()}" for a, b in zip(want, got))


@async_test
async def test_whole_frames_and_table_miss_reasons_as_from_one_ovs_bridge():
    async def drive(port: int, inject) -> list:
        cs = await _controllers(port)
        await _program(cs[0])
        for v in (1, 2, 3, 4):
            inject(v, FRAME)
        return [await _packet_ins(c) for c in cs]

    got_ovs, got_one = await _both(drive)
    # port 1: 1; port 2: 1 + 3 in table 1; port 3: 2 from the table-miss flow; port 4: 1
    assert [len(g) for g in got_ovs] == [8, 8, 8, 4, 4]  # no_match: 2 in table 1, 2 in table 0
    for pi in (M.decode_packet_in(m[8:]) for m in got_ovs[0]):
        assert pi.buffer_id == W.OFP_NO_BUFFER and pi.data == FRAME  # (whole: max_len 20, 10, 0 and 50 ignored)
    _same(got_ovs, got_one)


PACKET_OUTS = [  # (in_port, actions): outputs to CONTROLLER and controller(...) in a PACKET_OUT
    (1, "CONTROLLER:20"),
    (ir.OFPP_CONTROLLER, "output:2,CONTROLLER"),
    (3, "controller(userdata=01.02),output:1"),
    (1, "controller(id=7,reason=no_match,userdata=03)"),
    (2, "controller(reason=invalid_ttl)"),
    (4, "controller(reason=group,max_len=10,userdata=04),controller(reason=action_set)"),
    (2, "group:1"),  # a bucket's output to CONTROLLER is sent; its controller(...) is not
]
GROUP = "group_id=1,type=all,bucket=CONTROLLER:0,controller(userdata=05)"


@async_test
async def test_packet_out_packet_ins_config_and_buffers_as_one_ovs_bridge():
    async def drive(port: int, inject) -> list:
        cs = await _controllers(port)
        cs[1].send(P.encode_set_controller_id(cs[1].next_xid(), 7))
        cs[4].send(W.header(W.OFPT_SET_ASYNC, cs[4].next_xid(), struct.pack("!6I", 0x7, 0, 0x7, 0x7, 0xF, 0)))
        cs[3].send(M.encode_set_config(cs[3].next_xid(), 0, 77))  # (miss_send_len is each connection's)
        sender = await _connect(port)
        sender.send(M.encode_group_mod(sender.next_xid(), "add", parse_group(GROUP)))
        answers = []
        for in_port, text in PACKET_OUTS:
            xid = sender.next_xid()
            sender.send(M.encode_packet_out(xid, M.WirePacketOut(W.OFP_NO_BUFFER, in_port, parse_actions(text), FRAME)))
            answers.append(errors_in(await sender.barrier()))
        for buffer_id in (0, 5):  # no packet is buffered
            sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(buffer_id, 1, parse_actions("output:2"), b"")))
            answers.append([e[1:] for e in errors_in(await sender.barrier())])
        packet_ins = [await _packet_ins(c) for c in cs]
        for c in cs:
            answers.append((await c.request(lambda x: W.header(W.OFPT_GET_CONFIG_REQUEST, x), W.OFPT_GET_CONFIG_REPLY)).body)
        answers.append(M.decode_features_reply((await sender.request(M.encode_features_request, W.OFPT_FEATURES_REPLY)).body)[1])
        return [answers] + packet_ins

    got_ovs, got_one = await _both(drive)
    assert got_ovs[0][:len(PACKET_OUTS)] == [[]] * len(PACKET_OUTS)
    assert got_ovs[0][len(PACKET_OUTS):] == [[(W.OFPET_BAD_REQUEST, W.OFPBRC_BUFFER_UNKNOWN)]] * 2 + [
        struct.pack("!HH", 0, MISS_SEND_LEN)] * 3 + [struct.pack("!HH", 0, 77), struct.pack("!HH", 0, MISS_SEND_LEN), 0]
    assert [len(g) for g in got_ovs[1:]] == [6, 1, 6, 0, 7]  # (id 7: 1; no_match only: 0; invalid_ttl: the last)
    assert got_one[0] == got_ovs[0]
    _same(got_ovs[1:], got_one[1:])
