"""Interned pieces of physical rules for the OneSwitch compiler.

Physical copies share one object per distinct Output, tag SetField,
GotoTable and one-field Match, and instructions/rules built from
parts that are already valid skip the dataclasses' validation. Also port
names for error messages. State: module-level intern tables that
grow with the number of distinct ports, tags and groups. Pure otherwise.
"""

from __future__ import annotations

from tandem.rules.ir import (
    RESERVED_PORT_NAMES, Action, ApplyActions, FieldMatch, GotoTable, Instruction, Match, Output, Rule,
    SetField, StackPop, StackPush, Subfield, WriteActions, _new_rule,
)

from .topology import Topology
from .ids import TAG_FIELD

_OUTPUTS: dict[int, Output] = {}  # physical port -> shared Output (no max_len)
_MARK_SETS: dict[int, SetField] = {}  # flow id -> shared set_field:<id>->pkt_mark


def _output(port: int) -> Output:
    o = _OUTPUTS.get(port)
    if o is None:
        o = _OUTPUTS[port] = Output(port)
    return o


# Around a PCIe output whose mark a later action, table or packet-in could see:
# ``push:NXM_NX_PKT_MARK[]`` before setting the flow id and ``pop:NXM_NX_PKT_MARK[]``
# after the output give the packet its own (virtual) mark back.
_SAVE_MARK = StackPush(Subfield(TAG_FIELD, 0, 32))
_RESTORE_MARK = StackPop(Subfield(TAG_FIELD, 0, 32))


def _set_mark(tag: int) -> SetField:
    f = _MARK_SETS.get(tag)
    if f is None:
        f = _MARK_SETS[tag] = SetField(TAG_FIELD, tag)
    return f


_GOTO: dict[int, GotoTable] = {}  # goto target -> shared GotoTable (virtual table t is physical t)


def _goto(table: int) -> GotoTable:
    """The physical GotoTable for virtual goto target ``table``."""
    g = _GOTO.get(table)
    if g is None:
        g = _GOTO[table] = GotoTable(table)
    return g


_NO_MARK = (TAG_FIELD, FieldMatch(0))


def _with_zero_mark(match: Match) -> Match:
    """``match`` plus ``pkt_mark=0`` (no flow id), in sorted field order, without
    re-validating the fields it already had. A match that names pkt_mark is
    returned with that field replaced by the exact 0 (the caller has checked
    that 0 satisfies it)."""
    fields = [kv for kv in match.fields if kv[0] != TAG_FIELD]
    at = 0
    while at < len(fields) and isinstance(fields[at][0], str) and fields[at][0] < TAG_FIELD:
        at += 1
    fields.insert(at, _NO_MARK)
    m = object.__new__(Match)
    object.__setattr__(m, "fields", tuple(fields))
    return m


def _replace_in_port(match: Match, port: int) -> Match:
    """``match`` with in_port's value replaced (same key order, so no re-validation)."""
    pair = _IN_PORT_PAIRS.get(port)
    if pair is None:
        pair = _IN_PORT_PAIRS[port] = ("in_port", FieldMatch(port))
    return match._replaced(pair)


def _apply(actions: tuple[Action, ...]) -> ApplyActions:
    """ApplyActions(actions) without the dataclass __init__ call (nothing to validate)."""
    ins = object.__new__(ApplyActions)
    object.__setattr__(ins, "actions", actions)
    return ins


def _write(actions: tuple[Action, ...]) -> WriteActions:
    """WriteActions(actions) without the dataclass __init__ call (nothing to validate)."""
    ins = object.__new__(WriteActions)
    object.__setattr__(ins, "actions", actions)
    return ins


_MATCHES: dict[tuple[str, int], Match] = {}  # (field, value) -> one-field exact Match


def _match_of(name: str, value: int) -> Match:
    """``Match.of(name=value)``, validated once per (field, value)."""
    m = _MATCHES.get((name, value))
    if m is None:
        m = _MATCHES[(name, value)] = Match.of(**{name: value})
    return m


_IN_PORT_PAIRS: dict[int, tuple[str, FieldMatch]] = {}  # physical port -> shared ("in_port", FieldMatch) pair


def _copy_rule(rule: Rule, match: Match, instructions: tuple[Instruction, ...]) -> Rule:
    """A physical copy of a valid virtual rule: same table and instruction order
    (validity is inherited, so skip re-validation)."""
    return _new_rule(match, instructions, rule.table, rule.priority, rule.cookie,
                     rule.idle_timeout, rule.hard_timeout)


def _port_name(port: int) -> str:
    return RESERVED_PORT_NAMES.get(port, str(port))


def _ports(topo: Topology) -> str:
    return ", ".join(str(v) for v in sorted(topo.port_map)) or "none"
