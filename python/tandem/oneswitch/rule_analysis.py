"""One-pass analysis of a virtual rule for the OneSwitch compiler.

``_analyze`` reads a rule once and returns what translation needs (goto target,
pipeline facts, its in_port match, whether it sends anywhere, whether its
apply-actions have exactly one output and no group); ``_live`` and ``_facts``
feed the pipeline-wide check. ``reads_in_port`` finds the moves and pushes that read
``in_port`` (the physical port on a physical switch: see ``pin_in_port``).
Pure; cost O(actions).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from tandem.rules.ir import (
    OFPP_CONTROLLER, Action, ApplyActions, DecMplsTtl, DecTtl, GotoTable, GroupAction, MoveField, Output, Rule, SetField,
    StackPush, Subfield, WriteActions, split_register,
)

from .ids import TranslationError

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT


def mark_read_after(actions: Sequence[Action]) -> list[bool]:
    """For each position, whether an action after it may see the packet mark: a
    packet-in (output to CONTROLLER; dec_ttl and dec_mpls_ttl send one when the TTL
    runs out) lists it, a group's buckets may do anything, a move or push may read
    it. (Outputs do not: the mark never leaves the switches.)"""
    out = [False] * len(actions)
    seen = False
    for i in range(len(actions) - 1, -1, -1):
        out[i] = seen
        a = actions[i]
        t = type(a)
        if (t is Output and a.port == OFPP_CONTROLLER) or t is GroupAction or t is DecTtl or t is DecMplsTtl \
                or ((t is MoveField or t is StackPush) and a.src.field == "pkt_mark"):
            seen = True
    return out


def reads_in_port(actions: Sequence[Action]) -> bool:
    """Does a move or push among ``actions`` read the packet's in_port?"""
    for a in actions:
        t = type(a)
        if (t is MoveField or t is StackPush) and a.src.field == "in_port":
            return True
    return False


def pin_in_port(actions: Sequence[Action], vport: int | None, what: Rule | str) -> tuple[Action, ...]:
    """``actions`` with every move from in_port made a load of ``vport``'s bits.
    On a physical switch in_port is the physical port, so a copy cannot read the
    virtual one; a rule that matches ``in_port=V`` exactly knows it is V. A push of
    in_port, or a read in a rule (or group) that does not pin in_port, is refused."""
    out: list[Action] = []
    for a in actions:
        t = type(a)
        if (t is MoveField or t is StackPush) and a.src.field == "in_port":
            if vport is None or t is StackPush:
                raise TranslationError(what, f"{'push' if t is StackPush else 'move'} reads in_port, which on a "
                                       "physical switch is the physical port; OneSwitch can only replace it by the "
                                       "virtual port in a move of a rule that matches in_port exactly", _BAD_ARGUMENT)
            bits = (vport >> a.src.ofs) & ((1 << a.src.n_bits) - 1)
            out += _load(a.dst, bits)
        else:
            out.append(a)
    return tuple(out)


def _load(dst: Subfield, bits: int) -> list[Action]:
    value, mask = bits << dst.ofs, ((1 << dst.n_bits) - 1) << dst.ofs
    if dst.field.startswith("x"):  # a register view: its registers
        return [SetField(f, v, m) for f, v, m in split_register(dst.field, value, mask)]
    return [SetField(dst.field, value, mask)]


def _analyze(rule: Rule) -> tuple:
    """One pass over a rule: (goto target, pipeline facts, its in_port match,
    whether any action outputs or calls a group — if not, its copies are the
    same on every switch — whether its apply-actions are free of group actions,
    and, for such apply-actions with exactly one output, that output's index,
    else -1, and whether a move or push reads in_port: ``pin_in_port``). Facts
    (fact -> table) feed the pipeline-wide check: ``wgroup``
    writes a group and jumps on (keyed by the goto target); ``wout`` writes an
    output without a group."""
    in_port = None
    for k, fm in rule.match.fields:
        if k == "in_port":
            in_port = fm
    goto = None
    wg = wo = sends = False
    plain = True
    outs = 0
    out_at = -1
    reads = False
    for ins in rule.instructions:
        t = type(ins)
        if t is ApplyActions:
            for i, a in enumerate(ins.actions):
                ta = type(a)
                if ta is Output:
                    outs += 1
                    out_at = i
                elif ta is GroupAction:
                    sends = True
                    plain = False
                elif (ta is MoveField or ta is StackPush) and a.src.field == "in_port":
                    reads = True
        elif t is WriteActions:
            g = o = False
            for a in ins.actions:
                ta = type(a)
                if ta is GroupAction:
                    g = True
                elif ta is Output:
                    o = True
                elif ta is MoveField and a.src.field == "in_port":
                    reads = True
            wg, wo = g, o
            sends = sends or g or o
        elif t is GotoTable:
            goto = ins.table
    if outs:
        sends = True
    if not wg and not wo:
        facts = _NO_FACTS
    else:
        facts = {}
        if wg and goto is not None:
            facts["wgroup"] = goto
        if wo and not wg:
            facts["wout"] = rule.table
    return goto, facts, in_port, sends, plain, out_at if plain and outs == 1 else -1, reads


_NO_FACTS: dict[str, int] = {}  # shared, never written


def _live(pipeline: dict[str, Counter], name: str, plus: dict[str, int], minus: dict[str, int]) -> list[int]:
    """Tables holding fact ``name`` once a rule with facts ``plus`` replaces one with ``minus``."""
    counts, add, sub = pipeline[name], plus.get(name), minus.get(name)
    out = [t for t, n in counts.items() if n + (t == add) - (t == sub) > 0]
    if add is not None and add not in counts:
        out.append(add)
    return out


def _facts(rule: Rule) -> dict[str, int]:
    return _analyze(rule)[1]
