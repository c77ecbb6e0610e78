"""Open vSwitch's names and 32-bit headers for fields (NXM, OXM and the
ONF/OpenFlow 1.5 headers OVS 3.1 also takes in OpenFlow 1.3 messages).

One table, ``OPERANDS``: for every rule-IR field and register view, the name
Open vSwitch prints for it in ``move``/``load``/``push``/``pop`` subfields
(``NXM_NX_REG0``, ``OXM_OF_METADATA`` ...), the header it encodes it with in
those actions (class, field number, byte width) and its width as a subfield
(OVS's ``vlan_vid`` subfield is the 12-bit VID, without the OXM present bit).
``HEADERS`` maps every header Tandem reads in a match or set_field to the IR
field it means, with the value conversion if any; the wire codec
(``ofwire.py``) and the ovs-ofctl syntax (``ofctl_actions.py``) both use it.
Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import N_REGS, OPERANDS as OPERAND_BITS

OXM_BASIC, OXM_PKT_REGS, NXM_0, NXM_1, OXM_EXPERIMENTER = 0x8000, 0x8001, 0x0000, 0x0001, 0xFFFF
ONF_EXPERIMENTER = 0x4F4E4600


@dataclass(frozen=True)
class Operand:
    name: str  # what Open vSwitch prints: NXM_NX_REG0, OXM_OF_METADATA ...
    cls: int
    number: int
    width: int  # bytes of the header's value
    bits: int  # width as a subfield
    experimenter: int | None = None  # an experimenter OXM's id (its header is 8 bytes)


def _op(name: str, cls: int, number: int, width: int, bits: int) -> Operand:
    return Operand(name, cls, number, width, bits)


# OpenFlow 1.3's OXM basic fields: name -> (field number, byte width), for each IR
# field (+ a few the IR lacks, so they can be named in errors and skipped leniently).
OXM_FIELDS: dict[str, tuple[int, int]] = {
    "in_port": (0, 4), "in_phy_port": (1, 4), "metadata": (2, 8), "eth_dst": (3, 6), "eth_src": (4, 6),
    "eth_type": (5, 2), "vlan_vid": (6, 2), "vlan_pcp": (7, 1), "ip_dscp": (8, 1), "ip_ecn": (9, 1),
    "ip_proto": (10, 1), "ipv4_src": (11, 4), "ipv4_dst": (12, 4), "tcp_src": (13, 2), "tcp_dst": (14, 2),
    "udp_src": (15, 2), "udp_dst": (16, 2), "sctp_src": (17, 2), "sctp_dst": (18, 2), "icmpv4_type": (19, 1),
    "icmpv4_code": (20, 1), "arp_op": (21, 2), "arp_spa": (22, 4), "arp_tpa": (23, 4), "arp_sha": (24, 6),
    "arp_tha": (25, 6), "ipv6_src": (26, 16), "ipv6_dst": (27, 16), "ipv6_flabel": (28, 4),
    "icmpv6_type": (29, 1), "icmpv6_code": (30, 1), "ipv6_nd_target": (31, 16), "ipv6_nd_sll": (32, 6),
    "ipv6_nd_tll": (33, 6), "mpls_label": (34, 4), "mpls_tc": (35, 1), "mpls_bos": (36, 1),
    "pbb_isid": (37, 3), "tunnel_id": (38, 8), "ipv6_exthdr": (39, 2),
}
# IR field or register view -> its subfield header (OVS's preferred one: NXM where the field has one)
OPERANDS: dict[str, Operand] = {
    "in_port": _op("OXM_OF_IN_PORT", OXM_BASIC, 0, 4, 32),
    "metadata": _op("OXM_OF_METADATA", OXM_BASIC, 2, 8, 64),
    "eth_dst": _op("NXM_OF_ETH_DST", NXM_0, 1, 6, 48),
    "eth_src": _op("NXM_OF_ETH_SRC", NXM_0, 2, 6, 48),
    "eth_type": _op("NXM_OF_ETH_TYPE", NXM_0, 3, 2, 16),
    "vlan_vid": _op("OXM_OF_VLAN_VID", OXM_BASIC, 6, 2, 12),
    "vlan_pcp": _op("OXM_OF_VLAN_PCP", OXM_BASIC, 7, 1, 3),
    "ip_dscp": _op("OXM_OF_IP_DSCP", OXM_BASIC, 8, 1, 6),
    "ip_ecn": _op("NXM_NX_IP_ECN", NXM_1, 28, 1, 2),
    "ip_proto": _op("NXM_OF_IP_PROTO", NXM_0, 6, 1, 8),
    "ipv4_src": _op("NXM_OF_IP_SRC", NXM_0, 7, 4, 32),
    "ipv4_dst": _op("NXM_OF_IP_DST", NXM_0, 8, 4, 32),
    "ipv6_src": _op("NXM_NX_IPV6_SRC", NXM_1, 19, 16, 128),
    "ipv6_dst": _op("NXM_NX_IPV6_DST", NXM_1, 20, 16, 128),
    "tcp_src": _op("NXM_OF_TCP_SRC", NXM_0, 9, 2, 16),
    "tcp_dst": _op("NXM_OF_TCP_DST", NXM_0, 10, 2, 16),
    "udp_src": _op("NXM_OF_UDP_SRC", NXM_0, 11, 2, 16),
    "udp_dst": _op("NXM_OF_UDP_DST", NXM_0, 12, 2, 16),
    "icmpv4_type": _op("NXM_OF_ICMP_TYPE", NXM_0, 13, 1, 8),
    "icmpv4_code": _op("NXM_OF_ICMP_CODE", NXM_0, 14, 1, 8),
    "arp_op": _op("NXM_OF_ARP_OP", NXM_0, 15, 2, 16),
    "arp_spa": _op("NXM_OF_ARP_SPA", NXM_0, 16, 4, 32),
    "arp_tpa": _op("NXM_OF_ARP_TPA", NXM_0, 17, 4, 32),
    "mpls_label": _op("OXM_OF_MPLS_LABEL", OXM_BASIC, 34, 4, 20),
    "sctp_src": _op("OXM_OF_SCTP_SRC", OXM_BASIC, 17, 2, 16),
    "sctp_dst": _op("OXM_OF_SCTP_DST", OXM_BASIC, 18, 2, 16),
    "arp_sha": _op("NXM_NX_ARP_SHA", NXM_1, 17, 6, 48),
    "arp_tha": _op("NXM_NX_ARP_THA", NXM_1, 18, 6, 48),
    "ipv6_flabel": _op("NXM_NX_IPV6_LABEL", NXM_1, 27, 4, 20),
    "icmpv6_type": _op("NXM_NX_ICMPV6_TYPE", NXM_1, 21, 1, 8),
    "icmpv6_code": _op("NXM_NX_ICMPV6_CODE", NXM_1, 22, 1, 8),
    "ipv6_nd_target": _op("NXM_NX_ND_TARGET", NXM_1, 23, 16, 128),
    "ipv6_nd_sll": _op("NXM_NX_ND_SLL", NXM_1, 24, 6, 48),
    "ipv6_nd_tll": _op("NXM_NX_ND_TLL", NXM_1, 25, 6, 48),
    "mpls_tc": _op("OXM_OF_MPLS_TC", OXM_BASIC, 35, 1, 3),
    "mpls_bos": _op("OXM_OF_MPLS_BOS", OXM_BASIC, 36, 1, 1),
    "tunnel_id": _op("NXM_NX_TUN_ID", NXM_1, 16, 8, 64),
    "pkt_mark": _op("NXM_NX_PKT_MARK", NXM_1, 33, 4, 32),
    "tcp_flags": _op("NXM_NX_TCP_FLAGS", NXM_1, 34, 2, 12),
    "ip_frag": _op("NXM_NX_IP_FRAG", NXM_1, 26, 1, 2),
    "nw_ttl": _op("NXM_NX_IP_TTL", NXM_1, 29, 1, 8),
    "mpls_ttl": _op("NXM_NX_MPLS_TTL", NXM_1, 30, 1, 8),
    "ct_state": _op("NXM_NX_CT_STATE", NXM_1, 105, 4, 32),
    "ct_zone": _op("NXM_NX_CT_ZONE", NXM_1, 106, 2, 16),
    "ct_mark": _op("NXM_NX_CT_MARK", NXM_1, 107, 4, 32),
    "ct_label": _op("NXM_NX_CT_LABEL", NXM_1, 108, 16, 128),
    "ct_nw_proto": _op("NXM_NX_CT_NW_PROTO", NXM_1, 119, 1, 8),
    "ct_nw_src": _op("NXM_NX_CT_NW_SRC", NXM_1, 120, 4, 32),
    "ct_nw_dst": _op("NXM_NX_CT_NW_DST", NXM_1, 121, 4, 32),
    "ct_ipv6_src": _op("NXM_NX_CT_IPV6_SRC", NXM_1, 122, 16, 128),
    "ct_ipv6_dst": _op("NXM_NX_CT_IPV6_DST", NXM_1, 123, 16, 128),
    "ct_tp_src": _op("NXM_NX_CT_TP_SRC", NXM_1, 124, 2, 16),
    "ct_tp_dst": _op("NXM_NX_CT_TP_DST", NXM_1, 125, 2, 16),
    "conj_id": _op("NXM_NX_CONJ_ID", NXM_1, 37, 4, 32),
    "recirc_id": _op("NXM_NX_RECIRC_ID", NXM_1, 36, 4, 32),
    "tun_src": _op("NXM_NX_TUN_IPV4_SRC", NXM_1, 31, 4, 32),
    "tun_dst": _op("NXM_NX_TUN_IPV4_DST", NXM_1, 32, 4, 32),
    "tun_ipv6_src": _op("NXM_NX_TUN_IPV6_SRC", NXM_1, 109, 16, 128),
    "tun_ipv6_dst": _op("NXM_NX_TUN_IPV6_DST", NXM_1, 110, 16, 128),
    "tun_gbp_id": _op("NXM_NX_TUN_GBP_ID", NXM_1, 38, 2, 16),
    "tun_gbp_flags": _op("NXM_NX_TUN_GBP_FLAGS", NXM_1, 39, 1, 8),
    "tun_flags": _op("NXM_NX_TUN_FLAGS", NXM_1, 104, 2, 1),
    **{f"reg{i}": _op(f"NXM_NX_REG{i}", NXM_1, i, 4, 32) for i in range(N_REGS)},
    **{f"xreg{i}": _op(f"OXM_OF_PKT_REG{i}", OXM_PKT_REGS, i, 8, 64) for i in range(N_REGS // 2)},
    **{f"xxreg{i}": _op(f"NXM_NX_XXREG{i}", NXM_1, 111 + i, 16, 128) for i in range(N_REGS // 4)},
}
# tun_metadata0..63 (variable length: 124 bytes at most; on the wire each takes its TLV map's length, rules/tun_metadata.py)
OPERANDS.update({f"tun_metadata{i}": _op(f"NXM_NX_TUN_METADATA{i}", NXM_1, 40 + i, 124, 992) for i in range(64)})
# the NSH fields (Open vSwitch's NXOXM_NSH_*, experimenter OXMs: number, byte width; bits as the IR's)
OPERANDS.update({f: Operand(f"NXOXM_{f.upper()}", OXM_EXPERIMENTER, n, w, OPERAND_BITS[f], 0x005AD650)
                 for f, (n, w) in {"nsh_flags": (1, 1), "nsh_mdtype": (2, 1), "nsh_np": (3, 1), "nsh_spi": (4, 4),
                                   "nsh_si": (5, 1), "nsh_c1": (6, 4), "nsh_c2": (7, 4), "nsh_c3": (8, 4),
                                   "nsh_c4": (9, 4), "nsh_ttl": (10, 1)}.items()})
assert {f: o.bits for f, o in OPERANDS.items()} == OPERAND_BITS


# ---------------------------------------------------------------- headers in matches and set_field

@dataclass(frozen=True)
class Header:
    """What a match/set_field header means: IR ``field`` (or a register view,
    split into registers), its byte ``width`` on the wire, and ``conv`` naming a
    value conversion ("" none, "in_port16", "tos", "vlan_tci"). ``trim``: mask
    (and nothing else) is cut to the field's bits, as OVS does for tcp_flags and
    ip_frag (whose wire fields are wider than their meaning)."""

    field: str
    width: int
    conv: str = ""
    trim: bool = False


def _hkey(cls: int, number: int, experimenter: int | None = None) -> tuple:
    return (cls, number) if experimenter is None else (cls, number, experimenter)


# (class, number[, experimenter]) -> meaning. The OXM basic fields are ofwire's own table.
HEADERS: dict[tuple, Header] = {}
for _f, _o in OPERANDS.items():
    if _o.cls != OXM_BASIC:
        HEADERS[_hkey(_o.cls, _o.number)] = Header(_f, _o.width, trim=_f in ("tcp_flags", "ip_frag", "tun_flags"))
HEADERS.update({
    # NXM spellings of the OpenFlow 1.3 fields and OVS's other headers for the extension fields
    _hkey(NXM_0, 0): Header("in_port", 2, "in_port16"),
    _hkey(NXM_0, 4): Header("vlan_vid", 2, "vlan_tci"),
    _hkey(NXM_0, 5): Header("ip_dscp", 1, "tos"),
    _hkey(OXM_BASIC, 42): Header("tcp_flags", 2, trim=True),  # OpenFlow 1.5's tcp_flags
    _hkey(OXM_EXPERIMENTER, 42, ONF_EXPERIMENTER): Header("tcp_flags", 2, trim=True),  # ONF's, in OF1.3
})
# The NSH fields: Open vSwitch's experimenter OXMs NXOXM_NSH_* (8-byte headers), name ->
# (field number, byte width); matched and set_field only (not move/load operands).
NSH_EXPERIMENTER = 0x005AD650
NSH_OXM: dict[str, tuple[int, int]] = {
    "nsh_flags": (1, 1), "nsh_mdtype": (2, 1), "nsh_np": (3, 1), "nsh_spi": (4, 4), "nsh_si": (5, 1),
    "nsh_c1": (6, 4), "nsh_c2": (7, 4), "nsh_c3": (8, 4), "nsh_c4": (9, 4), "nsh_ttl": (10, 1),
}
HEADERS.update({_hkey(OXM_EXPERIMENTER, n, NSH_EXPERIMENTER): Header(f, w) for f, (n, w) in NSH_OXM.items()})
# actset_output: ONF's experimenter OXM in OpenFlow 1.3 (ONFOXM_ET_ACTSET_OUTPUT), field number, byte width
ACTSET_OUTPUT_OXM = (43, 4)
HEADERS[_hkey(OXM_EXPERIMENTER, ACTSET_OUTPUT_OXM[0], ONF_EXPERIMENTER)] = Header("actset_output", ACTSET_OUTPUT_OXM[1])

# Names accepted for a subfield besides the IR names (OVS's field names and its NXM/OXM names).
SUBFIELD_NAMES: dict[str, str] = {o.name: f for f, o in OPERANDS.items()}
SUBFIELD_NAMES.update({f: f for f in OPERANDS})
SUBFIELD_NAMES.update({
    "NXM_OF_IN_PORT": "in_port", "OXM_OF_ETH_DST": "eth_dst", "OXM_OF_ETH_SRC": "eth_src",
    "OXM_OF_ETH_TYPE": "eth_type", "OXM_OF_IP_PROTO": "ip_proto", "OXM_OF_IPV4_SRC": "ipv4_src",
    "OXM_OF_IPV4_DST": "ipv4_dst", "OXM_OF_IPV6_SRC": "ipv6_src", "OXM_OF_IPV6_DST": "ipv6_dst",
    "OXM_OF_TCP_SRC": "tcp_src", "OXM_OF_TCP_DST": "tcp_dst", "OXM_OF_UDP_SRC": "udp_src",
    "OXM_OF_UDP_DST": "udp_dst", "OXM_OF_ARP_OP": "arp_op", "OXM_OF_ARP_SPA": "arp_spa",
    "OXM_OF_ARP_TPA": "arp_tpa", "OXM_OF_ARP_SHA": "arp_sha", "OXM_OF_ARP_THA": "arp_tha",
    "OXM_OF_IP_ECN": "ip_ecn", "OXM_OF_ICMPV4_TYPE": "icmpv4_type", "OXM_OF_ICMPV4_CODE": "icmpv4_code",
    "OXM_OF_ICMPV6_TYPE": "icmpv6_type", "OXM_OF_ICMPV6_CODE": "icmpv6_code",
    "OXM_OF_IPV6_ND_TARGET": "ipv6_nd_target", "OXM_OF_IPV6_ND_SLL": "ipv6_nd_sll",
    "OXM_OF_IPV6_ND_TLL": "ipv6_nd_tll", "OXM_OF_IPV6_FLABEL": "ipv6_flabel", "OXM_OF_TUNNEL_ID": "tunnel_id",
    "dl_src": "eth_src", "dl_dst": "eth_dst", "dl_type": "eth_type", "nw_src": "ipv4_src", "nw_dst": "ipv4_dst",
    "ip_src": "ipv4_src", "ip_dst": "ipv4_dst", "nw_proto": "ip_proto", "nw_ecn": "ip_ecn", "tun_id": "tunnel_id",
    "icmp_type": "icmpv4_type", "icmp_code": "icmpv4_code", "nd_target": "ipv6_nd_target",
    "nd_sll": "ipv6_nd_sll", "nd_tll": "ipv6_nd_tll", "ipv6_label": "ipv6_flabel", "nw_frag": "ip_frag",
})
# Subfield names whose width is narrower than the IR operand they stand for.
NARROW_NAMES = {"NXM_OF_IN_PORT": 16}
