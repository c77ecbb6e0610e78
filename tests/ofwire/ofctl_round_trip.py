"""One check for ovs-ofctl text that tests of each Nicira action share: the text
parses, prints back to the same rule, crosses the wire unchanged, and Open vSwitch's
own ``ovs-ofctl parse-flow`` takes what Tandem prints (``make test`` installs it)."""

from __future__ import annotations

import subprocess

from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import format_rule, parse_rule


def assert_text_round_trip_and_ovs_takes_it(text: str) -> None:
    rule = parse_rule(text)
    printed = format_rule(rule)
    assert parse_rule(printed) == rule
    assert M.decode_flow_mod(M.encode_flow_mod(1, FlowMod("add", rule))[8:]).mod.rule == rule
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", printed], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
