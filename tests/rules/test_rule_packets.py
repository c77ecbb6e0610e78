"""Frame builder cross-checked with scapy; extractor and match evaluation."""

from __future__ import annotations

import random

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether

from tandem.rules.generate import random_ruleset
from tandem.rules.ir import Match, PofField
from tandem.rules.packets import (
    build_frame, checksum16, extract_fields, frame_matches, pof_bits, random_frame, random_packet,
)

V6 = 0x20010DB8 << 96


def _scapy_rebuilt(frame: bytes) -> bytes:
    """Let scapy recompute every checksum and length; must equal ours."""
    pkt = Ether(frame)
    for layer in (IP, TCP, UDP, ICMP):
        if layer in pkt:
            del pkt[layer].chksum
    if IP in pkt:
        del pkt[IP].len
    if UDP in pkt:
        del pkt[UDP].len
    if IPv6 in pkt:
        del pkt[IPv6].plen
        payload = pkt[IPv6].payload
        if hasattr(payload, "cksum"):
            del payload.cksum
    return bytes(pkt.__class__(bytes(pkt)))


@pytest.mark.parametrize("fields", [
    dict(tcp_src=1234, tcp_dst=80, payload=b"hello"),
    dict(vlan_vid=0x1005, vlan_pcp=3, ipv4_src=0x0A000001, ipv4_dst=0xC0A80101, udp_src=5, udp_dst=53, payload=b"x" * 33),
    dict(ip_dscp=46, ip_ecn=2, ip_ttl=7, icmpv4_type=3, icmpv4_code=1, payload=b"abc"),
    dict(ipv6_src=V6 | 1, ipv6_dst=V6 | 2, tcp_dst=22, payload=b"ssh"),
    dict(ipv6_src=V6 | 1, ipv6_dst=V6 | 2, udp_dst=546),
    dict(ipv6_src=V6 | 1, ip_proto=58, payload=b"ping"),
    dict(ip_proto=47, payload=b"gre"),
])
def test_checksums_and_lengths_match_scapy(fields: dict) -> None:
    frame = build_frame(**fields)
    assert len(frame) >= 60
    assert _scapy_rebuilt(frame)[:len(frame)] == frame


def test_fields_land_where_scapy_reads_them() -> None:
    frame = build_frame(eth_src=0x020000000001, eth_dst=0x0200000000FF, vlans=[(0x88A8, 1, 100), (0x8100, 2, 200)],
                        ipv4_src=0x0A000001, ipv4_dst=0x0A000002, ip_dscp=10, tcp_src=1, tcp_dst=2)
    pkt = Ether(frame)
    assert pkt.src == "02:00:00:00:00:01" and pkt.dst == "02:00:00:00:00:ff"
    assert pkt.type == 0x88A8 and pkt[Dot1AD].vlan == 100 and pkt[Dot1AD].prio == 1
    assert pkt[Dot1Q].vlan == 200 and pkt[Dot1Q].prio == 2
    assert pkt[IP].src == "10.0.0.1" and pkt[IP].tos == 40 and pkt[TCP].dport == 2
    arp = Ether(build_frame(arp_op=2, arp_spa=0x0A000001, arp_tpa=0x0A000002))
    assert arp[ARP].op == 2 and arp[ARP].psrc == "10.0.0.1" and arp[ARP].pdst == "10.0.0.2"


def test_extract_fields_inverts_build_frame() -> None:
    state = {"tunnel_id": 0, "pkt_mark": 0, "conj_id": 0, **{f"reg{i}": 0 for i in range(16)}}  # 0 on arrival
    state.update({"recirc_id": 0, "tun_src": 0, "tun_dst": 0, "tun_ipv6_src": 0, "tun_ipv6_dst": 0, "tun_gbp_id": 0, "tun_gbp_flags": 0})
    state["tun_flags"] = 0
    state["actset_output"] = 0xFFFF_FFF7  # (OFPP_UNSET: an empty action set)
    want = dict(eth_src=0x020000000001, eth_dst=0x020000000002, vlan_vid=0x1007, vlan_pcp=5, eth_type=0x86DD,
                ipv6_src=V6 | 9, ipv6_dst=V6 | 10, ip_proto=17, ip_dscp=8, ip_ecn=1, udp_src=7, udp_dst=8,
                ipv6_flabel=0x12345, nw_ttl=64, ip_frag=0, **state)
    assert extract_fields(build_frame(**want)) == want
    nd = dict(want, ip_proto=58, icmpv6_type=136, icmpv6_code=0, ipv6_nd_target=V6 | 3, ipv6_nd_sll=0,
              ipv6_nd_tll=0x020000000009)
    del nd["udp_src"], nd["udp_dst"]
    assert extract_fields(build_frame(**nd)) == nd
    sctp = extract_fields(build_frame(ip_proto=132, sctp_src=5, sctp_dst=6))
    assert (sctp["sctp_src"], sctp["sctp_dst"]) == (5, 6)
    mpls = extract_fields(build_frame(mpls_label=1000))
    assert mpls["eth_type"] == 0x8847 and mpls["mpls_label"] == 1000


def test_ttl_tcp_flags_and_fragments_as_open_vswitch_reads_them() -> None:
    from scapy.layers.inet6 import IPv6ExtHdrFragment

    f = extract_fields(build_frame(ip_proto=6, tcp_flags=0x1D2, nw_ttl=3))
    assert (f["tcp_flags"], f["nw_ttl"], f["ip_frag"]) == (0x1D2, 3, 0)
    first = build_frame(ip_proto=6, tcp_dst=80, tcp_flags=0x12, ip_frag=1)
    assert Ether(first)[IP].flags == "MF" and Ether(first)[IP].frag == 0
    f = extract_fields(first)  # a fragment's ports read 0; a first fragment keeps its TCP flags
    assert (f["ip_frag"], f["tcp_dst"], f["tcp_flags"]) == (1, 0, 0x12)
    later = build_frame(eth_type=0x86DD, ip_proto=17, udp_dst=53, ip_frag=3)
    assert Ether(later)[IPv6ExtHdrFragment].offset == 185
    f = extract_fields(later)  # a later fragment has no transport header; its protocol is 44
    assert (f["ip_frag"], f["ip_proto"], "udp_dst" in f) == (3, 44, False)
    assert frame_matches(Match.of(eth_type=0x86DD, ip_frag=(1, 1)), later)
    assert not frame_matches(Match.of(eth_type=0x86DD, ip_frag=(0, 2)), later)
    mpls = extract_fields(build_frame(mpls_label=16, mpls_ttl=7))
    assert mpls["mpls_ttl"] == 7


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(TypeError, match="tcp_dest"):
        build_frame(tcp_dest=80)


def test_checksum16_known_value() -> None:
    # RFC 1071 example words 0x0001 0xf203 0xf4f5 0xf6f7 sum to 0xddf2 -> checksum 0x220d.
    assert checksum16(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D


def test_pof_bits_and_frame_matches() -> None:
    frame = build_frame(tcp_dst=80)
    assert pof_bits(frame, PofField(96, 16)) == 0x0800
    assert frame_matches(Match.of({PofField(96, 16): 0x0800}, eth_type=0x0800, ip_proto=6, tcp_dst=80), frame)
    assert not frame_matches(Match.of(eth_type=0x0800, ip_proto=6, tcp_dst=81), frame)
    assert not frame_matches(Match.of(in_port=2), frame, in_port=1)
    assert frame_matches(Match.of(vlan_vid=0), frame)
    assert not frame_matches(Match.of(vlan_vid=(0x1000, 0x1000)), frame)


def test_random_frames_are_biased_to_hit_their_hint() -> None:
    rng = random.Random(9)
    rules = random_ruleset(rng, 100, [1, 2], features=frozenset({"eth", "vlan", "ipv4", "ipv6", "l4", "arp", "masks"}))
    specific = [r for r in rules if len(r.match) >= 3]
    n = 5 * len(specific)
    always = sum(frame_matches(r.match, random_frame(rng, r, hit=1.0)) for r in specific for _ in range(5))
    usually = sum(frame_matches(r.match, random_frame(rng, r)) for r in specific for _ in range(5))
    unbiased = sum(frame_matches(r.match, random_frame(rng, r, hit=0.0)) for r in specific for _ in range(5))
    assert always == n
    assert 0.7 * n < usually < n
    assert unbiased < 0.3 * n


def test_random_packet_respects_in_port_and_pof() -> None:
    rng = random.Random(10)
    match = Match.of({PofField(200, 12): (0xA50, 0xFF0)}, in_port=3)
    for _ in range(20):
        port, frame = random_packet(rng, [match], [1, 2, 3], hit=1.0)
        assert port == 3 and frame_matches(match, frame, in_port=port)


def test_random_frames_have_valid_checksums() -> None:
    rng = random.Random(12)
    rules = random_ruleset(rng, 50, [1, 2])
    for _ in range(200):
        frame = random_frame(rng, rules, hit=0.5)
        assert _scapy_rebuilt(frame)[:len(frame)] == frame
