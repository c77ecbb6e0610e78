"""Nicira learn through the OneSwitch endpoint over real OVS bridges: the learning rule
homes every port to the host, the host switch learns, a learned flow forwards the next
frame across the switches, FLOW_STATS / AGGREGATE / TABLE show the learned flow in
virtual terms (as one OVS bridge would), and deleting the learning rule with
delete_learned removes it; the same through the emulator backend (dp-core learns)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_ovs_view import flow_stats, start
from test_endpoint_protocol import async_test
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame

TOPOLOGY = Path(__file__).with_name("three_switches.yaml")
LEARNER = parse_rule("priority=5,cookie=0x33,actions=learn(table=1,cookie=0x44,delete_learned,"
                     "NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),goto_table:1")
A, B = 0x0200_0000_000A, 0x0200_0000_000B
TIMED_LEARNER = parse_rule("priority=5,actions=learn(table=1,hard_timeout=1,send_flow_rem,cookie=0x45,"
                           "NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])")


async def start_emu() -> tuple[OneSwitchEndpoint, object, OFClient]:
    """A OneSwitch endpoint on the emulator backend (``tandem serve --backend emu``) and a client."""
    ep, backend = await emu_endpoint(TOPOLOGY)
    return ep, backend, await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))


async def add_timed_learner(c: OFClient) -> None:
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", TIMED_LEARNER)))
    assert errors_in(await c.barrier()) == []


async def expect_a_timed_out(c: OFClient) -> None:
    """The controller gets one FLOW_REMOVED: TIMED_LEARNER's flow for A, hard timeout."""
    msgs = await c.until(W.OFPT_FLOW_REMOVED, timeout=10)
    (fr,) = [M.decode_flow_removed(m.body) for m in msgs if m.type == W.OFPT_FLOW_REMOVED]
    assert fr.reason == M.OFPRR_HARD_TIMEOUT
    assert fr.rule == Rule(Match.of(eth_dst=A), (), 1, 0x8000, 0x45, 0, 1)


@pytest.mark.ovs
@async_test
async def test_a_flow_learned_on_the_host_forwards_and_shows_in_virtual_terms():
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        for r in (LEARNER, parse_rule("table=1,priority=0,actions=drop")):
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
        assert errors_in(await c.barrier()) == []
        sb.inject("tnd-snic1", 1, [build_frame(eth_src=A, eth_dst=B)])  # A is at virtual 3 (snic1:1)
        sb.settle()
        frame = build_frame(eth_src=B, eth_dst=A)
        sb.inject("tnd-host", 1, [frame])  # from virtual 1 (host:1) to A: the learned flow sends it to 3
        sb.settle()
        assert sb.take_all_output().get(("tnd-snic1", 1)) == [frame]
        for _ in range(60):  # OVS moves datapath counters to the rules at revalidation
            learned = [e for e in await flow_stats(c) if e.rule.cookie == 0x44]
            if [e.rule.match.get("eth_dst").value for e in learned] == [B, A] and all(e.packet_count for e in learned[1:]):
                break
            await asyncio.sleep(0.1)
        by_dst = {e.rule.match.get("eth_dst").value: e.rule for e in learned}
        for mac, vport in ((A, 3), (B, 1)):  # (Open vSwitch gives a learned output max_len 0)
            assert by_dst[mac] == Rule(Match.of(eth_dst=mac), (ApplyActions((Output(vport, 0),)),), 1, 0x8000, 0x44)
        mp = lambda t, **kw: (lambda x: S.encode_multipart_request(x, S.MultipartRequest(t, 0, **kw)))
        rep = await c.request(mp(S.OFPMP_AGGREGATE, flow=S.FlowStatsRequest(table_id=1)), W.OFPT_MULTIPART_REPLY)
        assert S.decode_aggregate(S.decode_multipart_reply(rep.body)[2])[2] == 3  # the drop rule and two learned
        rep = await c.request(mp(S.OFPMP_TABLE), W.OFPT_MULTIPART_REPLY)
        table1 = S.decode_table_stats(S.decode_multipart_reply(rep.body)[2])[1]
        assert table1[1] == 3  # active count
        # a controller's delete reaches learned flows (non-strict, naming the MAC), as on one bridge
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("delete", Rule(Match.of(eth_dst=A), (), 1))))
        assert errors_in(await c.barrier()) == []
        assert sorted(e.rule.match.get("eth_dst").value for e in await flow_stats(c) if e.rule.cookie == 0x44) == [B]
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("delete_strict", LEARNER)))
        assert errors_in(await c.barrier()) == []
        assert [e.rule for e in await flow_stats(c)] == [parse_rule("table=1,priority=0,actions=drop")]
        await ep.close()
        await backend.close()


@pytest.mark.ovs
@async_test
async def test_a_learned_flow_that_times_out_is_reported_in_virtual_terms():
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        await add_timed_learner(c)
        sb.inject("tnd-snic0", 2, [build_frame(eth_src=A, eth_dst=B)])  # A is at virtual 4 (snic0:2)
        await expect_a_timed_out(c)
        await ep.close()
        await backend.close()


@async_test
async def test_on_the_emulator_a_learned_flow_times_out_in_emulated_time():
    ep, backend, c = await start_emu()
    try:
        await add_timed_learner(c)
        backend.inject("snic0", 2, build_frame(eth_src=A, eth_dst=B))  # A is at virtual 4 (snic0:2)
        backend.run_for(0.5)
        assert [e.rule.cookie for e in await flow_stats(c)].count(0x45) == 1
        backend.run_for(1.0)  # past the hard timeout, no packet needed
        await expect_a_timed_out(c)
        assert [e.rule.cookie for e in await flow_stats(c)].count(0x45) == 0
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_the_emulator_backend_learns_and_a_learned_flow_forwards():
    """``tandem serve --backend emu``: dp-core on the host learns, the learned flow sends
    the next frame across PCIe to the sNIC port, FLOW_STATS shows it in virtual terms, and
    deleting the learning rule (delete_learned) removes it."""
    ep, backend, c = await start_emu()
    try:
        for r in (LEARNER, parse_rule("table=1,priority=0,actions=drop")):
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
        assert errors_in(await c.barrier()) == []
        backend.inject("snic1", 1, build_frame(eth_src=A, eth_dst=B))  # A is at virtual 3 (snic1:1)
        backend.run_for(0.01)
        assert backend.take_output("snic1", 1) == []
        frame = build_frame(eth_src=B, eth_dst=A)
        backend.inject("host", 1, frame)  # from virtual 1 to A: the learned flow sends it to 3
        backend.run_for(0.01)
        assert backend.take_output("snic1", 1) == [frame]
        learned = sorted((e for e in await flow_stats(c) if e.rule.cookie == 0x44),
                         key=lambda e: e.rule.match.get("eth_dst").value)
        assert [e.rule for e in learned] == [
            Rule(Match.of(eth_dst=mac), (ApplyActions((Output(vport, 0),)),), 1, 0x8000, 0x44)
            for mac, vport in ((A, 3), (B, 1))]
        assert [e.packet_count for e in learned] == [1, 0]
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("delete_strict", LEARNER)))
        assert errors_in(await c.barrier()) == []
        assert [e.rule for e in await flow_stats(c)] == [parse_rule("table=1,priority=0,actions=drop")]
    finally:
        await ep.close()
        await backend.close()
