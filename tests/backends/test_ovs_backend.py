"""The OVS backend on a private dummy-datapath ovs-vswitchd: bridges, patch links,
rules over OpenFlow with barriers, packets, stats, events, errors, clean-up."""

from __future__ import annotations

import asyncio
import functools

import pytest

from tandem.backends.base import BackendError, FlowOp, GroupOp, PacketIn, PairOp, PhysicalLayout, PhysicalLink
from tandem.backends.ovs import OvsBackend
from tandem.rules import ir
from tandem.rules.ir import ApplyActions, Bucket, Group, GroupAction, Match, Output, PushVlan, Rule, SetField
from tandem.backends.ovs_sandbox import OvsSandbox, pid_alive

pytestmark = [pytest.mark.ovs]

LAYOUT = PhysicalLayout({"host": (1,), "snic0": (1, 2)}, (PhysicalLink("host", 100, "snic0", 100),),
                        datapath_ids={"host": 0xA1, "snic0": 0xA2})
FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(asyncio.wait_for(fn(*a, **kw), 60))
    return wrapper


@async_test
async def test_build_install_forward_and_count():
    with OvsSandbox() as sb:
        b = OvsBackend(sandbox=sb)
        events = []
        b.subscribe(events.append)
        await b.start(LAYOUT)
        assert sorted(b.switches()) == ["host", "snic0"]
        assert [p.port for p in b.ports("snic0")] == [1, 2, 100]
        assert "dpid:00000000000000a2" in sb.ofctl("show", "tnd-snic0")
        to_snic = Rule(Match.of(in_port=1), (ApplyActions((PushVlan(), SetField("vlan_vid", 0x1009), Output(100))),), cookie=1)
        deliver = Rule(Match.of(in_port=100, vlan_vid=0x1009), (ApplyActions((ir.PopVlan(), Output(2), Output(ir.OFPP_CONTROLLER))),), cookie=2)
        await b.apply([FlowOp("host", "add", to_snic), FlowOp("snic0", "add", deliver)])
        # the barrier has returned: the rules are there
        assert sb.dump_flows("tnd-host") == ["cookie=0x1, in_port=1 actions=push_vlan:0x8100,set_field:4105->vlan_vid,output:100"]
        sb.inject("tnd-host", 1, [FRAME] * 3)
        out = sb.take_all_output()
        assert out[("tnd-snic0", 2)] == [FRAME] * 3 and out[("tnd-snic0", 1)] == []
        for _ in range(50):
            if len(events) >= 3:
                break
            await asyncio.sleep(0.05)
        pis = [e for e in events if isinstance(e, PacketIn)]
        assert [(e.switch, e.in_port, e.frame, e.cookie) for e in pis] == [("snic0", 100, FRAME, 2)] * 3
        for _ in range(60):  # datapath-flow counters reach the OpenFlow rule at revalidation
            [fs] = await b.flow_stats("host")
            if fs.packet_count == 3:
                break
            await asyncio.sleep(0.1)
        assert fs.rule.match == to_snic.match and (fs.packet_count, fs.byte_count) == (3, 3 * len(FRAME))
        ps = {p.port_no: p for p in await b.port_stats("snic0")}
        assert ps[2].tx_packets == 3 and ps[100].rx_packets == 3
        # strict delete removes exactly that rule
        await b.apply([FlowOp("snic0", "delete_strict", deliver)])
        assert sb.dump_flows("tnd-snic0") == []
        await b.close()
        assert sb.vsctl("list-br") == ""  # its bridges are removed, the caller's sandbox keeps running


@async_test
async def test_groups_packet_out_and_refusals():
    with OvsSandbox() as sb:
        b = OvsBackend(sandbox=sb)
        await b.start(LAYOUT)
        g = Group(5, "all", (Bucket((Output(1),)), Bucket((Output(2),))))
        await b.apply([GroupOp("snic0", "add", g), FlowOp("snic0", "add", Rule(Match.of(in_port=100), (ApplyActions((GroupAction(5),)),)))])
        assert [(x.group_id, x.type, [[a.port for a in bk.actions] for bk in x.buckets]) for x in await b.groups("snic0")] \
            == [(5, "all", [[1], [2]])]
        await b.packet_out("host", ir.OFPP_CONTROLLER, [Output(100)], FRAME)
        out = sb.take_all_output()
        assert out[("tnd-snic0", 1)] == [FRAME] and out[("tnd-snic0", 2)] == [FRAME]
        with pytest.raises(BackendError) as e:
            await b.apply([FlowOp("host", "add", Rule(Match.of(in_port=1), (ApplyActions((GroupAction(77),)),)))])
        assert e.value.switch == "host" and e.value.of_error == (2, 9)  # BAD_ACTION / BAD_OUT_GROUP
        with pytest.raises(BackendError):
            await b.apply([FlowOp("nope", "add", Rule())])
        await b.clear()
        assert sb.dump_flows("tnd-snic0") == [] and await b.groups("snic0") == []
        await b.close()


@async_test
async def test_private_instance_and_attach_mode_clean_up(tmp_path):
    # private: the backend starts and stops its own ovs-vswitchd
    b = OvsBackend(run_dir=tmp_path / "run")
    await b.start(LAYOUT)
    pid = int((tmp_path / "run" / "vswitchd.pid").read_text())
    await b.close()
    assert not pid_alive(pid), "ovs-vswitchd left running after close()"
    # attach: bridges go into a running OVS and only they are removed
    with OvsSandbox() as sb:
        sb.add_bridge("keep", [1])
        a = OvsBackend(ovs_db=f"unix:{sb.db_sock}", ovs_rundir=str(sb.dir), datapath_type="dummy", bridge_prefix="att")
        await a.start(LAYOUT)
        assert set(sb.vsctl("list-br").split()) == {"keep", "att-host", "att-snic0"}
        await a.apply([FlowOp("host", "add", Rule(Match.of(in_port=1), (ApplyActions((Output(100),)),)))])
        await a.close()
        assert sb.vsctl("list-br").split() == ["keep"]


@async_test
async def test_a_pcie_link_port_cannot_be_a_named_interface():
    # OneSwitch's flow id crosses a link in pkt_mark: patch ports keep it, a veth or wire would not
    layout = PhysicalLayout(LAYOUT.switches, LAYOUT.links, port_names={("snic0", 100): "veth-x"})
    b = OvsBackend(run_dir=None)
    with pytest.raises(BackendError, match=r"snic0:100 is a PCIe link port.*'veth-x'"):
        await b.start(layout)
    assert b.sandbox is None  # refused before anything was started


@async_test
async def test_a_batch_submitted_behind_a_port_pair_is_written_after_it():
    """submit() writes at once, but a batch with a PairOp waits for ovs-vsctl; a batch
    submitted meanwhile must not overtake it (here: its delete would come before the add)."""
    with OvsSandbox() as sb:
        b = OvsBackend(sandbox=sb)
        await b.start(LAYOUT)
        to_pair = Rule(Match.of(in_port=1), (ApplyActions((Output(101),)),), priority=9, cookie=5)
        first = b.submit([PairOp("host", 101, "snic0", 101), FlowOp("host", "add", to_pair),
                          FlowOp("snic0", "add", Rule(Match.of(in_port=101), (ApplyActions((Output(2),)),), cookie=3))])
        second = b.submit([FlowOp("host", "delete_strict", to_pair)])
        third = b.submit([FlowOp("host", "add", Rule(Match.of(in_port=1), (ApplyActions((Output(101),)),), cookie=4))])
        await asyncio.gather(first, second, third)
        assert [p.port for p in b.ports("host")] == [1, 100, 101]
        assert sb.dump_flows("tnd-host") == ["cookie=0x4, in_port=1 actions=output:101"]
        sb.inject("tnd-host", 1, [FRAME])
        assert sb.take_all_output()[("tnd-snic0", 2)] == [FRAME]
        fourth = b.submit([FlowOp("host", "delete_strict", Rule(Match.of(in_port=1), cookie=4))])  # written at once
        assert not isinstance(fourth, asyncio.Task)
        await fourth
        assert sb.dump_flows("tnd-host") == []
        await b.close()
