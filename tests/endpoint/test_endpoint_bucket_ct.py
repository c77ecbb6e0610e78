"""``ct`` in group buckets through a real OpenFlow 1.3 connection to OneSwitch: the
stateful firewall of test_endpoint_ct.py with every ``ct`` action in a group's bucket
and none in a rule. The groups are first added without ct and the rules that apply
them after (no port moves); a GROUP_MOD that puts ct into a bucket extends every sNIC
port to the host (one tracker sees both directions: bucket_ct.py), one that takes it
out again moves them back, as does deleting the group (and the rules with it)."""

from pathlib import Path

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_ct import check_firewall_traffic
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire_msgs as M
from tandem.oneswitch.packet_in_ext import physical_controller
from tandem.oneswitch.packet_out_whole import PACKET_OUT_REASON, SetInPort
from tandem.rules.ir import Controller, OFPP_CONTROLLER, OFPP_LOCAL, FlowMod, GroupAction, Output
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.packets import build_frame

TOPO = Path(__file__).with_name("three_switches.yaml")
# inside: virtual port 2 (snic0:1); outside: virtual port 3 (snic1:1)
PLAIN = ["group_id=1,type=all,bucket=output:1", "group_id=2,type=all,bucket=output:1"]
TRACKING = [
    "group_id=1,type=indirect,bucket=ct(table=1,zone=3)",
    "group_id=2,type=all,bucket=ct(commit,zone=3,exec(set_field:0x7->ct_mark)),bucket=output:3",  # (a bucket's output wins over its ct)
]
FIREWALL = [
    "table=0,priority=10,ip,actions=group:1",
    "table=0,priority=0,actions=drop",
    "table=1,priority=20,ip,in_port=2,ct_state=+trk+new,actions=group:2",
    "table=1,priority=20,ip,in_port=2,ct_state=+trk+est,actions=output:3",
    "table=1,priority=20,ip,in_port=3,ct_state=+trk+est+rpl,ct_mark=0x7,actions=output:2",
    "table=1,priority=10,ip,ct_state=+trk,actions=output:1",  # anything else: to the host's port 1
]


def _groups(c: OFClient, texts: list[str], cmd: str) -> None:
    for text in texts:
        c.send(M.encode_group_mod(c.next_xid(), cmd, parse_group(text)))


def _on_host(ep) -> bool:
    return {ep.state.topo.port_map[v].switch for v in (2, 3, 4)} == {"host"}


@async_test
async def test_ct_in_buckets_homes_the_ports_while_a_group_holds_it_and_runs_the_firewall():
    ep, backend = await emu_endpoint(TOPO)
    topo = ep.state.topo
    try:
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        _groups(c, PLAIN, "add")
        for text in FIREWALL:
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
        assert errors_in(await c.barrier()) == []
        assert ep.state.extensions == {}  # no ct anywhere yet
        _groups(c, TRACKING, "modify")  # ct comes after the rules that apply the groups
        assert errors_in(await c.barrier()) == []
        assert _on_host(ep)
        check_firewall_traffic(backend)  # (test_endpoint_ct.py's firewall, its ct all in buckets)
        _groups(c, TRACKING[:1], "modify")  # group 2 still commits: the ports stay
        assert errors_in(await c.barrier()) == []
        assert _on_host(ep)
        _groups(c, PLAIN, "modify")  # no ct in any bucket, none in a rule: the ports go back
        assert errors_in(await c.barrier()) == []
        assert ep.state.extensions == {} and ep.state.topo == topo
        _groups(c, TRACKING[1:], "modify")
        assert errors_in(await c.barrier()) == []
        assert _on_host(ep)
        _groups(c, ["group_id=2,type=all"], "delete")  # (deletes the rule that applies it too)
        assert errors_in(await c.barrier()) == []
        assert ep.state.extensions == {} and ep.state.topo == topo
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_a_packet_out_through_a_group_with_ct_goes_to_the_host_whole():
    """(oneswitch/packet_out_ct_group.py: one physical PACKET_OUT on the host, from LOCAL with
    in_port set to the virtual in_port's host end; a packet-in there stays refused)"""
    topo = load_topology(TOPO)
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    try:
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        _groups(c, [TRACKING[0], "group_id=3,type=all,bucket=group:1", "group_id=4,type=all,bucket=ct_clear,output:2"], "add")
        assert errors_in(await c.barrier()) == []
        in2 = ep.state.topo.port_map[2]
        for gid, whole in ((3, True), (1, True), (4, False)):
            backend.sent.clear()
            c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(
                0xFFFFFFFF, 2, (GroupAction(gid), Output(3)), build_frame(ipv4_src=1, ipv4_dst=2))))
            assert errors_in(await c.barrier()) == []
            sent = [(sw, port, [str(a) for a in acts]) for sw, port, acts, _ in backend.sent]
            if whole:
                assert sent == [(topo.host, OFPP_LOCAL, [str(SetInPort("in_port", in2.port, 0xFFFF_FFFF)),
                                                         str(GroupAction(gid)), str(Output(ep.state.topo.port_map[3].port))])]
            else:  # (no ct: the endpoint walks it, a physical PACKET_OUT per output; the bucket's to the in_port none)
                assert sent == [(topo.port_map[3].switch, OFPP_CONTROLLER, [str(Output(topo.port_map[3].port))])], sent
        # a packet-in: on an OVS-like backend the host's Open vSwitch sends it, tagged (packet_out_whole.py)
        backend.sent.clear()
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(
            0xFFFFFFFF, 1, (GroupAction(3), Output(OFPP_CONTROLLER)), build_frame(ipv4_src=1, ipv4_dst=2))))
        assert errors_in(await c.barrier()) == []
        assert [(sw, acts[-1]) for sw, _, acts, _ in backend.sent] == [
            (topo.host, physical_controller(Controller(reason=PACKET_OUT_REASON)))]
        # a bucket's learn does nothing (Open vSwitch runs a bucket as an action set): not in the physical PACKET_OUT
        _groups(c, ["group_id=5,type=all,bucket=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),output:2"], "add")
        backend.sent.clear()
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(0xFFFFFFFF, 1, (GroupAction(5),), build_frame())))
        assert errors_in(await c.barrier()) == []
        assert [type(a).__name__ for _, _, acts, _ in backend.sent for a in acts] == ["Output"]
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_a_packet_out_through_a_ct_group_commits_on_the_emulated_hosts_tracker():
    """The emulator backend's host runs such a PACKET_OUT on its own pipeline (dp-core
    ``packet_out``): the PACKET_OUT from inside commits the connection (group 1's copy meets
    table 1, whose rule applies group 2's commit and output), so the reply injected outside
    comes in; a bucket's nat reaches the output after the group (dp-core ``pipeline/bucket_nat.rs``)."""
    ep, backend = await emu_endpoint(TOPO)
    try:
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        _groups(c, TRACKING, "add")
        for text in FIREWALL:
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
        assert errors_in(await c.barrier()) == []
        emu, dev = backend.machine.emu, backend.machine.devices
        out = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=4000, udp_dst=53)
        reply = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4000)
        emu.inject(("switch", dev["snic1"], 1), reply, backend.now_s * 1e9 + 1e6)  # (before the commit: not let in)
        backend.run_for(0.1)
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(0xFFFFFFFF, 2, (GroupAction(1),), out)))
        assert errors_in(await c.barrier()) == []
        emu.inject(("switch", dev["snic1"], 1), reply, backend.now_s * 1e9 + 1e6)
        backend.run_for(0.1)
        assert backend.take_output("snic1", 1) == [out]  # the PACKET_OUT: committed, then out
        assert backend.take_output("snic0", 1) == [reply]  # the reply after the commit only
        assert backend.take_output("host", 1) == [reply]
        # (a bucket's nat: the output after the group sends the translated frame, as Open vSwitch's datapath)
        _groups(c, ["group_id=5,type=all,bucket=ct(commit,nat(src=10.0.0.9))"], "add")
        other = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=4001, udp_dst=53)
        c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(0xFFFFFFFF, 2, (GroupAction(5), Output(3)), other)))
        assert errors_in(await c.barrier()) == []
        backend.run_for(0.1)
        assert backend.take_output("snic1", 1) == [build_frame(ipv4_src=0x0A000009, ipv4_dst=0x0A000002, udp_src=4001,
                                                               udp_dst=53)]
    finally:
        await ep.close()
        await backend.close()
