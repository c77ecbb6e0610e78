"""Seeded random rules (and groups) that are valid IR *and* load into real OVS.

``random_rule(rng, ports, tables, features)`` draws one rule; ``random_ruleset``
draws ``n`` with distinct priorities per table (so no two overlapping rules tie
and OVS never overwrites one with another). Values come from small pools (a few
MACs, subnets, L4 ports, VLANs) so rules overlap and random packets hit them.

Every rule honours match prerequisites (``tcp_dst`` implies ``ip_proto=6`` and
``eth_type=0x0800``/``0x86dd``) and the action prerequisites OVS checks when a
flow is added: set_field on a field needs its protocol in the match, VLAN
set/pop need a tag (matched or pushed), at most two pushed tags, ``dec_ttl``
needs IP. ``prereq.FlowState`` follows the action list to decide this.

``features`` switches parts off (``ALL_FEATURES`` = the common OpenFlow 1.3
set); ``OF13_FEATURES`` adds the rest of what OVS 3.1 accepts in OpenFlow 1.3
(SCTP, ARP SHA/THA, IPv6 flow label, ICMPv6 and ND, MPLS TC/BOS, tunnel_id,
MPLS push/pop/TTL actions, set_nw_ttl, set_queue); ``"pof"`` (POF
matches/actions, Tandem-only), ``"timeouts"`` (flows that expire),
``"wild_ports"`` (in_port and outputs that name LOCAL or a port number no
port has, as Open vSwitch accepts) and ``"action_sets"`` (write_actions in
half the rules: a group, an output to any port or reserved port, or both, so
groups and outputs written in different tables meet) are opt-in. Pure: all
randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .ir import (
    ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, FIELDS, IP_PROTO_ICMP, IP_PROTO_TCP, IP_PROTO_UDP,
    ETH_TYPE_MPLS_MC, IP_PROTO_ICMPV6, IP_PROTO_SCTP, DecMplsTtl, PopMpls, PushMpls, SetMplsTtl, SetNwTtl, SetQueue,
    OFPCML_NO_BUFFER, OFPG_ANY, OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPVID_PRESENT, Action,
    ApplyActions, Bucket, ClearActions, DecTtl, FieldMatch, GotoTable, Group, GroupAction, Instruction, Match,
    Output, PofAddField, PofDelField, PofField, PopVlan, PushVlan, Rule, SetField, WriteActions, WriteMetadata,
)
from .fields import prefix_mask
from .generate_nx import CONJ_FEATURES, CONJ_SHARE, TCI_FEATURES, conj_block, tci_pcp
from .generate_output_reg import OUTPUT_REG_RUNTIME_FEATURE, runtime_output_reg_actions
from .generate_nx import NX_ACTION_FEATURES, NX_FEATURES, NX_SET, OUTPUT_REG_FEATURE, RESUBMIT_FEATURE, match_ip, \
    match_mpls, match_state, match_tcp, nx_actions, nx_mask, nx_value, output_reg_actions, resubmit_action, written_nx, \
    written_resubmit
from .generate_nx import NX_MORE_FEATURES, more_nx_actions
from .generate_controller import CONTROLLER_FEATURE, controller_actions
from .generate_controller import CONTROLLER_PAUSE_FEATURE
from .generate_controller import CONTROLLER_METER_FEATURE
from .generate_fields import FIELD_FEATURES, TUNNEL_FEATURE, match_fields, tunnel_value
from .generate_actset import ACTSET_FEATURE, actset_match, chain_rule
from .generate_nsh import NSH_FEATURE, NSH_OPERAND_FEATURE, nsh_actions, nsh_operand_actions, nsh_value
from .generate_encap import ENCAP_FEATURE, encap_actions
from .generate_encap import repaired as repaired_encaps
from .generate_decap import DECAP_FEATURE, decap_rule
from .generate_tun_metadata import TUN_METADATA_FEATURES, TUN_METADATA_WIDE_FEATURE, tun_metadata_actions
from .generate_tun_metadata import TUN_METADATA_ANY_FEATURE
from .generate_tun_metadata import TUN_METADATA_LONG_FEATURE
from .ir import TUN_METADATA_FIELDS
from .ir import Clone, Decap, EncapEthernet, EncapNsh
from .generate_clone import CLONE_FEATURE, clone_wrapped
from .generate_clone_in_port import CLONE_IN_PORT_FEATURE, in_port_clone
from .generate_clone_lookup import CLONE_LOOKUP_FEATURE, lookup_clone
from .generate_clone_check import CLONE_CHECK_FEATURE, check_clone
from .generate_clone_lookup import CLONE_OUTPUT_REG_FEATURE, output_reg_clone
from .generate_hash import HASH_FEATURES, hash_actions
from .generate_trunc import TRUNC_FEATURE, with_output_trunc
from .generate_table0 import TABLE0_WRITE_FEATURE, written_table0
from .generate_table0 import OUTPUT_REG_TABLE_FEATURE, output_reg_table_actions
from .generate_fin import FIN_FEATURE, with_fin_timeout
from .generate_nsh_ttl import WRITE_NSH_TTL_FEATURE, written_nsh_ttl
from .generate_nsh_ttl_operand import NSH_TTL_OPERAND_FEATURE, nsh_ttl_operand_actions
from .generate_nsh_context import NSH_CONTEXT_FEATURE
from .generate_nsh_ttl_load import NSH_TTL_LOAD_FEATURE, nsh_ttl_load_actions
from .generate_nsh_output_reg import NSH_OUTPUT_REG_FEATURE, nsh_output_reg_actions
from .generate_nsh_learn import NSH_LEARN_RESULT_FEATURE, nsh_learn_result_actions
from .generate_nsh_check_larger import NSH_CHECK_LARGER_FEATURE, with_nsh_check_larger
from .generate_encap_set import WRITE_ENCAP_FEATURE, BaseDraws, split_encap_rule
from .generate_decap_set import WRITE_DECAP_FEATURE, split_decap_rule
from .prereq import FlowState

MATCH_FEATURES = frozenset({"in_port", "eth", "masks", "vlan", "ipv4", "ipv6", "l4", "icmp", "arp", "mpls", "dscp"})
ACTION_FEATURES = frozenset({
    "multi_output", "reserved_ports", "controller", "set_field", "vlan_actions", "dec_ttl", "drop",
    "goto", "metadata", "write_actions", "clear_actions", "groups", "cookie",
})
ALL_FEATURES = MATCH_FEATURES | ACTION_FEATURES
# The rest of OpenFlow 1.3 as OVS 3.1 takes it (opt-in: ALL_FEATURES draws stay as they were).
OF13_MATCH_FEATURES = frozenset({"sctp", "arp_hw", "flabel", "icmpv6", "nd", "mpls_fields", "tunnel_id"})
OF13_ACTION_FEATURES = frozenset({"mpls_actions", "nw_ttl", "set_queue", "set_metadata"})
OF13_FEATURES = OF13_MATCH_FEATURES | OF13_ACTION_FEATURES
# Open vSwitch's extension fields and actions are opt-in too (generate_nx.py draws them).
OPTIONAL_FEATURES = frozenset({"pof", "timeouts", "wild_ports", "action_sets", RESUBMIT_FEATURE, OUTPUT_REG_FEATURE}) \
    | OF13_FEATURES | NX_FEATURES | NX_MORE_FEATURES | CONJ_FEATURES | TCI_FEATURES | {CONTROLLER_FEATURE} | FIELD_FEATURES \
    | {CLONE_FEATURE, TRUNC_FEATURE} | HASH_FEATURES
OPTIONAL_FEATURES |= {OUTPUT_REG_RUNTIME_FEATURE}
OPTIONAL_FEATURES |= {TABLE0_WRITE_FEATURE, OUTPUT_REG_TABLE_FEATURE}
OPTIONAL_FEATURES |= {CLONE_IN_PORT_FEATURE}
OPTIONAL_FEATURES |= {NSH_OPERAND_FEATURE}
OPTIONAL_FEATURES |= {ACTSET_FEATURE}  # actset_output matches (generate_actset.py)
OPTIONAL_FEATURES |= {FIN_FEATURE}  # (fin_timeout)
OPTIONAL_FEATURES |= {ENCAP_FEATURE}  # (encap)
OPTIONAL_FEATURES |= {DECAP_FEATURE}  # (decap)
OPTIONAL_FEATURES |= {CLONE_LOOKUP_FEATURE}  # (clone_resubmit: generate_clone_lookup.py)
OPTIONAL_FEATURES |= {CLONE_OUTPUT_REG_FEATURE}  # (clone_output_reg: generate_clone_lookup.py)
OPTIONAL_FEATURES |= {WRITE_NSH_TTL_FEATURE}  # (write:dec_nsh_ttl: generate_nsh_ttl.py)
OPTIONAL_FEATURES |= {WRITE_ENCAP_FEATURE}  # (write:encap: generate_encap_set.py)
OPTIONAL_FEATURES |= {WRITE_DECAP_FEATURE}  # (write:decap: generate_decap_set.py)
OPTIONAL_FEATURES |= {CONTROLLER_METER_FEATURE}  # ctlr2: controller(meter_id=M) (generate_controller.py)
OPTIONAL_FEATURES |= {CONTROLLER_PAUSE_FEATURE}  # (pause) controller(pause) (generate_controller.py)
OPTIONAL_FEATURES |= {NSH_TTL_OPERAND_FEATURE}  # nsh_ttl_operands (generate_nsh_ttl_operand.py)
OPTIONAL_FEATURES |= {NSH_TTL_LOAD_FEATURE}  # nsh_ttl_loads (generate_nsh_ttl_load.py)
OPTIONAL_FEATURES |= {NSH_OUTPUT_REG_FEATURE}  # nsh_output_reg (generate_nsh_output_reg.py)
OPTIONAL_FEATURES |= {CLONE_CHECK_FEATURE}  # (clone_check: generate_clone_check.py)
OPTIONAL_FEATURES |= {NSH_CONTEXT_FEATURE}  # match:nsh_context (generate_nsh_context.py)
OPTIONAL_FEATURES |= {NSH_LEARN_RESULT_FEATURE}  # nsh_learn_result (generate_nsh_learn.py)
OPTIONAL_FEATURES |= {NSH_CHECK_LARGER_FEATURE}  # nsh_check_larger (generate_nsh_check_larger.py)
# set_field:ANY->tun_metadataN (the of13 item any:tun_metadata) is a one-way text: ovs-ofctl prints ANY and does not
# read it, so the opt-in sets, whose rules go through ovs-ofctl text (round trips, `tandem rules gen`), leave it out
OPTIONAL_FEATURES -= {TUN_METADATA_ANY_FEATURE}
# Rules for an OVS oracle that wants many action sets: without MPLS, because Open vSwitch
# 3.1 aborts (ofproto-dpif-rid.c:235, recirc_alloc_id__) when it recirculates an MPLS
# packet while an action set is pending.
ACTION_SET_FEATURES = (ALL_FEATURES - {"mpls"}) | {"wild_ports", "action_sets"}
# set_field targets that need an OF13 feature
_OF13_SET = {"sctp_src": "sctp", "sctp_dst": "sctp", "arp_sha": "arp_hw", "arp_tha": "arp_hw",
             "ipv6_flabel": "flabel", "icmpv6_type": "icmpv6", "icmpv6_code": "icmpv6", "ipv6_nd_target": "nd",
             "ipv6_nd_sll": "nd", "ipv6_nd_tll": "nd", "mpls_tc": "mpls_fields", "tunnel_id": "tunnel_id",
             "metadata": "set_metadata"}
_OF13_SET.update({f: TUNNEL_FEATURE for f in ("tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst", "tun_gbp_id", "tun_gbp_flags")})
_OF13_SET.update({f: NSH_FEATURE for f in FIELDS if f.startswith("nsh_")})
_OF13_SET["tun_flags"] = TUNNEL_FEATURE

MAC_POOL = tuple(0x020000000000 | i for i in range(1, 9)) + (0xFFFFFFFFFFFF,)
IPV4_NETS = (0x0A000000, 0x0A000100, 0x0A010000, 0xC0A80000)  # 10.0.0/24, 10.0.1/24, 10.1/16, 192.168/16
IPV6_NETS = (0x20010DB8 << 96, (0x20010DB8 << 96) | (1 << 64), 0xFD00 << 112)
L4_PORTS = (22, 53, 80, 443, 1234, 4789, 8080)
VLAN_IDS = (10, 20, 30, 100)
MPLS_LABELS = (16, 17, 100, 1000)
FLOW_LABELS = (0, 1, 0x12345, 0xFFFFF)
ICMPV6_TYPES = (1, 128, 129, 135, 136)
TUNNEL_IDS = (1, 2, 3, 0x10000)


def _pick_mac(rng: random.Random) -> int:
    return rng.choice(MAC_POOL[:-1])


def _ipv4(rng: random.Random) -> int:
    net = rng.choice(IPV4_NETS)
    return net | rng.choice((1, 2, 3, 10, 254, 0x101))


def _ipv6(rng: random.Random) -> int:
    return rng.choice(IPV6_NETS) | rng.choice((1, 2, 0x10, 0xFFFF))


def _settable(flow: FlowState, features: frozenset[str]) -> list[str]:
    """Fields a set_field may target here (OVS prerequisites and feature switches)."""
    off = set()
    if "vlan" not in features:
        off |= {"vlan_vid", "vlan_pcp"}
    if "dscp" not in features:
        off |= {"ip_dscp", "ip_ecn"}
    off |= {f for f, feat in NX_SET.items() if feat not in features}
    off |= {f for f in FIELDS if f.startswith("reg") and f not in NX_SET}  # a few registers only (generate_nx.REGS)
    off |= {f for f, feat in _OF13_SET.items() if feat not in features}
    off |= set(TUN_METADATA_FIELDS)  # (generate_tun_metadata.py draws those: mapped ones only)
    return [f for f in flow.settable_fields() if f not in off]


def random_value(rng: random.Random, field: str) -> int:
    """A plausible exact value for an IR field, drawn from the pools."""
    nx = nx_value(rng, field)
    if nx is not None:
        return nx
    if field.startswith("tun_"):
        return tunnel_value(rng, field)
    if field.startswith("nsh_"):
        return nsh_value(rng, field)
    if field in ("eth_src", "eth_dst", "arp_sha", "arp_tha", "ipv6_nd_sll", "ipv6_nd_tll"):
        return _pick_mac(rng)
    if field == "ipv6_nd_target":
        return _ipv6(rng)
    if field == "ipv6_flabel":
        return rng.choice(FLOW_LABELS)
    if field == "icmpv6_type":
        return rng.choice(ICMPV6_TYPES)
    if field == "tunnel_id":
        return rng.choice(TUNNEL_IDS)
    if field == "metadata":
        return rng.randrange(1, 16)
    if field.startswith("sctp_"):
        return rng.choice(L4_PORTS)
    if field == "vlan_vid":
        return OFPVID_PRESENT | rng.choice(VLAN_IDS)
    if field in ("ipv4_src", "ipv4_dst", "arp_spa", "arp_tpa"):
        return _ipv4(rng)
    if field in ("ipv6_src", "ipv6_dst"):
        return _ipv6(rng)
    if field.startswith(("tcp_", "udp_")):
        return rng.choice(L4_PORTS)
    if field == "mpls_label":
        return rng.choice(MPLS_LABELS)
    if field == "arp_op":
        return rng.choice((1, 2))
    if field == "icmpv4_type":
        return rng.choice((0, 3, 8, 11))
    return rng.randrange(1 << FIELDS[field].bits)


def _masked(rng: random.Random, field: str, value: int) -> tuple[int, int | None]:
    """Exact, or a mask that is neither empty nor full (those print differently)."""
    bits = FIELDS[field].bits
    if field.startswith("reg") or field in ("pkt_mark", "tcp_flags"):
        mask = nx_mask(rng, field)
    elif field in ("eth_src", "eth_dst", "arp_sha", "arp_tha", "ipv6_nd_sll", "ipv6_nd_tll"):
        mask = rng.choice((0x010000000000, 0xFFFFFFFFFF00, 0xFFFFFFFF0000, 0xFEFFFFFFFFFF))
    elif field == "ipv6_flabel":
        mask = rng.choice((0xFFF00, 0x0000F, 0x80000, 0xFFFFE))
    elif field in ("ipv4_src", "ipv4_dst", "arp_spa", "arp_tpa", "ipv6_src", "ipv6_dst", "ipv6_nd_target"):
        mask = prefix_mask(rng.choice((8, 16, 24, 30) if bits == 32 else (32, 48, 64, 120)), bits)
        if rng.random() < 0.15:
            # A non-contiguous mask. Keep the top 16 bits set: ovs-ofctl 3.1 misreads an
            # IPv6 mask whose text starts with a decimal digit ("7fff::") as a prefix length.
            mask ^= 1 << rng.randrange(bits // 2, bits - 16 if bits == 128 else bits)
    elif field in ("metadata", "tunnel_id"):
        mask = rng.choice((0xFF, 0xFFFF0000, 0xF0F0, 0xFFFFFFFF))
    else:
        mask = rng.choice((0xFFF0, 0xFF00, 0xFFFE, 0x8000)) & ((1 << bits) - 1)
    mask &= (1 << bits) - 1
    if mask in (0, (1 << bits) - 1):
        return value, None
    return value & mask, mask


def _random_match(rng: random.Random, ports: Sequence[int], table: int, features: frozenset[str]) -> Match:
    fields: dict[object, FieldMatch] = {}
    masks = "masks" in features

    def put(field: str, value: int | None = None, maskable_p: float = 0.3) -> None:
        v = random_value(rng, field) if value is None else value
        if masks and FIELDS[field].maskable and rng.random() < maskable_p:
            v, m = _masked(rng, field, v)
            if m is not None:
                fields[field] = FieldMatch(v, m)
                return
        fields[field] = FieldMatch(v)

    if "in_port" in features and ports and rng.random() < 0.6:
        wild = "wild_ports" in features and rng.random() < 0.15
        put("in_port", rng.choice((OFPP_LOCAL, _no_port(ports))) if wild else rng.choice(list(ports)))
    if "eth" in features:
        for f in ("eth_src", "eth_dst"):
            if rng.random() < 0.25:
                put(f)
    if "vlan" in features and rng.random() < 0.3:
        kind = rng.random()
        if kind < 0.5:
            put("vlan_vid", maskable_p=0.0)
        elif kind < 0.75:
            fields["vlan_vid"] = FieldMatch(OFPVID_PRESENT, OFPVID_PRESENT)
        else:
            fields["vlan_vid"] = FieldMatch(0)  # untagged only
        if fields["vlan_vid"].value and rng.random() < 0.3:
            put("vlan_pcp")
            if "nx_vlan_tci" in features and rng.random() < 0.6:  # Open vSwitch's vlan_tci: a partly masked PCP
                fields["vlan_pcp"] = tci_pcp(rng, fields["vlan_pcp"].value)
    protos = [p for p in ("ipv4", "ipv6", "arp", "mpls") if p in features]
    if protos and rng.random() < 0.8:
        _l3_match(rng, rng.choice(protos), features, put, fields)
    if "metadata" in features and table > 0 and rng.random() < 0.4:
        put("metadata", rng.randrange(1, 16), maskable_p=0.5)
    if "tunnel_id" in features and rng.random() < (0.4 if table > 0 else 0.1):
        put("tunnel_id", rng.choice((0,) + TUNNEL_IDS), maskable_p=0.4)
    if features & NX_FEATURES:
        match_state(rng, table, features, lambda f, v, p: put(f, v, maskable_p=p))
    if features & FIELD_FEATURES:
        match_fields(rng, table, features, fields)
    if ACTSET_FEATURE in features:
        actset_match(rng, table, ports, fields)
    if "pof" in features and rng.random() < 0.4:
        off, length = rng.choice(((0, 48), (48, 48), (96, 16), (112, 8), (184, 8), (208, 32)))
        key = PofField(off, length)
        v = rng.randrange(1 << length)
        if masks and rng.random() < 0.5:
            m = rng.randrange(1, 1 << length)
            fields[key] = FieldMatch(v & m, m if m != (1 << length) - 1 else None)
        else:
            fields[key] = FieldMatch(v)
    return Match(tuple(fields.items()))  # type: ignore[arg-type]


def _l3_match(rng: random.Random, proto: str, features: frozenset[str], put, fields: dict) -> None:
    if proto == "arp":
        fields["eth_type"] = FieldMatch(ETH_TYPE_ARP)
        for f in ("arp_op", "arp_spa", "arp_tpa") + (("arp_sha", "arp_tha") if "arp_hw" in features else ()):
            if rng.random() < 0.4:
                put(f)
        return
    if proto == "mpls":
        fields["eth_type"] = FieldMatch(ETH_TYPE_MPLS)
        if rng.random() < 0.7:
            put("mpls_label")
        if "mpls_fields" in features:
            if rng.random() < 0.3:
                put("mpls_tc")
            if rng.random() < 0.4:
                put("mpls_bos", rng.choice((0, 1, 1)))
        match_mpls(rng, features, lambda f, v, p: put(f, v, maskable_p=p))
        return
    v6 = proto == "ipv6"
    fields["eth_type"] = FieldMatch(ETH_TYPE_IPV6 if v6 else ETH_TYPE_IPV4)
    fam = "ipv6" if v6 else "ipv4"
    for f in (f"{fam}_src", f"{fam}_dst"):
        if rng.random() < 0.5:
            put(f, maskable_p=0.5)
    if "dscp" in features and rng.random() < 0.15:
        put("ip_dscp")
    if "dscp" in features and rng.random() < 0.05:
        put("ip_ecn")
    if v6 and "flabel" in features and rng.random() < 0.25:
        put("ipv6_flabel", maskable_p=0.4)
    match_ip(rng, features, fields, lambda f, v, p: put(f, v, maskable_p=p))
    if "ip_frag" in fields:  # (see generate_nx.match_ip)
        if rng.random() < 0.5:
            fields["ip_proto"] = FieldMatch(rng.choice((47, 50)))
        return
    l4 = ["tcp", "udp"] if "l4" in features else []
    if "icmp" in features and not v6:
        l4.append("icmp")
    if "sctp" in features:
        l4.append("sctp")
    if "icmpv6" in features and v6:
        l4.append("icmp6")
    if not l4 or rng.random() < 0.25:
        if rng.random() < 0.2:
            fields["ip_proto"] = FieldMatch(rng.choice((47, 50, 89)))
        return
    kind = rng.choice(l4)
    fields["ip_proto"] = FieldMatch({"tcp": IP_PROTO_TCP, "udp": IP_PROTO_UDP, "icmp": IP_PROTO_ICMP,
                                     "sctp": IP_PROTO_SCTP, "icmp6": IP_PROTO_ICMPV6}[kind])
    if kind == "icmp6":
        if "nd" in features and rng.random() < 0.6:  # neighbour discovery
            nd_type = rng.choice((135, 136))
            fields["icmpv6_type"] = FieldMatch(nd_type)
            if rng.random() < 0.3:
                fields["icmpv6_code"] = FieldMatch(0)
            if rng.random() < 0.6:
                put("ipv6_nd_target", maskable_p=0.3)
            if rng.random() < 0.5:
                put("ipv6_nd_sll" if nd_type == 135 else "ipv6_nd_tll", maskable_p=0.3)
            return
        names: tuple[str, ...] = ("icmpv6_type", "icmpv6_code")
    else:
        names = ("icmpv4_type", "icmpv4_code") if kind == "icmp" else (f"{kind}_src", f"{kind}_dst")
    for f in names:
        if rng.random() < 0.5:
            put(f, maskable_p=0.25)
    if kind == "tcp":
        match_tcp(rng, features, lambda f, v, p: put(f, v, maskable_p=p))


def _no_port(ports: Sequence[int]) -> int:
    """A port number Open vSwitch accepts (0..0xfeff) that no port has."""
    return next(p for p in (77, 0xFEFF, 99, 0) if p not in ports)


def _out_port(rng: random.Random, ports: Sequence[int], features: frozenset[str]) -> Output:
    if "wild_ports" in features and rng.random() < 0.08:
        return Output(rng.choice((OFPP_LOCAL, _no_port(ports))))
    if "reserved_ports" in features and rng.random() < 0.08:
        return Output(rng.choice((OFPP_IN_PORT, OFPP_FLOOD, OFPP_ALL, OFPP_LOCAL)))
    if "controller" in features and rng.random() < 0.05:
        return Output(OFPP_CONTROLLER, rng.choice((OFPCML_NO_BUFFER, 128)))
    return Output(rng.choice(list(ports)))


def _written_port(rng: random.Random, ports: Sequence[int], features: frozenset[str]) -> Output:
    """The output of an ``action_sets`` write_actions: a port, a reserved port, or
    (``wild_ports``) a port number no port has."""
    x = rng.random()
    if x < 0.4:
        return Output(rng.choice(list(ports)))
    if x < 0.85 or "wild_ports" not in features:
        port = rng.choice((OFPP_IN_PORT, OFPP_FLOOD, OFPP_ALL, OFPP_LOCAL, OFPP_CONTROLLER))
        return Output(port, rng.choice((OFPCML_NO_BUFFER, 128)) if port == OFPP_CONTROLLER else OFPCML_NO_BUFFER)
    return Output(_no_port(ports))


def _modifications(rng: random.Random, flow: FlowState, features: frozenset[str], budget: int,
                   table: int = 0, ports: Sequence[int] = (0,)) -> list[Action]:
    acts: list[Action] = []
    for _ in range(budget):
        r = rng.random()
        if "vlan_actions" in features and r < 0.25:
            if flow.vlans and rng.random() < 0.5:
                acts.append(PopVlan())
                flow.vlans -= 1
            elif flow.vlans < 2:
                acts.append(PushVlan(rng.choice((0x8100, 0x8100, 0x88A8))))
                flow.vlans += 1
                acts.append(SetField("vlan_vid", random_value(rng, "vlan_vid")))
        elif "dec_ttl" in features and r < 0.35 and flow.eth_type in (ETH_TYPE_IPV4, ETH_TYPE_IPV6):
            acts.append(DecTtl())
        elif "set_field" in features:
            field = rng.choice(_settable(flow, features))
            acts.append(SetField(field, random_value(rng, field)))
        if "pof" in features and rng.random() < 0.1:
            acts.append(rng.choice((PofAddField(96, 16, 0x88B5), PofDelField(96, 16), SetField(PofField(0, 48), 0x0200000000AA))))
        if features & OF13_ACTION_FEATURES:
            acts += _of13_actions(rng, flow, features, table, acts)
        if features & NX_ACTION_FEATURES:
            acts += nx_actions(rng, flow, features, _settable(flow, features))
        if features & NX_MORE_FEATURES:
            acts += more_nx_actions(rng, flow, features, ports)
        if CONTROLLER_FEATURE in features:
            acts += controller_actions(rng, CONTROLLER_METER_FEATURE in features, CONTROLLER_PAUSE_FEATURE in features)
        if NSH_FEATURE in features:
            acts += nsh_actions(rng, flow)
        if NSH_OPERAND_FEATURE in features:
            acts += nsh_operand_actions(rng, flow)
        if NSH_TTL_OPERAND_FEATURE in features:  # (nsh_ttl_operands: generate_nsh_ttl_operand.py)
            acts += nsh_ttl_operand_actions(rng, flow)
        if NSH_TTL_LOAD_FEATURE in features:  # (nsh_ttl_loads: generate_nsh_ttl_load.py)
            acts += nsh_ttl_load_actions(rng, flow)
        if NSH_OUTPUT_REG_FEATURE in features:  # (nsh_output_reg: generate_nsh_output_reg.py)
            acts += nsh_output_reg_actions(rng, flow, ports)
        if NSH_LEARN_RESULT_FEATURE in features:  # (nsh_learn_result: generate_nsh_learn.py)
            acts += nsh_learn_result_actions(rng, flow)
        if ENCAP_FEATURE in features:
            acts += encap_actions(rng, flow)
        if TUN_METADATA_FEATURES & features and rng.random() < 0.6:
            acts += tun_metadata_actions(rng, wide=TUN_METADATA_WIDE_FEATURE in features,
                                         long=TUN_METADATA_LONG_FEATURE in features,
                                         any_=TUN_METADATA_ANY_FEATURE in features)
    return acts


def _of13_actions(rng: random.Random, flow: FlowState, features: frozenset[str], table: int,
                  acts: list[Action]) -> list[Action]:
    """MPLS push/pop/TTL, set_nw_ttl, set_queue, each valid where drawn (``flow`` is
    updated). The MPLS stack never grows past two entries: a push onto MPLS only
    in table 0 (where frames carry at most one), at most one push per rule; a pop
    names the payload's ethertype only when it is known (this rule pushed onto it)."""
    out: list[Action] = []
    r = rng.random()
    mpls = flow.eth_type in (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC)
    if "set_queue" in features and r < 0.1:
        out.append(SetQueue(rng.choice((0, 1, 7))))
    elif "nw_ttl" in features and r < 0.2 and flow.eth_type in (ETH_TYPE_IPV4, ETH_TYPE_IPV6):
        out.append(SetNwTtl(rng.choice((0, 1, 2, 63, 255))))
    elif "mpls_actions" in features and r < 0.45:
        pushed = any(isinstance(a, PushMpls) for a in acts)
        if not mpls and flow.eth_type is not None and not pushed:
            before = flow.eth_type
            a = PushMpls(rng.choice((ETH_TYPE_MPLS, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC)))
            flow.apply(a)
            out.append(a)
            if rng.random() < 0.5:
                out.append(SetField("mpls_label", random_value(rng, "mpls_label")))
            if rng.random() < 0.3:
                out += [rng.choice((SetMplsTtl(rng.choice((0, 1, 5, 200))), DecMplsTtl()))]
            if rng.random() < 0.3:
                out.append(PopMpls(before))
                flow.apply(out[-1])
        elif mpls and table == 0 and not pushed and rng.random() < 0.3:
            a = PushMpls(ETH_TYPE_MPLS)
            flow.apply(a)
            out.append(a)
        elif mpls:
            out.append(rng.choice((SetMplsTtl(rng.choice((0, 1, 5, 200))), DecMplsTtl(), DecMplsTtl())))
    return out


def _reshapes(clone: Clone) -> bool:
    """Does ``clone`` (or a clone in it) push or pop a header?"""
    return any(isinstance(a, (PushVlan, PopVlan, PushMpls, PopMpls, EncapNsh, EncapEthernet, Decap))
               or type(a) is Clone and _reshapes(a) for a in clone.actions)


def random_rule(rng: random.Random, ports: Sequence[int], tables: int = 1, features: frozenset[str] = ALL_FEATURES,
                *, table: int | None = None, priority: int | None = None, groups: Sequence[int] = ()) -> Rule:
    """One random valid rule. ``groups`` are ids of existing groups the rule may
    send to (needs feature ``groups``). ``table``/``priority`` pin those values."""
    if not ports:
        raise ValueError("random_rule needs at least one port")
    if table is None:
        table = rng.randrange(tables)
    if ACTSET_FEATURE in features and rng.random() < 0.35:  # (generate_actset.py)
        return chain_rule(rng, ports, tables, table, priority, groups if "groups" in features else ())
    if DECAP_FEATURE in features and rng.random() < 0.3:  # (generate_decap.py)
        return decap_rule(rng, ports, tables, table, priority, features)
    if WRITE_DECAP_FEATURE in features and rng.random() < 0.3:  # (generate_decap_set.py)
        return split_decap_rule(rng, ports, tables, table, priority)
    if WRITE_ENCAP_FEATURE in features and rng.random() < 0.3:  # (generate_encap_set.py)
        split = split_encap_rule(rng, ports, tables, table, priority, features, groups if "groups" in features else (),
                                 BaseDraws(_random_match, _modifications, _out_port, repaired_encaps))
        if split is not None:
            return split
    match = _random_match(rng, ports, table, features)
    flow = FlowState.of(match)
    instrs: list[Instruction] = []
    goto = "goto" in features and table + 1 < tables and rng.random() < 0.5
    if not ("drop" in features and rng.random() < 0.07):
        acts = _modifications(rng, flow, features, rng.choice((0, 0, 1, 2, 3)), table, ports)
        n_out = 0 if goto and rng.random() < 0.5 else 1
        if "multi_output" in features and rng.random() < 0.3:
            n_out = rng.choice((2, 3))
        acts += [_out_port(rng, ports, features) for _ in range(n_out)]
        if features & NX_FEATURES and n_out and rng.random() < 0.35:
            # more changes after an output, then another: a PCIe output in the middle of the list
            acts += _modifications(rng, flow, features, rng.choice((1, 2)), table, ports)
            controller = "controller" in features and rng.random() < 0.2  # a packet-in lists the mark and registers
            acts.append(Output(OFPP_CONTROLLER) if controller else _out_port(rng, ports, features))
        if "groups" in features and groups and rng.random() < 0.2:
            acts.append(GroupAction(rng.choice(list(groups))))
        if OUTPUT_REG_FEATURE in features and rng.random() < 0.5:
            at = rng.randrange(len(acts) + 1)
            acts[at:at] = output_reg_actions(rng, ports, match)
        if OUTPUT_REG_RUNTIME_FEATURE in features and rng.random() < 0.7:
            at = rng.randrange(len(acts) + 1)
            acts[at:at] = runtime_output_reg_actions(rng, ports)
        if OUTPUT_REG_TABLE_FEATURE in features and rng.random() < 0.5:  # (generate_table0.py)
            at = rng.randrange(len(acts) + 1)
            acts[at:at] = output_reg_table_actions(rng)
        if features & HASH_FEATURES and rng.random() < 0.6:
            at = rng.randrange(len(acts) + 1)
            acts[at:at] = hash_actions(rng, ports, features)
        if RESUBMIT_FEATURE in features and rng.random() < 0.5:
            inm = match.get("in_port")
            a = resubmit_action(rng, table, tables, ports, inm.value if inm is not None and inm.mask is None else None)
            if a is not None:
                acts.insert(rng.randrange(len(acts) + 1), a)
        if TRUNC_FEATURE in features and rng.random() < 0.8:
            acts = with_output_trunc(rng, acts, ports)
        if FIN_FEATURE in features and rng.random() < 0.9:  # (generate_fin.py; before a clone may wrap it)
            acts = with_fin_timeout(rng, acts, match)
        if NSH_CHECK_LARGER_FEATURE in features and rng.random() < 0.8:  # (generate_nsh_check_larger.py)
            acts = with_nsh_check_larger(rng, acts, match)
        if CLONE_FEATURE in features and rng.random() < 0.7:
            acts = clone_wrapped(rng, acts)
        if CLONE_IN_PORT_FEATURE in features:  # (generate_clone_in_port.py)
            acts.insert(rng.randrange(len(acts) + 1), in_port_clone(rng, ports))
        if CLONE_LOOKUP_FEATURE in features:  # (generate_clone_lookup.py)
            inm = match.get("in_port")
            c = lookup_clone(rng, table, tables, ports, inm.value if inm is not None and inm.mask is None else None)
            if c is not None:
                acts.insert(rng.randrange(len(acts) + 1), c)
        if CLONE_OUTPUT_REG_FEATURE in features:  # (generate_clone_lookup.py)
            at = rng.randrange(len(acts) + 1)
            acts[at:at] = output_reg_clone(rng, ports, match)
        if CLONE_CHECK_FEATURE in features:  # (generate_clone_check.py)
            inm = match.get("in_port")
            c = check_clone(rng, table, tables, ports, inm.value if inm is not None and inm.mask is None else None)
            acts.insert(rng.randrange(len(acts) + 1), c)
        if ENCAP_FEATURE in features:  # (generate_encap.py: the patterns whole after the insertions above)
            acts = repaired_encaps(acts)
        if acts:
            instrs.append(ApplyActions(tuple(acts)))
        if any(type(a) is Clone and _reshapes(a) for a in acts):  # (a wrapped run's pushes and pops stay in its clone:
            flow = FlowState.of(match)  # the action set is drawn for the packet the list leaves)
            for a in acts:
                flow.apply(a)
        if "clear_actions" in features and rng.random() < 0.08:
            instrs.append(ClearActions())
        if "write_actions" in features and rng.random() < (0.5 if "action_sets" in features else 0.15):
            wacts: list[Action] = []
            if "set_field" in features and rng.random() < 0.5:
                f = rng.choice(("eth_src", "eth_dst"))
                wacts.append(SetField(f, random_value(rng, f)))
            if features & NX_ACTION_FEATURES and rng.random() < 0.4:
                wacts += written_nx(rng, flow, features, _settable(flow, features))
            if features & NX_MORE_FEATURES:
                wacts += more_nx_actions(rng, flow, features, ports, nested=True)
            if "action_sets" in features:
                kind = rng.random()
                if "groups" in features and groups and kind < 0.6:
                    wacts.append(GroupAction(rng.choice(list(groups))))
                if kind >= 0.3:
                    wacts.append(_written_port(rng, ports, features))
            else:
                if "groups" in features and groups and rng.random() < 0.3:
                    wacts.append(GroupAction(rng.choice(list(groups))))
                if RESUBMIT_FEATURE in features and rng.random() < 0.4:  # runs if no output or group is written
                    wacts.append(written_resubmit(rng, tables, ports))
                    if rng.random() < 0.5:
                        wacts.append(Output(rng.choice(list(ports))))
                else:
                    wacts.append(Output(rng.choice(list(ports))))
            if TABLE0_WRITE_FEATURE in features and rng.random() < 0.7:  # (generate_table0.py)
                inm = match.get("in_port")
                wacts = written_table0(rng, wacts, ports, inm.value if inm is not None and inm.mask is None else None)
            if WRITE_NSH_TTL_FEATURE in features:  # (generate_nsh_ttl.py)
                wacts = written_nsh_ttl(rng, wacts, flow)
            instrs.append(WriteActions(tuple(wacts)))
        if goto:
            if "metadata" in features and rng.random() < 0.5:
                mask = rng.choice((0xFF, 0xFFFFFFFFFFFFFFFF, 0xF0F0))
                instrs.append(WriteMetadata(rng.randrange(1, 16) & mask, mask))
            instrs.append(GotoTable(rng.randrange(table + 1, tables)))
    cookie = rng.randrange(1, 1 << 64) if "cookie" in features and rng.random() < 0.2 else 0
    idle = hard = 0
    if "timeouts" in features and rng.random() < 0.3:
        idle, hard = rng.choice(((0, 300), (60, 0), (30, 600)))
    return Rule(match=match, instructions=tuple(instrs), table=table,
                priority=rng.randrange(1, 65536) if priority is None else priority,
                cookie=cookie, idle_timeout=idle, hard_timeout=hard)


MAX_PRIORITY = 65535


def random_ruleset(rng: random.Random, n: int, ports: Sequence[int], tables: int = 1,
                   features: frozenset[str] = ALL_FEATURES, *, groups: Sequence[int] = ()) -> list[Rule]:
    """``n`` rules spread over ``tables`` tables, priorities distinct within a table.

    A table holds at most 65,535 distinct priorities, so ``n`` above ``65535 * tables``
    is refused (ValueError); up to it the draw always ends: a full table is skipped, and
    once a table is half full its priority comes from the list of those still free."""
    if n > MAX_PRIORITY * tables:
        need = -(-n // MAX_PRIORITY)
        raise ValueError(f"{n:,} rules with distinct priorities need at least {need} tables"
                         f" (a table holds {MAX_PRIORITY:,} priorities); raise --tables")
    per_table: dict[int, set[int]] = {}
    free: dict[int, list[int]] = {}  # table -> priorities still free, once the table is half full
    rules = []
    for _ in range(n):
        table = rng.randrange(tables)
        while len(per_table.get(table, ())) >= MAX_PRIORITY:
            table = rng.randrange(tables)
        used = per_table.setdefault(table, set())
        if len(used) < MAX_PRIORITY // 2:
            prio = rng.randrange(1, 65536)
            while prio in used:
                prio = rng.randrange(1, 65536)
        else:
            left = free.get(table)
            if left is None:
                left = free[table] = [p for p in range(1, MAX_PRIORITY + 1) if p not in used]
            i = rng.randrange(len(left))
            left[i], left[-1] = left[-1], left[i]
            prio = left.pop()
        used.add(prio)
        if "nx_conj" in features and rng.random() < CONJ_SHARE and len(used) < MAX_PRIORITY // 2:
            # a conjunctive block: its soft flows share this priority, its other flows take fresh ones
            def fresh(below: int | None = None, used: set[int] = used) -> int:
                top = MAX_PRIORITY if below is None else below - 1
                p = rng.randrange(1, top + 1)
                while p in used:
                    p = rng.randrange(1, top + 1)
                used.add(p)
                return p
            rules += conj_block(rng, ports, table, prio, fresh, lambda t, p: random_rule(
                rng, ports, tables, features - CONJ_FEATURES, table=t, priority=p, groups=groups))
            continue
        rules.append(random_rule(rng, ports, tables, features, table=table, priority=prio, groups=groups))
    return rules[:n]


LAST_TABLES = (0, 1, 252, 253)  # the first and last tables Open vSwitch offers in OpenFlow 1.3
HIDDEN_TABLE = 254  # Open vSwitch's own: a goto there is accepted and drops (the action set still runs)


def spread_tables(rng: random.Random, rules: Sequence[Rule], tables: Sequence[int] = LAST_TABLES,
                  hidden_p: float = 0.3) -> list[Rule]:
    """``rules`` drawn over tables 0..len(tables)-1 moved to ``tables`` (ascending, so
    every goto still goes forward); a rule in one of the last two of them goes to
    table 254 instead of its goto target (or, with no goto, in addition) with
    probability ``hidden_p``."""
    out = []
    for r in rules:
        table, last = tables[r.table], r.table >= len(tables) - 2
        ins = [GotoTable(HIDDEN_TABLE if last and rng.random() < hidden_p else tables[i.table])
               if isinstance(i, GotoTable) else i for i in r.instructions]
        if last and table < HIDDEN_TABLE and not any(isinstance(i, GotoTable) for i in ins) and rng.random() < hidden_p:
            ins.append(GotoTable(HIDDEN_TABLE))
        out.append(Rule(r.match, tuple(ins), table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout))
    return out


def random_group(rng: random.Random, group_id: int, ports: Sequence[int], watch_groups: Sequence[int] = ()) -> Group:
    """A random all/select/indirect/fast_failover group over ``ports``; with
    ``watch_groups``, some fast-failover buckets also (or only) watch one of them."""
    gtype = rng.choice(("all", "select", "indirect", "fast_failover"))
    n = 1 if gtype == "indirect" else rng.randint(1, 3)
    buckets = []
    for _ in range(n):
        acts: list[Action] = []
        if rng.random() < 0.3:
            f = rng.choice(("eth_src", "eth_dst"))
            acts.append(SetField(f, random_value(rng, f)))
        port = rng.choice(list(ports))
        acts.append(Output(port))
        watch, watch_group = (port if gtype == "fast_failover" else OFPP_ANY), OFPG_ANY
        if gtype == "fast_failover" and watch_groups and rng.random() < 0.5:
            watch_group = rng.choice(list(watch_groups))
            if rng.random() < 0.5:
                watch = OFPP_ANY
        buckets.append(Bucket(tuple(acts), weight=rng.randint(1, 100) if gtype == "select" else 0,
                              watch_port=watch, watch_group=watch_group))
    return Group(group_id, gtype, tuple(buckets))


def random_groups(rng: random.Random, n: int, ports: Sequence[int], first_id: int = 1,
                  watch_groups: bool = False) -> list[Group]:
    """``n`` random groups; ``watch_groups``: fast-failover buckets may watch any of them."""
    ids = range(first_id, first_id + n) if watch_groups else ()
    return [random_group(rng, first_id + i, ports, ids) for i in range(n)]
