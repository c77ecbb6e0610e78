"""Open vSwitch's extension fields and actions on the wire: golden bytes.

``flow_mod_nx_osken`` was written by os-ken (make_golden.py, an independent
encoder); the ``flow_mod_nx_*`` others are Tandem's own encoding, written by
``make_golden_nx.py``, whose meaning Open vSwitch itself confirms
(``ovs-ofctl ofp-print`` must read each as the flow its test names). Together
they cover every extension item of ``of13_oracle.NX_ITEMS``; hand-built
messages check the other headers OVS 3.1 takes in OpenFlow 1.3 (NXAST_REG_LOAD,
ONF's and OpenFlow 1.5's tcp_flags, OXM_OF_PKT_REGn, NXM_NX_XXREGn)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import (
    OFPP_IN_PORT, OFPP_LOCAL, ApplyActions, Conjunction, Exit, FlowMod, GotoTable, Match, MoveField, Note, Output, OutputReg,
    Resubmit, Rule, SetField, StackPop, StackPush, Subfield, WriteActions,
)
from tandem.rules.ir import PushVlan
from tandem.rules.ir import CheckPktLarger, DecTtl, PopQueue, Sample, SetQueue, WriteMetadata
from tandem.rules.ir import DecNshTtl
from tandem.rules.ir import DeleteField

GOLDEN = Path(__file__).parent / "golden"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


def ofp_print(raw: bytes) -> str:
    out = subprocess.run(["ovs-ofctl", "ofp-print", raw.hex()], capture_output=True, text=True, check=True).stdout
    assert "error" not in out, out
    return out


sf = Subfield
OSKEN = (0x71, FlowMod("add", Rule(
    Match.of(in_port=1, eth_type=0x0800, ip_proto=6, reg0=5, reg15=(0, 0xFF), pkt_mark=(3, 0xF), tcp_flags=(2, 0x12)),
    (ApplyActions((SetField("reg1", 5, 0xFF), MoveField(sf("reg3", 0, 16), sf("reg2", 16, 16)),
                   MoveField(sf("tcp_src", 0, 16), sf("reg4", 0, 16)), StackPush(sf("xxreg1", 0, 128)),
                   StackPop(sf("pkt_mark", 0, 32)), Note(b"ab"), SetField("pkt_mark", 7), SetField("reg5", 9), Exit(),
                   Output(1, 0))),),
    table=2, priority=9), out_port=0, out_group=0))

# name -> (xid, flow mod, what ovs-ofctl ofp-print must show)
NX_FLOW_MODS = {
    "flow_mod_nx_ip": (0x72, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ip_proto=6, ip_frag=1, nw_ttl=9, tcp_flags=0x12, reg7=(1, 1)),
        (ApplyActions((SetField("nw_ttl", 4), SetField("reg7", 0x10, 0xF0), Output(2))),), priority=5)),
        ["tcp,reg7=0x1/0x1,nw_ttl=9,nw_frag=first,tcp_flags=syn|ack", "set_field:4->nw_ttl",
         "set_field:0x10/0xf0->reg7", "output:2"]),
    "flow_mod_nx_mpls": (0x73, FlowMod("add", Rule(
        Match.of(eth_type=0x8847, mpls_ttl=3, pkt_mark=0),
        (ApplyActions((SetField("mpls_ttl", 5), SetField("mpls_ttl", 0x20, 0xF0),
                       MoveField(sf("mpls_ttl", 0, 8), sf("pkt_mark", 8, 8)), Output(1))),), priority=6)),
        ["pkt_mark=0,mpls,mpls_ttl=3", "set_field:5->mpls_ttl", "set_field:32/0xf0->mpls_ttl",
         "move:NXM_NX_MPLS_TTL[]->NXM_NX_PKT_MARK[8..15]"]),
    "flow_mod_nx_write": (0x74, FlowMod("add", Rule(
        Match.of(ip_frag=(0, 2), eth_type=0x86DD),
        (ApplyActions((StackPush(sf("xreg1", 8, 16)), StackPop(sf("reg0", 0, 16)), Note(b"\x01\x02\x03\x04\x05\x06\x07"))),
         WriteActions((SetField("reg3", 1, 1), MoveField(sf("ip_frag", 0, 2), sf("reg3", 4, 2)), Output(2))),
         GotoTable(3)), table=1, priority=7)),
        ["table:1", "ipv6,nw_frag=not_later", "push:OXM_OF_PKT_REG1[8..23]", "pop:NXM_NX_REG0[0..15]",
         "note:01.02.03.04.05.06.07.00.00.00.00.00.00.00",
         "write_actions(set_field:0x1/0x1->reg3,move:NXM_NX_IP_FRAG[]->NXM_NX_REG3[4..5],output:2)", "goto_table:3"]),
    # pop_queue, the three sample actions (Open vSwitch sends each back as it came), dec_ttl(ids)
    "flow_mod_nx_more": (0x75, FlowMod("add", Rule(
        Match.of(eth_type=0x0800),
        (ApplyActions((SetQueue(3), PopQueue(), Sample(100, 1, 2, 3), Sample(7, 0, 0, 9, 5),
                       Sample(65535, 4, 5, 6, 0xFFFF, 1), Sample(2, 1, 1, 1, subtype=41), DecTtl((1, 2)), DecTtl((0,)),
                       CheckPktLarger(100, sf("reg0", 3, 1)), CheckPktLarger(64, sf("reg15", 31, 1)), Output(1))),
         WriteActions((DecTtl((0, 3)), Output(2)))), priority=8)),
        ["set_queue:3,pop_queue,sample(probability=100,collector_set_id=1,obs_domain_id=2,obs_point_id=3),"
         "sample(probability=7,collector_set_id=0,obs_domain_id=0,obs_point_id=9,sampling_port=5),"
         "sample(probability=65535,collector_set_id=4,obs_domain_id=5,obs_point_id=6,ingress),"
         "sample(probability=2,collector_set_id=1,obs_domain_id=1,obs_point_id=1),dec_ttl(1,2),dec_ttl(0),"
         "check_pkt_larger(100)->NXM_NX_REG0[3],check_pkt_larger(64)->NXM_NX_REG15[31],output:1",
         "write_actions(dec_ttl(0,3),output:2)"]),
    # conjunctive matching: a dimension flow of two ids (and a note), and a conj_id flow
    "flow_mod_nx_conj": (0x75, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ip_proto=6, tcp_dst=80),
        (ApplyActions((Conjunction(7, 1, 2), Conjunction(0xFFFF_FFFF, 64, 64), Note(b"ab"))),), table=3, priority=8)),
        ["table:3", "priority=8,tcp,tp_dst=80", "conjunction(7,1/2),conjunction(4294967295,64/64),note:61.62"]),
    "flow_mod_nx_conj_id": (0x76, FlowMod("add", Rule(
        Match.of(conj_id=7, eth_type=0x0800), (ApplyActions((SetField("ipv4_src", 0x01020304), Output(2))),),
        table=3, priority=4)),
        ["priority=4,conj_id=7,ip", "set_field:1.2.3.4->ip_src", "output:2"]),
    # Open vSwitch's NXM_OF_VLAN_TCI with a partly masked priority (what OpenFlow 1.3's OXM cannot say)
    "flow_mod_nx_vlan_tci": (0x77, FlowMod("add", Rule(
        Match.of(in_port=1, vlan_vid=0x1005, vlan_pcp=(1, 5), eth_type=0x0800),
        (ApplyActions((SetField("vlan_pcp", 3), Output(2))),), priority=3)),
        ["priority=3,ip,in_port=1,vlan_tci=0x3005/0xbfff", "set_field:3->vlan_pcp", "output:2"]),
    # the TCI with a priority bit but not the tag bit (untagged frames too), and recirc_id=0
    "flow_mod_nx_tci_untagged": (0x78, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, vlan_vid=(5, 0x0FFF), vlan_pcp=(0, 1)),
        (ApplyActions((PushVlan(0x8100), SetField("vlan_pcp", 3), Output(2))),), priority=5)),
        ["priority=5,ip,vlan_tci=0x0005/0x2fff", "push_vlan:0x8100", "set_field:3->vlan_pcp", "output:2"]),
    "flow_mod_nx_recirc_id": (0x79, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, recirc_id=0), (ApplyActions((Output(1),)),), table=1, priority=6)),
        ["table:1", "priority=6,recirc_id=0", "ip actions=output:1"]),
    "flow_mod_nx_tunnel": (0x7A, FlowMod("add", Rule(
        Match.of(tun_src=(0x0A000000, 0xFF000000), tun_ipv6_dst=2, tun_gbp_id=7),
        (ApplyActions((SetField("tun_dst", 0x0A000001), SetField("tun_gbp_id", 0x0700, 0xFF00),
                       MoveField(sf("tun_ipv6_src", 0, 32), sf("tun_src", 0, 32)), Output(2))),), table=2, priority=4)),
        ["tun_src=10.0.0.0/8,tun_ipv6_dst=::2,tun_gbp_id=7", "set_field:10.0.0.1->tun_dst",
         "set_field:1792/0xff00->tun_gbp_id", "move:NXM_NX_TUN_IPV6_SRC[0..31]->NXM_NX_TUN_IPV4_SRC[]", "output:2"]),
    "flow_mod_nx_resubmit": (0x75, FlowMod("add", Rule(
        Match.of(in_port=3),
        (ApplyActions((Resubmit(OFPP_IN_PORT, 2), Output(1), Resubmit(3), Resubmit(5, 4), Resubmit(OFPP_LOCAL, 0))),),
        table=1, priority=8)),
        ["table:1", "in_port=3", "actions=resubmit(,2),output:1,resubmit:3,resubmit(5,4),resubmit(LOCAL,0)"]),
    # NXAST_OUTPUT_REG for a field with an NXM header, NXAST_OUTPUT_REG2 for one without (OXM_OF_PKT_REGn), as OVS
    "flow_mod_nx_output_reg": (0x76, FlowMod("add", Rule(
        Match.of(reg2=7),
        (ApplyActions((SetField("reg1", 0x30000, 0xFFFF0000), OutputReg(sf("reg1", 16, 16)), OutputReg(sf("reg2", 0, 16)),
                       OutputReg(sf("xreg3", 8, 16)))),), priority=9)),
        ["reg2=0x7", "actions=set_field:0x30000/0xffff0000->reg1,output:NXM_NX_REG1[16..31],output:NXM_NX_REG2[0..15],"
         "output:OXM_OF_PKT_REG3[8..23]"]),
    # nsh: the NSH fields (experimenter OXMs NXOXM_NSH_*), matched and written (a masked one by NXAST_REG_LOAD2); dec_nsh_ttl
    "flow_mod_nx_nsh": (0x7B, FlowMod("add", Rule(
        Match.of(eth_type=0x894F, nsh_flags=(1, 3), nsh_ttl=5, nsh_mdtype=1, nsh_np=3, nsh_spi=0x123, nsh_si=7,
                 nsh_c1=(0x11, 0xFF), nsh_c4=5),
        (ApplyActions((SetField("nsh_flags", 6), SetField("nsh_ttl", 9), SetField("nsh_spi", 0x44), SetField("nsh_si", 3),
                       SetField("nsh_c2", 1, 0xF), SetField("nsh_c3", 0xABCD), DecNshTtl(), Output(1))),), table=1, priority=3)),
        ["table:1", "priority=3,dl_type=0x894f,nsh_flags=0x01/0x03,nsh_ttl=5,nsh_mdtype=1,nsh_np=3,nsh_spi=0x123,nsh_si=7,"
         "nsh_c1=0x11/0xff,nsh_c4=0x5", "actions=set_field:6->nsh_flags,set_field:9->nsh_ttl,set_field:0x44->nsh_spi,"
         "set_field:3->nsh_si,set_field:0x1/0xf->nsh_c2,set_field:0xabcd->nsh_c3,dec_nsh_ttl,output:1"]),
    # tun_flags (NXM_NX_TUN_FLAGS: 16 bits on the wire, one flag, OAM): match, set_field, a move into its one bit
    "flow_mod_nx_tun_flags": (0x7B, FlowMod("add", Rule(
        Match.of(tun_flags=1, tun_gbp_flags=5),
        (ApplyActions((SetField("tun_flags", 0), MoveField(sf("reg0", 3, 1), sf("tun_flags", 0, 1)),
                       MoveField(sf("tun_flags", 0, 1), sf("reg1", 0, 1)), Output(2))),), table=1, priority=7)),
        ["table:1", "priority=7,tun_gbp_flags=0x5,tun_flags=+oam", "set_field:0->tun_flags",
         "move:NXM_NX_REG0[3]->NXM_NX_TUN_FLAGS[],move:NXM_NX_TUN_FLAGS[]->NXM_NX_REG1[0]", "output:2"]),
    # actset_output (ONF's experimenter OXM 43, exact): a port, then UNSET (OVS's 0xfff7 as an OpenFlow 1.1+ port)
    "flow_mod_nx_actset_output": (0x7C, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, actset_output=3),
        (WriteActions((Output(2),)), GotoTable(3)), table=2, priority=11)),
        ["table:2", "priority=11,actset_output=3,ip", "write_actions(output:2),goto_table:3"]),
    "flow_mod_nx_actset_unset": (0x7D, FlowMod("add", Rule(
        Match.of(actset_output=0xFFFF_FFF7, reg1=4), (ApplyActions((Output(1),)),), table=3, priority=12)),
        ["table:3", "priority=12,actset_output=UNSET,reg1=0x4", "actions=output:1"]),
    # tun_metadata (NXM_NX_TUN_METADATA0..63, each as long as its TLV map says; here 4, 8 and 12 bytes):
    # match value/mask, set_field, load (NXAST_REG_LOAD2), move in and out, push, pop, delete_field (NXAST_DELETE_FIELD)
    "flow_mod_nx_tun_metadata": (0x7C, FlowMod("add", Rule(
        Match.of(tun_metadata0=(0x12000000, 0xFF000000), tun_metadata5=0x1122334455667788990A0B0C),
        (ApplyActions((SetField("tun_metadata1", 0x0102030405060708), SetField("tun_metadata0", 0x1100, 0xFF00),
                       MoveField(sf("tun_metadata0", 0, 32), sf("reg0", 0, 32)), MoveField(sf("reg1", 0, 16), sf("tun_metadata0", 16, 16)),
                       StackPush(sf("tun_metadata0", 0, 16)), StackPop(sf("reg2", 0, 16)), DeleteField("tun_metadata0"),
                       Output(2))),), table=1, priority=8)),
        ["table:1", "priority=8,tun_metadata0=0x12000000/0xff000000,tun_metadata5=0x1122334455667788990a0b0c",
         "set_field:0x102030405060708->tun_metadata1", "set_field:0x1100/0xff00->tun_metadata0",
         "move:NXM_NX_TUN_METADATA0[0..31]->NXM_NX_REG0[]", "move:NXM_NX_REG1[0..15]->NXM_NX_TUN_METADATA0[16..31]",
         "push:NXM_NX_TUN_METADATA0[0..15]", "pop:NXM_NX_REG2[0..15]", "delete_field:tun_metadata0", "output:2"]),
}
# wide:tun_metadata: values longer than a 4-byte option, in the fewest bytes, as ovs-ofctl sends them (a switch with
# the map keeps their first 4 bytes: tests/endpoint/test_tun_metadata_wide_vs_ovs.py)
NX_FLOW_MODS["flow_mod_nx_tun_metadata_wide"] = (0x7D, FlowMod("add", Rule(
    Match.of(tun_metadata0=(0x1100330055, 0xFF00FF00FF)),
    (ApplyActions((SetField("tun_metadata0", 0x1122334455), SetField("tun_metadata0", 0xFF << 32, 0xFF << 32),
                   Output(2))),), priority=9)),
    ["tun_metadata0=0x1100330055/0xff00ff00ff", "set_field:0x1122334455->tun_metadata0",
     "set_field:0xff00000000/0xff00000000->tun_metadata0", "output:2"])
# nshttl: dec_nsh_ttl written into the action set (which runs it before its set_field on nsh_ttl)
NX_FLOW_MODS["flow_mod_nx_nsh_ttl_write"] = (0x97, FlowMod("add", Rule(
    Match.of(eth_type=0x894F, nsh_ttl=5),
    (ApplyActions((Output(3),)), WriteActions((SetField("nsh_ttl", 9), DecNshTtl(), Output(2)))), table=1, priority=4)),
    ["table:1", "priority=4,dl_type=0x894f,nsh_ttl=5", "actions=output:3,write_actions(set_field:9->nsh_ttl,dec_nsh_ttl,output:2)"])
# long:tun_metadata: options longer than 12 bytes (here 16 and 124): match value/mask, set_field, load, move, push, pop
# and delete_field across their whole length (no map: values in the fewest 4-byte words, as the codec sends them)
V124 = int.from_bytes(bytes(range(1, 125)), "big")
NX_FLOW_MODS["flow_mod_nx_tun_metadata_long"] = (0x7E, FlowMod("add", Rule(
    Match.of(tun_metadata2=(0x11 << 120 | 0xEE00, 0xFF << 120 | 0xFF00)),
    (ApplyActions((SetField("tun_metadata3", V124), SetField("tun_metadata3", 0xAB << 984, 0xFF << 984),
                   MoveField(sf("tun_metadata3", 864, 128), sf("tun_metadata2", 0, 128)), StackPush(sf("tun_metadata3", 0, 992)),
                   StackPop(sf("tun_metadata3", 0, 992)), DeleteField("tun_metadata2"), Output(1))),), table=1, priority=6)),
    ["table:1", f"priority=6,tun_metadata2={0x11 << 120 | 0xEE00:#x}/0xff00000000000000000000000000ff00",
     f"set_field:{V124:#x}->tun_metadata3", "set_field:0xab" + "00" * 123 + "/0xff" + "00" * 123 + "->tun_metadata3",
     "move:NXM_NX_TUN_METADATA3[864..991]->NXM_NX_TUN_METADATA2[0..127]", "push:NXM_NX_TUN_METADATA3[]",
     "pop:NXM_NX_TUN_METADATA3[]", "delete_field:tun_metadata2", "output:1"])
# any:tun_metadata: Open vSwitch's set_field:ANY (a mask keeping no bit of the option): NXAST_REG_LOAD2 of a
# masked header with no bytes, as ovs-ofctl sends set_field:0/0 and Open vSwitch's FLOW_STATS show it (measured:
# tests/endpoint/test_tun_metadata_any_vs_ovs.py)
NX_FLOW_MODS["flow_mod_nx_tun_metadata_any"] = (0x7F, FlowMod("add", Rule(
    Match(), (ApplyActions((SetField("tun_metadata0", 0, 0), Output(2))),), priority=7)),
    ["priority=7", "actions=set_field:ANY->tun_metadata0,output:2"])


def test_sample_keeps_the_nicira_action_it_came_as():
    raw = golden("flow_mod_nx_more")
    acts = M.decode_flow_mod(raw[8:]).mod.rule.apply_actions
    assert [a.subtype for a in acts if isinstance(a, Sample)] == [29, 38, 41, 41]
    assert Sample(5, sampling_port=3).subtype == 38 and Sample(5, direction=2).subtype == 41


def test_resubmit_takes_both_nicira_forms_and_sends_ovs_ofctls():
    """NXAST_RESUBMIT (no table: the rule's own) and NXAST_RESUBMIT_TABLE; written
    always as the table form, as ovs-ofctl writes a parsed resubmit (table 255:
    the rule's own); the ``ct`` form stays refused."""
    plain = _nx(1, struct.pack("!HB3x", 7, 0))
    table = _nx(14, struct.pack("!HB3x", 7, 255))
    assert W.decode_actions(plain) == W.decode_actions(table) == [Resubmit(7)]
    assert W.encode_actions([Resubmit(7)]) == table
    assert W.decode_actions(_nx(14, struct.pack("!HB3x", 0xFFFE, 2))) == [Resubmit(OFPP_LOCAL, 2)]
    with pytest.raises(W.OFError) as e:
        W.decode_actions(_nx(44, struct.pack("!HB3x", 0xFFF8, 2)))
    assert (e.value.etype, e.value.code) == (2, 3)


def test_nx_goldens_use_every_extension_item():
    from tandem.testing.of13_oracle import CONJ_ITEMS, FIELD_ITEMS, NX_ITEMS, TCI_ITEMS, rule_items

    used = rule_items(OSKEN[1].rule)
    for _, mod, _ in NX_FLOW_MODS.values():
        used |= rule_items(mod.rule)
    from test_ofwire_nsh_operands import NSH_MOD

    used |= rule_items(NSH_MOD[1].rule)  # (the NSH fields as operands: test_ofwire_nsh_operands.py)
    from test_ofwire_nsh_ttl_operand import NSH_TTL_MOD

    used |= rule_items(NSH_TTL_MOD[1].rule)  # (nsh_ttl as an operand: test_ofwire_nsh_ttl_operand.py)
    from test_ofwire_nsh_context import NSH_CONTEXT_MOD

    used |= rule_items(NSH_CONTEXT_MOD[1].rule)  # (contexts without nsh_mdtype=1: test_ofwire_nsh_context.py)
    from test_ofwire_nsh_ttl_load import NSH_TTL_LOAD_MOD

    used |= rule_items(NSH_TTL_LOAD_MOD[1].rule)  # (loads into nsh_ttl: test_ofwire_nsh_ttl_load.py)
    from test_ofwire_nsh_output_reg import NSH_OUTPUT_REG_MOD

    used |= rule_items(NSH_OUTPUT_REG_MOD[1].rule)  # (output_reg of NSH fields: test_ofwire_nsh_output_reg.py)
    from test_ofwire_nsh_learn_result import NSH_DST_MOD

    used |= rule_items(NSH_DST_MOD[1].rule)  # (learn result_dst, check_pkt_larger into NSH fields: nshdst)
    want = set(NX_ITEMS) | set(CONJ_ITEMS) | set(TCI_ITEMS) | set(FIELD_ITEMS)
    assert want <= used, sorted(want - used)


def test_os_ken_extension_flow_mod_decodes_and_round_trips():
    xid, mod = OSKEN
    raw = golden("flow_mod_nx_osken")
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert M.decode_flow_mod(M.encode_flow_mod(xid, mod)[8:]).mod == mod
    # the actions are byte for byte os-ken's, but for the move's source: Tandem, like Open vSwitch,
    # names tcp_src by its NXM header (NXM_OF_TCP_SRC), os-ken by its OXM one (OXM_OF_TCP_SRC)
    ours = W.encode_actions(mod.rule.apply_actions)
    assert ours.replace(bytes.fromhex("00001202"), bytes.fromhex("80001a02")) in raw


@pytest.mark.parametrize("name", sorted(NX_FLOW_MODS))
def test_nx_flow_mod_matches_its_golden_bytes(name):
    xid, mod, _ = NX_FLOW_MODS[name]
    raw = golden(name)
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod


@needs_ofctl
@pytest.mark.parametrize("name", ["flow_mod_nx_osken", *sorted(NX_FLOW_MODS)])
def test_open_vswitch_reads_the_golden_bytes_as_the_same_flow(name):
    out = ofp_print(golden(name))
    want = NX_FLOW_MODS[name][2] if name in NX_FLOW_MODS else [
        "pkt_mark=0x3/0xf,tcp,reg0=0x5,reg15=0/0xff,in_port=1,tcp_flags=+syn-ack",
        "set_field:0x5/0xff->reg1,move:NXM_NX_REG3[0..15]->NXM_NX_REG2[16..31]", "push:NXM_NX_XXREG1[]",
        "pop:NXM_NX_PKT_MARK[]", "note:61.62.00.00.00.00", "set_field:0x7->pkt_mark", "exit,output:1"]
    for piece in want:
        assert piece in out, (piece, out)


def _nx(subtype: int, body: bytes) -> bytes:
    raw = struct.pack("!HHIH", 0xFFFF, 0, 0x2320, subtype) + body
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


def _oxm(cls: int, num: int, value: bytes, mask: bytes | None = None, exp: int | None = None) -> bytes:
    body = (struct.pack("!I", exp) if exp is not None else b"") + value + (mask or b"")
    return struct.pack("!I", cls << 16 | num << 9 | (mask is not None) << 8 | len(body)) + body


def _flow_mod(oxms: bytes, actions: bytes) -> bytes:
    match = struct.pack("!HH", 1, 4 + len(oxms)) + oxms
    match += b"\0" * (-len(match) % 8)
    ins = struct.pack("!HH4x", 4, 8 + len(actions)) + actions
    body = struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 1, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0) + match + ins
    return W.header(W.OFPT_FLOW_MOD, 9, body)


TCP = _oxm(0x8000, 5, b"\x08\x00") + _oxm(0x8000, 10, b"\x06")
# headers Open vSwitch takes for the same fields and actions: (message, what OVS prints, the IR)
OTHER_HEADERS = {
    "NXAST_REG_LOAD (ovs-ofctl's load on an NXM field)": (
        _flow_mod(b"", _nx(7, struct.pack("!HIQ", (4 << 6) | 7, 0x0001 << 16 | 3 << 9 | 4, 0x5A))),
        "load:0x5a->NXM_NX_REG3[4..11]", (SetField("reg3", 0x5A << 4, 0xFF << 4),)),
    "NXAST_REG_LOAD into an xreg": (
        _flow_mod(b"", _nx(7, struct.pack("!HIQ", (24 << 6) | 15, 0x8001 << 16 | 1 << 9 | 8, 0xABCD))),
        "load:0xabcd->OXM_OF_PKT_REG1[24..39]", (SetField("reg2", 0xAB, 0xFF), SetField("reg3", 0xCD << 24, 0xFF << 24))),
    "ONF tcp_flags (OVS's OpenFlow 1.3 header)": (
        _flow_mod(TCP + _oxm(0xFFFF, 42, b"\x00\x12", b"\x0f\xff", exp=0x4F4E4600), b""),
        "tcp_flags=syn|ack", None),
    "OpenFlow 1.5 tcp_flags": (_flow_mod(TCP + _oxm(0x8000, 42, b"\x00\x02", b"\x00\x12"), b""),
                               "tcp_flags=+syn-ack", None),
    "OXM_OF_PKT_REG0 and NXM_NX_XXREG1": (
        _flow_mod(_oxm(0x8001, 0, (5).to_bytes(8, "big"), (0xFFFF_FFFF_0000_00FF).to_bytes(8, "big"))
                  + _oxm(0x0001, 112, (7).to_bytes(16, "big")), b""),
        "reg0=0,reg1=0x5/0xff,reg4=0,reg5=0,reg6=0,reg7=0x7", None),
    "NXM spellings of OpenFlow 1.3 fields (in_port, eth_dst, IP TOS, VLAN TCI)": (
        _flow_mod(_oxm(0, 0, b"\x00\x03") + _oxm(0, 1, bytes.fromhex("020000000000"), bytes.fromhex("ffffffffff00"))
                  + _oxm(0, 4, b"\x30\x05") + _oxm(0, 3, b"\x08\x00") + _oxm(0, 5, b"\xb8"), b""),
        "ip,in_port=3,dl_vlan=5,dl_vlan_pcp=1,dl_dst=02:00:00:00:00:00/ff:ff:ff:ff:ff:00,nw_tos=184", None),
    # (a flow stats reply of Open vSwitch carries these two as set_field tunnel_id, as Tandem's)
    "NXAST_SET_TUNNEL (a write of tunnel_id)": (
        _flow_mod(b"", _nx(2, struct.pack("!2xI", 0x55))), "set_tunnel:0x55", (SetField("tunnel_id", 0x55),)),
    "NXAST_SET_TUNNEL64": (
        _flow_mod(b"", _nx(9, struct.pack("!6xQ", 0x1234567890))), "set_tunnel64:0x1234567890",
        (SetField("tunnel_id", 0x1234567890),)),
    "NXAST_DEC_TTL_CNT_IDS without ids": (
        _flow_mod(TCP, _nx(21, struct.pack("!H4x", 0))), "actions=dec_ttl()", (DecTtl(()),)),
}
OTHER_MATCHES = {
    "ONF tcp_flags (OVS's OpenFlow 1.3 header)": Match.of(eth_type=0x800, ip_proto=6, tcp_flags=0x12),
    "OpenFlow 1.5 tcp_flags": Match.of(eth_type=0x800, ip_proto=6, tcp_flags=(2, 0x12)),
    "OXM_OF_PKT_REG0 and NXM_NX_XXREG1": Match.of(reg0=0, reg1=(5, 0xFF), reg4=0, reg5=0, reg6=0, reg7=7),
    "NXM spellings of OpenFlow 1.3 fields (in_port, eth_dst, IP TOS, VLAN TCI)": Match.of(
        in_port=3, eth_dst=(0x020000000000, 0xFFFFFFFFFF00), vlan_vid=0x1005, vlan_pcp=1, eth_type=0x0800, ip_dscp=46),
}


@pytest.mark.parametrize("name", sorted(OTHER_HEADERS))
def test_other_headers_open_vswitch_takes_decode_to_the_same_ir(name):
    raw, shown, actions = OTHER_HEADERS[name]
    rule = M.decode_flow_mod(raw[8:]).mod.rule
    if actions is not None:
        assert rule.apply_actions == actions
    else:
        assert rule.match == OTHER_MATCHES[name]
    if shutil.which("ovs-ofctl"):
        assert shown in ofp_print(raw)


def test_nicira_write_metadata_is_the_instruction():
    """Open vSwitch makes a Nicira write_metadata that ends apply_actions the
    write_metadata instruction (and sends that back); anywhere else it refuses it:
    UNSUPPORTED_ORDER after it in apply_actions or beside clear/write_actions or the
    instruction, BAD_TYPE in write_actions (test_refusals_vs_ovs.py checks the codes against OVS)."""
    wm = _nx(22, struct.pack("!6xQQ", 5, 0xFF))
    out = struct.pack("!HHIH6x", 0, 16, 1, 0xFFFF)
    goto = struct.pack("!HHB3x", 1, 8, 2)
    write = struct.pack("!HH4x", 3, 8 + len(out)) + out
    of_wm = struct.pack("!HH4xQQ", 2, 24, 1, 1)

    def with_ins(flow_mod: bytes, ins: bytes) -> bytes:
        return W.header(W.OFPT_FLOW_MOD, 9, flow_mod[8:] + ins)

    raw = with_ins(_flow_mod(b"", out + wm), goto)
    rule = M.decode_flow_mod(raw[8:]).mod.rule
    assert rule.instructions == (ApplyActions((Output(1),)), WriteMetadata(5, 0xFF), GotoTable(2))
    if shutil.which("ovs-ofctl"):
        assert "actions=output:1,write_metadata:0x5/0xff,goto_table:2" in ofp_print(raw)
    for bad, code in ((_flow_mod(b"", wm + out), W.OFPBAC_UNSUPPORTED_ORDER), (_flow_mod(b"", wm + wm), W.OFPBAC_UNSUPPORTED_ORDER),
                      (with_ins(_flow_mod(b"", wm), write), W.OFPBAC_UNSUPPORTED_ORDER),
                      (with_ins(_flow_mod(b"", wm), of_wm), W.OFPBAC_UNSUPPORTED_ORDER),
                      (with_ins(_flow_mod(b"", b""), struct.pack("!HH4x", 3, 8 + len(wm)) + wm), W.OFPBAC_BAD_TYPE)):
        with pytest.raises(W.OFError) as e:
            M.decode_flow_mod(bad[8:])
        assert (e.value.etype, e.value.code) == (W.OFPET_BAD_ACTION, code), str(e.value)
