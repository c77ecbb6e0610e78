"""NSH context matches without ``nsh_mdtype=1`` side by side with one plain Open vSwitch
3.1 bridge (rules/nsh.py). Open vSwitch keeps such a match as sent: its FLOW_STATS and
FLOW_REMOVED carry the context's OXM (only ovs-ofctl's text leaves it out), two rules
that differ only in it are two rules, and modify/delete strict tell them apart. The same
FLOW_MODs go to the bridge and to OneSwitch over the OVS backend, and the replies must
match byte for byte but for the durations. The packets: ``tandem bench of13_oracle --
--items match:nsh_context``."""

from __future__ import annotations

import asyncio
import struct

import pytest

from endpoint_helpers import OFClient, errors_in, ovs_backend_endpoint, ovs_bridge_client
from test_endpoint_protocol import async_test
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire as W
from tandem.rules.ir import Match

pytestmark = [pytest.mark.ovs]

ADD, MODIFY_STRICT, DELETE, DELETE_STRICT = 0, 2, 3, 4
NSH = dict(eth_type=0x894F)
# cookie -> (match, output port): priority 52, each with OFPFF_SEND_FLOW_REM
FLOWS = {
    0xA1: (Match.of(**NSH, nsh_c1=0x11), 2),
    0xB2: (Match.of(**NSH, nsh_c1=0x22), 3),  # (differs from 0xA1 in the context only)
    0xC3: (Match.of(**NSH), 4),
    0xD4: (Match.of(**NSH, nsh_mdtype=1, nsh_c1=0x11), 1),
    0xE5: (Match.of(**NSH, nsh_flags=1, nsh_ttl=5, nsh_mdtype=2, nsh_c2=(0, 0xFF)), 2),
    0xF6: (Match.of(**NSH, nsh_si=3, nsh_c4=(0x1100, 0xFF00)), 3),
}


def _flow_mod(xid: int, command: int, match: Match, port: int | None = None, cookie: int = 0) -> bytes:
    oxms = W.encode_oxms(match)
    m = struct.pack("!HH", 1, 4 + len(oxms)) + oxms
    m += bytes(-len(m) % 8)
    body = struct.pack("!QQBBHHHIIIH2x", cookie, 0, 0, command, 0, 0, 52, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 1)
    ins = b""
    if port is not None:
        act = struct.pack("!HHIH6x", 0, 16, port, 0)
        ins = struct.pack("!HH4x", 4, 8 + len(act)) + act
    return W.header(W.OFPT_FLOW_MOD, xid, body + m + ins)


async def _flow_stats(c: OFClient) -> list[bytes]:
    """Every flow of the switch's FLOW_STATS reply without its durations, sorted."""
    req = struct.pack("!HH4xB3xII4xQQ", 1, 0, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0) + struct.pack("!HH4x", 1, 4)
    x = c.next_xid()
    c.send(W.header(W.OFPT_MULTIPART_REQUEST, x, req))
    out = []
    while True:
        m = await c.recv()
        if m.type != W.OFPT_MULTIPART_REPLY or m.xid != x:
            continue
        body, off = m.body[8:], 0
        while off < len(body):
            length, = struct.unpack_from("!H", body, off)
            out.append(body[off:off + 4] + body[off + 12:off + length])
            off += length
        if not struct.unpack_from("!H", m.body, 2)[0] & 1:
            return sorted(out)


async def _quiet(c: OFClient, quiet_s: float = 1.0) -> list:
    """The messages that arrive until none has for ``quiet_s``."""
    out = []
    while True:
        try:
            out.append(await c.recv(quiet_s))
        except asyncio.TimeoutError:
            return out


async def _run(c: OFClient) -> dict[str, object]:
    """The steps on one switch: what it answers and sends after each."""
    seen: dict[str, object] = {}
    # FLOW_REMOVED for every reason (Open vSwitch sends a service connection no async message by default)
    c.send(W.header(W.OFPT_SET_ASYNC, c.next_xid(), struct.pack("!6I", 0x7, 0, 0x7, 0, 0xF, 0)))
    for cookie, (match, port) in FLOWS.items():
        c.send(_flow_mod(c.next_xid(), ADD, match, port, cookie))
    seen["add errors"] = [e[1:] for e in errors_in(await c.barrier())]
    seen["stats after add"] = await _flow_stats(c)
    c.send(_flow_mod(c.next_xid(), MODIFY_STRICT, FLOWS[0xA1][0], 3, cookie=0x99))
    seen["modify strict errors"] = [e[1:] for e in errors_in(await c.barrier())]
    seen["stats after modify strict"] = await _flow_stats(c)
    for step, cmd, match in (("delete strict", DELETE_STRICT, FLOWS[0xB2][0]), ("delete", DELETE, FLOWS[0xA1][0])):
        c.send(_flow_mod(c.next_xid(), cmd, match))
        msgs = await c.barrier() + await _quiet(c)  # (Open vSwitch sends FLOW_REMOVED after the barrier reply)
        # FLOW_REMOVED without the durations (cookie, priority, reason, table; timeouts, counts, match)
        seen[f"{step} removed"] = sorted(m.body[:12] + m.body[20:] for m in msgs if m.type == W.OFPT_FLOW_REMOVED)
        seen[f"stats after {step}"] = await _flow_stats(c)
    return seen


@async_test
async def test_context_matches_without_md_type_1_as_one_bridge_shows_them():
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2, 3, 4])
        ovs = await ovs_bridge_client(sb, "plain")
        want = await _run(ovs)
        ovs.close()
        ep, backend = await ovs_backend_endpoint(sb)
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        try:
            got = await _run(c)
        finally:
            c.close()
            await ep.close()
            await backend.close()
    # what Open vSwitch does: it takes them, shows the context, keeps the two rules apart
    assert want["add errors"] == []
    assert len(want["stats after add"]) == len(FLOWS)
    c1 = struct.pack("!II", 0xFFFF << 16 | 6 << 9 | 8, 0x005AD650) + struct.pack("!I", 0x11)
    assert sum(c1 in s for s in want["stats after add"]) == 2  # (0xA1 and 0xD4)
    assert len(want["delete strict removed"]) == 1 and len(want["stats after delete strict"]) == len(FLOWS) - 1
    assert len(want["delete removed"]) == 2  # (0xA1, and 0xD4, which is as narrow)
    assert want["stats after delete"] != want["stats after delete strict"]
    for step in want:
        assert got[step] == want[step], step
