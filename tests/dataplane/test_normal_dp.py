"""dp-core's output:NORMAL (pipeline/normal.rs, mactable.rs) against one Open vSwitch
3.1 bridge: random NORMAL rule sets and traffic with moving hosts, VLAN and priority
tags, reserved and multicast destinations, gratuitous ARPs and more hosts than the
MAC table holds (so a full table evicts), one packet at a time; frames out and the
MAC table (entries in OVS's least-recently-used order) must be equal."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.generate_learn import MACS
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.normal_dp_oracle import run_normal_dp_oracle


@pytest.mark.ovs
def test_dp_core_normal_matches_one_ovs_bridge():
    with OvsSandbox() as sb:
        for seed in (1, 2):
            r = run_normal_dp_oracle(sb, seed, 40, 150)
            assert not r.traffic.mismatches, "\n".join(r.traffic.mismatches[:3])
            assert not r.learned_mismatches, "\n".join(r.learned_mismatches[:3])
            assert r.learning_rules >= 15 and r.traffic.packets == 150 and r.traffic.outputs > 150
            assert r.learned_ref == 10  # the table filled up (mac-table-size 10): evictions were compared


def test_the_python_switch_runs_normal_with_no_flood_ports_and_packet_outs():
    sw = Switch([1, 2, 3], 1)
    sw.pipeline.set_no_flood(3, True)
    sw.add_rule(parse_rule("priority=0,actions=NORMAL"))
    a, b = MACS[0], MACS[1]
    assert sorted(p for p, _ in sw.process(1, build_frame(eth_src=a, eth_dst=b))) == [2]
    assert sw.pipeline.packet_out_normal(0xFFFFFFFD, build_frame(eth_src=b, eth_dst=a)) == [
        (1, build_frame(eth_src=b, eth_dst=a))]
    assert [(p, v, m) for p, v, m, _ in sw.pipeline.mac_entries()] == [(1, 0, a)]
