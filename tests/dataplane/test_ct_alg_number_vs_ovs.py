"""``ct(alg=N)`` with a number Open vSwitch 3.1 has no ALG for (any NXAST_CT alg but 0,
21 and 69): OVS takes the flow, prints ``alg=N`` and tracks the connection with no
helper (measured on a dummy bridge: ``dpctl/dump-conntrack`` shows no ``helper=``, and
an FTP PORT / 227 / EPRT / 229 or a TFTP request through it expects nothing). dp-core
runs it as a ct without an alg. The conversations and rules are test_ct_alg_vs_ovs's,
with each alg replaced by a number: every packet is ``+new`` or ``+est`` (never
``+rel`` nor the ALG's ``+inv``), in dp-core and, packet by packet, in OVS."""

from __future__ import annotations

import pytest

from test_ct_alg_vs_ovs import CONVERSATIONS, EST, FLOWS, NEW, conversation_against_ovs
from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_rule
from tandem.testing.ovs_flows import add_rules

NUMBERED = [f.replace("alg=ftp", "alg=2121").replace("alg=tftp", "alg=80") for f in FLOWS]


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_dp_core_runs_no_alg_for_an_alg_number(name):
    sw = Switch(list(range(1, 10)), 2, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in NUMBERED])
    for label, frame, _ in CONVERSATIONS[name]():
        got = [p for p, _ in sw.process(1, frame)]
        assert got in ([NEW], [EST]), f"{label}: dp-core sent it to {got} (an ALG ran?)"
    c = sw.counters()
    assert c.get("ct.alg.expected", 0) == c.get("ct.alg.new_related", 0) == c.get("ct.alg.invalid", 0) == 0


@pytest.mark.skipif(not ovs_available(), reason="needs Open vSwitch (make test installs it)")
@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_dp_core_alg_number_conversations_against_ovs(name):
    with OvsSandbox() as sb:
        rounds, (n, frames, bad) = conversation_against_ovs(NUMBERED, name, sb)
        sb.add_bridge("shown")
        add_rules(sb, "shown", [parse_rule(f) for f in NUMBERED])
        shown = sb.dump_flows("shown")
    assert n == len(rounds) and frames >= len(rounds) and bad == []
    assert any("alg=2121" in f for f in shown) and any("alg=80" in f for f in shown), shown
