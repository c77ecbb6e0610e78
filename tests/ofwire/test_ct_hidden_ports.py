"""ct_tp_src / ct_tp_dst without ct_nw_proto, as Open vSwitch 3.1 handles them: a
FLOW_MOD carrying them is accepted and the rule matches them (OVS's classifier
compares them), but FLOW_STATS and FLOW_REMOVED leave them out (OVS writes them
only after a nonzero ct_nw_proto), and ovs-ofctl text written without ct_nw_proto
loses them (ovs-ofctl encodes what it sends the same way). Tandem's text keeps
them (the rule means what it says, as on the wire), so the oracles send such rules
as FLOW_MODs (testing/ovs_flows.py). rules/ct_shown.py."""

from __future__ import annotations

import struct

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ct_shown import ct_ports_hidden, shown_match
from tandem.rules.ir import ApplyActions, Ct, FlowMod, Match, Output, Rule
from tandem.rules.ofctl import format_rule, parse_dumped_flow, parse_rule
from tandem.rules.packets import build_frame

TRK_VALID = (0x20, 0x30)
HIDDEN = Rule(Match.of(eth_type=0x0800, ct_state=TRK_VALID, ct_tp_dst=80), (ApplyActions((Output(2),)),), 1, 100)


def test_the_wire_keeps_the_field_and_flow_stats_leave_it_out():
    raw = M.encode_flow_mod(7, FlowMod("add", HIDDEN))
    assert M.decode_flow_mod(raw[8:]).mod.rule == HIDDEN  # accepted, and matched as sent
    shown = S.decode_flow_stats(S.encode_flow_stats(S.FlowStatsEntry(HIDDEN)))[0].rule
    assert shown.match == Match.of(eth_type=0x0800, ct_state=TRK_VALID)
    removed = M.decode_flow_removed(M.encode_flow_removed(3, M.WireFlowRemoved(HIDDEN, 0, 0, 0, 0, 0))[8:])
    assert removed.rule.match == shown.match
    # with a nonzero ct_nw_proto everything shows
    full = Match.of(eth_type=0x0800, ct_state=TRK_VALID, ct_nw_proto=6, ct_tp_src=(0x400, 0xFF00), ct_tp_dst=80)
    assert not ct_ports_hidden(full) and shown_match(full) == full
    assert ct_ports_hidden(Match.of(ct_state=TRK_VALID, ct_nw_proto=0, ct_tp_src=5))


def test_text_keeps_the_ports_and_the_oracles_send_such_rules_as_flow_mods():
    from tandem.testing.ovs_flows import needs_wire

    text = "ct_state=+trk-inv,ip,ct_tp_dst=80,actions=output:1"
    rule = parse_rule(text)
    assert rule.match.get("ct_tp_dst").value == 80 and format_rule(rule) == format_rule(parse_rule(format_rule(rule)))
    assert needs_wire(rule)  # ovs-ofctl would drop the field from what it sends
    assert not needs_wire(parse_rule("ct_state=+trk-inv,ip,ct_nw_proto=6,ct_tp_dst=80,actions=1"))


@pytest.mark.ovs
def test_open_vswitch_matches_the_hidden_ports_and_shows_the_same_flows():
    from tandem.dataplane.switch import Switch
    from tandem.testing.ovs_flows import add_rules

    table0 = Rule(Match.of(eth_type=0x0800), (ApplyActions((Ct(table=1),)),), 0, 1)
    frames = [build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1000, udp_dst=d) for d in (80, 1234)]
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2])
        add_rules(sb, "br0", [table0, HIDDEN])  # HIDDEN goes as a FLOW_MOD: ovs-ofctl would drop ct_tp_dst
        sb.add_flows("br0", ["table=2,ct_tp_src=85,actions=1"])  # ovs-ofctl's text: dropped before any check
        dumped = sorted(format_rule(parse_dumped_flow(x)) for x in sb.dump_flows("br0"))
        sb.inject("br0", 1, frames)
        sb.settle()
        got = [f[36:38] for f in sb.take_output("br0", 2)]
    shown = [table0, S.decode_flow_stats(S.encode_flow_stats(S.FlowStatsEntry(HIDDEN)))[0].rule,
             Rule(Match(), (ApplyActions((Output(1),)),), 2, 0x8000)]
    assert dumped == sorted(format_rule(r) for r in shown)
    assert got == [struct.pack("!H", 80)]  # the rule matched ct_tp_dst=80: the other connection missed
    sw = Switch([1, 2], 3)
    sw.add_rules([table0, HIDDEN])
    assert [[p for p, _ in sw.process(1, f)] for f in frames] == [[2], []]
