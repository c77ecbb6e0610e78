"""Decoding bad controller input yields the OpenFlow error a switch must send."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, FlowMod, GotoTable, Match, Output, Rule, SetField

BASE = M.encode_flow_mod(1, FlowMod("add", Rule(Match.of(in_port=1), (ApplyActions((Output(2),)),))))[8:]


def err(fn, body):
    with pytest.raises(W.OFError) as e:
        fn(body)
    return (e.value.etype, e.value.code)


def flow_mod_body(match: bytes, instructions: bytes, command: int = 0, table: int = 0) -> bytes:
    fixed = M.FLOW_MOD_FIXED.pack(0, 0, table, command, 0, 0, 1, W.OFP_NO_BUFFER, ir.OFPP_ANY, M.OFPG_ANY, 0)
    raw = struct.pack("!HH", 1, 4 + len(match)) + match
    return fixed + raw + bytes(W.pad8(len(raw)) - len(raw)) + instructions


def test_truncated_flow_mod_is_bad_len():
    assert err(M.decode_flow_mod, BASE[:20]) == (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)


def test_unknown_command_and_table():
    assert err(M.decode_flow_mod, flow_mod_body(b"", b"", command=9)) == (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_BAD_COMMAND)
    assert err(M.decode_flow_mod, flow_mod_body(b"", b"", command=0, table=255)) == (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_BAD_TABLE_ID)


def test_match_errors():
    unknown_field = struct.pack("!I3s5x", 0x8000 << 16 | 37 << 9 | 3, b"\0\0\1")  # pbb_isid: OVS has no PBB either
    assert err(M.decode_flow_mod, flow_mod_body(unknown_field, b"")) == (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_FIELD)
    tcp_without_proto = struct.pack("!IH", 0x8000 << 16 | 14 << 9 | 2, 80)
    assert err(M.decode_flow_mod, flow_mod_body(tcp_without_proto, b"")) == (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_PREREQ)
    dup = struct.pack("!II", 0x8000 << 16 | 0 << 9 | 4, 1) * 2
    assert err(M.decode_flow_mod, flow_mod_body(dup, b"")) == (W.OFPET_BAD_MATCH, W.OFPBMC_DUP_FIELD)
    masked_port = struct.pack("!III", 0x8000 << 16 | 0 << 9 | 1 << 8 | 8, 1, 1)
    assert err(M.decode_flow_mod, flow_mod_body(masked_port, b"")) == (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_MASK)
    overlong = struct.pack("!I", 0x8000 << 16 | 0 << 9 | 40)
    assert err(M.decode_flow_mod, flow_mod_body(overlong, b"")) == (W.OFPET_BAD_MATCH, W.OFPBMC_BAD_LEN)


def test_action_and_instruction_errors():
    copy_ttl_out = struct.pack("!HH4xHH4x", 4, 16, 11, 8)  # apply(copy_ttl_out): OVS refuses it too
    assert err(M.decode_flow_mod, flow_mod_body(b"", copy_ttl_out)) == (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)
    meter_zero = struct.pack("!HHI", 6, 8, 0)  # meter ids start at 1
    assert err(M.decode_flow_mod, flow_mod_body(b"", meter_zero)) == (W.OFPET_METER_MOD_FAILED, 2)
    meter_long = struct.pack("!HHI4x", 6, 16, 1)
    assert err(M.decode_flow_mod, flow_mod_body(b"", meter_long)) == (W.OFPET_BAD_INSTRUCTION, W.OFPBIC_BAD_LEN)
    goto_back = struct.pack("!HHB3x", 1, 8, 1)
    assert err(M.decode_flow_mod, flow_mod_body(b"", goto_back, table=3)) == (W.OFPET_BAD_INSTRUCTION, W.OFPBIC_BAD_TABLE_ID)
    bad_len = struct.pack("!HH4x", 4, 12)
    assert err(M.decode_flow_mod, flow_mod_body(b"", bad_len)) == (W.OFPET_BAD_INSTRUCTION, W.OFPBIC_BAD_LEN)
    out_to_any = struct.pack("!HH4xHHIH6x", 4, 24, 0, 16, 0xFFFFFFFF, 0)
    assert err(M.decode_flow_mod, flow_mod_body(b"", out_to_any)) == (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT)
    out_to_zero = struct.pack("!HH4xHHIH6x", 4, 24, 0, 16, 0, 0)  # port 0 is no port: Open vSwitch takes it
    assert M.decode_flow_mod(flow_mod_body(b"", out_to_zero)).mod.rule.outputs() == [0]


def test_multipart_errors():
    assert err(S.decode_multipart_request, struct.pack("!HH4x", 5, 0)) == (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_MULTIPART)
    assert err(S.decode_multipart_request, struct.pack("!HH4x", 9, 0)) == (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)  # METER needs an id
    assert err(S.decode_multipart_request, struct.pack("!HH4x", 12, 0) + bytes(64)) == (W.OFPET_TABLE_FEATURES_FAILED, W.OFPTFFC_EPERM)
    assert err(S.decode_multipart_request, struct.pack("!HH4x", 4, 0)) == (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)


def test_group_mod_errors():
    assert err(M.decode_group_mod, struct.pack("!HBxI", 7, 0, 1)) == (W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_BAD_COMMAND)
    assert err(M.decode_group_mod, struct.pack("!HBxI", 0, 9, 1)) == (W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_BAD_TYPE)
    assert err(M.decode_group_mod, struct.pack("!HBxI", 0, 0, 0xFFFFFFF0)) == (W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_INVALID_GROUP)


FIELD_VALUES = {
    "in_port": st.integers(1, 0xFFFFFF00), "eth_dst": st.integers(0, (1 << 48) - 1), "eth_src": st.integers(0, (1 << 48) - 1),
    "vlan_vid": st.integers(0x1000, 0x1FFF), "metadata": st.integers(0, (1 << 64) - 1),
}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(FIELD_VALUES)), st.integers(0, 1 << 64), max_size=5),
       st.integers(0, 0xFFFF), st.integers(0, 200), st.lists(st.integers(1, 0xFFFFFF00), max_size=4), st.data())
def test_flow_mod_round_trip(fields, priority, table, ports, data):
    match = Match.of(**{k: data.draw(FIELD_VALUES[k]) for k in fields})
    acts = tuple(Output(p) for p in ports) + (SetField("eth_dst", 5),)
    rule = Rule(match, (ApplyActions(acts), GotoTable(table + 1)), table=table, priority=priority)
    mod = FlowMod("add", rule)
    assert M.decode_flow_mod(M.encode_flow_mod(1, mod)[8:]).mod == mod
