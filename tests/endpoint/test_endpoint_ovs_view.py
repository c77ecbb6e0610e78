"""OneSwitch's virtual view over real OVS bridges (dummy ports, no namespaces):
statistics are aggregated from ingress-side physical rules (a packet crossing
PCIe is counted once), physical timeouts come back as virtual FLOW_REMOVED,
physical port changes as virtual PORT_STATUS, PACKET_IN carries the virtual
in_port and table, and PACKET_OUT reaches the right physical port."""

from __future__ import annotations

import asyncio
import re
import struct
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.ovs import OvsBackend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule
from tandem.rules.ofctl import format_rule
from tandem.backends.ovs_sandbox import OvsSandbox

pytestmark = [pytest.mark.ovs]
TOPOLOGY = Path(__file__).with_name("three_switches.yaml")
FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


async def start(sb: OvsSandbox):
    topo = load_topology(TOPOLOGY)
    backend = OvsBackend(sandbox=sb)
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    port = await ep.listen("ptcp:0:127.0.0.1")
    return ep, backend, await OFClient.connect(port)


async def flow_stats(c: OFClient) -> list[S.FlowStatsEntry]:
    req = S.MultipartRequest(S.OFPMP_FLOW, 0, flow=S.FlowStatsRequest())
    rep = await c.request(lambda x: S.encode_multipart_request(x, req), W.OFPT_MULTIPART_REPLY)
    return S.decode_flow_stats(S.decode_multipart_reply(rep.body)[2])


@async_test
async def test_counters_port_stats_and_packet_out():
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        # virtual 1 (host:1) -> virtual 3 (snic1:1): crosses the host->snic1 PCIe link
        fwd = Rule(Match.of(in_port=1), (ApplyActions((Output(3),)),), priority=10, cookie=0x51)
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", fwd)))
        assert errors_in(await c.barrier()) == []
        sb.inject("tnd-host", 1, [FRAME] * 5)
        out = sb.take_all_output()
        assert out[("tnd-snic1", 1)] == [FRAME] * 5
        for _ in range(60):  # OVS moves datapath counters to the rules at revalidation
            [entry] = await flow_stats(c)
            if entry.packet_count == 5:
                break
            await asyncio.sleep(0.1)
        assert entry.rule == fwd and (entry.packet_count, entry.byte_count) == (5, 5 * len(FRAME))  # once, not per hop
        mp = lambda t, **kw: (lambda x: S.encode_multipart_request(x, S.MultipartRequest(t, 0, **kw)))
        rep = await c.request(mp(S.OFPMP_PORT_STATS, port_no=ir.OFPP_ANY), W.OFPT_MULTIPART_REPLY)
        stats = {e.port_no: e for e in S.decode_port_stats(S.decode_multipart_reply(rep.body)[2])}
        assert sorted(stats) == [1, 2, 3, 4]
        assert stats[3].tx_packets == 5 and stats[1].rx_packets == 5 and stats[2].tx_packets == 0
        rep = await c.request(mp(S.OFPMP_AGGREGATE, flow=S.FlowStatsRequest()), W.OFPT_MULTIPART_REPLY)
        assert S.decode_aggregate(S.decode_multipart_reply(rep.body)[2]) == (5, 5 * len(FRAME), 1)
        # PACKET_OUT to virtual 4 (snic0:2) and FLOOD from virtual 2
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, ir.OFPP_CONTROLLER, (Output(4),), FRAME)))
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, 2, (Output(ir.OFPP_FLOOD),), FRAME)))
        assert errors_in(await c.barrier()) == []
        out = sb.take_all_output()
        assert {k: len(v) for k, v in out.items() if v} == {("tnd-snic0", 2): 2, ("tnd-host", 1): 1, ("tnd-snic1", 1): 1}
        await ep.close()
        await backend.close()


@async_test
async def test_packet_in_flow_removed_and_port_status():
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        miss = Rule(Match(), (ApplyActions((Output(ir.OFPP_CONTROLLER),)),), table=2, priority=0, cookie=0x77)
        to_next = Rule(Match.of(in_port=4), (ir.GotoTable(2),), table=0, priority=5)
        short = Rule(Match.of(in_port=2), (ApplyActions((Output(1),)),), priority=9, cookie=0x99, hard_timeout=1)
        for r, flags in ((miss, False), (to_next, False), (short, True)):
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r, send_flow_rem=flags)))
        assert errors_in(await c.barrier()) == []
        sb.inject("tnd-snic0", 2, [FRAME])  # virtual port 4
        msgs = await c.until(W.OFPT_PACKET_IN)
        pi = M.decode_packet_in(msgs[-1].body)
        assert (pi.match.get("in_port").value, pi.table_id, pi.cookie, pi.data) == (4, 2, 0x77, FRAME)
        # the physical hard timeout fires; the controller hears about the virtual rule
        msgs = await c.until(W.OFPT_FLOW_REMOVED, timeout=10)
        fr = M.decode_flow_removed(msgs[-1].body)
        assert (fr.rule.match, fr.rule.priority, fr.rule.cookie, fr.reason) == (short.match, 9, 0x99, M.OFPRR_HARD_TIMEOUT)
        assert all(r.match != short.match for r in ep.state.virtual_rules())
        # a physical port going down is reported as its virtual port
        sb.ofctl("mod-port", "tnd-snic1", "1", "down")
        msgs = await c.until(W.OFPT_PORT_STATUS, timeout=10)
        reason, port = M.decode_port_status(msgs[-1].body)
        assert (reason, port.port_no, port.name, bool(port.config & W.OFPPC_PORT_DOWN)) == (M.OFPPR_MODIFY, 3, "v3", True)
        await ep.close()
        await backend.close()


@async_test
async def test_group_add_modify_delete_on_the_physical_switches():
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        g = ir.Group(7, "all", (ir.Bucket((Output(2),)), ir.Bucket((Output(3),))))
        c.send(M.encode_group_mod(c.next_xid(), "add", g))
        via_group = Rule(Match.of(in_port=1), (ApplyActions((ir.GroupAction(7),)),), priority=20, cookie=0x6)
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", via_group, send_flow_rem=True)))
        assert errors_in(await c.barrier()) == []
        sb.inject("tnd-host", 1, [FRAME])
        out = sb.take_all_output()
        assert {k: len(v) for k, v in out.items() if v} == {("tnd-snic0", 1): 1, ("tnd-snic1", 1): 1}
        # modify: now to virtual 4 only
        c.send(M.encode_group_mod(c.next_xid(), "modify", ir.Group(7, "all", (ir.Bucket((Output(4),)),))))
        assert errors_in(await c.barrier()) == []
        sb.inject("tnd-host", 1, [FRAME])
        out = sb.take_all_output()
        assert {k: len(v) for k, v in out.items() if v} == {("tnd-snic0", 2): 1}
        rep = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_GROUP_DESC, 0)), W.OFPT_MULTIPART_REPLY)
        assert [gr.group_id for gr in S.decode_group_desc(S.decode_multipart_reply(rep.body)[2])] == [7]
        # group counters: the packet sent through group 7 since it was modified (OVS restarts a
        # group's counters on modify), counted once, on its ingress switch
        gs_req = S.MultipartRequest(S.OFPMP_GROUP, 0, group_id=7)
        for _ in range(60):
            rep = await c.request(lambda x: S.encode_multipart_request(x, gs_req), W.OFPT_MULTIPART_REPLY)
            [(gid, packets, nbytes, buckets)] = S.decode_group_stats(S.decode_multipart_reply(rep.body)[2])
            if packets:
                break
            await asyncio.sleep(0.1)
        assert (gid, packets, nbytes, buckets) == (7, 1, len(FRAME), [(1, len(FRAME))])
        # a bucket the translator refuses (a move from in_port: a group does not know the
        # virtual port, a physical switch has the physical one) changes nothing
        xid = c.next_xid()
        move = ir.MoveField(ir.Subfield("in_port", 0, 16), ir.Subfield("reg0", 0, 16))
        c.send(M.encode_group_mod(xid, "modify", ir.Group(7, "all", (ir.Bucket((move, Output(4))),))))
        assert [e[1:] for e in errors_in(await c.barrier())] == [(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)]
        # delete: the flow that used it goes too (FLOW_REMOVED reason GROUP_DELETE)
        c.send(M.encode_group_mod(c.next_xid(), "delete", ir.Group(7)))
        msgs = await c.barrier()
        assert [M.decode_flow_removed(m.body).reason for m in msgs if m.type == W.OFPT_FLOW_REMOVED] == [M.OFPRR_GROUP_DELETE]
        assert ep.state.virtual_rules() == [] and all(not backend_groups for backend_groups in
                                                    [await backend.groups(sw) for sw in backend.switches()])
        sb.inject("tnd-host", 1, [FRAME])
        assert not any(sb.take_all_output().values())
        await ep.close()
        await backend.close()


async def table_stats(c: OFClient) -> dict[int, tuple[int, int, int]]:
    """Virtual TABLE stats: table -> (active, lookups, matched)."""
    rep = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_TABLE, 0)),
                          W.OFPT_MULTIPART_REPLY)
    return {t: (a, lk, m) for t, a, lk, m in S.decode_table_stats(S.decode_multipart_reply(rep.body)[2])}


ARP = bytes.fromhex("ffffffffffff020000000001080600010800060400010200000000010a0000010000000000000a000002")


@async_test
async def test_table_stats_count_misses_once_per_packet_like_one_ovs_bridge():
    """Packets that miss every rule raise lookup_count, not matched_count; a packet
    that crosses PCIe is looked up once per virtual table, not per switch; the
    figures equal those of one OVS bridge holding the virtual rules."""
    rules = [Rule(Match.of(in_port=1, eth_type=0x800), (ir.GotoTable(1),), priority=10),
             Rule(Match.of(eth_type=0x800, ipv4_dst=0), (ApplyActions((Output(3),)),), table=1, priority=5)]
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)
        for r in rules:
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
        assert errors_in(await c.barrier()) == []
        ref = sb.add_bridge("vref", [1, 2, 3, 4]).name
        sb.add_flows(ref, [format_rule(r) for r in rules])
        before = await table_stats(c)
        assert before[0] == (1, 0, 0) and before[1] == (1, 0, 0) and before[2] == (0, 0, 0)
        # 5 IPv4 frames hit table 0 and table 1 and cross host -> snic1; 4 ARP frames (in at
        # virtual 1 and 2) and 3 IPv4 frames at virtual 2 (snic0) miss every rule in table 0
        sends = [(1, FRAME, 5), (1, ARP, 2), (2, ARP, 2), (2, FRAME, 3)]
        for v, frame, n in sends:
            sw, port = {1: ("tnd-host", 1), 2: ("tnd-snic0", 1)}[v]
            sb.inject(sw, port, [frame] * n)
            sb.inject(ref, v, [frame] * n)
        out = sb.take_all_output()
        assert out[("tnd-snic1", 1)] == [FRAME] * 5
        want = {0: (1, 12, 5), 1: (1, 5, 5), 2: (0, 0, 0)}
        for _ in range(60):  # OVS credits tables at revalidation
            got = await table_stats(c)
            if {t: got[t] for t in want} == want:
                break
            await asyncio.sleep(0.1)
        assert {t: got[t] for t in want} == want
        # one OVS bridge with the virtual rules counts the same
        for _ in range(60):
            dump = sb.ofctl("dump-tables", ref)
            refstats = {int(t): (int(lk), int(m)) for t, lk, m in
                        re.findall(r"table (\d+):\s+active=\d+, lookup=(\d+), matched=(\d+)", dump)}
            if refstats[0] == (12, 5):
                break
            await asyncio.sleep(0.1)
        assert refstats[0] == (12, 5) and refstats[1] == (5, 5)
        await ep.close()
        await backend.close()
