"""Open vSwitch's ``fin_timeout(idle_timeout=I,hard_timeout=H)`` action: ovs-ofctl
text and the wire (NXAST_FIN_TIMEOUT: subtype, two 16-bit timeouts, two bytes of
padding; 16 bytes), as Open vSwitch 3.1 reads, prints and encodes it
(``lib/ofp-actions.c``: a timeout of 0 is left out of the text, ``fin_timeout()``
when both are). Pure.
"""

from __future__ import annotations

import struct

from .ir import ApplyActions, Clone, FinTimeout, Rule, RuleError
from .ofctl_lex import Loc, Token

NXAST_FIN_TIMEOUT = 19
_NX_VENDOR_ID = 0x0000_2320
_KEYS = ("idle_timeout", "hard_timeout")


def is_fin_timeout(text: str) -> bool:
    return text.split("(", 1)[0].strip().lower() == "fin_timeout"


def parse_fin_timeout(tok: Token, loc: Loc) -> FinTimeout:
    """``fin_timeout(idle_timeout=I,hard_timeout=H)``, either or both keys (decimal seconds)."""
    text = tok.text.strip()
    if "(" not in text or not text.endswith(")"):
        raise loc.error("fin_timeout needs (idle_timeout=SECONDS,hard_timeout=SECONDS)", tok.column, text)
    got: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text[text.index("(") + 1:-1].split(","))):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key not in _KEYS:
            raise loc.error(f"fin_timeout: unknown key {key!r} (expected idle_timeout or hard_timeout)", tok.column, text)
        if not value.strip().isdigit():
            raise loc.error(f"fin_timeout: {key} {value.strip()!r} is not a decimal number", tok.column, text)
        got[key] = int(value)
    try:
        return FinTimeout(**got)
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def format_fin_timeout(a: object) -> str | None:
    """ovs-ofctl's text of ``a`` (None if it is no fin_timeout)."""
    if not isinstance(a, FinTimeout):
        return None
    parts = [f"{k}={getattr(a, k)}" for k in _KEYS if getattr(a, k)]
    return f"fin_timeout({','.join(parts)})"


def _runs(actions: tuple) -> bool:
    return any(type(a) is FinTimeout or type(a) is Clone and _runs(a.actions) for a in actions)


def runs_fin_timeout(rule: Rule) -> bool:
    """``rule`` has a fin_timeout in its apply-actions (also inside a clone): a FIN or RST
    may give it timeouts, so a backend asks for its FLOW_REMOVED as for a timed rule's."""
    return any(type(i) is ApplyActions and _runs(i.actions) for i in rule.instructions)


def encode_fin_timeout(a: FinTimeout) -> bytes:
    return struct.pack("!HHIHHH2x", 0xFFFF, 16, _NX_VENDOR_ID, NXAST_FIN_TIMEOUT, a.idle_timeout, a.hard_timeout)


def decode_fin_timeout(body: bytes) -> FinTimeout | None:
    """The action from its 16 bytes (None: another length, which the caller refuses)."""
    if len(body) != 16:
        return None
    return FinTimeout(*struct.unpack_from("!HH", body, 10))
