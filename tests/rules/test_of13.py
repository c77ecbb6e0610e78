"""The OpenFlow 1.3 fields and actions beyond the common set: ovs-ofctl text and
wire round trips, OVS's own parser accepting what we print, and the
prerequisite refusals OVS makes (and only those)."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.generate import ALL_FEATURES, NX_FEATURES, OF13_FEATURES, random_ruleset
from tandem.rules.generate_nx import NX_MORE_FEATURES
from tandem.rules.ir import (
    OFPP_IN_PORT, ApplyActions, DecMplsTtl, FlowMod, Match, Output, PopMpls, PushMpls, Rule, SetField, SetMplsTtl, SetNwTtl,
    SetQueue, Resubmit, canonical_rule,
)
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule
from tandem.testing.of13_oracle import ITEMS, focused_rules, rule_items

# One flow per field/action, as an operator would type it (OVS's own spellings).
TEXTS = {
    "match:sctp_src": "sctp,tp_src=5,sctp_dst=0x100/0xff00,actions=set_field:3->sctp_dst,output:1",
    "set:sctp_src": "sctp6,sctp_src=5,actions=mod_tp_src:9,output:1",
    "match:arp_sha": "arp,arp_sha=01:02:03:00:00:00/ff:ff:ff:00:00:00,arp_tha=00:00:00:00:00:01,"
                     "actions=set_field:01:02:03:04:05:06->arp_tha,set_field:02:00:00:00:00:01->arp_sha,output:2",
    "match:ipv6_flabel": "ipv6,ipv6_label=0x45/0xff,actions=set_field:7->ipv6_label,output:1",
    "match:icmpv6_type": "icmp6,icmp_type=2,icmp_code=3,actions=set_field:4->icmpv6_type,set_field:0->icmpv6_code,output:1",
    "match:ipv6_nd_sll": "icmp6,icmp_type=135,nd_target=::1,nd_sll=00:00:00:00:00:01,"
                         "actions=set_field:::2->nd_target,set_field:00:00:00:00:00:03->nd_sll,output:1",
    "match:ipv6_nd_tll": "icmp6,icmpv6_type=136,icmpv6_code=0,nd_target=2001:db8::/32,"
                         "nd_tll=00:00:00:00:00:00/ff:00:00:00:00:00,actions=set_field:00:00:00:00:00:02->nd_tll,output:2",
    "match:mpls_tc": "mpls,mpls_label=16,mpls_tc=3,mpls_bos=1,actions=set_field:2->mpls_tc,dec_mpls_ttl,"
                     "set_mpls_ttl(4),pop_mpls:0x0800,mod_nw_ttl:3,output:1",
    "match:tunnel_id": "table=1,tun_id=0x5/0xff,actions=set_field:9->tun_id,set_queue:3,push_mpls:0x8847,goto_table:2",
    "push_mpls": "ip,actions=set_nw_ttl:7,push_mpls:0x8848,set_field:5->mpls_label,write_actions(set_queue:2,output:1)",
    "set:metadata": "ip,actions=set_field:0x1234->metadata,goto_table:1",
    # Open vSwitch's extensions
    "match:reg": "reg0=5,xreg1=0x100000002/0xff000000ff,pkt_mark=0x3/0xf,actions=set_field:0x7->reg3,"
                 "set_field:0x1/0x1->xreg2,load:0x5->NXM_NX_PKT_MARK[0..7],set_field:9->pkt_mark,output:1",
    "match:tcp_flags": "tcp,tcp_flags=+syn-ack,nw_ttl=64,ip_frag=not_later,actions=move:NXM_OF_TCP_SRC[]->"
                       "NXM_NX_REG0[0..15],push:NXM_NX_TCP_FLAGS[],pop:reg1[0..11],set_field:7->nw_ttl,note:01.02,exit",
    "match:mpls_ttl": "mpls,mpls_ttl=3,actions=set_field:5->mpls_ttl,move:NXM_NX_MPLS_TTL[]->OXM_OF_PKT_REG7[8..15],output:2",
    "pop_queue": "ip,actions=set_queue:3,pop_queue,sample(probability=100,collector_set_id=1,obs_domain_id=2,"
                 "obs_point_id=3,sampling_port=2,ingress),sample(probability=65535,collector_set_id=0,obs_domain_id=0,"
                 "obs_point_id=0),dec_ttl(0,3),set_tunnel:5,set_tunnel64:0x1234567890,write_actions(dec_ttl(1),output:1)",
    "check_pkt_larger": "actions=check_pkt_larger(100)->NXM_NX_REG0[3],check_pkt_larger(0)->reg1[31],"
                        "check_pkt_larger(1500)->NXM_NX_REG15[0],output:1",
    # conjunctive matching: dimension flows (several ids in one flow, a note beside them) and the conj_id flow
    "conjunction": "priority=7,tcp,nw_src=10.0.0.1,actions=conjunction(7,1/2),conjunction(0xffffffff,64/64),note:ab",
    "match:conj_id": "table=2,priority=3,conj_id=7,ip,actions=move:NXM_NX_CONJ_ID[]->NXM_NX_REG1[],"
                     "mod_nw_src:1.2.3.4,controller",
    # Open vSwitch's whole 802.1Q TCI with a partly masked priority (and a masked VID)
    "match:vlan_tci": "priority=4,ip,in_port=1,vlan_tci=0x5000/0xdff0,actions=set_field:3->vlan_pcp,output:2",
    # the TCI with priority (and VID) bits but not the tag bit: untagged frames (TCI 0) meet it too
    "match:vlan_tci_untagged": "priority=5,ip,vlan_tci=0x0005/0x2fff,actions=push_vlan:0x8100,set_field:3->vlan_pcp,output:2",
    "match:recirc_id": "table=1,recirc_id=0,ip,actions=output:1",
    # tunnel metadata beside tun_id (0 on arrival; written by set_field, load, move)
    "match:tun": "table=1,tun_src=10.0.0.0/8,tun_ipv6_dst=::2,tun_gbp_id=7,actions=output:1",
    "set:tun": "actions=set_field:10.0.0.1->tun_src,load:0x7->NXM_NX_TUN_GBP_ID[0..7],"
               "move:NXM_NX_TUN_IPV6_SRC[0..31]->NXM_NX_TUN_IPV4_DST[],goto_table:1",
    "resubmit": "table=1,in_port=2,actions=resubmit(,2),resubmit:3,output:1,resubmit(LOCAL,0),resubmit(2,7)",
    "output_reg": "reg3=0x5,actions=load:0xfffd->NXM_NX_REG0[0..15],output:NXM_NX_REG0[0..15],output:NXM_NX_REG3[0..15],"
                  "output:OXM_OF_PKT_REG2[16..31]",
    # hash selection (tests/ofwire/test_ofwire_hash.py has every form)
    "multipath": "ip,actions=multipath(symmetric_l3l4+udp,5,iter_hash,10,3,NXM_NX_REG1[0..15]),"
                 "bundle(eth_src,0,hrw,ofport,members:1,2),bundle_load(nw_dst,7,active_backup,ofport,NXM_NX_REG0[],"
                 "members:3,1)",
    "group_resubmit": "table=1,actions=group:1",  # (the groups' buckets resubmit: tests/oneswitch/test_bucket_resubmit.py)
    "controller": "ip,actions=controller(reason=group,max_len=60,id=3,userdata=01.02),controller(reason=no_match),output:1",
}
# Open vSwitch's clone (nested, empty, with what apply-actions hold); tests/ofwire/test_ofwire_clone.py has more
TEXTS["output_trunc"] = "in_port=1,actions=push_vlan:0x8100,output(port=2,max_len=20),output(port=IN_PORT,max_len=100)"
TEXTS["clone"] = "ip,actions=clone(push_vlan:0x8100,set_field:4097->vlan_vid,clone(dec_ttl,output:2),output:1),clone(),output:3"
# clone, check_pkt_larger, output_trunc in group buckets: a rule uses them by calling a group
# (the groups' text and wire: tests/ofwire/test_ofwire_bucket_forms.py)
TEXTS["group_clone"] = "priority=3,actions=group:2"
TEXTS["group_check_trunc"] = "table=2,actions=set_field:02:00:00:00:00:01->eth_src,group:3"
# nsh: the NSH fields of an 0x894f frame (a context only beside nsh_mdtype=1), matched and written
TEXTS["match:nsh"] = "table=1,eth_type=0x894f,nsh_flags=0x1/0x3,nsh_mdtype=1,nsh_spi=0x123,nsh_c1=0x11/0xff,actions=output:1"
TEXTS["dec_nsh_ttl"] = "eth_type=0x894f,nsh_ttl=2,actions=dec_nsh_ttl,output:1"
TEXTS["set:nsh"] = "eth_type=0x894f,actions=set_field:6->nsh_flags,set_field:9->nsh_ttl,set_field:0x44->nsh_spi,set_field:0x5->nsh_c2,output:2"
# tun_flags (Open vSwitch's flag syntax; one flag, OAM)
TEXTS["match:tun_flags"] = "table=1,tun_flags=+oam,tun_gbp_flags=0x5,actions=output:1"
TEXTS["set:tun_flags"] = "actions=set_field:oam->tun_flags,move:NXM_NX_REG0[3]->NXM_NX_TUN_FLAGS[],goto_table:1"
# table-0 lookups written into the action set (in buckets: group_resubmit's text calls a group, whose
# buckets tests/oneswitch/test_table0_lookup_translate.py and tests/ofwire/test_ofwire_table0.py cover)
TEXTS["write_output_table"] = ("table=1,in_port=1,actions=output:2,write_actions(set_field:02:00:00:00:00:01->eth_src,"
                               "output:3,output:TABLE)")
TEXTS["write_resubmit0"] = "table=2,in_port=1,actions=write_actions(resubmit:1)"
TEXTS["output_reg_table"] = "table=1,actions=load:0xfff9->NXM_NX_REG1[16..31],output:NXM_NX_REG1[16..31],output:2"
# a clone whose move reads in_port (OneSwitch pins it per copy)
TEXTS["clone_in_port"] = "actions=clone(move:NXM_OF_IN_PORT[]->NXM_OF_ETH_SRC[0..15],output:2),output:3"
# actset_output: the output port the action set holds so far (UNSET: none)
TEXTS["match:actset_output"] = "table=2,actset_output=3,ip,actions=write_actions(output:1),goto_table:3"
# fin_timeout (issue 15): in a tcp rule
TEXTS["fin_timeout"] = "priority=29,tcp,tcp_dst=80,actions=fin_timeout(idle_timeout=5,hard_timeout=10),output:2"
# encap: the SFC pattern (tests/ofwire/test_ofwire_encap.py has the refused forms)
TEXTS["encap"] = ("ip,actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,set_field:3->nsh_si,encap(ethernet),"
                  "set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2,encap(nsh),encap(ethernet),goto_table:1")
TEXTS["encap_trunc"] = "in_port=1,actions=push_vlan:0x8100,encap(nsh),encap(ethernet),output(port=2,max_len=20)"
# tun_metadata (options of a TLV map: matched value/mask, written, read, deleted)
TEXTS["match:tun_metadata"] = "table=1,tun_metadata0=0x12000000/0xff000000,tun_metadata5=0x1122334455667788990a0b0c,actions=output:1"
TEXTS["set:tun_metadata"] = ("actions=set_field:0x5->tun_metadata1,load:0x11->NXM_NX_TUN_METADATA0[8..15],"
                             "move:NXM_NX_TUN_METADATA0[0..31]->NXM_NX_REG0[],push:NXM_NX_TUN_METADATA1[0..15],"
                             "pop:NXM_NX_TUN_METADATA5[80..95],goto_table:1")
TEXTS["delete_field"] = "actions=set_field:0x1->tun_metadata0,delete_field:tun_metadata0,goto_table:1"
# clone_resubmit, clone_output_reg: a lookup, an output_reg inside a clone
TEXTS["clone_resubmit"] = "actions=clone(set_field:0x7->reg0,resubmit(,1),output:TABLE),resubmit(2,1)"
TEXTS["clone_output_reg"] = "actions=load:0x2->NXM_NX_REG0[0..15],clone(output:NXM_NX_REG0[0..15]),output:3"
# bundle_reserved, bundle_load_reserved: reserved members (always live)
TEXTS["bundle_reserved"] = ("actions=bundle(eth_src,0,active_backup,ofport,members:IN_PORT,LOCAL,ANY,2),"
                            "bundle_load(nw_dst,7,hrw,ofport,NXM_NX_REG0[],members:1,TABLE,NORMAL,FLOOD,ALL)")
# bundle_flood: FLOOD and ALL members of an active_backup bundle (translated as an all-group in their bucket)
TEXTS["bundle_flood"] = "in_port=3,actions=bundle(eth_src,0,active_backup,ofport,members:77,FLOOD,2,ALL)"
# nsh_operands: the NSH fields moved, pushed and popped
TEXTS["nsh_operands"] = ("eth_type=0x894f,nsh_mdtype=1,actions=move:NXOXM_NSH_C1[]->NXM_NX_REG0[],"
                         "push:NXOXM_NSH_SPI[],pop:NXOXM_NSH_C2[0..23],output:2")
# wide:tun_metadata: values longer than the option (ORACLE_TLV_MAP: tun_metadata0 has 4 bytes)
TEXTS["wide:tun_metadata"] = ("table=1,tun_metadata0=0x1122334455,actions=set_field:0x1122334455->tun_metadata0,"
                              "load:0xff->NXM_NX_TUN_METADATA0[32..39],output:1")
# nshttl: dec_nsh_ttl written into the action set (bucket:dec_nsh_ttl: a rule calling a group, as the other group items)
TEXTS["write:dec_nsh_ttl"] = "eth_type=0x894f,actions=write_actions(set_field:9->nsh_ttl,dec_nsh_ttl,output:2)"
# controller_meter (ctlr2): a packet-in metered by meter 2
TEXTS["controller_meter"] = "in_port=1,actions=controller(reason=no_match,id=3,meter_id=2),output:2"

# decap: the SFC egress pair (tests/ofwire/test_ofwire_decap.py has the refused forms)
TEXTS["decap"] = "eth_type=0x894f,nsh_np=3,actions=set_field:0x5->reg0,decap(),decap(),output:2,goto_table:1"
# nsh_ttl_operands (nshmore): nsh_ttl, Open vSwitch's 8-bit subfield, moved, pushed and popped
TEXTS["nsh_ttl_operands"] = ("eth_type=0x894f,actions=move:NXM_NX_REG0[0..7]->NXOXM_NSH_TTL[],"
                             "push:NXOXM_NSH_TTL[],pop:NXM_NX_REG1[0..7],output:2")
# long:tun_metadata: options mapped longer than 12 bytes (LONG_TLV_MAP: tun_metadata2 16 bytes, tun_metadata3 124)
TEXTS["long:tun_metadata"] = ("table=1,tun_metadata2=0x11223344556677889900aabbccddeeff/0xff00000000000000000000000000ff00,"
                              "actions=set_field:0x0102030405060708090a0b0c0d0e0f1011121314"
                              "15161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c->tun_metadata3,"
                              "load:0xab->NXM_NX_TUN_METADATA3[984..991],move:NXM_NX_TUN_METADATA3[864..991]->NXM_NX_TUN_METADATA2[0..127],"
                              "push:NXM_NX_TUN_METADATA3[],pop:NXM_NX_TUN_METADATA3[],delete_field:tun_metadata2,output:1")

# encaset: encap(nsh) ending the apply-actions, closed by encap(ethernet) in write_actions (rules/encap_set.py)
TEXTS["write:encap"] = ("in_port=1,actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,"
                        "write_actions(encap(ethernet),set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2)")

# clone_check: check_pkt_larger inside a flow's clone (the rest of the clone forks there)
TEXTS["clone_check"] = "actions=clone(set_field:0x7->reg1,check_pkt_larger(100)->NXM_NX_REG0[0],resubmit(,1),output:2),output:3"
# decapset: decap() ending the apply-actions, decap() written into the action set (rules/decap_set.py)
TEXTS["write:decap"] = "eth_type=0x894f,nsh_np=3,actions=decap(),write_actions(decap(),push_vlan:0x8100,output:2)"

# nshctx: an NSH context matched without nsh_mdtype=1 (rules/nsh.py: an MD type 2 header's contexts read 0)
TEXTS["match:nsh_context"] = "table=1,eth_type=0x894f,nsh_mdtype=2,nsh_c1=0x0,nsh_c3=0x11/0xff,actions=output:1"
# nsh_ttl_loads (nshload): loads into nsh_ttl, Open vSwitch's 8-bit subfield, above 63 and into bits 6..7
TEXTS["nsh_ttl_loads"] = "eth_type=0x894f,actions=load:0xc5->NXOXM_NSH_TTL[],load:0x1->NXOXM_NSH_TTL[6],output:2"
# nsh_output_reg (nshload): output_reg of an NSH field the rule sets just before
TEXTS["nsh_output_reg"] = "eth_type=0x894f,actions=set_field:0x3->nsh_si,output:NXOXM_NSH_SI[]"
# nshdst: learn's result_dst in an NSH field; check_pkt_larger into an NSH bit the match fixes
TEXTS["nsh_learn_result"] = "eth_type=0x894f,actions=learn(table=250,result_dst=NXOXM_NSH_FLAGS[1]),output:2"
TEXTS["nsh_check_larger"] = "eth_type=0x894f,nsh_si=5,actions=check_pkt_larger(100)->NXOXM_NSH_SI[0],output:2"

# pause: controller(pause), Open vSwitch's NXAC2PT_PAUSE (oneswitch/endpoint_pause.py)
TEXTS["controller_pause"] = "actions=controller(userdata=01.02,pause),output:2"

# any:tun_metadata (tunany): ovs-ofctl reads set_field:0/0 and prints it as Open vSwitch's set_field:ANY, which it
# does not read: a one-way text (input, as printed)
ONE_WAY_TEXTS = {"any:tun_metadata": ("actions=set_field:0/0->tun_metadata0,goto_table:1",
                                      "actions=set_field:ANY->tun_metadata0,goto_table:1")}


def test_texts_use_every_item():
    used = set()
    for t in [*TEXTS.values(), *(t for t, _ in ONE_WAY_TEXTS.values())]:
        used |= rule_items(parse_rule(t))
    assert used == set(ITEMS), sorted(set(ITEMS) - used)


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_text_round_trip(name):
    rule = parse_rule(TEXTS[name])
    text = format_rule(rule)
    assert parse_rule(text) == rule
    assert rule_items(rule)  # each flow really uses an OF13 item


def test_parsed_nicira_values():
    from tandem.rules.ir import DecTtl, PopQueue, Sample, WriteActions
    r = parse_rule(TEXTS["pop_queue"])
    assert r.apply_actions == (SetQueue(3), PopQueue(), Sample(100, 1, 2, 3, 2, 1, 41), Sample(65535), DecTtl((0, 3)),
                               SetField("tunnel_id", 5), SetField("tunnel_id", 0x1234567890))
    assert r.instruction(WriteActions) == WriteActions((DecTtl((1,)), Output(1)))
    assert format_rule(r).endswith("dec_ttl(0,3),set_field:0x5->tun_id,set_field:0x1234567890->tun_id,"
                                   "write_actions(dec_ttl(1),output:1)")
    assert parse_rule("ip,actions=dec_ttl()").apply_actions == (DecTtl(),)  # as ovs-ofctl reads it
    assert parse_rule("actions=set_tunnel:0x100000000").apply_actions == (SetField("tunnel_id", 1 << 32),)


@pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")
def test_resubmit_prints_as_ovs_ofctl_prints_it():
    for text in ("actions=resubmit(3),resubmit(,4),resubmit(LOCAL,),resubmit(5,0)", TEXTS["resubmit"], TEXTS["output_reg"]):
        ours = format_rule(parse_rule(text)).split("actions=", 1)[1]
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", text], capture_output=True, text=True)
        assert f"actions={ours}" in out.stdout, (ours, out.stdout)
    assert parse_rule(TEXTS["resubmit"]).apply_actions[:2] == (Resubmit(OFPP_IN_PORT, 2), Resubmit(3))


def test_parsed_values():
    r = parse_rule(TEXTS["match:mpls_tc"])
    assert r.match == Match.of(eth_type=0x8847, mpls_label=16, mpls_tc=3, mpls_bos=1)
    assert r.apply_actions == (SetField("mpls_tc", 2), DecMplsTtl(), SetMplsTtl(4), PopMpls(0x0800), SetNwTtl(3),
                               Output(1))
    r = parse_rule(TEXTS["match:ipv6_nd_sll"])
    assert r.match.get("icmpv6_type").value == 135 and r.match.get("ipv6_nd_target").value == 1
    assert parse_rule(TEXTS["set:sctp_src"]).apply_actions[0] == SetField("sctp_src", 9)
    # icmp_type names ICMPv4 after ip/icmp and ICMPv6 after ipv6/icmp6
    assert "icmpv4_type" in parse_rule("icmp,icmp_type=8,actions=drop").match
    assert "icmpv6_type" in parse_rule("icmp6,icmp_type=128,actions=drop").match


@pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")
def test_ovs_accepts_what_we_print():
    rules = [parse_rule(t) for t in TEXTS.values()]
    rules += random_ruleset(random.Random(7), 300, [1, 2, 3], tables=3, features=ALL_FEATURES | OF13_FEATURES | NX_FEATURES)
    rules += random_ruleset(random.Random(8), 300, [1, 2, 3], tables=3,
                            features=ALL_FEATURES | OF13_FEATURES | NX_FEATURES | NX_MORE_FEATURES)
    for r in rules:
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", format_rule(r)], capture_output=True,
                             text=True)
        assert out.returncode == 0, (format_rule(r), out.stderr)


def test_wire_round_trip_of_random_rules():
    rng = random.Random(8)
    rules = random_ruleset(rng, 1500, [1, 2, 3], tables=3, features=ALL_FEATURES | OF13_FEATURES | NX_FEATURES)
    rules += [r for item in ITEMS for r in focused_rules(rng, item, 10, [1, 2, 3], 3)]
    used = set()
    for i, r in enumerate(rules):
        used |= rule_items(r)
        raw = M.encode_flow_mod(i, FlowMod("add", r))
        assert M.decode_flow_mod(raw[8:]).mod.rule == canonical_rule(r)
    assert used == set(ITEMS)


@pytest.mark.parametrize("text, why", [
    ("icmp6,icmp_type=136,nd_sll=00:00:00:00:00:01,actions=drop", "nd_sll needs icmpv6_type=135"),
    ("icmp6,icmp_type=135,icmp_code=1,nd_target=::1,actions=drop", "icmpv6_code=0"),
    ("ipv6,nd_target=::1,actions=drop", "nd_target needs"),
    ("ip,sctp_src=1,actions=drop", "sctp_src needs sctp"),
    ("ip,arp_sha=00:00:00:00:00:01,actions=drop", "arp_sha needs arp"),
    ("ip,mpls_tc=1,actions=drop", "mpls_tc needs mpls"),
    ("ip,ipv6_label=1,actions=drop", "ipv6_label needs ipv6"),
    ("mpls,actions=set_field:1->mpls_bos", "cannot be set"),
    ("ip,actions=pop_mpls:0x0800", "pop_mpls needs mpls"),
    ("ip,actions=dec_mpls_ttl", "dec_mpls_ttl needs mpls"),
    ("arp,actions=mod_nw_ttl:3", "set_nw_ttl needs ip"),
    ("ip,actions=push_mpls:0x8847,set_field:1.2.3.4->nw_src", "needs ip"),
    ("icmp6,icmp_type=136,actions=set_field:00:00:00:00:00:03->nd_sll", "icmpv6_type=135"),
    ("actions=push_mpls:0x0800", "must be 0x8847 or 0x8848"),
    # Open vSwitch's extensions, refused as ovs-ofctl refuses them
    ("ip,tcp_flags=+syn,actions=drop", "tcp_flags needs tcp"),
    ("arp,nw_frag=no,actions=drop", "needs ip or ipv6"),
    ("mpls,nw_ttl=3,actions=drop", "nw_ttl needs ip or ipv6"),
    ("ip,mpls_ttl=3,actions=drop", "mpls_ttl needs mpls"),
    ("ip,nw_ttl=3/7,actions=drop", "cannot be masked"),
    ("tcp,nw_frag=later,tcp_dst=80,actions=drop", "non-first fragment"),
    ("tcp,nw_frag=later,actions=set_field:5->tcp_src", "non-first fragment"),
    ("ip,actions=move:NXM_OF_TCP_SRC[]->NXM_NX_REG0[0..15]", "tcp_src needs tcp"),
    ("actions=move:OXM_OF_VLAN_PCP[]->NXM_NX_REG0[0..2]", "VLAN tag"),
    ("actions=move:NXM_NX_REG0[0..3]->NXM_NX_REG1[0..4]", "4 bits wide but destination is 5"),
    ("actions=load:0x100->NXM_NX_REG0[0..7]", "does not fit 8 bits"),
    ("actions=move:NXM_NX_REG0[0..15]->NXM_OF_ETH_TYPE[]", "cannot be written"),
    ("actions=write_actions(push:NXM_NX_REG0[])", "action set"),
    ("actions=load:1->NXM_NX_REG0[32]", "do not fit"),
    ("actions=set_field:1->tcp_flags", "cannot be set"),
    ("arp,actions=dec_ttl(1)", "dec_ttl needs ip"),
    ("actions=write_actions(pop_queue)", "action set"),
    ("actions=write_actions(sample(probability=1,collector_set_id=1,obs_domain_id=1,obs_point_id=1))", "action set"),
    ("actions=sample(probability=0,collector_set_id=1,obs_domain_id=1,obs_point_id=1)", "probability"),
    ("actions=sample(collector_set_id=1)", "needs probability"),
    ("actions=check_pkt_larger(100)->reg0[0..1]", "needs 1"),
    ("actions=check_pkt_larger(100)->eth_type[0]", "cannot be written"),
    ("actions=write_actions(check_pkt_larger(100)->reg0[0])", "action set"),
    ("actions=check_pkt_larger(100)->pkt_mark[0]", "into pkt_mark is not supported"),
    ("actions=set_tunnel:0x10000000000000000", "set_tunnel"),
    ("ip,actions=conjunction(1,1/2),output:1", "not any other kind of action"),
    ("ip,actions=conjunction(1,1/2),goto_table:3", "no other instruction"),
    ("ip,actions=write_actions(conjunction(1,1/2))", "action set"),
    ("ip,actions=conjunction(1,1/1)", "2 to 64 clauses"),
    ("ip,actions=conjunction(1,3/2)", "clause index"),
    ("ip,actions=conjunction(1,1/65)", "2 to 64 clauses"),
    ("conj_id=5/0xff,actions=drop", "cannot be masked"),
    ("dl_vlan_pcp=1/3,actions=drop", "mask"),
    ("actions=move:NXM_NX_REG0[]->NXM_NX_CONJ_ID[]", "cannot be written"),
])
def test_text_refusals_as_ovs(text, why):
    with pytest.raises(OfctlSyntaxError, match=why):
        parse_rule(text)


def test_what_ovs_accepts_is_accepted():
    # OVS accepts these (checked with ovs-ofctl 3.1 parse-flow); so must we.
    for text in ("mpls,actions=pop_mpls:0x0800,dec_ttl,output:1",
                 "mpls,actions=set_field:3->mpls_tc,pop_mpls:0x0800,set_field:1.2.3.4->ip_src,output:1",
                 "ip,actions=push_mpls:0x8847,set_field:3->mpls_tc,dec_mpls_ttl,set_mpls_ttl:4,pop_mpls:0x0800,mod_nw_ttl:3",
                 "arp,actions=push_mpls:0x8847,set_mpls_ttl:3,output:1",
                 "mpls,actions=write_actions(pop_mpls:0x0800,dec_mpls_ttl,output:1)",
                 "actions=set_queue:3,output:1", "actions=set_field:5->tunnel_id,output:1",
                 "actions=set_field:0x5->metadata,goto_table:1"):
        parse_rule(text)


def _flow_mod_with(match_oxm: bytes = b"", actions: bytes = b"") -> bytes:
    match = struct.pack("!HH", 1, 4 + len(match_oxm)) + match_oxm
    match += b"\0" * (-len(match) % 8)
    ins = struct.pack("!HH4x", 4, 8 + len(actions)) + actions if actions else b""
    return struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 100, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0) + match + ins


def _oxm(num: int, value: bytes) -> bytes:
    return struct.pack("!I", 0x8000 << 16 | num << 9 | len(value)) + value


@pytest.mark.parametrize("oxm, code", [
    (_oxm(5, b"\x86\xdd") + _oxm(10, b"\x3a") + _oxm(29, b"\x80") + _oxm(31, bytes(16)), W.OFPBMC_BAD_PREREQ),
    (_oxm(5, b"\x86\xdd") + _oxm(10, b"\x3a") + _oxm(29, b"\x87") + _oxm(30, b"\x01") + _oxm(31, bytes(16)),
     W.OFPBMC_BAD_PREREQ),
    (_oxm(5, b"\x08\x00") + _oxm(17, b"\x00\x05"), W.OFPBMC_BAD_PREREQ),
    (_oxm(36, b"\x01"), W.OFPBMC_BAD_PREREQ),
    (_oxm(5, b"\x88\x47") + _oxm(35, b"\x09"), W.OFPBMC_BAD_VALUE),
])
def test_wire_match_refusals(oxm, code):
    with pytest.raises(W.OFError) as e:
        M.decode_flow_mod(_flow_mod_with(oxm))
    assert (e.value.etype, e.value.code) == (W.OFPET_BAD_MATCH, code)


@pytest.mark.parametrize("action, err", [
    (struct.pack("!HH4x", 11, 8), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)),  # copy_ttl_out: OVS refuses it too
    (struct.pack("!HH4x", 12, 8), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)),  # copy_ttl_in
    (struct.pack("!HHI", 25, 16, 0x8000 << 16 | 36 << 9 | 1) + b"\x01" + bytes(7),
     (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT)),  # set_field mpls_bos: read-only in OVS (same code)
    (struct.pack("!HHH2x", 19, 8, 0x0800), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),  # push_mpls:0x0800
])
def test_wire_action_refusals(action, err):
    with pytest.raises(W.OFError) as e:
        M.decode_flow_mod(_flow_mod_with(actions=action))
    assert (e.value.etype, e.value.code) == err


def _nx_conj(k: int, n: int, cid: int = 7) -> bytes:
    return struct.pack("!HHIHBBI", 0xFFFF, 16, 0x2320, 34, k - 1, n, cid)


@pytest.mark.parametrize("actions", [
    _nx_conj(1, 2) + struct.pack("!HHIH6x", 0, 16, 1, 0xFFFF),  # beside an output
    _nx_conj(1, 1),  # one clause
    _nx_conj(3, 2),  # clause beyond n
    _nx_conj(1, 65),
])
def test_wire_conjunction_refusals_as_nxbac_bad_conjunction(actions):
    with pytest.raises(W.OFError) as e:
        M.decode_flow_mod(_flow_mod_with(actions=actions))
    assert (e.value.etype, e.value.code) == (0xFFFF, 15)
    raw = M.encode_error(1, e.value.etype, e.value.code)
    assert raw[8:16] == struct.pack("!HHI", 0xFFFF, 15, 0x2320)  # an experimenter error, Nicira's


def test_wire_vlan_tci_with_a_partly_masked_priority():
    tci = struct.pack("!IHH", 0x0000 << 16 | 4 << 9 | 1 << 8 | 4, 0x5000, 0xDFF0)  # NXM_OF_VLAN_TCI_W
    rule = M.decode_flow_mod(_flow_mod_with(tci)).mod.rule
    assert rule.match == Match.of(vlan_vid=(0x1000, 0x1FF0), vlan_pcp=(2, 6))
    assert tci in W.encode_match(rule.match)
    assert W.encode_match(Match.of(vlan_vid=0x1005, vlan_pcp=3)) == W.encode_match(  # unmasked: OXM as before
        M.decode_flow_mod(_flow_mod_with(_oxm(6, b"\x10\x05") + _oxm(7, b"\x03"))).mod.rule.match)
    for bad, code in ((struct.pack("!IBB", 0x8000 << 16 | 7 << 9 | 1 << 8 | 2, 1, 3), W.OFPBMC_BAD_MASK),):  # OXM PCP masked
        with pytest.raises(W.OFError) as e:
            M.decode_flow_mod(_flow_mod_with(_oxm(6, b"\x10\x05") + bad if code == W.OFPBMC_BAD_MASK else bad))
        assert (e.value.etype, e.value.code) == (W.OFPET_BAD_MATCH, code)


def test_wire_actions_decode():
    acts = (struct.pack("!HHH2x", 19, 8, 0x8847) + struct.pack("!HHB3x", 15, 8, 7) + struct.pack("!HH4x", 16, 8)
            + struct.pack("!HHH2x", 20, 8, 0x86DD) + struct.pack("!HHB3x", 23, 8, 9) + struct.pack("!HHI", 21, 8, 4))
    rule = M.decode_flow_mod(_flow_mod_with(actions=acts)).mod.rule
    assert rule.instructions == (ApplyActions((PushMpls(0x8847), SetMplsTtl(7), DecMplsTtl(), PopMpls(0x86DD),
                                               SetNwTtl(9), SetQueue(4))),)
    assert W.encode_actions(rule.apply_actions) == acts
    assert Rule(Match.of(tunnel_id=(1, 0xFF)), ()).match.get("tunnel_id").mask == 0xFF


@pytest.mark.parametrize("name", sorted(ONE_WAY_TEXTS))
def test_one_way_text_prints_as_ovs_ofctl_and_refuses_what_it_refuses(name):
    text, shown = ONE_WAY_TEXTS[name]
    assert format_rule(parse_rule(text)).endswith(shown)
    with pytest.raises(OfctlSyntaxError, match="does not read it"):
        parse_rule(shown)
    if shutil.which("ovs-ofctl") is not None:
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", text], capture_output=True, text=True)
        assert out.stdout.rstrip().endswith(shown), out.stdout
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", shown], capture_output=True, text=True)
        assert out.returncode != 0 and "bad syntax" in out.stderr, out.stderr
