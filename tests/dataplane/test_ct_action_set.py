"""dp-core runs ct and ct_clear written into the action set, and ct recirculating
into the rule's own or an earlier table, as Open vSwitch 3.1 does (checked against
one OVS bridge, its tracker in a sandbox of its own): in the action set they are
final actions, taken only when the set has no group, output or resubmit, ct_clear
before ct; a ct(table=T) there recirculates the tracked copy into T with an empty
action set, after the set's set-fields; a recirculation deeper than 6 is dropped."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_oracle import dp_core_vs_ovs

PORTS = [1, 2, 3, 4, 5, 6, 7]
TAIL = ["table=1,priority=5,ct_state=+trk,ip,actions=output:2", "table=1,priority=4,ct_state=-trk,ip,actions=output:3",
        "table=2,priority=5,ct_state=+trk,ip,actions=output:4", "table=2,priority=4,ct_state=-trk,ip,actions=output:5"]
CASES = {
    "written ct(table=1)": ["table=0,ip,actions=write_actions(ct(table=1))"],
    "written ct and output: the output wins": ["table=0,ip,actions=write_actions(ct(table=1),output:6)"],
    "written ct and resubmit: the resubmit wins": ["table=0,ip,actions=write_actions(ct(table=1),resubmit(,2))"],
    "written ct_clear and ct: ct_clear wins": ["table=0,ip,actions=write_actions(ct_clear,ct(table=1))"],
    "written set_field runs before the written ct": [
        "table=0,ip,actions=write_actions(set_field:5->reg1,ct(table=1))", "table=1,priority=9,reg1=5,ip,actions=output:7"],
    "written commit, then a tracked lookup": [
        "table=0,ip,actions=ct(table=1)",
        "table=1,priority=9,ct_state=+trk+new,ip,actions=write_actions(ct(commit,exec(set_field:1->ct_mark)))",
        "table=1,priority=10,ct_state=+trk,ct_mark=1,ip,actions=output:7"],
    "ct back into its own table": ["table=0,ip,actions=ct(table=1)", "table=1,priority=9,ip,actions=output:7,ct(table=1)"],
    "ct back into table 0 (recirculation limit)": ["table=0,ip,actions=output:6,ct(table=0)"],
    "ct from table 2 into table 1": ["table=0,ip,actions=goto_table:2", "table=2,priority=9,ct_state=-trk,ip,actions=ct(table=1)"],
}


@pytest.mark.ovs
@pytest.mark.parametrize("name", sorted(CASES))
def test_ct_in_the_action_set_and_backward_as_open_vswitch(name):
    frame = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1000, udp_dst=80)
    rules = [parse_rule(f) for f in CASES[name] + TAIL]
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, [[(1, frame)], [(1, frame)]], PORTS)
    assert not bad, "\n".join(bad)
    assert n == 2 and (frames > 0 or "ct_clear wins" in name)


@pytest.mark.ovs
def test_a_syn_looked_up_again_after_its_commit_is_new_as_in_open_vswitch():
    """The same TCP SYN tracked again after a recirculation that committed it: OVS
    (conntrack-tcp) answers CT_UPDATE_VALID_NEW while the opening side is at
    SYN_SENT, so it is +new, not +est (found by the random oracle, minimised)."""
    rules = [parse_rule(t) for t in (
        "table=0,priority=1025,ipv6,actions=load:0x0->NXM_NX_REG0[0..15],"
        "write_actions(ct(table=1,zone=NXM_NX_REG0[0..15]))",
        "table=1,priority=6127,ipv6,ct_state=0x20/0x3a,actions=ct(commit,table=2,zone=NXM_NX_REG0[0..15])",
        "table=2,priority=7852,ipv6,ct_state=0x21/0x27,ct_zone=0,actions=ct(table=0),output:4")]
    syn = bytes.fromhex("02000000000202000000000186dd600000000014064020010db80000000000000000000000032001"
                        "0db80000000000000000000000014e20005045aeb993000000005002ffff06bb0000")
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, [[(3, syn)], [(3, syn)]], PORTS)
    assert not bad, "\n".join(bad)
    assert frames >= 4  # two outputs per SYN: the second lookup chain still sees +new
