"""Open vSwitch's multipath, bundle and bundle_load: ovs-ofctl text round trips
(Open vSwitch's own parser takes what Tandem prints), wire golden bytes (the
actions as ovs-ofctl 3.1 itself encodes them, and a FLOW_MOD of Tandem's that
``ovs-ofctl ofp-print`` reads as the same flow) and the refusals, as OVS's."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402
from test_ofwire_nx_golden import GOLDEN, golden, ofp_print  # noqa: E402

from tandem.rules import ofwire as W  # noqa: E402
from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ir import ApplyActions, Bundle, FlowMod, Match, Multipath, Output, Rule, RuleError, Subfield  # noqa: E402
from tandem.rules.ofctl import parse_rule  # noqa: E402
from tandem.rules.ofctl_lex import OfctlSyntaxError  # noqa: E402

sf = Subfield

TEXTS = [
    "actions=multipath(eth_src,0,modulo_n,1,0,NXM_NX_REG0[0..15]),output:1",
    "ip,actions=multipath(symmetric_l4,1024,hash_threshold,7,0,NXM_NX_REG1[])",
    "actions=multipath(symmetric_l3l4,65535,hrw,65536,0,NXM_NX_REG2[0..15])",
    "actions=multipath(symmetric_l3l4+udp,5,iter_hash,10,3,NXM_NX_REG3[4..7])",
    "actions=multipath(nw_src,7,hrw,2,0,NXM_NX_REG4[31]),multipath(nw_dst,8,modulo_n,100,0,NXM_NX_XXREG0[0..63])",
    "actions=multipath(symmetric_l3,9,iter_hash,1000,4096,NXM_NX_PKT_MARK[0..15])",
    "actions=bundle(eth_src,0,active_backup,ofport,members:1,2,3)",
    "actions=bundle(symmetric_l4,50,hrw,ofport,members:4)",
    "actions=bundle(symmetric_l3l4+udp,65535,hrw,ofport,members:)",
    "actions=bundle(nw_dst,3,hrw,ofport,members:7,1,65279)",
    "actions=bundle_load(symmetric_l3l4,1,hrw,ofport,NXM_NX_REG0[],members:2,3),output:NXM_NX_REG0[0..15]",
    "actions=bundle_load(symmetric_l3,2,active_backup,ofport,NXM_NX_REG5[8..23],members:1,5,9)",
    "actions=bundle_load(nw_src,0,hrw,ofport,NXM_NX_XXREG1[0..15],members:3)",
    # reserved members (Open vSwitch 3.1 takes every one but CONTROLLER; NONE prints as ANY)
    "actions=bundle(eth_src,0,active_backup,ofport,members:IN_PORT,LOCAL,ANY,0,2)",
    "actions=bundle(symmetric_l4,3,hrw,ofport,members:TABLE,NORMAL,FLOOD,ALL)",
    "actions=bundle_load(nw_src,9,hrw,ofport,NXM_NX_REG1[0..15],members:LOCAL,IN_PORT,TABLE,NORMAL,FLOOD,ALL,ANY)",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_slaves_is_read_as_members_and_spacing_is_free():
    rule = parse_rule("actions=bundle(eth_src, 0, hrw, ofport, slaves:1, 2)")
    assert rule == parse_rule("actions=bundle(eth_src,0,hrw,ofport,members:1,2)")
    (a,) = rule.instructions[0].actions
    assert a == Bundle("eth_src", 0, "hrw", (1, 2))


def test_reserved_members_by_name_in_any_case_or_by_openflow10_number():
    from tandem.rules.ir import OFPP_ANY, OFPP_IN_PORT, OFPP_LOCAL

    rule = parse_rule("actions=bundle(eth_src,0,hrw,ofport,members:in_port,Local,none,65528,65535,0)")
    (a,) = rule.instructions[0].actions
    assert a.members == (OFPP_IN_PORT, OFPP_LOCAL, OFPP_ANY, OFPP_IN_PORT, OFPP_ANY, 0)
    from tandem.rules.ofctl import format_rule

    assert "members:IN_PORT,LOCAL,ANY,IN_PORT,ANY,0" in format_rule(rule)


@pytest.mark.parametrize("text, why", [
    ("actions=multipath(eth_src,0,hrw,300,0,reg0[0..7])", "8-bit destination field has 256 possible values"),
    ("actions=multipath(eth_src,0,hrw,0,0,reg0[])", "n_links 0 is not in valid range"),
    ("actions=multipath(eth_src,0,hrw,65537,0,reg0[])", "n_links 65537 is not in valid range"),
    ("actions=multipath(foo,0,hrw,3,0,reg0[])", "unknown fields `foo'"),
    ("actions=multipath(eth_src,0,best,3,0,reg0[])", "unknown algorithm `best'"),
    ("actions=multipath(eth_src,0,hrw,3,0)", "needs 6 arguments"),
    ("actions=multipath(eth_src,0,hrw,3,0,eth_type[])", "cannot be written"),
    ("actions=multipath(eth_src,0,hrw,3,0,ip_dscp[0..1])", "needs ip or ipv6"),
    ("actions=write_actions(multipath(eth_src,0,hrw,3,0,reg0[]))", "action set"),
    ("actions=write_actions(bundle(eth_src,0,hrw,ofport,members:1))", "action set"),
    ("actions=bundle(eth_src,0,round_robin,ofport,members:1)", "unknown algorithm `round_robin'"),
    ("actions=bundle(eth_src,0,hrw,ofport,1,2)", "members:PORT"),
    ("actions=multipath", "multipath needs (FIELDS"),
    ("actions=bundle_load", "bundle_load needs (FIELDS,BASIS,ALGORITHM,ofport,DST,members"),
    ("actions=bundle(eth_src,0,hrw,port,members:1)", "unknown member type"),
    ("actions=bundle_load(eth_src,0,hrw,ofport,reg0[0..7],members:1)", "at least 16 bits"),
    ("actions=bundle(eth_src,0,hrw,ofport,members:1,CONTROLLER)", "member CONTROLLER is not supported"),
    ("actions=bundle(eth_src,0,hrw,ofport,members:65280)", "member 65280 is not supported"),
    ("actions=bundle(eth_src,0,hrw,ofport,members:65533)", "member 65533 is not supported"),
    ("actions=bundle(eth_src,0,hrw,ofport,members:0xfff8)", "not a decimal number"),
])
def test_text_refusals(text, why):
    with pytest.raises(OfctlSyntaxError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_rule(text)


# The actions' bytes as ovs-ofctl 3.1 encodes them (its hex dump of
# `multipath(eth_src,0,hrw,3,0,reg0[0..15])` and `bundle_load(eth_src,0,hrw,ofport,reg0[0..7],members:1,2)`,
# the latter refused by Open vSwitch itself for its 8-bit destination)
OVS_MULTIPATH = bytes.fromhex("ffff002000002320000a0000000000000002000200000000000000" "0f00010004")
OVS_BUNDLE_LOAD_8BIT = bytes.fromhex("ffff002800002320000d000100000000000000020002000700010004000000000001000200000000")


def test_actions_are_the_bytes_open_vswitch_encodes():
    assert W.encode_action(Multipath("eth_src", 0, "hrw", 3, 0, sf("reg0", 0, 16))) == OVS_MULTIPATH
    load = W.encode_action(Bundle("eth_src", 0, "hrw", (1, 2), sf("reg0", 0, 16)))
    assert load == OVS_BUNDLE_LOAD_8BIT[:22] + struct.pack("!H", 15) + OVS_BUNDLE_LOAD_8BIT[24:]
    with pytest.raises(W.OFError) as e:
        W.decode_actions(OVS_BUNDLE_LOAD_8BIT)
    assert (e.value.etype, e.value.code) == (2, 5)  # OFPBAC_BAD_ARGUMENT, as Open vSwitch answers


HASH_MOD = (0x74, FlowMod("add", Rule(Match.of(eth_type=0x0800), (ApplyActions((
    Multipath("symmetric_l3l4+udp", 5, "iter_hash", 10, 3, sf("reg1", 0, 16)),
    Multipath("symmetric_l3", 65535, "modulo_n", 65536, 70000, sf("xxreg0", 8, 16)),
    Bundle("symmetric_l4", 7, "hrw", (5, 3, 8)),
    Bundle("nw_dst", 1, "active_backup", (1, 2, 3, 4, 6), sf("reg2", 0, 32)),
    Bundle("eth_src", 0, "hrw", ()),
    Output(2))),), priority=11)),
    ["multipath(symmetric_l3l4+udp,5,iter_hash,10,3,NXM_NX_REG1[0..15])",
     "multipath(symmetric_l3,65535,modulo_n,65536,70000,NXM_NX_XXREG0[8..23])",
     "bundle(symmetric_l4,7,hrw,ofport,members:5,3,8)",
     "bundle_load(nw_dst,1,active_backup,ofport,NXM_NX_REG2[],members:1,2,3,4,6)",
     "bundle(eth_src,0,hrw,ofport,members:)", "output:2"])


def test_flow_mod_matches_its_golden_bytes():
    xid, mod, _ = HASH_MOD
    raw = golden("flow_mod_nx_hash")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod


def test_golden_flow_mod_uses_every_hash_item():
    from tandem.testing.of13_oracle import HASH_ITEMS, rule_items

    # (bundle_host, homeres's item of bundles whose members are the host's, has the bundle wire form)
    assert rule_items(HASH_MOD[1].rule) - {"bundle_host"} == set(HASH_ITEMS)


def test_open_vswitch_reads_the_golden_bytes_as_the_same_flow():
    out = ofp_print(golden("flow_mod_nx_hash"))
    for piece in HASH_MOD[2]:
        assert piece in out, (piece, out)


def _bundle_bytes(**over) -> bytes:
    f = dict(alg=1, fields=0, basis=0, mtype=2, n=2, ofs_nbits=0, dst=0, zero=0, members=(1, 2), sub=12)
    f.update(over)
    body = struct.pack("!HHHIHHII", f["alg"], f["fields"], f["basis"], f["mtype"], f["n"], f["ofs_nbits"], f["dst"],
                       f["zero"]) + struct.pack(f"!{len(f['members'])}H", *f["members"])
    raw = struct.pack("!HHIH", 0xFFFF, 0, 0x2320, f["sub"]) + body
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


@pytest.mark.parametrize("over, code", [
    (dict(fields=7), 5), (dict(alg=2), 5), (dict(mtype=3), 5), (dict(zero=1), 5),
    (dict(ofs_nbits=15, dst=0x10004), 5),  # bundle with a destination
    (dict(n=9), 1),  # fewer member bytes than members
    (dict(members=(1, 0xFFFD)), 4),  # CONTROLLER, as Open vSwitch refuses it
    (dict(members=(0xFF00,)), 4), (dict(members=(0xFFF7, 1)), 4),  # (no port and no reserved port)
])
def test_wire_refusals(over, code):
    with pytest.raises(W.OFError) as e:
        W.decode_actions(_bundle_bytes(**over))
    assert (e.value.etype, e.value.code) == (2, code)



RESERVED_MOD = (0x75, FlowMod("add", Rule(Match.of(eth_type=0x0800), (ApplyActions((
    Bundle("eth_src", 0, "active_backup", (0xFFFFFFF8, 0xFFFFFFFE, 0xFFFFFFFF, 0, 3)),
    Bundle("symmetric_l4", 2, "hrw", (0xFFFFFFF9, 0xFFFFFFFA, 0xFFFFFFFB, 0xFFFFFFFC), sf("reg3", 0, 16)),
    Output(2))),), priority=12)),
    ["bundle(eth_src,0,active_backup,ofport,members:IN_PORT,LOCAL,ANY,0,3)",
     "bundle_load(symmetric_l4,2,hrw,ofport,NXM_NX_REG3[0..15],members:TABLE,NORMAL,FLOOD,ALL)"])


def test_reserved_members_match_their_golden_bytes():
    """Members travel as OpenFlow 1.0 numbers (IN_PORT 0xfff8, LOCAL 0xfffe, NONE 0xffff)."""
    xid, mod, _ = RESERVED_MOD
    raw = golden("flow_mod_nx_bundle_reserved")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert raw.hex().count("fff8fffeffff000000030000") == 1  # (the first bundle's members, then padding)


def test_reserved_members_golden_flow_mod_uses_both_reserved_items():
    from tandem.testing.of13_oracle import BUNDLE_RESERVED_ITEMS, rule_items

    assert set(BUNDLE_RESERVED_ITEMS) <= rule_items(RESERVED_MOD[1].rule)


def test_open_vswitch_reads_the_reserved_members_golden_bytes():
    out = ofp_print(golden("flow_mod_nx_bundle_reserved"))
    for piece in RESERVED_MOD[2]:
        assert piece in out, (piece, out)


FLOOD_MOD = (0x76, FlowMod("add", Rule(Match.of(in_port=3), (ApplyActions((
    Bundle("eth_src", 0, "active_backup", (77, 0xFFFFFFFB, 2, 0xFFFFFFFC)),)),), priority=13)),
    ["bundle(eth_src,0,active_backup,ofport,members:77,FLOOD,2,ALL)"])


def test_flood_members_match_their_golden_bytes_and_open_vswitch_reads_them():
    """bundle_flood: FLOOD (0xfffb) and ALL (0xfffc) as OpenFlow 1.0 numbers among the members."""
    from tandem.testing.of13_oracle import rule_items

    xid, mod, pieces = FLOOD_MOD
    raw = golden("flow_mod_nx_bundle_flood")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert raw.hex().count("004dfffb0002fffc") == 1
    assert "bundle_flood" in rule_items(mod.rule)
    out = ofp_print(raw)
    for piece in pieces:
        assert piece in out, (piece, out)
