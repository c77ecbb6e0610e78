"""A resubmit in a group bucket against Open vSwitch: dp-core against one bridge
(which keeps what the rules a bucket's resubmit finds write into the action set and
push onto the stack, as OVS does), and the translation against the virtual switch,
on random rule sets whose groups' buckets resubmit (a bounded run of ``tandem bench
of13_oracle -- --items group_resubmit``)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.of13_oracle import run_dp, run_translation

from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs
ITEM = ("group_resubmit",)
FRAME = bytes.fromhex("020000000002020000000006080045000014000000004006b5e70a0000010a000002") + bytes(26)


def test_dp_core_runs_bucket_resubmits_as_open_vswitch():
    with OvsSandbox() as sb:
        (r,) = run_dp(sb, ITEM, per_item=200, seed=3, set_size=100, packets_per_set=60).values()
    assert r.item_rules >= 200 and r.frames > 50
    assert not r.mismatches, "\n".join(r.mismatches[:3])


@pytest.mark.parametrize("rules, want", [
    # the found rule's write_actions stay in the packet's action set: out of port 2 at the end
    (["table=0,priority=1,actions=group:1,output:3", "table=1,priority=1,actions=write_actions(output:2)"], {2: 1, 3: 1}),
    # its push stays on the stack: the pop after the group reads 4, and output_reg sends to port 4
    (["table=0,priority=1,actions=load:3->NXM_NX_REG1[],push:NXM_NX_REG1[],group:1,pop:NXM_NX_REG2[],"
      "output:NXM_NX_REG2[0..15]", "table=1,priority=1,actions=load:4->NXM_NX_REG3[],push:NXM_NX_REG3[]"], {4: 1}),
])
def test_what_a_bucket_resubmit_leaves_behind(rules, want):
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        out = OvsOracle(sb).compare([parse_rule(r) for r in rules], [parse_group("group_id=1,type=all,bucket=resubmit(,1)")],
                                    [(1, FRAME)], 2)
    assert not out.mismatches
    assert out.frames_compared == sum(want.values())


def test_translation_of_bucket_resubmits_forwards_like_the_virtual_switch():
    with OvsSandbox() as sb:
        (r,) = run_translation(sb, TOPOS, ITEM, per_item=200, seed=3, set_size=100, per_port=20).values()
    assert r.item_rules >= 200 and r.frames > 50
    assert not r.mismatches, "\n".join(r.mismatches[:3])


@pytest.mark.parametrize("group", [
    "group_id=1,type=all,bucket=output:2,output:3",  # Open vSwitch runs the last output only
    "group_id=1,type=indirect,bucket=set_field:02:00:00:00:00:09->eth_dst,FLOOD",  # one output, several switches
    "group_id=1,type=all,bucket=output:3,resubmit(,1),bucket=resubmit(,1)",
])
def test_a_bucket_is_translated_as_the_action_set_open_vswitch_runs(group):
    from tandem.oneswitch.translate import translate
    from tandem.testing.oneswitch_oracle import Oracle

    topo = TOPOS["k3"]
    rules = [parse_rule("priority=1,actions=group:1"), parse_rule("table=1,priority=1,actions=output:4")]
    groups = [parse_group(group)]
    with OvsSandbox() as sb:
        with Oracle(sb, topo) as o:
            o.load_virtual(rules, groups)
            o.load_translation(translate(rules, topo, groups))
            rep = o.compare([(1, FRAME), (3, FRAME)])
    assert rep.outputs >= 1 and not rep.mismatches, rep.mismatches[:1]
