"""``nsh_ttl`` as the operand of move, push and pop: Open vSwitch's subfield
``NXOXM_NSH_TTL[]`` is 8 bits over the NSH header's 6-bit TTL (measured on Open
vSwitch 3.1: a move of 0xc5 leaves 0xc5 in the flow, which a later move reads and a
later ``nsh_ttl=5`` does not match, and TTL 5 in the frame; a pop of 0xff then
``dec_nsh_ttl`` leaves 0xfe in the flow, 0x3e in the frame). Text round trips that
Open vSwitch takes, golden wire bytes ``ovs-ofctl ofp-print`` reads as the same flow,
the loads as masked set_fields (``rules/nsh_ttl_load.py``), and dp-core on frames against
the measured bytes. The random rules: ``tandem bench of13_oracle -- --items nsh_ttl_operands``."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402
from test_ofwire_nx_golden import golden, ofp_print  # noqa: E402

from tandem.dataplane.switch import Switch  # noqa: E402
from tandem.rules import nsh as N  # noqa: E402
from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ir import (  # noqa: E402
    ApplyActions, DecNshTtl, FlowMod, Match, MoveField, Output, Rule, SetField, StackPop, StackPush, Subfield,
)
from tandem.rules.ofctl import parse_rule  # noqa: E402

NSH = "eth_type=0x894f"
TEXTS = [
    f"{NSH},actions=move:NXM_NX_REG0[0..7]->NXOXM_NSH_TTL[],output:2",
    f"{NSH},actions=move:NXOXM_NSH_TTL[]->NXM_OF_ETH_SRC[0..7],push:NXOXM_NSH_TTL[],pop:NXM_NX_REG1[8..15]",
    f"{NSH},actions=push:NXM_NX_REG1[0..7],pop:NXOXM_NSH_TTL[],move:NXM_NX_REG1[0..1]->NXOXM_NSH_TTL[6..7]",
    f"{NSH},actions=load:0x3f->NXOXM_NSH_TTL[],load:0x2->NXOXM_NSH_TTL[1..2],output:2",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_the_subfield_is_eight_bits():
    rule = parse_rule(f"{NSH},actions=move:nsh_ttl[]->reg0[0..7]")
    assert rule.instructions[0].actions[0].src == Subfield("nsh_ttl", 0, 8)


def test_a_load_is_the_masked_set_field_of_the_eight_bits():
    """(The loads themselves, past bit 5 too: test_ofwire_nsh_ttl_load.py.)"""
    assert parse_rule(f"{NSH},actions=load:0x5->NXOXM_NSH_TTL[]").instructions[0].actions == (
        SetField("nsh_ttl", 5, 0xFF),)
    assert parse_rule(f"{NSH},actions=load:0x1->NXOXM_NSH_TTL[2..3]").instructions[0].actions == (
        SetField("nsh_ttl", 4, 0xC),)


def sf(field, ofs, n):
    return Subfield(field, ofs, n)


NSH_TTL_MOD = (0x77, FlowMod("add", Rule(Match.of(eth_type=0x894F), (ApplyActions((
    MoveField(sf("reg0", 0, 8), sf("nsh_ttl", 0, 8)),
    MoveField(sf("nsh_ttl", 0, 8), sf("eth_src", 0, 8)),
    StackPush(sf("nsh_ttl", 0, 8)),
    StackPop(sf("nsh_ttl", 6, 2)),
    Output(2))),), priority=14)),
    ["move:NXM_NX_REG0[0..7]->NXOXM_NSH_TTL[]", "move:NXOXM_NSH_TTL[]->NXM_OF_ETH_SRC[0..7]",
     "push:NXOXM_NSH_TTL[]", "pop:NXOXM_NSH_TTL[6..7]", "output:2"])


def test_flow_mod_matches_its_golden_bytes():
    """NXOXM_NSH_TTL's experimenter header: class 0xffff, field 10, length 1 + 4 (8 bytes)."""
    xid, mod, _ = NSH_TTL_MOD
    raw = golden("flow_mod_nsh_ttl_operand")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert "ffff1405005ad650" in raw.hex()


def test_open_vswitch_reads_the_golden_bytes_as_the_same_flow():
    out = ofp_print(golden("flow_mod_nsh_ttl_operand"))
    for piece in NSH_TTL_MOD[2]:
        assert piece in out, (piece, out)


UDP = bytes.fromhex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000")
FRAME = (bytes.fromhex("0a00000000020a0000000001") + struct.pack("!H", N.ETH_TYPE_NSH)
         + N.header(dict(nsh_spi=0x123, nsh_si=5, nsh_np=3, nsh_c1=0x11)) + UDP)


def _run(flows: list[str], frame_in: bytes = FRAME) -> dict[int, list[bytes]]:
    """What dp-core sends, per port, of ``frame_in`` from port 1 through ``flows`` (two tables)."""
    sw = Switch([1, 2, 3, 4], 2, drop_malformed=False)
    sw.add_rules([parse_rule(t) for t in flows])
    got: dict[int, list[bytes]] = {}
    for port, frame in sw.process(1, frame_in):
        got.setdefault(port, []).append(frame)
    return got


def _with(frame: bytes, vftl: int, src_low: int | None = None) -> bytes:
    out = bytearray(frame)
    out[14:16] = struct.pack("!H", vftl)
    if src_low is not None:
        out[11] = src_low
    return bytes(out)


def test_dp_core_writes_eight_bits_to_the_flow_and_six_to_the_frame():
    """The bytes Open vSwitch 3.1 sent for these flows (measured on a dummy bridge)."""
    got = _run(["table=0,in_port=1,eth_type=0x894f,actions=load:0xc5->NXM_NX_REG0[],"
                "move:NXM_NX_REG0[0..7]->NXOXM_NSH_TTL[],output:2,goto_table:1",
                "table=1,eth_type=0x894f,nsh_ttl=5,actions=output:3",
                "table=1,priority=0,eth_type=0x894f,actions=move:NXOXM_NSH_TTL[]->NXM_OF_ETH_SRC[0..7],output:4"])
    assert got == {2: [_with(FRAME, 0x0146)], 4: [_with(FRAME, 0x0146, 0xC5)]}


def test_dp_core_pop_of_0xff_then_dec_nsh_ttl():
    got = _run(["in_port=1,eth_type=0x894f,actions=load:0xff->NXM_NX_REG1[0..7],push:NXM_NX_REG1[0..7],"
                "pop:NXOXM_NSH_TTL[],output:2,dec_nsh_ttl,output:3,move:NXOXM_NSH_TTL[]->NXM_OF_ETH_SRC[0..7],output:4"])
    assert got == {2: [FRAME], 3: [_with(FRAME, 0x0F86)], 4: [_with(FRAME, 0x0F86, 0xFE)]}


def test_dp_core_bits_six_and_seven_stay_out_of_the_frame():
    got = _run(["table=0,in_port=1,eth_type=0x894f,actions=load:0x2->NXM_NX_REG1[0..1],"
                "move:NXM_NX_REG1[0..1]->NXOXM_NSH_TTL[6..7],output:2,goto_table:1",
                "table=1,eth_type=0x894f,actions=move:NXOXM_NSH_TTL[]->NXM_OF_ETH_SRC[0..7],output:4"])
    assert got == {2: [FRAME], 4: [_with(FRAME, 0x0FC6, 0xBF)]}


def test_dp_core_move_of_0x40_then_dec_nsh_ttl_matches_63():
    got = _run(["table=0,in_port=1,eth_type=0x894f,actions=load:0x40->NXM_NX_REG1[0..7],"
                "move:NXM_NX_REG1[0..7]->NXOXM_NSH_TTL[],output:2,dec_nsh_ttl,output:3,goto_table:1",
                "table=1,eth_type=0x894f,nsh_ttl=63,actions=output:4"])
    assert got == {2: [_with(FRAME, 0x0006)], 3: [FRAME], 4: [FRAME]}
