"""A PACKET_OUT that applies a group with ``ct`` in a bucket goes to the host whole
(oneswitch/packet_out_ct_group.py): the host's copy of every virtual group while one
holds ct, the physical PACKET_OUT's in_port and outputs, the forms still refused, and
the random oracle against one Open vSwitch bridge (testing/packet_out_ct_group.py)."""

from types import SimpleNamespace

import pytest

from tandem.oneswitch import packet_out_ct_group as P
from tandem.oneswitch.extension import extend, ports_to_extend
from tandem.oneswitch.packet_out_whole import SetInPort
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology
from tandem.rules import ir
from tandem.rules.ir import OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, Clone, GroupAction, Output
from tandem.rules.ofctl import parse_actions, parse_group
from tandem.testing.packet_out_oracle import TOPOLOGY

CT_GROUP = parse_group("group_id=1,type=all,bucket=ct(commit,table=1),bucket=output:2")
PLAIN = parse_group("group_id=2,type=all,bucket=output:3")
TABLE0 = parse_group("group_id=3,type=indirect,bucket=ct(table=0)")


def _topo() -> Topology:
    return Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])


def _ep(groups, backend_name="ovs", any_port=False, homed=True):
    state = OneSwitchState(_topo())
    if homed:  # (as the endpoint does before a GROUP_MOD: bucket_homing.py)
        extend(state, ports_to_extend(state, None, groups))
        state.set_groups(groups)
    backend = SimpleNamespace(name=backend_name, packet_out_from_any_port=any_port)
    return SimpleNamespace(groups={g.group_id: g for g in groups}, state=state, backend=backend)


def test_every_virtual_group_has_a_host_copy_while_one_holds_ct():
    host = _topo().host
    state = OneSwitchState(_topo())
    state.set_groups([PLAIN])
    assert [g.group_id for g in state.physical_groups(host)] == []  # (no rule applies it)
    state.set_groups([PLAIN, CT_GROUP])
    assert {1, 2} <= {g.group_id for g in state.physical_groups(host)}
    state.set_groups([PLAIN])
    assert [g.group_id for g in state.physical_groups(host)] == []


def test_the_physical_packet_out_runs_on_the_host_from_the_in_ports_host_end():
    ep = _ep([CT_GROUP, PLAIN])
    ports = {v: r.port for v, r in ep.state.topo.port_map.items() if r.switch == ep.state.topo.host}
    assert P.host_packet_out(ep, 2, [GroupAction(2), Output(3)]) is None  # (no ct: the endpoint walks it)
    sw, in_port, acts = P.host_packet_out(ep, 1, [Output(2), GroupAction(1), Clone((Output(OFPP_FLOOD),)),
                                                  Output(OFPP_IN_PORT), Output(77)])
    assert (sw, in_port) == ("host", OFPP_LOCAL)
    assert type(acts[0]) is SetInPort and acts[0].value == ports[1]
    flood = [Output(ports[v]) for v in sorted(ports) if v != 1] + [Output(OFPP_LOCAL)]
    assert acts[1:] == [Output(ports[2]), GroupAction(1), Clone(tuple(flood)), Output(OFPP_IN_PORT)]  # (77: none)
    assert P.host_packet_out(ep, OFPP_CONTROLLER, [GroupAction(1), Output(OFPP_ALL)])[1:] == (
        OFPP_CONTROLLER, [GroupAction(1), *[Output(ports[v]) for v in sorted(ports)], Output(OFPP_LOCAL)])
    # (the emulator backend: dp-core keeps the recirculated copy from any in_port, so the host end is the in_port)
    assert P.host_packet_out(_ep([CT_GROUP], "emu", True), 3, [GroupAction(1)]) == ("host", ports[3], [GroupAction(1)])


def test_the_forms_it_refuses():
    ep = _ep([CT_GROUP, PLAIN, TABLE0])
    assert P.problem(ep, parse_actions("set_field:5->pkt_mark,group:1,output:2")) is None
    assert P.problem(ep, parse_actions("group:2,CONTROLLER")) is None  # (no ct: walked)
    # (the host's switch sends the packet-ins: packet_out_whole.py; on the emulator not after check_pkt_larger)
    emu = _ep([CT_GROUP, PLAIN, TABLE0], "emu", True)
    for text in ("group:1,CONTROLLER", "ct_clear,group:1,controller(id=0)", "clone(CONTROLLER),group:1"):
        assert P.problem(ep, parse_actions(text)) is None, text
        assert P.problem(emu, parse_actions(text)) is None, text
    assert P.problem(ep, parse_actions("check_pkt_larger(40)->NXM_NX_REG1[0],group:1")) is None
    assert "CheckPktLarger" in P.problem(emu, parse_actions("check_pkt_larger(40)->NXM_NX_REG1[0],group:1"))
    assert "Controller" in P.problem(emu, parse_actions("group:1,controller(meter_id=1)"))
    assert "output:TABLE" in P.problem(ep, parse_actions("clone(output:TABLE),group:1"))
    assert "Ct" in P.problem(ep, parse_actions("ct(commit),group:1"))
    assert "Controller" in P.problem(ep, parse_actions("group:1,controller(meter_id=1)"))
    assert "pkt_mark" in P.problem(ep, parse_actions("set_field:5->pkt_mark,group:3"))
    assert "not on the host" in P.problem(_ep([CT_GROUP], homed=False), [GroupAction(1)])
    nat = parse_group("group_id=5,type=all,bucket=ct(commit,nat)")
    assert P.problem(_ep([nat]), [GroupAction(5)]) is None
    assert P.problem(_ep([nat], "emu", True), [GroupAction(5)]) is None  # (dp-core keeps the nat: bucket_nat.rs)
    # (through a bucket's group)
    nested = ir.Group(4, "all", (ir.Bucket((GroupAction(1),)),))
    for ep in (_ep([CT_GROUP, nested]), _ep([CT_GROUP, nested], "emu", True)):  # (the host's packet-ins: poemu)
        assert P.problem(ep, parse_actions("group:4,controller(userdata=01)")) is None
    assert "CheckPktLarger" in P.problem(_ep([CT_GROUP, nested], "emu", True),
                                         parse_actions("check_pkt_larger(9)->NXM_NX_REG1[0],group:4"))


@pytest.mark.ovs
@pytest.mark.parametrize("seed, nat", [(0, False), (1, True)])
def test_random_packet_outs_applying_ct_groups_match_one_ovs_bridge(seed, nat):
    from tandem.testing.packet_out_ct_group import run_ct_groups

    r = run_ct_groups(120, seed, nat=nat)
    assert not r.mismatches, r.mismatches[0]
    assert r.packet_outs >= 120 and r.recirculating > 20 and r.frames > 100 and r.connections > 50
    assert (r.nat_groups > 5) == nat


@pytest.mark.ovs
def test_the_oracle_catches_a_packet_out_from_the_extended_ports_patch_end(monkeypatch):
    """Open vSwitch 3.1 loses a recirculated copy of a PACKET_OUT whose in_port is a patch
    port (measured): sent from there, the same PACKET_OUTs differ."""
    from tandem.oneswitch import endpoint
    from tandem.testing.packet_out_ct_group import run_ct_groups

    def from_patch(ep, in_vport, actions):
        route = P.host_packet_out(ep, in_vport, actions)
        if route is None or route[1] != OFPP_LOCAL:
            return route
        return route[0], route[2][0].value, route[2][1:]

    monkeypatch.setattr(endpoint, "host_packet_out", from_patch)
    assert run_ct_groups(40, 0).mismatches


@pytest.mark.ovs
@pytest.mark.parametrize("seed, nat", [(0, False), (2, True)])
def test_dp_core_runs_random_packet_outs_applying_ct_groups_as_one_ovs_bridge(seed, nat):
    """(the emulator backend's host: dp-core ``Pipeline::packet_out``; with ``nat`` nats in the rules and the
    buckets' commits, ``pipeline/bucket_nat.rs``)"""
    from tandem.testing.packet_out_ct_group import run_dp_ct_groups

    r = run_dp_ct_groups(200, seed, nat=nat)
    assert not r.mismatches, r.mismatches[0]
    assert r.packet_outs >= 200 and r.recirculating > 50 and r.frames > 200 and r.packet_ins > 5 and r.connections > 50
    assert (r.nat_groups > 5) == nat


@pytest.mark.ovs
def test_packet_ins_in_packet_outs_applying_ct_groups_are_the_hosts_as_on_one_bridge():
    # (bounded: tandem bench packet_out_oracle -- --ct-groups --packet-ins; on the OVS backend the host's Open vSwitch
    # sends them, relayed as the virtual ones: packet_out_whole.py)
    from tandem.testing.packet_out_ct_group import run_ct_groups

    r = run_ct_groups(100, 3, packet_ins=True)
    assert r.packet_outs >= 100 and r.packet_ins > 50
    assert not r.mismatches, r.mismatches[0]


@pytest.mark.ovs
def test_dp_core_sends_the_packet_ins_of_packet_outs_applying_ct_groups_as_one_bridge():
    # (bounded: tandem bench packet_out_oracle -- --ct-groups --packet-ins --only dp; the emulator backend's host)
    from tandem.testing.packet_out_ct_group import run_dp_ct_groups

    r = run_dp_ct_groups(150, 3, packet_ins=True)
    assert r.packet_outs >= 150 and r.packet_ins > 100
    assert not r.mismatches, r.mismatches[0]
