"""The emulated switch and an OVS dummy bridge emit byte-identical frames on
every port for seeded random rule sets and packets (OVS is the oracle)."""

import random

import pytest

from tandem.testing.dataplane_oracle import OvsOracle, random_case
from tandem.rules.packets import random_packet
from tandem.backends.ovs_sandbox import OvsSandbox

pytestmark = pytest.mark.ovs

RULESETS = 26
PACKETS = 20  # 26 x 20 = 520 cases


@pytest.fixture(scope="module")
def oracle():
    with OvsSandbox() as sb:
        yield OvsOracle(sb)


@pytest.mark.parametrize("chunk", range(2))
def test_random_rulesets_match_ovs_byte_for_byte(oracle, chunk):
    cases = mismatched = 0
    report = []
    for seed in range(chunk * RULESETS // 2, (chunk + 1) * RULESETS // 2):
        rng = random.Random(seed)
        n_tables = rng.choice((1, 2, 3, 4))
        rules, groups, packets = random_case(rng, oracle.ports, rng.randint(5, 40), n_tables, rng.randint(0, 4), PACKETS)
        res = oracle.compare(rules, groups, packets, n_tables)
        cases += res.packets
        mismatched += len(res.mismatches)
        report += [f"seed {seed}: {m}" for m in res.mismatches[:3]]
    assert cases == RULESETS // 2 * PACKETS
    assert mismatched == 0, "\n".join(report)


def test_oracle_detects_a_difference(oracle):
    """The comparison is not vacuous: a rule the emulator lacks shows up."""
    from tandem.rules.ofctl import parse_rule
    from tandem.rules.packets import build_frame

    rule = parse_rule("table=0,priority=10,ip,actions=output:2")
    frame = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=2)
    oracle._load([rule], [])
    got = oracle._send([(1, frame)], 1)
    assert got[2] == [frame]
    assert all(got[p] == [] for p in (1, 3, 4))


@pytest.mark.parametrize("ttl", [0, 1, 2])
def test_dec_ttl_expiry_matches_ovs(oracle, ttl):
    """TTL 0/1: the copy output before dec_ttl leaves, the rest (and goto) stops."""
    from tandem.rules.ofctl import parse_rule
    from tandem.rules.packets import build_frame, checksum16

    f = bytearray(build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=2))
    f[22] = ttl
    f[24:26] = b"\0\0"
    f[24:26] = checksum16(bytes(f[14:34])).to_bytes(2, "big")
    for first in ("actions=output:2,dec_ttl,output:3,goto_table:1", "actions=write_actions(dec_ttl,output:3),goto_table:1"):
        rules = [parse_rule(f"table=0,priority=5,ip,{first}"), parse_rule("table=1,priority=5,actions=output:4")]
        res = oracle.compare(rules, [], [(1, bytes(f))], 2)
        assert res.mismatches == [], "\n".join(map(str, res.mismatches))
        expired = ttl <= 1
        want = {(False, True): 1, (True, True): 1, (False, False): 3, (True, False): 2}[("write" in first, expired)]
        assert res.frames_compared == want


def test_vlan_edge_cases_match_ovs(oracle):
    """Push on untagged and on double-tagged frames (OVS keeps two tags), pop of an 802.1ad tag."""
    from tandem.rules.ofctl import parse_rule
    from tandem.rules.packets import build_frame

    two = build_frame(vlans=[(0x88A8, 1, 10), (0x8100, 2, 20)], ipv4_src=1, ipv4_dst=2, udp_src=1, udp_dst=2)
    plain = build_frame(ipv4_src=1, ipv4_dst=2, udp_src=1, udp_dst=2)
    rules = [
        parse_rule("table=0,priority=9,in_port=1,actions=push_vlan:0x8100,set_field:0x1fff->vlan_vid,output:2"),
        parse_rule("table=0,priority=9,in_port=3,vlan_tci=0x1000/0x1000,actions=pop_vlan,output:4"),
    ]
    res = oracle.compare(rules, [], [(1, two), (3, two), (1, plain)], 1)
    assert res.mismatches == [], "\n".join(map(str, res.mismatches))
    assert res.frames_compared == 3


def test_pkt_mark_set_and_matched_across_tables_matches_ovs(oracle):
    """dp-core's packet mark (OneSwitch's flow id) behaves as OVS's pkt_mark: set by
    set_field (also from a written action set and in a group bucket), matched exactly
    and masked in later tables, never written into the frame."""
    from tandem.rules.ofctl import parse_group, parse_rule
    from tandem.rules.packets import build_frame

    rules = [parse_rule(t) for t in (
        "table=0,priority=10,in_port=1,udp,actions=set_field:0x7->pkt_mark,goto_table:1",
        "table=0,priority=10,in_port=2,udp,actions=write_actions(set_field:0x7->pkt_mark,group:1)",
        "table=0,priority=10,in_port=3,actions=set_field:0x100->pkt_mark,goto_table:1",
        "table=0,priority=5,actions=goto_table:1",
        "table=1,priority=20,pkt_mark=0x7,udp,tp_dst=2,actions=output:4",
        "table=1,priority=15,pkt_mark=0x100/0xf00,actions=output:2",
        "table=1,priority=10,pkt_mark=0,actions=output:3",
        "table=1,priority=5,actions=output:1",
    )]
    groups = [parse_group("group_id=1,type=all,bucket=actions=set_field:0x9->pkt_mark,output:1,bucket=actions=output:3")]
    udp = lambda dport: build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=dport)  # noqa: E731
    packets = [(1, udp(2)), (1, udp(3)), (2, udp(2)), (3, udp(2)), (4, udp(2))]
    res = oracle.compare(rules, groups, packets, 2)
    assert res.packets == 5 and not res.mismatches, "\n".join(map(str, res.mismatches))
    assert res.frames_compared >= 5


def test_last_tables_ports_that_are_no_port_and_action_sets_match_ovs(oracle):
    """What OneSwitch now accepts as Open vSwitch does, on dp-core (the emulated switch
    of every device): tables 252 and 253 and a goto to table 254 (empty, 255 tables:
    the packet's action set still runs), in_port and outputs naming a port number no
    port has, and write_actions holding a group and an output to any port or reserved
    port, written in different tables (the group wins)."""
    from tandem.rules.generate import ACTION_SET_FEATURES, spread_tables

    cases = frames = 0
    report = []
    for seed in range(100, 112):
        rng = random.Random(seed)
        rules, groups, _ = random_case(rng, oracle.ports, 40, 4, 3, 0, ACTION_SET_FEATURES)
        rules = spread_tables(rng, rules)
        packets = [random_packet(rng, rules, oracle.ports) for _ in range(PACKETS)]
        res = oracle.compare(rules, groups, packets, 255)
        cases, frames = cases + res.packets, frames + res.frames_compared
        report += [f"seed {seed}: {m}" for m in res.mismatches[:3]]
    assert not report, "\n".join(report)
    assert cases == 12 * PACKETS and frames > cases // 2
