"""Open vSwitch's ``fin_timeout(idle_timeout=I,hard_timeout=H)`` (NXAST_FIN_TIMEOUT)
in the rule IR, ovs-ofctl text and the wire: text round trips as ovs-ofctl 3.1
prints it, golden bytes that ``ovs-ofctl ofp-print`` reads as the same flow, a
wrong length refused, dp-core running it, and the ``tcp`` prerequisite Open
vSwitch 3.1 enforces in OpenFlow 1.3 (in text and, through the endpoint, on the
wire: BAD_ACTION/MATCH_INCONSISTENT; tests/oneswitch/test_fin_timeouts.py)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tandem._dp import Pipeline
from tandem.dataplane.convert import action_args, rule_args
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FinTimeout, FlowMod, RuleError
from tandem.rules.ofctl import format_rule, parse_rule
from tandem.rules.ofctl_lex import OfctlSyntaxError

GOLDEN = Path(__file__).parent / "golden" / "flow_mod_nx_fin_timeout.hex"
TEXT = "table=1,priority=22,cookie=0x22,tcp,tp_dst=80,actions=fin_timeout(idle_timeout=5,hard_timeout=10),output:2"


@pytest.mark.parametrize("text", [
    "table=0,priority=32768,tcp,actions=fin_timeout(idle_timeout=5,hard_timeout=10),output:2",
    "table=0,priority=32768,tcp,actions=fin_timeout(hard_timeout=9)",
    "table=0,priority=32768,tcp6,actions=fin_timeout(idle_timeout=65535)",
    "table=0,priority=32768,tcp,actions=fin_timeout()",
])
def test_text_round_trips_as_ovs_ofctl_prints_it(text):
    assert format_rule(parse_rule(text)) == text


def test_text_reads_either_order_and_zero_as_none():
    a = parse_rule("tcp,actions=fin_timeout(hard_timeout=3,idle_timeout=0)").instructions[0].actions[0]
    assert a == FinTimeout(0, 3)


@pytest.mark.parametrize("text, why", [
    ("tcp,actions=fin_timeout(idle=5)", "unknown key 'idle'"),
    ("tcp,actions=fin_timeout(idle_timeout=x)", "is not a decimal number"),
    ("tcp,actions=fin_timeout(hard_timeout=65536)", "does not fit 16 bits"),
    ("tcp,actions=fin_timeout", "needs (idle_timeout=SECONDS,hard_timeout=SECONDS)"),
])
def test_bad_text_gets_one_precise_error(text, why):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert why in str(e.value) and "\n" not in str(e.value).strip()


def test_ir_refuses_a_timeout_beyond_16_bits():
    with pytest.raises(RuleError):
        FinTimeout(idle_timeout=1 << 16)


def test_golden_bytes_and_ovs_reads_them_as_the_same_flow():
    fm = FlowMod("add", parse_rule(TEXT))
    raw = M.encode_flow_mod(0x7F, fm)
    assert raw == bytes.fromhex(GOLDEN.read_text().strip())
    # the action: experimenter header, subtype 19, idle 5, hard 10, two bytes of padding
    assert bytes.fromhex("ffff001000002320" "0013" "0005" "000a" "0000") in raw
    back = M.decode_flow_mod(raw[8:]).mod
    assert back.rule == fm.rule


@pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")
def test_ovs_ofctl_ofp_print_reads_the_golden_bytes():
    out = subprocess.run(["ovs-ofctl", "ofp-print", GOLDEN.read_text().strip()], capture_output=True, text=True,
                         check=True).stdout
    assert "priority=22,tcp,tp_dst=80 cookie:0x22 actions=fin_timeout(idle_timeout=5,hard_timeout=10),output:2" in out


def test_a_wrong_length_is_refused_with_bad_len():
    bad = struct.pack("!HHIHHH2x", 0xFFFF, 24, 0x2320, 19, 5, 10) + bytes(8)
    with pytest.raises(W.OFError) as e:
        W.decode_actions(bad)
    assert (e.value.etype, e.value.code) == (W.OFPET_BAD_ACTION, 1)  # OFPBAC_BAD_LEN


def _tcp(flags: int) -> bytes:
    ip = bytes([0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])
    tcp = bytes([4, 0xD2, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x20, 0, 0, 0, 0, 0])
    return (bytes.fromhex("020000000001020000000009" "0800") + ip + tcp).ljust(60, b"\0")


def test_dp_core_runs_it_a_fin_shrinks_the_rules_timeouts():
    """Through the Python binding: an RST gives the untimed rule hard_timeout=3 (counted
    from its install, as Open vSwitch 3.1 counts it), a SYN does nothing."""
    p = Pipeline(1)
    for port in (1, 2):
        p.add_port(port)
    rule = parse_rule("priority=22,tcp,actions=fin_timeout(hard_timeout=3),output:2")
    assert action_args(rule.instructions[0].actions[0]) == ("fin_timeout", 0, 3)
    p.flow_mod({"command": "add", **rule_args(rule), "send_flow_rem": True})
    p.set_now_ns(10**9)
    p.process(1, _tcp(0x02))  # SYN
    p.set_now_ns(5 * 10**9)
    p.process(1, _tcp(0x02))
    assert p.take_removed() == [] and p.n_rules() == 1
    p.process(1, _tcp(0x14))  # RST|ACK: hard 3 s from the install, long past
    p.set_now_ns(5 * 10**9 + 1)
    p.process(1, _tcp(0x02))
    (removed,) = p.take_removed()
    assert removed[3:7] == ("hard_timeout", 5 * 10**9 + 1, 0, 3)


def test_write_actions_cannot_hold_it():
    with pytest.raises(OfctlSyntaxError, match="cannot be written to the action set"):
        parse_rule("tcp,actions=write_actions(fin_timeout(idle_timeout=5))")


@pytest.mark.parametrize("text", [
    "ip,actions=fin_timeout(idle_timeout=5)",
    "udp,actions=fin_timeout(idle_timeout=5)",
    "actions=fin_timeout(hard_timeout=5)",
    "tcp,actions=push_mpls:0x8847,fin_timeout(idle_timeout=5)",  # (the MPLS payload is opaque then)
    "ip,actions=clone(fin_timeout(idle_timeout=5))",
])
def test_it_needs_tcp_in_the_match_as_ovs_ofctl_says(text):
    """ovs-ofctl 3.1 -O OpenFlow13 refuses each ("none of the usable flow formats ...")."""
    with pytest.raises(OfctlSyntaxError, match="fin_timeout needs tcp in the match"):
        parse_rule(text)


@pytest.mark.parametrize("text", ["tcp6,actions=fin_timeout(idle_timeout=5)",
                                  "ip,ip_proto=6,actions=fin_timeout(hard_timeout=1)",
                                  "tcp,actions=clone(fin_timeout(idle_timeout=1))"])
def test_a_tcp_match_in_any_spelling_takes_it(text):
    assert parse_rule(text).instructions
