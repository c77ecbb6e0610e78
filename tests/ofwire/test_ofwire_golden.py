"""Tandem's OpenFlow 1.3 codec against golden bytes made by os-ken (make_golden.py)
and, for switch-to-controller messages that os-ken cannot serialize, against
Open vSwitch's own parser (``ovs-ofctl ofp-print``)."""

import subprocess
from pathlib import Path

import pytest

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import (
    ApplyActions, Bucket, ClearActions, FlowMod, GotoTable, Group, GroupAction, Match, Output, PopVlan, PushVlan,
    Rule, SetField, WriteActions, WriteMetadata, DecMplsTtl, PopMpls, PushMpls, SetMplsTtl, SetNwTtl, SetQueue,
)

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


FLOW_MODS = {
    "flow_mod_add": (0x11, FlowMod("add", Rule(
        Match.of(in_port=1, eth_type=0x0800, ipv4_dst=(0x0A000000, 0xFF000000), ip_proto=6, tcp_dst=80),
        (ApplyActions((PushVlan(), SetField("vlan_vid", 0x1005), Output(2, 0))), GotoTable(3)),
        table=1, priority=100, cookie=0x1234, idle_timeout=30), send_flow_rem=True)),
    # os-ken's defaults: out_port and out_group 0 unless given, priority 0x8000, output max_len 0xffe5 (OFPCML_MAX)
    "flow_mod_table_miss": (0x12, FlowMod("add", Rule(Match(), (ApplyActions((Output(ir.OFPP_CONTROLLER),)),), priority=0), out_port=0, out_group=0)),
    "flow_mod_delete_all": (0x13, FlowMod("delete", Rule(), all_tables=True)),
    "flow_mod_metadata": (0x14, FlowMod("modify_strict", Rule(
        Match.of(metadata=(0x10, 0xF0), vlan_vid=(0x1000, 0x1000), eth_dst=0x0180C2000000),
        (WriteMetadata(0x20, 0xF0), WriteActions((PopVlan(), GroupAction(4))), ClearActions(), GotoTable(5)),
        table=2, priority=7), out_port=0, out_group=0)),
    # OpenFlow 1.3 fields and actions beyond the common set
    "flow_mod_sctp": (0x61, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD, ip_proto=132, sctp_src=5, sctp_dst=(0x100, 0xFF00)),
        (ApplyActions((SetField("sctp_src", 80), SetField("sctp_dst", 443), Output(2, 0))),), priority=9),
        out_port=0, out_group=0)),
    "flow_mod_arp_hw": (0x62, FlowMod("add", Rule(
        Match.of(eth_type=0x0806, arp_sha=(0x010203000000, 0xFFFFFF000000), arp_tha=0x000000000001),
        (ApplyActions((SetField("arp_sha", 0x02000000000A), SetField("arp_tha", 0x02000000000B), Output(1, 0))),),
        priority=9), out_port=0, out_group=0)),
    "flow_mod_ipv6_ns": (0x63, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD, ip_proto=58, ipv6_flabel=(0x45, 0xFF), icmpv6_type=135, icmpv6_code=0,
                 ipv6_nd_target=(0x20010DB8 << 96) | 1, ipv6_nd_sll=0x020000000001),
        (ApplyActions((SetField("ipv6_flabel", 0x12345), SetField("ipv6_nd_target", (0xFD00 << 112) | 2),
                       SetField("ipv6_nd_sll", 0x02000000000C), SetField("icmpv6_code", 0), Output(3, 0))),),
        priority=9), out_port=0, out_group=0)),
    "flow_mod_ipv6_na": (0x64, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD, ip_proto=58, icmpv6_type=136, ipv6_nd_target=(0x20010DB8 << 96, 0xFFFFFFFF << 96),
                 ipv6_nd_tll=(0x020000000000, 0xFFFFFFFFFF00)),
        (ApplyActions((SetField("ipv6_nd_tll", 0x02000000000D), SetField("icmpv6_type", 129), Output(3, 0))),),
        priority=9), out_port=0, out_group=0)),
    "flow_mod_mpls": (0x65, FlowMod("add", Rule(
        Match.of(eth_type=0x8847, mpls_label=16, mpls_tc=3, mpls_bos=1),
        (ApplyActions((SetField("mpls_tc", 5), SetMplsTtl(5), DecMplsTtl(), PopMpls(0x0800), SetNwTtl(9), SetQueue(3),
                       Output(1, 0))),), priority=9), out_port=0, out_group=0)),
    "flow_mod_tunnel_id": (0x66, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, tunnel_id=(5, 0xFF)),
        (ApplyActions((PushMpls(0x8847), SetField("mpls_label", 100), SetField("tunnel_id", 9))),
         WriteActions((SetQueue(1), Output(2, 0))), GotoTable(2)), table=1, priority=9), out_port=0, out_group=0)),
    "flow_mod_set_metadata": (0x67, FlowMod("add", Rule(
        Match.of(eth_type=0x0800), (ApplyActions((SetField("metadata", 0x1234), Output(1, 0))), GotoTable(1)),
        priority=7), out_port=0, out_group=0)),
}


def test_golden_flow_mods_use_every_openflow13_item():
    """Issue 15: a wire round trip with golden bytes for each added field and action
    (Open vSwitch's extensions: test_ofwire_nx_golden.py, test_ofwire_hash.py)."""
    from tandem.testing.of13_oracle import CONJ_ITEMS, FIELD_ITEMS, HASH_ITEMS, ITEMS, NX_ITEMS, TCI_ITEMS, rule_items

    used = set()
    for _, mod in FLOW_MODS.values():
        used |= rule_items(mod.rule)
    ours = set(ITEMS) - set(NX_ITEMS) - set(CONJ_ITEMS) - set(TCI_ITEMS) - set(FIELD_ITEMS) - set(HASH_ITEMS)
    from tandem.testing.of13_oracle import CLONE_ITEMS, CONTROLLER_ITEMS, OUTPUT_REG_RUNTIME_ITEMS

    ours -= set(CLONE_ITEMS)  # (test_ofwire_clone.py)
    ours -= set(CONTROLLER_ITEMS)  # (test_ofwire_controller.py)
    ours -= set(OUTPUT_REG_RUNTIME_ITEMS)  # (output_reg's own wire form: test_ofwire_nx_golden.py)
    from tandem.testing.of13_oracle import OUTPUT_REG_TABLE_ITEMS, TABLE0_WRITE_ITEMS

    ours -= set(TABLE0_WRITE_ITEMS) | set(OUTPUT_REG_TABLE_ITEMS)  # (test_ofwire_table0.py)
    from tandem.testing.of13_oracle import CLONE_IN_PORT_ITEMS

    ours -= set(CLONE_IN_PORT_ITEMS)  # (test_ofwire_clone.py)
    from tandem.testing.of13_oracle import ENCAP_ITEMS

    ours -= set(ENCAP_ITEMS)  # (encap: test_ofwire_encap.py)
    from tandem.testing.of13_oracle import DECAP_ITEMS

    ours -= set(DECAP_ITEMS)  # (decap: test_ofwire_decap.py)
    from tandem.testing.of13_oracle import BUNDLE_FLOOD_ITEMS

    ours -= set(BUNDLE_FLOOD_ITEMS)  # (bundle_flood: test_ofwire_hash.py)
    from tandem.testing.of13_oracle import FIN_ITEMS

    ours -= set(FIN_ITEMS)  # (test_fin_timeout.py: golden bytes read back by ovs-ofctl)
    ours -= {"clone_resubmit", "clone_output_reg"}  # (test_ofwire_clone.py)
    from tandem.testing.of13_oracle import BUNDLE_RESERVED_ITEMS

    ours -= set(BUNDLE_RESERVED_ITEMS)  # (test_ofwire_hash.py: RESERVED_MOD)
    ours -= {"write:encap"}  # (encaset: test_ofwire_encap_set.py, flow_mod_nx_encap_write)
    ours -= {"clone_check"}  # (clone_check: test_ofwire_clone.py, check_pkt_larger inside NXAST_CLONE)
    ours -= {"write:decap"}  # (decapset: test_ofwire_decap_set.py, flow_mod_nx_decap_write)
    ours -= {"resubmit_cross", "bundle_host"}  # (homeres: the wire forms of items resubmit and bundle; only the ports differ)
    assert ours <= used, sorted(ours - used)


@pytest.mark.parametrize("name", sorted(FLOW_MODS))
def test_flow_mod_matches_os_ken(name):
    xid, mod = FLOW_MODS[name]
    raw = golden(name)
    assert M.encode_flow_mod(xid, mod) == raw
    hdr = W.OFP_HEADER.unpack_from(raw)
    assert hdr == (4, W.OFPT_FLOW_MOD, len(raw), xid)
    assert M.decode_flow_mod(raw[8:]).mod == mod


def test_group_mod_matches_os_ken():
    g = Group(7, "select", (Bucket((Output(1, 0xFFE5),), weight=3), Bucket((SetField("eth_dst", 0x020000000009), Output(2, 0xFFE5)), weight=1)))
    raw = golden("group_mod_select")
    assert M.encode_group_mod(0x21, "add", g) == raw
    assert M.decode_group_mod(raw[8:]) == ("add", g)


def test_fast_failover_group_mod_with_watch_ports_and_groups_matches_os_ken():
    g = Group(9, "fast_failover", (Bucket((Output(3, 0xFFE5),), watch_port=3), Bucket((Output(4, 0xFFE5),), watch_group=7),
                                    Bucket((Output(5, 0xFFE5),), watch_port=5, watch_group=8)))
    raw = golden("group_mod_ff_watch")
    assert M.encode_group_mod(0x22, "modify", g) == raw
    assert M.decode_group_mod(raw[8:]) == ("modify", g)


def test_packet_out_matches_os_ken():
    data = bytes.fromhex("ffffffffffff0200000000010806") + bytes(28)
    po = M.WirePacketOut(W.OFP_NO_BUFFER, ir.OFPP_CONTROLLER, (Output(ir.OFPP_FLOOD, 0xFFE5),), data)
    raw = golden("packet_out")
    assert M.encode_packet_out(0x31, po) == raw
    assert M.decode_packet_out(raw[8:]) == po
    buffered = M.decode_packet_out(golden("packet_out_buffered")[8:])
    assert (buffered.buffer_id, buffered.in_port, buffered.actions, buffered.data) == (5, 3, (Output(ir.OFPP_TABLE, 0xFFE5),), b"")


MULTIPART = {
    "mp_flow_request": S.MultipartRequest(S.OFPMP_FLOW, 0, flow=S.FlowStatsRequest(match=Match.of(in_port=2))),
    "mp_aggregate_request": S.MultipartRequest(S.OFPMP_AGGREGATE, 0, flow=S.FlowStatsRequest(3, 2, M.OFPG_ANY, 0xAB, 0xFF)),
    "mp_port_stats_request": S.MultipartRequest(S.OFPMP_PORT_STATS, 0, port_no=ir.OFPP_ANY),
    "mp_port_desc_request": S.MultipartRequest(S.OFPMP_PORT_DESC, 0),
    "mp_desc_request": S.MultipartRequest(S.OFPMP_DESC, 0),
    "mp_group_request": S.MultipartRequest(S.OFPMP_GROUP, 0, group_id=M.OFPG_ALL),
    "mp_group_desc_request": S.MultipartRequest(S.OFPMP_GROUP_DESC, 0),
    "mp_table_request": S.MultipartRequest(S.OFPMP_TABLE, 0),
    "mp_table_features_request": S.MultipartRequest(S.OFPMP_TABLE_FEATURES, 0),
}


@pytest.mark.parametrize("name", sorted(MULTIPART))
def test_multipart_requests_match_os_ken(name):
    raw = golden(name)
    req = S.decode_multipart_request(raw[8:])
    assert req == MULTIPART[name]
    xid = W.OFP_HEADER.unpack_from(raw)[3]
    assert S.encode_multipart_request(xid, req) == raw


def test_small_requests_match_os_ken():
    assert M.decode_role_request(golden("role_request")[8:]) == (M.OFPCR_ROLE_MASTER, 9)
    assert M.encode_set_config(0x52, 0, 128) == golden("set_config")
    assert M.encode_barrier_request(0x53) == golden("barrier_request")


# ---------------------------------------------------------------- OVS's parser as the oracle

needs_ofctl = pytest.mark.ovs  # make test installs Open vSwitch; a missing ovs-ofctl fails loudly


def ofp_print(data: bytes) -> str:
    p = subprocess.run(["ovs-ofctl", "ofp-print", data.hex()], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    return p.stdout


@needs_ofctl
def test_switch_messages_parse_in_ovs():
    pi = M.WirePacketIn(7, 60, M.OFPR_ACTION, 2, 0xC0FFEE, Match.of(in_port=3), bytes(60))
    out = ofp_print(M.encode_packet_in(9, pi))
    assert "OFPT_PACKET_IN (OF1.3)" in out and "in_port=3" in out and "table_id=2" in out and "cookie=0xc0ffee" in out
    fr = M.WireFlowRemoved(Rule(Match.of(in_port=1, eth_type=0x800), priority=5, cookie=3, idle_timeout=10),
                           M.OFPRR_IDLE_TIMEOUT, 12, 5, 40, 4000)
    out = ofp_print(M.encode_flow_removed(1, fr))
    assert "OFPT_FLOW_REMOVED (OF1.3)" in out and "reason=idle" in out and "pkts40 bytes4000" in out
    out = ofp_print(M.encode_port_status(0, M.OFPPR_MODIFY, W.WirePort(4, "v4", 0x020000000004)))
    assert "OFPT_PORT_STATUS (OF1.3)" in out and "4(v4)" in out and "02:00:00:00:00:04" in out
    out = ofp_print(M.encode_features_reply(2, 0x7A4D000000000001, 256, 64, 0xF))
    assert "dpid:7a4d000000000001" in out and "n_tables:64" in out


@needs_ofctl
def test_multipart_replies_parse_in_ovs():
    r = Rule(Match.of(in_port=1), (ApplyActions((Output(2),)),), table=0, priority=10, cookie=5)
    [msg] = S.encode_multipart_replies(3, S.OFPMP_FLOW, [S.encode_flow_stats(S.FlowStatsEntry(r, 1, 0, 0, 7, 700))])
    out = ofp_print(msg)
    assert "n_packets=7" in out and "n_bytes=700" in out and "in_port=1" in out and "actions=output:2" in out
    [msg] = S.encode_multipart_replies(4, S.OFPMP_PORT_STATS, [S.encode_port_stats(S.PortStatsEntry(3, rx_packets=11, tx_bytes=99))])
    out = ofp_print(msg)
    assert "port  3: rx pkts=11" in out and "bytes=99" in out
    [msg] = S.encode_multipart_replies(5, S.OFPMP_AGGREGATE, [S.encode_aggregate(5, 50, 2)])
    assert "packet_count=5 byte_count=50 flow_count=2" in ofp_print(msg)
    msgs = S.encode_multipart_replies(6, S.OFPMP_TABLE_FEATURES, [S.encode_table_features(
        t, f"table{t}", 1000, 3, ["in_port", "eth_dst"], ["eth_dst"], ["eth_dst"], [1, 4], [0]) for t in range(3)])
    out = "".join(ofp_print(m) for m in msgs)
    assert "table 0" in out and "table 2" in out and "OFPST_TABLE_FEATURES reply" in out
    [msg] = S.encode_multipart_replies(7, S.OFPMP_GROUP_DESC, [S.encode_group_desc(Group(2, "all", (Bucket((Output(1),)),)))])
    assert "group_id=2,type=all" in ofp_print(msg)


def test_large_reply_is_split_with_more_flag():
    entry = S.encode_port_stats(S.PortStatsEntry(1))
    msgs = S.encode_multipart_replies(1, S.OFPMP_PORT_STATS, [entry] * 1000)
    assert len(msgs) == 2
    flags = [S.decode_multipart_reply(m[8:])[1] for m in msgs]
    assert flags == [S.OFPMPF_MORE, 0]
    assert sum(len(S.decode_port_stats(S.decode_multipart_reply(m[8:])[2])) for m in msgs) == 1000


def test_pkt_mark_uses_ovs_nxm_header_and_round_trips():
    # NXM_NX_PKT_MARK: class 0x0001, field 33, 4 bytes (8 with a mask); sorted after the OXM basic fields
    m = Match.of(pkt_mark=(0x5, 0xFF), in_port=100)
    oxms = W.encode_oxms(m)
    assert oxms == bytes.fromhex("80000004" "00000064" "00014308" "00000005" "000000ff")
    assert W.decode_match(W.encode_match(m))[0] == m
    acts = [ir.SetField("pkt_mark", 7), Output(3)]
    raw = W.encode_actions(acts)
    assert raw[:16] == bytes.fromhex("0019" "0010" "00014204" "00000007" "00000000")
    assert W.decode_actions(raw) == acts


@needs_ofctl
def test_pkt_mark_flow_mod_parses_in_ovs():
    r = Rule(Match.of(pkt_mark=9), (ApplyActions((ir.SetField("pkt_mark", 0x10), Output(2))),), table=253, priority=100)
    out = ofp_print(M.encode_flow_mod(1, ir.FlowMod("add", r)))
    assert "pkt_mark=0x9" in out and "set_field:0x10->pkt_mark" in out and "table:253" in out
