"""OneSwitchState.remap_ports: the ports of one NF move together in one plan (NF migration)."""

import pytest

from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule

# NF ports 3 (in) and 4 (out) on the host; traffic 1 -> NF -> 2.
TOPO = Topology.build({"host": "host", "snic0": "snic"}, [("host:100", "snic0:100")],
                      {1: "snic0:1", 2: "host:2", 3: "host:3", 4: "host:4"})


def st():
    s = OneSwitchState(TOPO)
    for inp, out in ((1, 3), (4, 2)):
        s.apply(FlowMod("add", Rule(Match.of(in_port=inp), (ApplyActions((Output(out),)),))))
    return s


def test_both_ports_move_in_one_plan_and_deletes_come_last():
    s = st()
    plan = s.remap_ports({3: PortRef("snic0", 3), 4: PortRef("snic0", 4)})
    assert s.topo.port_map[3] == PortRef("snic0", 3) and s.topo.port_map[4] == PortRef("snic0", 4)
    ops = [op.op for op in plan.ops()]
    first_delete = ops.index("delete_strict")
    assert all(o == "delete_strict" for o in ops[first_delete:])
    # the NF's output rule now lives on the sNIC only
    assert [sw for sw, _ in s.ingress_rules(Rule(Match.of(in_port=4), (ApplyActions((Output(2),)),)))] == ["snic0"]


def test_remap_ports_refuses_unknown_ports_and_split_moves():
    with pytest.raises(ValueError, match="virtual port 9 does not exist"):
        st().remap_ports({9: PortRef("snic0", 9)})
    with pytest.raises(ValueError, match="one switch for one other"):
        st().remap_ports({3: PortRef("snic0", 3), 1: PortRef("host", 1)})
