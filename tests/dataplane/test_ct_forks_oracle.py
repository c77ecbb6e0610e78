"""``ct(table=T)`` met outside a rule's own list — in a rule a resubmit found, in a
clone, in the bucket of a group such a rule applies — dp-core against one plain Open
vSwitch bridge (``tandem bench ct_oracle -- --focus lookup_ct`` draws these and more):
Open vSwitch recirculates the tracked copy wherever its translation meets the ct
(crates/dp-core/src/pipeline/recirc.rs), and a clone that holds no ct of its own runs
a ct a lookup inside finds on the packet itself, whose conntrack metadata stays."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.generate_ct import _tcp_frame
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_oracle import dp_core_vs_ovs
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

FRAMES = [build_frame(udp_dst=1), build_frame(udp_dst=2, payload=bytes(100))]

CASES = {
    # the copy first (datapath actions ct,recirc(1),4,3), then the rest of both lists
    "after a resubmit": (["ip,actions=resubmit(,1),output:3", "table=1,ip,actions=ct(table=2),output:4",
                          "table=2,ip,actions=output:2"], [], 3),
    # registers, metadata and the stack of that moment go with the copy
    "state carried": (["ip,actions=set_field:5->reg0,write_metadata:0x7,goto_table:1",
                       "table=1,ip,actions=resubmit(,2),output:3",
                       "table=2,ip,actions=set_field:7->reg1,push:NXM_NX_REG1[],ct(table=3),set_field:9->reg0,output:3",
                       "table=3,ip,reg0=5,reg1=7,metadata=0x7,actions=pop:NXM_NX_REG2[],"
                       "move:NXM_NX_REG2[0..7]->NXM_OF_ETH_DST[0..7],output:2",
                       "table=3,priority=0,actions=output:1"], [], 3),
    # a lookup inside a clone
    "inside a clone": (["ip,actions=clone(resubmit(,1),output:2),output:3", "table=1,ip,actions=ct(table=2),output:4",
                        "table=2,ip,actions=set_field:02:00:00:00:00:0c->eth_dst,output:2"], [], 4),
    # a bucket of a group a looked-up rule applies
    "in a bucket after a resubmit": (["ip,actions=resubmit(,1),output:3", "table=1,ip,actions=group:1",
                                      "table=2,ip,actions=output:2"],
                                     ["group_id=1,type=all,bucket=ct(table=2),bucket=output:4"], 3),
    # ct(table=T) in the clone's own list: datapath actions clone(ct,recirc(1),set(eth_dst),4),3
    "ct in a clone": (["ip,actions=set_field:1->reg1,goto_table:1",
                       "table=1,ip,actions=clone(set_field:3->reg0,ct(table=2),set_field:02:00:00:00:00:0c->eth_dst,"
                       "output:4),output:3",
                       "table=2,reg0=3,reg1=1,actions=output:2", "table=2,priority=0,actions=output:1"], [], 3),
    # check_pkt_larger in a clone forks the rest of the clone and its action set (the first branch
    # empties it), then the clone's action set of that moment runs again; then the packet goes on
    "check_pkt_larger in a clone": (["ip,actions=write_actions(set_field:02:00:00:00:00:0e->eth_dst,output:1),goto_table:1",
                                     "table=1,ip,actions=clone(set_field:02:00:00:00:00:0b->eth_src,"
                                     "check_pkt_larger(100)->NXM_NX_REG0[0],resubmit(,2),output:2),output:3",
                                     "table=2,reg0=1,actions=output:2", "table=2,priority=0,actions=output:4"], [], 4),
    "check_pkt_larger in a clone, the set empty": (["ip,actions=clone(check_pkt_larger(100)->NXM_NX_REG0[0],resubmit(,1),"
                                                    "output:2),output:3",
                                                    "table=1,reg0=1,actions=output:2", "table=1,priority=0,actions=output:4"],
                                                   [], 3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_tracked_copy_recirculates_where_open_vswitch_meets_the_ct(name):
    texts, groups, least = CASES[name]
    with OvsSandbox() as sb:
        res = OvsOracle(sb, ports=(1, 2, 3, 4, 5)).compare([parse_rule(t) for t in texts], [parse_group(g) for g in groups],
                                    [(5, f) for f in FRAMES], 4)
    assert not res.mismatches, res.mismatches[0]
    assert res.frames_compared >= least * len(FRAMES)


def test_a_ct_inside_a_clone_without_its_own_ct_leaves_the_packets_conntrack_metadata():
    """A stray SYN-ACK, then an ACK: the ACK's ct(commit) in a rule the clone's resubmit
    finds gives +inv, which Open vSwitch's datapath keeps on the packet, so the ct after
    the clone is +inv too (a fresh lookup would not be)."""
    rules = [parse_rule(t) for t in [
        "table=0,priority=2973,tcp,actions=load:0x1->NXM_NX_REG0[0..15],clone(resubmit(,1)),"
        "ct(table=1,zone=NXM_NX_REG0[0..15])",
        "table=1,priority=7600,ip,ct_state=0x21/0x2d,ct_zone=1,actions=resubmit(,2),load:0x7->NXM_NX_REG0[0..15],"
        "ct(table=1,zone=NXM_NX_REG0[0..15])",
        "table=1,priority=3465,ip,ct_state=0x0/0x20,actions=load:0x1->NXM_NX_REG0[0..15],clone(resubmit(,2)),"
        "ct(table=1,zone=NXM_NX_REG0[0..15])",
        "table=2,priority=3466,ip,ct_state=0x0/0x20,actions=ct(commit,zone=NXM_NX_REG0[0..15]),output:1",
        "table=2,priority=6097,ip,ct_state=0x20/0x36,actions=output:1",
    ]]
    a, b = 0x0A000002, 0x0A000004
    rounds = [[(3, _tcp_frame(False, b, a, 1234, 20003, 5000, 1001, 0x12))],
              [(4, _tcp_frame(False, a, b, 20003, 1234, 1001, 5001, 0x10))]]
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, [1, 2, 3, 4])
    assert not bad, bad[0]
    assert frames >= 3


def test_after_a_ct_inside_a_clone_ct_clear_does_nothing():
    """Open vSwitch's translation clears its ``conntracked`` at every ct and a clone with no
    ct of its own does not give it back, so a ct_clear after such a clone is skipped and the
    goto after it still sees +trk: each recirculation forks twice (1 + 2 + … + 32 = 63
    outputs on port 3; measured as datapath actions ``ct,recirc(2),2,ct,recirc(2)``)."""
    rules = [parse_rule(t) for t in [
        "table=0,priority=2976,tcp6,actions=load:0x1->NXM_NX_REG0[0..15],resubmit(,1),ct(table=1,zone=NXM_NX_REG0[0..15])",
        "table=1,priority=5838,ipv6,ct_state=0x20/0x25,actions=clone(resubmit(3,2)),ct_clear,output:3,goto_table:2",
        "table=2,priority=6233,ipv6,ct_state=0x20/0x2a,ct_mark=0x0,actions=load:0x0->NXM_NX_REG0[0..15],"
        "ct(table=1,zone=NXM_NX_REG0[0..15])",
    ]]
    syn_ack = _tcp_frame(True, 0x20010DB8 << 96 | 1, 0x20010DB8 << 96 | 3, 1234, 20003, 5000, 1001, 0x12)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, [[(4, syn_ack)]], [1, 2, 3, 4])
    assert not bad, bad[0]
    assert frames == 63
