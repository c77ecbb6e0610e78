"""ovs-ofctl text, match fields: the printed name and value kind of every IR
field, values and masks (``parse_value`` / ``format_value``), POF fields,
protocol shorthands (``ip``, ``tcp6`` ...), the legacy names whose field
depends on the rest of the match (``nw_src``, ``tp_dst``, ``vlan_tci`` ...),
OVS's prerequisite checks, and the canonical match text. ``MatchParser``
collects one flow's field tokens (from ``ofctl_lex``) into an IR ``Match``.

Field table: every IR field (``ir.FIELDS``) has one *printed* name that
ovs-ofctl 3.1 accepts in a match and in ``set_field`` (OVS does not know the
OXM names ``ipv4_src`` / ``icmpv4_type``, so those print as ``nw_src`` /
``icmp_type``), a value *kind* (mac, ipv4, ipv6, int, hex) and a set of
accepted aliases. Pure, no I/O.
"""

from __future__ import annotations

from . import fields as F
from .ir import (
    CT_STATE_BITS, ct_state_valid, IP_FRAG_ANY, IP_FRAG_LATER, L4_HEADER_FIELDS, N_REGS, REG_VIEWS, split_register, ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC, FIELDS, IP_PROTO_ICMP,
    IP_PROTO_ICMPV6, IP_PROTO_SCTP, IP_PROTO_TCP, IP_PROTO_UDP, OFPVID_PRESENT, RESERVED_PORT_NAMES, FieldKey, FieldMatch, Match,
    PofField,
)
from .ir import check_recirc_id, tci_match
from .actset_output import BY_VALUE as ACTSET_PORT_BY_VALUE, NAMES as ACTSET_PORT_NAMES
from .packet_type import PACKET_TYPE_ETHERNET, parse_packet_type, unsupported
from .ofctl_lex import Loc, Token, suggest

# IR field -> (printed name, value kind)
PRINT: dict[str, tuple[str, str]] = {
    "in_port": ("in_port", "port"),
    "metadata": ("metadata", "hex"),
    "eth_dst": ("eth_dst", "mac"),
    "eth_src": ("eth_src", "mac"),
    "eth_type": ("eth_type", "hex"),
    "vlan_vid": ("vlan_vid", "hex"),
    "vlan_pcp": ("vlan_pcp", "int"),
    "ip_dscp": ("ip_dscp", "int"),
    "ip_ecn": ("ip_ecn", "int"),
    "ip_proto": ("ip_proto", "int"),
    "ipv4_src": ("nw_src", "ipv4"),
    "ipv4_dst": ("nw_dst", "ipv4"),
    "ipv6_src": ("ipv6_src", "ipv6"),
    "ipv6_dst": ("ipv6_dst", "ipv6"),
    "tcp_src": ("tcp_src", "int"),
    "tcp_dst": ("tcp_dst", "int"),
    "udp_src": ("udp_src", "int"),
    "udp_dst": ("udp_dst", "int"),
    "icmpv4_type": ("icmp_type", "int"),
    "icmpv4_code": ("icmp_code", "int"),
    "arp_op": ("arp_op", "int"),
    "arp_spa": ("arp_spa", "ipv4"),
    "arp_tpa": ("arp_tpa", "ipv4"),
    "mpls_label": ("mpls_label", "int"),
    "pkt_mark": ("pkt_mark", "hex"),
    "sctp_src": ("sctp_src", "int"),
    "sctp_dst": ("sctp_dst", "int"),
    "arp_sha": ("arp_sha", "mac"),
    "arp_tha": ("arp_tha", "mac"),
    "ipv6_flabel": ("ipv6_label", "hex"),
    "icmpv6_type": ("icmpv6_type", "int"),
    "icmpv6_code": ("icmpv6_code", "int"),
    "ipv6_nd_target": ("nd_target", "ipv6"),
    "ipv6_nd_sll": ("nd_sll", "mac"),
    "ipv6_nd_tll": ("nd_tll", "mac"),
    "mpls_tc": ("mpls_tc", "int"),
    "mpls_bos": ("mpls_bos", "int"),
    "tunnel_id": ("tun_id", "hex"),
    **{f"reg{i}": (f"reg{i}", "hex") for i in range(N_REGS)},
    "tcp_flags": ("tcp_flags", "hex"),
    "ip_frag": ("nw_frag", "frag"),
    "nw_ttl": ("nw_ttl", "int"),
    "mpls_ttl": ("mpls_ttl", "int"),
    "conj_id": ("conj_id", "int"),
    "ct_state": ("ct_state", "ctstate"),
    "ct_zone": ("ct_zone", "int"),
    "ct_mark": ("ct_mark", "hex"),
    "ct_label": ("ct_label", "hex"),
    "ct_nw_proto": ("ct_nw_proto", "int"),
    "ct_nw_src": ("ct_nw_src", "ipv4"),
    "ct_nw_dst": ("ct_nw_dst", "ipv4"),
    "ct_ipv6_src": ("ct_ipv6_src", "ipv6"),
    "ct_ipv6_dst": ("ct_ipv6_dst", "ipv6"),
    "ct_tp_src": ("ct_tp_src", "int"),
    "ct_tp_dst": ("ct_tp_dst", "int"),
    "recirc_id": ("recirc_id", "int"),
    "tun_src": ("tun_src", "ipv4"),
    "tun_dst": ("tun_dst", "ipv4"),
    "tun_ipv6_src": ("tun_ipv6_src", "ipv6"),
    "tun_ipv6_dst": ("tun_ipv6_dst", "ipv6"),
    "tun_gbp_id": ("tun_gbp_id", "int"),
    "tun_gbp_flags": ("tun_gbp_flags", "hex"),
    # the Network Service Header (rules/nsh.py)
    "nsh_flags": ("nsh_flags", "int"),
    "nsh_ttl": ("nsh_ttl", "int"),
    "nsh_mdtype": ("nsh_mdtype", "int"),
    "nsh_np": ("nsh_np", "int"),
    "nsh_spi": ("nsh_spi", "hex"),
    "nsh_si": ("nsh_si", "int"),
    **{f"nsh_c{i}": (f"nsh_c{i}", "hex") for i in range(1, 5)},
    "tun_flags": ("tun_flags", "tunflags"),
    "actset_output": ("actset_output", "actport"),  # (a port number or name, or UNSET: rules/actset_output.py)
}
PRINT.update({f"tun_metadata{i}": (f"tun_metadata{i}", "hex") for i in range(64)})  # (tun_metadata)
assert set(PRINT) == set(FIELDS), "every IR field needs a printed name"
# ip_frag values by name, as Open vSwitch writes them (value, mask)
FRAG_NAMES = {"no": (0, IP_FRAG_ANY), "yes": (IP_FRAG_ANY, IP_FRAG_ANY), "first": (IP_FRAG_ANY, 3),
              "later": (3, 3), "not_later": (0, IP_FRAG_LATER)}
_FRAG_BY_VALUE = {v: k for k, v in FRAG_NAMES.items()}
TCP_FLAG_NAMES = {"fin": 0x1, "syn": 0x2, "rst": 0x4, "psh": 0x8, "ack": 0x10, "urg": 0x20, "ece": 0x40, "cwr": 0x80,
                  "ns": 0x100}
TUN_FLAG_NAMES = {"oam": 0x1}  # tun_flags: Open vSwitch's one public tunnel flag

# Names that always mean one IR field (match and set_field).
ALIASES: dict[str, str] = {name: name for name in FIELDS}
ALIASES.update({
    "dl_src": "eth_src", "dl_dst": "eth_dst", "dl_type": "eth_type",
    "dl_vlan_pcp": "vlan_pcp", "ipv4_src": "ipv4_src", "ipv4_dst": "ipv4_dst",
    "ip_src": "ipv4_src", "ip_dst": "ipv4_dst", "nw_ecn": "ip_ecn",
    "ipv6_label": "ipv6_flabel", "nd_target": "ipv6_nd_target", "nd_sll": "ipv6_nd_sll", "nd_tll": "ipv6_nd_tll",
    "tun_id": "tunnel_id", "ip_frag": "ip_frag", "nw_frag": "ip_frag",
})
# icmp_type/icmp_code name the ICMPv6 fields after icmp6/ipv6 (as ovs-ofctl prints them), else ICMPv4.
ALIASES.pop("icmp_type", None)
ALIASES.pop("icmp_code", None)


def kind_of(key: FieldKey) -> str:
    if isinstance(key, PofField):
        return "hex"
    return PRINT[key][1]


def parse_value(tok: Token, key: FieldKey, loc: Loc, allow_mask: bool, shown: str | None = None) -> tuple[int, int | None]:
    """``value`` or ``value/mask`` for one field, masks normalized: a full mask
    becomes None (exact). The value is ANDed with the mask, as OVS does."""
    kind = kind_of(key)
    bits = FIELDS[key].bits if isinstance(key, str) else key.length
    name = shown or (key if isinstance(key, str) else key.name)
    if kind == "frag":
        return _parse_frag(tok, name, loc)
    if key == "tcp_flags" and (tok.text[:1] in "+-" or any(c.isalpha() and c not in "xabcdefABCDEF" for c in tok.text)):
        return _parse_tcp_flags(tok, loc)
    if kind == "ctstate" and (tok.text[:1] in "+-" or any(c.isalpha() and c not in "xabcdefABCDEF" for c in tok.text)):
        return _parse_flags(tok, loc, CT_STATE_BITS, "ct_state", 32)
    if kind == "tunflags" and not tok.text[:1].isdigit():  # (+oam, -oam, oam: Open vSwitch's tunnel flags)
        return _parse_flags(tok, loc, TUN_FLAG_NAMES, "tunnel", 1)
    vtok, mtok = tok.split("/")
    if mtok is not None and not allow_mask:
        raise loc.error(f"field {name} cannot be masked", tok.column, tok.text)
    value = _parse_scalar(vtok, kind, bits, name, loc)
    if mtok is None:
        return value, None
    if kind in ("ipv4", "ipv6") and mtok.text.isdigit():
        try:
            mask = F.prefix_mask(int(mtok.text), bits)
        except ValueError as e:
            raise loc.error(f"{name}: {e}", mtok.column, mtok.text) from None
    else:
        mask = _parse_scalar(mtok, kind, bits, name, loc)
    if mask == F.full_mask(bits):
        return value, None
    return value & mask, mask


def _parse_frag(tok: Token, name: str, loc: Loc) -> tuple[int, int | None]:
    """``no``, ``yes``, ``first``, ``later``, ``not_later`` (Open vSwitch's names) or ``0xV/0xM``."""
    got = FRAG_NAMES.get(tok.text)
    if got is None:
        vtok, mtok = tok.split("/")
        try:
            got = (F.parse_int(vtok.text, 2), F.parse_int(mtok.text, 2) if mtok is not None else 3)
        except ValueError:
            raise loc.error(f"bad value for {name}: {tok.text!r} (one of {', '.join(FRAG_NAMES)})",
                            tok.column, tok.text) from None
    value, mask = got
    return value & mask, None if mask == 3 else mask


def _parse_tcp_flags(tok: Token, loc: Loc) -> tuple[int, int | None]:
    return _parse_flags(tok, loc, TCP_FLAG_NAMES, "TCP", 12)


def _parse_flags(tok: Token, loc: Loc, names: dict[str, int], what: str, bits: int) -> tuple[int, int | None]:
    """OVS's flag syntax: ``+syn-ack`` (those bits set / clear, others wildcarded)
    or ``syn|ack`` (exactly these flags); tcp_flags' and ct_state's."""
    text = tok.text
    if text[:1] not in "+-":
        value = 0
        for part in text.split("|"):
            if part not in names:
                raise loc.error(f"unknown {what} flag {part!r} (known: {', '.join(names)})", tok.column, text)
            value |= names[part]
        return value, None
    value = mask = 0
    i = 0
    while i < len(text):
        sign = text[i]
        if sign not in "+-":
            raise loc.error(f"tcp_flags {text!r}: expected +FLAG or -FLAG", tok.column, text)
        j = i + 1
        while j < len(text) and text[j] not in "+-":
            j += 1
        flag = names.get(text[i + 1:j])
        if flag is None:
            raise loc.error(f"unknown {what} flag {text[i + 1:j]!r} (known: {', '.join(names)})", tok.column, text)
        if mask & flag:
            raise loc.error(f"{what} flags {text!r}: flag {text[i + 1:j]} given twice", tok.column, text)
        mask |= flag
        value |= flag if sign == "+" else 0
        i = j
    return value, None if mask == (1 << bits) - 1 else mask


def _parse_scalar(tok: Token, kind: str, bits: int, name: str, loc: Loc) -> int:
    text = tok.text
    try:
        if kind == "mac":
            return F.mac_to_int(text)
        if kind == "ipv4":
            return F.ipv4_to_int(text)
        if kind == "ipv6":
            return F.ipv6_to_int(text)
        if kind == "port":
            by_name = {v: k for k, v in RESERVED_PORT_NAMES.items()}
            if text.upper() in by_name:
                return by_name[text.upper()]
        if kind == "actport" and text.upper() in ACTSET_PORT_NAMES:
            return ACTSET_PORT_NAMES[text.upper()]
        return F.parse_int(text, bits)
    except ValueError as e:
        raise loc.error(f"bad value for {name}: {e}", tok.column, text) from None


def format_value(key: FieldKey, value: int, mask: int | None = None) -> str:
    kind = kind_of(key)
    bits = key.length if isinstance(key, PofField) else FIELDS[key].bits
    if kind == "frag":
        name = _FRAG_BY_VALUE.get((value, 3 if mask is None else mask))
        return name if name is not None else f"{value:#x}/{3 if mask is None else mask:#x}"
    if kind in ("ipv4", "ipv6"):
        conv = F.int_to_ipv4 if kind == "ipv4" else F.int_to_ipv6
        if mask is None:
            return conv(value)
        plen = F.mask_prefix_len(mask, bits)
        return f"{conv(value)}/{plen}" if plen is not None else f"{conv(value)}/{conv(mask)}"
    if kind == "mac":
        return F.int_to_mac(value) + ("" if mask is None else "/" + F.int_to_mac(mask))
    if kind == "tunflags" and mask is None:  # (ovs-ofctl takes these in a match and in set_field)
        return "oam" if value else "0"
    if kind == "port" and mask is None and value in RESERVED_PORT_NAMES:
        return RESERVED_PORT_NAMES[value]
    if kind == "actport" and mask is None and value in ACTSET_PORT_BY_VALUE:
        return ACTSET_PORT_BY_VALUE[value]
    if kind in ("hex", "ctstate") or mask is not None:
        return f"{value:#x}" + ("" if mask is None else f"/{mask:#x}")
    return str(value)


def parse_pof_field(tok: Token, loc: Loc) -> PofField:
    """``pof[OFFSET:LENGTH]`` (bits) -> PofField."""
    t = tok.text
    if not (t.startswith("pof[") and t.endswith("]")) or t.count(":") != 1:
        raise loc.error(f"bad POF field {t!r}: expected pof[OFFSET:LENGTH] in bits, e.g. pof[96:16]", tok.column, t)
    off_text, len_text = t[4:-1].split(":")
    try:
        return PofField(F.parse_int(off_text), F.parse_int(len_text))
    except ValueError as e:
        raise loc.error(f"bad POF field {t!r}: {e}", tok.column, t) from None


# ---------------------------------------------------------------- shorthands and legacy names

ETH_TYPE_RARP = 0x8035
# shorthand -> (eth_type, ip_proto or None)
SHORTHANDS: dict[str, tuple[int, int | None]] = {
    "ip": (ETH_TYPE_IPV4, None), "ipv6": (ETH_TYPE_IPV6, None),
    "icmp": (ETH_TYPE_IPV4, IP_PROTO_ICMP), "icmp6": (ETH_TYPE_IPV6, IP_PROTO_ICMPV6),
    "tcp": (ETH_TYPE_IPV4, IP_PROTO_TCP), "tcp6": (ETH_TYPE_IPV6, IP_PROTO_TCP),
    "udp": (ETH_TYPE_IPV4, IP_PROTO_UDP), "udp6": (ETH_TYPE_IPV6, IP_PROTO_UDP),
    "sctp": (ETH_TYPE_IPV4, IP_PROTO_SCTP), "sctp6": (ETH_TYPE_IPV6, IP_PROTO_SCTP),
    "arp": (ETH_TYPE_ARP, None), "rarp": (ETH_TYPE_RARP, None),
    "mpls": (ETH_TYPE_MPLS, None), "mplsm": (ETH_TYPE_MPLS_MC, None),
}
_BY_TYPE = {v: k for k, v in SHORTHANDS.items()}
# Names whose IR field depends on the rest of the match.
CONTEXT = {"nw_src", "nw_dst", "nw_proto", "tp_src", "tp_dst", "nw_tos", "dl_vlan", "vlan_tci", "icmp_type", "icmp_code"}
FIELD_NAMES = sorted(set(SHORTHANDS) | set(ALIASES) | CONTEXT | {"dl_vlan_pcp"} | set(REG_VIEWS))

_IP_TYPES = (ETH_TYPE_IPV4, ETH_TYPE_IPV6)
_ARP_TYPES = (ETH_TYPE_ARP, ETH_TYPE_RARP)


class MatchParser:
    """The match fields of one flow line, token by token, then ``match()``.
    ``known`` are the other names the line may hold (for "did you mean")."""

    def __init__(self, loc: Loc, known: list[str]) -> None:
        self.loc = loc
        self.known = known
        self.direct: dict[FieldKey, tuple[int, int | None, Token]] = {}
        self.context: dict[str, Token] = {}
        self.shorthand: tuple[int, int | None, Token] | None = None

    def add(self, tok: Token, k: Token, v: Token | None) -> None:
        """One ``name=value`` (or bare shorthand) token of the match."""
        loc, key = self.loc, k.text
        if v is None or key == "":
            if key in SHORTHANDS:
                if self.shorthand is not None:
                    raise loc.error(f"second protocol shorthand {key!r} (already {self.shorthand[2].text!r})",
                                    tok.column, key)
                self.shorthand = (*SHORTHANDS[key], tok)
                return
            if key in self.known or key.startswith("pof["):
                raise loc.error(f"field {key} needs a value ({key}=...)", tok.column, key)
            raise loc.error(f"unknown field {key!r}{suggest(key, self.known)}", tok.column, key)
        if key.startswith("pof["):
            pof = parse_pof_field(k, loc)
            _put(self.direct, pof, *parse_value(v, pof, loc, allow_mask=True), tok, loc)
            return
        if key == "packet_type":  # (OpenFlow 1.5's; only Ethernet, which Open vSwitch drops from the match)
            try:
                pt = parse_packet_type(v.text)
            except ValueError as e:
                raise loc.error(f"bad packet_type: {e}", v.column, v.text) from None
            if pt != PACKET_TYPE_ETHERNET:
                raise loc.error(unsupported(pt), v.column, v.text)
            return
        if key in CONTEXT:
            if key in self.context:
                raise loc.error(f"field {key} given twice", tok.column, tok.text)
            self.context[key] = tok
            return
        if key in REG_VIEWS and not key.startswith("reg"):  # xregN / xxregN: their registers
            bits = 32 * REG_VIEWS[key][1]
            vtok, mtok = v.split("/")
            try:
                value = F.parse_int(vtok.text, bits)
                mask = F.parse_int(mtok.text, bits) if mtok is not None else None
            except ValueError as e:
                raise loc.error(f"bad value for {key}: {e}", v.column, v.text) from None
            for reg, rv, rm in split_register(key, value & (mask if mask is not None else -1), mask):
                _put(self.direct, reg, rv, rm, tok, loc)
            return
        field = ALIASES.get(key)
        if field is None:
            raise loc.error(f"unknown field {key!r}{suggest(key, self.known)}", k.column, key)
        _put(self.direct, field, *parse_value(v, field, loc, allow_mask=FIELDS[field].maskable, shown=key), tok, loc)

    def match(self) -> Match:
        """Shorthand applied, legacy names resolved, prerequisites checked."""
        direct, loc = self.direct, self.loc
        if self.shorthand is not None:
            eth, proto, tok = self.shorthand
            _put(direct, "eth_type", eth, None, tok, loc, same_ok=True)
            if proto is not None:
                _put(direct, "ip_proto", proto, None, tok, loc, same_ok=True)
        _resolve_context(direct, self.context, loc)
        _check_prereqs(direct, loc)
        if "recirc_id" in direct:
            try:
                check_recirc_id(direct["recirc_id"][0])
            except ValueError as e:
                tok = direct["recirc_id"][2]
                raise loc.error(str(e), tok.column, tok.text) from None
        if "eth_type" in direct and direct["eth_type"][0] == 0x894F:  # (NSH: rules/nsh.py)
            from .nsh import check_match as check_nsh
            try:
                check_nsh({k: v[:2] for k, v in direct.items() if isinstance(k, str)})
            except ValueError as e:
                tok = direct["eth_type"][2]
                raise loc.error(str(e), tok.column, tok.text) from None
        return Match(tuple((key, FieldMatch(v, mask)) for key, (v, mask, _) in direct.items() if mask != 0))


def _put(direct: dict, key: FieldKey, value: int, mask: int | None, tok: Token, loc: Loc, same_ok: bool = False) -> None:
    if key in direct:
        old = direct[key]
        if same_ok and old[:2] == (value, mask):
            return
        name = key.name if isinstance(key, PofField) else key
        raise loc.error(f"field {name} given twice ({old[2].text!r} and {tok.text!r})", tok.column, tok.text)
    direct[key] = (value, mask, tok)


def _exact(direct: dict, key: str) -> int | None:
    got = direct.get(key)
    return got[0] if got is not None and got[1] is None else None


def _resolve_context(direct: dict, context: dict[str, Token], loc: Loc) -> None:
    eth = _exact(direct, "eth_type")
    for key, tok in context.items():
        _, v = tok.split("=")
        if key == "dl_vlan":
            vid = _ctx_int(v, loc, key, 16)
            if vid == 0xFFFF:
                _put(direct, "vlan_vid", 0, None, tok, loc)
            elif vid < 4096:
                _put(direct, "vlan_vid", OFPVID_PRESENT | vid, None, tok, loc)
            else:
                raise loc.error(f"dl_vlan={vid}: VLAN id must be 0..4095 (or 0xffff for no VLAN)", v.column, v.text)
        elif key == "vlan_tci":
            _put_vlan_tci(direct, tok, v, loc)
        elif key == "nw_tos":
            tos = _ctx_int(v, loc, key, 8)
            if tos & 3:
                raise loc.error(f"nw_tos={tos}: the two low (ECN) bits must be zero; use ip_dscp={tos >> 2}",
                                v.column, v.text)
            _put(direct, "ip_dscp", tos >> 2, None, tok, loc)
        elif key == "nw_proto":
            target = "ip_proto" if eth in _IP_TYPES else "arp_op" if eth in _ARP_TYPES else None
            if target is None:
                raise loc.error("nw_proto needs ip, ipv6 or arp first (e.g. 'ip,nw_proto=47')", tok.column, tok.text)
            _put(direct, target, *parse_value(v, target, loc, allow_mask=False, shown=key), tok, loc)
        elif key in ("nw_src", "nw_dst"):
            side = key[3:]
            if eth == ETH_TYPE_IPV4:
                target = f"ipv4_{side}"
            elif eth in _ARP_TYPES:
                target = "arp_spa" if side == "src" else "arp_tpa"
            elif eth == ETH_TYPE_IPV6:
                raise loc.error(f"{key} is IPv4 only; use ipv6_{side} with ipv6", tok.column, tok.text)
            else:
                raise loc.error(f"{key} needs ip or arp first (e.g. 'ip,{tok.text}')", tok.column, tok.text)
            _put(direct, target, *parse_value(v, target, loc, allow_mask=True, shown=key), tok, loc)
        elif key in ("icmp_type", "icmp_code"):
            target = ("icmpv6_" if eth == ETH_TYPE_IPV6 else "icmpv4_") + key[5:]
            _put(direct, target, *parse_value(v, target, loc, allow_mask=False, shown=key), tok, loc)
        elif key in ("tp_src", "tp_dst"):
            proto = _exact(direct, "ip_proto")
            side = key[3:]
            target = {IP_PROTO_TCP: f"tcp_{side}", IP_PROTO_UDP: f"udp_{side}", IP_PROTO_SCTP: f"sctp_{side}",
                      IP_PROTO_ICMP: "icmpv4_type" if side == "src" else "icmpv4_code",
                      IP_PROTO_ICMPV6: "icmpv6_type" if side == "src" else "icmpv6_code"}.get(proto or -1)
            if target is None:
                raise loc.error(f"{key} needs a transport protocol: write tcp,{tok.text} or udp,{tok.text}",
                                tok.column, tok.text)
            mask_ok = FIELDS[target].maskable
            _put(direct, target, *parse_value(v, target, loc, allow_mask=mask_ok, shown=key), tok, loc)


def _ctx_int(v: Token, loc: Loc, key: str, bits: int) -> int:
    if "/" in v.text:
        raise loc.error(f"{key} cannot be masked", v.column, v.text)
    try:
        return F.parse_int(v.text, bits)
    except ValueError as e:
        raise loc.error(f"bad {key}: {e}", v.column, v.text) from None


def _put_vlan_tci(direct: dict, tok: Token, v: Token, loc: Loc) -> None:
    """OVS's 16-bit TCI (pcp:3, present/CFI:1, vid:12) -> vlan_vid (+ vlan_pcp)."""
    vt, mt = v.split("/")
    tci = _ctx_int(vt, loc, "vlan_tci", 16)
    mask = _ctx_int(mt, loc, "vlan_tci mask", 16) if mt is not None else 0xFFFF
    tci &= mask
    if mask & OFPVID_PRESENT and not tci & OFPVID_PRESENT:
        if tci:
            raise loc.error("vlan_tci: no VLAN (present bit 0) but other bits set", v.column, v.text)
        _put(direct, "vlan_vid", 0, None, tok, loc)
        return
    vid_mask = mask & 0x1FFF
    if vid_mask:
        _put(direct, "vlan_vid", tci & 0x1FFF, None if vid_mask == 0x1FFF else vid_mask, tok, loc)
    pcp_mask = mask >> 13
    if pcp_mask == 7 and mask & OFPVID_PRESENT:
        _put(direct, "vlan_pcp", tci >> 13, None, tok, loc)
    elif pcp_mask:  # (Open vSwitch's own match, also without the tag bit; the IR holds the priority masked: ir.tci_match)
        _put(direct, "vlan_pcp", tci >> 13, pcp_mask, tok, loc)


_HINT = {("eth_type", ETH_TYPE_IPV4): "ip", ("eth_type", ETH_TYPE_IPV6): "ipv6", ("eth_type", ETH_TYPE_ARP): "arp",
         ("ip_proto", IP_PROTO_TCP): "tcp", ("ip_proto", IP_PROTO_UDP): "udp", ("ip_proto", IP_PROTO_ICMP): "icmp",
         ("ip_proto", IP_PROTO_SCTP): "sctp", ("ip_proto", IP_PROTO_ICMPV6): "icmp6"}


def _check_prereqs(direct: dict, loc: Loc) -> None:
    if "vlan_pcp" in direct and direct["vlan_pcp"][1] is None:  # (a masked one is a whole-TCI match: ir.tci_match)
        vid = direct.get("vlan_vid")
        if vid is None:
            direct["vlan_vid"] = (OFPVID_PRESENT, OFPVID_PRESENT, direct["vlan_pcp"][2])
        elif not (vid[0] & OFPVID_PRESENT and (vid[1] is None or vid[1] & OFPVID_PRESENT)):
            tok = direct["vlan_pcp"][2]
            raise loc.error("vlan_pcp needs a VLAN tag, but vlan_vid does not require one", tok.column, tok.text)
    frag = direct.get("ip_frag")
    for key, (_, _, tok) in list(direct.items()):
        if isinstance(key, PofField):
            continue
        if frag is not None and frag[0] & IP_FRAG_LATER and key in L4_HEADER_FIELDS:
            raise loc.error(f"{tok.text.split('=')[0]} cannot be matched in a non-first fragment ({frag[2].text})",
                            tok.column, tok.text)
        spec = FIELDS[key]
        if spec.prereq_ct:
            st = direct.get("ct_state")
            if st is None or not ct_state_valid(st[0], st[1]):
                raise loc.error(f"{tok.text.split('=')[0]} needs a tracked, valid connection (e.g. "
                                f"'ct_state=+trk-inv,{tok.text}')", tok.column, tok.text)
        need = list(spec.prereqs)
        if key.startswith("icmpv4"):
            need.insert(0, ("eth_type", ETH_TYPE_IPV4))
        for pkey, pval in need:
            if pkey != "vlan_vid" and _exact(direct, pkey) != pval:
                hint = _HINT.get((pkey, pval), f"{PRINT[pkey][0]}={pval}")
                raise loc.error(f"{tok.text.split('=')[0]} needs {hint} (e.g. '{hint},{tok.text}')", tok.column, tok.text)
        for pkey, vals in spec.prereq_any:
            if _exact(direct, pkey) not in vals:
                if pkey == "eth_type":
                    hint = "ip or ipv6" if ETH_TYPE_IPV4 in vals else "mpls"
                else:
                    hint = " or ".join(f"{PRINT[pkey][0]}={v}" for v in vals)
                first = hint.split()[0]
                raise loc.error(f"{tok.text.split('=')[0]} needs {hint} (e.g. '{first},{tok.text}')", tok.column, tok.text)
        for pkey in spec.prereq_zero:
            if pkey in direct and _exact(direct, pkey) != 0:
                raise loc.error(f"{tok.text.split('=')[0]} needs {PRINT[pkey][0]}=0 (or no {PRINT[pkey][0]})",
                                tok.column, tok.text)


# ---------------------------------------------------------------- printing


def format_match(match: Match) -> str:
    """Canonical match text: protocol shorthand, then fields in IR order, then POF fields."""
    parts: list[str] = []
    eth = match.get("eth_type")
    proto = match.get("ip_proto")
    used: set[str] = set()
    if eth is not None:
        used.add("eth_type")
        with_proto = (eth.value, proto.value) if proto is not None else None
        if with_proto in _BY_TYPE and with_proto[0] in _IP_TYPES:
            parts.append(_BY_TYPE[with_proto])
            used.add("ip_proto")
        elif (eth.value, None) in _BY_TYPE:
            parts.append(_BY_TYPE[(eth.value, None)])
        else:
            parts.append(f"eth_type={eth.value:#06x}")
    pcp = match.get("vlan_pcp")
    tci = pcp is not None and pcp.mask is not None  # only Open vSwitch's whole-TCI match holds it
    for name in FIELDS:
        fm = match.get(name)
        if fm is None or name in used:
            continue
        if tci and name in ("vlan_vid", "vlan_pcp"):  # the two as one vlan_tci=V/M, where vlan_vid goes
            used |= {"vlan_vid", "vlan_pcp"}
            parts.append("vlan_tci={:#06x}/{:#06x}".format(*tci_match(match)))
            continue
        parts.append(f"{PRINT[name][0]}={format_value(name, fm.value, fm.mask)}")
    for key, fm in match:
        if isinstance(key, PofField):
            mask = f"/{fm.mask:#x}" if fm.mask is not None else ""
            parts.append(f"{key.name}={fm.value:#x}{mask}")
    return ",".join(parts)
