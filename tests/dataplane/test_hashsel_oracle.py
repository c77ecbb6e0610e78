"""Open vSwitch's multipath, bundle and bundle_load: dp-core against one plain
OVS bridge — every field set and algorithm on frames that vary each hashed field
(addresses, ports, VLAN ids, protocols, fragments), bundle members going down and
up, and a bounded run of the random items of ``tandem bench of13_oracle``."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ir import HASH_FIELDS, MULTIPATH_ALGORITHMS
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.of13_oracle import BUNDLE_FLOOD_ITEMS, BUNDLE_RESERVED_ITEMS, HASH_ITEMS, run_dp

pytestmark = pytest.mark.ovs


def _frames(rng: random.Random) -> list[bytes]:
    """Frames that differ in every field some field set hashes."""
    out = []
    for _ in range(6):
        mac = lambda: rng.randrange(1 << 48) & ~(1 << 40)  # noqa: E731 (unicast)
        ip4, ip6 = lambda: rng.randrange(1 << 32), lambda: rng.randrange(1 << 128)  # noqa: E731
        port = lambda: rng.randrange(1, 65536)  # noqa: E731
        common = dict(eth_src=mac(), eth_dst=mac())
        out += [build_frame(**common, ipv4_src=ip4(), ipv4_dst=ip4(), tcp_src=port(), tcp_dst=port()),
                build_frame(**common, ipv4_src=ip4(), ipv4_dst=ip4(), udp_src=port(), udp_dst=port()),
                build_frame(**common, ipv4_src=ip4(), ipv4_dst=ip4(), sctp_src=port(), sctp_dst=port()),
                build_frame(**common, ipv4_src=ip4(), ipv4_dst=ip4(), icmpv4_type=8),
                build_frame(**common, vlan_vid=0x1000 | rng.randrange(4096), ipv4_src=ip4(), ipv4_dst=ip4(),
                            tcp_src=port(), tcp_dst=port()),
                build_frame(**common, eth_type=0x86DD, ipv6_src=ip6(), ipv6_dst=ip6(), tcp_src=port(), tcp_dst=port()),
                build_frame(**common, eth_type=0x86DD, ipv6_src=ip6(), ipv6_dst=ip6(), udp_src=port(), udp_dst=port()),
                build_frame(**common, eth_type=0x0806, arp_op=1, arp_spa=ip4(), arp_tpa=ip4()),
                build_frame(**common, eth_type=0x88CC)]
    return out


def test_multipath_every_field_set_and_algorithm_as_open_vswitch():
    rng = random.Random(5)
    frames = [(1, f) for f in _frames(rng)]
    with OvsSandbox() as sb:
        oracle = OvsOracle(sb)
        compared = 0
        for fields in HASH_FIELDS:
            for alg in MULTIPATH_ALGORITHMS:
                acts = []
                for i, (n, arg) in enumerate(((3, 0), (64, 0), (65, 7), (65536, 70000))):
                    acts.append(f"multipath({fields},{rng.randrange(65536)},{alg},{n},{arg},reg{i}[0..15])")
                acts += ["move:reg0[0..7]->eth_src[0..7]", "move:reg1[0..7]->eth_src[8..15]",
                         "move:reg2[0..7]->eth_src[16..23]", "move:reg3[0..15]->eth_dst[0..15]", "output:2"]
                res = oracle.compare([parse_rule("actions=" + ",".join(acts))], [], frames, 1)
                assert not res.mismatches, (fields, alg, res.mismatches[0])
                compared += res.frames_compared
    assert compared == len(HASH_FIELDS) * len(MULTIPATH_ALGORITHMS) * len(frames)


@pytest.mark.parametrize("down", [(), (2,), (3,), (2, 3), (2, 3, 4)])
def test_bundle_members_follow_port_liveness_as_open_vswitch(down):
    rng = random.Random(len(down))
    frames = [(1, f) for f in _frames(rng)]
    rules = [parse_rule("in_port=1,actions=bundle(symmetric_l4,7,hrw,ofport,members:2,3,4),"
                        "bundle(eth_src,1,active_backup,ofport,members:4,77,3,2),"
                        "bundle_load(symmetric_l3l4+udp,9,hrw,ofport,NXM_NX_REG0[0..15],members:3,2,77,4),"
                        "bundle_load(nw_src,0,active_backup,ofport,NXM_NX_REG1[],members:3,4),"
                        "move:reg0[0..15]->eth_src[0..15],move:reg1[0..15]->eth_dst[0..15],in_port")]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare(rules, [], frames, 1, down=down)
    assert not res.mismatches, res.mismatches[0]
    assert res.frames_compared == len(frames) * (3 if len(down) < 3 else 1)


def test_a_group_bucket_ignores_them_as_open_vswitch_does():
    """Open vSwitch 3.1 runs a bucket as an action set, which has no place for them."""
    from tandem.rules.ofctl import parse_group

    g = parse_group("group_id=5,type=all,bucket=bundle(eth_src,0,active_backup,ofport,members:2),"
                    "multipath(eth_src,0,hrw,3,0,reg0[0..15]),move:reg0[0..15]->eth_src[0..15],output:3")
    frames = [(1, f) for f in _frames(random.Random(9))]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare([parse_rule("in_port=1,actions=group:5")], [g], frames, 1)
    assert not res.mismatches, res.mismatches[0]
    assert res.frames_compared == len(frames)  # port 3 only: the bundle to port 2 did not run


@pytest.mark.parametrize("down", [(), (2,), (2, 3, 4)])
def test_reserved_members_are_always_live_as_open_vswitch(down):
    """IN_PORT, TABLE, NORMAL, FLOOD, ALL, LOCAL and NONE count as live whatever ports are down:
    an active_backup bundle takes the first of them (IN_PORT: back out of port 1; NONE: nothing),
    an hrw choice weighs them with the ports, and bundle_load loads their OpenFlow 1.0 numbers."""
    rng = random.Random(11 + len(down))
    frames = [(1, f) for f in _frames(rng)]
    rules = [parse_rule("in_port=1,actions=bundle_load(symmetric_l4,7,hrw,ofport,NXM_NX_REG0[0..15],"
                        "members:2,TABLE,3,NORMAL,FLOOD,ALL,4,LOCAL,NONE,IN_PORT),"
                        "bundle_load(eth_src,1,active_backup,ofport,NXM_NX_REG1[0..15],members:77,0,ALL,2),"
                        "bundle(eth_src,0,active_backup,ofport,members:77,IN_PORT,2),"
                        "bundle(nw_src,3,active_backup,ofport,members:NONE,2),"
                        "bundle(symmetric_l3l4,5,hrw,ofport,members:IN_PORT,NONE,2,3),"
                        "move:reg0[0..15]->eth_src[0..15],move:reg1[0..15]->eth_dst[0..15],output:4")]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare(rules, [], frames, 1, down=down)
    assert not res.mismatches, res.mismatches[0]
    # port 1 (IN_PORT) for each frame; port 4 unless down; the hrw bundle's choice now and then 2 or 3
    assert res.frames_compared >= len(frames) * (1 if 4 in down else 2)


# (of13_oracle items, dp-core: items, rules per item, seed, set size, packets per set, more frames than)
ITEM_RUNS = {"hash": (HASH_ITEMS, 40, 2, 20, 30, 100),
             "bundle_reserved": (BUNDLE_RESERVED_ITEMS, 60, 3, 20, 30, 0),
             # active_backup bundles with FLOOD or ALL members
             "bundle_flood": (BUNDLE_FLOOD_ITEMS, 100, 3, 50, 80, 100)}


@pytest.mark.parametrize("name", sorted(ITEM_RUNS))
def test_hash_selection_items_match_open_vswitch_byte_for_byte(name):
    items, per_item, seed, set_size, packets, min_frames = ITEM_RUNS[name]
    with OvsSandbox() as sb:
        res = run_dp(sb, items, per_item=per_item, seed=seed, set_size=set_size, packets_per_set=packets)
    assert all(r.item_rules >= per_item for r in res.values())
    assert sum(r.frames for r in res.values()) > min_frames
    bad = [m for r in res.values() for m in r.mismatches]
    assert not bad, "\n".join(bad[:3])
