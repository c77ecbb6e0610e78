"""``output_reg`` of an NSH field (``output:NXOXM_NSH_C1[0..15]``; NXAST_OUTPUT_REG2, whose
experimenter OXM header takes 8 bytes, 24 in all): Open vSwitch outputs to the port number
the flow's value holds (measured on 3.1 with frames, below). Text round trips Open
vSwitch takes, golden wire bytes ``ovs-ofctl ofp-print`` reads as the same flow, and
dp-core against the frames Open vSwitch sent. The random rules: ``tandem bench
of13_oracle -- --items nsh_output_reg``; translated where the rule fixes the number
(``tests/oneswitch/test_nsh_output_reg_translate.py``)."""

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
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, OutputReg, Rule, SetField, Subfield  # noqa: E402
from tandem.rules.ofctl import parse_rule  # noqa: E402
from tandem.rules.ofctl_lex import OfctlSyntaxError  # noqa: E402

NSH = "eth_type=0x894f"
TEXTS = [
    f"{NSH},actions=output:NXOXM_NSH_C1[0..15]",
    f"{NSH},actions=set_field:0x4->nsh_si,output:NXOXM_NSH_SI[],output:NXOXM_NSH_SPI[0..15]",
    f"{NSH},actions=load:0x2->NXOXM_NSH_TTL[6..7],output:NXOXM_NSH_TTL[],output:NXOXM_NSH_FLAGS[0..3]",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_an_nsh_source_needs_the_nsh_match():
    """(Open vSwitch: MATCH_INCONSISTENT)"""
    with pytest.raises(OfctlSyntaxError, match="eth_type=0x894f"):
        parse_rule("actions=output:NXOXM_NSH_C1[0..15]")


NSH_OUTPUT_REG_MOD = (0x79, FlowMod("add", Rule(Match.of(eth_type=0x894F), (ApplyActions((
    OutputReg(Subfield("nsh_c1", 0, 16)),
    SetField("nsh_si", 3),
    OutputReg(Subfield("nsh_si", 0, 8)),
    OutputReg(Subfield("nsh_ttl", 0, 8)),
    Output(2))),), priority=16)),
    ["output:NXOXM_NSH_C1[0..15]", "set_field:3->nsh_si", "output:NXOXM_NSH_SI[]",
     "output:NXOXM_NSH_TTL[]", "output:2"])


def test_flow_mod_matches_its_golden_bytes():
    """NXAST_OUTPUT_REG2 (subtype 32): ofs_nbits, max_len, the 8-byte header, 24 bytes in all."""
    xid, mod, _ = NSH_OUTPUT_REG_MOD
    raw = golden("flow_mod_nsh_output_reg")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert "ffff0018000023200020000fffffffff0c08005ad6500000" in raw.hex()


def test_open_vswitch_reads_the_golden_bytes_as_the_same_flow():
    out = ofp_print(golden("flow_mod_nsh_output_reg"))
    for piece in NSH_OUTPUT_REG_MOD[2]:
        assert piece in out, (piece, out)


UDP = bytes.fromhex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000")


def _frame(**fields) -> bytes:
    h = {"nsh_spi": 0x123, "nsh_si": 5, "nsh_np": 3, "nsh_c1": 0x11, **fields}
    return bytes.fromhex("0a00000000020a0000000001") + struct.pack("!H", N.ETH_TYPE_NSH) + N.header(h) + UDP


# (actions, the frame's NSH fields) -> the port Open vSwitch 3.1 sent the frame to (None: none), measured
MEASURED = [
    ("output:NXOXM_NSH_C1[0..15]", {"nsh_c1": 3}, 3),
    ("output:NXOXM_NSH_C1[16..31]", {"nsh_c1": 0x40011}, 4),
    ("output:NXOXM_NSH_SI[]", {"nsh_si": 2}, 2),
    ("set_field:4->nsh_c1,output:NXOXM_NSH_C1[0..15]", {"nsh_c1": 3}, 4),
    ("output:NXOXM_NSH_SPI[0..7]", {"nsh_spi": 0x104}, 4),
    ("load:0x2->NXOXM_NSH_TTL[6..7],output:NXOXM_NSH_TTL[]", {"nsh_ttl": 3}, None),  # (the flow's 0x83)
]


@pytest.mark.parametrize("actions, fields, port", MEASURED)
def test_dp_core_outputs_to_the_flows_value(actions, fields, port):
    sw = Switch([1, 2, 3, 4], 2, drop_malformed=False)
    sw.add_rules([parse_rule(f"in_port=1,{NSH},actions={actions}")])
    frame = _frame(**fields)
    got = [(p, f) for p, f in sw.process(1, frame)]
    want_frame = _frame(**{**fields, "nsh_c1": 4}) if actions.startswith("set_field") else frame
    assert got == ([] if port is None else [(port, want_frame)])
