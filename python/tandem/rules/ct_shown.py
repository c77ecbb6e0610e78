"""What Open vSwitch shows of a connection-tracking match. Open vSwitch 3.1 keeps
``ct_tp_src`` / ``ct_tp_dst`` in a rule's match whatever else it matches (its
classifier compares them), but its OpenFlow encoder writes them only after a
nonzero ``ct_nw_proto``: FLOW_STATS and FLOW_REMOVED leave them out, and
``ovs-ofctl`` (which encodes the flows it sends the same way) drops them from
``ct_tp_dst=80`` written without ``ct_nw_proto``. Tandem's text keeps them (the rule
means what it says, as on the wire); the oracles send such rules as FLOW_MODs
(``testing/ovs_flows.needs_wire``). Pure."""

from __future__ import annotations

from .ir import CT_PORT_FIELDS, Match


def ct_ports_hidden(match: Match) -> bool:
    """Does ``match`` have ct_tp_src / ct_tp_dst that Open vSwitch would not show
    (no ct_nw_proto, or ct_nw_proto 0)?"""
    if match.get("ct_tp_src") is None and match.get("ct_tp_dst") is None:
        return False
    proto = match.get("ct_nw_proto")
    return proto is None or proto.value == 0


def shown_match(match: Match) -> Match:
    """``match`` as Open vSwitch's FLOW_STATS / FLOW_REMOVED show it."""
    if not ct_ports_hidden(match):
        return match
    for key in CT_PORT_FIELDS:
        match = match.without(key)
    return match
