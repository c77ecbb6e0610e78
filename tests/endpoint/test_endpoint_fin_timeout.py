"""Nicira ``fin_timeout`` through OneSwitch against one plain Open vSwitch 3.1 bridge.

The same rules and TCP frames go to both. The rules match every in_port, so their
copies sit on the host and on both sNICs; a FIN or RST enters through the copy on the
host for one rule and through a copy on an sNIC for another. FLOW_STATS must show the
same shrunk timeouts and counters, and the controller must get the same FLOW_REMOVED
(match, priority, cookie, timeouts, reason, packet and byte counts; durations differ:
wall-clock against emulated time), on the emulator backend (``--backend emu``) and on
the OVS backend. (docs/oneswitch.md §7, "fin_timeout"; oneswitch/fin_timeouts.py.)"""

from __future__ import annotations

import asyncio
import time

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_learn import start_emu
from test_endpoint_ovs_view import flow_stats, start
from test_endpoint_timeouts import _removed
from test_packet_in2_vs_ovs import _connect, plain_bridge_listening
from test_endpoint_protocol import async_test
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.nf.traffic import tcp
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
FLOWS = [
    # FIN through the sNIC copy: idle 30 -> 20, hard 60 -> 40; stays (the test ends first)
    "priority=29,cookie=0x91,tcp,tcp_src=1001,idle_timeout=30,hard_timeout=60,"
    "actions=fin_timeout(idle_timeout=20,hard_timeout=40),output:3",
    # untimed; RST through an sNIC copy: hard 3 s from its install, counted over both copies
    "priority=29,cookie=0x92,tcp,tcp_src=1002,actions=fin_timeout(hard_timeout=3),output:3",
    # untimed; FIN through the host's copy: idles out two seconds after its last packet
    "priority=29,cookie=0x93,tcp,tcp_src=1003,actions=fin_timeout(idle_timeout=2),output:3",
    # FIN through the host's copy: idle 8 stays (never grows), hard none -> 50
    "priority=29,cookie=0x94,tcp,tcp_src=1004,idle_timeout=8,actions=fin_timeout(idle_timeout=9,hard_timeout=50),output:3",
    # one copy (in_port fixed: the endpoint's fast lane for one output takes it; its copy still asks for FLOW_REMOVED)
    "priority=29,cookie=0x95,in_port=2,tcp,tcp_src=1005,actions=fin_timeout(hard_timeout=3),output:3",
]
# (virtual port, tcp_src, TCP flags): port 1 is on the host, port 2 on snic0
FRAMES = [(1, 1001, SYN), (2, 1001, FIN | ACK), (1, 1002, ACK), (2, 1002, RST), (2, 1002, ACK),
          (2, 1003, ACK), (1, 1003, FIN), (1, 1004, FIN), (1, 1004, ACK), (2, 1005, RST)]
SETTLE_S = 1.0  # Open vSwitch applies a FIN's shrink when its revalidators see the flow's TCP flags
RUN_S = 5.5  # (Open vSwitch looks for expired rules once a second)
BRIDGE = {1: ("tnd-host", 1), 2: ("tnd-snic0", 1)}


def _frame(sport: int, flags: int) -> bytes:
    return tcp("10.0.0.1", "10.0.0.2", sport, 80, flags, 1)


async def _drain(c: OFClient, seconds: float) -> list:
    """The messages that come in the next ``seconds`` (echo requests answered: Open vSwitch
    drops a controller connection that goes quiet)."""
    msgs, end = [], time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        try:
            m = await c.recv(timeout=left)
        except asyncio.TimeoutError:
            break
        if m.type == W.OFPT_ECHO_REQUEST:
            c.send(W.header(W.OFPT_ECHO_REPLY, m.xid, m.body))
        msgs.append(m)
    return msgs


def _frames_into(v: int, frames: list = FRAMES) -> list[bytes]:
    return [_frame(sport, flags) for port, sport, flags in frames if port == v]


async def _program(c: OFClient, flows: list = FLOWS) -> None:
    for text in flows:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text), send_flow_rem=True)))
    assert errors_in(await c.barrier()) == []


async def _stats(c: OFClient) -> list[tuple]:
    return sorted((e.rule.cookie, e.rule.idle_timeout, e.rule.hard_timeout, e.packet_count, e.byte_count)
                  for e in await flow_stats(c))


_REFERENCE: list = []  # one bridge's answers, measured once for both tests


async def _one_bridge() -> tuple[list, list, list]:
    if not _REFERENCE:
        _REFERENCE.append(await _measure_one_bridge())
    return _REFERENCE[0]


async def _measure_one_bridge(flows: list = FLOWS, frames: list = FRAMES) -> tuple[list, list, list]:
    with OvsSandbox() as sb:
        c = await _connect(plain_bridge_listening(sb))
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))
        await _program(c, flows)
        start_t = time.monotonic()
        for v in (1, 2):
            sb.inject("plain", v, _frames_into(v, frames))
        msgs = await _drain(c, SETTLE_S)
        stats = await _stats(c)
        msgs += await _drain(c, max(0.1, start_t + RUN_S - time.monotonic()))
        left = await _stats(c)
        c.close()
        return stats, _removed(msgs), left


async def _oneswitch_on_the_emulator(flows: list = FLOWS, frames: list = FRAMES) -> tuple[list, list, list]:
    ep, backend, c = await start_emu()
    try:
        await _program(c, flows)
        where = {v: (vp.switch, vp.port) for v, vp in ep.vports.items()}
        for v in (1, 2):
            for f in _frames_into(v, frames):
                backend.inject(*where[v], f)
        backend.run_for(SETTLE_S)
        msgs = await _drain(c, 0.2)
        stats = await _stats(c)
        backend.run_for(RUN_S - SETTLE_S)
        msgs += await _drain(c, 0.3)
        return stats, _removed(msgs), await _stats(c)
    finally:
        await ep.close()
        await backend.close()


async def _oneswitch_on_ovs(flows: list = FLOWS, frames: list = FRAMES) -> tuple[list, list, list]:
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        try:
            await _program(c, flows)
            start_t = time.monotonic()
            for v in (1, 2):
                sb.inject(*BRIDGE[v], _frames_into(v, frames))
            msgs = await _drain(c, SETTLE_S)
            stats = await _stats(c)
            msgs += await _drain(c, max(0.1, start_t + RUN_S - time.monotonic()))
            return stats, _removed(msgs), await _stats(c)
        finally:
            await ep.close()
            await backend.close()


def _check_shape(stats: list, removed: list, left: list) -> None:
    """What Open vSwitch 3.1 gives (measured on one bridge; docs/oneswitch.md)."""
    n = len(_frame(1, 0))
    assert stats == [(0x91, 20, 40, 2, 2 * n), (0x92, 0, 3, 3, 3 * n), (0x93, 2, 0, 2, 2 * n), (0x94, 8, 50, 2, 2 * n),
                     (0x95, 0, 3, 1, n)]
    assert [(e[2], e[3], e[4], e[5], e[6], e[7]) for e in removed] == [
        (0x92, 0, 3, M.OFPRR_HARD_TIMEOUT, 3, 3 * n),
        (0x93, 2, 0, M.OFPRR_IDLE_TIMEOUT, 2, 2 * n),
        (0x95, 0, 3, M.OFPRR_HARD_TIMEOUT, 1, n),
    ]
    assert [e[0] for e in left] == [0x91, 0x94]


@async_test
async def test_on_the_emulator_a_fin_through_any_copy_shrinks_the_virtual_rule():
    _check_shape(*await _oneswitch_on_the_emulator())


@pytest.mark.ovs
@async_test
async def test_fin_timeout_on_the_emulator_as_on_one_ovs_bridge():
    want = await _one_bridge()
    _check_shape(*want)
    assert await _oneswitch_on_the_emulator() == want


@pytest.mark.ovs
@async_test
async def test_fin_timeout_on_the_ovs_backend_as_on_one_ovs_bridge():
    want = await _one_bridge()
    assert await _oneswitch_on_ovs() == want


# learn's fin timeouts: the learned flow (table 1, cookie 0x97) starts with fin_timeout(2, 30); the
# second packet, a FIN, passes it (the first only learns it); it idles out two seconds later
LEARN_FLOWS = ["priority=29,cookie=0x96,tcp,tcp_src=1006,actions=learn(table=1,cookie=0x97,fin_idle_timeout=2,"
               "fin_hard_timeout=30,eth_type=0x800,nw_proto=6,NXM_OF_TCP_SRC[],output:NXM_OF_IN_PORT[]),goto_table:1"]
LEARN_FRAMES = [(1, 1006, ACK), (1, 1006, FIN | ACK)]


@pytest.mark.ovs
@async_test
async def test_a_learned_flows_fin_timeout_on_both_backends_as_on_one_ovs_bridge():
    want = await _measure_one_bridge(LEARN_FLOWS, LEARN_FRAMES)
    n = len(_frame(1, 0))
    assert want == ([(0x96, 0, 0, 2, 2 * n), (0x97, 2, 30, 1, n)], [], [(0x96, 0, 0, 2, 2 * n)])
    assert await _oneswitch_on_the_emulator(LEARN_FLOWS, LEARN_FRAMES) == want
    assert await _oneswitch_on_ovs(LEARN_FLOWS, LEARN_FRAMES) == want


# a modify after the FIN: Open vSwitch keeps the rule's (shrunk) timeouts, also when the new
# actions have no fin_timeout, and a FIN then changes nothing more
MODIFY_FLOW = "priority=29,cookie=0x98,tcp,tcp_src=1008,idle_timeout=30,actions=fin_timeout(idle_timeout=20,hard_timeout=40),output:3"
MODIFIED = "priority=29,tcp,tcp_src=1008,actions=output:4"


async def _modify_then_stats(c: OFClient, send) -> list[tuple]:
    await _program(c, [MODIFY_FLOW])
    await send(1008, FIN | ACK)
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("modify_strict", parse_rule(MODIFIED))))
    assert errors_in(await c.barrier()) == []
    await send(1008, RST)
    return await _stats(c)


@pytest.mark.ovs
@async_test
async def test_a_modify_keeps_the_shrunk_timeouts_on_the_emulator_as_on_one_ovs_bridge():
    with OvsSandbox() as sb:
        c = await _connect(plain_bridge_listening(sb))

        async def send_plain(sport: int, flags: int) -> None:
            sb.inject("plain", 2, [_frame(sport, flags)])
            await _drain(c, SETTLE_S)
        want = await _modify_then_stats(c, send_plain)
        c.close()
    n = len(_frame(1, 0))
    assert want == [(0x98, 20, 40, 2, 2 * n)]
    ep, backend, c = await start_emu()
    try:
        async def send_emu(sport: int, flags: int) -> None:
            backend.inject(ep.vports[2].switch, ep.vports[2].port, _frame(sport, flags))
            backend.run_for(SETTLE_S)
            await _drain(c, 0.1)
        assert await _modify_then_stats(c, send_emu) == want
    finally:
        await ep.close()
        await backend.close()
