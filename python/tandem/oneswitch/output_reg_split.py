"""Per-value copies of a rule whose ``output_reg`` reads a register at run time.

An ``output:REG[a..b]`` outputs to the port whose number the register holds: a
*virtual* port number, which a physical switch would take for its own port of
that number. When the rule fixes the number (``rule_analysis.output_reg_port``)
the action is translated as that output. Otherwise, if nothing in the rule's
apply-actions writes the register before the output_reg, the number is the one
the register held when the rule was looked up, which a match can see. So the rule
is split into rules of the same table and priority that each match one set of
values of those bits besides the rule's own match: one per number that does
something (each virtual port; IN_PORT, TABLE, NORMAL, FLOOD, ALL, CONTROLLER,
LOCAL), whose output_reg becomes that output (output:TABLE: the lookup in table 0
Open vSwitch makes of it), and a few masked ones (a prefix cover of the other
values) whose output_reg sends nothing, as on the virtual switch (a number no
port has, the reserved numbers that are no port, above 0xffff). The parts are
disjoint and together match exactly what the rule matches, so every packet meets
exactly one of them, at the rule's priority, with the rule's other actions: the
virtual switch's outcome. Each part is then translated as any rule
(``Compiler._translate_rule``); a part at NORMAL's number needs every pipeline on
the host, as a rule that outputs to NORMAL does (``may_output_normal``,
extension.NORMAL).

Refused (``TranslationError``): a source other than a register or register view;
a write of the source register before the output_reg in the same list (load of
part of it, move, pop, check_pkt_larger, learn's result, or a lookup — resubmit,
output:TABLE — whose rules may write it); a rule with an idle timeout (each part's
copies would age on their own traffic).

Pure. Cost: O(n_bits x values) parts for a rule that needs it, nothing otherwise.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Iterable

from tandem.rules.ir import (
    OFPP_NORMAL, OFPP_TABLE, REG_VIEWS, ApplyActions, Match, Output, OutputReg, Resubmit, Rule, SetField, split_register,
)

from .ids import MAX_OFPORT, TranslationError
from .rule_analysis import MarkFacts, output_reg_port

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT
# OpenFlow 1.0 numbers of the reserved ports an output_reg outputs to (or looks up, TABLE):
# IN_PORT, TABLE, NORMAL, FLOOD, ALL, CONTROLLER, LOCAL
_RESERVED_OUTPUTS = (0xFFF8, 0xFFF9, 0xFFFA, 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFE)


def runtime_output_reg(rule: Rule) -> int:
    """Index of the first output_reg of ``rule``'s apply-actions whose number the rule
    does not fix (``rule_analysis.output_reg_port`` refuses it), else -1."""
    actions = rule.apply_actions
    for i, a in enumerate(actions):
        if type(a) is OutputReg:
            try:
                output_reg_port(actions, i, rule.match, rule)
            except TranslationError:
                return i
    return -1


def split_output_reg(rule: Rule, i: int, vports: Iterable[int]) -> list[Rule]:
    """The parts of ``rule`` for its apply-actions' output_reg at index ``i`` (module
    doc); ``vports`` are the virtual port numbers (LOCAL included)."""
    actions = rule.apply_actions
    a = actions[i]
    src = a.src
    if src.field not in REG_VIEWS:
        raise TranslationError(rule, f"output:{src.field}[{src.ofs}..{src.ofs + src.n_bits - 1}] (output_reg): the "
                               "port number it holds is known only at run time, and only a register's (a value the "
                               "pipeline keeps) is split into per-value copies (docs/oneswitch.md section 7)",
                               _BAD_ARGUMENT)
    regs = _regs_of(src.field)
    for b in actions[:i]:
        if _writes(b, regs):
            raise TranslationError(rule, f"output:{src.field}[{src.ofs}..{src.ofs + src.n_bits - 1}] (output_reg) "
                                   "after an action that may write part of that register (a partial load, move, pop, "
                                   "check_pkt_larger, learn's result, or a lookup): the number it holds is then not "
                                   "the one the rule's match can see (docs/oneswitch.md section 7)", _BAD_ARGUMENT)
    if rule.idle_timeout:
        raise TranslationError(rule, "output_reg with a port number known only at run time in a rule with an idle "
                               "timeout: it is split into one copy per value, and each would age on its own traffic "
                               "(docs/oneswitch.md section 7)", _BAD_ARGUMENT)
    n = src.n_bits
    match = rule.match
    values = sorted({v for v in vports if v <= MAX_OFPORT} | set(_RESERVED_OUTPUTS))
    values = [v for v in values if v < 1 << n]
    head, tail = actions[:i], actions[i + 1:]
    parts: list[Rule] = []
    for v in values:
        m = _narrowed(match, src, v, (1 << n) - 1)
        if m is not None:
            out = Output(v + 0xFFFF0000 if v >= 0xFF00 else v, a.max_len)
            parts.append(_part(rule, m, head + (out,) + tail))
    for value, mask in _cover(values, n):
        m = _narrowed(match, src, value, mask)
        if m is not None:
            parts.append(_part(rule, m, head + tail))
    return parts


def leaves(rule: Rule, vports: Iterable[int]) -> list[Rule] | None:
    """``rule`` split per value of every output_reg of its apply-actions whose number
    it does not fix, the parts split again for the next one (None: it has none)."""
    if not any(type(a) is OutputReg for a in rule.apply_actions):
        return None
    i = runtime_output_reg(rule)
    if i < 0:
        return None
    out: list[Rule] = []
    for part in split_output_reg(rule, i, vports):
        more = leaves(part, vports)
        out += [part] if more is None else more
    return out


def may_output_normal(rule: Rule) -> bool:
    """May one of ``rule``'s output_regs find NORMAL's number (0xfffa) at run time?
    (Then it needs what a rule that outputs to NORMAL needs: extension.NORMAL.)"""
    try:
        parts = leaves(rule, ())
    except TranslationError:
        return False  # (refused whole)
    return parts is not None and any(type(a) is Output and a.port == OFPP_NORMAL for p in parts
                                     for a in p.apply_actions)


def merged_facts(facts: Iterable[MarkFacts | None]) -> MarkFacts | None:
    """What the parts of one rule do with the mark, together (None if none does)."""
    known = [f for f in facts if f is not None]
    if not known:
        return None
    merged = {f.name: (tuple(sorted({g for k in known for g in getattr(k, f.name)})) if f.name == "groups"
                       else any(getattr(k, f.name) for k in known)) for f in fields(MarkFacts)}
    # (lookups all at the end only if every part's are)
    merged["lookups_at_end"] = merged["resubmits"] and all(k.lookups_at_end or not k.resubmits for k in known)
    return MarkFacts(**merged)


def _regs_of(view: str) -> set[int]:
    first, count = REG_VIEWS[view]
    return set(range(first, first + count))


def _writes(a, regs: set[int]) -> bool:
    """May action ``a`` write one of the registers ``regs`` (or look up rules that may)?"""
    t = type(a)
    if t is Resubmit or (t is Output and a.port == OFPP_TABLE):
        return True
    if t is SetField:
        return a.field in REG_VIEWS and bool(_regs_of(a.field) & regs)
    for name in ("dst", "result_dst"):
        d = getattr(a, name, None)
        if d is not None and getattr(d, "field", None) in REG_VIEWS and _regs_of(d.field) & regs:
            return True
    return False


def _narrowed(match: Match, src, value: int, mask: int) -> Match | None:
    """``match`` with the source bits also matching ``value``/``mask`` (numbers of the
    source's width), None if the two contradict."""
    out = match
    for reg, v, m in split_register(src.field, value << src.ofs, mask << src.ofs):
        m = 0xFFFF_FFFF if m is None else m
        fm = out.get(reg)
        if fm is not None:
            em = 0xFFFF_FFFF if fm.mask is None else fm.mask
            if (fm.value ^ v) & em & m:
                return None
            v, m = (fm.value & em & ~m) | v, em | m
        out = out.with_field(reg, v, None if m == 0xFFFF_FFFF else m)
    return out


def _cover(values: list[int], n: int) -> list[tuple[int, int]]:
    """Disjoint (value, mask) prefixes of n-bit numbers that together hold every
    number but ``values``."""
    out: list[tuple[int, int]] = []
    chosen = set(values)

    def walk(prefix: int, length: int, inside: list[int]) -> None:
        if not inside:
            shift = n - length
            out.append((prefix << shift, ((1 << length) - 1) << shift))
            return
        if length == n:
            return  # one of ``values``: its own part
        shift = n - length - 1
        walk(prefix << 1, length + 1, [v for v in inside if not (v >> shift) & 1])
        walk(prefix << 1 | 1, length + 1, [v for v in inside if (v >> shift) & 1])

    walk(0, 0, sorted(chosen))
    return out


def _part(rule: Rule, match: Match, actions: tuple) -> Rule:
    ins = tuple(ApplyActions(actions) if type(x) is ApplyActions else x for x in rule.instructions)
    return replace(rule, match=match, instructions=ins)
