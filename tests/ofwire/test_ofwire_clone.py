"""Open vSwitch's ``clone(actions)`` (NXAST_CLONE) and ``output(port=P,max_len=N)``
(NXAST_OUTPUT_TRUNC) on the wire and in ovs-ofctl text.
The golden files ``flow_mod_nx_clone.hex`` and ``flow_mod_nx_output_trunc.hex`` are Tandem's own encoding (written by
``make_golden_clone.py``); Open vSwitch confirms their meaning (``ovs-ofctl ofp-print``
must read each as the flow named here)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import (
    OFPP_IN_PORT, OFPP_LOCAL, OFPP_TABLE, OutputReg, ApplyActions, CheckPktLarger, Clone, DecTtl, OutputTrunc, FlowMod, GotoTable, Match, MoveField, Output, PushVlan, Resubmit, Rule, RuleError,
    SetField, StackPush, Subfield,
    Ct,
)
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule

GOLDEN = Path(__file__).parent / "golden"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

# name -> (xid, flow mod, pieces ovs-ofctl ofp-print must show)
CLONE_FLOW_MODS = {
    "flow_mod_nx_clone": (0x93, FlowMod("add", Rule(
        Match.of(eth_type=0x0800),
        (ApplyActions((Clone((PushVlan(), SetField("vlan_vid", 0x1064), Output(1))),
                       Clone((Clone((DecTtl(), Output(3))), SetField("reg0", 5, 0xFF), Resubmit(table=2),
                              StackPush(Subfield("reg0", 0, 8)))),
                       Clone(()), MoveField(Subfield("reg0", 0, 8), Subfield("reg1", 8, 8)), Output(2))),
         GotoTable(3)), table=1, priority=9)),
        ["table:1", "priority=9,ip", "clone(push_vlan:0x8100,set_field:4196->vlan_vid,output:1),"
         "clone(clone(dec_ttl,output:3),set_field:0x5/0xff->reg0,resubmit(,2),push:NXM_NX_REG0[0..7]),clone(drop),"
         "move:NXM_NX_REG0[0..7]->NXM_NX_REG1[8..15],output:2", "goto_table:3"]),
    # output(port=P,max_len=N) (NXAST_OUTPUT_TRUNC): a port, IN_PORT and LOCAL as 16-bit ports, and one in a clone
    "flow_mod_nx_output_trunc": (0x94, FlowMod("add", Rule(
        Match.of(in_port=1),
        (ApplyActions((PushVlan(), OutputTrunc(2, 20), OutputTrunc(OFPP_IN_PORT, 14), OutputTrunc(OFPP_LOCAL, 1500),
                       Clone((OutputTrunc(3, 60),)), Output(4))),), priority=7)),
        ["priority=7,in_port=1", "push_vlan:0x8100,output(port=2,max_len=20),output(port=IN_PORT,max_len=14),"
         "output(port=LOCAL,max_len=1500),clone(output(port=3,max_len=60)),output:4"]),
}
# a move reading in_port inside a clone (item clone_in_port: OneSwitch pins it per copy)
CLONE_FLOW_MODS["flow_mod_nx_clone_in_port"] = (0x97, FlowMod("add", Rule(
    Match(), (ApplyActions((Clone((MoveField(Subfield("in_port", 0, 16), Subfield("eth_src", 0, 16)), Output(2))),
                            Output(3))),), priority=11)),
    ["priority=11", "clone(move:OXM_OF_IN_PORT[0..15]->NXM_OF_ETH_SRC[0..15],output:2),output:3"])
# clone_resubmit, clone_output_reg: lookups and an output_reg inside a clone (OneSwitch translates them)
CLONE_FLOW_MODS["flow_mod_nx_clone_resubmit"] = (0x9A, FlowMod("add", Rule(
    Match(), (ApplyActions((Clone((SetField("reg0", 7), Resubmit(table=1), Output(OFPP_TABLE))), Resubmit(2, 1))),),
    priority=12)), ["priority=12", "clone(set_field:0x7->reg0,resubmit(,1),TABLE),resubmit(2,1)"])
CLONE_FLOW_MODS["flow_mod_nx_clone_output_reg"] = (0x9B, FlowMod("add", Rule(
    Match(), (ApplyActions((SetField("reg0", 2, 0xFFFF), Clone((OutputReg(Subfield("reg0", 0, 16)),)), Output(3))),),
    priority=13)), ["priority=13", "set_field:0x2/0xffff->reg0,clone(output:NXM_NX_REG0[0..15]),output:3"])


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


@pytest.mark.parametrize("name", sorted(CLONE_FLOW_MODS))
def test_clone_flow_mod_matches_its_golden_bytes(name):
    xid, mod, _ = CLONE_FLOW_MODS[name]
    raw = golden(name)
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod


@needs_ofctl
@pytest.mark.parametrize("name", sorted(CLONE_FLOW_MODS))
def test_open_vswitch_reads_the_clone_golden_bytes_as_the_same_flow(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden(name).hex()], capture_output=True, text=True, check=True).stdout
    assert "error" not in out, out
    for piece in CLONE_FLOW_MODS[name][2]:
        assert piece in out, (piece, out)


def test_nxast_clone_layout():
    """Nicira header with subtype 42, six zero bytes, the nested list (16 + its bytes long)."""
    raw = W.encode_actions([Clone((Output(5),))])
    assert raw[:16] == struct.pack("!HHIH6x", 0xFFFF, 32, 0x2320, 42)
    assert raw[16:] == W.encode_actions([Output(5)])
    assert W.encode_actions([Clone(())]) == struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 42)


def _clone(nested: bytes) -> bytes:
    return struct.pack("!HHIH6x", 0xFFFF, 16 + len(nested), 0x2320, 42) + nested


def test_forks_inside_clone_golden_bytes_round_trip():
    """check_pkt_larger (NXAST 49: pkt_len, the destination's ofs/n_bits and header) and
    ct(table=T) (NXAST 35) inside NXAST_CLONE (42), read back as written."""
    check = CheckPktLarger(100, Subfield("reg0", 0, 1))
    check_raw = struct.pack("!HHIHHHI6x", 0xFFFF, 24, 0x2320, 49, 100, 0, 0x00010004)
    assert W.encode_actions([check]) == check_raw
    ct = Ct(table=2, zone=1)
    ct_raw = struct.pack("!HHIHHIHB3xH", 0xFFFF, 24, 0x2320, 35, 0, 0, 1, 2, 0)
    assert W.encode_actions([ct]) == ct_raw
    for nested, raw in (((check, Output(2)), check_raw), ((ct, Output(4)), ct_raw)):
        wire = W.encode_actions([Clone(nested)])
        assert wire == _clone(raw + W.encode_actions([nested[1]]))
        assert W._decode_actions(wire) == [Clone(nested)]


@pytest.mark.parametrize("raw, err", [
    (struct.pack("!HHIH6x", 0xFFFF, 8, 0x2320, 42)[:8], (2, 1)),  # cut short (8 bytes): BAD_LEN
    (_clone(struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 99)), (2, 3)),  # an unknown Nicira action inside: BAD_EXP_TYPE
    (_clone(struct.pack("!HHIH6xQQ", 0xFFFF, 32, 0x2320, 22, 1, 1)), (3, 1)),  # write_metadata inside: UNSUP_INST
])
def test_bad_clone_actions_are_refused_with_one_error(raw, err):
    with pytest.raises(W.OFError) as e:
        W._decode_actions(raw)
    assert (e.value.etype, e.value.code) == err, str(e.value)


def test_clone_outside_apply_actions_is_refused_on_the_wire():
    """In write_actions (as Open vSwitch: BAD_TYPE) or a PACKET_OUT (OneSwitch's own limit); a
    bucket takes it (test_ofwire_bucket_forms.py)."""
    with pytest.raises(W.OFError) as e:
        W.decode_actions(_clone(W.encode_actions([Output(1)])))
    assert (e.value.etype, e.value.code) == (2, 0)


TEXTS = [
    "actions=clone(output:1),output:2",
    "ip,actions=clone(push_vlan:0x8100,set_field:4196->vlan_vid,dec_ttl,output:1),output:2",
    "actions=clone(clone(output:1),output:2),clone(drop)",
    "table=1,actions=clone(resubmit(,2),load:0x5->NXM_NX_REG0[0..7],exit),goto_table:2",
    "vlan_tci=0x1000/0x1000,actions=clone(pop_vlan,output:1),set_field:4101->vlan_vid,output:2",
    "ip,actions=clone(ct(commit),output:1),note:01",
]
# clone_resubmit, clone_output_reg, clone_ct, clone_learn
TEXTS += ["actions=clone(set_field:0x7->reg0,resubmit(,1),output:TABLE),resubmit(2,1)",
          "actions=load:0x2->NXM_NX_REG0[0..15],clone(output:NXM_NX_REG0[0..15]),output:3",
          "ip,actions=clone(ct_clear,ct(commit,zone=5,exec(set_field:0x3->ct_mark)),output:1)",
          "actions=clone(learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])),output:1"]
# forks inside clone (dp-core runs them as Open vSwitch does: pipeline/clone.rs, pipeline/recirc.rs)
TEXTS += ["ip,actions=clone(check_pkt_larger(100)->NXM_NX_REG0[0],resubmit(,1),output:2),output:3",
          "ip,actions=clone(set_field:0x3->reg0,ct(table=2,zone=1),output:4),output:3"]


@pytest.mark.parametrize("text", TEXTS)
def test_clone_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("text, why, ovs_refuses", [
    ("actions=write_actions(clone(output:1))", "cannot be written to the action set", True),
    ("actions=clone(push_vlan:0x8100),set_field:4101->vlan_vid", "set_field on vlan_vid needs", True),
    ("actions=clone(pop_vlan)", "pop_vlan needs a VLAN tag", True),
    ("actions=clone(push_mpls:0x8847),set_field:5->mpls_label", "mpls_label needs", True),
    ("actions=clone(goto_table:1)", "goto_table is an instruction", True),
    ("actions=clone(dec_ttl)", "dec_ttl needs ip", True),
    ("actions=clone(output:1", "unbalanced", False),  # (ovs-ofctl closes it silently)
])
def test_clone_text_refusals_are_one_line(text, why, ovs_refuses):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value) and "\n" not in str(e.value).strip(), str(e.value)
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", text], capture_output=True, text=True)
    assert bool(out.returncode or "disallowed action in action set" in out.stderr) == ovs_refuses, out.stdout


def test_clone_ir_takes_the_forks_dp_core_runs_inside():
    check = CheckPktLarger(100, Subfield("reg0", 0, 1))
    assert Clone((check,)).actions == (check,)
    rule = parse_rule("ip,actions=clone(clone(check_pkt_larger(100)->NXM_NX_REG0[0]),ct(table=1))")
    assert type(rule.apply_actions[0].actions[0].actions[0]) is CheckPktLarger
    assert Clone([Output(1)]).actions == (Output(1),)


def test_clone_goldens_use_every_item_of_this_file():
    from tandem.testing.of13_oracle import CLONE_ITEMS, rule_items

    used = set().union(*(rule_items(mod.rule) for _, mod, _ in CLONE_FLOW_MODS.values()))
    assert set(CLONE_ITEMS) <= used
    from tandem.testing.of13_oracle import CLONE_IN_PORT_ITEMS

    assert set(CLONE_IN_PORT_ITEMS) <= used
    assert {"clone_resubmit", "clone_output_reg"} <= used


def test_nxast_output_trunc_layout_and_refusals():
    """Nicira header with subtype 39, the port in 16 bits (0xfff8 IN_PORT), max_len in 32: 16 bytes;
    as Open vSwitch refuses them: a port 0xff00..0xfff7, max_len below 14, another length."""
    raw = W.encode_actions([OutputTrunc(OFPP_IN_PORT, 100)])
    assert raw == struct.pack("!HHIHHI", 0xFFFF, 16, 0x2320, 39, 0xFFF8, 100)
    assert W._decode_actions(raw) == [OutputTrunc(OFPP_IN_PORT, 100)]
    for bad, err in [(struct.pack("!HHIHHI", 0xFFFF, 16, 0x2320, 39, 0xFF00, 100), (2, 4)),
                     (struct.pack("!HHIHHI", 0xFFFF, 16, 0x2320, 39, 2, 13), (2, 5)),
                     (struct.pack("!HHIHHI4x", 0xFFFF, 24, 0x2320, 39, 2, 100), (2, 1))]:
        with pytest.raises(W.OFError) as e:
            W._decode_actions(bad)
        assert (e.value.etype, e.value.code) == err


@pytest.mark.parametrize("text", [
    "actions=output(port=2,max_len=20)",
    "in_port=1,actions=push_vlan:0x8100,output(port=2,max_len=14),output(port=IN_PORT,max_len=100),output:3",
    "actions=clone(output(port=LOCAL,max_len=1500)),output(port=3,max_len=0x40)",
])
def test_output_trunc_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("text, why", [
    ("actions=output(port=FLOOD,max_len=20)", "unsupported truncate port: FLOOD"),
    ("actions=output(port=2,max_len=10)", "max_len is 14"),
    ("actions=write_actions(output(port=2,max_len=20))", "cannot be written to the action set"),
])
def test_output_trunc_text_refusals_are_one_line_as_open_vswitch(text, why):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value) and "\n" not in str(e.value).strip(), str(e.value)
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", text], capture_output=True, text=True)
    assert out.returncode or "disallowed action in action set" in out.stderr, out.stdout
