"""``ct`` / ``ct_clear`` in group buckets, in dp-core as in Open vSwitch 3.1
(``crates/dp-core/src/pipeline/bucket_ct.rs``): a bucket runs as an action set, so
its ct is a final action (an output wins over it, ct_clear over ct), and a
``ct(table=T)`` recirculates the bucket's copy of the packet — with the bucket's
register loads — before the next bucket runs; the packet's cached connection (the
datapath's ct metadata) stays from one bucket's ct to the next. Each case's frames per port (two
packets of one UDP flow, one after the other) are what one OVS bridge sent
(measured), and dp-core must send the same; the random oracle is ``tandem bench
ct_oracle -- --bucket-ct``."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.packets import build_frame

PORTS = [1, 2, 3, 4]
FRAME = build_frame(eth_type=0x0800, ipv4_src=0x0A000001, ipv4_dst=0x0A000002, ip_proto=17, udp_src=1000, udp_dst=53)
# a TCP segment with no connection (picked up mid-stream: a commit makes a connection a second
# full lookup then finds established)
ACK = build_frame(eth_type=0x0800, ipv4_src=0x0A000001, ipv4_dst=0x0A000002, ip_proto=6, tcp_src=1000, tcp_dst=80,
                  tcp_flags=0x10)

# name: (groups, flows, frames per port for each of the two packets[, the packet if not FRAME])
CASES = {
    "an all group's ct(table=1) bucket recirculates its copy; the other bucket outputs": (
        ["group_id=1,type=all,bucket=ct(table=1),bucket=output:3"],
        ["table=0,priority=10,ip,in_port=1,actions=group:1",
         "table=1,priority=10,ip,ct_state=+trk+new,actions=output:2",
         "table=1,priority=5,ip,actions=output:4"],
        [{2: 1, 3: 1}, {2: 1, 3: 1}]),
    "two buckets, two copies (a commit leaves the same direction +new)": (
        ["group_id=1,type=all,bucket=ct(commit,table=1),bucket=ct(table=1)"],
        ["table=0,priority=10,ip,in_port=1,actions=group:1",
         "table=1,priority=10,ip,ct_state=+trk+new,actions=output:2",
         "table=1,priority=11,ip,ct_state=+trk+est,actions=output:3",
         "table=1,priority=5,ip,actions=output:4"],
        [{2: 2}, {2: 2}]),
    "the copy carries the bucket's set-fields; the packet goes on without them": (
        ["group_id=1,type=indirect,bucket=ct(table=1),set_field:5->reg1"],
        ["table=0,priority=10,ip,in_port=1,actions=group:1,output:3",
         "table=1,priority=10,ip,reg1=5,actions=output:2",
         "table=1,priority=5,ip,actions=output:4"],
        [{2: 1, 3: 1}, {2: 1, 3: 1}]),
    "an output in the bucket wins over its ct": (
        ["group_id=1,type=indirect,bucket=ct(table=1),output:3"],
        ["table=0,priority=10,ip,in_port=1,actions=group:1",
         "table=1,priority=10,ip,actions=output:2"],
        [{3: 1}, {3: 1}]),
    "an output in the bucket wins over its ct_clear": (
        ["group_id=1,type=indirect,bucket=ct_clear,output:3"],
        ["table=0,priority=10,ip,in_port=1,actions=ct(table=1)",
         "table=1,priority=10,ip,ct_state=+trk,actions=group:1,output:4"],
        [{3: 1, 4: 1}, {3: 1, 4: 1}]),
    "a bucket's commit without a table, then the rule's own ct": (
        ["group_id=1,type=indirect,bucket=ct(commit)"],
        ["table=0,priority=10,ip,in_port=1,actions=ct(table=1)",
         "table=1,priority=10,ip,ct_state=+trk+new,actions=group:1,ct(table=2)",
         "table=1,priority=11,ip,ct_state=+trk+est,actions=output:3",
         "table=2,priority=10,ip,ct_state=+trk+new,actions=output:2",
         "table=2,priority=11,ip,ct_state=+trk+est,actions=output:4"],
        [{2: 1}, {2: 1}]),
    "a written group's bucket recirculates": (
        ["group_id=1,type=indirect,bucket=ct(table=1)"],
        ["table=0,priority=10,ip,in_port=1,actions=write_actions(group:1)",
         "table=1,priority=10,ip,ct_state=+trk,actions=output:2"],
        [{2: 1}, {2: 1}]),
    "ct(table=0) in a bucket, the copy told apart by a register": (
        ["group_id=1,type=indirect,bucket=set_field:7->reg2,ct(table=0)"],
        ["table=0,priority=10,ip,in_port=1,reg2=0,actions=group:1",
         "table=0,priority=10,ip,in_port=1,reg2=7,ct_state=+trk,actions=output:2"],
        [{2: 1}, {2: 1}]),
    "the first bucket's copy commits a mark before the second bucket's ct looks": (
        ["group_id=1,type=all,bucket=set_field:1->reg1,ct(table=1),bucket=set_field:2->reg1,ct(table=2)"],
        ["table=0,priority=10,ip,in_port=1,actions=group:1",
         "table=1,priority=10,ip,reg1=1,actions=ct(commit,exec(set_field:5->ct_mark))",
         "table=2,priority=10,ip,reg1=2,ct_mark=5,actions=output:3",
         "table=2,priority=5,ip,reg1=2,actions=output:4"],
        [{3: 1}, {3: 1}]),
    "a fast-failover group's live bucket and a select group's one bucket": (
        ["group_id=1,type=fast_failover,bucket=watch_port:9,output:4,bucket=watch_port:2,ct(table=1)",
         "group_id=2,type=select,bucket=weight:5,ct(table=2)"],
        ["table=0,priority=10,ip,in_port=1,actions=group:1,group:2",
         "table=1,priority=10,ip,ct_state=+trk,actions=output:2",
         "table=2,priority=10,ip,ct_state=+trk,actions=output:3"],
        [{2: 1, 3: 1}, {2: 1, 3: 1}]),
    "a bucket's ct leaves the packet's cached connection to the next bucket's ct": (
        ["group_id=1,type=all,bucket=ct(commit),bucket=ct(table=1)"],
        ["table=0,priority=10,tcp,in_port=1,actions=group:1",
         "table=1,priority=10,tcp,ct_state=+trk+new,actions=output:2",
         "table=1,priority=11,tcp,ct_state=+trk+est,actions=output:3"],
        [{2: 1}, {3: 1}], ACK),
}


def dp_core_frames(groups, flows, frame):
    """The frames dp-core sends per port for each of two packets ``frame`` from port 1."""
    sw = Switch(PORTS, 3, drop_malformed=False)
    sw.add_groups([parse_group(g) for g in groups])
    sw.add_rules([parse_rule(f) for f in flows])
    out = []
    for _ in range(2):
        got: dict[int, list[bytes]] = {}
        for p, sent in sw.process(1, frame):
            got.setdefault(p, []).append(bytes(sent))
        out.append(got)
    return out


def _dp_core(groups, flows, frame):
    return [{p: len(fs) for p, fs in got.items()} for got in dp_core_frames(groups, flows, frame)]


@pytest.mark.parametrize("name", CASES)
def test_dp_core_runs_ct_in_a_bucket_as_measured_on_open_vswitch(name):
    groups, flows, measured, *frame = CASES[name]
    assert _dp_core(groups, flows, frame[0] if frame else FRAME) == measured


@pytest.mark.ovs
def test_open_vswitch_still_runs_the_cases_so():
    with OvsSandbox() as sb:
        for k, (name, (groups, flows, measured, *frame)) in enumerate(CASES.items()):
            br = f"bct{k}"
            sb.add_bridge(br, PORTS)
            sb.add_groups(br, groups)
            sb.add_flows(br, flows)
            got = []
            for _ in range(2):
                sb.inject(br, 1, [frame[0] if frame else FRAME])
                sb.settle(quiet_s=0.05, timeout_s=10)
                got.append({p: n for p in PORTS if (n := len(sb.take_output(br, p)))})
            assert got == measured, name
            sb.del_bridge(br)
