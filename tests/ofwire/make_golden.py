"""Regenerate the golden OpenFlow 1.3 messages with os-ken (an independent encoder).

Run with the controllers venv (scripts/setup-controllers.sh):
    .venv/controllers/bin/python tests/ofwire/make_golden.py
Each message is written as hex to golden/<name>.hex; test_ofwire_golden.py checks
that Tandem's codec encodes the same IR to the same bytes and decodes the
bytes back to the same IR.
"""

from pathlib import Path

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as p


class FakeDatapath:
    ofproto = ofp
    ofproto_parser = p


dp = FakeDatapath()
OUT = Path(__file__).parent / "golden"


def emit(name, msg, xid):
    msg.set_xid(xid)
    msg.serialize()
    (OUT / f"{name}.hex").write_text(bytes(msg.buf).hex() + "\n")


emit("flow_mod_add", p.OFPFlowMod(
    dp, cookie=0x1234, cookie_mask=0, table_id=1, command=ofp.OFPFC_ADD, idle_timeout=30, hard_timeout=0,
    priority=100, buffer_id=ofp.OFP_NO_BUFFER, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
    flags=ofp.OFPFF_SEND_FLOW_REM,
    match=p.OFPMatch(in_port=1, eth_type=0x0800, ipv4_dst=("10.0.0.0", "255.0.0.0"), ip_proto=6, tcp_dst=80),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionPushVlan(0x8100), p.OFPActionSetField(vlan_vid=0x1005), p.OFPActionOutput(2, 0)]),
        p.OFPInstructionGotoTable(3)]), 0x11)
emit("flow_mod_table_miss", p.OFPFlowMod(
    dp, priority=0, match=p.OFPMatch(),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])]), 0x12)
emit("flow_mod_delete_all", p.OFPFlowMod(
    dp, table_id=ofp.OFPTT_ALL, command=ofp.OFPFC_DELETE, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
    match=p.OFPMatch()), 0x13)
emit("flow_mod_metadata", p.OFPFlowMod(
    dp, table_id=2, priority=7, command=ofp.OFPFC_MODIFY_STRICT,
    match=p.OFPMatch(metadata=(0x10, 0xF0), vlan_vid=(0x1000, 0x1000), eth_dst="01:80:c2:00:00:00"),
    # listed in the IR's canonical (execution) order: clear, write-actions, write-metadata, goto
    instructions=[p.OFPInstructionActions(ofp.OFPIT_CLEAR_ACTIONS, []),
                  p.OFPInstructionActions(ofp.OFPIT_WRITE_ACTIONS, [p.OFPActionPopVlan(), p.OFPActionGroup(4)]),
                  p.OFPInstructionWriteMetadata(0x20, 0xF0), p.OFPInstructionGotoTable(5)]), 0x14)
emit("group_mod_select", p.OFPGroupMod(
    dp, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, 7,
    [p.OFPBucket(weight=3, watch_port=ofp.OFPP_ANY, watch_group=ofp.OFPG_ANY, actions=[p.OFPActionOutput(1)]),
     p.OFPBucket(weight=1, watch_port=ofp.OFPP_ANY, watch_group=ofp.OFPG_ANY,
                 actions=[p.OFPActionSetField(eth_dst="02:00:00:00:00:09"), p.OFPActionOutput(2)])]), 0x21)
emit("group_mod_ff_watch", p.OFPGroupMod(
    dp, ofp.OFPGC_MODIFY, ofp.OFPGT_FF, 9,
    [p.OFPBucket(weight=0, watch_port=3, watch_group=ofp.OFPG_ANY, actions=[p.OFPActionOutput(3)]),
     p.OFPBucket(weight=0, watch_port=ofp.OFPP_ANY, watch_group=7, actions=[p.OFPActionOutput(4)]),
     p.OFPBucket(weight=0, watch_port=5, watch_group=8, actions=[p.OFPActionOutput(5)])]), 0x22)
emit("packet_out", p.OFPPacketOut(
    dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_CONTROLLER,
    actions=[p.OFPActionOutput(ofp.OFPP_FLOOD)], data=bytes.fromhex("ffffffffffff0200000000010806") + bytes(28)), 0x31)
emit("packet_out_buffered", p.OFPPacketOut(
    dp, buffer_id=5, in_port=3, actions=[p.OFPActionOutput(ofp.OFPP_TABLE)], data=None), 0x32)
emit("mp_flow_request", p.OFPFlowStatsRequest(
    dp, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0, p.OFPMatch(in_port=2)), 0x41)
emit("mp_aggregate_request", p.OFPAggregateStatsRequest(
    dp, 0, 3, 2, ofp.OFPG_ANY, 0xAB, 0xFF, p.OFPMatch()), 0x42)
emit("mp_port_stats_request", p.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY), 0x43)
emit("mp_port_desc_request", p.OFPPortDescStatsRequest(dp, 0), 0x44)
emit("mp_desc_request", p.OFPDescStatsRequest(dp, 0), 0x45)
emit("mp_group_request", p.OFPGroupStatsRequest(dp, 0, ofp.OFPG_ALL), 0x46)
emit("mp_group_desc_request", p.OFPGroupDescStatsRequest(dp, 0), 0x47)
emit("mp_table_request", p.OFPTableStatsRequest(dp, 0), 0x48)
emit("mp_table_features_request", p.OFPTableFeaturesStatsRequest(dp, 0, []), 0x49)
emit("role_request", p.OFPRoleRequest(dp, ofp.OFPCR_ROLE_MASTER, 9), 0x51)
emit("set_config", p.OFPSetConfig(dp, ofp.OFPC_FRAG_NORMAL, 128), 0x52)
emit("barrier_request", p.OFPBarrierRequest(dp), 0x53)
# meters: METER_MOD with drop and dscp_remark bands, a delete, a flow mod with the
# meter instruction, and the three meter multipart requests
emit("meter_mod_add", p.OFPMeterMod(
    dp, ofp.OFPMC_ADD, ofp.OFPMF_KBPS | ofp.OFPMF_BURST | ofp.OFPMF_STATS, 5,
    [p.OFPMeterBandDrop(rate=1000, burst_size=10), p.OFPMeterBandDscpRemark(rate=500, burst_size=20, prec_level=1)]), 0x61)
emit("meter_mod_modify_pktps", p.OFPMeterMod(
    dp, ofp.OFPMC_MODIFY, ofp.OFPMF_PKTPS, 0xFFFF0000, [p.OFPMeterBandDrop(rate=100, burst_size=0)]), 0x62)
emit("meter_mod_delete_all", p.OFPMeterMod(dp, ofp.OFPMC_DELETE, 0, ofp.OFPM_ALL, []), 0x63)
emit("flow_mod_meter", p.OFPFlowMod(
    dp, priority=9, match=p.OFPMatch(in_port=1), out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
    instructions=[p.OFPInstructionMeter(5, ofp.OFPIT_METER),
                  p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [p.OFPActionOutput(2, 0)])]), 0x64)
emit("mp_meter_request", p.OFPMeterStatsRequest(dp, 0, ofp.OFPM_ALL), 0x65)
emit("mp_meter_config_request", p.OFPMeterConfigStatsRequest(dp, 0, 5), 0x66)
emit("mp_meter_features_request", p.OFPMeterFeaturesStatsRequest(dp, 0), 0x67)
# OpenFlow 1.3 fields and actions beyond the common set (one message per group)
emit("flow_mod_sctp", p.OFPFlowMod(
    dp, priority=9, match=p.OFPMatch(eth_type=0x86DD, ip_proto=132, sctp_src=5, sctp_dst=(0x100, 0xFF00)),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionSetField(sctp_src=80), p.OFPActionSetField(sctp_dst=443), p.OFPActionOutput(2, 0)])]), 0x61)
emit("flow_mod_arp_hw", p.OFPFlowMod(
    dp, priority=9, match=p.OFPMatch(eth_type=0x0806, arp_sha=("01:02:03:04:05:06", "ff:ff:ff:00:00:00"),
                                     arp_tha="00:00:00:00:00:01"),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionSetField(arp_sha="02:00:00:00:00:0a"), p.OFPActionSetField(arp_tha="02:00:00:00:00:0b"),
        p.OFPActionOutput(1, 0)])]), 0x62)
emit("flow_mod_ipv6_ns", p.OFPFlowMod(
    dp, priority=9, match=p.OFPMatch(eth_type=0x86DD, ip_proto=58, ipv6_flabel=(0x45, 0xFF), icmpv6_type=135,
                                     icmpv6_code=0, ipv6_nd_target="2001:db8::1", ipv6_nd_sll="02:00:00:00:00:01"),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionSetField(ipv6_flabel=0x12345), p.OFPActionSetField(ipv6_nd_target="fd00::2"),
        p.OFPActionSetField(ipv6_nd_sll="02:00:00:00:00:0c"), p.OFPActionSetField(icmpv6_code=0),
        p.OFPActionOutput(3, 0)])]), 0x63)
emit("flow_mod_ipv6_na", p.OFPFlowMod(
    dp, priority=9, match=p.OFPMatch(eth_type=0x86DD, ip_proto=58, icmpv6_type=136,
                                     ipv6_nd_target=("2001:db8::", "ffff:ffff::"),
                                     ipv6_nd_tll=("02:00:00:00:00:00", "ff:ff:ff:ff:ff:00")),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionSetField(ipv6_nd_tll="02:00:00:00:00:0d"), p.OFPActionSetField(icmpv6_type=129),
        p.OFPActionOutput(3, 0)])]), 0x64)
emit("flow_mod_mpls", p.OFPFlowMod(
    dp, priority=9, match=p.OFPMatch(eth_type=0x8847, mpls_label=16, mpls_tc=3, mpls_bos=1),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionSetField(mpls_tc=5), p.OFPActionSetMplsTtl(5), p.OFPActionDecMplsTtl(), p.OFPActionPopMpls(0x0800),
        p.OFPActionSetNwTtl(9), p.OFPActionSetQueue(3), p.OFPActionOutput(1, 0)])]), 0x65)
emit("flow_mod_tunnel_id", p.OFPFlowMod(
    dp, table_id=1, priority=9, match=p.OFPMatch(eth_type=0x0800, tunnel_id=(5, 0xFF)),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionPushMpls(0x8847), p.OFPActionSetField(mpls_label=100), p.OFPActionSetField(tunnel_id=9)]),
        p.OFPInstructionActions(ofp.OFPIT_WRITE_ACTIONS, [p.OFPActionSetQueue(1), p.OFPActionOutput(2, 0)]),
        p.OFPInstructionGotoTable(2)]), 0x66)
emit("flow_mod_set_metadata", p.OFPFlowMod(
    dp, priority=7, match=p.OFPMatch(eth_type=0x0800),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.OFPActionSetField(metadata=0x1234), p.OFPActionOutput(1, 0)]), p.OFPInstructionGotoTable(1)]), 0x67)
# Open vSwitch's extensions: registers, the packet mark and TCP flags in the match (os-ken writes the
# NXM fields first and tcp_flags as ONF's experimenter OXM), reg_load2, reg_move, stack push/pop, note,
# set_field on NXM fields, exit (os-ken orders nw_ttl/ip_frag/mpls_ttl before their prerequisites,
# which Open vSwitch refuses: those are covered by test_ofwire_nx_golden.py against ovs-ofctl)
emit("flow_mod_nx_osken", p.OFPFlowMod(
    dp, table_id=2, priority=9, match=p.OFPMatch(in_port=1, eth_type=0x0800, ip_proto=6, reg0=5, reg15=(0, 0xFF),
                                                 pkt_mark=(3, 0xF), tcp_flags=(2, 0x12)),
    instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        p.NXActionRegLoad2(dst="reg1", value=(5, 0xFF)),
        p.NXActionRegMove(src_field="reg3", dst_field="reg2", n_bits=16, src_ofs=0, dst_ofs=16),
        p.NXActionRegMove(src_field="tcp_src", dst_field="reg4", n_bits=16, src_ofs=0, dst_ofs=0),
        p.NXActionStackPush(field="xxreg1", start=0, end=128), p.NXActionStackPop(field="pkt_mark", start=0, end=32),
        p.NXActionNote(note=[0x61, 0x62]), p.OFPActionSetField(pkt_mark=7), p.OFPActionSetField(reg5=9),
        p.NXActionExit(), p.OFPActionOutput(1, 0)])]), 0x71)
print(f"wrote {len(list(OUT.glob('*.hex')))} golden files to {OUT}")
