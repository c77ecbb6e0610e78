"""The OVS backend's switch connection (backends/ofconn.py) against a scripted
switch: replies matched by xid, per-request deadlines kept by one timer, a
batch's errors reported after its barrier, and a lost connection failing what
still waits."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

from tandem.backends.ofconn import OFSwitchConnection, SwitchError
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod, Rule


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(asyncio.wait_for(fn(*a, **kw), 30))
    return wrapper


class ScriptedSwitch:
    """Answers HELLO and FEATURES and BARRIER_REQUESTs, except the next ``drop_barriers``
    barriers; refuses every FLOW_MOD whose xid is in ``refuse`` (BAD_ACTION)."""

    def __init__(self) -> None:
        self.drop_barriers = 0
        self.refuse: set[int] = set()
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        writer.write(M.encode_hello())
        buf = bytearray()
        while chunk := await reader.read(1 << 16):
            buf += chunk
            for m in M.split_messages(buf):
                if m.type == W.OFPT_FEATURES_REQUEST:
                    writer.write(M.encode_features_reply(m.xid, 0xA1, 256, 254, 0))
                elif m.type == W.OFPT_FLOW_MOD and m.xid in self.refuse:
                    writer.write(M.encode_error(m.xid, W.OFPET_BAD_ACTION, 9, m.raw[:64]))
                elif m.type == W.OFPT_BARRIER_REQUEST:
                    if self.drop_barriers:
                        self.drop_barriers -= 1
                    else:
                        writer.write(M.encode_barrier_reply(m.xid))


async def connected() -> tuple[ScriptedSwitch, OFSwitchConnection, asyncio.base_events.Server]:
    switch = ScriptedSwitch()
    server = await asyncio.start_server(switch.serve, "127.0.0.1", 0)
    conn = OFSwitchConnection("s1")
    await conn.connect(f"tcp:127.0.0.1:{server.sockets[0].getsockname()[1]}")
    return switch, conn, server


@async_test
async def test_an_unanswered_request_times_out_alone_and_the_connection_goes_on():
    switch, conn, server = await connected()
    assert conn.dpid == 0xA1
    switch.drop_barriers = 1
    t = time.monotonic()
    short = asyncio.ensure_future(conn.barrier(timeout=0.3))  # never answered
    late = asyncio.ensure_future(conn.barrier(timeout=20))  # a later deadline, answered at once
    await late
    with pytest.raises(asyncio.TimeoutError):
        await short
    assert 0.25 < time.monotonic() - t < 2.0
    await conn.barrier(timeout=5)  # and the connection still works
    assert not conn._pending and not conn._deadlines  # nothing left behind
    await conn.close()
    server.close()


@async_test
async def test_a_batch_reports_the_refused_message_after_its_barrier():
    switch, conn, server = await connected()
    xids = [conn.next_xid() for _ in range(3)]
    switch.refuse.add(xids[1])
    msgs = [M.encode_flow_mod(x, FlowMod("add", Rule())) for x in xids]
    with pytest.raises(SwitchError) as e:
        await conn.send_all(xids, msgs)
    assert [x for x, *_ in e.value.errors] == [xids[1]]
    await conn.send_all([], [])  # a batch of nothing is one barrier, answered
    await conn.close()
    server.close()


@async_test
async def test_a_lost_connection_fails_every_waiting_request():
    switch, conn, server = await connected()
    switch.drop_barriers = 2
    waiting = [asyncio.ensure_future(conn.barrier()), asyncio.ensure_future(conn.barrier())]
    await asyncio.sleep(0.1)
    switch.writers[0].close()
    for w in waiting:
        with pytest.raises(ConnectionError):
            await w
    await conn.close()
    server.close()


@async_test
async def test_a_failing_event_listener_leaves_the_connection_working():
    switch, conn, server = await connected()
    seen = []

    def listener(m: M.RawMessage) -> None:
        seen.append(m.type)
        raise RuntimeError("a bug in whoever listens")

    conn.on_async = listener
    switch.writers[0].write(W.header(W.OFPT_PORT_STATUS, 0, bytes(72)))  # an event (its body is the listener's business)
    await conn.barrier(timeout=5)  # answered after the event: the connection survived the listener
    assert seen == [W.OFPT_PORT_STATUS]
    await conn.close()
    server.close()
