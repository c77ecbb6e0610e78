"""Open vSwitch's controller(reason=…,max_len=…,id=…,userdata=…) action: ovs-ofctl
text both ways, and the wire (NXAST_CONTROLLER, NXAST_CONTROLLER2 with its
properties). The golden bytes are Open vSwitch 3.1's own encoding of the same
actions (``ovs-ofctl parse-flow`` of them inside write_actions, which it refuses
and so dumps as hex); ``ovs-ofctl ofp-print`` must read Tandem's flow mod back as
the same actions. pause: test_ofwire_controller_pause.py; meter_id and reasons above 5:
test_ofwire_controller_meter.py."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import OFPP_CONTROLLER, ApplyActions, Controller, FlowMod, Match, Output, Rule
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule

GOLDEN = Path(__file__).parent / "golden"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

TEXT = ("controller(reason=action_set,max_len=60,id=7,userdata=aa.bb.cc.dd.ee),controller(reason=no_match,max_len=100,id=3),"
        "controller(reason=group,userdata=01.02.03),controller(id=9),controller(reason=packet_out,max_len=10),"
        "controller(reason=invalid_ttl,userdata=00.01.02.03.04.05.06.07.08.09.0a.0b)")
ACTIONS = (Controller(60, 7, 3, bytes.fromhex("aabbccddee")), Controller(100, 3, 0), Controller(reason=4, userdata=b"\1\2\3"),
           Controller(controller_id=9), Controller(10, reason=5), Controller(reason=2, userdata=bytes(range(12))))


def ovs_encoding(text: str) -> bytes:
    """Open vSwitch's bytes of an action list (its FLOW_MOD's instruction, read from its hex dump)."""
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", f"actions=write_actions({text})"],
                         capture_output=True, text=True).stdout
    raw = bytes.fromhex("".join(line[10:58].replace("-", " ").replace(" ", "") for line in out.splitlines()
                                if line[:8].isalnum() and line[8:10] == "  "))
    return raw[48 + 8 + 8:]  # header + fixed part, the empty match, the write_actions header


def ovs_printed(text: str) -> str:
    """The actions as ovs-ofctl prints them back after reading ``text``."""
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", "actions=" + text], capture_output=True,
                         text=True, check=True).stdout
    return out.strip().split("actions=", 1)[1]


def test_text_reads_and_prints_as_ovs_ofctl_does():
    r = parse_rule("actions=" + TEXT)
    assert r.instructions[0].actions == ACTIONS
    assert format_rule(r).split("actions=")[1] == TEXT
    # the default reason and id with no userdata is an output to CONTROLLER, as ovs-ofctl reads it
    assert parse_rule("actions=controller(max_len=5)").instructions[0].actions == (Output(OFPP_CONTROLLER, 5),)
    assert parse_rule("actions=controller(id=0,reason=action)").instructions[0].actions == (Output(OFPP_CONTROLLER),)


@pytest.mark.parametrize("text, why", [
    ("controller(reason=bogus)", "bogus"),
    ("controller(userdata=0)", "hex bytes"), ("controller(colour=1)", "unknown argument"),
])
def test_text_refusals_are_one_precise_error(text, why):
    with pytest.raises(OfctlSyntaxError, match=why):
        parse_rule("actions=" + text)


@needs_ofctl
def test_ovs_ofctl_prints_the_same_text():
    assert ovs_printed(TEXT) == TEXT


def test_wire_matches_the_golden_bytes_and_reads_back():
    gold = bytes.fromhex((GOLDEN / "actions_nx_controller.hex").read_text().strip())
    assert W.encode_actions(ACTIONS) == gold
    assert tuple(W.decode_actions(gold)) == ACTIONS


@needs_ofctl
def test_golden_bytes_are_open_vswitchs_own_encoding():
    gold = bytes.fromhex((GOLDEN / "actions_nx_controller.hex").read_text().strip())
    assert ovs_encoding(TEXT) == gold


@needs_ofctl
def test_open_vswitch_reads_the_flow_mod_back_as_the_same_actions():
    raw = M.encode_flow_mod(7, FlowMod("add", Rule(Match(()), (ApplyActions(ACTIONS),), priority=3)))
    out = subprocess.run(["ovs-ofctl", "ofp-print", raw.hex()], capture_output=True, text=True, check=True).stdout
    assert "actions=" + TEXT in out


def test_nicira_controller_keeps_the_action_it_came_as():
    plain = struct.pack("!HHIHHHBx", 0xFFFF, 16, 0x2320, 20, 0xFFFF, 0, 1)  # NXAST_CONTROLLER, defaults
    empty2 = struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 37)  # NXAST_CONTROLLER2, no properties
    acts = W.decode_actions(plain + empty2)
    assert acts == [Controller(subtype=20), Controller(subtype=37)]
    assert W.encode_actions(acts) == plain + empty2


def _c2(*props: bytes) -> bytes:
    body = struct.pack("!IH6x", 0x2320, 37) + b"".join(props)
    return struct.pack("!HH", 0xFFFF, 4 + len(body)) + body


@pytest.mark.parametrize("raw, code", [
    (_c2(struct.pack("!HHH2x", 0, 6, 9)), 1),  # a u16 property of 2 bytes (OVS: 4): BAD_LEN
])
def test_wire_refusals(raw, code):
    with pytest.raises(W.OFError) as e:
        W.decode_actions(raw)
    assert (e.value.etype, e.value.code) == (2, code)
