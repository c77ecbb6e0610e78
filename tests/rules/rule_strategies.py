"""Hypothesis strategies for arbitrary IR rules: full-width values, arbitrary
masks, every action and instruction, POF parts. Shared by the round-trip and
the OVS tests: ``rules(ovs=True)`` stays inside what OVS 3.1 can load (16-bit
ports, 8-bit arp_op, IPv6 masks OVS's text parser reads, vlan_vid values with
the present bit, no POF, no groups, no timeouts) but may still break action
prerequisites (filter with ``prereq.rule_problems``)."""

from __future__ import annotations

from hypothesis import strategies as st

from tandem.rules.ir import (
    ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, FIELDS, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT,
    OFPP_LOCAL, ApplyActions, ClearActions, DecTtl, FieldMatch, GotoTable, GroupAction, Match, Output, PofAddField,
    PofDelField, PofField, PopVlan, PushVlan, Rule, SetField, WriteActions, WriteMetadata,
)



def _field_match(field: str, ovs: bool) -> st.SearchStrategy[FieldMatch]:
    bits = FIELDS[field].bits
    full = (1 << bits) - 1
    if ovs and field == "in_port":
        return st.integers(1, 0xFEFF).map(FieldMatch)
    if ovs and field == "arp_op":
        return st.integers(0, 0xFF).map(FieldMatch)
    exact = st.integers(0, full).map(FieldMatch)
    if not FIELDS[field].maskable:
        return exact
    masks = st.integers(1, full - 1)
    if ovs and bits == 128:  # OVS reads "addr/7fff::" as a prefix length; keep the first group ffff
        masks = masks.map(lambda m: m | (0xFFFF << 112)).filter(lambda m: m != full)
    masked = st.tuples(st.integers(0, full), masks).map(lambda vm: FieldMatch(vm[0] & vm[1], vm[1]))
    return st.one_of(exact, masked)


_PROTO_FIELDS = {
    ETH_TYPE_IPV4: ["ipv4_src", "ipv4_dst", "ip_dscp", "ip_ecn"],
    ETH_TYPE_IPV6: ["ipv6_src", "ipv6_dst", "ip_dscp", "ip_ecn"],
    ETH_TYPE_ARP: ["arp_op", "arp_spa", "arp_tpa"],
    ETH_TYPE_MPLS: ["mpls_label"],
}
_L4 = {6: ["tcp_src", "tcp_dst"], 17: ["udp_src", "udp_dst"], 1: ["icmpv4_type", "icmpv4_code"], 47: [], 132: []}


@st.composite
def matches(draw: st.DrawFn, ovs: bool = False) -> Match:
    items: dict[object, FieldMatch] = {}

    def maybe(field: str) -> None:
        if draw(st.booleans()):
            items[field] = draw(_field_match(field, ovs))

    for f in ("in_port", "metadata", "eth_src", "eth_dst"):
        maybe(f)
    vlan = draw(st.sampled_from(["none", "untagged", "any", "vid", "masked"]))
    if vlan != "none":
        vid = draw(st.integers(0, 4095))
        items["vlan_vid"] = {"untagged": FieldMatch(0), "any": FieldMatch(0x1000, 0x1000), "vid": FieldMatch(0x1000 | vid),
                             "masked": FieldMatch(0x1000 | (vid & 0xF00), 0x1F00)}[vlan]
        if vlan != "untagged" and draw(st.booleans()):
            items["vlan_pcp"] = FieldMatch(draw(st.integers(0, 7)))
    eth = draw(st.sampled_from([None, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_ARP, ETH_TYPE_MPLS, 0x88CC]))
    if eth is not None:
        items["eth_type"] = FieldMatch(eth)
        for f in _PROTO_FIELDS.get(eth, []):
            maybe(f)
        if eth in (ETH_TYPE_IPV4, ETH_TYPE_IPV6) and draw(st.booleans()):
            proto = draw(st.sampled_from([6, 17, 47, 132] + ([1] if eth == ETH_TYPE_IPV4 else [58])))
            items["ip_proto"] = FieldMatch(proto)
            for f in _L4.get(proto, []):
                maybe(f)
    for _ in range(0 if ovs else draw(st.integers(0, 2))):
        off, length = draw(st.integers(0, 1000)), draw(st.integers(1, 128))
        key = PofField(off, length)
        if key not in items:
            v = draw(st.integers(0, (1 << length) - 1))
            items[key] = FieldMatch(v) if draw(st.booleans()) or length == 1 else FieldMatch(v & 1, 1)
    return Match(tuple(items.items()))  # type: ignore[arg-type]


_RESERVED = st.sampled_from([OFPP_IN_PORT, OFPP_FLOOD, OFPP_LOCAL])
_SETTABLE = ["eth_src", "eth_dst", "vlan_vid", "vlan_pcp", "ip_dscp", "ipv4_src", "ipv6_dst", "tcp_dst", "udp_src",
             "icmpv4_type", "arp_spa", "mpls_label"]


def _set_field(field: str, ovs: bool) -> st.SearchStrategy[SetField]:
    values = st.integers(0, (1 << FIELDS[field].bits) - 1)
    if ovs and field == "vlan_vid":
        values = st.integers(0, 0xFFF).map(lambda v: v | 0x1000)
    return values.map(lambda v: SetField(field, v))


def actions(ovs: bool = False) -> st.SearchStrategy:
    ports = st.one_of(st.integers(1, 0xFEFF) if ovs else st.integers(0, 0xFFFFFEFF), _RESERVED)
    choices = [
        ports.map(Output),
        st.integers(0, 0xFFFF).map(lambda n: Output(OFPP_CONTROLLER, n)),
        st.sampled_from([PushVlan(0x8100), PushVlan(0x88A8), PopVlan(), DecTtl()]),
        st.sampled_from(_SETTABLE).flatmap(lambda f: _set_field(f, ovs)),
    ]
    if not ovs:
        choices += [
            st.integers(0, 2**32 - 1).map(GroupAction),
            st.tuples(st.integers(0, 500), st.integers(1, 64)).flatmap(
                lambda ol: st.integers(0, (1 << ol[1]) - 1).flatmap(lambda v: st.sampled_from(
                    [PofAddField(ol[0], ol[1], v), PofDelField(ol[0], ol[1]), SetField(PofField(ol[0], ol[1]), v)]))),
        ]
    return st.one_of(*choices)


@st.composite
def rules(draw: st.DrawFn, ovs: bool = False) -> Rule:
    table = draw(st.integers(0, 253))
    ins: list = []
    acts = draw(st.lists(actions(ovs), max_size=5))
    if acts:
        ins.append(ApplyActions(tuple(acts)))
    if draw(st.booleans()):
        ins.append(ClearActions())
    wacts = draw(st.lists(actions(ovs), max_size=3))
    if wacts:
        ins.append(WriteActions(tuple(wacts)))
    if draw(st.booleans()):
        mask = draw(st.integers(1, 2**64 - 1))
        ins.append(WriteMetadata(draw(st.integers(0, 2**64 - 1)) & mask, mask))
    if draw(st.booleans()):
        ins.append(GotoTable(draw(st.integers(table + 1, 254))))
    timeout = st.just(0) if ovs else st.integers(0, 65535)
    return Rule(match=draw(matches(ovs)), instructions=tuple(ins), table=table, priority=draw(st.integers(0, 65535)),
                cookie=draw(st.integers(0, 2**64 - 1)), idle_timeout=draw(timeout), hard_timeout=draw(timeout))
