"""Open vSwitch's ``learn`` on the wire and in ovs-ofctl text: NXAST_LEARN and NXAST_LEARN2.
The golden files ``flow_mod_learn_*.hex`` are Tandem's own encoding (written by
``make_golden_learn.py``); Open vSwitch confirms their meaning (``ovs-ofctl ofp-print``
must read each as the flow its entry names)."""

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
    LEARN_LOAD, LEARN_MATCH, LEARN_OUTPUT, ApplyActions, FlowMod, Learn, LearnSpec, Match, Output, Rule, Subfield,
)
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule

GOLDEN = Path(__file__).parent / "golden"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

_SWITCH = Learn((LearnSpec(LEARN_MATCH, Subfield("eth_src", 0, 48), dst=Subfield("eth_dst", 0, 48)),
                 LearnSpec(LEARN_OUTPUT, Subfield("in_port", 0, 32))),
                table=2, idle_timeout=30, priority=7, cookie=0x99, delete_learned=True)
_FULL = Learn((LearnSpec(LEARN_MATCH, value=0x0800, dst=Subfield.whole("eth_type")),
               LearnSpec(LEARN_MATCH, Subfield("ipv4_src", 0, 32), dst=Subfield("ipv4_src", 0, 32)),
               LearnSpec(LEARN_MATCH, value=0x12, dst=Subfield("reg2", 4, 8)),
               LearnSpec(LEARN_LOAD, Subfield("in_port", 0, 16), dst=Subfield("reg0", 0, 16)),
               LearnSpec(LEARN_LOAD, value=5, dst=Subfield.whole("reg1"))),
              table=3, hard_timeout=20, fin_idle_timeout=3, fin_hard_timeout=4, send_flow_rem=True,
              limit=10, result_dst=Subfield("reg3", 0, 1))

# name -> (xid, flow mod, pieces ovs-ofctl ofp-print must show)
LEARN_FLOW_MODS = {
    "flow_mod_learn_switch": (0x91, FlowMod("add", Rule(Match.of(), (ApplyActions((_SWITCH, Output(3))),), priority=5)),
        ["learn(table=2,idle_timeout=30,priority=7,delete_learned,cookie=0x99,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],"
         "output:OXM_OF_IN_PORT[]),output:3"]),
    "flow_mod_learn2_limit": (0x92, FlowMod("add", Rule(Match.of(eth_type=0x0800), (ApplyActions((_FULL,)),), table=1)),
        ["table:1", "learn(table=3,hard_timeout=20,fin_idle_timeout=3,fin_hard_timeout=4,send_flow_rem,limit=10,"
         "result_dst=NXM_NX_REG3[0],eth_type=0x800,NXM_OF_IP_SRC[],NXM_NX_REG2[4..11]=0x12,"
         "load:OXM_OF_IN_PORT[0..15]->NXM_NX_REG0[0..15],load:0x5->NXM_NX_REG1[])"]),
}


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


@pytest.mark.parametrize("name", sorted(LEARN_FLOW_MODS))
def test_learn_flow_mod_matches_its_golden_bytes(name):
    xid, mod, _ = LEARN_FLOW_MODS[name]
    raw = golden(name)
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod


@needs_ofctl
@pytest.mark.parametrize("name", sorted(LEARN_FLOW_MODS))
def test_open_vswitch_reads_the_learn_golden_bytes_as_the_same_flow(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden(name).hex()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    for piece in LEARN_FLOW_MODS[name][2]:
        assert piece in out, (piece, out)


def test_nxast_learn_layout():
    """struct nx_action_learn: timeouts, priority, cookie, flags, table, fin timeouts; then
    the specs (header, source, destination) and zero padding to 8 bytes."""
    a = Learn((LearnSpec(LEARN_MATCH, value=0x800, dst=Subfield.whole("eth_type")),
               LearnSpec(LEARN_OUTPUT, Subfield("reg1", 0, 16))), table=4, idle_timeout=1, hard_timeout=2,
              priority=3, cookie=5, delete_learned=True)
    raw = W.encode_action(a)
    head = struct.pack("!HHIHHHHQHBxHH", 0xFFFF, 56, 0x2320, 16, 1, 2, 3, 5, 2, 4, 0, 0)
    eth_type = struct.pack("!HHIH", 1 << 13 | 16, 0x0800, 0x0000_0602, 0)  # immediate -> match NXM_OF_ETH_TYPE
    out = struct.pack("!HIH", 2 << 11 | 16, 0x0001_0204, 0)  # field NXM_NX_REG1[0..15] -> output
    assert raw == head + eth_type + out + bytes(56 - 32 - len(eth_type) - len(out))
    assert W.decode_actions(raw) == [a]
    # limit or result_dst: NXAST_LEARN2, 8 more bytes (and result_dst's header)
    two = W.encode_action(Learn(limit=7))
    assert struct.unpack_from("!H", two, 8)[0] == 45 and struct.unpack_from("!IH", two, 32) == (7, 0)
    for x in (a, Learn(limit=7), Learn(result_dst=Subfield("reg0", 5, 1)), _FULL, _SWITCH):
        assert W.decode_actions(W.encode_action(x)) == [x]


def _learn(flags=0, table=1, specs=b"", subtype=16):
    raw = struct.pack("!HHIHHHHQHBxHH", 0xFFFF, 0, 0x2320, subtype, 0, 0, 0x8000, 0, flags, table, 0, 0) + specs
    raw += bytes(-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


@pytest.mark.parametrize("raw, code", [
    (_learn(flags=8), 5),  # an unknown flag: BAD_ARGUMENT
    (_learn(flags=4), 5),  # write_result in NXAST_LEARN: BAD_ARGUMENT
    (_learn(table=255), 5),
    (_learn(specs=struct.pack("!HIHIH", 40, 0x0001_0004, 0, 0x0000_0602, 0)), 5),  # 40 bits do not fit reg0 at 0: BAD_ARGUMENT
    (_learn(specs=struct.pack("!HH", 1 << 13 | 2 << 11 | 16, 5)), 5),  # an immediate output
    (struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 16), 1),  # cut short: BAD_LEN
])
def test_bad_learn_actions_are_refused_with_one_error(raw, code):
    with pytest.raises(W.OFError) as e:
        W.decode_actions(raw)
    assert (e.value.etype, e.value.code) == (2, code), str(e.value)


TEXTS = [
    "priority=5,actions=learn(table=2,idle_timeout=30,priority=7,cookie=0x99,delete_learned,"
    "NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),output:3",
    "table=1,ip,actions=learn(table=3,hard_timeout=20,fin_idle_timeout=3,fin_hard_timeout=4,send_flow_rem,limit=10,"
    "result_dst=reg3[0],eth_type=0x800,NXM_OF_IP_SRC[],reg2[4..11]=0x12,load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15],"
    "load:5->reg1[])",
    "actions=learn(dl_dst=eth_src,in_port=99,reg0=0x5,metadata=0x7,NXM_NX_REG4[0..3]=reg5[4..7])",
    "udp,actions=learn(table=1,eth_type=0x800,nw_dst=10.0.0.1,ip_proto=17,NXM_OF_UDP_SRC[]=NXM_OF_UDP_DST[]),2",
    "actions=learn(table=4,eth_src=00:11:22:33:44:55,load:NXM_OF_ETH_SRC[0..31]->NXM_NX_REG0[])",
    "actions=learn(table=0,load:0x1->OXM_OF_METADATA[3])",
]


@pytest.mark.parametrize("text", TEXTS)
def test_learn_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("text, why", [
    ("actions=learn(NXM_OF_IP_SRC[])", "ipv4_src needs ip in the match"),
    ("ip,actions=learn(NXM_OF_IP_SRC[])", "learned flow's ipv4_src needs ip"),
    ("ip,actions=learn(NXM_OF_ETH_TYPE[],NXM_OF_IP_SRC[])", "learned flow's ipv4_src needs ip"),
    ("actions=learn(load:0x1->NXM_OF_IP_SRC[])", "learned flow's ipv4_src needs ip"),
    ("actions=learn(table=255)", "table 255"),
    ("actions=learn(NXM_NX_REG0[0..7]=NXM_NX_REG1[])", "8 destination bits"),
    ("actions=learn(result_dst=reg0[0..1])", "one bit"),
    ("actions=write_actions(learn(reg0=5))", "cannot be written to the action set"),
    ("actions=learn(nw_proto=6)", "learned flow's ip_proto needs ip or ipv6"),
    ("actions=learn(bogus=1)", "unknown field"),
])
def test_learn_text_refusals_are_one_line(text, why):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value) and "\n" not in str(e.value).strip()
    if "unknown" not in why:  # Open vSwitch refuses each as well
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", text], capture_output=True, text=True)
        assert out.returncode or "disallowed action in action set" in out.stderr, out.stdout
