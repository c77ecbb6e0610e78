"""tun_flags against one Open vSwitch 3.1 bridge: dp-core forwards as OVS does when a
rule writes the OAM flag and a later table matches it, and a packet-in lists the flag
(ovs-ofctl prints it ``tun_flags=+oam``) beside the other tunnel metadata exactly when
OVS's does."""

from __future__ import annotations

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import random_packet
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.packet_in_oracle import PacketInOracle

pytestmark = [pytest.mark.ovs]

RULES = [
    "table=0,priority=5,ip,actions=set_field:oam->tun_flags,set_field:0x5->tun_gbp_flags,goto_table:1",
    "table=0,priority=4,arp,actions=set_field:oam->tun_flags,controller(reason=action),output:2",
    "table=0,priority=3,actions=goto_table:1",
    "table=1,priority=5,tun_flags=+oam,actions=controller(reason=no_match),output:3",
    "table=1,priority=4,tun_flags=-oam,actions=move:NXM_NX_TUN_FLAGS[]->NXM_NX_REG0[0],controller(reason=action),output:1",
]


def test_dp_core_forwards_and_sends_packet_ins_as_ovs_does():
    rules = [parse_rule(t) for t in RULES]
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        oracle = OvsOracle(sb)
        oracle.purge = True
        rng = random.Random(15)
        packets = [random_packet(rng, rules, oracle.ports, of13=True) for _ in range(40)]
        res = oracle.compare(rules, [], packets, 2)
        assert res.mismatches == [] and res.frames_compared >= 20
        monitor = PacketInOracle(oracle)
        try:
            pins, bad = monitor.compare(rules, [], packets, 2)
        finally:
            monitor.close()
        assert bad == [] and pins >= 40
