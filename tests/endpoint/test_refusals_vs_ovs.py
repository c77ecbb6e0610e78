"""docs/endpoint.md's refusal table, row by row, against a plain Open vSwitch 3.1 bridge.

The same OpenFlow 1.3 messages go to one OVS bridge (over its management
socket) and to OneSwitch (fake backend, the three-switch test topology). For
the rows under "refused as Open vSwitch refuses" both must answer with the
same error type and code; for the rows under "refused by OneSwitch only" OVS
accepts and OneSwitch answers with the documented error (so the table cannot
silently go stale either way). Rows OneSwitch once refused alone (tables 252
and 253, ports that are no port, LOCAL, FLOOD and groups written into the
action set across tables) must be accepted by both."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import Controller, FlowMod, Group, Output, SetField
from tandem.rules.ir import ApplyActions, Decap, WriteActions
from tandem.rules.ir import GroupAction
from tandem.rules.ir import GotoTable
from tandem.rules.ir import DecNshTtl
from tandem.rules.ir import Learn, Subfield
from tandem.rules.ir import EncapEthernet, EncapNsh
from tandem.rules import nsh as NSH
from tandem.rules import ofwire_packet_in2 as P2
from tandem.rules.meters import Meter, MeterBand, MeterMod
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.ofctl import parse_actions
from tandem.rules.ofwire_meter import encode_meter_mod
from tandem.rules.ofwire_tlv import NXTTMC_ADD, TlvMap, encode_tlv_table_mod

pytestmark = [pytest.mark.ovs]
TOPO = Path(__file__).with_name("three_switches.yaml")


def _oxm(num: int, value: bytes, cls: int = 0x8000, masked: bool = False) -> bytes:
    return struct.pack("!I", cls << 16 | num << 9 | masked << 8 | len(value)) + value


def _flow_mod(xid: int, oxms: bytes = b"", instructions: bytes = b"", table: int = 0) -> bytes:
    match = struct.pack("!HH", 1, 4 + len(oxms)) + oxms
    match += b"\0" * (-len(match) % 8)
    body = struct.pack("!QQBBHHHIIIH2x", 0, 0, table, 0, 0, 0, 100, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return W.header(W.OFPT_FLOW_MOD, xid, body + match + instructions)


def _apply(*actions: bytes) -> bytes:
    acts = b"".join(actions)
    return struct.pack("!HH4x", 4, 8 + len(acts)) + acts


def _action(atype: int, body: bytes = b"") -> bytes:
    raw = struct.pack("!HH", atype, 4 + len(body)) + body
    raw += b"\0" * (-len(raw) % 8)
    return struct.pack("!HH", atype, len(raw)) + raw[4:]


def _set_field(oxm: bytes) -> bytes:
    return _action(25, oxm)


def _nx(subtype: int, body: bytes) -> bytes:
    """A Nicira experimenter action."""
    return _action(0xFFFF, struct.pack("!IH", 0x2320, subtype) + body)


def _write(*actions: bytes) -> bytes:
    acts = b"".join(actions)
    return struct.pack("!HH4x", 3, 8 + len(acts)) + acts


REG0 = 0x0001 << 16 | 0 << 9 | 4  # NXM_NX_REG0's header


def _conj(cid: int, k: int, n: int) -> bytes:
    """NXAST_CONJUNCTION: conjunction(cid, k/n)."""
    return _nx(34, struct.pack("!BBI", k - 1, n, cid))


def _ct(flags: int, zone: int = 0, table: int = 0xFF, alg: int = 0, zone_src: int = 0, nested: bytes = b"") -> bytes:
    """NXAST_CT (flags 1: commit); with ``zone_src`` (a field header) ``zone`` is its ofs_nbits (15: bits 0..15)."""
    body = struct.pack("!IHHIHB3xH", 0x2320, 35, flags, zone_src, zone, table, alg) + nested
    return struct.pack("!HH", 0xFFFF, 4 + len(body)) + body


ETH = lambda t: _oxm(5, struct.pack("!H", t))  # noqa: E731
IN_PORT1 = _oxm(0, struct.pack("!I", 1))


def ACTSET(port: int) -> bytes:  # actset_output: ONF's experimenter OXM 43
    return struct.pack("!II", 0xFFFF << 16 | 43 << 9 | 8, 0x4F4E4600) + struct.pack("!I", port)
OUT1 = _action(0, struct.pack("!IH6x", 1, 0xFFFF))
DECAP = _nx(47, struct.pack("!2xI", 0xFFFE))  # (decap(): rules/decap.py)


def _nsh_rule(xid: int, *instructions) -> bytes:
    """A flow mod matching eth_type=0x894f,nsh_np=3 (rules built directly: the text parser refuses these forms)."""
    from tandem.rules.ir import Match, Rule

    return M.encode_flow_mod(xid, FlowMod("add", Rule(Match.of(eth_type=0x894F, nsh_np=3), tuple(instructions), priority=9)))


def _out(port: int) -> bytes:
    return _action(0, struct.pack("!IH6x", port, 0xFFFF))


def _goto(table: int) -> bytes:
    return struct.pack("!HHB3x", 1, 8, table)


GROUP1 = "group_id=1,type=all,bucket=output:1"  # exists on both sides before the rows are sent
LLDP = "priority=65535,dl_type=0x88cc,actions=CONTROLLER:128"  # likewise (its sNIC copies are one per in_port)

NX_WRITE_METADATA = _nx(22, struct.pack("!6xQQ", 5, 0xFF))


def _bucket(*actions: bytes) -> bytes:
    acts = b"".join(actions)
    return struct.pack("!HHII4x", 16 + len(acts), 0, 0xFFFFFFFF, 0xFFFFFFFF) + acts


def _multipath(n_links: int, ofs_nbits: int, dst: int, fields: int = 0, alg: int = 2) -> bytes:
    return _nx(10, struct.pack("!HHHHHIHHI", fields, 0, 0, alg, n_links - 1, 0, 0, ofs_nbits, dst))


def _bundle(members: tuple[int, ...], alg: int = 1, ofs_nbits: int = 0, dst: int = 0) -> bytes:
    return _nx(13 if dst else 12, struct.pack("!HHHIHHI4x", alg, 0, 0, 2, len(members), ofs_nbits, dst)
               + struct.pack(f"!{len(members)}H", *members))


def _check_pkt_larger(pkt_len: int, ofs: int, header: int) -> bytes:
    return _nx(49, struct.pack("!HHI", pkt_len, ofs, header))


SAMPLE = _nx(29, struct.pack("!HIII", 100, 1, 2, 3))
CLONE = lambda *nested: _nx(42, bytes(6) + b"".join(nested))  # noqa: E731  (NXAST_CLONE)
TRUNC = lambda port, max_len: _nx(39, struct.pack("!HI", port, max_len))  # noqa: E731  (NXAST_OUTPUT_TRUNC)

# name -> message builder (xid -> bytes); the rows OVS refuses too
AS_OVS = {
    "Nicira controller in write_actions": lambda x: _flow_mod(x, b"", _write(_nx(20, struct.pack("!HHBx", 0xFFFF, 3, 1)))),
    "NXT_SET_PACKET_IN_FORMAT to a format that does not exist": lambda x: P2.encode_set_packet_in_format(x, 7),
    "match tun_metadata0 while no TLV map names it": lambda x: _flow_mod(x, _oxm(40, struct.pack("!I", 5), cls=1)),
    "match recirc_id=5 (a controller's flows match 0 only)": lambda x: _flow_mod(x, _oxm(36, struct.pack("!I", 5), cls=1)),
    "match in_phy_port": lambda x: _flow_mod(x, IN_PORT1 + _oxm(1, struct.pack("!I", 1))),
    "match pbb_isid": lambda x: _flow_mod(x, ETH(0x88E7) + _oxm(37, b"\0\0\1")),
    "match ipv6_exthdr": lambda x: _flow_mod(x, ETH(0x86DD) + _oxm(39, b"\0\1")),
    "match nd_sll without icmpv6_type=135": lambda x: _flow_mod(
        x, ETH(0x86DD) + _oxm(10, b"\x3a") + _oxm(29, b"\x88") + _oxm(32, bytes(6))),
    "match nd_target with icmpv6_code 1": lambda x: _flow_mod(
        x, ETH(0x86DD) + _oxm(10, b"\x3a") + _oxm(29, b"\x87") + _oxm(30, b"\x01") + _oxm(31, bytes(16))),
    "set_field mpls_bos": lambda x: _flow_mod(x, ETH(0x8847), _apply(_set_field(_oxm(36, b"\1")))),
    "set_field in_port": lambda x: _flow_mod(x, b"", _apply(_set_field(_oxm(0, struct.pack("!I", 2))))),
    "set_field eth_type": lambda x: _flow_mod(x, b"", _apply(_set_field(ETH(0x0800)))),
    "set_field ip_proto": lambda x: _flow_mod(x, ETH(0x0800), _apply(_set_field(_oxm(10, b"\x11")))),
    "copy_ttl_out": lambda x: _flow_mod(x, b"", _apply(_action(11))),
    "copy_ttl_in": lambda x: _flow_mod(x, b"", _apply(_action(12))),
    "push_pbb": lambda x: _flow_mod(x, b"", _apply(_action(26, struct.pack("!H2x", 0x88E7)))),
    "pop_pbb": lambda x: _flow_mod(x, b"", _apply(_action(27))),
    "experimenter action (unknown id)": lambda x: _flow_mod(x, b"", _apply(_action(0xFFFF, struct.pack("!I", 0xABCDEF)))),
    "meter instruction, no such meter": lambda x: _flow_mod(x, b"", struct.pack("!HHI", 6, 8, 9) + _apply(OUT1)),
    "experimenter message (unknown id)": lambda x: W.header(4, x, struct.pack("!II", 0xABCDEF, 1)),
    "flow_mod add to table 255 (OFPTT_ALL)": lambda x: _flow_mod(x, b"", b"", table=255),
    "flow_mod add to table 254 (hidden)": lambda x: _flow_mod(x, b"", b"", table=254),
    "in_port 0x10000 (beyond 0xfeff, not reserved)": lambda x: _flow_mod(x, _oxm(0, struct.pack("!I", 0x10000))),
    "output:0xff00": lambda x: _flow_mod(x, b"", _apply(_out(0xFF00))),
    "output:ANY": lambda x: _flow_mod(x, b"", _apply(_out(0xFFFFFFFF))),
    "meter_mod modify, no such meter": lambda x: encode_meter_mod(x, MeterMod("modify", Meter(7, (MeterBand("drop", 5),)))),
    "QUEUE_GET_CONFIG of no port": lambda x: W.header(22, x, struct.pack("!I4x", 77)),
    "experimenter multipart (unknown id)": lambda x: W.header(W.OFPT_MULTIPART_REQUEST, x,
                                                             struct.pack("!HH4xII", 0xFFFF, 0, 0xABCDEF, 1)),
    "all group bucket with a watch_port": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=11,type=all,bucket=watch_port:2,output:1")),
    "indirect group bucket with a watch_group": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=12,type=indirect,bucket=watch_group:1,output:1")),
    "fast-failover bucket watching nothing": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=13,type=fast_failover,bucket=output:1")),
    # Open vSwitch's extension fields and actions, refused where OVS refuses them
    "match tcp_flags without tcp": lambda x: _flow_mod(x, ETH(0x0800) + _oxm(34, b"\0\2", cls=1)),
    "match tcp_dst in a non-first fragment": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(10, b"\x06") + _oxm(26, b"\3", cls=1) + _oxm(14, b"\0\x50")),
    "match reg0 and xreg0 (overlapping registers)": lambda x: _flow_mod(
        x, _oxm(0, struct.pack("!I", 5), cls=1) + _oxm(0, struct.pack("!Q", 6), cls=0x8001)),
    "match ip_frag with a value outside its mask": lambda x: _flow_mod(
        x, ETH(0x86DD) + _oxm(26, b"\3\1", cls=1, masked=True)),
    "match nw_ttl masked": lambda x: _flow_mod(x, ETH(0x0800) + _oxm(29, b"\5\x0f", cls=1, masked=True)),
    "match tcp_flags wider than 12 bits": lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x06") + _oxm(34, b"\x10\0", cls=1)),
    "match dp_hash": lambda x: _flow_mod(x, _oxm(35, struct.pack("!I", 5), cls=1)),
    "ct zone from 8 bits of reg0": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(1, zone_src=REG0, zone=7))),
    "ct exec setting reg0": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(1, nested=_set_field(_oxm(0, struct.pack("!I", 1), cls=1))))),
    "ct exec without commit": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(0, nested=_set_field(_oxm(107, struct.pack("!I", 1), cls=1))))),
    "match ct_nw_src without ct_state +trk-inv": lambda x: _flow_mod(x, ETH(0x0800) + _oxm(120, struct.pack("!I", 1), cls=1)),
    "push in write_actions": lambda x: _flow_mod(x, b"", _write(_nx(27, struct.pack("!HIH6x", 0, REG0, 32)))),
    "output_reg in write_actions": lambda x: _flow_mod(x, b"", _write(_nx(15, struct.pack("!HIH6x", 15, REG0, 0)))),
    "pop beyond the field's width": lambda x: _flow_mod(x, b"", _apply(_nx(28, struct.pack("!HIH6x", 30, REG0, 8)))),
    "move into a read-only field (eth_type)": lambda x: _flow_mod(
        x, b"", _apply(_nx(6, struct.pack("!HHHII", 16, 0, 0, REG0, 3 << 9 | 2)))),
    # the Nicira spellings of OpenFlow 1.3's own actions: OpenFlow 1.0 only (BAD_EXP_TYPE)
    **{f"Nicira {name} (OpenFlow 1.0's)": (lambda sub, m, body: lambda x: _flow_mod(x, m, _apply(_nx(sub, body), OUT1)))(
        sub, m, body) for name, sub, m, body in (
        ("push_mpls", 23, ETH(0x0800), struct.pack("!H4x", 0x8847)), ("pop_mpls", 24, ETH(0x8847), struct.pack("!H4x", 0x0800)),
        ("set_mpls_ttl", 25, ETH(0x8847), struct.pack("!B5x", 7)), ("dec_mpls_ttl", 26, ETH(0x8847), bytes(6)),
        ("set_mpls_label", 30, ETH(0x8847), struct.pack("!2xI", 77)), ("set_mpls_tc", 31, ETH(0x8847), struct.pack("!B5x", 5)),
        ("set_queue", 4, b"", struct.pack("!2xI", 9)), ("group", 40, b"", struct.pack("!I", 1)),
        ("dec_ttl", 18, ETH(0x0800), bytes(6)))},
    "Nicira write_metadata before another action": lambda x: _flow_mod(x, b"", _apply(NX_WRITE_METADATA, OUT1)),
    "Nicira write_metadata and write_actions": lambda x: _flow_mod(x, b"", _apply(NX_WRITE_METADATA) + _write(OUT1)),
    "Nicira write_metadata in write_actions": lambda x: _flow_mod(x, b"", _write(NX_WRITE_METADATA, OUT1)),
    "pop_queue in write_actions": lambda x: _flow_mod(x, b"", _write(_nx(5, bytes(6)), OUT1)),
    "sample in write_actions": lambda x: _flow_mod(x, b"", _write(SAMPLE, OUT1)),
    "sample with probability 0": lambda x: _flow_mod(x, b"", _apply(_nx(29, struct.pack("!HIII", 0, 1, 2, 3)), OUT1)),
    "check_pkt_larger in write_actions": lambda x: _flow_mod(x, b"", _write(_check_pkt_larger(100, 0, REG0), OUT1)),
    "check_pkt_larger into eth_type": lambda x: _flow_mod(x, b"", _apply(_check_pkt_larger(100, 0, 3 << 9 | 2))),
    "check_pkt_larger beyond its field": lambda x: _flow_mod(x, b"", _apply(_check_pkt_larger(100, 32, REG0))),
    "multipath in write_actions": lambda x: _flow_mod(x, b"", _write(_multipath(3, 15, REG0), OUT1)),
    "multipath of 300 links into 8 bits": lambda x: _flow_mod(x, b"", _apply(_multipath(300, 7, REG0))),
    "multipath with unknown fields": lambda x: _flow_mod(x, b"", _apply(_multipath(3, 15, REG0, fields=7))),
    "multipath into eth_type": lambda x: _flow_mod(x, b"", _apply(_multipath(3, 15, 3 << 9 | 2))),
    "bundle in write_actions": lambda x: _flow_mod(x, b"", _write(_bundle((1, 2)))),
    "bundle_load into 8 bits": lambda x: _flow_mod(x, b"", _apply(_bundle((1, 2), ofs_nbits=7, dst=REG0))),
    "bundle with unknown algorithm": lambda x: _flow_mod(x, b"", _apply(_bundle((1, 2), alg=2))),
    # conjunctive matching, refused where OVS refuses it (NXBAC_BAD_CONJUNCTION, an experimenter error)
    "conjunction beside an output": lambda x: _flow_mod(x, ETH(0x0800), _apply(_conj(7, 1, 2), OUT1)),
    "conjunction beside a goto_table": lambda x: _flow_mod(x, ETH(0x0800), _apply(_conj(7, 1, 2)) + _goto(2)),
    "conjunction of one clause": lambda x: _flow_mod(x, ETH(0x0800), _apply(_conj(7, 1, 1))),
    "conjunction clause beyond n": lambda x: _flow_mod(x, ETH(0x0800), _apply(_conj(7, 3, 2))),
    "conjunction in write_actions": lambda x: _flow_mod(x, ETH(0x0800), _write(_conj(7, 1, 2))),
    "match conj_id masked": lambda x: _flow_mod(x, _oxm(37, struct.pack("!II", 5, 0xFF), cls=1, masked=True)),
    "clone in write_actions": lambda x: _flow_mod(x, b"", _write(CLONE(OUT1))),
    "write_metadata inside clone": lambda x: _flow_mod(x, b"", _apply(CLONE(NX_WRITE_METADATA))),
    "output_trunc in write_actions": lambda x: _flow_mod(x, b"", _write(TRUNC(2, 100))),
    "output_trunc with max_len below 14": lambda x: _flow_mod(x, b"", _apply(TRUNC(2, 10))),
    # nat (issue 15): OVS's own refusals
    "ct(nat(src=10.0.0.1)) without commit": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(0, nested=_nx(36, struct.pack(
        "!2xHHI", 1, 1, 0x0A000001))))),
    "ct(commit,nat(src=10.0.0.1)) in an IPv6 flow": lambda x: _flow_mod(x, ETH(0x86DD), _apply(_ct(1, nested=_nx(
        36, struct.pack("!2xHHI", 1, 1, 0x0A000001))))),
    "ct(nat) without an IP match": lambda x: _flow_mod(x, b"", _apply(_ct(0, nested=_nx(36, struct.pack("!2xHH", 0, 0))))),
    "Nicira nat outside ct": lambda x: _flow_mod(x, ETH(0x0800), _apply(_nx(36, struct.pack("!2xHHI", 1, 1, 0x0A000001)))),
}

# rows OneSwitch refuses where OVS accepts: name -> (builder, OneSwitch's (type, code))
ONESWITCH_ONLY = {
    # Open vSwitch extensions OneSwitch does not run (docs/endpoint.md says why): OFPBAC_BAD_EXP_TYPE
    # (homeres: in the lifted row's place, which OVS's later lookups from in_port 1 meet)
    "Nicira resubmit with an in_port no port has": (
        lambda x: _flow_mod(x, IN_PORT1, _apply(_nx(14, struct.pack("!HB3x", 77, 3)))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "Nicira encap(ethernet) without encap(nsh) before it": (
        lambda x: _flow_mod(x, b"", _apply(_nx(46, struct.pack("!HI", 0, 0)), OUT1)), (2, 3)),
    # encap (issue 15): every form but encap(nsh(md_type=1)), NSH set_fields, encap(ethernet) (rules/encap.py)
    "Nicira encap(nsh) not closed by encap(ethernet)": (
        lambda x: _flow_mod(x, b"", _apply(_nx(46, struct.pack("!HI", 0, 0x1894F)), OUT1)), (2, 3)),
    "Nicira encap(nsh(md_type=2))": (lambda x: _flow_mod(x, b"", _apply(
        _nx(46, struct.pack("!HIHBBB3x", 0, 0x1894F, 4, 1, 5, 2)), _nx(46, struct.pack("!HI", 0, 0)), OUT1)), (2, 3)),
    "Nicira encap(mpls)": (lambda x: _flow_mod(x, b"", _apply(_nx(46, struct.pack("!HI", 0, 0x18847)), OUT1)), (2, 3)),
    "Nicira encap in write_actions": (lambda x: _flow_mod(x, b"", _write(
        _nx(46, struct.pack("!HI", 0, 0x1894F)), _nx(46, struct.pack("!HI", 0, 0)), OUT1)),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)),
    # decap (issue 15): every form but decap(),decap() on eth_type=0x894f,nsh_np=3 (rules/decap.py)
    "Nicira decap() alone": (lambda x: _nsh_rule(x, ApplyActions((Decap(), Output(1)))), (2, 3)),
    "Nicira decap(),decap() on a match that does not pin nsh_np=3": (
        lambda x: _flow_mod(x, _oxm(5, struct.pack("!H", 0x894F)), _apply(DECAP, DECAP, OUT1)), (2, 3)),
    "Nicira decap(),decap() in write_actions": (lambda x: _nsh_rule(x, WriteActions((Decap(), Decap(), Output(1)))),
                                                (2, 3)),  # (decap_set.py: no decap() ends the apply-actions)
    "output_trunc in a PACKET_OUT that holds output:TABLE": (lambda x: M.encode_packet_out(x, M.WirePacketOut(
        0xFFFFFFFF, 1, parse_actions("output(port=2,max_len=20),output:TABLE"), bytes(60))), (2, 0)),
    "output_trunc to another switch's port, in a later table with nothing committed before": (
        lambda x: _flow_mod(x, IN_PORT1, _apply(_action(17, struct.pack("!H2x", 0x8100)), TRUNC(2, 40)), table=1),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "Nicira output_reg whose port number the rule does not fix, of a field that is no register (eth_type)": (
        lambda x: _flow_mod(x, b"", _apply(_nx(15, struct.pack("!HIH6x", 15, 0x0000 << 16 | 3 << 9 | 2, 0)))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "Nicira output_reg whose port number the rule does not fix, after a load of part of that register": (
        lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
            "priority=6,actions=load:1->NXM_NX_REG0[0..3],output:NXM_NX_REG0[0..7]"))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    # connection tracking: what OneSwitch does not run (docs/endpoint.md)
    "move into in_port": (lambda x: _flow_mod(x, b"", _apply(_nx(6, struct.pack("!HHHII", 16, 0, 0, REG0, 0 << 9 | 2)))),
                          (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT)),
    "check_pkt_larger into in_port": (lambda x: _flow_mod(x, b"", _apply(_check_pkt_larger(100, 0, 0 << 9 | 2))),
                                      (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT)),
    "check_pkt_larger into pkt_mark": (
        lambda x: _flow_mod(x, b"", _apply(_check_pkt_larger(100, 31, 0x0001 << 16 | 33 << 9 | 4))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT)),
    "push of in_port": (
        lambda x: _flow_mod(x, IN_PORT1, _apply(_nx(27, struct.pack("!HIH6x", 0, 0 << 9 | 2, 16)))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "PACKET_OUT writing pkt_mark before output:TABLE": (lambda x: M.encode_packet_out(x, M.WirePacketOut(
        W.OFP_NO_BUFFER, 1, (SetField("pkt_mark", 5), Output(0xFFFFFFF9)), bytes(60))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    # actset_output=4 beside a written output:2 (both snic0's: on the host both are PCIe port 100)
    "match actset_output (ONF) of a port sharing a PCIe port with one the rule writes": (lambda x: _flow_mod(
        x, ACTSET(4), _write(_out(2)), table=1), (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_UNKNOWN)),
    # recirc_id: only 0 has one meaning on every switch (OVS numbers recirculations at run time)
    "move from recirc_id": (lambda x: _flow_mod(x, b"", _apply(_nx(6, struct.pack("!HHHII", 32, 0, 0, 1 << 16 | 36 << 9 | 4,
                                                                                     REG0)))),
                            (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT)),
    "match packet_type=(1,0x800) (OpenFlow 1.5's OXM)": (lambda x: _flow_mod(x, _oxm(44, struct.pack("!I", 0x10800))),
                                                         (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_VALUE)),
    "Nicira resubmit inside clone in a PACKET_OUT": (lambda x: W.header(
        13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 32) + CLONE(_nx(14, struct.pack("!HB3x", 0xFFF8, 3)))
        + bytes(60)), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    # encap (encaset): the split pair with goto_table; a written encap(ethernet) on an Ethernet packet (rules/encap_set.py)
    "Nicira encap(nsh) closed by a written encap(ethernet), with goto_table": (lambda x: _flow_mod(x, b"", _apply(
        _nx(46, struct.pack("!HI", 0, 0x1894F))) + _write(_nx(46, struct.pack("!HI", 0, 0)), OUT1)
        + struct.pack("!HHB3x", 1, 8, 1)), (2, 3)),
    "Nicira encap(ethernet) written without encap(nsh) ending the apply-actions": (lambda x: _flow_mod(x, b"", _write(
        _nx(46, struct.pack("!HI", 0, 0)), OUT1)), (2, 3)),
    "Nicira encap(nsh), encap(ethernet) after check_pkt_larger in the same list": (lambda x: _flow_mod(x, b"", _apply(
        _check_pkt_larger(100, 0, REG0), _nx(46, struct.pack("!HI", 0, 0x1894F)), _nx(46, struct.pack("!HI", 0, 0)),
        OUT1)), (2, 3)),
    "Nicira encap pattern in a PACKET_OUT before an output to CONTROLLER": (lambda x: M.encode_packet_out(
        x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (EncapNsh(1), EncapEthernet(), Output(0xFFFFFFFD)), bytes(60))), (2, 0)),
}

ONESWITCH_ONLY.update({
    "Nicira bundle(hrw) with a member on another switch": (lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=9,in_port=1,actions=bundle(eth_src,0,hrw,ofport,members:1,2)"))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "Nicira bundle_load of a port whose number differs on its switch": (lambda x: M.encode_flow_mod(x, FlowMod(
        "add", parse_rule("priority=9,in_port=2,actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:2)"))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "Nicira bundle(hrw) with a reserved-port member whose output OneSwitch cannot choose (FLOOD)": (
        lambda x: _flow_mod(x, b"", _apply(_bundle((1, 0xFFFB)))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT)),
    "Nicira bundle(active_backup) with a TABLE member": (
        lambda x: _flow_mod(x, b"", _apply(_bundle((1, 0xFFF9), alg=0))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT)),
    "Nicira learn into table 0": (lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=9,actions=learn(table=0,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    "Nicira learn copying in_port into a register": (lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=9,actions=learn(table=1,load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15])"))),
        (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
})
# tun_metadata: the TLV map is kept and relayed (NXT_TLV_TABLE_MOD taken by both: test_tlv_table_vs_ovs.py has
# its errors); one xid for a map and the flow on it. A match on bits past 127 of an option only the emulator backend
# refuses (test_tun_metadata_long.py)
AS_OVS.update({
    "delete_field of tun_metadata1 while no TLV map names it": lambda x: _flow_mod(
        x, b"", _apply(_nx(50, struct.pack("!I", 1 << 16 | 41 << 9 | 4) + bytes(10)), OUT1)),
    "delete_field in write_actions": lambda x: encode_tlv_table_mod(x, NXTTMC_ADD, [TlvMap(0x0100, 57, 4, 57)]) + _flow_mod(
        x, b"", _write(_nx(50, struct.pack("!I", 1 << 16 | 97 << 9 | 4) + bytes(10)), OUT1)),
    "move beyond tun_metadata59's 4 mapped bytes": lambda x: encode_tlv_table_mod(
        x, NXTTMC_ADD, [TlvMap(0x0100, 59, 4, 59)]) + M.encode_flow_mod(x, FlowMod("add", parse_rule(
            "priority=9,actions=move:NXM_NX_REG0[]->NXM_NX_TUN_METADATA59[16..47],output:1"))),
})


def _nsh_oxm(num: int, value: bytes) -> bytes:
    """An NSH field's experimenter OXM (NXOXM_NSH_*, experimenter 0x005ad650)."""
    return struct.pack("!II", 0xFFFF << 16 | num << 9 | 4 + len(value), 0x005AD650) + value


# OVS and OneSwitch both accept these (meter 1 exists on both; port 2 is on snic0, port 1 on the host)
ACCEPTED_BY_BOTH = [
    lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule("priority=3,ip,actions=meter:1,output:3"))),
    lambda x: M.encode_group_mod(x, "add", parse_group(
        "group_id=5,type=fast_failover,bucket=watch_port:2,output:2,bucket=watch_port:77,output:3,"
        "bucket=watch_group:99,output:4,bucket=watch_port:3,watch_group:5,output:1")),
    lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule("priority=4,in_port=1,actions=group:5"))),
]

# rows both accept (OneSwitch refused them once): name -> builder
ACCEPTED = {
    "Nicira controller (id and reason)": lambda x: _flow_mod(x, b"", _apply(_nx(20, struct.pack("!HHBx", 0xFFFF, 3, 0)))),
    "Nicira controller2 with userdata": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=7,actions=controller(reason=group,max_len=9,id=2,userdata=01.02.03),output:1"))),
    "NXT_SET_PACKET_IN_FORMAT to NXT_PACKET_IN2, NXT_SET_CONTROLLER_ID": lambda x: (
        P2.encode_set_packet_in_format(x, 2) + P2.encode_set_controller_id(x, 0)),
    "NXT_SET_PACKET_IN_FORMAT to the old NXT_PACKET_IN": lambda x: P2.encode_set_packet_in_format(x, 1),
    "match tun_src, tun_ipv6_dst, tun_gbp_id, tun_gbp_flags; set_field tun_dst": lambda x: _flow_mod(
        x, _oxm(31, struct.pack("!I", 5), cls=1) + _oxm(110, (2).to_bytes(16, "big"), cls=1) + _oxm(38, b"\0\7", cls=1)
        + _oxm(39, b"\x05", cls=1),
        _apply(_set_field(_oxm(32, struct.pack("!I", 9), cls=1)), OUT1)),
    "match recirc_id=0": lambda x: _flow_mod(x, _oxm(36, struct.pack("!I", 0), cls=1), _apply(OUT1)),
    "match packet_type=(0,0) (Ethernet)": lambda x: _flow_mod(x, _oxm(44, struct.pack("!I", 0)), _apply(OUT1)),
    "Nicira encap(nsh(md_type=1)), set_field nsh_spi, encap(ethernet)": lambda x: M.encode_flow_mod(x, FlowMod(
        "add", parse_rule("priority=9,actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,encap(ethernet),output:2"))),
    "Nicira decap(),decap() on eth_type=0x894f,nsh_np=3 (the SFC egress pair)": lambda x: M.encode_flow_mod(x, FlowMod(
        "add", parse_rule("priority=9,eth_type=0x894f,nsh_np=3,actions=set_field:5->reg0,decap(),decap(),output:2"))),
    "match NXM_OF_VLAN_TCI 0x2000/0xe000 (priority bits, no tag bit)": lambda x: _flow_mod(
        x, _oxm(4, struct.pack("!HH", 0x2000, 0xE000), cls=0, masked=True), _apply(OUT1)),
    "match NXM_OF_VLAN_TCI 0x2000/0x2000 (a priority bit, no tag bit)": lambda x: _flow_mod(
        x, _oxm(4, struct.pack("!HH", 0x2000, 0x2000), cls=0, masked=True), _apply(OUT1)),
    # hash selection (the refusal table listed multipath, bundle and bundle_load); members on the host, where
    # every port's pipeline runs once a rule above has homed them there (ct)
    "Nicira multipath, each algorithm": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=7,actions=multipath(eth_src,0,modulo_n,3,0,NXM_NX_REG0[0..1]),multipath(symmetric_l4,5,hash_threshold,"
        "9,0,NXM_NX_REG1[]),multipath(symmetric_l3l4,1,hrw,65,0,NXM_NX_REG2[0..15]),"
        "multipath(symmetric_l3,7,iter_hash,1000,2048,NXM_NX_PKT_MARK[0..15]),output:1"))),
    "Nicira bundle(active_backup) over ports of three switches": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=7,actions=bundle(symmetric_l3l4+udp,3,active_backup,ofport,members:2,1,3,77)"))),
    "Nicira bundle(hrw) over ports of the rule's switch": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=7,in_port=1,actions=bundle(nw_src,0,hrw,ofport,members:1),output:2"))),
    "Nicira bundle_load over the host's port 1 (number 1 there too)": lambda x: M.encode_flow_mod(x, FlowMod(
        "add", parse_rule("priority=7,in_port=1,actions=bundle_load(nw_dst,0,hrw,ofport,NXM_NX_REG0[],members:1),"
                          "output:2"))),
    "Nicira bundle(active_backup) with FLOOD and ALL members": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=7,in_port=3,actions=bundle(eth_src,0,active_backup,ofport,members:77,FLOOD,ALL,2)"))),
    "move from in_port in a rule that does not match in_port": lambda x: _flow_mod(
        x, b"", _apply(_nx(6, struct.pack("!HHHII", 16, 0, 0, 0 << 9 | 2, REG0))), table=1),
    "Nicira output_reg after a load of the register": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=6,actions=load:2->NXM_NX_REG0[0..15],output:NXM_NX_REG0[0..15]"))),
    "Nicira output_reg of a register the match fixes": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "table=1,priority=6,reg3=0x3,actions=output:NXM_NX_REG3[0..15]"))),
    "Nicira output_reg of reg0[0..15], known only at run time (it may hold NORMAL's number: homed to the host)":
        lambda x: _flow_mod(x, b"", _apply(_nx(15, struct.pack("!HIH6x", 15, REG0, 0)))),
    "Nicira output_reg whose port number only the pipeline knows (reg0[0..7])": lambda x: _flow_mod(
        x, b"", _apply(_nx(15, struct.pack("!HIH6x", 7, REG0, 0)), OUT1), table=1),
    "Nicira output_reg of a register view's bits in two registers": lambda x: M.encode_flow_mod(x, FlowMod(
        "add", parse_rule("table=1,priority=7,actions=output:NXM_NX_XXREG0[60..71]"))),
    "output:TABLE in a flow's apply-actions": lambda x: _flow_mod(x, b"", _apply(_out(0xFFFFFFF9)), table=1),
    "Nicira resubmit(,0)": lambda x: _flow_mod(x, b"", _apply(_nx(14, struct.pack("!HB3x", 0xFFF8, 0))), table=2),
    "Nicira resubmit(,3)": lambda x: _flow_mod(x, b"", _apply(_nx(14, struct.pack("!HB3x", 0xFFF8, 3)))),
    "Nicira resubmit(,3) in a group bucket": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=16,type=all,bucket=set_field:02:00:00:00:00:09->eth_dst,resubmit(,3)")),
    "Nicira resubmit(,3) in write_actions": lambda x: _flow_mod(x, b"", _write(_nx(14, struct.pack("!HB3x", 0xFFF8, 3)))),
    "Nicira resubmit(1,3) in a rule matching in_port=1": lambda x: _flow_mod(
        x, IN_PORT1, _apply(_nx(14, struct.pack("!HB3x", 1, 3)), OUT1)),
    "output:NORMAL": lambda x: _flow_mod(x, b"", _apply(_out(0xFFFFFFFA))),
    "PACKET_OUT output:NORMAL (every port's pipeline on the host: the rule above)": lambda x: M.encode_packet_out(
        x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (SetField("eth_src", 0x020000000001), Output(0xFFFFFFFA)), bytes(60))),
    "Nicira learn (MAC learning into table 1)": lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=8,actions=learn(table=1,idle_timeout=60,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),"
        "goto_table:1"))),
    "in_port 77 (no such port)": lambda x: _flow_mod(x, _oxm(0, struct.pack("!I", 77)), _apply(OUT1)),
    "in_port 0xfeff": lambda x: _flow_mod(x, _oxm(0, struct.pack("!I", 0xFEFF)), _apply(OUT1)),
    "in_port LOCAL": lambda x: _flow_mod(x, _oxm(0, struct.pack("!I", 0xFFFFFFFE)), _apply(OUT1)),
    "in_port 0xffffff00": lambda x: _flow_mod(x, _oxm(0, struct.pack("!I", 0xFFFFFF00)), _apply(OUT1)),
    "output:77 (no such port)": lambda x: _flow_mod(x, IN_PORT1, _apply(_out(77), _out(3))),
    "output:0": lambda x: _flow_mod(x, IN_PORT1, _apply(_out(0))),
    "output:LOCAL": lambda x: _flow_mod(x, IN_PORT1, _apply(_out(0xFFFFFFFE))),
    "table 252": lambda x: _flow_mod(x, b"", b"", table=252),
    "table 253": lambda x: _flow_mod(x, b"", _apply(OUT1), table=253),
    "goto_table:253": lambda x: _flow_mod(x, b"", _goto(253)),
    "goto_table:254 (hidden: drops)": lambda x: _flow_mod(x, b"", _goto(254), table=253),
    "write_actions FLOOD": lambda x: _flow_mod(x, IN_PORT1, _write(_out(0xFFFFFFFB)), table=3),
    "write_actions IN_PORT, ALL, LOCAL": lambda x: _flow_mod(x, b"", _write(_out(0xFFFFFFFC)), table=4),
    "group written, then a later table writes an output": lambda x: _flow_mod(
        x, b"", _write(_action(22, struct.pack("!I", 1))) + _goto(2), table=1),
    "... the later table's written output": lambda x: _flow_mod(x, b"", _write(_out(3)), table=2),
    # Open vSwitch extensions (the refusal table listed them)
    "match pkt_mark and reg0 (NXM)": lambda x: _flow_mod(x, _oxm(33, struct.pack("!I", 5), cls=1) + _oxm(0, struct.pack("!I", 5), cls=1),
                                                         _apply(OUT1)),
    "match xreg1 (OXM_OF_PKT_REG1) and tcp_flags (ONF)": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(10, b"\x06") + _oxm(1, struct.pack("!Q", 7), cls=0x8001)
        + struct.pack("!II", 0xFFFF << 16 | 42 << 9 | 6, 0x4F4E4600) + b"\0\x12", _apply(OUT1)),
    "match ip_frag and nw_ttl, set nw_ttl": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(26, b"\1\3", cls=1, masked=True) + _oxm(29, b"\x40", cls=1),
        _apply(_set_field(_oxm(29, b"\5", cls=1)), OUT1)),
    # connection tracking (the refusal table listed it): every sNIC port is extended to the host
    "ct(commit,zone=5,table=1,exec(set_field:3->ct_mark)), ct_clear": lambda x: _flow_mod(x, ETH(0x0800), _apply(
        _ct(1, zone=5, table=1, nested=_set_field(_oxm(107, struct.pack("!I", 3), cls=1))), _nx(43, bytes(6)), OUT1)),
    "match ct_tp_dst without ct_nw_proto (matched; FLOW_STATS leave it out)": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(105, struct.pack("!II", 0x20, 0x30), cls=1, masked=True) + _oxm(125, b"\0\x50", cls=1),
        _apply(OUT1)),
    "ct(commit) and ct_clear in write_actions": lambda x: _flow_mod(x, ETH(0x0800), _write(_ct(1), _nx(43, bytes(6))),
                                                                   table=1),
    "ct(table=1) in table 2 (recirculating back)": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(0, table=1)), table=2),
    "ct(zone=NXM_NX_REG0[0..15])": lambda x: _flow_mod(x, ETH(0x86DD), _apply(_ct(0, zone_src=REG0, zone=15, table=2))),
    "match ct_state, ct_zone, ct_mark, ct_label, ct_nw_src, ct_nw_proto, ct_tp_dst": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(105, struct.pack("!II", 0x22, 0x32), cls=1, masked=True) + _oxm(106, b"\0\5", cls=1)
        + _oxm(107, struct.pack("!II", 1, 0xF), cls=1, masked=True) + _oxm(108, (9).to_bytes(16, "big"), cls=1)
        + _oxm(120, struct.pack("!I", 0x0A000001), cls=1) + _oxm(119, b"\6", cls=1) + _oxm(125, b"\0\x50", cls=1),
        _apply(OUT1), table=1),
    "set_field pkt_mark, load, move, push, pop, note, exit": lambda x: _flow_mod(x, IN_PORT1, _apply(
        _set_field(_oxm(33, struct.pack("!I", 5), cls=1)), _nx(7, struct.pack("!HIQ", 7, REG0, 9)),
        _nx(6, struct.pack("!HHHII", 16, 0, 0, 0 << 9 | 2, REG0)), _nx(27, struct.pack("!HIH6x", 0, REG0, 32)),
        _nx(28, struct.pack("!HIH6x", 0, 0x0001 << 16 | 33 << 9 | 4, 32)), _nx(8, b"\1\2"), OUT1, _nx(17, bytes(6)))),
    "set_tunnel, set_tunnel64, pop_queue": lambda x: _flow_mod(x, IN_PORT1, _apply(
        _nx(2, struct.pack("!2xI", 0x55)), _nx(9, struct.pack("!6xQ", 1 << 40)), _nx(5, bytes(6)), OUT1)),
    "sample, sample2 (sampling_port), sample3 (ingress)": lambda x: _flow_mod(x, IN_PORT1, _apply(
        SAMPLE, _nx(38, struct.pack("!HIIIH", 100, 1, 2, 3, 2)), _nx(41, struct.pack("!HIIIHB", 9, 1, 2, 3, 0xFFFF, 1)), OUT1)),
    "dec_ttl(ids), dec_ttl() without ids, dec_ttl(ids) written": lambda x: _flow_mod(x, ETH(0x0800), _apply(
        _nx(21, struct.pack("!H4xHH", 2, 1, 2)), _nx(21, struct.pack("!H4x", 0)), OUT1) + _write(
        _nx(21, struct.pack("!H4xH", 1, 0)), _out(3))),
    "check_pkt_larger into register bits": lambda x: _flow_mod(x, b"", _apply(
        _check_pkt_larger(100, 3, REG0), _check_pkt_larger(0, 31, 0x0001 << 16 | 5 << 9 | 4), OUT1)),
    "Nicira write_metadata last in apply_actions, then goto": lambda x: _flow_mod(
        x, b"", _apply(OUT1, NX_WRITE_METADATA) + _goto(5)),
    # conjunctive matching (the refusal table listed conjunction and conj_id)
    "conjunction actions (two ids, a note)": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(12, struct.pack("!I", 0x0A000001)), _apply(_conj(7, 1, 2), _conj(8, 2, 3), _nx(8, b"\1\2"))),
    "match conj_id": lambda x: _flow_mod(x, _oxm(37, struct.pack("!I", 7), cls=1), _apply(OUT1)),
    "move from conj_id": lambda x: _flow_mod(x, b"", _apply(_nx(6, struct.pack("!HHHII", 32, 0, 0, 1 << 16 | 37 << 9 | 4,
                                                                                REG0)), OUT1)),
    # Open vSwitch's full 802.1Q TCI match (the refusal table listed a partly masked priority)
    "match NXM_OF_VLAN_TCI with a partly masked priority": lambda x: _flow_mod(
        x, _oxm(4, struct.pack("!HH", 0x3005, 0x3FFF), cls=0, masked=True), _apply(OUT1)),
    "match NXM_OF_VLAN_TCI, priority bits only, tag present": lambda x: _flow_mod(
        x, ETH(0x0800) + _oxm(4, struct.pack("!HH", 0x5000, 0xD000), cls=0, masked=True), _apply(OUT1)),
    "Nicira clone": lambda x: _flow_mod(x, b"", _apply(CLONE(_action(17, struct.pack("!H2x", 0x8100)), OUT1), _out(2))),
    "Nicira output_trunc": lambda x: _flow_mod(x, b"", _apply(_action(17, struct.pack("!H2x", 0x8100)), TRUNC(2, 40), TRUNC(1, 20))),
    "Nicira output_trunc after an output, in a later table": lambda x: _flow_mod(
        x, IN_PORT1, _apply(_out(3), _action(17, struct.pack("!H2x", 0x8100)), TRUNC(2, 40)), table=1),
    # nat (issue 15: run by dp-core's tracker, ct_nat.rs)
    "ct(commit,nat(src=10.0.0.1))": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(1, nested=_nx(36, struct.pack(
        "!2xHHI", 1, 1, 0x0A000001))))),
    "ct(commit,nat(dst=10.0.0.1-10.0.0.9:80-90,random))": lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(1, nested=_nx(
        36, struct.pack("!2xHHIIHH", 2 | 16, 1 | 2 | 16 | 32, 0x0A000001, 0x0A000009, 80, 90))))),
    # in a group bucket (Open vSwitch runs it as an action set, where these do nothing)
    "clone in a group bucket": lambda x: W.header(15, x, struct.pack("!HBxI", 0, 0, 8) + _bucket(CLONE(OUT1))),
    "check_pkt_larger in a group bucket": lambda x: W.header(
        15, x, struct.pack("!HBxI", 0, 0, 7) + _bucket(_check_pkt_larger(100, 0, REG0), OUT1)),
    "output_trunc in a group bucket": lambda x: W.header(15, x, struct.pack("!HBxI", 0, 0, 9) + _bucket(TRUNC(2, 100))),
    # a move reading in_port inside clone (pinned per copy, as in the rule's own list)
    "move from in_port inside clone": lambda x: _flow_mod(
        x, b"", _apply(CLONE(_nx(6, struct.pack("!HHHII", 16, 0, 0, 0 << 9 | 2, REG0)), OUT1), _out(2)), table=9),
    # check_pkt_larger into a register in a PACKET_OUT (the endpoint loads the bit: endpoint_bundle.py)
    "check_pkt_larger in a PACKET_OUT": lambda x: W.header(13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 40)
                                                           + _check_pkt_larger(100, 0, REG0) + OUT1 + bytes(60)),
    # bundle in a PACKET_OUT (the endpoint chooses the member: oneswitch/endpoint_bundle.py)
    "Nicira bundle in a PACKET_OUT": lambda x: W.header(13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 40)
                                                        + _bundle((1, 2), alg=0) + bytes(60)),
    # clone in a PACKET_OUT (the endpoint walks into it: oneswitch/endpoint_clone.py)
    "clone in a PACKET_OUT": lambda x: W.header(13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 64)
                                                + CLONE(OUT1, _out(2)) + OUT1 + bytes(60)),
    # tun_flags (the refusal table listed it): match +oam (a mask with bits beyond the one flag), set_field oam
    "match tun_flags=+oam (NXM_NX_TUN_FLAGS_W 1/0xffff), set_field tun_flags": lambda x: _flow_mod(
        x, _oxm(104, struct.pack("!HH", 1, 0xFFFF), cls=1, masked=True),
        _apply(_set_field(_oxm(104, struct.pack("!H", 0), cls=1)), OUT1), table=1),
    # packet-ins as Open vSwitch 3.1 sends them (pktin): a controller(...) in a PACKET_OUT
    "Nicira controller in a PACKET_OUT": lambda x: M.encode_packet_out(x, M.WirePacketOut(
        0xFFFFFFFF, 0xFFFFFFFD, (Controller(controller_id=3),), bytes(14) + bytes(46))),
    # OVERLAP (pktin): one physical entry stands for both rules (overlap_share.py)
    "equal priority, copies would coincide (LLDP rule above, and one naming in_port 2)": lambda x: M.encode_flow_mod(
        x, FlowMod("add", parse_rule("priority=65535,in_port=2,dl_type=0x88cc,actions=output:1"))),
    # encap (encaset): encap(nsh) ending the apply-actions, closed by encap(ethernet) in write_actions (rules/encap_set.py)
    "Nicira encap(nsh) in apply-actions closed by a written encap(ethernet)": lambda x: M.encode_flow_mod(x, FlowMod(
        "add", parse_rule("priority=9,actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,"
                          "write_actions(encap(ethernet),set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2)"))),
    "Nicira encap(nsh(md_type=1)), set_field nsh_spi, encap(ethernet) in a PACKET_OUT": lambda x: M.encode_packet_out(
        x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (EncapNsh(1), SetField("nsh_spi", 5), EncapEthernet(), Output(2)),
                           bytes(60))),
}
# nsh: the NSH fields matched (MD type 1 contexts beside nsh_mdtype=1) and written by set_field
ACCEPTED["match the NSH fields; set_field nsh_flags, nsh_si, nsh_c2 (masked)"] = lambda x: M.encode_flow_mod(
    x, FlowMod("add", parse_rule("priority=9,eth_type=0x894f,nsh_flags=1,nsh_ttl=63,nsh_mdtype=1,nsh_np=3,nsh_spi=0x10,"
                                 "nsh_si=255,nsh_c1=0x11/0xff,actions=set_field:6->nsh_flags,set_field:3->nsh_si,"
                                 "set_field:0x1/0xf->nsh_c2,output:1")))
ACCEPTED["move into an NSH field (NXOXM_NSH_SI), out of one, push and pop of them"] = lambda x: _flow_mod(
    x, ETH(0x894F), _apply(_nx(6, struct.pack("!HHHI", 8, 0, 0, REG0) + _nsh_oxm(5, b"\0")[:8]),
                           _nx(6, struct.pack("!HHH", 32, 0, 0) + _nsh_oxm(6, bytes(4))[:8] + struct.pack("!I", REG0)),
                           _nx(27, struct.pack("!H", 0) + _nsh_oxm(4, bytes(4))[:8] + struct.pack("!H2x", 24)),
                           _nx(28, struct.pack("!H", 8) + _nsh_oxm(7, bytes(4))[:8] + struct.pack("!H2x", 24)), OUT1))
# nshmore: nsh_ttl (Open vSwitch's 8-bit subfield) moved into and out of, pushed and popped
ACCEPTED["move into and out of NXOXM_NSH_TTL[], push and pop of it"] = lambda x: _flow_mod(
    x, ETH(0x894F), _apply(_nx(6, struct.pack("!HHHI", 8, 0, 0, REG0) + _nsh_oxm(10, b"\0")[:8]),
                           _nx(6, struct.pack("!HHH", 8, 0, 0) + _nsh_oxm(10, b"\0")[:8] + struct.pack("!I", REG0)),
                           _nx(27, struct.pack("!H", 0) + _nsh_oxm(10, b"\0")[:8] + struct.pack("!H2x", 8)),
                           _nx(28, struct.pack("!H", 6) + _nsh_oxm(10, b"\0")[:8] + struct.pack("!H2x", 2)), OUT1))
# nshload: loads into nsh_ttl, Open vSwitch's 8-bit subfield (NXAST_REG_LOAD2): into bits 0..5 together, the
# whole subfield above 63 (no mask), bits 6..7 (nsh_ttl_load.py); the set_field above 63 both refuse
ACCEPTED["load 0x1/0x3f into nsh_ttl (NXAST_REG_LOAD2)"] = lambda x: _flow_mod(x, ETH(0x894F), _apply(_nx(
    33, struct.pack("!IIBB", 0xFFFF0000 | 10 << 9 | 1 << 8 | 6, 0x005AD650, 1, 0x3F)), OUT1))
ACCEPTED["load 0xc5 into NXOXM_NSH_TTL[] (NXAST_REG_LOAD2)"] = lambda x: _flow_mod(x, ETH(0x894F), _apply(_nx(
    33, struct.pack("!IIB", 0xFFFF0000 | 10 << 9 | 5, 0x005AD650, 0xC5)), OUT1))
ACCEPTED["load 0x2 into NXOXM_NSH_TTL[6..7] (NXAST_REG_LOAD2)"] = lambda x: _flow_mod(x, ETH(0x894F), _apply(_nx(
    33, struct.pack("!IIBB", 0xFFFF0000 | 10 << 9 | 1 << 8 | 6, 0x005AD650, 0x80, 0xC0)), OUT1))
AS_OVS["set_field 0xc5 into nsh_ttl"] = lambda x: _flow_mod(x, ETH(0x894F), _apply(
    _set_field(_nsh_oxm(10, b"\xc5")), OUT1))
# nshload: output_reg of NSH fields (NXAST_OUTPUT_REG2, 8-byte header): the number fixed by the rule (a set_field
# before it, the match), taken by both; one only known at run time, OneSwitch's own refusal (not a register)
ACCEPTED["output_reg of NSH fields the rule fixes (NXAST_OUTPUT_REG2)"] = lambda x: M.encode_flow_mod(x, FlowMod(
    "add", parse_rule("priority=9,eth_type=0x894f,nsh_si=2,actions=output:NXOXM_NSH_SI[],set_field:3->nsh_c1,"
                      "output:NXOXM_NSH_C1[0..15]")))
ONESWITCH_ONLY["output_reg of an NSH field the rule does not fix"] = (lambda x: M.encode_flow_mod(x, FlowMod(
    "add", parse_rule("priority=9,eth_type=0x894f,actions=output:NXOXM_NSH_C1[0..15]"))), (2, 5))
ONESWITCH_ONLY["output_reg of an NSH field in a PACKET_OUT"] = (lambda x: M.encode_packet_out(x, M.WirePacketOut(
    W.OFP_NO_BUFFER, 1, parse_actions("set_field:3->nsh_si,output:NXOXM_NSH_SI[]"), NSH_FRAME)),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE))  # (potrunc3's row: a PACKET_OUT reads reg0..reg15 only)
# nshmore: an NSH field where Open vSwitch's format has a 4-byte field header (multipath, bundle_load, a ct
# zone, a learn spec): a header of the experimenter class without its id, BAD_SET_TYPE from both
_NSH_C1_4 = 0xFFFF << 16 | 6 << 9 | 4  # (NXOXM_NSH_C1's first 4 bytes)
_NSH_MD1 = ETH(0x894F) + _nsh_oxm(2, b"\1")
AS_OVS["Nicira multipath into an NSH field"] = lambda x: _flow_mod(x, _NSH_MD1, _apply(_multipath(3, 15, _NSH_C1_4), OUT1))
AS_OVS["Nicira bundle_load into an NSH field"] = lambda x: _flow_mod(x, _NSH_MD1, _apply(_bundle((1,), ofs_nbits=15,
                                                                                             dst=_NSH_C1_4)))
AS_OVS["ct with its zone from an NSH field"] = lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(1, zone=15, zone_src=_NSH_C1_4)))
AS_OVS["Nicira learn loading an NSH field into reg0"] = lambda x: _flow_mod(x, _NSH_MD1, _apply(_nx(16, struct.pack(
    "!HHHQHBxHH", 0, 0, 0x8000, 0, 0, 1, 0, 0) + struct.pack("!HIHIH", 0x0820, _NSH_C1_4, 0, REG0, 0) + bytes(6))))
ACCEPTED["Nicira dec_nsh_ttl after an NSH match"] = lambda x: _flow_mod(x, ETH(0x894F), _apply(_nx(48, bytes(6)), OUT1))
# nshctx: a context matched without nsh_mdtype=1 (OneSwitch refused it once; rules/nsh.py)
ACCEPTED["match nsh_c1 without nsh_mdtype=1"] = lambda x: _flow_mod(x, ETH(0x894F) + _nsh_oxm(6, struct.pack("!I", 1)))
# lookups in table 0 written into the action set and in group buckets (oneswitch/table0_lookup.py), sent
# before the rows above: no rule may use pkt_mark while they are there (rows above do), so the groups go
# again after them, and the next row's flow (table 0, the same match and priority) replaces the last one
ACCEPTED = {
    "output:TABLE in write_actions": lambda x: _flow_mod(x, b"", _write(_out(0xFFFFFFF9))),
    "Nicira resubmit into table 0 written into the action set": lambda x: _flow_mod(
        x, b"", _write(_nx(14, struct.pack("!HB3x", 0xFFF8, 0)))),
    "output:TABLE in a group bucket": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=17,type=all,bucket=set_field:5->reg0,output:TABLE")),
    "Nicira resubmit into table 0 in a group bucket": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=14,type=all,bucket=resubmit(,0)")),
    "(group 17 deleted)": lambda x: M.encode_group_mod(x, "delete", Group(17, "all")),
    "(group 14 deleted)": lambda x: M.encode_group_mod(x, "delete", Group(14, "all")),
    **ACCEPTED,
}
# ctbucket: ct(table=0) written into the action set (a lookup in table 0 too, translated as a written
# resubmit(,0) is): sent first, and its flow replaced by one without ct before the rows that use pkt_mark
ACCEPTED = {
    "ct(table=0) written into the action set": lambda x: _flow_mod(x, ETH(0x0800), _write(_ct(0, table=0)), table=1),
    "(the written ct(table=0) flow replaced)": lambda x: _flow_mod(x, ETH(0x0800), _apply(OUT1), table=1),
    **ACCEPTED,
}

# fin_timeout (issue 15): both take it in a tcp rule; both refuse it where the match does not pin tcp
ACCEPTED["Nicira fin_timeout (in a tcp rule)"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x06"), _apply(
    _nx(19, struct.pack("!HH2x", 5, 10)), OUT1))
ACCEPTED["Nicira learn with fin_idle_timeout and fin_hard_timeout"] = lambda x: M.encode_flow_mod(x, FlowMod(
    "add", parse_rule("priority=8,actions=learn(table=1,fin_idle_timeout=5,fin_hard_timeout=9,NXM_OF_ETH_DST[]="
                      "NXM_OF_ETH_SRC[]),output:1")))
AS_OVS["Nicira fin_timeout in an ip rule that is not tcp"] = lambda x: _flow_mod(x, ETH(0x0800), _apply(
    _nx(19, struct.pack("!HH2x", 5, 10)), OUT1))
AS_OVS["Nicira fin_timeout after push_mpls in a tcp rule"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x06"), _apply(
    _action(19, struct.pack("!H2x", 0x8847)), _nx(19, struct.pack("!HH2x", 5, 10)), OUT1))


# actset_output (the refusal table listed it): a port of the rule's own switch (snic1's port 3, its one copy
# there), UNSET with an output written, a reserved port; refused as OVS refuses a number no port can have
AS_OVS["match actset_output=0xff00 (no port)"] = lambda x: _flow_mod(x, ACTSET(0xFF00), table=1)
AS_OVS["match actset_output masked"] = lambda x: _flow_mod(x, struct.pack("!II", 0xFFFF << 16 | 43 << 9 | 1 << 8 | 12,
                                                                        0x4F4E4600) + struct.pack("!II", 3, 0xFF))
ACCEPTED["match actset_output=3 with in_port=3, actset_output=UNSET, actset_output=CONTROLLER (ONF)"] = lambda x: (
    _flow_mod(x, _oxm(0, struct.pack("!I", 3)) + ACTSET(3), _apply(OUT1), table=1)
    + _flow_mod(x, ACTSET(0xFFFFFFF7), _write(_out(1)), table=1)
    + _flow_mod(x, ACTSET(0xFFFFFFFD), b"", table=2))
# tun_metadata on mapped options (tun_metadata63: 4 bytes, 58: 12): matched, written, read, deleted
ACCEPTED["NXT_TLV_TABLE_MOD mapping tun_metadata63, then a match on it"] = lambda x: encode_tlv_table_mod(
    x, NXTTMC_ADD, [TlvMap(0x0100, 7, 4, 63)]) + _flow_mod(x, _oxm(103, struct.pack("!I", 5), cls=1), _apply(OUT1))
ACCEPTED["tun_metadata58 (12 bytes) matched, set, loaded, moved and deleted"] = lambda x: encode_tlv_table_mod(
    x, NXTTMC_ADD, [TlvMap(0x0100, 58, 12, 58)]) + M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "table=1,priority=9,tun_metadata58=0x112233445566778899aabbcc,tun_metadata63=0x5/0xff,"
        "actions=set_field:0x1->tun_metadata63,load:0x7->NXM_NX_TUN_METADATA58[80..95],"
        "move:NXM_NX_TUN_METADATA58[0..31]->NXM_NX_REG0[],push:NXM_NX_TUN_METADATA63[0..31],pop:NXM_NX_REG1[],"
        "delete_field:tun_metadata58,output:1")))
# values longer than the option (what each switch keeps of them: test_tun_metadata_wide_vs_ovs.py)
ACCEPTED["tun_metadata61 (4 bytes) matched, set and loaded with values longer than it"] = lambda x: encode_tlv_table_mod(
    x, NXTTMC_ADD, [TlvMap(0x0100, 61, 4, 61)]) + M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=9,tun_metadata61=0x1122334455/0xffff00ff00,"
        "actions=set_field:0x1122334455->tun_metadata61,load:0xff->NXM_NX_TUN_METADATA61[32..39],output:1")))
# clone_resubmit: a lookup inside a flow's clone (translated as in the rule's own list: clone_translate.py)
ACCEPTED["Nicira resubmit inside clone"] = lambda x: _flow_mod(x, b"", _apply(CLONE(_nx(14, struct.pack("!HB3x", 0xFFF8, 3)))))
# clone_ct_clear: ct_clear inside a flow's clone
ACCEPTED["Nicira ct_clear inside clone"] = lambda x: _flow_mod(x, b"", _apply(CLONE(_nx(43, bytes(6)), OUT1)))
# clone_ct: ct(commit) inside a flow's clone (every sNIC port is extended to the host, as for a ct outside)
ACCEPTED["ct(commit,zone=5) inside clone"] = lambda x: _flow_mod(x, ETH(0x0800), _apply(CLONE(_ct(1, zone=5), OUT1)))
# clone_output_reg: an output_reg inside a flow's clone, of a number the rule fixes (a load before it);
# one only the pipeline knows stays refused there (the rule's own list splits it per value)
ACCEPTED["Nicira output_reg inside clone after a load of the register"] = lambda x: M.encode_flow_mod(x, FlowMod(
    "add", parse_rule("priority=6,actions=load:2->NXM_NX_REG0[0..15],clone(output:NXM_NX_REG0[0..15])")))
# clone_learn: learn inside a flow's clone (homed to the host as a learning rule)
ACCEPTED["Nicira learn inside clone"] = lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
    "priority=6,actions=clone(learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])),output:1")))
# ctlr2: controller(meter_id=M) (its packet-ins metered by M) and wire reasons above 5 (6: no_match, 7..255: none)
ACCEPTED["Nicira controller2 with meter_id 1"] = lambda x: _flow_mod(
    x, b"", _apply(_nx(37, bytes(6) + struct.pack("!HHI", 5, 8, 1)), OUT1))
ACCEPTED["Nicira controller with reasons 6, 7 and 9"] = lambda x: _flow_mod(x, b"", _apply(
    *(_nx(20, struct.pack("!HHBx", 0xFFFF, 0, n)) for n in (6, 7, 9))), table=2)
# potail: controller(meter_id=M) above 0xffff0000 (no meter OneSwitch can hold: unmetered, as Open vSwitch while it has
# no such meter), also in a PACKET_OUT; OpenFlow's controller and slowpath meters themselves OneSwitch refuses
ACCEPTED["Nicira controller2 with meter_id 0xfffffffe (OpenFlow's controller meter)"] = lambda x: _flow_mod(
    x, b"", _apply(_nx(37, bytes(6) + struct.pack("!HHI", 5, 8, 0xFFFFFFFE))), table=3)
ACCEPTED["Nicira controller2 with meter_id 0xffffffff in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 0xFFFFFFFD, (Controller(meter_id=0xFFFFFFFF),), bytes(60)))
ONESWITCH_ONLY["meter_mod add of meter 0xfffffffe (OpenFlow's controller meter)"] = (lambda x: W.header(
    W.OFPT_METER_MOD, x, struct.pack("!HHI", 0, 2, 0xFFFFFFFE) + struct.pack("!HHII4x", 1, 16, 5, 0)), (W.OFPET_METER_MOD_FAILED, 2))
ONESWITCH_ONLY["Nicira output_reg inside clone whose port number only the pipeline knows"] = (
    lambda x: _flow_mod(x, b"", _apply(CLONE(_nx(15, struct.pack("!HIH6x", 15, REG0, 0)))), table=1),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT))
# clonefork: check_pkt_larger and ct(table=T) inside a flow's clone (the physical switch forks as the virtual one);
# in a PACKET_OUT's clone, which the endpoint walks, both stay refused
ACCEPTED["check_pkt_larger inside clone"] = lambda x: _flow_mod(x, b"", _apply(CLONE(_check_pkt_larger(100, 0, REG0), OUT1)))
ACCEPTED["ct(table=T) inside clone"] = lambda x: _flow_mod(x, ETH(0x0800), _apply(CLONE(_ct(0, zone=5, table=2), OUT1)))
ONESWITCH_ONLY["check_pkt_larger inside clone in a PACKET_OUT"] = (lambda x: W.header(
    13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 40) + CLONE(_check_pkt_larger(100, 0, REG0)) + bytes(60)),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT))
NSH_FRAME = bytes.fromhex("0a00000000020a0000000001894f") + NSH.header({"nsh_ttl": 5}) + bytes(46)
# nshttl: dec_nsh_ttl written into the action set (also without an NSH match: Open vSwitch checks none
# there) and in a group bucket; in a PACKET_OUT (endpoint_nsh_ttl.py) but after a change (OneSwitch's own
# refusal), and refused by both for a frame that is not NSH
ACCEPTED["Nicira dec_nsh_ttl in write_actions"] = lambda x: _flow_mod(x, ETH(0x894F), _write(_nx(48, bytes(6)), OUT1), table=1)
ACCEPTED["Nicira dec_nsh_ttl in write_actions without an NSH match"] = lambda x: _flow_mod(
    x, b"", _write(_nx(48, bytes(6)), OUT1), table=2)
ACCEPTED["Nicira dec_nsh_ttl in a group bucket"] = lambda x: M.encode_group_mod(x, "add", parse_group(
    "group_id=37,type=all,bucket=dec_nsh_ttl,output:1,bucket=output:2,dec_nsh_ttl"))
ACCEPTED["Nicira dec_nsh_ttl in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    W.OFP_NO_BUFFER, 0xFFFFFFFD, (Output(2), DecNshTtl(), Output(1)), NSH_FRAME))
# potail: dec_nsh_ttl in a PACKET_OUT after changes, in its clone and in a bucket of a group it calls (decided on the
# frame dp-core makes of the changes); after check_pkt_larger still OneSwitch's own refusal, after push_mpls both refuse
ACCEPTED["Nicira dec_nsh_ttl in a PACKET_OUT after a set_field"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    W.OFP_NO_BUFFER, 0xFFFFFFFD, (SetField("nsh_si", 3), DecNshTtl(), Output(1)), NSH_FRAME))
ACCEPTED["Nicira dec_nsh_ttl in a PACKET_OUT's clone"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    W.OFP_NO_BUFFER, 0xFFFFFFFD, parse_actions("clone(dec_nsh_ttl,output:2),output:1"), NSH_FRAME))
ACCEPTED["Nicira dec_nsh_ttl in a bucket of a group a PACKET_OUT applies"] = lambda x: (
    M.encode_group_mod(x, "add", parse_group("group_id=38,type=all,bucket=output:2,dec_nsh_ttl,bucket=output:1"))
    + M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 0xFFFFFFFD, (GroupAction(38),), NSH_FRAME))
    + M.encode_group_mod(x, "delete", Group(38, "all")))
AS_OVS["Nicira dec_nsh_ttl in a PACKET_OUT after push_mpls"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    W.OFP_NO_BUFFER, 0xFFFFFFFD, parse_actions("push_mpls:0x8847,dec_nsh_ttl,output:1"), NSH_FRAME))
AS_OVS["Nicira dec_nsh_ttl in a PACKET_OUT of a frame that is not NSH"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(W.OFP_NO_BUFFER, 0xFFFFFFFD, (DecNshTtl(), Output(1)), bytes(60)))


async def _hello_1_0(reader, writer) -> tuple[int, int, int]:
    """Offer OpenFlow 1.0 only; the switch's (message type, error type, error code)."""
    c = OFClient(reader, writer)
    c.send(bytes([1, 0, 0, 8, 0, 0, 0, 1]))  # an OpenFlow 1.0 HELLO
    msgs = [await c.recv()]
    if msgs[0].type == W.OFPT_HELLO:
        msgs.append(await c.recv())
    m = msgs[-1]
    c.close()
    return (m.type, *struct.unpack_from("!HH", m.body)) if m.type == W.OFPT_ERROR else (m.type, -1, -1)


async def _table0_features(c: OFClient) -> bytes:
    """The switch's own TABLE_FEATURES entry for table 0 (to send back as a set request)."""
    x = c.next_xid()
    c.send(W.header(W.OFPT_MULTIPART_REQUEST, x, struct.pack("!HH4x", 12, 0)))
    while True:
        m = await c.recv()
        if m.type == W.OFPT_MULTIPART_REPLY and m.xid == x:
            body = m.body[8:]  # the first reply part starts with table 0 (later parts are skipped by barrier())
            return body[:struct.unpack_from("!H", body, 0)[0]]


async def _table_features_set(c: OFClient, entry: bytes) -> list[tuple[int, int, int]]:
    x = c.next_xid()
    c.send(W.header(W.OFPT_MULTIPART_REQUEST, x, struct.pack("!HH4x", 12, 0) + entry))
    return errors_in([m for m in await c.barrier() if m.xid == x])


async def _queue_reply(c: OFClient, port: int) -> tuple[int, bytes]:
    x = c.next_xid()
    c.send(W.header(22, x, struct.pack("!I4x", port)))
    m = [m for m in await c.barrier() if m.xid == x][0]
    return m.type, m.body


async def _answers(c: OFClient, builders: dict) -> dict[str, tuple[int, int] | None]:
    sent = {}
    for name, build in builders.items():
        xid = c.next_xid()
        c.send(build(xid))
        sent[xid] = name
    errs = {x: (t, code) for x, t, code in errors_in(await c.barrier())}
    return {name: errs.get(x) for x, name in sent.items()}


@async_test
async def test_refusal_table_rows_against_a_plain_ovs_bridge():
    builders = {**AS_OVS, **{k: b for k, (b, _) in ONESWITCH_ONLY.items()}, **ACCEPTED}
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2, 3, 4])
        sb.ofctl("add-meter", "plain", "meter=1,kbps,bands=type=drop,rate=1000")
        sb.ofctl("add-group", "plain", GROUP1)
        sb.ofctl("add-flow", "plain", LLDP)
        r, w = await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))
        ovs = OFClient(r, w)
        ovs.send(M.encode_hello())
        assert (await ovs.recv()).type == W.OFPT_HELLO
        got_ovs = await _answers(ovs, builders)
        hello_ovs = await _hello_1_0(*await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:")))
        queue_ovs = await _queue_reply(ovs, 1)
        features = await _table0_features(ovs)  # OVS's own table 0, sent back unchanged
        tf_ovs = await _table_features_set(ovs, features)
        # a dscp_remark band: what the OVS backend must answer (docs/endpoint.md: BAD_BAND, as OVS)
        x = ovs.next_xid()
        ovs.send(encode_meter_mod(x, MeterMod("add", Meter(2, (MeterBand("dscp_remark", 100, 0, 1),)))))
        remark = errors_in(await ovs.barrier())
        # accepted by both (OneSwitch refused these once): a wildcard metered rule; fast-failover
        # buckets watching ports on other switches than the group's ingress switches, a port that
        # does not exist and a group
        for m in ACCEPTED_BY_BOTH:
            ovs.send(m(ovs.next_xid()))
        assert errors_in(await ovs.barrier()) == []
        ovs.close()
    assert remark == [(x, W.OFPET_METER_MOD_FAILED, 8)]  # OFPMMFC_BAD_BAND
    topo = load_topology(TOPO)
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    ep_port = await ep.listen("ptcp:0:127.0.0.1")
    c = await OFClient.connect(ep_port)
    try:
        c.send(M.encode_group_mod(c.next_xid(), "add", parse_group(GROUP1)))
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(LLDP))))
        got_os = await _answers(c, builders)
        hello_os = await _hello_1_0(*await asyncio.open_connection("127.0.0.1", ep_port))
        queue_os = await _queue_reply(c, 1)
        tf_os = await _table_features_set(c, features)
        c.send(encode_meter_mod(c.next_xid(), MeterMod("add", Meter(1, (MeterBand("drop", 1000),)))))
        for m in ACCEPTED_BY_BOTH:
            c.send(m(c.next_xid()))
        assert errors_in(await c.barrier()) == []
    finally:
        await ep.close()
        await backend.close()
    assert hello_os == hello_ovs == (W.OFPT_ERROR, 0, 0)  # HELLO_FAILED/INCOMPATIBLE
    assert [e[1:] for e in tf_os] == [e[1:] for e in tf_ovs] == [(13, 5)]  # TABLE_FEATURES_FAILED/EPERM
    assert queue_os == queue_ovs and queue_ovs[0] == 23  # QUEUE_GET_CONFIG_REPLY: queue 0 of port 1, no properties
    for name in AS_OVS:
        assert got_ovs[name] is not None, f"{name}: OVS accepted it"
        assert got_os[name] == got_ovs[name], f"{name}: OneSwitch {got_os[name]}, OVS {got_ovs[name]}"
    for name in ACCEPTED:
        assert got_ovs[name] is None and got_os[name] is None, f"{name}: OVS {got_ovs[name]}, OneSwitch {got_os[name]}"
    for name, (_, code) in ONESWITCH_ONLY.items():
        assert got_ovs[name] is None, f"{name}: OVS refuses it too ({got_ovs[name]}): move the row"
        assert got_os[name] == code, f"{name}: OneSwitch answered {got_os[name]}"


# bundle's reserved members (the refusal table listed every one): both take IN_PORT, LOCAL and NONE in a bundle
# (active_backup: the first, always live, is the choice), any reserved member in a bundle_load; both refuse
# CONTROLLER (Open vSwitch: "unsupported controller member")
ACCEPTED["Nicira bundle with members IN_PORT, LOCAL and NONE; bundle_load with TABLE, NORMAL, FLOOD, ALL"] = (
    lambda x: _flow_mod(x, b"", _apply(_bundle((0xFFF8, 0xFFFE, 0xFFFF, 1), alg=0)))
    + M.encode_flow_mod(x, FlowMod("add", parse_rule(
        "priority=8,in_port=1,actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:TABLE,NORMAL,FLOOD,ALL),"
        "output:2"))))
ONESWITCH_ONLY["Nicira bundle with member TABLE in a PACKET_OUT"] = (lambda x: W.header(
    13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 40) + _bundle((0xFFF9, 1), alg=0) + bytes(60)),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT))
AS_OVS["Nicira bundle with member CONTROLLER"] = lambda x: _flow_mod(x, b"", _apply(_bundle((1, 0xFFFD))))
# ct, ct_clear and learn in a group bucket (oneswitch/bucket_ct.py: ct homes every port while a group
# holds it; a bucket's learn does nothing in Open vSwitch, nor in the translation)
ACCEPTED["ct in a group bucket"] = lambda x: M.encode_group_mod(x, "add", parse_group(
    "group_id=30,type=all,bucket=ct(commit),output:1,bucket=ct(table=1,zone=3)"))
ACCEPTED["ct_clear in a group bucket"] = lambda x: M.encode_group_mod(x, "add", parse_group(
    "group_id=32,type=all,bucket=ct_clear,output:1"))
ACCEPTED["Nicira learn in a group bucket"] = lambda x: M.encode_group_mod(x, "add", parse_group(
    "group_id=33,type=all,bucket=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),output:1"))
# (one row, three messages with one xid: the group is added, applied and deleted, so the ports it homes go back)
ACCEPTED["a PACKET_OUT applying a group with ct in a bucket"] = lambda x: (
    M.encode_group_mod(x, "add", parse_group("group_id=31,type=all,bucket=ct(table=1)"))
    + M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 0xFFFFFFFD, (GroupAction(31),), bytes(60)))
    + M.encode_group_mod(x, "delete", Group(31, "all")))
# pogroupct: such a PACKET_OUT goes to the host whole (oneswitch/packet_out_ct_group.py); what the endpoint
# otherwise carries out itself stays refused there, and a pkt_mark write before a bucket's ct(table=0)
ONESWITCH_ONLY["a pkt_mark write in a PACKET_OUT applying a group with ct(table=0) in a bucket"] = (lambda x: (
    M.encode_group_mod(x, "add", parse_group("group_id=35,type=all,bucket=ct(table=0)"))
    + M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, parse_actions("set_field:5->pkt_mark,group:35"),
                                             bytes(60)))
    + M.encode_group_mod(x, "delete", Group(35, "all"))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE))
# poctl: packet-ins of a PACKET_OUT after changes, as Open vSwitch sends them (oneswitch/endpoint_packet_in.py)
ACCEPTED["Nicira controller after a set_field in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 0xFFFFFFFD, (SetField("eth_src", 0x020000000001), Controller(controller_id=3)), bytes(60)))
ACCEPTED["output:CONTROLLER after a set_field and inside a clone after a push in a PACKET_OUT"] = lambda x: (
    M.encode_packet_out(x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions(
        "set_field:02:00:00:00:00:09->eth_dst,CONTROLLER,push_vlan:0x8100,clone(CONTROLLER)"), bytes(60))))
# poins2: packet-ins of a PACKET_OUT after tunnel fields other than tunnel_id and after ct_clear
ACCEPTED["output:CONTROLLER after a set_field of tun_src in a PACKET_OUT"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("set_field:1.2.3.4->tun_src,CONTROLLER"), bytes(60)))
ACCEPTED["output:CONTROLLER after ct_clear in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("ct_clear,CONTROLLER"), bytes(60)))
# poctl: output_trunc in a PACKET_OUT (the endpoint follows Open vSwitch's commits: oneswitch/endpoint_trunc.py)
ACCEPTED["output_trunc in a PACKET_OUT"] = lambda x: W.header(13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 16)
                                                              + TRUNC(2, 20) + bytes(60))
# ctalg: ct(alg=ftp|tftp) (dp-core's ct_alg.rs; ct rules are homed to the host)
ACCEPTED["ct(commit,alg=ftp) in a tcp rule"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x06"), _apply(
    _ct(1, alg=21), OUT1))
ACCEPTED["ct(table=1,alg=tftp) in a udp6 rule"] = lambda x: _flow_mod(x, ETH(0x86DD) + _oxm(10, b"\x11"), _apply(
    _ct(0, table=1, alg=69)))
AS_OVS["ct(commit,alg=ftp) in a udp rule"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x11"), _apply(_ct(1, alg=21)))
AS_OVS["ct(commit,alg=tftp) in an ip rule"] = lambda x: _flow_mod(x, ETH(0x0800), _apply(_ct(1, alg=69)))
# long:tun_metadata: an option mapped longer than 12 bytes (the fake backend, as the OVS backend, takes it;
# the emulator backend refuses a match on its bits past 127: test_tun_metadata_long.py)
ACCEPTED["match tun_metadata60 mapped to 16 bytes"] = lambda x: encode_tlv_table_mod(
    x, NXTTMC_ADD, [TlvMap(0x0100, 60, 16, 60)]) + _flow_mod(x, _oxm(100, struct.pack("!QQ", 0, 5), cls=1), _apply(OUT1))
# long:tun_metadata in a PACKET_OUT: check_pkt_larger, bundle, output_trunc are worked out on dp-core, which holds
# options of up to 124 bytes (tunmeta16)
ACCEPTED["check_pkt_larger in a PACKET_OUT after a set_field on a 16-byte tun_metadata54"] = (
    lambda x: encode_tlv_table_mod(x, NXTTMC_ADD, [TlvMap(0x0100, 54, 16, 54)]) + M.encode_packet_out(x, M.WirePacketOut(
        W.OFP_NO_BUFFER, 1, tuple(parse_actions("set_field:0x112233445566778899aabbccddeeff00->tun_metadata54,"
                                                "check_pkt_larger(100)->NXM_NX_REG0[0],output:2")), bytes(60))))
# ftpnat: ct with an alg number Open vSwitch has no ALG for (run as no alg: test_ct_alg_number_vs_ovs.py)
ACCEPTED["ct(commit,alg=80) in a tcp rule"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x06"), _apply(_ct(1, alg=80), OUT1))
ACCEPTED["ct(commit,alg=2121) in an ip rule, beside a nat"] = lambda x: _flow_mod(x, ETH(0x0800), _apply(
    _ct(1, alg=2121, nested=_nx(36, struct.pack("!2xHHI", 1, 1, 0x0A000001)))))
ACCEPTED["ct(commit,alg=tftp,nat(src=10.0.0.1)) in a udp rule"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x11"), _apply(
    _ct(1, alg=69, nested=_nx(36, struct.pack("!2xHHI", 1, 1, 0x0A000001)))))
# potrunc2: output_trunc in a PACKET_OUT's clones (endpoint_trunc.py follows Open vSwitch's commits around them)
ACCEPTED["output_trunc in a PACKET_OUT inside a clone"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("push_vlan:0x8100,clone(output(port=2,max_len=20)),output(port=3,max_len=20)"), bytes(60)))
# potrunc3: output_trunc in a PACKET_OUT beside a group or a bundle (endpoint_trunc.py follows a bucket's and a member's commits)
ACCEPTED["output_trunc in a PACKET_OUT that holds a bundle"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("output(port=2,max_len=20),bundle(eth_src,0,hrw,ofport,members:2,3)"), bytes(60)))
ACCEPTED["output_trunc in a PACKET_OUT that applies a group"] = lambda x: (
    M.encode_group_mod(x, "add", parse_group("group_id=39,type=all,bucket=push_vlan:0x8100,output:3"))
    + M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, parse_actions("group:39,output(port=2,max_len=20)"),
                                             bytes(60)))
    + M.encode_group_mod(x, "delete", Group(39, "all")))
ACCEPTED["output_trunc in a PACKET_OUT that holds output_reg"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("load:3->NXM_NX_REG0[],output:NXM_NX_REG0[0..15],output(port=2,max_len=20)"), bytes(60)))
ONESWITCH_ONLY["output_reg in a PACKET_OUT whose register holds TABLE's number"] = (
    lambda x: M.encode_packet_out(x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions(
        "load:0xfff9->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]"), bytes(60))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT))
# decapset: decap() ending the apply-actions, closed by decap() written into the action set (rules/decap_set.py)
ACCEPTED["Nicira decap() in apply-actions closed by a written decap()"] = lambda x: _nsh_rule(
    x, ApplyActions((Output(3), Decap())), WriteActions((SetField("reg0", 5), Decap(), Output(2))))
ONESWITCH_ONLY["Nicira decap() ending the apply-actions with no decap() written"] = (
    lambda x: _nsh_rule(x, ApplyActions((Decap(),)), WriteActions((Output(1),))), (2, 3))
ONESWITCH_ONLY["Nicira decap() closed by a written decap(), with goto_table"] = (lambda x: _nsh_rule(
    x, ApplyActions((Decap(),)), WriteActions((Decap(), Output(1))), GotoTable(1)), (2, 3))
ONESWITCH_ONLY["Nicira decap() closed by a written decap() beside a written group"] = (lambda x: _nsh_rule(
    x, ApplyActions((Decap(),)), WriteActions((Decap(), GroupAction(1)))), (2, 3))
# pometer: controller(meter_id=M) in a PACKET_OUT, also inside its clone (the switch holding M's budget meters the
# endpoint's packet-in: oneswitch/packet_out_meter.py; test_packet_out_meter_vs_ovs.py compares the packet-ins)
ACCEPTED["Nicira controller2 with meter_id 1 in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 0xFFFFFFFD, (Controller(meter_id=1),), bytes(60)))
ACCEPTED["Nicira controller2 with meter_id 1 inside a clone in a PACKET_OUT"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("clone(controller(meter_id=1,userdata=01)),output:2"), bytes(60)))
# ftpnat2: ct(alg=ftp) beside a nat (dp-core's ct_alg_ftp_nat.rs: the messages rewritten, the numbers shifted)
ACCEPTED["ct(commit,alg=ftp,nat(src=10.0.0.1)) in a tcp rule"] = lambda x: _flow_mod(x, ETH(0x0800) + _oxm(10, b"\x06"), _apply(
    _ct(1, alg=21, nested=_nx(36, struct.pack("!2xHHI", 1, 1, 0x0A000001)))))
# potable: after a PACKET_OUT's output:TABLE the tables' changes stay for the rest of its list (Open vSwitch runs
# TABLE as a resubmit; oneswitch/packet_out_table.py, test_packet_out_table_vs_ovs.py pins what Open vSwitch sends)
ACCEPTED["output:TABLE after outputs and changes, followed by a note, in a PACKET_OUT"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("output:2,set_field:5->reg0,output:TABLE,note:01"), bytes(60)))
# (meterctl) OpenFlow's slowpath meter is a meter like 1..0xffff0000 (Open vSwitch runs it for
# controller(meter_id=0xfffffffd) only); its controller meter 0xfffffffe stays refused (above)
ACCEPTED["meter_mod add of meter 0xfffffffd (OpenFlow's slowpath meter)"] = lambda x: W.header(
    W.OFPT_METER_MOD, x, struct.pack("!HHI", 0, 2, 0xFFFFFFFD) + struct.pack("!HHII4x", 1, 16, 5, 0))
# (tunany) a load whose mask keeps no bit of the option once cut: Open vSwitch's set_field:ANY, taken by both
# (a write of no bit that makes the option present: test_tun_metadata_any_vs_ovs.py)
ACCEPTED["load into tun_metadata56 (4 bytes) of an 8-byte payload masking only its last bytes"] = (
    lambda x: encode_tlv_table_mod(x, NXTTMC_ADD, [TlvMap(0x0100, 56, 4, 56)]) + _flow_mod(x, b"", _apply(_nx(
        33, struct.pack("!I", 1 << 16 | 96 << 9 | 1 << 8 | 16) + bytes(7) + b"\xff" + bytes(7) + b"\xff"), OUT1)))
ACCEPTED["load into tun_metadata55 of a masked header with no bytes (ovs-ofctl's set_field:0/0)"] = (
    lambda x: encode_tlv_table_mod(x, NXTTMC_ADD, [TlvMap(0x0100, 55, 8, 55)]) + _flow_mod(x, b"", _apply(_nx(
        33, struct.pack("!I", 1 << 16 | 95 << 9 | 1 << 8)), OUT1)))
# (pause) controller(pause) runs on the OVS backend's switches, NXT_RESUME goes back to the one that paused
# (oneswitch/endpoint_pause.py; test_pause_vs_ovs.py compares the packet-ins, resumes and their errors); a pause in a
# PACKET_OUT is refused (and on the emulator backend: test_pause_emu.py). A resume whose continuation is none, another
# bridge's or cut short: both answer alike (NXR_STALE, OFPBPC_BAD_LEN)
ACCEPTED["Nicira controller2 with pause"] = lambda x: _flow_mod(x, b"", _apply(_nx(37, bytes(6) + struct.pack("!HH4x", 4, 4))))
ONESWITCH_ONLY["Nicira controller2 with pause in a PACKET_OUT"] = (lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, (Controller(pause=True),), bytes(60))), (W.OFPET_BAD_ACTION, 3))
_RESUME_PACKET = struct.pack("!HH", 0, 64) + bytes(60)  # (NXPINT_PACKET, a frame of 60 bytes)
AS_OVS["NXT_RESUME with no continuation"] = lambda x: P2.nx_message(x, P2.NXT_RESUME, _RESUME_PACKET)
AS_OVS["NXT_RESUME with another bridge's continuation"] = lambda x: P2.nx_message(x, P2.NXT_RESUME, _RESUME_PACKET + (
    struct.pack("!HH4x", 8, 32) + struct.pack("!HH", 0x8000, 20) + bytes(16) + bytes(4)))
AS_OVS["NXT_RESUME with a continuation cut short"] = lambda x: P2.nx_message(x, P2.NXT_RESUME, _RESUME_PACKET + (
    struct.pack("!HH4x", 8, 16) + struct.pack("!HH", 0x8000, 20) + bytes(4)))
# (nshdst) learn's result_dst in an NSH field (LEARN2 with the field's 8-byte header; tests/ofwire/
# test_ofwire_nsh_learn_result.py); check_pkt_larger into one where the match fixes the bit, else OneSwitch's own
# refusal (Open vSwitch's header write follows its datapath flow mask: rules/nsh_check_larger.py)
ACCEPTED["Nicira learn with result_dst NXOXM_NSH_FLAGS[1]"] = lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(
    "priority=9,eth_type=0x894f,actions=learn(table=5,limit=2,result_dst=NXOXM_NSH_FLAGS[1],"
    "NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),output:1")))
ACCEPTED["check_pkt_larger into NXOXM_NSH_SPI[2] with nsh_spi matched"] = lambda x: _flow_mod(
    x, ETH(0x894F) + _nsh_oxm(4, struct.pack("!I", 0x123)), _apply(_nx(
        49, struct.pack("!HHII", 100, 2, 0xFFFF << 16 | 4 << 9 | 8, 0x005AD650)), OUT1))
ONESWITCH_ONLY["check_pkt_larger into NXOXM_NSH_SPI[2] without nsh_spi matched"] = (lambda x: _flow_mod(x, ETH(0x894F), _apply(_nx(
    49, struct.pack("!HHII", 100, 2, 0xFFFF << 16 | 4 << 9 | 8, 0x005AD650)), OUT1)),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT))
# (without the NSH match both take it: an IPv4 frame leaves unchanged from OVS 3.1, measured, and from dp-core)
ACCEPTED["Nicira learn with result_dst NXOXM_NSH_FLAGS[1] in a rule without the NSH match"] = lambda x: _flow_mod(
    x, ETH(0x0800), _apply(W.encode_action(Learn(result_dst=Subfield("nsh_flags", 1, 1))), OUT1))
# (bundlemem) NORMAL as a bundle member in a flow: both take it (every port's pipeline homed on the host, where the
# bundle keeps NORMAL: extension.bundles_normal); inside a clone OneSwitch refuses it as it refuses NORMAL there
ACCEPTED["Nicira bundle(active_backup) with a NORMAL member"] = lambda x: _flow_mod(x, b"", _apply(
    _bundle((77, 0xFFFA, 2), alg=0)))
ACCEPTED["Nicira bundle(hrw) with NORMAL, IN_PORT and NONE members"] = lambda x: M.encode_flow_mod(x, FlowMod(
    "add", parse_rule("priority=9,in_port=1,actions=bundle(eth_src,0,hrw,ofport,members:NORMAL,IN_PORT,ANY)")))
ONESWITCH_ONLY["Nicira bundle with a NORMAL member inside a clone"] = (lambda x: _flow_mod(x, b"", _apply(
    CLONE(_bundle((0xFFFA, 1), alg=0)))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT))
# (powhole) on an OVS-like backend (the fake one here) a PACKET_OUT with a packet-in after check_pkt_larger or ct, or
# with check_pkt_larger into a header field, goes whole to the host (oneswitch/packet_out_whole.py; on the emulator
# too but for nat and header fields, test_packet_out_whole_vs_ovs.py), every port homed first; they go back before the next FLOW_MOD
ACCEPTED["check_pkt_larger in a PACKET_OUT into eth_dst"] = lambda x: W.header(
    13, x, struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 40) + _check_pkt_larger(100, 0, 0x0000 << 16 | 1 << 9 | 6)
    + OUT1 + bytes(60))
ACCEPTED["controller(...) after check_pkt_larger in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("check_pkt_larger(40)->NXM_NX_REG4[0],controller(userdata=01)"), bytes(60)))
ACCEPTED["output:CONTROLLER after ct(commit) in a PACKET_OUT"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 2, parse_actions("ct(commit,zone=4),CONTROLLER,output:3"), bytes(12) + b"\x08\x00\x45" + bytes(45)))
AS_OVS["output:CONTROLLER after ct(commit) in a PACKET_OUT of a frame that is not IP"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 2, parse_actions("ct(commit,zone=4),CONTROLLER,output:3"), bytes(60)))
ACCEPTED["output:CONTROLLER in a PACKET_OUT applying a group with ct in a bucket"] = lambda x: (
    M.encode_group_mod(x, "add", parse_group("group_id=34,type=all,bucket=ct(commit)"))
    + M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, parse_actions("group:34,CONTROLLER"), bytes(60)))
    + M.encode_group_mod(x, "delete", Group(34, "all")))
ONESWITCH_ONLY["output:TABLE in a PACKET_OUT applying a group with ct in a bucket"] = (lambda x: (
    M.encode_group_mod(x, "add", parse_group("group_id=35,type=all,bucket=ct(commit)"))
    + M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, parse_actions("group:35,output:TABLE"), bytes(60)))
    + M.encode_group_mod(x, "delete", Group(35, "all"))), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE))
ACCEPTED["Nicira dec_nsh_ttl in a PACKET_OUT after check_pkt_larger"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(W.OFP_NO_BUFFER, 0xFFFFFFFD, parse_actions("check_pkt_larger(100)->NXM_NX_REG1[0],dec_nsh_ttl,"
                                                                  "output:1"), NSH_FRAME))
ACCEPTED["Nicira dec_nsh_ttl in a PACKET_OUT after a packet-in"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, parse_actions("clone(push_vlan:0x8100,set_field:5014->vlan_vid,controller),"
                                                         "dec_nsh_ttl,output:2"), NSH_FRAME))
ONESWITCH_ONLY["Nicira dec_nsh_ttl in a PACKET_OUT after output_trunc"] = (lambda x: M.encode_packet_out(
    x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, parse_actions("output(port=2,max_len=20),dec_nsh_ttl,output:3"), NSH_FRAME)),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE))
ONESWITCH_ONLY["output:CONTROLLER after output_trunc in a PACKET_OUT"] = (lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("output(port=2,max_len=20),CONTROLLER"), bytes(60))), (2, 0))
# (powhole) a PACKET_OUT's output:NORMAL while sNIC ports run their pipelines there: the endpoint homes every port
# first (oneswitch/packet_out_whole.py); put first among ACCEPTED, before ACCEPTED's output:NORMAL rule homes them
ACCEPTED = {"PACKET_OUT output:NORMAL while sNIC ports run their pipelines there (homed on demand)": lambda x: M.encode_packet_out(
    x, M.WirePacketOut(W.OFP_NO_BUFFER, 0xFFFFFFFD, (Output(0xFFFFFFFA),), bytes(60))), **ACCEPTED}
# (homeres) resubmit with another in_port: the pipelines it needs move to the host first (oneswitch/cross_port.py);
# an in_port no virtual port has stays refused (no copy of a rule naming it anywhere)
# (sent first among the accepted rows, and replaced or deleted at once: while a resubmit looks up with another
# in_port, rules whose copies are specialised to their in_port are refused, a row of its own)
ACCEPTED = {
    "Nicira resubmit(2,3) from a rule matching in_port=1 (port 2 on an sNIC: homed)": lambda x: _flow_mod(
        x, IN_PORT1, _apply(_nx(14, struct.pack("!HB3x", 2, 3)))),
    "(the resubmit(2,3) flow replaced)": lambda x: _flow_mod(x, IN_PORT1, _apply(OUT1)),
    "Nicira bundle(hrw) of host ports from a rule matching in_port=3 (an sNIC port: homed)": lambda x: _flow_mod(
        x, _oxm(0, struct.pack("!I", 3)), _apply(_bundle((1, 0xFFF8)))),
    "Nicira bundle_load of host ports from a rule matching in_port=3 (homed)": lambda x: _flow_mod(
        x, _oxm(0, struct.pack("!I", 3)), _apply(_bundle((1, 0xFFF8), ofs_nbits=15, dst=REG0), OUT1)),
    "(the in_port=3 bundle flow replaced)": lambda x: _flow_mod(x, _oxm(0, struct.pack("!I", 3)), _apply(OUT1)),
    "Nicira resubmit(3,3) and resubmit:4 in a group bucket (every port homed)": lambda x: M.encode_group_mod(
        x, "add", parse_group("group_id=46,type=all,bucket=set_field:5->reg0,resubmit(3,3),bucket=resubmit:4")),
    "(group 46 deleted)": lambda x: M.encode_group_mod(x, "delete", Group(46, "all")),
    **ACCEPTED,
}
ONESWITCH_ONLY["Nicira resubmit in a group bucket with an in_port no port has"] = (lambda x: M.encode_group_mod(
    x, "add", parse_group("group_id=47,type=all,bucket=resubmit(77,3)")), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT))


# (potable2) a PACKET_OUT whose list goes on after output:TABLE goes whole to the host, every port homed
# (oneswitch/packet_out_table.py, test_packet_out_table_vs_ovs.py compares the frames on both backends);
# what that route cannot hold after the TABLE (output_reg, packet-ins, output_trunc, …) stays refused; put first
# among ACCEPTED: while a virtual rule uses pkt_mark (ACCEPTED's rows do) such a PACKET_OUT is refused
ACCEPTED = {"output:2 after output:TABLE in a PACKET_OUT": lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("output:TABLE,output:2"), bytes(60))),
            "a second output:TABLE in a PACKET_OUT": lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("output:TABLE,set_field:5->reg0,output:TABLE"), bytes(60))),
            "push_vlan after output:TABLE in a PACKET_OUT": lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("output:TABLE,push_vlan:0x8100"), bytes(60))), **ACCEPTED}
ONESWITCH_ONLY["output_reg after output:TABLE in a PACKET_OUT"] = (lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("output:TABLE,output:NXM_NX_REG0[0..15]"), bytes(60))),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE))
# (porowf) output_reg in a PACKET_OUT from in_port, metadata, tunnel_id, pkt_mark, xxreg and header fields, and
# a register holding CONTROLLER's number after changes the endpoint's packet-in is measured for
# (oneswitch/endpoint_output_reg.py); a header source the frame lacks: MATCH_INCONSISTENT from both
ACCEPTED["output_reg in a PACKET_OUT from pkt_mark"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("set_field:3->pkt_mark,output:NXM_NX_PKT_MARK[0..15]"), bytes(60)))
ACCEPTED["output_reg in a PACKET_OUT from eth_src"] = lambda x: M.encode_packet_out(x, M.WirePacketOut(
    0xFFFFFFFF, 1, parse_actions("output:NXM_OF_ETH_SRC[0..15]"), bytes(60)))
ACCEPTED["output_reg in a PACKET_OUT whose register holds CONTROLLER's number"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("load:0xfffd->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]"), bytes(60)))
AS_OVS["output_reg in a PACKET_OUT from udp_dst of a frame that is not UDP"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("output:NXM_OF_UDP_DST[0..2]"), bytes(60)))
ONESWITCH_ONLY["output_reg in a PACKET_OUT from an NSH field"] = (
    lambda x: M.encode_packet_out(x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("output:NXOXM_NSH_C1[0..15]"),
                                                     NSH_FRAME)), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE))
ONESWITCH_ONLY["output_reg in a PACKET_OUT whose register holds CONTROLLER's number after ct"] = (
    lambda x: M.encode_packet_out(x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions(
        "ct(commit),load:0xfffd->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]"), bytes(12) + b"\x08\x00\x45" + bytes(45))),
    (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT))
# (porowf) a packet-in after a write to tun_metadata or a delete_field in a PACKET_OUT: sent whole to the host
# on an OVS-like backend (the fake one here), whose Open vSwitch maps the options as the virtual switch
ACCEPTED["output:CONTROLLER after a set_field of tun_metadata62 in a PACKET_OUT"] = lambda x: encode_tlv_table_mod(
    x, NXTTMC_ADD, [TlvMap(0x0100, 62, 4, 62)]) + M.encode_packet_out(x, M.WirePacketOut(
        0xFFFFFFFF, 1, parse_actions("set_field:0x5->tun_metadata62,CONTROLLER"), bytes(60)))
ACCEPTED["output:CONTROLLER after delete_field of tun_metadata62 in a PACKET_OUT"] = lambda x: M.encode_packet_out(
    x, M.WirePacketOut(0xFFFFFFFF, 1, parse_actions("set_field:0x5->tun_metadata62,delete_field:tun_metadata62,"
                                                    "CONTROLLER"), bytes(60)))  # (mapped by the one before)
