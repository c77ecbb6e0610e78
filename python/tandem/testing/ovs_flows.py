"""Loading IR rules into a sandbox OVS bridge for the oracles: ``ovs-ofctl
add-flows`` text for every rule it can send in OpenFlow 1.3, OpenFlow 1.3 wire
FLOW_MODs (Tandem's encoding) for the rest — a match with a partly masked VLAN
priority, which only Open vSwitch's NXM_OF_VLAN_TCI header carries (ovs-ofctl's
OpenFlow 1.3 encoder turns ``vlan_tci=V/M`` into OXM VID and PCP fields and loses
the mask), a match with ct_tp_src/dst but no ct_nw_proto, which ovs-ofctl drops
(ct_shown.py), a ct with an alg number (``alg=80``), which ovs-ofctl prints but
does not parse, and a ``set_field:ANY->tun_metadataN`` (tun_metadata.py), which it prints but does not read. I/O: the sandbox's ovs-ofctl and management socket."""

from __future__ import annotations

from typing import Sequence

from tandem.rules.ct_shown import ct_ports_hidden
from tandem.rules.ir import FlowMod, Rule
from tandem.rules.ofctl import format_rule
from tandem.rules.tun_metadata import uses_any


def needs_wire(rule: Rule) -> bool:
    pcp = rule.match.get("vlan_pcp")
    return (pcp is not None and pcp.mask is not None) or ct_ports_hidden(rule.match) or _numbered_alg(rule) or uses_any(rule)


def _numbered_alg(rule: Rule) -> bool:
    from tandem.rules.generate_ct_alg_number import uses_alg_number

    return uses_alg_number(rule)


def add_rules(sb, bridge: str, rules: Sequence[Rule]) -> None:
    text = [format_rule(r) for r in rules if not needs_wire(r)]
    if text:
        sb.add_flows(bridge, text)
    wire = [r for r in rules if needs_wire(r)]
    if wire:
        from tandem.rules.ofwire_msgs import encode_flow_mod

        sb.add_flow_mods(bridge, [encode_flow_mod(i + 1, FlowMod("add", r)) for i, r in enumerate(wire)])
