"""ovs-ofctl flow syntax <-> rule IR (OpenFlow 1.3 subset + Tandem POF extension).

``parse_rule`` reads one flow as typed for ``ovs-ofctl add-flow`` (or, via
``parse_dumped_flow``, as printed by ``dump-flows``) into an IR ``Rule``;
``format_rule`` prints the canonical text, which ``ovs-ofctl -O OpenFlow13
add-flow`` accepts whenever the rule has no POF parts. ``parse_flows`` reads a
file of flows. Legacy/OVS names (``dl_vlan``, ``nw_src``, ``tp_dst``,
``nw_tos``, ``vlan_tci`` ...) are mapped to OXM IR fields using the match's
eth_type/ip_proto the way OVS does; a field whose prerequisites are missing is
an error (OVS silently drops it). Pure, no I/O; every error is an
``OfctlSyntaxError`` carrying source, line, column and token.
Syntax and canonical form: docs/rule-syntax.md.
"""

from __future__ import annotations

import re

from .ir import (
    ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC, FIELDS, IP_PROTO_ICMP,
    IP_PROTO_ICMPV6, IP_PROTO_TCP, IP_PROTO_UDP, OFPVID_PRESENT, FieldKey, FieldMatch, Group,
    Match, PofField, Rule, RuleError,
)
from .ofctl_actions import (
    format_action, format_actions, format_group, format_instructions, parse_actions, parse_group_text,
    parse_instructions,
)
from .ofctl_syntax import ALIASES, PRINT, Loc, OfctlSyntaxError, Token, format_value, parse_pof_field, parse_value, refuse_non_ascii, split_top, suggest
from . import fields as F

__all__ = [
    "OfctlSyntaxError", "parse_rule", "parse_flows", "parse_dumped_flow", "format_rule", "format_match",
    "format_actions", "format_action", "format_instructions", "parse_actions", "parse_group", "format_group",
]

ETH_TYPE_RARP = 0x8035
IP_PROTO_SCTP = 132
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
_RULE_KEYS = {"table": 8, "priority": 16, "cookie": 64, "idle_timeout": 16, "hard_timeout": 16}
# Names whose IR field depends on the rest of the match.
_CONTEXT = {"nw_src", "nw_dst", "nw_proto", "tp_src", "tp_dst", "nw_tos", "dl_vlan", "vlan_tci"}
# What dump-flows prints besides the flow itself.
_DUMP_ONLY = {"duration", "n_packets", "n_bytes", "idle_age", "hard_age", "reset_counts", "send_flow_rem",
              "no_packet_counts", "no_byte_counts", "check_overlap", "importance"}
_KNOWN_KEYS = sorted(set(_RULE_KEYS) | set(SHORTHANDS) | set(ALIASES) | _CONTEXT | {"actions", "dl_vlan_pcp"})
_ACTIONS_RE = re.compile(r"(?:^|[,\s])(actions=)")

_IP_TYPES = (ETH_TYPE_IPV4, ETH_TYPE_IPV6)
_ARP_TYPES = (ETH_TYPE_ARP, ETH_TYPE_RARP)


def parse_rule(text: str, source: str = "<string>", line: int = 1, *, check_actions: bool = True) -> Rule:
    """One flow in ovs-ofctl syntax -> Rule. Raises OfctlSyntaxError. With
    ``check_actions`` (default) actions OVS would refuse after this match
    (``set_field`` on ``nw_src`` without ``ip`` ...) are errors too."""
    return _parse(text, Loc(source, line), ignore=frozenset(), check=check_actions)


def parse_dumped_flow(text: str, source: str = "<dump-flows>", line: int = 1) -> Rule:
    """One line of ``ovs-ofctl dump-flows`` output (statistics are ignored)."""
    return _parse(text, Loc(source, line), ignore=frozenset(_DUMP_ONLY), check=False)


def parse_flows(text: str, source: str = "<string>") -> list[Rule]:
    """One flow per line; blank lines and ``#`` comments are skipped."""
    rules = []
    for n, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0]
        if body.strip():
            rules.append(parse_rule(body, source, n))
    return rules


def parse_group(text: str, source: str = "<string>", line: int = 1) -> Group:
    """ovs-ofctl add-group syntax -> Group."""
    refuse_non_ascii(text, Loc(source, line))
    return parse_group_text(text, Loc(source, line))


# ---------------------------------------------------------------- parsing


def _parse(text: str, loc: Loc, ignore: frozenset[str], check: bool) -> Rule:
    refuse_non_ascii(text, loc)
    if "\n" in text.strip():
        raise loc.error("a rule is one line; use parse_flows for several", 1, text)
    m = _ACTIONS_RE.search(text)
    if m is None:
        col = len(text.rstrip()) + 1
        raise loc.error("missing actions=... (use actions=drop to drop)", col, "")
    match_text = text[: m.start(1)]
    act_col = m.end(1) + 1
    attrs: dict[str, int] = {}
    direct: dict[FieldKey, tuple[int, int | None, Token]] = {}
    context: dict[str, Token] = {}
    shorthand: tuple[int, int | None, Token] | None = None
    for tok in split_top(match_text, 1, loc, seps=", \t"):
        k, v = tok.split("=")
        key = k.text
        if key in ignore:
            continue
        if v is None or key == "":
            if key in SHORTHANDS:
                if shorthand is not None:
                    raise loc.error(f"second protocol shorthand {key!r} (already {shorthand[2].text!r})", tok.column, key)
                shorthand = (*SHORTHANDS[key], tok)
                continue
            if key in _KNOWN_KEYS or key.startswith("pof["):
                raise loc.error(f"field {key} needs a value ({key}=...)", tok.column, key)
            raise loc.error(f"unknown field {key!r}{suggest(key, _KNOWN_KEYS)}", tok.column, key)
        if key in _RULE_KEYS:
            if key in attrs:
                raise loc.error(f"{key} given twice", tok.column, tok.text)
            if "/" in v.text:
                raise loc.error(f"{key} cannot be masked here", v.column, v.text)
            try:
                attrs[key] = F.parse_int(v.text, _RULE_KEYS[key])
            except ValueError as e:
                raise loc.error(f"bad {key}: {e}", v.column, v.text) from None
            continue
        if key.startswith("pof["):
            pof = parse_pof_field(k, loc)
            _put(direct, pof, *parse_value(v, pof, loc, allow_mask=True), tok, loc)
            continue
        if key in _CONTEXT:
            if key in context:
                raise loc.error(f"field {key} given twice", tok.column, tok.text)
            context[key] = tok
            continue
        field = ALIASES.get(key)
        if field is None:
            raise loc.error(f"unknown field {key!r}{suggest(key, _KNOWN_KEYS)}", k.column, key)
        _put(direct, field, *parse_value(v, field, loc, allow_mask=FIELDS[field].maskable, shown=key), tok, loc)

    if shorthand is not None:
        eth, proto, tok = shorthand
        _put(direct, "eth_type", eth, None, tok, loc, same_ok=True)
        if proto is not None:
            _put(direct, "ip_proto", proto, None, tok, loc, same_ok=True)
    _resolve_context(direct, context, loc)
    _check_prereqs(direct, loc)

    match = Match(tuple((key, FieldMatch(v, mask)) for key, (v, mask, _) in direct.items() if mask != 0))
    instructions = parse_instructions(text[m.end(1):], act_col, loc, match, check)
    try:
        return Rule(match=match, instructions=instructions, table=attrs.get("table", 0),
                    priority=attrs.get("priority", 32768), cookie=attrs.get("cookie", 0),
                    idle_timeout=attrs.get("idle_timeout", 0), hard_timeout=attrs.get("hard_timeout", 0))
    except RuleError as e:
        at = text.find("goto_table", m.end(1)) if "goto_table" in str(e) else -1
        if at >= 0:
            tok = split_top(text[at:], at + 1, loc)[0]
            raise loc.error(str(e), tok.column, tok.text) from None
        raise loc.error(str(e), act_col, text[m.end(1):].strip()) from None


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
        elif key in ("tp_src", "tp_dst"):
            proto = _exact(direct, "ip_proto")
            side = key[3:]
            target = {IP_PROTO_TCP: f"tcp_{side}", IP_PROTO_UDP: f"udp_{side}",
                      IP_PROTO_ICMP: "icmpv4_type" if side == "src" else "icmpv4_code"}.get(proto or -1)
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
    if pcp_mask == 7:
        _put(direct, "vlan_pcp", tci >> 13, None, tok, loc)
    elif pcp_mask:
        raise loc.error("vlan_tci: a partly masked priority (PCP) cannot be expressed in OpenFlow 1.3", v.column, v.text)


_HINT = {("eth_type", ETH_TYPE_IPV4): "ip", ("eth_type", ETH_TYPE_IPV6): "ipv6", ("eth_type", ETH_TYPE_ARP): "arp",
         ("ip_proto", IP_PROTO_TCP): "tcp", ("ip_proto", IP_PROTO_UDP): "udp", ("ip_proto", IP_PROTO_ICMP): "icmp"}


def _check_prereqs(direct: dict, loc: Loc) -> None:
    if "vlan_pcp" in direct:
        vid = direct.get("vlan_vid")
        if vid is None:
            direct["vlan_vid"] = (OFPVID_PRESENT, OFPVID_PRESENT, direct["vlan_pcp"][2])
        elif not (vid[0] & OFPVID_PRESENT and (vid[1] is None or vid[1] & OFPVID_PRESENT)):
            tok = direct["vlan_pcp"][2]
            raise loc.error("vlan_pcp needs a VLAN tag, but vlan_vid does not require one", tok.column, tok.text)
    for key, (_, _, tok) in list(direct.items()):
        if isinstance(key, PofField):
            continue
        spec = FIELDS[key]
        need = list(spec.prereqs)
        if key.startswith("icmpv4"):
            need.insert(0, ("eth_type", ETH_TYPE_IPV4))
        for pkey, pval in need:
            if pkey != "vlan_vid" and _exact(direct, pkey) != pval:
                hint = _HINT.get((pkey, pval), f"{pkey}={pval:#x}")
                raise loc.error(f"{tok.text.split('=')[0]} needs {hint} (e.g. '{hint},{tok.text}')", tok.column, tok.text)
        for pkey, vals in spec.prereq_any:
            if _exact(direct, pkey) not in vals:
                hint = {"eth_type": "ip or ipv6" if ETH_TYPE_IPV4 in vals else "mpls"}.get(pkey, pkey)
                first = hint.split()[0]
                raise loc.error(f"{tok.text.split('=')[0]} needs {hint} (e.g. '{first},{tok.text}')", tok.column, tok.text)


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
    for name in FIELDS:
        fm = match.get(name)
        if fm is None or name in used:
            continue
        parts.append(f"{PRINT[name][0]}={format_value(name, fm.value, fm.mask)}")
    for key, fm in match:
        if isinstance(key, PofField):
            mask = f"/{fm.mask:#x}" if fm.mask is not None else ""
            parts.append(f"{key.name}={fm.value:#x}{mask}")
    return ",".join(parts)


def format_rule(rule: Rule) -> str:
    """Canonical text: ``table=T,priority=P[,cookie=C][,idle_timeout=I][,hard_timeout=H][,MATCH],actions=...``."""
    parts = [f"table={rule.table}", f"priority={rule.priority}"]
    if rule.cookie:
        parts.append(f"cookie={rule.cookie:#x}")
    if rule.idle_timeout:
        parts.append(f"idle_timeout={rule.idle_timeout}")
    if rule.hard_timeout:
        parts.append(f"hard_timeout={rule.hard_timeout}")
    m = format_match(rule.match)
    if m:
        parts.append(m)
    parts.append("actions=" + format_instructions(rule.instructions))
    return ",".join(parts)

