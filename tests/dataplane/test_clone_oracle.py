"""Open vSwitch's ``clone(actions)``, dp-core against one plain OVS bridge, case by
case (the random ``clone`` item of ``tandem bench of13_oracle`` draws these and
more): the nested actions run on a copy of the packet and its state, the copy's
action set runs when they end, and the packet goes on as before the clone."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

FRAMES = [build_frame(udp_dst=1), build_frame(udp_dst=2, vlan_vid=0x1005), build_frame(udp_dst=3, ip_ttl=1),
          build_frame(udp_dst=4, payload=bytes(30))]

CASES = {
    # the copy's changes stay in the copy: headers, VLAN tags, registers, the mark
    "changes stay inside": (["ip,actions=clone(push_vlan:0x8100,set_field:4196->vlan_vid,set_field:10.0.0.9->ip_dst,"
                             "output:2),output:3",
                             ], 1, 2),
    "registers and mark restored": (["actions=set_field:0x5->reg0,clone(set_field:0x7->reg0,set_field:0x9->pkt_mark,"
                                     "resubmit(,1)),resubmit(,1)",
                                     "table=1,reg0=0x7,actions=output:2", "table=1,reg0=0x5,pkt_mark=0,actions=output:3"], 2, 2),
    # the action set written before the clone runs at the clone's end, and again at the pipeline's
    "action set runs in the copy": (["actions=write_actions(output:4,set_field:02:00:00:00:00:0b->eth_src),"
                                     "goto_table:1",
                                     "table=1,actions=clone(set_field:02:00:00:00:00:0c->eth_dst,output:2),"
                                     "set_field:02:00:00:00:00:0d->eth_dst,output:3"], 2, 4),
    # a resubmit inside writes the copy's action set only
    "written inside, run inside": (["actions=clone(resubmit(,1)),output:3",
                                    "table=1,actions=write_actions(output:2,push_vlan:0x8100)"], 2, 2),
    # exit inside a clone ends everything, the action set included
    "exit inside ends all": (["actions=write_actions(output:4),goto_table:1",
                              "table=1,actions=clone(output:2,exit,output:3),output:3"], 2, 1),
    # a TTL exception ends the nested list only; the copy's action set still runs, then the packet goes on
    "ttl exception inside": (["actions=write_actions(output:4),goto_table:1",
                              "table=1,ip,actions=clone(dec_ttl,output:2),output:3"], 2, 3),
    # the stack is copied: a pop inside sees what was pushed before, the outer stack is untouched
    "stack copied": (["ip,actions=push:NXM_OF_IP_DST[],clone(set_field:10.9.9.9->ip_dst,pop:NXM_OF_IP_SRC[],output:2),"
                      "pop:NXM_NX_REG1[],resubmit(,1)",
                      "table=1,ip,actions=move:NXM_NX_REG1[]->NXM_OF_IP_SRC[],output:3"], 2, 2),
    # clones nest; an empty one does nothing
    "nested clones": (["ip,actions=clone(set_field:10.1.1.1->ip_src,clone(set_field:5->ip_dscp,output:2),"
                       "output:3),clone(),output:4"], 1, 3),
    # a group inside runs on the copy
    "group inside": (["ip,actions=clone(set_field:10.1.1.1->ip_src,group:1),output:4"], 1, 2),
    # the copy's packet-in lists its mark and registers
    "controller inside": (["actions=clone(set_field:0x3->reg2,set_field:0x4->pkt_mark,CONTROLLER:65535),output:2"], 1, 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_clone_runs_as_open_vswitch_runs_it(name):
    from tandem.rules.ofctl import parse_group

    texts, tables, least = CASES[name]
    rules = [parse_rule(t) for t in texts]
    groups = [parse_group("group_id=1,type=all,bucket=set_field:6->ip_dscp,output:3,bucket=output:4")] \
        if name == "group inside" else []
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare(rules, groups, [(1, f) for f in FRAMES], tables)
    assert not res.mismatches, res.mismatches[0]
    assert res.frames_compared >= least
