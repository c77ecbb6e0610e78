"""The endpoint's OpenFlow 1.3 protocol machinery, on the in-memory fake backend
and the one-switch identity state (no translator, no OVS)."""

from __future__ import annotations

import asyncio
import functools
import struct
import time

import pytest

from tandem.backends.base import PhysicalLayout
from tandem.backends.fake import FakeBackend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, FlowMod, GotoTable, Match, Output, Rule

from endpoint_helpers import IdentityState, OFClient, errors_in, one_switch_topology


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(asyncio.wait_for(fn(*a, **kw), 60))
    return wrapper


async def start(n_tables: int = 8):
    topo = one_switch_topology()
    backend = FakeBackend()
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(IdentityState(topo), topo, backend, n_tables=n_tables)
    port = await ep.listen("ptcp:0:127.0.0.1")
    return ep, backend, port


def fm(xid, rule, command="add", **kw):
    return M.encode_flow_mod(xid, FlowMod(command, rule, **kw))


FWD = Rule(Match.of(in_port=1), (ApplyActions((Output(2),)),), priority=10, cookie=0xAB)


@async_test
async def test_handshake_features_config_desc():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    feat = await c.request(M.encode_features_request, W.OFPT_FEATURES_REPLY)
    dpid, n_buffers, n_tables, caps = M.decode_features_reply(feat.body)
    assert dpid == ep.dpid and n_tables == 8 and n_buffers == 0 and caps & M.OFPC_FLOW_STATS
    # the dpid is derived from the topology: a second endpoint on the same topology agrees
    assert OneSwitchEndpoint(IdentityState(ep.topo), ep.topo, backend).dpid == dpid
    c.send(M.encode_set_config(c.next_xid(), 0, 200))
    cfg = await c.request(lambda x: W.header(W.OFPT_GET_CONFIG_REQUEST, x), W.OFPT_GET_CONFIG_REPLY)
    assert M.decode_switch_config(cfg.body) == (0, 200)
    desc = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_DESC, 0)), W.OFPT_MULTIPART_REPLY)
    assert b"OneSwitch" in desc.body
    pd = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_PORT_DESC, 0)), W.OFPT_MULTIPART_REPLY)
    ports = S.decode_port_desc(S.decode_multipart_reply(pd.body)[2])
    assert [p.port_no for p in ports] == [1, 2, 3, 4] and ports[0].name == "v1"
    assert await c.echo_ok()
    c.close()
    await ep.close()


@async_test
async def test_version_negotiation_refuses_openflow_1_0_only():
    ep, _, port = await start()
    c = await OFClient.connect(port, hello=False)
    assert (await c.recv()).type == W.OFPT_HELLO
    c.send(M.encode_hello(7, versions=(1,)).replace(b"\x04", b"\x01", 1))
    m = await c.recv()
    assert m.type == W.OFPT_ERROR and m.xid == 7
    assert struct.unpack_from("!HH", m.body) == (W.OFPET_HELLO_FAILED, W.OFPHFC_INCOMPATIBLE)
    with pytest.raises(ConnectionError):
        await c.recv()
    await ep.close()


@async_test
async def test_flow_mod_barrier_stats_and_delete():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    c.send(fm(c.next_xid(), FWD, send_flow_rem=True))
    msgs = await c.barrier()
    assert errors_in(msgs) == []
    assert backend.rules("s") == [FWD]  # applied before the barrier reply
    backend.set_counters("s", FWD, 7, 700)
    req = S.MultipartRequest(S.OFPMP_FLOW, 0, flow=S.FlowStatsRequest())
    rep = await c.request(lambda x: S.encode_multipart_request(x, req), W.OFPT_MULTIPART_REPLY)
    [entry] = S.decode_flow_stats(S.decode_multipart_reply(rep.body)[2])
    assert entry.rule == FWD and (entry.packet_count, entry.byte_count) == (7, 700)
    agg = S.MultipartRequest(S.OFPMP_AGGREGATE, 0, flow=S.FlowStatsRequest(match=Match.of(in_port=1)))
    rep = await c.request(lambda x: S.encode_multipart_request(x, agg), W.OFPT_MULTIPART_REPLY)
    assert S.decode_aggregate(S.decode_multipart_reply(rep.body)[2]) == (7, 700, 1)
    # a delete of a rule installed with SEND_FLOW_REM produces FLOW_REMOVED(reason DELETE)
    c.send(fm(c.next_xid(), Rule(), "delete", all_tables=True))
    msgs = await c.barrier()
    removed = [M.decode_flow_removed(m.body) for m in msgs if m.type == W.OFPT_FLOW_REMOVED]
    assert [(r.rule.match, r.reason) for r in removed] == [(FWD.match, M.OFPRR_DELETE)]
    assert backend.rules("s") == []
    await ep.close()


@async_test
async def test_errors_echo_xid_and_keep_the_connection():
    ep, backend, port = await start(n_tables=4)
    c = await OFClient.connect(port)
    cases = [
        # (port numbers Open vSwitch refuses: 0xff00..0xfffffeff; a missing port below that is accepted)
        (fm(0, Rule(Match.of(in_port=0x10000), (ApplyActions((Output(2),)),))), (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_VALUE)),
        (fm(0, Rule(Match.of(in_port=1), (ApplyActions((Output(0xFF00),)),))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT)),
        (fm(0, Rule(Match(), (), table=6)), (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_BAD_TABLE_ID)),
        (fm(0, Rule(Match(), (GotoTable(5),), table=1)), (W.OFPET_BAD_INSTRUCTION, W.OFPBIC_BAD_TABLE_ID)),
        (W.header(W.OFPT_FEATURES_REPLY, 0, bytes(24)), (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_TYPE)),
        (W.header(W.OFPT_EXPERIMENTER, 0, bytes(8)), (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_EXPERIMENTER)),
        (W.header(W.OFPT_FLOW_MOD, 0, b"\x01" * 12), (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)),
        (W.header(77, 0), (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_TYPE)),
    ]
    for i, (raw, want) in enumerate(cases):
        xid = 5000 + i
        raw = raw[:4] + struct.pack("!I", xid) + raw[8:]
        c.send(raw)
        msgs = await c.barrier()
        [err] = [m for m in msgs if m.type == W.OFPT_ERROR]
        assert (err.xid, *struct.unpack_from("!HH", err.body)) == (xid, *want), i
        assert err.body[4:] == raw[:64]  # the offending bytes are echoed
    # a wrong header version on a negotiated connection
    c.send(b"\x01" + M.encode_echo_request(42)[1:])
    err = (await c.until(W.OFPT_ERROR))[-1]
    assert err.xid == 42 and struct.unpack_from("!HH", err.body) == (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_VERSION)
    assert await c.echo_ok()
    assert backend.rules("s") == []
    await ep.close()


@async_test
async def test_check_overlap():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    c.send(fm(c.next_xid(), Rule(Match.of(eth_dst=1), (), priority=5)))
    xid = c.next_xid()
    c.send(fm(xid, Rule(Match.of(in_port=1), (), priority=5), check_overlap=True))
    msgs = await c.barrier()
    assert errors_in(msgs) == [(xid, W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_OVERLAP)]
    c.send(fm(c.next_xid(), Rule(Match.of(in_port=1), (), priority=6), check_overlap=True))
    assert errors_in(await c.barrier()) == []
    assert len(backend.rules("s")) == 2
    await ep.close()


@async_test
async def test_backend_refusal_is_reported_with_the_flow_mods_xid():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    c.send(fm(c.next_xid(), FWD))
    backend.fail_next = (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_TABLE_FULL)
    xid = c.next_xid()
    c.send(fm(xid, Rule(Match.of(in_port=2), (), priority=3)))
    msgs = await c.barrier()
    # both flow mods went out as one batch; the refusal names the first op of the batch that failed
    assert [e[1:] for e in errors_in(msgs)] == [(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_TABLE_FULL)]
    await ep.close()


@async_test
async def test_packet_in_whole_and_unbuffered_and_packet_out():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    c.send(M.encode_set_config(c.next_xid(), 0, 32))
    miss = Rule(Match(), (ApplyActions((Output(ir.OFPP_CONTROLLER, 64),)),), priority=0, cookie=3)
    c.send(fm(c.next_xid(), miss))
    await c.barrier()
    frame = bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(100)
    backend.inject_packet_in("s", 3, frame, reason=M.OFPR_ACTION, cookie=3)
    [pi_msg] = [m for m in await c.until(W.OFPT_PACKET_IN)]
    pi = M.decode_packet_in(pi_msg.body)
    assert pi.match.get("in_port").value == 3 and pi.total_len == len(frame)
    # as Open vSwitch 3.1: the whole frame, unbuffered, whatever max_len and miss_send_len
    assert pi.buffer_id == W.OFP_NO_BUFFER and pi.data == frame
    po = M.WirePacketOut(W.OFP_NO_BUFFER, 3, (Output(ir.OFPP_FLOOD),), frame)
    c.send(M.encode_packet_out(c.next_xid(), po))
    assert errors_in(await c.barrier()) == []
    # FLOOD: every other port and LOCAL (the host's)
    assert sorted((sw, a[-1].port) for sw, _, a, f in backend.sent if f == frame) == [
        ("s", 1), ("s", 2), ("s", 4), ("s", ir.OFPP_LOCAL)]
    # no buffer exists: a PACKET_OUT or FLOW_MOD naming one is BUFFER_UNKNOWN (the flow is added)
    xid = c.next_xid()
    c.send(M.encode_packet_out(xid, M.WirePacketOut(0, 3, (Output(ir.OFPP_FLOOD),), b"")))
    assert errors_in(await c.barrier()) == [(xid, W.OFPET_BAD_REQUEST, W.OFPBRC_BUFFER_UNKNOWN)]
    xid = c.next_xid()
    body = bytearray(fm(xid, FWD))
    struct.pack_into("!I", body, 8 + 24, 0)  # (the flow mod's buffer_id)
    c.send(bytes(body))
    assert errors_in(await c.barrier()) == [(xid, W.OFPET_BAD_REQUEST, W.OFPBRC_BUFFER_UNKNOWN)]
    assert FWD in ep.state.virtual_rules()
    await ep.close()


@async_test
async def test_roles_and_generation_ids():
    ep, backend, port = await start()
    a, b = await OFClient.connect(port), await OFClient.connect(port)
    rr = lambda role, gen: (lambda x: W.header(W.OFPT_ROLE_REQUEST, x, struct.pack("!I4xQ", role, gen)))
    rep = await a.request(rr(M.OFPCR_ROLE_MASTER, 10), W.OFPT_ROLE_REPLY)
    assert struct.unpack("!I4xQ", rep.body) == (M.OFPCR_ROLE_MASTER, 10)
    xid = b.next_xid()
    b.send(rr(M.OFPCR_ROLE_MASTER, 9)(xid))
    assert errors_in(await b.until(W.OFPT_ERROR)) == [(xid, W.OFPET_ROLE_REQUEST_FAILED, W.OFPRRFC_STALE)]
    await b.request(rr(M.OFPCR_ROLE_MASTER, 11), W.OFPT_ROLE_REPLY)
    # a is now a slave: modifications are refused
    xid = a.next_xid()
    a.send(fm(xid, FWD))
    assert errors_in(await a.barrier()) == [(xid, W.OFPET_BAD_REQUEST, W.OFPBRC_IS_SLAVE)]
    assert backend.rules("s") == []
    await ep.close()


@async_test
async def test_active_mode_reconnects_with_backoff():
    topo = one_switch_topology()
    backend = FakeBackend()
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(IdentityState(topo), topo, backend)
    accepted: asyncio.Queue = asyncio.Queue()

    async def on_conn(r, w):
        await accepted.put((r, w))

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    ep.connect(f"tcp:127.0.0.1:{port}", max_backoff=0.2)
    for _ in range(2):  # the switch dials in again after the controller drops it
        r, w = await asyncio.wait_for(accepted.get(), 5)
        c = OFClient(r, w)
        assert (await c.recv()).type == W.OFPT_HELLO
        c.send(M.encode_hello())
        assert await c.echo_ok()
        c.close()
    server.close()
    await ep.close()


@async_test
async def test_multipart_port_table_group_features():
    ep, backend, port = await start(n_tables=3)
    c = await OFClient.connect(port)
    mp = lambda t, **kw: (lambda x: S.encode_multipart_request(x, S.MultipartRequest(t, 0, **kw)))
    rep = await c.request(mp(S.OFPMP_PORT_STATS, port_no=ir.OFPP_ANY), W.OFPT_MULTIPART_REPLY)
    assert [e.port_no for e in S.decode_port_stats(S.decode_multipart_reply(rep.body)[2])] == [1, 2, 3, 4]
    xid = c.next_xid()
    c.send(mp(S.OFPMP_PORT_STATS, port_no=9)(xid))
    assert errors_in(await c.until(W.OFPT_ERROR)) == [(xid, W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PORT)]
    rep = await c.request(mp(S.OFPMP_TABLE), W.OFPT_MULTIPART_REPLY)
    assert len(S.decode_multipart_reply(rep.body)[2]) == 3 * 24
    rep = await c.request(mp(S.OFPMP_TABLE_FEATURES), W.OFPT_MULTIPART_REPLY)
    assert S.decode_multipart_reply(rep.body)[0] == S.OFPMP_TABLE_FEATURES
    g = ir.Group(1, "all", (ir.Bucket((Output(1),)), ir.Bucket((Output(2),))))
    c.send(M.encode_group_mod(c.next_xid(), "add", g))
    xid = c.next_xid()
    c.send(M.encode_group_mod(xid, "add", g))
    assert errors_in(await c.barrier()) == [(xid, W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_GROUP_EXISTS)]
    rep = await c.request(mp(S.OFPMP_GROUP_DESC), W.OFPT_MULTIPART_REPLY)
    assert S.decode_group_desc(S.decode_multipart_reply(rep.body)[2]) == [g]
    await ep.close()


@async_test
async def test_async_config_and_slave_get_no_packet_ins():
    ep, backend, port = await start()
    master, slave = await OFClient.connect(port), await OFClient.connect(port)
    rr = lambda role, gen: (lambda x: W.header(W.OFPT_ROLE_REQUEST, x, struct.pack("!I4xQ", role, gen)))
    await master.request(rr(M.OFPCR_ROLE_MASTER, 1), W.OFPT_ROLE_REPLY)
    await slave.request(rr(M.OFPCR_ROLE_SLAVE, 1), W.OFPT_ROLE_REPLY)
    backend.inject_packet_in("s", 2, bytes(60), reason=M.OFPR_ACTION)
    pi = (await master.until(W.OFPT_PACKET_IN))[-1]
    assert M.decode_packet_in(pi.body).match.get("in_port").value == 2
    assert not [m for m in await slave.barrier() if m.type == W.OFPT_PACKET_IN]  # slave default mask: none
    # the master turns packet-ins for OFPR_ACTION off; GET_ASYNC reports it
    master.send(W.header(W.OFPT_SET_ASYNC, master.next_xid(), struct.pack("!6I", 0x1, 0x0, 0x7, 0x7, 0xF, 0x0)))
    rep = await master.request(lambda x: W.header(W.OFPT_GET_ASYNC_REQUEST, x), W.OFPT_GET_ASYNC_REPLY)
    assert struct.unpack("!6I", rep.body)[0] == 0x1
    backend.inject_packet_in("s", 2, bytes(60), reason=M.OFPR_ACTION)
    msgs = await master.barrier()
    assert not [m for m in msgs if m.type == W.OFPT_PACKET_IN]
    await ep.close()


@async_test
async def test_a_silent_controller_is_probed_and_dropped_a_talking_one_kept(monkeypatch):
    from tandem.oneswitch import endpoint_session

    monkeypatch.setattr(endpoint_session, "ECHO_IDLE_S", 0.1)
    ep, backend, port = await start()
    silent, talking = await OFClient.connect(port), await OFClient.connect(port)
    probes = []
    t = time.monotonic()
    with pytest.raises(ConnectionError):  # closed by the switch after its unanswered probes
        while True:
            m = await silent.recv(timeout=5)
            probes.append(m.type)
            assert await talking.echo_ok()  # the other connection keeps talking
    assert probes == [W.OFPT_ECHO_REQUEST] * 3 and time.monotonic() - t < 3
    assert await talking.echo_ok()  # kept
    talking.close()
    await ep.close()
