"""Open vSwitch's Nicira actions whose effect depends on the frame's length,
dp-core against one plain OVS bridge, on frames chosen around the thresholds
(the random items of ``tandem bench of13_oracle`` draw them too; these pin the
cases down): ``check_pkt_larger`` counts an IP packet without its Ethernet
padding, and any other frame whole."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ir import ETH_TYPE_ARP
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

# a UDP packet of 42 bytes padded to 60, one of 60 bytes with no padding, a bigger one,
# an ARP frame (padded, but not IP: counted whole), a VLAN-tagged padded UDP packet
FRAMES = [build_frame(udp_dst=1), build_frame(udp_dst=2, payload=bytes(18)), build_frame(udp_dst=3, payload=bytes(60)),
          build_frame(eth_type=ETH_TYPE_ARP, arp_op=1, arp_spa=1, arp_tpa=2), build_frame(udp_dst=4, vlan_vid=0x1005),
          build_frame(eth_type=0x86DD, ip_proto=17, udp_dst=5)]


def test_check_pkt_larger_counts_the_length_as_open_vswitch():
    lengths = sorted({len(f) for f in FRAMES} | {42, 46, 62})
    assert len(FRAMES[0]) == 60 and len(FRAMES[3]) == 60
    with OvsSandbox() as sb:
        oracle = OvsOracle(sb)
        frames_out = 0
        thresholds = sorted({x + d for x in lengths for d in (-1, 0, 1)})
        for n in thresholds:
            rules = [parse_rule(f"actions=check_pkt_larger({n})->NXM_NX_REG0[0],push_vlan:0x8100,"
                                f"check_pkt_larger({n})->NXM_NX_REG0[1],goto_table:1"),
                     parse_rule("table=1,reg0=0x3,actions=output:2"), parse_rule("table=1,reg0=0x1,actions=output:3"),
                     parse_rule("table=1,reg0=0x2,actions=output:4"), parse_rule("table=1,reg0=0,actions=output:2,output:3,output:4")]
            res = oracle.compare(rules, [], [(1, f) for f in FRAMES], 2)
            assert not res.mismatches, (n, res.mismatches[0])
            frames_out += res.frames_compared
    assert frames_out >= len(FRAMES) * len(thresholds)  # every packet leaves somewhere


def test_check_pkt_larger_and_the_action_set_as_open_vswitch_runs_them():
    """Open vSwitch runs the rest of the pipeline as a branch of its datapath's
    check_pkt_len: the "larger" branch ends in the whole action set, the other in
    only what was written after the check, and both then run the action set of the
    check's moment again, on the packet of that moment (dp-core copies this)."""
    rules = [parse_rule("actions=set_field:02:00:00:00:00:0a->eth_dst,write_actions(set_field:02:00:00:00:00:0b->eth_src,"
                        "output:3),goto_table:1"),
             parse_rule("table=1,actions=set_field:02:00:00:00:00:0c->eth_dst,check_pkt_larger(50)->NXM_NX_REG0[0],"
                        "set_field:02:00:00:00:00:0d->eth_dst,write_actions(output:4),goto_table:2"),
             parse_rule("table=2,reg0=1,actions=check_pkt_larger(70)->NXM_NX_REG0[1],output:2"),
             parse_rule("table=2,reg0=0,actions=exit")]
    frames = [build_frame(udp_dst=1), build_frame(udp_dst=2, payload=bytes(18)), build_frame(udp_dst=3, payload=bytes(60))]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare(rules, [], [(1, f) for f in frames], 3)
    assert not res.mismatches, res.mismatches[0]
    assert res.frames_compared == 8  # 1 + 3 + 4: the third frame leaves port 4 twice, as from OVS
