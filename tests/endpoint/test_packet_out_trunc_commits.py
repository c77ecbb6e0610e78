"""``output(port=P,max_len=N)`` in a PACKET_OUT that applies a group or holds a bundle or an
``output_reg`` (oneswitch/endpoint_trunc.py): Open vSwitch commits nothing at a group or a
bucket's start, a bucket's output that sends commits the bucket's frame and that commit stays
after the group (whose flow is rolled back); a bundle's chosen member and an output_reg's port
(endpoint_output_reg.py) are outputs. Each case, measured on
one OVS 3.1 bridge (the lengths below), must give the same frames on a plain bridge and
through OneSwitch over OVS bridges (the random run is ``tandem bench packet_out_oracle --
--truncs [--bundles]``, bounded in test_packet_out_clone.py)."""

from __future__ import annotations

import asyncio

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import Group
from tandem.rules.ofctl import parse_actions, parse_group

pytestmark = [pytest.mark.ovs]

FRAME = bytes.fromhex("020000000002020000000001080045000028000000004006") + bytes(58)  # 82 bytes, in_port 1
PUSH3 = "group_id=1,type=indirect,bucket=push_vlan:0x8100,output:3"
# (groups, actions) -> the lengths each port gets, measured on Open vSwitch 3.1
CASES = {
    ((PUSH3,), "group:1,output(port=2,max_len=20)"): {2: [16], 3: [86]},
    (("group_id=1,type=all",), "push_vlan:0x8100,group:1,output(port=2,max_len=20)"): {2: [24]},
    (("group_id=1,type=all,bucket=push_vlan:0x8100,output:3,bucket=set_field:02:00:00:00:00:09->eth_src",),
     "group:1,output(port=2,max_len=20)"): {2: [16], 3: [86]},
    (("group_id=1,type=indirect,bucket=push_vlan:0x8100",), "push_vlan:0x8100,group:1,output(port=2,max_len=20)"):
        {2: [24]},
    (("group_id=1,type=indirect,bucket=push_vlan:0x8100,output:1",), "group:1,output(port=2,max_len=20)"): {2: [20]},
    (("group_id=1,type=indirect,bucket=pop_vlan,output:3",), "push_vlan:0x8100,group:1,output(port=2,max_len=20)"):
        {2: [24], 3: [82]},
    (("group_id=1,type=fast_failover,bucket=watch_port:9,push_vlan:0x8100,output:3",),
     "push_vlan:0x8100,group:1,output(port=2,max_len=20)"): {2: [24]},
    ((PUSH3, "group_id=2,type=indirect,bucket=push_vlan:0x8100,group:1"), "group:2,output(port=2,max_len=20)"):
        {3: [90]},  # (committed with two tags, 82 bytes now: cut to 12, not sent)
    ((PUSH3,), "push_vlan:0x8100,output(port=4,max_len=20),group:1,output(port=2,max_len=20)"):
        {2: [16], 3: [90], 4: [24]},
    ((PUSH3,), "push_vlan:0x8100,clone(group:1),output(port=2,max_len=20)"): {2: [16], 3: [90]},
    (("group_id=1,type=indirect,bucket=push_vlan:0x8100,output:IN_PORT",), "group:1,output(port=2,max_len=20)"):
        {1: [86], 2: [16]},
    ((), "push_vlan:0x8100,bundle(eth_src,0,active_backup,ofport,members:3),output(port=2,max_len=20)"):
        {2: [20], 3: [86]},
    ((), "push_vlan:0x8100,bundle(eth_src,0,active_backup,ofport,members:1),output(port=2,max_len=20)"): {2: [24]},
    ((), "push_vlan:0x8100,bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:3),output(port=2,max_len=20)"):
        {2: [24]},
    # output_reg: an output to the port its register holds (OpenFlow 1.0 numbers; above 0xffff nothing)
    ((), "load:2->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]"): {2: [82]},
    ((), "push_vlan:0x8100,load:3->NXM_NX_REG0[],output:NXM_NX_REG0[0..15],output(port=2,max_len=20)"):
        {2: [20], 3: [86]},
    ((), "push_vlan:0x8100,load:1->NXM_NX_REG0[],output:NXM_NX_REG0[0..15],output(port=2,max_len=20)"): {2: [24]},
    ((), "load:0x1fff8->NXM_NX_REG2[],push_vlan:0x8100,output:NXM_NX_REG2[0..15],output(port=2,max_len=20)"):
        {1: [86], 2: [20]},
    ((), "load:0x1fff8->NXM_NX_REG2[],push_vlan:0x8100,output:NXM_NX_REG2[0..16],output(port=2,max_len=20)"):
        {2: [24]},
    ((), "load:4->NXM_NX_REG1[8..15],output:NXM_NX_REG1[8..15],push_vlan:0x8100,output(port=3,max_len=20)"):
        {3: [24], 4: [82]},
}


def _run(sb, cases) -> dict:
    """Each case's lengths per port on a plain bridge and through OneSwitch (two dicts)."""
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology
    from tandem.testing.packet_out_oracle import PORTS, TOPOLOGY, _Conn, _packet_out

    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    sb.add_bridge("plain", PORTS)

    async def go() -> tuple[dict, dict]:
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _Conn(*await asyncio.open_connection("127.0.0.1", await ep.listen("ptcp:0:127.0.0.1"))).hello()
        ovs = await _Conn(*await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))).hello()
        wires = {v: (f"tnd-{w.switch}", w.port) for v, w in topo.port_map.items()}
        got: tuple[dict, dict] = ({}, {})
        for groups, text in cases:
            for c in (ovs, one):
                c.send(lambda x: M.encode_group_mod(x, "delete", Group(M.OFPG_ALL)))
                for g in groups:
                    c.send(lambda x, g=g: M.encode_group_mod(x, "add", parse_group(g)))
                c.send(_packet_out(1, parse_actions(text), FRAME))
                assert await c.barrier() == [], text
            sb.settle()
            out = sb.take_all_output()
            for side, where in zip(got, ({p: ("plain", p) for p in PORTS}, wires)):
                side[(groups, text)] = {p: sorted(len(f) for f in out[w]) for p, w in where.items() if out.get(w)}
        for c in (one, ovs):
            c.close()
        await ep.close()
        await backend.close()
        return got

    return asyncio.run(go())


def test_group_bundle_and_output_reg_commits_through_oneswitch_as_measured_on_open_vswitch():
    with OvsSandbox() as sb:
        plain, oneswitch = _run(sb, CASES)
    assert plain == CASES  # (Open vSwitch 3.1 still cuts as measured)
    assert oneswitch == CASES


def test_an_output_reg_a_packet_out_cannot_carry_out_is_named():
    """From a field the endpoint does not read (an NSH field): refused with the actions; a register
    holding TABLE's or NORMAL's number (CONTROLLER's after an unmeasured change) when the
    PACKET_OUT runs: refused then, nothing sent."""
    from tandem.oneswitch.endpoint_output_reg import output_reg_as_output, output_reg_problem
    from tandem.rules import ofwire as W

    (a,) = parse_actions("output:NXOXM_NSH_C1[0..15]")
    assert output_reg_problem(a).startswith("output_reg in a PACKET_OUT from nsh_c1")
    assert output_reg_problem(parse_actions("output:NXM_NX_REG5[0..15]")[0]) is None
    assert output_reg_problem(parse_actions("output:NXM_OF_ETH_TYPE[]")[0]) is None
    acts = parse_actions("load:0xfffd->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]")
    with pytest.raises(W.OFError) as e:  # (packet_in=False: after a change the packet-in is not measured for)
        output_reg_as_output(FRAME, acts[:1], acts[1], 1, (1, 2, 3, 4))
    assert "CONTROLLER's number (0xfffd)" in str(e.value)
    assert output_reg_as_output(FRAME, acts[:1], acts[1], 1, (1, 2, 3, 4), packet_in=True)[0].port == 0xFFFFFFFD
    acts = parse_actions("load:0xfff9->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]")
    with pytest.raises(W.OFError) as e:
        output_reg_as_output(FRAME, acts[:1], acts[1], 1, (1, 2, 3, 4))
    assert "TABLE's number (0xfff9)" in str(e.value)
