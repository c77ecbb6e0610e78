"""A ``load`` into ``nsh_ttl``, Open vSwitch's 8-bit subfield over the NSH header's
6-bit TTL (``rules/nsh_ttl_load.py``): values above 63, bits 6 and 7, and bits 0..5
together, which keep bits 6 and 7. Text round trips Open vSwitch takes, golden wire
bytes (NXAST_REG_LOAD2; the whole subfield without a mask) ``ovs-ofctl ofp-print``
reads as the same flow, the set_field forms Open vSwitch refuses, and dp-core on
frames against the bytes Open vSwitch 3.1 sent for the same flows (measured on a
dummy bridge). The random rules: ``tandem bench of13_oracle -- --items nsh_ttl_loads``."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402
from test_ofwire_nx_golden import golden, ofp_print  # noqa: E402
from test_ofwire_nsh_ttl_operand import FRAME, _run, _with  # noqa: E402  (TTL 63: ver/flags/ttl 0x0fc6)

from tandem.rules import ofwire as W  # noqa: E402
from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ir import ApplyActions, DecNshTtl, FlowMod, Match, Output, Rule, RuleError, SetField  # noqa: E402
from tandem.rules.ofctl import parse_rule  # noqa: E402
from tandem.rules.ofctl_lex import OfctlSyntaxError  # noqa: E402

NSH = "eth_type=0x894f"
TEXTS = [
    f"{NSH},actions=load:0xc5->NXOXM_NSH_TTL[],output:2",
    f"{NSH},actions=load:0x2->NXOXM_NSH_TTL[6..7],load:0x1->NXOXM_NSH_TTL[7],dec_nsh_ttl,output:2",
    f"{NSH},actions=load:0x7->NXOXM_NSH_TTL[0..5],load:0x7->NXOXM_NSH_TTL[4..6],load:0x3f->NXOXM_NSH_TTL[],output:2",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_the_loads_are_masked_set_fields_of_eight_bits():
    acts = parse_rule(f"{NSH},actions=load:0xc5->NXOXM_NSH_TTL[],load:0x2->NXOXM_NSH_TTL[6..7],"
                      "load:0x7->NXOXM_NSH_TTL[0..5]").instructions[0].actions
    assert acts == (SetField("nsh_ttl", 0xC5, 0xFF), SetField("nsh_ttl", 0x80, 0xC0), SetField("nsh_ttl", 7, 0x3F))


@pytest.mark.parametrize("text", ["set_field:0xc5->nsh_ttl", "set_field:64->nsh_ttl"])
def test_the_set_field_stays_six_bits(text):
    """Open vSwitch refuses these (``0xc5 is not a valid value for field nsh_ttl``, measured)."""
    with pytest.raises(OfctlSyntaxError):
        parse_rule(f"{NSH},actions={text}")
    with pytest.raises(RuleError):
        SetField("nsh_ttl", 0xC5)
    with pytest.raises(RuleError, match="does not fit its 8 bits"):
        SetField("nsh_ttl", 0x100, 0x1FF)


def test_a_wire_set_field_above_63_is_refused():
    """OFPAT_SET_FIELD of nsh_ttl 0xc5 (a load comes as NXAST_REG_LOAD2)."""
    body = struct.pack("!HH", 25, 16) + struct.pack("!IIB", 0xFFFF0000 | 10 << 9 | 5, 0x005AD650, 0xC5)
    with pytest.raises(W.OFError):
        W.decode_actions(body + bytes(16 - len(body)))


NSH_TTL_LOAD_MOD = (0x78, FlowMod("add", Rule(Match.of(eth_type=0x894F), (ApplyActions((
    SetField("nsh_ttl", 0xC5, 0xFF),
    SetField("nsh_ttl", 0x80, 0xC0),
    SetField("nsh_ttl", 7, 0x3F),
    DecNshTtl(),
    Output(2))),), priority=15)),
    ["set_field:197->nsh_ttl", "set_field:128/0xc0->nsh_ttl", "set_field:7/0x3f->nsh_ttl", "dec_nsh_ttl", "output:2"])


def test_flow_mod_matches_its_golden_bytes():
    """NXAST_REG_LOAD2 (subtype 33): the whole subfield's OXM without a mask (field 10, length 1 + 4),
    a part's with one (length 2 + 4), as Open vSwitch sends them back."""
    xid, mod, _ = NSH_TTL_LOAD_MOD
    raw = golden("flow_mod_nsh_ttl_load")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert "0021ffff1405005ad650c5" in raw.hex() and "0021ffff1506005ad65080c0" in raw.hex()


def test_open_vswitch_reads_the_golden_bytes_as_the_same_flow():
    out = ofp_print(golden("flow_mod_nsh_ttl_load"))
    for piece in NSH_TTL_LOAD_MOD[2]:
        assert piece in out, (piece, out)


SHOW = "table=1,eth_type=0x894f,priority=0,actions=move:NXOXM_NSH_TTL[]->NXM_OF_ETH_SRC[0..7],output:4"


def _table0(actions: str) -> str:
    return f"table=0,in_port=1,eth_type=0x894f,actions={actions},goto_table:1"


# actions of table 0 -> the frames Open vSwitch 3.1 sent (port -> [(ver/flags/ttl, eth_src's low byte)]);
# table 1 moves the flow's 8 bits into eth_src and sends to 4 (an nsh_ttl=5 rule to 3 in the first case)
MEASURED = {
    "load:0xc5->NXOXM_NSH_TTL[],output:2": {2: [(0x0146, None)], 4: [(0x0146, 0xC5)]},
    "load:0x2->NXOXM_NSH_TTL[6..7],output:2": {2: [(0x0FC6, None)], 4: [(0x0FC6, 0xBF)]},
    "load:0xc0->NXOXM_NSH_TTL[],load:0x7->NXOXM_NSH_TTL[0..5],output:2": {2: [(0x01C6, None)], 4: [(0x01C6, 0xC7)]},
    "load:0x7->NXOXM_NSH_TTL[4..6],output:2,dec_nsh_ttl,output:3": {
        2: [(0x0FC6, None)], 3: [(0x0F86, None)], 4: [(0x0F86, 0x7E)]},
    "load:0xc1->NXOXM_NSH_TTL[],dec_nsh_ttl,output:2": {2: [(0x0006, None)], 4: [(0x0006, 0xC0)]},
    "load:0x80->NXOXM_NSH_TTL[],dec_nsh_ttl,output:2": {2: [(0x0FC6, None)], 4: [(0x0FC6, 0x7F)]},
}


@pytest.mark.parametrize("actions", list(MEASURED))
def test_dp_core_keeps_eight_bits_in_the_flow_and_six_in_the_frame(actions):
    flows = [_table0(actions), SHOW]
    if actions.startswith("load:0xc5"):  # (the flow's 0xc5 does not match nsh_ttl=5)
        flows.append("table=1,eth_type=0x894f,nsh_ttl=5,actions=output:3")
    want = {port: [_with(FRAME, *f) for f in frames] for port, frames in MEASURED[actions].items()}
    assert _run(flows) == want
