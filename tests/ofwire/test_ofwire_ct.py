"""Connection tracking on the wire and in ovs-ofctl text: NXAST_CT, NXAST_CT_CLEAR and
the NXM ct_* match fields. The golden files ``flow_mod_ct_*.hex`` are Tandem's own
encoding (written by ``make_golden_nx.py``); Open vSwitch confirms their meaning
(``ovs-ofctl ofp-print`` must read each as the flow its entry names)."""

from __future__ import annotations

import struct
import subprocess

import pytest

from test_ofwire_nx_golden import GOLDEN, golden, needs_ofctl  # noqa: F401 (GOLDEN: make_golden_nx.py)
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import (
    ApplyActions, Ct, CtClear, CtNat, FlowMod, GotoTable, Match, Output, Rule, Subfield, WriteActions,
)
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule


# name -> (xid, flow mod, pieces ovs-ofctl ofp-print must show)
CT_FLOW_MODS = {
    "flow_mod_ct_commit": (0x81, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ct_state=(0x21, 0x21)),
        (ApplyActions((Ct(commit=True, zone=5, table=3, exec=(("ct_mark", 3, None), ("ct_label", 1, 0xFF))),
                       CtClear(), Output(1))),), table=1, priority=5)),
        ["table:1", "priority=5,ct_state=+new+trk,ip",
         "actions=ct(commit,table=3,zone=5,exec(set_field:0x3->ct_mark,set_field:0x1/0xff->ct_label)),ct_clear,output:1"]),
    "flow_mod_ct_fields": (0x82, FlowMod("add", Rule(
        Match.of(eth_type=0x0800, ct_state=(0x20, 0x30), ct_zone=3, ct_mark=(5, 7), ct_label=(1 << 64, 3 << 64),
                 ct_nw_proto=6, ct_nw_src=(0x01020300, 0xFFFFFF00), ct_nw_dst=0x0A000001, ct_tp_src=(0x400, 0xFF00),
                 ct_tp_dst=80),
        (ApplyActions((Ct(zone_src=Subfield("reg0", 0, 16), table=2), Output(2))),), priority=6)),
        ["ct_state=-inv+trk,ct_zone=3,ct_mark=0x5/0x7,ct_label=0x10000000000000000/0x30000000000000000",
         "ct_nw_src=1.2.3.0/24,ct_nw_dst=10.0.0.1,ct_nw_proto=6,ct_tp_src=0x400/0xff00,ct_tp_dst=80,ip",
         "actions=ct(table=2,zone=NXM_NX_REG0[0..15]),output:2"]),
    "flow_mod_ct_ipv6": (0x83, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD, ct_state=(0x22, 0x32), ct_ipv6_src=1, ct_ipv6_dst=(2 << 64, ((1 << 64) - 1) << 64)),
        (ApplyActions((Ct(commit=True, force=True, exec=(("ct_label", 5 << 64, 0xFF << 64),)),)),
         WriteActions((Output(3),)), GotoTable(4)), table=2, priority=7)),
        ["table:2", "ct_state=+est-inv+trk,ct_ipv6_src=::1,ct_ipv6_dst=0:0:0:2::/64,ipv6",
         "ct(commit,force,exec(set_field:0x50000000000000000/0xff0000000000000000->ct_label))",
         "write_actions(output:3),goto_table:4"]),
    # ct and ct_clear written into the action set; a recirculation back into table 0
    "flow_mod_ct_written": (0x84, FlowMod("add", Rule(
        Match.of(eth_type=0x0800),
        (ApplyActions((Ct(table=0, zone=2),)),
         WriteActions((CtClear(), Ct(commit=True, zone_src=Subfield("reg0", 0, 16), table=3,
                                     exec=(("ct_mark", 7, None),))))), table=2, priority=8)),
        ["table:2", "priority=8,ip", "actions=ct(table=0,zone=2),write_actions(ct_clear,"
         "ct(commit,table=3,zone=NXM_NX_REG0[0..15],exec(set_field:0x7->ct_mark)))"]),
    # nat (decoded and encoded; run by dp-core's tracker)
    "flow_mod_ct_nat": (0x85, FlowMod("add", Rule(
        Match.of(eth_type=0x86DD),
        (ApplyActions((Ct(commit=True, nat=CtNat("dst", 0xFE80 << 112 | 1, 0xFE80 << 112 | 5, True, 80, 90, hash=True),
                          exec=(("ct_mark", 1, None),)),
                       Ct(nat=CtNat()), Ct(commit=True, nat=CtNat("src")))),),
        priority=9)),
        ["priority=9,ipv6", "actions=ct(commit,nat(dst=[fe80::1]-[fe80::5]:80-90,hash),exec(set_field:0x1->ct_mark)),"
         "ct(nat),ct(commit,nat(src))"]),
}


@pytest.mark.parametrize("name", sorted(CT_FLOW_MODS))
def test_ct_flow_mod_matches_its_golden_bytes(name):
    xid, mod, _ = CT_FLOW_MODS[name]
    raw = golden(name)
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod


@needs_ofctl
@pytest.mark.parametrize("name", sorted(CT_FLOW_MODS))
def test_open_vswitch_reads_the_ct_golden_bytes_as_the_same_flow(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden(name).hex()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    for piece in CT_FLOW_MODS[name][2]:
        assert piece in out, (piece, out)


def test_nxast_ct_layout():
    """struct nx_action_conntrack: flags, zone_src header, zone ofs_nbits, recirc table, alg, then nested actions."""
    raw = W.encode_action(Ct(commit=True, zone_src=Subfield("reg1", 16, 16), table=7))
    assert raw == struct.pack("!HHIHHIHB3xH", 0xFFFF, 24, 0x2320, 35, 1, 0x0001_0204, 16 << 6 | 15, 7, 0)
    assert W.encode_action(Ct()) == struct.pack("!HHIHHIHB3xH", 0xFFFF, 24, 0x2320, 35, 0, 0, 0, 0xFF, 0)
    assert W.encode_action(CtClear()) == struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 43)
    # exec set_field of the whole ct_mark: OFPAT_SET_FIELD with the NXM header, as Open vSwitch sends it
    raw = W.encode_action(Ct(commit=True, exec=(("ct_mark", 1, None),)))
    assert raw[24:] == bytes.fromhex("001900100001d6040000000100000000")
    for a in (Ct(commit=True, zone_src=Subfield("reg1", 16, 16), table=7), Ct(), CtClear(),
              Ct(commit=True, exec=(("ct_mark", 1, None), ("ct_mark", 2, 6), ("ct_label", 1 << 100, None)))):
        assert W.decode_actions(W.encode_action(a)) == [a]


def _ct(flags=0, zone_src=0, zone=0, table=0xFF, alg=0, nested=b""):
    return struct.pack("!HHIHHIHB3xH", 0xFFFF, 24 + len(nested), 0x2320, 35, flags, zone_src, zone, table, alg) + nested


@pytest.mark.parametrize("raw, code", [
    # (an alg number Open vSwitch runs no ALG for is taken: test_ct_alg_number.py)
    (_ct(zone_src=0x0001_0004, zone=7), 14),  # an 8-bit zone field: BAD_SET_LEN, as Open vSwitch
    (_ct(flags=1, nested=bytes.fromhex("001900100001000400000001") + bytes(4)), 5),  # exec set_field reg0: BAD_ARGUMENT
    (_ct(nested=bytes.fromhex("001900100001d6040000000100000000")), 5),  # exec without commit: BAD_ARGUMENT
    (struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 36), 15),  # nat outside ct: BAD_SET_ARGUMENT, as Open vSwitch
])
def test_bad_ct_actions_are_refused_with_one_error(raw, code):
    with pytest.raises(W.OFError) as e:
        W.decode_actions(raw)
    assert (e.value.etype, e.value.code) == (2, code), str(e.value)


TEXTS = [
    "table=1,priority=5,ip,ct_state=+trk+new,actions=ct(commit,zone=5,table=3,exec(set_field:0x3->ct_mark,"
    "set_field:0x1/0xff->ct_label)),ct_clear,output:1",
    "ct_state=+trk-inv,ip,ct_nw_src=1.2.3.0/24,ct_nw_proto=6,ct_tp_dst=80,ct_zone=3,ct_mark=5/7,"
    "actions=ct(zone=NXM_NX_REG0[0..15],table=2),2",
    "ct_state=-trk,ipv6,actions=ct(commit,force,exec(load:0x5->NXM_NX_CT_LABEL[64..71])),write_actions(output:3)",
    "ct_state=+trk-inv,ipv6,ct_ipv6_dst=::1/64,actions=ct",
    "ct_state=est|trk|rpl,actions=1",
    "table=1,ip,actions=write_actions(ct(commit,zone=3,table=2,exec(set_field:0x5->ct_mark)),ct_clear)",
    "table=2,ipv6,actions=ct(table=0),ct(table=2,zone=NXM_NX_REG0[0..15]),write_actions(ct)",
    "ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.5:100-200,random)),ct(nat),ct(commit,nat(dst))",
    "ipv6,actions=ct(commit,zone=5,nat(dst=[fe80::1]-[fe80::5]:80,persistent,hash),exec(set_field:0x1->ct_mark))",
    "ip,actions=ct(commit,table=2,nat(src=10.0.0.1:100))",
]


@pytest.mark.parametrize("text", TEXTS)
def test_ct_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("text, why", [
    ("ip,ct_nw_src=1.2.3.4,actions=1", "tracked, valid connection"),
    ("ct_state=+trk,ip,ct_nw_src=1.2.3.4,actions=1", "tracked, valid connection"),
    ("actions=ct", "ct needs ip or ipv6"),
    ("ip,actions=ct(exec(set_field:1->ct_mark))", "only with commit"),
    ("ip,actions=ct(commit,exec(set_field:1->reg0))", "nested modification of reg0"),
    ("ip,actions=ct(commit,nat(src=[::1]))", "IPv6 range needs ipv6"),
    ("ip,actions=ct(commit,nat(src=10.0.0.5-10.0.0.1))", "below its start"),
    ("ip,actions=ct(commit,nat(src=10.0.0.1,hash,random))", "both hash and random"),
    ("ip,actions=ct(commit,nat(persistent))", "needs src or dst"),
    ("ip,actions=ct(commit,zone=NXM_NX_REG0[0..7])", "16 bits"),
    ("ip,actions=set_field:1->ct_mark", "cannot be set"),
    ("ct_zone=3/1,actions=1", "cannot be masked"),
])
def test_ct_text_refusals_are_one_line(text, why):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value) and "\n" not in str(e.value).strip()
