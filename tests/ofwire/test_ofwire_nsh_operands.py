"""The NSH fields as operands of move, push and pop (Open vSwitch's NXOXM_NSH_*, whose
experimenter OXM headers take 8 bytes in NXAST_REG_MOVE and NXAST_STACK_PUSH/POP):
ovs-ofctl text round trips that Open vSwitch itself takes, golden wire bytes that
``ovs-ofctl ofp-print`` reads as the same flow, and the forms OneSwitch refuses (the NSH fields in
learn, multipath, bundle_load, check_pkt_larger and a ct zone; nsh_ttl:
test_ofwire_nsh_ttl_operand.py; output_reg: test_ofwire_nsh_output_reg.py). The packets:
``tandem bench of13_oracle -- --items nsh_operands``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402
from test_ofwire_nx_golden import golden, ofp_print  # noqa: E402

from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ir import ApplyActions, FlowMod, Match, MoveField, Output, Rule, StackPop, StackPush, Subfield  # noqa: E402
from tandem.rules.ofctl import parse_rule  # noqa: E402
from tandem.rules.ofctl_lex import OfctlSyntaxError  # noqa: E402

NSH = "eth_type=0x894f,nsh_mdtype=1"
TEXTS = [
    f"{NSH},actions=move:NXOXM_NSH_C1[]->NXM_NX_REG0[],output:2",
    f"{NSH},actions=move:NXM_NX_REG0[0..7]->NXOXM_NSH_SI[],move:NXOXM_NSH_C1[0..7]->NXOXM_NSH_C2[8..15]",
    f"{NSH},actions=push:NXOXM_NSH_SPI[],pop:NXOXM_NSH_C3[0..23],push:NXOXM_NSH_FLAGS[],pop:NXM_OF_ETH_SRC[0..7]",
    f"{NSH},actions=move:NXOXM_NSH_MDTYPE[]->NXM_NX_REG1[0..7],move:NXOXM_NSH_NP[]->NXOXM_NSH_FLAGS[]",
    "eth_type=0x894f,actions=move:NXOXM_NSH_C4[]->NXM_NX_PKT_MARK[]",  # (a context read without nsh_mdtype=1)
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_ir_names_read_as_open_vswitch_names():
    assert parse_rule(f"{NSH},actions=move:nsh_c1[]->reg0[]") == parse_rule(
        f"{NSH},actions=move:NXOXM_NSH_C1[]->NXM_NX_REG0[]")


@pytest.mark.parametrize("text, why", [
    (f"{NSH},actions=multipath(eth_src,0,hrw,3,0,nsh_c3[0..15])", "operand of move, push, pop, output_reg and learn"),
    (f"{NSH},actions=bundle_load(eth_src,0,hrw,ofport,nsh_c1[0..15],members:1)", "operand of move, push, pop, output_reg and learn"),
    (f"{NSH},actions=check_pkt_larger(100)->nsh_flags[0]", "only a bit the rule.s match fixes"),
    (f"{NSH},actions=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:nsh_c1[]->NXM_NX_REG0[])",
     "operand of move, push, pop, output_reg and learn"),
    ("actions=move:nsh_c1[]->reg0[]", "eth_type=0x894f"),  # (Open vSwitch: MATCH_INCONSISTENT)
    (f"{NSH},actions=move:reg0[0..7]->nsh_np[]", "cannot be written"),
])
def test_text_refusals(text, why):
    with pytest.raises(OfctlSyntaxError, match=why):
        parse_rule(text)


def sf(field, ofs, n):
    return Subfield(field, ofs, n)


NSH_MOD = (0x76, FlowMod("add", Rule(Match.of(eth_type=0x894F, nsh_mdtype=1), (ApplyActions((
    MoveField(sf("nsh_c1", 0, 32), sf("reg0", 0, 32)),
    MoveField(sf("reg0", 0, 8), sf("nsh_si", 0, 8)),
    StackPush(sf("nsh_spi", 0, 24)),
    StackPop(sf("nsh_c2", 8, 24)),
    Output(2))),), priority=13)),
    ["move:NXOXM_NSH_C1[]->NXM_NX_REG0[]", "move:NXM_NX_REG0[0..7]->NXOXM_NSH_SI[]", "push:NXOXM_NSH_SPI[]",
     "pop:NXOXM_NSH_C2[8..31]", "output:2"])


def test_flow_mod_matches_its_golden_bytes():
    """The move's headers are 8 + 4 bytes (32 in all, padded); a push/pop stays 24 bytes."""
    xid, mod, _ = NSH_MOD
    raw = golden("flow_mod_nsh_operands")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert "ffff0c08005ad650" in raw.hex() and "ffff0808005ad650" in raw.hex()  # (NSH_C1, NSH_SPI headers)


def test_open_vswitch_reads_the_golden_bytes_as_the_same_flow():
    out = ofp_print(golden("flow_mod_nsh_operands"))
    for piece in NSH_MOD[2]:
        assert piece in out, (piece, out)
