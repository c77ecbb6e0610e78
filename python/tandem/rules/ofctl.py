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

The parser is split by role: ``ofctl_lex`` (errors, tokens, splitting),
``ofctl_match`` (match fields, values, prerequisites), ``ofctl_actions``
(actions, instructions, groups); this module holds the flow line and the API.
"""

from __future__ import annotations

import re

from .ir import Group, Rule, RuleError, conjunction_problem
from .ofctl_actions import (
    format_action, format_actions, format_group, format_instructions, parse_actions, parse_group_text,
    parse_instructions,
)
from .ofctl_lex import Loc, OfctlSyntaxError, refuse_non_ascii, split_top
from .ofctl_match import FIELD_NAMES, MatchParser, format_match
from . import fields as F

__all__ = [
    "OfctlSyntaxError", "parse_rule", "parse_flows", "parse_dumped_flow", "format_rule", "format_match",
    "format_actions", "format_action", "format_instructions", "parse_actions", "parse_group", "format_group",
]

_RULE_KEYS = {"table": 8, "priority": 16, "cookie": 64, "idle_timeout": 16, "hard_timeout": 16}
# What dump-flows prints besides the flow itself.
_DUMP_ONLY = {"duration", "n_packets", "n_bytes", "idle_age", "hard_age", "reset_counts", "send_flow_rem",
              "no_packet_counts", "no_byte_counts", "check_overlap", "importance"}
_KNOWN_KEYS = sorted(set(_RULE_KEYS) | set(FIELD_NAMES) | {"actions"})
_ACTIONS_RE = re.compile(r"(?:^|[,\s])(actions=)")


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
    fields = MatchParser(loc, _KNOWN_KEYS)
    for tok in split_top(match_text, 1, loc, seps=", \t"):
        k, v = tok.split("=")
        key = k.text
        if key in ignore:
            continue
        if key in _RULE_KEYS and v is not None:
            if key in attrs:
                raise loc.error(f"{key} given twice", tok.column, tok.text)
            if "/" in v.text:
                raise loc.error(f"{key} cannot be masked here", v.column, v.text)
            try:
                attrs[key] = F.parse_int(v.text, _RULE_KEYS[key])
            except ValueError as e:
                raise loc.error(f"bad {key}: {e}", v.column, v.text) from None
            continue
        fields.add(tok, k, v)
    match = fields.match()
    instructions = parse_instructions(text[m.end(1):], act_col, loc, match, check)
    why = conjunction_problem(instructions) if "conjunction" in text else None
    if why:
        raise loc.error(why, act_col, text[m.end(1):].strip())
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


# ---------------------------------------------------------------- printing


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

