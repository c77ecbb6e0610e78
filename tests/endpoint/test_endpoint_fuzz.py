"""Malformed input: 10,000+ seeded corrupted and truncated messages to the endpoint.

Every message gets a unique xid (its xid bytes are never corrupted); after each
batch an ECHO must come back, so a hang fails the test. Each corrupted message
is either refused with an OFPT_ERROR carrying its xid, accepted (the corruption
happened to leave a valid request), or — for a broken length field only — the
connection is closed. No refusal may be the catch-all "internal error"
(BAD_REQUEST/EPERM), which would mean a bug was hit. Afterwards well-formed
requests still work.
"""

from __future__ import annotations

import asyncio
import random
import struct

import pytest

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, FlowMod, GotoTable, Group, Bucket, Match, Output, PushVlan, Rule, SetField, WriteMetadata

from endpoint_helpers import OFClient
from test_endpoint_protocol import async_test, start

N_MESSAGES = 10_500
BATCH = 100
SEED = 20261122


def corpus() -> list[bytes]:
    rule = Rule(Match.of(in_port=1, eth_type=0x800, ipv4_src=(0x0A000000, 0xFF000000), ip_proto=17, udp_dst=53),
                (ApplyActions((PushVlan(), SetField("vlan_vid", 0x1003), Output(2))), WriteMetadata(5, 0xFF), GotoTable(2)),
                table=1, priority=99, cookie=4, idle_timeout=5)
    mp = lambda t, **kw: S.encode_multipart_request(0, S.MultipartRequest(t, 0, **kw))
    return [
        M.encode_flow_mod(0, FlowMod("add", rule, send_flow_rem=True)),
        M.encode_flow_mod(0, FlowMod("delete", Rule(Match.of(in_port=3)), all_tables=True)),
        M.encode_flow_mod(0, FlowMod("modify_strict", Rule(Match.of(eth_dst=0x020000000001), (ApplyActions((Output(4),)),)))),
        M.encode_group_mod(0, "add", Group(3, "select", (Bucket((Output(1),), weight=2), Bucket((Output(3),), weight=1)))),
        M.encode_packet_out(0, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (Output(ir.OFPP_FLOOD),), bytes(range(60)))),
        mp(S.OFPMP_FLOW, flow=S.FlowStatsRequest(match=Match.of(in_port=2))),
        mp(S.OFPMP_AGGREGATE, flow=S.FlowStatsRequest()),
        mp(S.OFPMP_PORT_STATS, port_no=ir.OFPP_ANY),
        mp(S.OFPMP_PORT_DESC), mp(S.OFPMP_TABLE), mp(S.OFPMP_GROUP, group_id=M.OFPG_ALL), mp(S.OFPMP_DESC),
        W.header(W.OFPT_ROLE_REQUEST, 0, struct.pack("!I4xQ", M.OFPCR_ROLE_EQUAL, 1)),
        M.encode_set_config(0, 0, 128),
        W.header(W.OFPT_SET_ASYNC, 0, struct.pack("!6I", 7, 0, 7, 7, 15, 0)),
        M.encode_echo_request(0, b"abc"),
        W.header(W.OFPT_PORT_MOD, 0, struct.pack("!I4x6s2xIII4x", 2, bytes(6), 0, 0, 0)),
    ]


def mutate(rng: random.Random, msg: bytes, xid: int) -> tuple[bytes, bool]:
    """(corrupted message, framing broken?)."""
    body = bytearray(msg[8:])
    head = bytearray(msg[:8])
    kind = rng.random()
    if kind < 0.45 and body:  # flip bytes in the body
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
    elif kind < 0.70 and body:  # truncate
        del body[rng.randrange(len(body)):]
    elif kind < 0.80:  # garbage appended
        body += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
    elif kind < 0.95:  # corrupt version or type
        head[rng.choice((0, 1))] = rng.randrange(256)
    elif kind < 0.98:  # a second HELLO, or garbage typed as one
        head[1] = W.OFPT_HELLO
    else:  # impossible length: framing is lost
        struct.pack_into("!H", head, 2, rng.randrange(8))
        struct.pack_into("!I", head, 4, xid)
        return bytes(head) + bytes(body), True
    struct.pack_into("!HI", head, 2, 8 + len(body), xid)
    return bytes(head) + bytes(body), False


async def start_translating():
    """The real OneSwitch state over host + 2 sNICs, on the fake backend."""
    from pathlib import Path

    from tandem.backends.fake import FakeBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import load_topology

    topo = load_topology(Path(__file__).with_name("three_switches.yaml"))
    backend = FakeBackend()
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    return ep, backend, await ep.listen("ptcp:0:127.0.0.1")


@pytest.mark.parametrize("translator", [False, True], ids=["identity-state", "oneswitch-state"])
@async_test
async def test_ten_thousand_corrupted_messages(translator):
    ep, backend, port = await (start_translating() if translator else start())
    rng = random.Random(SEED)
    base = corpus()
    c = await OFClient.connect(port)
    refused = accepted = closed = 0
    internal = []
    sent = 0
    xid = 1
    while sent < N_MESSAGES:
        batch = {}
        broken = False
        for _ in range(min(BATCH, N_MESSAGES - sent)):
            xid += 1
            raw, broken = mutate(rng, rng.choice(base), xid)
            batch[xid] = raw
            c.send(raw)
            sent += 1
            if broken:
                break
        replies = []
        if broken:  # the switch must answer with an error and close; never hang
            try:
                while True:
                    replies.append(await c.recv(timeout=5))
            except ConnectionError:
                pass
            closed += 1
            batch.popitem()
            c.close()
            c = await OFClient.connect(port)
        else:
            echo_xid = 0xE0000000 + sent
            c.send(M.encode_echo_request(echo_xid, b"alive"))
            replies = await c.until(W.OFPT_ECHO_REPLY, echo_xid, timeout=10)
        errors_for: set[int] = set()
        for m in replies:
            if m.type == W.OFPT_ERROR:
                etype, code = struct.unpack_from("!HH", m.body)
                errors_for.add(m.xid)
                if (etype, code) == (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM):
                    internal.append(batch.get(m.xid, b"").hex())
        refused += len(errors_for & set(batch))
        accepted += len(set(batch) - errors_for)
    assert refused + accepted + closed == N_MESSAGES
    assert internal == [], f"internal errors for: {internal[:3]}"
    # most corruptions must really be invalid (the rest hit payload bytes, boundaries, or flags)
    assert refused > N_MESSAGES * 0.35 and closed > 100
    # well-formed requests still work on a fresh and on the surviving connection
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", Rule(Match.of(in_port=4), (ApplyActions((Output(1),)),), priority=1234))))
    msgs = await c.barrier()
    assert not [m for m in msgs if m.type == W.OFPT_ERROR and struct.unpack_from("!HH", m.body)[0] != W.OFPET_BAD_REQUEST]
    feat = await c.request(M.encode_features_request, W.OFPT_FEATURES_REPLY)
    assert M.decode_features_reply(feat.body)[0] == ep.dpid
    installed = [r for sw in backend.switches() for r in backend.rules(sw)]
    assert any(r.priority == 1234 for r in installed) or any(
        s.role == 3 for s in ep.sessions)  # a corrupted ROLE_REQUEST may have made this connection a slave
    print(f"fuzz: {N_MESSAGES} messages, {refused} refused with an error, {accepted} accepted, {closed} closed")
    await ep.close()
