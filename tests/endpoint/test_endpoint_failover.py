"""Fast-failover groups whose watch ports are on other switches, through a real
OpenFlow 1.3 connection to OneSwitch (three-switch topology: virtual 1 = host:1,
2 = snic0:1, 3 = snic1:1, 4 = snic0:2).

A controller adds fast-failover groups watching ports on every switch and rules
on two ingress switches that use them. A port's link goes down, then up again
(the emulator's ``set_port_up``; on OVS ``netdev-dummy/set-admin-state``):
before, during and after, frames take the first live bucket, on every ingress
switch; the controller's PORT_STATUS for the virtual port arrives only once
every switch's ("live", port) group says so (docs/endpoint.md, "Port liveness").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.emu import EmuBackend
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.oneswitch.ids import N_PHYSICAL_TABLES
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_group, parse_rule

TOPO = Path(__file__).with_name("three_switches.yaml")
FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")
# on the host (ingress of virtual 1): watch snic0's port 2, then snic1's port 3, then snic0's port 4
HOST_GROUP = "group_id=5,type=fast_failover,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3,bucket=watch_port:4,output:4"
# on snic1 (ingress of virtual 3): a bucket live while port 2 or group 7 is, then port 1
SNIC1_GROUP = "group_id=6,type=fast_failover,bucket=watch_port:2,watch_group:7,output:4,bucket=watch_port:1,output:1"
WATCHED = "group_id=7,type=fast_failover,bucket=watch_port:4,output:4"  # live while port 4 (snic0) is
RULES = ["priority=10,in_port=1,actions=group:5", "priority=10,in_port=3,actions=group:6"]
WHERE = {1: ("host", 1), 2: ("snic0", 1), 3: ("snic1", 1), 4: ("snic0", 2)}


async def _setup(backend) -> tuple[OneSwitchEndpoint, OFClient]:
    topo = load_topology(TOPO)
    await backend.start(layout_for(topo))
    state = OneSwitchState(topo, pin_infrastructure=True)
    await backend.apply_steps(state.take_plan().steps)
    ep = OneSwitchEndpoint(state, topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    for g in (WATCHED, HOST_GROUP, SNIC1_GROUP):
        c.send(M.encode_group_mod(c.next_xid(), "add", parse_group(g)))
    for r in RULES:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(r))))
    assert errors_in(await c.barrier()) == []
    return ep, c


async def _port_status(c: OFClient, vport: int, live: bool) -> None:
    """Wait for the PORT_STATUS saying ``vport`` is (not) live. (Open vSwitch sends a
    port-unchanged PORT_STATUS before the one of an admin-down; OneSwitch passes both on.)"""
    while True:
        msgs = await c.until(W.OFPT_PORT_STATUS, timeout=10)
        reason, port = M.decode_port_status(msgs[-1].body)
        assert (reason, port.port_no) == (M.OFPPR_MODIFY, vport)
        if live == (not (port.state & W.OFPPS_LINK_DOWN or port.config & W.OFPPC_PORT_DOWN)):
            return


def _live_groups_agree(ep: OneSwitchEndpoint, installed: dict) -> None:
    """Every switch holds, for every virtual port, the ("live", port) group the state wants."""
    for sw in ep.backend.switches():
        want = {g.group_id: g for g in ep.state.physical_groups(sw)}
        for v in (1, 2, 3, 4):
            gid = ep.state.ids.groups[("live", v)]
            assert installed[sw][gid] == want[gid], (sw, v)
            assert len(want[gid].buckets) == (1 if ep.state.port_live(v) else 0)


async def _fail_over(c: OFClient, ep: OneSwitchEndpoint, sent, set_port, installed) -> None:
    """Ports go down and come back; ``sent(v)``: the virtual ports a frame entering at ``v``
    leaves by; ``set_port(switch, port, up)``; ``installed()``: switch -> group id -> group."""
    assert (sent(1), sent(3)) == ([2], [4])
    await set_port("snic0", 1, False)  # virtual 2 down
    await _port_status(c, 2, False)
    _live_groups_agree(ep, await installed())  # already applied when the controller hears of it
    assert (sent(1), sent(3)) == ([3], [4])  # host: next bucket; snic1: group 7 (port 4) is live
    await set_port("snic0", 2, False)  # virtual 4 down too: group 7 dies
    await _port_status(c, 4, False)
    assert (sent(1), sent(3)) == ([3], [1])
    await set_port("snic1", 1, False)  # and 3: no live bucket on the host
    await _port_status(c, 3, False)
    assert (sent(1), sent(3)) == ([], [1])
    for sw, p, v in (("snic0", 1, 2), ("snic1", 1, 3), ("snic0", 2, 4)):
        await set_port(sw, p, True)
        await _port_status(c, v, True)
    _live_groups_agree(ep, await installed())
    assert (sent(1), sent(3)) == ([2], [4])


@async_test
async def test_failover_follows_ports_on_other_switches_in_the_emulator():
    backend = EmuBackend(n_tables=N_PHYSICAL_TABLES)
    ep, c = await _setup(backend)
    try:
        def sent(vin: int) -> list[int]:
            backend.inject(*WHERE[vin], FRAME)
            backend.run_for(0.001)
            return [v for v, (sw, p) in WHERE.items() for _ in backend.take_output(sw, p)]

        async def set_port(sw: str, port: int, up: bool) -> None:
            backend.set_port_up(sw, port, up)

        async def installed() -> dict:
            return backend.group_tables

        await _fail_over(c, ep, sent, set_port, installed)
    finally:
        await ep.close()
        await backend.close()


@pytest.mark.ovs
@async_test
async def test_failover_follows_ports_on_other_switches_on_ovs():
    with OvsSandbox() as sb:
        backend = OvsBackend(sandbox=sb)
        ep, c = await _setup(backend)
        try:
            def sent(vin: int) -> list[int]:
                sw, p = WHERE[vin]
                # (no datapath flow cached before the group change: its revalidation is asynchronous,
                # and under load a frame could still meet the old bucket; purged, the frame is looked up anew)
                sb.appctl("revalidator/purge")
                sb.inject(f"tnd-{sw}", p, [FRAME])
                out = sb.take_all_output()
                return [v for v, (s, q) in WHERE.items() for _ in out.get((f"tnd-{s}", q), [])]

            async def set_port(sw: str, port: int, up: bool) -> None:
                sb.appctl("netdev-dummy/set-admin-state", f"tnd-{sw}-p{port}", "up" if up else "down")

            async def installed() -> dict:
                return {sw: {g.group_id: g for g in await backend.groups(sw)} for sw in backend.switches()}

            await _fail_over(c, ep, sent, set_port, installed)
        finally:
            await ep.close()
            await backend.close()


@async_test
async def test_a_port_down_at_start_is_not_live():
    backend = EmuBackend(n_tables=N_PHYSICAL_TABLES)
    topo = load_topology(TOPO)
    await backend.start(layout_for(topo))
    backend.set_port_up("snic1", 1, False)
    state = OneSwitchState(topo, pin_infrastructure=True)
    await backend.apply_steps(state.take_plan().steps)
    ep = OneSwitchEndpoint(state, topo, backend)
    try:
        await ep.port_events_done()
        assert [v for v in (1, 2, 3, 4) if not state.port_live(v)] == [3]
        _live_groups_agree(ep, backend.group_tables)
    finally:
        await ep.close()
        await backend.close()
