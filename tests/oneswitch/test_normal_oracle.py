"""output:NORMAL through OneSwitch, against Open vSwitch.

While a virtual rule outputs to NORMAL every sNIC port is extended to the host
(extension.py, ``NORMAL``), so the host bridge's MAC-learning switch is the virtual
switch's: it learns each virtual port at its host number, and floods only virtual
ports (the PCIe link ports are no-flood, as backends/ovs.py makes them). Random rule
sets ending in NORMAL (generate_normal.py) and traffic with moving hosts, VLAN tags
and broadcasts, one packet at a time, against one OVS bridge."""

import pytest

from tandem.oneswitch.extension import NORMAL, one_switch, ports_to_extend
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.state import OneSwitchState
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.testing.learn_oracle import TOPOS, build, run_learn_oracle


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed", [("k3", 3), ("chain", 4)])
def test_normal_through_oneswitch_matches_one_ovs_bridge(topo_name, seed):
    r = run_learn_oracle(TOPOS[topo_name], seed, 40, 80, normal=True)
    assert not r.traffic.mismatches, "\n".join(map(str, r.traffic.mismatches[:3]))
    assert r.learning_rules >= 15 and r.traffic.packets == 80 and r.traffic.outputs > 80
    assert len(r.traffic.expected_by_port) >= 3  # NORMAL reached several ports


def test_a_normal_rule_homes_every_port_and_becomes_the_hosts_normal():
    topo = TOPOS["k3"]
    rule = parse_rule("priority=5,actions=write_actions(NORMAL),goto_table:1")
    assert one_switch(rule) == [NORMAL] and ports_to_extend(OneSwitchState(topo), rule) == [3, 4, 5]
    state, _ = build(topo, [rule])
    (copy,) = [r for r in state.physical_rules("host") if r.priority == 5]
    assert copy.instructions == rule.instructions


def test_normal_on_an_snic_is_refused():
    with pytest.raises(TranslationError, match="host switch only"):
        OneSwitchState(TOPOS["k3"]).apply(FlowMod("add", parse_rule("priority=5,in_port=3,actions=NORMAL")))
