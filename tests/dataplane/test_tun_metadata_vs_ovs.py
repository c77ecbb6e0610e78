"""tun_metadata against one Open vSwitch 3.1 bridge holding a TLV map (4, 8 and 12-byte
options): dp-core forwards every frame as OVS does where an option is absent on arrival
(``tun_metadata0=0`` misses), written (set_field, load, move, pop), matched by value and
mask in later tables, deleted (absent again, bytes kept: a masked write or a move out
of it sees them) and moved into the frame's Ethernet source, where the output shows it."""

from __future__ import annotations

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import random_packet
from tandem.rules.tun_metadata import tlv_map_text
from tandem.testing.dataplane_oracle import OvsOracle, Switch

pytestmark = [pytest.mark.ovs]

RULES = [
    "table=0,priority=9,tun_metadata0=0,actions=output:4",  # (never met: absent on arrival)
    "table=0,priority=8,ip,actions=set_field:0x12345678->tun_metadata0,load:0x5->NXM_NX_TUN_METADATA5[88..95],goto_table:1",
    "table=0,priority=7,arp,actions=set_field:0x12345678->tun_metadata0,delete_field:tun_metadata0,"
    "set_field:0x5/0xff->tun_metadata0,goto_table:1",
    "table=0,priority=6,actions=move:NXM_NX_REG0[0..15]->NXM_NX_TUN_METADATA1[48..63],push:NXM_NX_TUN_METADATA1[48..63],"
    "pop:NXM_NX_TUN_METADATA5[0..15],delete_field:tun_metadata1,goto_table:1",
    "table=1,priority=9,tun_metadata0=0x12345605,actions=move:NXM_NX_TUN_METADATA0[0..31]->NXM_OF_ETH_SRC[8..39],output:1",
    "table=1,priority=8,tun_metadata0=0x12000000/0xff000000,tun_metadata5=0x50000000000000000000000/0xff0000000000000000000000,"
    "actions=output:2",
    "table=1,priority=7,tun_metadata1=0,actions=output:3",  # (deleted: absent)
    "table=1,priority=6,tun_metadata5=0,actions=move:NXM_NX_TUN_METADATA1[48..63]->NXM_OF_ETH_SRC[0..15],output:3",
    "table=1,priority=1,actions=output:4",
]


def test_dp_core_forwards_as_ovs_does_with_a_tlv_map():
    rules = [parse_rule(t) for t in RULES]
    with OvsSandbox() as sb:
        sb.tlv_map = tlv_map_text({0: 4, 1: 8, 5: 12})
        sb.appctl("upcall/disable-megaflows")
        oracle = OvsOracle(sb)
        oracle.purge = True
        rng = random.Random(15)
        packets = [random_packet(rng, rules, oracle.ports, of13=True) for _ in range(60)]
        res = oracle.compare(rules, [], packets, 2)
        assert res.mismatches == [] and res.frames_compared >= 40
    # every path was taken (in dp-core, which OVS matched frame for frame): ARP frames to 1, IPv4 to 2, the
    # rest to 3, none to 4 (tun_metadata0=0 missed, and no frame fell through table 1)
    sw = Switch([1, 2, 3, 4], 2, drop_malformed=False)
    sw.add_rules(rules)
    ports = {port for in_port, frame in packets for port, _ in sw.process(in_port, frame)}
    assert {1, 2, 3} <= ports and 4 not in ports, ports
