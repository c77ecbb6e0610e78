"""dp-core against one Open vSwitch bridge on hand-written conjunctive matches
(the random ones: tandem bench of13_oracle -- --items conjunction): a conj_id
flow that moves conj_id into a register (OVS reads 0 there), a flow hidden
behind a dimension flow's very match, and priority interplay."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

RULES = [
    "table=0,priority=10,udp,nw_src=10.0.0.1,actions=conjunction(5,1/2)",
    "table=0,priority=10,udp,nw_src=10.0.0.3,actions=conjunction(5,1/2),conjunction(6,1/2)",
    "table=0,priority=10,udp,nw_dst=10.0.0.2,actions=conjunction(5,2/2)",
    "table=0,priority=10,udp,nw_dst=10.0.0.4,actions=conjunction(6,2/2)",
    "table=0,priority=8,udp,nw_dst=10.0.0.4,actions=output:4",  # hidden behind conjunction(6,2/2)'s match
    "table=0,priority=5,conj_id=5,actions=move:NXM_NX_CONJ_ID[]->NXM_NX_REG0[],goto_table:1",
    "table=0,priority=3,udp,actions=output:3",
    "table=0,priority=1,conj_id=6,actions=output:2",
    "table=1,priority=5,reg0=0,actions=output:1",
    "table=1,priority=1,actions=output:2",
]


def test_hand_written_conjunctions_forward_as_open_vswitch_does():
    frames = [build_frame(ipv4_src=0x0A000000 | s, ipv4_dst=0x0A000000 | d, ip_proto=17, udp_src=1, udp_dst=2)
              for s in (1, 3, 9) for d in (2, 4, 9)]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare([parse_rule(r) for r in RULES], [], [(4, f) for f in frames], 2)
    assert res.frames_compared >= 6  # (an output to the in_port sends nothing)
    assert not res.mismatches, res.mismatches[:2]
