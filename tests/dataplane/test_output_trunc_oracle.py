"""Open vSwitch's ``output(port=P,max_len=N)``, dp-core against one plain OVS bridge,
case by case: OVS's datapath cuts N bytes of the frame as last committed there, and
VLAN/MPLS pushes and pops since then (which it commits lazily, at the next output,
group, ct, check_pkt_larger or non-reversible clone) are applied after the cut."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

FRAMES = [build_frame(udp_dst=1, payload=bytes(40)), build_frame(udp_dst=2, vlan_vid=0x1005, payload=bytes(40)),
          build_frame(udp_dst=3)]

# name -> (rules, tables, the lengths OVS sends for the first frame (82 bytes), port -> lengths)
CASES = {
    "push pending: 4 more": (["actions=push_vlan:0x8100,set_field:4097->vlan_vid,output(port=2,max_len=20)"], 1, {2: [24]}),
    "output commits first": (["actions=push_vlan:0x8100,output:3,output(port=2,max_len=20)"], 1, {2: [20], 3: [86]}),
    "pending after an output": (["actions=output:3,push_vlan:0x8100,output(port=2,max_len=20)"], 1, {2: [24], 3: [82]}),
    "pending across tables": (["actions=push_vlan:0x8100,goto_table:1", "table=1,actions=output(port=2,max_len=20)"], 2,
                              {2: [24]}),
    "push_mpls pending": (["ip,actions=push_mpls:0x8847,output(port=2,max_len=20)"], 1, {2: [24]}),
    "no commit at in_port or no port": (["actions=push_vlan:0x8100,output:1,output:9,output(port=2,max_len=20)"], 1,
                                        {2: [24]}),
    "flood commits": (["actions=push_vlan:0x8100,FLOOD,output(port=2,max_len=20)"], 1, {2: [86, 20], 3: [86], 4: [86]}),
    "group commits": (["actions=push_vlan:0x8100,group:1,output(port=2,max_len=20)"], 1, {2: [20], 4: [86]}),
    "controller commits": (["actions=push_vlan:0x8100,CONTROLLER:65535,output(port=2,max_len=20)"], 1, {2: [20]}),
    "check_pkt_larger commits": (["actions=push_vlan:0x8100,check_pkt_larger(100)->NXM_NX_REG0[0],"
                                  "output(port=2,max_len=20)"], 1, {2: [20]}),
    "dec_ttl and resubmit do not": (["ip,actions=push_vlan:0x8100,dec_ttl,resubmit(,1),output(port=2,max_len=20)",
                                     "table=1,actions=push_vlan:0x8100"], 2, {2: [28]}),
    "a clone's commit stays": (["actions=clone(push_vlan:0x8100,output:3),output(port=2,max_len=20)"], 1,
                               {2: [16], 3: [86]}),
    "a non-reversible clone commits first": (["actions=push_vlan:0x8100,clone(output(port=2,max_len=20)),output:3"], 1,
                                             {2: [20], 3: [86]}),
    "each output cuts its own": (["actions=output(port=2,max_len=30),push_vlan:0x8100,output(port=3,max_len=20),output:4"],
                                 1, {2: [30], 3: [24], 4: [86]}),
    "nothing to in_port, max_len above the frame": (["actions=output(port=1,max_len=20),output(port=2,max_len=2000)"], 1,
                                                    {2: [82]}),
    "pop pending": (["vlan_tci=0x1000/0x1000,actions=pop_vlan,output(port=2,max_len=20)"], 1, {}),
    # (a clone that ends the translation is translated inline, committing nothing: pipeline/clone.rs)
    "a last clone runs inline": (["actions=push_vlan:0x8100,clone(output(port=2,max_len=20))"], 1, {2: [24]}),
    "a clone before a note is not last": (["actions=push_vlan:0x8100,clone(output(port=2,max_len=20)),note:01"], 1,
                                          {2: [20]}),
    "a last clone after a last resubmit": (["actions=push_vlan:0x8100,resubmit(,1)",
                                            "table=1,actions=clone(output(port=2,max_len=20))"], 2, {2: [24]}),
    "a last clone after goto_table": (["actions=push_vlan:0x8100,goto_table:1",
                                       "table=1,actions=clone(output(port=2,max_len=20))"], 2, {2: [24]}),
    "a written action set: not last": (["actions=write_actions(output:3),goto_table:1",
                                        "table=1,actions=push_vlan:0x8100,clone(output(port=2,max_len=20))"], 2,
                                       {2: [20], 3: [86, 86]}),
    "a datapath clone's last clone runs inline": (["actions=clone(output(port=3,max_len=64),push_vlan:0x8100,"
                                                   "clone(output(port=4,max_len=24))),output:2"], 1,
                                                  {2: [82], 3: [64], 4: [28]}),
    "an inline clone's last clone is not last": (["actions=push_vlan:0x8100,clone(clone(output(port=2,max_len=20))),"
                                                  "output:3"], 1, {2: [20], 3: [86]}),
    # (cut below 14 bytes: that frame and the packet's later ones to the port are not sent: trunc.rs)
    "a short cut ends the port's frames": (["actions=output:2,clone(push_vlan:0x8100,output:3),"
                                            "output(port=2,max_len=17),output:4,output:2"], 1,
                                           {2: [82], 3: [86], 4: [82]}),
    # (a bucket's commits stay in the datapath after the group, whose flow is rolled back: pipeline.rs run_group)
    "a bucket's push stays committed": (["actions=group:2,output(port=2,max_len=20)"], 1, {2: [16], 3: [86]}),
    "the last bucket's commit counts": (["actions=group:3,output(port=2,max_len=20)"], 1, {2: [20], 3: [86], 4: [82]}),
    # potrunc3: a group commits nothing itself, nor does a bucket's start (measured: only a bucket's output that sends)
    "an empty group commits nothing": (["actions=push_vlan:0x8100,group:4,output(port=2,max_len=20)"], 1, {2: [24]}),
    "a bucket without an output commits nothing": (["actions=push_vlan:0x8100,group:5,output(port=2,max_len=20)"], 1,
                                                   {2: [24]}),
    "a bucket's output to the in_port commits nothing": (["in_port=1,actions=push_vlan:0x8100,group:6,"
                                                          "output(port=2,max_len=20)"], 1, {2: [24]}),
    "a later bucket's start commits nothing": (["actions=group:7,output(port=2,max_len=20)"], 1, {2: [16], 3: [86]}),
}
GROUPS = {"a bucket's push stays committed": ["group_id=2,type=indirect,bucket=push_vlan:0x8100,output:3"],
          "the last bucket's commit counts": ["group_id=3,type=all,bucket=push_vlan:0x8100,output:3,bucket=output:4"]}
GROUPS.update({"an empty group commits nothing": ["group_id=4,type=all"],
               "a bucket without an output commits nothing": ["group_id=5,type=indirect,bucket=push_vlan:0x8100"],
               "a bucket's output to the in_port commits nothing": ["group_id=6,type=indirect,bucket=output:1"],
               "a later bucket's start commits nothing": ["group_id=7,type=all,bucket=push_vlan:0x8100,output:3,"
                                                          "bucket=set_field:02:00:00:00:00:09->eth_src"]})


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_trunc_cuts_as_open_vswitch(name):
    texts, tables, first = CASES[name]
    rules = [parse_rule(t) for t in texts]
    groups = [parse_group(g) for g in GROUPS.get(name, ["group_id=1,type=all,bucket=output:4"] if "group" in name else [])]
    with OvsSandbox() as sb:
        oracle = OvsOracle(sb)
        res = oracle.compare(rules, groups, [(1, f) for f in FRAMES], tables)
        assert not res.mismatches, res.mismatches[0]
    if first:  # the lengths measured on OVS for the first frame (82 bytes), from dp-core alone
        sw = Switch((1, 2, 3, 4), tables, drop_malformed=False)
        sw.add_groups(groups)
        sw.add_rules(rules)
        got: dict[int, list[int]] = {}
        for port, frame in sw.process(1, FRAMES[0]):
            got.setdefault(port, []).append(len(frame))
        assert {p: sorted(v) for p, v in got.items()} == {p: sorted(v) for p, v in first.items()}
