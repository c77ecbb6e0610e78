"""The match fields issue 15 added last, in text and on the wire: a whole-TCI match
with priority bits but no tag bit (it meets untagged frames as TCI 0), recirc_id=0,
the tunnel metadata beside tun_id (tun_src, tun_dst, tun_ipv6_src/dst, tun_gbp_id),
and packet_type=(0,0) (Ethernet, which Open vSwitch drops from the match); and what
stays refused, with the reason (other recirc_ids and packet types, recirc_id as an
action's operand)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FieldMatch, Match, MoveField, RuleError, Subfield, tci_match
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule
from tandem.rules.packets import build_frame, frame_matches

sys.path.insert(0, str(Path(__file__).parents[1] / "ofwire"))
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402


@pytest.mark.parametrize("text", [
    "vlan_tci=0x2000/0xe000,actions=drop",
    "vlan_tci=0x0000/0xe000,actions=output:1",
    "priority=7,ip,vlan_tci=0x0005/0x2fff,actions=push_vlan:0x8100,set_field:3->vlan_pcp,output:2",
    "vlan_tci=0x4000/0x4fff,actions=output:2",
    "table=1,recirc_id=0,ip,actions=output:1",
    "recirc_id=0,vlan_tci=0x0000/0x2000,actions=output:3",
    "table=1,tun_src=10.0.0.0/8,tun_dst=10.0.0.1,tun_ipv6_src=2001:db8::/32,tun_ipv6_dst=::2,tun_gbp_id=0x7/0xff,"
    "tun_gbp_flags=0x5,actions=set_field:0x40->tun_gbp_flags,load:0x1->NXM_NX_TUN_GBP_FLAGS[7],output:1",
    "actions=set_field:10.0.0.1->tun_src,set_field:::5->tun_ipv6_dst,load:0x7->NXM_NX_TUN_GBP_ID[8..15],"
    "move:NXM_NX_TUN_IPV6_DST[0..31]->NXM_NX_TUN_IPV4_DST[],push:NXM_NX_TUN_IPV4_SRC[],pop:NXM_NX_REG0[],goto_table:1",
])
def test_text_and_wire_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_a_tci_without_the_tag_bit_is_held_as_the_tci_says():
    m = parse_rule("vlan_tci=0x2005/0x2fff,actions=drop").match
    assert m == Match.of(vlan_vid=(5, 0x0FFF), vlan_pcp=(1, 1))
    assert tci_match(m) == (0x2005, 0x2FFF)
    # the full priority mask stays explicit (vlan_pcp=0 exact would need the tag)
    assert parse_rule("vlan_tci=0x0000/0xe000,actions=drop").match == Match.of(vlan_pcp=(0, 7))
    assert parse_rule("vlan_tci=0xf000/0xf000,actions=drop").match == Match.of(vlan_vid=(0x1000, 0x1000), vlan_pcp=7)
    # untagged frames read TCI 0
    untagged, pcp0, pcp1 = build_frame(), build_frame(vlan_vid=0x1005, vlan_pcp=0), build_frame(vlan_vid=0x1005, vlan_pcp=1)
    m0 = parse_rule("vlan_tci=0x0000/0xe000,actions=drop").match
    assert [frame_matches(m0, f) for f in (untagged, pcp0, pcp1)] == [True, True, False]
    m5 = parse_rule("vlan_tci=0x0005/0x0fff,actions=drop").match  # (the VID alone: OXM's masked vlan_vid)
    assert [frame_matches(m5, f) for f in (untagged, pcp0, pcp1)] == [False, True, True]


def test_a_tci_without_the_tag_bit_goes_as_nxm_of_vlan_tci_w():
    tlv = struct.pack("!IHH", 4 << 9 | 1 << 8 | 4, 0x2000, 0xE000)
    match = Match.of(vlan_pcp=(1, 7))
    assert W.encode_match(match) == struct.pack("!HH", 1, 12) + tlv + bytes(4)
    assert W.decode_match(W.encode_match(match))[0] == match
    # set_field vlan_pcp needs the tag matched, as Open vSwitch checks it
    with pytest.raises(OfctlSyntaxError, match="needs a VLAN tag"):
        parse_rule("vlan_tci=0x0000/0xe000,actions=set_field:3->vlan_pcp")


def test_packet_type_ethernet_is_the_match_without_it():
    assert parse_rule("packet_type=(0,0),ip,actions=drop") == parse_rule("ip,actions=drop")
    assert format_rule(parse_rule("packet_type=(0,0x0),actions=drop")) == format_rule(parse_rule("actions=drop"))
    oxm = struct.pack("!II", 0x8000 << 16 | 44 << 9 | 4, 0)
    assert W.decode_match(struct.pack("!HH", 1, 12) + oxm + bytes(4))[0] == Match()


@pytest.mark.parametrize("text, why", [
    ("packet_type=(1,0x800),actions=drop", "OneSwitch ports are Ethernet ports"),
    ("packet_type=(0,0x800),actions=drop", "every packet's type is \\(0,0\\)"),
    ("packet_type=0,actions=drop", "expected \\(NS,TYPE\\)"),
    ("recirc_id=5,actions=drop", "only recirc_id=0"),
    ("recirc_id=0/0xff,actions=drop", "cannot be masked"),
    ("recirc_id=0,actions=move:NXM_NX_RECIRC_ID[]->NXM_NX_REG0[]", "cannot be an action's operand"),
    ("actions=push:NXM_NX_RECIRC_ID[0..15]", "cannot be an action's operand"),
])
def test_text_refusals(text, why):
    with pytest.raises(OfctlSyntaxError, match=why):
        parse_rule(text)


def test_wire_refusals():
    def match(oxm: bytes) -> bytes:
        raw = struct.pack("!HH", 1, 4 + len(oxm)) + oxm
        return raw + bytes(-len(raw) % 8)

    for oxm, err in ((struct.pack("!II", 1 << 16 | 36 << 9 | 4, 5), (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM)),  # as OVS
                     (struct.pack("!II", 0x8000 << 16 | 44 << 9 | 4, 0x10800), (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_VALUE)),
                     (struct.pack("!III", 0x8000 << 16 | 44 << 9 | 1 << 8 | 8, 0, 0), (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_MASK))):
        with pytest.raises(W.OFError) as e:
            W.decode_match(match(oxm))
        assert (e.value.etype, e.value.code) == err
    assert W.decode_match(match(struct.pack("!II", 1 << 16 | 36 << 9 | 4, 0)))[0] == Match(
        (("recirc_id", FieldMatch(0)),))
    with pytest.raises(RuleError, match="operand"):
        MoveField(Subfield("recirc_id", 0, 32), Subfield("reg0", 0, 32))
