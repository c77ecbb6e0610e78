"""dp-core's ``bundle`` choosing TABLE, FLOOD or ALL, against one plain OVS 3.1 bridge
(the members OneSwitch still refuses in a flow, docs/endpoint.md; NORMAL members:
tests/oneswitch/test_bundle_normal.py). Measured first with ofproto/trace: a chosen
TABLE looks table 0 up with the packet's in_port and its changes (a rewritten
eth_dst, a register load) stay for the outputs after the bundle; FLOOD and ALL are
always live, so an ``hrw`` choice weighs them with the live ports."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

RULES = [
    # active_backup: port 2, else TABLE (a lookup with in_port 1 and reg0=1), then an output that shows its changes
    "in_port=1,reg0=0,actions=load:1->NXM_NX_REG0[],bundle(eth_src,0,active_backup,ofport,members:2,TABLE),"
    "move:NXM_NX_REG1[0..15]->NXM_OF_ETH_SRC[0..15],output:3",
    "in_port=1,reg0=1,actions=set_field:02:00:00:00:00:99->eth_dst,load:0x77->NXM_NX_REG1[]",
    # hrw over ports, FLOOD, ALL and TABLE (the lookup's rule outputs to 4), then an output after it
    "in_port=2,reg0=0,actions=load:1->NXM_NX_REG0[],bundle(eth_src,5,hrw,ofport,members:3,FLOOD,ALL,4,TABLE),"
    "output:1",
    "in_port=2,reg0=1,actions=set_field:02:00:00:00:00:98->eth_dst,output:4",
    "in_port=3,actions=bundle(symmetric_l4,1,hrw,ofport,members:FLOOD,2,ALL)",
]


@pytest.mark.parametrize("down", [(), (2,), (3, 4)])
def test_table_flood_and_all_members_as_open_vswitch(down):
    rng = random.Random(5 + len(down))
    frames = []
    for _ in range(12):
        mac = rng.randrange(1 << 48) & ~(1 << 40)
        f = build_frame(eth_src=mac, eth_dst=0x020000000002, ipv4_src=rng.randrange(1 << 32),
                        ipv4_dst=rng.randrange(1 << 32), tcp_src=rng.randrange(1, 65536), tcp_dst=80)
        frames += [(1, f), (2, f), (3, f)]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare([parse_rule(r) for r in RULES], [], frames, 1, down=down)
    assert not res.mismatches, res.mismatches[0]
    assert res.frames_compared >= len(frames)
