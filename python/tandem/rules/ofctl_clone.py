"""ovs-ofctl text of Open vSwitch's ``clone(ACTION,...)`` <-> IR ``Clone``.

The nested actions are parsed as apply-actions are (``parse_one`` is
``ofctl_actions``' checked parser of one action), against a copy of the flow
state: as in Open vSwitch, what the nested actions do to the packet's headers
(a pop_vlan, a push_mpls) is not seen by the actions after the clone.
``clone()`` and ``clone(drop)`` are the empty clone, which ovs-ofctl prints as
``clone(drop)``. Pure; errors are ``OfctlSyntaxError`` from ``Loc.error``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .ir import Action, Clone, RuleError
from .ofctl_lex import Loc, Token, split_top
from .prereq import FlowState

CLONE_ACTION_NAMES = ("clone",)


def is_clone(text: str) -> bool:
    return text.split("(", 1)[0].strip().lower() == "clone"


def parse_clone_action(tok: Token, loc: Loc, state: FlowState,
                       parse_one: Callable[[Token, FlowState], list[Action]]) -> Clone:
    """``clone(A,B,...)``: the nested actions parsed by ``parse_one`` against a copy of ``state``."""
    text = tok.text.strip()
    if not (text[:6].lower() == "clone(" and text.endswith(")")):
        raise loc.error(f"{text!r}: expected clone(ACTION,...)", tok.column, text)
    inner = text[6:-1]
    toks = split_top(inner, tok.column + 6, loc)
    if len(toks) == 1 and toks[0].text.lower() == "drop":
        toks = []
    inside = replace(state)
    nested: list[Action] = []
    for t in toks:
        name = t.text.split(":", 1)[0].split("(", 1)[0].strip().lower()
        if name in ("goto_table", "write_metadata", "write_actions", "clear_actions", "meter"):
            raise loc.error(f"clone: {name} is an instruction, not allowed inside clone", t.column, t.text)
        nested += parse_one(t, inside)
    try:
        return Clone(tuple(nested))
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def format_clone_action(a: object, format_actions: Callable) -> str | None:
    """``clone(...)`` as ovs-ofctl 3.1 prints it (``clone(drop)`` when empty), else None."""
    if not isinstance(a, Clone):
        return None
    return f"clone({format_actions(a.actions)})"
