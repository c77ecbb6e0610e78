"""Shared pieces of the ovs-ofctl text syntax: errors, tokenizing, field tables.

``ofctl.py`` (flows) and ``ofctl_actions.py`` (actions, groups) build on this.
Pure functions, no I/O. Columns are 1-based character positions in the line.

Field table: every IR field (``ir.FIELDS``) has one *printed* name that
ovs-ofctl 3.1 accepts in a match and in ``set_field`` (OVS does not know the
OXM names ``ipv4_src`` / ``icmpv4_type``, so those print as ``nw_src`` /
``icmp_type``), a value *kind* (mac, ipv4, ipv6, int, hex) and a set of accepted
aliases. Context-dependent legacy names (``nw_src``, ``tp_dst``, ``nw_proto``,
``nw_tos`` ...) are resolved by the flow parser, not here.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

from . import fields as F
from .ir import FIELDS, RESERVED_PORT_NAMES, FieldKey, PofField


class OfctlSyntaxError(ValueError):
    """Bad ovs-ofctl text. ``str(e)`` is ``source:line:column: message``."""

    def __init__(self, message: str, *, source: str = "<string>", line: int = 1, column: int = 1, token: str = "") -> None:
        self.reason = message
        self.source = source
        self.line = line
        self.column = column
        self.token = token
        super().__init__(f"{source}:{line}:{column}: {message}")


@dataclass(frozen=True)
class Loc:
    """Where a piece of text came from, for error messages."""

    source: str = "<string>"
    line: int = 1

    def error(self, message: str, column: int, token: str = "") -> OfctlSyntaxError:
        return OfctlSyntaxError(message, source=self.source, line=self.line, column=column, token=token)


def refuse_non_ascii(text: str, loc: "Loc") -> None:
    """ovs-ofctl text is ASCII: a full-width digit (``in_port=１``) or any other non-ASCII
    character is an error at its column, never read as the ASCII it resembles."""
    if text.isascii():
        return
    i, ch = next((i, c) for i, c in enumerate(text) if not c.isascii())
    import unicodedata

    name = unicodedata.name(ch, "")
    raise loc.error(f"non-ASCII character {ch!r} (U+{ord(ch):04X}{' ' + name if name else ''}); rules are ASCII text", i + 1, ch)


class Token(NamedTuple):
    text: str
    column: int  # 1-based column of text[0]

    def split(self, sep: str) -> tuple["Token", "Token | None"]:
        """Split at the first ``sep``: (left, right or None)."""
        i = self.text.find(sep)
        if i < 0:
            return self, None
        return Token(self.text[:i], self.column), Token(self.text[i + len(sep):], self.column + i + len(sep))


@functools.lru_cache(maxsize=None)
def _cut_re(seps: str) -> re.Pattern[str]:
    return re.compile("[()" + re.escape(seps) + "]")


def split_top(text: str, column: int, loc: Loc, seps: str = ",") -> list[Token]:
    """Split at top-level separators (outside parentheses), dropping empty pieces
    and surrounding blanks; ``column`` is the column of ``text[0]``."""
    out: list[Token] = []
    depth, start = 0, 0

    def piece_at(end: int) -> None:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            out.append(Token(stripped, column + start + (len(piece) - len(piece.lstrip()))))

    for m in _cut_re(seps).finditer(text):
        ch, i = m.group(), m.start()
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise loc.error("unbalanced ')'", column + i, ")")
        elif depth == 0:
            piece_at(i)
            start = i + 1
    if depth > 0:
        piece = text[start:]
        lead = len(piece) - len(piece.lstrip())
        raise loc.error("unbalanced '(': missing ')'", column + start + lead, piece.strip())
    piece_at(len(text))
    return out


def suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


# ---------------------------------------------------------------- fields

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
}
assert set(PRINT) == set(FIELDS), "every IR field needs a printed name"

# Names that always mean one IR field (match and set_field).
ALIASES: dict[str, str] = {name: name for name in FIELDS}
ALIASES.update({
    "dl_src": "eth_src", "dl_dst": "eth_dst", "dl_type": "eth_type",
    "dl_vlan_pcp": "vlan_pcp", "ipv4_src": "ipv4_src", "ipv4_dst": "ipv4_dst",
    "ip_src": "ipv4_src", "ip_dst": "ipv4_dst", "nw_ecn": "ip_ecn",
    "icmp_type": "icmpv4_type", "icmp_code": "icmpv4_code",
})


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
        return F.parse_int(text, bits)
    except ValueError as e:
        raise loc.error(f"bad value for {name}: {e}", tok.column, text) from None


def format_value(key: FieldKey, value: int, mask: int | None = None) -> str:
    kind = kind_of(key)
    bits = key.length if isinstance(key, PofField) else FIELDS[key].bits
    if kind in ("ipv4", "ipv6"):
        conv = F.int_to_ipv4 if kind == "ipv4" else F.int_to_ipv6
        if mask is None:
            return conv(value)
        plen = F.mask_prefix_len(mask, bits)
        return f"{conv(value)}/{plen}" if plen is not None else f"{conv(value)}/{conv(mask)}"
    if kind == "mac":
        return F.int_to_mac(value) + ("" if mask is None else "/" + F.int_to_mac(mask))
    if kind == "port" and mask is None and value in RESERVED_PORT_NAMES:
        return RESERVED_PORT_NAMES[value]
    if kind == "hex" or mask is not None:
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
