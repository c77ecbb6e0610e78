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


@pytest.mark.ovs
@pytest.mark.slow
def test_mac_entries_age_out_as_in_ovs():
    """mac-aging-time 15 (OVS's least): an entry learned in second S answers through
    second S+14 and is gone in S+15, on OVS (real time) and dp-core (its clock set to
    OVS's, CLOCK_MONOTONIC); a frame to it is then flooded again."""
    import time

    from tandem.testing.normal_dp_oracle import dp_fdb, ovs_fdb

    a, b = MACS[0], MACS[1]
    sw = Switch([1, 2, 3], 1)
    sw.pipeline.set_mac_table_config(15, 8192)
    sw.add_rule(parse_rule("priority=0,actions=NORMAL"))
    with OvsSandbox() as sb:
        sb.add_bridge("aging", ports=[1, 2, 3])
        sb.vsctl("set", "bridge", "aging", "other_config:mac-aging-time=15")
        sb.ofctl("add-flow", "aging", "actions=NORMAL")
        time.sleep(1.05 - time.monotonic() % 1)  # just after a second starts
        t0 = time.monotonic()
        sw.pipeline.set_now_ns(time.monotonic_ns())
        sw.process(1, build_frame(eth_src=a, eth_dst=b))
        sb.inject("aging", 1, [build_frame(eth_src=a, eth_dst=b)])
        sb.settle(quiet_s=0.05)
        seen = []
        for at in (14.5, 15.4):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            sw.pipeline.set_now_ns(time.monotonic_ns())
            seen.append((ovs_fdb(sb, "aging"), dp_fdb(sw)))
            to_a = sorted(p for p, _ in sw.process(2, build_frame(eth_src=b, eth_dst=a)))
            sb.inject("aging", 2, [build_frame(eth_src=b, eth_dst=a)])
            sb.settle(quiet_s=0.05)
            seen[-1] += (to_a,)
    assert seen[0] == ([(1, 0, a)], [(1, 0, a)], [1])
    assert seen[1] == ([(2, 0, b)], [(2, 0, b)], [1, 3])  # a aged out (b was learned at 14.5 s)
