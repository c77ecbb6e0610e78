"""How the endpoint hands queued plans to the switches (endpoint_session.kick):
a batch of one-step plans is written on the spot when everything before it is
written and no other plan holds the gate, and chained behind the earlier batch
otherwise; the gate itself (endpoint_common.ApplyGate) serves in order and
survives cancelled waiters. Over real OVS bridges: what the bridges hold after
each barrier is what the controller asked for, in order."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.endpoint_common import ApplyGate
from tandem.oneswitch.endpoint_session import Session
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, FlowMod, GroupAction, Match, Output, Rule

pytestmark = [pytest.mark.ovs]
TOPOLOGY = Path(__file__).with_name("three_switches.yaml")


@async_test
async def test_the_gate_serves_in_order_and_try_hold_never_jumps_the_queue():
    gate, order = ApplyGate(), []

    async def holder(name: str, hold: float) -> None:
        async with gate:
            order.append(name)
            await asyncio.sleep(hold)

    first = asyncio.ensure_future(holder("a", 0.05))
    await asyncio.sleep(0)
    assert gate.locked() and not gate.try_hold()  # held
    waiting = [asyncio.ensure_future(holder(n, 0)) for n in "bcd"]
    await asyncio.sleep(0)
    waiting[1].cancel()  # a waiter that gives up is skipped, not handed the gate
    await first
    assert not gate.try_hold()  # "b" is being handed the gate: no jumping ahead of it
    await asyncio.gather(waiting[0], waiting[2])
    assert order == ["a", "b", "d"] and not gate.locked()
    assert gate.try_hold() and gate.locked()
    gate.release()
    assert not gate.locked()


def add(xid: int, in_port: int, out: int, mac: int) -> M.RawMessage:
    rule = Rule(Match.of(in_port=in_port, eth_dst=mac), (ApplyActions((Output(out),)),), priority=5)
    raw = M.encode_flow_mod(xid, FlowMod("add", rule))
    return M.split_messages(bytearray(raw))[0]


def installed(sb: OvsSandbox, mac: int) -> bool:
    return any(f"dl_dst=00:00:00:00:00:{mac:02x}" in f for sw in ("host", "snic0", "snic1") for f in sb.dump_flows(f"tnd-{sw}"))


def in_flight(backend: OvsBackend) -> int:
    return sum(len(c._pending) for c in backend.conns.values())


async def pinned_endpoint(sb: OvsSandbox) -> tuple[OneSwitchEndpoint, OvsBackend, OFClient, Session]:
    """An endpoint over OVS bridges as `tandem serve` runs it (shared rules pinned), a
    connected controller, and that controller's session."""
    topo = load_topology(TOPOLOGY)
    backend = OvsBackend(sandbox=sb)
    await backend.start(layout_for(topo))
    state = OneSwitchState(topo, pin_infrastructure=True)
    await backend.apply_steps(state.take_plan().steps)
    ep = OneSwitchEndpoint(state, topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    assert await c.echo_ok()
    (session,) = ep.sessions
    return ep, backend, c, session


@async_test
async def test_a_batch_is_written_at_once_unless_the_gate_is_held_or_a_chained_batch_waits():
    with OvsSandbox() as sb:
        ep, backend, c, s = await pinned_endpoint(sb)
        s.handle_flow_mod(add(10, 1, 3, 0x10))
        s.kick()
        assert in_flight(backend) == 1  # written before this coroutine yielded once

        s.handle_flow_mod(add(11, 2, 1, 0x11))
        s.kick()  # the batch before is written (only not yet confirmed): this one goes at once too
        assert in_flight(backend) == 2

        await ep.apply_lock.__aenter__()  # another plan holds the gate
        s.handle_flow_mod(add(12, 4, 3, 0x12))
        s.kick()
        assert in_flight(backend) == 2  # not written: it waits for the gate
        await ep.apply_lock.__aexit__(None, None, None)
        s.handle_flow_mod(add(13, 3, 2, 0x13))
        s.kick()  # the gate is free, but the batch before is not written yet: chained behind it
        assert in_flight(backend) == 2
        await s.flush()
        assert in_flight(backend) == 0
        for mac in (0x10, 0x11, 0x12, 0x13):
            assert installed(sb, mac)
        assert errors_in(await c.barrier()) == []  # and no error replies
        c.close()
        await ep.close()
        await backend.close()


@async_test
async def test_a_long_stream_installs_every_rule_by_the_barrier():
    with OvsSandbox() as sb:
        ep, backend, c, _ = await pinned_endpoint(sb)
        n = 1500  # several batches of BATCH_OPS, written while the rest is translated
        ports = [1, 2, 3, 4]
        for i in range(n):
            rule = Rule(Match.of(in_port=ports[i % 4], eth_dst=0x020000000000 + i),
                        (ApplyActions((Output(ports[(i + 1) % 4]),)),), priority=7)
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", rule)))
        assert errors_in(await c.barrier()) == []
        held = sum(1 for sw in ("host", "snic0", "snic1") for f in sb.dump_flows(f"tnd-{sw}") if "priority=7" in f)
        assert held == n
        c.close()
        await ep.close()
        await backend.close()




@async_test
async def test_a_refusal_of_a_batch_written_at_once_reaches_the_flow_mods_xid():
    with OvsSandbox() as sb:
        ep, backend, c, s = await pinned_endpoint(sb)
        m = add(21, 1, 3, 0x21)
        s.handle_flow_mod(m)
        (_, [[op]]), = s.pending
        bad = Rule(Match.of(in_port=1), (ApplyActions((GroupAction(77),)),), table=op.rule.table, priority=9)
        s.pending[0][1][0][0] = dataclasses.replace(op, rule=bad)  # a physical op the bridge refuses
        s.kick()  # written at once; the refusal comes with the barrier reply
        msgs = await c.barrier()
        assert errors_in(msgs) == [(21, 2, 9)]  # BAD_ACTION / BAD_OUT_GROUP, for the FLOW_MOD that caused it
        c.close()
        await ep.close()
        await backend.close()
