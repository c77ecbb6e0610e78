"""``actset_output`` against Open vSwitch 3.1: written outputs, then later tables
matching what the action set holds (a port of the packet's own switch, one of
another switch, UNSET after a group or a clear_actions), in dp-core against one
OVS bridge and in OneSwitch's translation against the virtual switch; and a
bounded run of ``tandem bench of13_oracle -- --items match:actset_output``."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.translate import translate
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.of13_oracle import run_dp, run_translation
from tandem.testing.oneswitch_oracle import Oracle

from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs

FRAME = bytes.fromhex("020000000002020000000006080045000014000000004006b5e70a0000010a000002") + bytes(26)
# k2: ports 1, 2, 3 on the host, 5 and 6 on snic0
RULES = [
    "table=0,priority=9,in_port=5,actions=write_actions(output:6),goto_table:1",
    "table=0,priority=8,in_port=1,actions=write_actions(output:2),goto_table:1",
    "table=0,priority=7,in_port=2,actions=write_actions(output:3,group:1),goto_table:1",  # (a group: UNSET)
    "table=0,priority=6,in_port=6,actions=write_actions(output:2),goto_table:1",  # (a host port from snic0)
    "table=1,priority=5,in_port=5,actset_output=6,actions=output:1,goto_table:2",
    "table=1,priority=4,actset_output=2,actions=output:3,clear_actions,goto_table:2",
    "table=1,priority=3,actset_output=UNSET,actions=output:6,goto_table:2",
    "table=2,priority=2,in_port=5,actset_output=6,actions=output:3",
    "table=2,priority=1,actset_output=UNSET,actions=output:5",
]
GROUPS = ["group_id=1,type=all,bucket=output:1"]


def test_translation_matches_what_each_switch_holds_for_the_written_port():
    topo = TOPOS["k2"]
    rules, groups = [parse_rule(r) for r in RULES], [parse_group(g) for g in GROUPS]
    tr = translate(rules, topo, groups)
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        with Oracle(sb, topo) as o:
            o.load_virtual(rules, groups)
            o.load_translation(tr)
            rep = o.compare([(p, FRAME) for p in (1, 2, 5, 6)])
    assert rep.outputs >= 10 and not rep.mismatches, rep.mismatches[:1]


def test_dp_core_keeps_actset_output_as_open_vswitch():
    rules, groups = [parse_rule(r) for r in RULES], [parse_group(g) for g in GROUPS]
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        oracle = OvsOracle(sb, ports=[1, 2, 3, 5, 6])
        out = oracle.compare(rules, groups, [(p, FRAME) for p in (1, 2, 5, 6)], 3)
    assert out.frames_compared >= 10 and not out.mismatches, out.mismatches[:1]


def test_random_rule_sets_matching_actset_output_run_as_on_open_vswitch():
    with OvsSandbox() as sb:
        dp = run_dp(sb, ["match:actset_output"], per_item=150, seed=3, set_size=75, packets_per_set=60)
        tr = run_translation(sb, TOPOS, ["match:actset_output"], per_item=150, seed=3, set_size=75, per_port=8)
    for r in (*dp.values(), *tr.values()):
        assert r.item_rules >= 150 and r.frames > 40
        assert not r.mismatches, "\n".join(r.mismatches[:3])
