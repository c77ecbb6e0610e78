"""A controller's timed flows on ``tandem serve --backend emu`` (dp-core ages them in
emulated time) against one plain Open vSwitch 3.1 bridge: the same rules (idle and
hard timeouts, SEND_FLOW_REM) and the same frames go to both; a flow kept busy stays,
an idle one and a hard-timed one leave, and the controller gets the same
FLOW_REMOVED from each (match, priority, cookie, timeouts, reason, packet and byte
counts; durations differ: one runs in wall-clock time, the other in emulated time)."""

from __future__ import annotations

import asyncio
import time

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_learn import start_emu
from test_endpoint_ovs_view import flow_stats
from test_packet_in2_vs_ovs import _connect, plain_bridge_listening
from test_endpoint_protocol import async_test
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule

FLOWS = [  # (rule, frames it gets at the start, the last step (every STEP_S) that sends it one more)
    ("priority=7,cookie=0x71,in_port=1,idle_timeout=2,actions=output:3", 1, 99),  # kept busy: stays
    ("priority=7,cookie=0x72,in_port=2,idle_timeout=1,actions=output:1", 3, 0),  # idles out
    ("priority=7,cookie=0x73,in_port=4,hard_timeout=2,idle_timeout=9,actions=output:2", 2, 2),  # hard ends it
    ("priority=7,cookie=0x74,in_port=3,hard_timeout=1,actions=output:4", 0, 0),  # never hit
]
FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")
RUN_S = 4.5
STEP_S = 0.5


async def _program(c: OFClient) -> None:
    for text, _, _ in FLOWS:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text), send_flow_rem=True)))
    assert errors_in(await c.barrier()) == []


def _frames_at(step: int) -> list[int]:
    """The virtual ports a frame enters at step ``step``."""
    ports = []
    for text, first, last in FLOWS:
        port = parse_rule(text).match.get("in_port").value
        ports += [port] * (first if step == 0 else int(step <= last))
    return ports


def _removed(msgs: list[M.RawMessage]) -> list[tuple]:
    out = []
    for m in msgs:
        if m.type == W.OFPT_FLOW_REMOVED:
            fr = M.decode_flow_removed(m.body)
            r = fr.rule
            out.append((r.match, r.priority, r.cookie, r.idle_timeout, r.hard_timeout, fr.reason,
                        fr.packet_count, fr.byte_count))
    return sorted(out, key=lambda e: e[2])


async def _drain(c: OFClient, quiet: float) -> list[M.RawMessage]:
    msgs = []
    while True:
        try:
            msgs.append(await c.recv(timeout=quiet))
        except asyncio.TimeoutError:
            return msgs


async def _one_bridge() -> tuple[list[tuple], list[int]]:
    """FLOW_REMOVED from one plain bridge, and the cookies of the flows left."""
    with OvsSandbox() as sb:
        c = await _connect(plain_bridge_listening(sb))
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))  # (a service connection gets async messages so)
        await _program(c)
        start, msgs = time.monotonic(), []
        for step in range(int(RUN_S / STEP_S)):
            for v in _frames_at(step):
                sb.inject("plain", v, [FRAME])
            msgs += await _drain(c, max(0.0, start + (step + 1) * STEP_S - time.monotonic()))
        left = sorted(e.rule.cookie for e in await flow_stats(c))
        c.close()
        return _removed(msgs), left


async def _oneswitch_on_the_emulator() -> tuple[list[tuple], list[int]]:
    ep, backend, c = await start_emu()
    try:
        await _program(c)
        where = {v: (vp.switch, vp.port) for v, vp in ep.vports.items()}
        msgs = []
        for step in range(int(RUN_S / STEP_S)):
            for v in _frames_at(step):
                backend.inject(*where[v], FRAME)
            backend.run_for(STEP_S)
            msgs += await _drain(c, 0.2)
        return _removed(msgs), sorted(e.rule.cookie for e in await flow_stats(c))
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_on_the_emulator_timed_flows_expire_and_busy_ones_stay():
    removed, left = await _oneswitch_on_the_emulator()
    assert [(e[2], e[5], e[6], e[7]) for e in removed] == [
        (0x72, M.OFPRR_IDLE_TIMEOUT, 3, 3 * len(FRAME)),
        (0x73, M.OFPRR_HARD_TIMEOUT, 4, 4 * len(FRAME)),
        (0x74, M.OFPRR_HARD_TIMEOUT, 0, 0),
    ]
    assert left == [0x71]


@pytest.mark.ovs
@async_test
async def test_timed_flows_expire_on_the_emulator_as_on_one_ovs_bridge():
    want, want_left = await _one_bridge()
    got, got_left = await _oneswitch_on_the_emulator()
    assert got == want
    assert got_left == want_left == [0x71]
