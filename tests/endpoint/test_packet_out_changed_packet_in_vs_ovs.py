"""Packet-ins of a PACKET_OUT after actions that change the packet or its metadata,
through OneSwitch against one plain Open vSwitch 3.1 bridge side by side (the harness of
``test_packet_in_of_vs_ovs.py``): OpenFlow, NXT_PACKET_IN2 and Nicira's old packet-in
connections must receive the same packet-ins, byte for byte (the changed frame, the
registers, pkt_mark, metadata and tunnel fields in the match, table 0, no cookie; tun_flags
masked)."""

from __future__ import annotations

import pytest

from endpoint_helpers import errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import FRAME, _connect
from test_packet_in_of_vs_ovs import _both, _controllers, _packet_ins, _same
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ir
from tandem.rules.ofctl import parse_actions

pytestmark = [pytest.mark.ovs]

PACKET_OUTS = [  # (in_port, actions): packet-ins after changes, also inside clones
    (1, "set_field:5->reg3,set_field:0x7->pkt_mark,CONTROLLER"),
    (2, "mod_dl_src:02:11:22:33:44:55,set_field:9->tun_id,controller(userdata=01.02)"),
    (ir.OFPP_CONTROLLER, "push_vlan:0x8100,mod_vlan_vid:4,output:2,CONTROLLER,pop_vlan,CONTROLLER"),
    (3, "load:0xabcdef->NXM_NX_REG0[],move:NXM_NX_REG0[0..15]->NXM_OF_ETH_DST[8..23],controller(reason=no_match)"),
    (4, "set_field:0x1234->metadata,set_field:10.0.0.9->ip_dst,CONTROLLER:10"),
    (1, "set_field:7->reg1,clone(set_field:8->reg1,dec_ttl,CONTROLLER),controller(id=0,userdata=03)"),
    (2, "clone(push_vlan:0x8100,clone(set_field:0x20->pkt_mark,CONTROLLER)),CONTROLLER"),
    (ir.OFPP_LOCAL, "move:NXM_OF_IN_PORT[]->NXM_NX_REG2[0..15],set_field:0x8->tun_id,CONTROLLER"),
    (3, "set_field:0x8->tun_id,set_field:5->metadata,set_field:2->reg0,CONTROLLER"),  # (metadata last: nx_put_raw)
    (3, "push:NXM_NX_REG0[],set_field:0x66->reg0,pop:NXM_NX_REG6[],multipath(eth_src,50,hrw,12,0,NXM_NX_REG7[0..3]),"
        "CONTROLLER"),
    (4, "push_mpls:0x8847,set_mpls_ttl(9),dec_mpls_ttl,controller(userdata=06),pop_mpls:0x0800,CONTROLLER"),
    (2, "set_queue:3,dec_ttl,set_nw_ttl(7),note:aa.bb,CONTROLLER"),
    (1, "set_field:0x7->reg4,clone(set_field:0x88->pkt_mark,CONTROLLER),set_field:0x9->pkt_mark,CONTROLLER"),
    # poins2: tunnel fields other than tunnel_id (tun_flags masked in the match), ct_clear
    (1, "set_field:10.1.1.2->tun_dst,set_field:10.1.1.1->tun_src,set_field:0x5->tun_id,set_field:0x33->reg1,CONTROLLER"),
    (2, "set_field:2001:db8::1->tun_ipv6_src,set_field:2001:db8::2->tun_ipv6_dst,controller(userdata=07)"),
    (3, "set_field:0x1->tun_flags,clone(load:0xffff->NXM_NX_TUN_GBP_ID[],set_field:0x5->tun_gbp_flags,CONTROLLER),"
        "CONTROLLER"),
    (ir.OFPP_CONTROLLER, "set_field:0x7->reg0,ct_clear,set_field:0x9->metadata,move:NXM_NX_TUN_IPV4_SRC[]->NXM_NX_REG5[],"
                         "set_field:10.9.8.7->tun_src,CONTROLLER"),
]


@async_test
async def test_packet_ins_after_changes_as_one_ovs_bridge():
    async def drive(port: int, inject) -> list:
        cs = await _controllers(port)
        sender = await _connect(port)
        answers = []
        for in_port, text in PACKET_OUTS:
            sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, in_port,
                                                                                 parse_actions(text), FRAME)))
            answers.append(errors_in(await sender.barrier()))
        return [answers] + [await _packet_ins(c) for c in cs]

    got_ovs, got_one = await _both(drive)
    assert got_ovs[0] == [[]] * len(PACKET_OUTS), got_ovs[0]
    assert [len(g) for g in got_ovs[1:]] == [23, 23, 23, 1, 22]  # (id 7: 1; no_match only: the one of reason no_match)
    assert got_one[0] == got_ovs[0]
    _same(got_ovs[1:], got_one[1:])
