"""dp-core's ``actset_output`` against one Open vSwitch 3.1 bridge where it is not a
function of the action set alone: a bucket's resubmit writes the set but the value
comes back as it was (so does a clone's), a resubmit keeps it, a lookup in table 0
that a written ``output:TABLE`` makes sees TABLE, and a group written before an
output keeps it UNSET (crates/dp-core/src/pipeline/actset.rs)."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = [pytest.mark.ovs]

FRAME = bytes.fromhex("020000000002020000000006080045000014000000004006b5e70a0000010a000002") + bytes(26)
LATER = ["table=2,actions=write_actions(output:3)",
         "table=1,priority=2,actset_output=3,actions=output:1", "table=1,priority=1,actset_output=UNSET,actions=output:2"]
CASES = {
    "a bucket's resubmit": (["table=0,actions=group:1,goto_table:1", *LATER], ["group_id=1,type=all,bucket=resubmit(,2)"], 2),
    "a clone's resubmit": (["table=0,actions=clone(resubmit(,2)),goto_table:1", *LATER], [], 2),
    "a resubmit": (["table=0,actions=resubmit(,2),goto_table:1", *LATER], [], 2),
    "written output:TABLE": (["table=0,priority=5,actset_output=UNSET,actions=write_actions(output:TABLE),goto_table:1",
                              "table=0,priority=4,actset_output=TABLE,actions=output:3", "table=0,priority=3,actions=output:4",
                              "table=1,actions=drop"], [], 1),
    "a group, then an output": (["table=0,actions=write_actions(group:1),goto_table:1",
                                 "table=1,actions=write_actions(output:3),goto_table:2",
                                 "table=2,priority=2,actset_output=3,actions=output:1",
                                 "table=2,priority=1,actset_output=UNSET,actions=output:2"], ["group_id=1,type=all,bucket=output:4"], 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dp_core_keeps_actset_output_as_open_vswitch(name):
    rules, groups, frames = CASES[name]
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        out = OvsOracle(sb, ports=[1, 2, 3, 4]).compare([parse_rule(r) for r in rules], [parse_group(g) for g in groups],
                                                       [(4, FRAME)], 3)
    assert out.frames_compared == frames and not out.mismatches, out.mismatches[:1]
