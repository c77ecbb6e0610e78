"""A group bucket's ``ct`` with ``nat``, in dp-core as in Open vSwitch 3.1
(``crates/dp-core/src/pipeline/bucket_nat.rs``): the datapath keeps the bucket's
rewrite for the rest of the list, the later buckets and a later ``ct(table=T)``'s
copy, while the translation's flow is rolled back after the bucket (a resubmit
still matches the untranslated fields, a set-field to the packet's own value
writes nothing); a field the bucket set before its ct is written back. A range of
the other address family goes into the packet as the first 4 bytes of the union
Open vSwitch keeps it in. Each case's frames per port (two packets of one UDP flow)
are what one OVS bridge sent (measured), and dp-core must send the same."""

import pytest

from test_bucket_ct import PORTS, dp_core_frames
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.packets import build_frame

UDP = dict(ip_proto=17, udp_src=1000, udp_dst=53)
V4 = build_frame(eth_type=0x0800, ipv4_src=0x0A000001, ipv4_dst=0x0A000002, **UDP)
NAT4 = build_frame(eth_type=0x0800, ipv4_src=0x0A090909, ipv4_dst=0x0A000002, **UDP)
V6 = build_frame(eth_type=0x86DD, **UDP)
SNAT = "ct(commit,nat(src=10.9.9.9))"
SNAT_T1 = "ct(commit,table=1,nat(src=10.9.9.9))"
IN = "table=0,priority=10,ip,in_port=1,actions="

# name: (groups, flows, the frame, {port: frames} for each of the two packets)
CASES = {
    "an output after the group sends the bucket's translation": (
        [f"group_id=1,type=indirect,bucket={SNAT}"], [IN + "group:1,output:2"], V4, {2: [NAT4]}),
    "so does the bucket's ct(table=1) copy": (
        [f"group_id=1,type=indirect,bucket={SNAT_T1}"],
        [IN + "group:1,output:2", "table=1,priority=10,ip,actions=output:3"], V4, {2: [NAT4], 3: [NAT4]}),
    "a later bucket of an all group sends it": (
        [f"group_id=1,type=all,bucket={SNAT},bucket=output:3"], [IN + "group:1,output:2"], V4, {2: [NAT4], 3: [NAT4]}),
    "a later bucket after a ct(table=1) bucket, and its copy": (
        [f"group_id=1,type=all,bucket={SNAT_T1},bucket=output:3"],
        [IN + "group:1,output:2", "table=1,priority=10,ip,actions=output:4"], V4, {2: [NAT4], 3: [NAT4], 4: [NAT4]}),
    "a later group's bucket ct(table=1) in another zone: its copy and the outputs after it": (
        [f"group_id=1,type=indirect,bucket={SNAT}", "group_id=2,type=all,bucket=ct(table=1,zone=7),bucket=output:3"],
        [IN + "group:1,group:2,output:2", "table=1,priority=10,ip,actions=output:4"], V4,
        {2: [NAT4], 3: [NAT4], 4: [NAT4]}),
    "in a clone (no datapath clone: a group is an action Open vSwitch can undo) the nat stays after it": (
        [f"group_id=1,type=indirect,bucket={SNAT}"], [IN + "clone(set_field:10.0.0.7->ip_dst,group:1),output:2"], V4,
        {2: [NAT4]}),
    "in a clone, a ct(table=1) bucket's copy and the output after the clone": (
        [f"group_id=1,type=indirect,bucket={SNAT_T1}"],
        [IN + "clone(group:1,set_field:1->reg3),output:2", "table=1,priority=10,ip,actions=output:3"], V4,
        {2: [NAT4], 3: [NAT4]}),
    "a ct of the clone's own runs in a datapath clone: its nat stays there": (
        [], [IN + f"clone({SNAT}),output:2"], V4, {2: [V4]}),
    "an output in the bucket wins over its ct: no translation": (
        [f"group_id=1,type=indirect,bucket=output:3,{SNAT}"], [IN + "group:1,output:2"], V4, {2: [V4], 3: [V4]}),
    "a set-field to the packet's own source writes nothing": (
        [f"group_id=1,type=indirect,bucket={SNAT}"], [IN + "group:1,set_field:10.0.0.1->ip_src,output:2"], V4,
        {2: [NAT4]}),
    "a set-field to another source writes it": (
        [f"group_id=1,type=indirect,bucket={SNAT}"], [IN + "group:1,set_field:10.0.0.7->ip_src,output:2"], V4,
        {2: [build_frame(eth_type=0x0800, ipv4_src=0x0A000007, ipv4_dst=0x0A000002, **UDP)]}),
    "a source the bucket set before its nat is written back": (
        [f"group_id=1,type=indirect,bucket=set_field:10.0.0.5->ip_src,{SNAT}"], [IN + "group:1,output:2"], V4,
        {2: [V4]}),
    "a resubmit after the group matches the untranslated source": (
        [f"group_id=1,type=indirect,bucket={SNAT}"],
        [IN + "group:1,resubmit(,2)", "table=2,priority=10,ip,nw_src=10.9.9.9,actions=output:2",
         "table=2,priority=5,ip,actions=output:3"], V4, {3: [NAT4]}),
    "a destination translation with a port": (
        ["group_id=1,type=indirect,bucket=ct(commit,nat(dst=10.8.8.8:99))"], [IN + "group:1,output:2"], V4,
        {2: [build_frame(eth_type=0x0800, ipv4_src=0x0A000001, ipv4_dst=0x0A080808, ip_proto=17, udp_src=1000,
                         udp_dst=99)]}),
    "an IPv4 source on an IPv6 packet: its first 4 bytes": (
        [f"group_id=1,type=indirect,bucket={SNAT_T1}"],
        ["table=0,priority=10,ipv6,in_port=1,actions=group:1,output:2", "table=1,priority=10,ipv6,actions=output:3"],
        V6, {p: [build_frame(eth_type=0x86DD, ipv6_src=0x0A090909 << 96, **UDP)] for p in (2, 3)}),
    "an IPv6 source on an IPv4 packet: its first 4 bytes": (
        ["group_id=1,type=indirect,bucket=ct(commit,nat(src=2001:db8::9))"], [IN + "group:1,output:2"], V4,
        {2: [build_frame(eth_type=0x0800, ipv4_src=0x20010DB8, ipv4_dst=0x0A000002, **UDP)]}),
}


@pytest.mark.parametrize("name", CASES)
def test_dp_core_keeps_a_bucket_s_nat_as_measured_on_open_vswitch(name):
    groups, flows, frame, measured = CASES[name]
    assert dp_core_frames(groups, flows, frame) == [measured, measured]


@pytest.mark.ovs
def test_open_vswitch_still_runs_the_cases_so():
    with OvsSandbox() as sb:
        for k, (name, (groups, flows, frame, measured)) in enumerate(CASES.items()):
            br = f"bnat{k}"
            sb.add_bridge(br, PORTS)
            sb.add_groups(br, groups)
            sb.add_flows(br, flows)
            for _ in range(2):
                sb.inject(br, 1, [frame])
                sb.settle(quiet_s=0.05, timeout_s=10)
                assert {p: got for p in PORTS if (got := sb.take_output(br, p))} == measured, name
            sb.del_bridge(br)


@pytest.mark.ovs
def test_random_rule_sets_with_nats_in_buckets_run_as_on_open_vswitch():
    """(bounded ``tandem bench ct_oracle -- --bucket-ct --nat --only dp``: seed 1's set 10 held a
    bucket's nat that a later group's ct(table=T) bucket kept, 2 frames before the mend)"""
    import random

    from tandem.rules.generate_ct_bucket import bucket_ct_ruleset, uses_bucket_nat, with_bucket_nat
    from tandem.rules.generate_ct_nat import nat_ruleset, nat_traces
    from tandem.testing.ct_oracle import dp_core_vs_ovs

    rng = random.Random(1 * 100_003 + 9)
    rules, groups = bucket_ct_ruleset(rng, 200, PORTS, nat_ruleset)
    groups = with_bucket_nat(rng, groups)
    rounds = nat_traces(rng, [(x, y) for x in PORTS for y in PORTS if x != y], 24, 0.0)
    assert any(map(uses_bucket_nat, groups))
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, PORTS, groups=groups)
    assert not bad, bad[0]
    assert n > 50 and frames > 30
