"""The meters a rule's ``controller(meter_id=M)`` actions name count as the rule's meters
for the port extension (``controller_meter.py``, ``extension.py``): every rule naming M,
by a meter instruction or by such an action, must run on one switch."""

from pathlib import Path

from types import SimpleNamespace

from tandem.oneswitch.controller_meter import controller_meters
from tandem.oneswitch.extension import homed, meter_switches, ports_to_extend, split_meters
from tandem.oneswitch.packet_out_meter import meter_switch
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule

TOPO = Path(__file__).parents[1] / "endpoint" / "three_switches.yaml"  # ports 1 host, 2 and 4 snic0, 3 snic1


def test_controller_meters_are_those_of_apply_actions_and_their_clones():
    r = parse_rule("actions=controller(meter_id=2),clone(controller(id=3,meter_id=5)),controller(id=4),output:1")
    assert controller_meters(r) == {2, 5} and homed(r)
    assert controller_meters(parse_rule("actions=controller(id=4),output:1")) == set()
    assert not homed(parse_rule("in_port=1,actions=controller(id=4),output:1"))


def test_a_packet_in_meter_on_two_switches_moves_ports_to_the_host():
    state = OneSwitchState(load_topology(TOPO))
    state.apply(FlowMod("add", parse_rule("in_port=1,actions=meter:7,output:2")))
    assert split_meters(state) == {} and ports_to_extend(state) == []
    sn = parse_rule("priority=3,in_port=3,actions=controller(meter_id=7),output:1")  # snic1: meter 7 split
    assert split_meters(state, sn) == {7: {"host", "snic1"}}
    assert ports_to_extend(state, sn) == [3]
    # a meter named only by packet-in meters, on snic0's two ports: one switch, nothing moves
    state.apply(FlowMod("add", parse_rule("priority=4,in_port=2,actions=controller(meter_id=9)")))
    assert ports_to_extend(state, parse_rule("priority=4,in_port=4,actions=clone(controller(meter_id=9))")) == []
    # a wildcard rule naming it: every port
    assert ports_to_extend(state, parse_rule("priority=5,actions=controller(meter_id=9)")) == [2, 3, 4]


def test_meter_ids_above_0xffff0000_name_no_meter():  # (potail: no meter OneSwitch holds can have them)
    r = parse_rule("actions=controller(meter_id=4294967294),clone(controller(meter_id=4294901761)),controller(meter_id=3)")
    assert controller_meters(r) == {3}
    state = OneSwitchState(load_topology(TOPO))
    state.apply(FlowMod("add", parse_rule("in_port=1,actions=controller(meter_id=4294967294),output:2")))
    assert ports_to_extend(state, parse_rule("priority=5,actions=controller(meter_id=4294967294)")) == []


def test_a_packet_out_packet_in_meets_the_budget_where_the_meters_rules_run():  # (pometer: packet_out_meter.py)
    topo = load_topology(TOPO)
    state = OneSwitchState(topo)
    ep = SimpleNamespace(topo=topo, state=state)
    assert meter_switches(state, 7) == set() and meter_switch(ep, 7) == "host"  # (no rule names it: the host's)
    state.apply(FlowMod("add", parse_rule("in_port=3,actions=meter:7,output:2")))
    state.apply(FlowMod("add", parse_rule("priority=4,in_port=2,actions=clone(controller(meter_id=9))")))
    state.apply(FlowMod("add", parse_rule("priority=4,in_port=4,actions=controller(meter_id=9,id=3)")))
    assert meter_switches(state, 7) == {"snic1"} and meter_switch(ep, 7) == "snic1"
    assert meter_switches(state, 9) == {"snic0"} and meter_switch(ep, 9) == "snic0"
    state.apply(FlowMod("add", parse_rule("priority=5,in_port=1,actions=meter:9,output:3")))  # (split: the host among them)
    assert meter_switches(state, 9) == {"host", "snic0"} and meter_switch(ep, 9) == "host"
