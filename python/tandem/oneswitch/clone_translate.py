"""OneSwitch's translation of Open vSwitch's ``clone(actions)``.

A clone's nested actions run on a copy of the packet and its state, so they
translate as an apply-actions list of their own (``Compiler._actions``): a
local output becomes the physical port, an output to a port of another switch
sets the flow id in the mark and crosses PCIe, saving and restoring the
packet's own mark around it (the nested list may still read the mark after it,
and the clone's action set runs after the list). The mark the clone sets goes
with the copy, so nothing after the clone sees it.

Lookups inside a flow's clone (``resubmit``, ``output:TABLE``: ``clone_lookups``)
translate as in the rule's own list: the rule counts as one that resubmits
(``rule_analysis._analyze``), a lookup in table 0 runs with the mark set to 0
first and a resubmit with another in_port names its physical number per switch
(``rule_analysis.resubmits_translated``, ``Compiler._resubmit``); the mark the
copy gets back is the one before the clone, as Open vSwitch gives it back.
``ct_clear`` and ``ct`` (without ``table``) inside a flow's clone stay as they are,
as in the rule's own list (``extension.uses_ct`` finds a ct in a clone, so the
pipelines are homed on the host as for one in the rule's own list); so does a
``learn`` (``learns`` finds it for the homing and the check; Open vSwitch counts a
delete_learned only in the rule's own list, and so does ``delete_learned_keys``).

An ``output_reg`` inside a flow's clone becomes an output as in the rule's own list
when the rule fixes its number (``Compiler._actions`` reads the loads before it, in
the rule's list ahead of the clone too: ``clone_output_regs``); one only known at run
time, which the rule's own list splits per value, is refused there
(``output_reg_port``), and so is NORMAL's number.

``check_pkt_larger`` and ``ct(table=T)`` inside a flow's clone stay as they are, as in
the rule's own list: the physical switch is Open vSwitch too and forks where the
virtual one does — at a check, the rest of the clone twice, each branch ending in the
clone's action set, then that set as it was at the check once more; at a ``ct(table=T)``
a tracked copy that recirculates there and then (dp-core's ``pipeline/clone.rs``). Every
PCIe output inside a clone restores the mark after it, so each branch, the action set
run again and the recirculated copy see the virtual mark; a ``ct(table=T)`` into the
rule's own or an earlier table counts as a lookup of that table (``clone_ct_tables``,
``rule_analysis._analyze``), into table 0 with the mark reset to 0 first
(``rule_analysis.resubmits_translated``), as in the rule's own list.

Refused inside a clone (``check_clone``): what the translator handles only
at the top of a rule's list — ``NORMAL``, conjunctions, pushes that read
``in_port``; in a PACKET_OUT's clone (walked by the endpoint) lookups, ``ct`` (with or
without ``table``), ``ct_clear``, ``output_reg``, ``learn`` and ``check_pkt_larger`` too — each
with a precise error (docs/endpoint.md). A move that reads ``in_port`` inside a
clone is pinned per copy as one in the rule's own list (``clone_reads_in_port``). Pure.
"""

from __future__ import annotations

from typing import Sequence

from tandem.rules.ir import (
    OFPP_NORMAL, OFPP_TABLE, Action, CheckPktLarger, Clone, Conjunction, Ct, CtClear, Learn, MoveField, Output, OutputReg, Resubmit,
    StackPush,
)
from tandem.rules.ir import Bundle

from .ids import TranslationError

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT
_REFUSED = {Resubmit: "resubmit", OutputReg: "output_reg", Ct: "ct", CtClear: "ct_clear", Learn: "learn",
            Conjunction: "conjunction"}
_WHY = {"NORMAL": "NORMAL homes the pipeline on the host, which the translator decides from a rule's own list",
        "conjunction": "a conjunction is a match, not an action of a copy",
        "in_port": "on a physical switch in_port is the physical port"}
# translated inside a flow's clone as in the rule's own list (refused in a PACKET_OUT's)
_IN_FLOW = frozenset({"resubmit", "output:TABLE"})
_IN_FLOW |= {"ct_clear"}  # (it needs nothing of the translator: the pipeline is homed for the rules' ct already)
_IN_FLOW |= {"output_reg"}  # (of a number the rule fixes: Compiler._actions; output_reg_port refuses the rest)
_IN_FLOW |= {"learn"}  # (checked as in the rule's own list; extension.uses_learn homes the pipeline)
_IN_FLOW |= {"ct"}  # (without recirculation: check_clone refuses ct(table=T) inside; extension.uses_ct homes the pipeline)
_IN_FLOW |= {"check_pkt_larger", "ct(table=T)"}  # (the physical switch forks as the virtual one: clone_ct_tables)
_WALKED = "the endpoint walks a PACKET_OUT's clone and does not run it there (a flow's clone translates it)"


def check_clone(a: Clone, what, packet_out: bool = False) -> None:
    """Raise ``TranslationError`` for what OneSwitch does not translate inside a clone
    (``packet_out``: a PACKET_OUT's, where lookups are refused too)."""
    for b in a.actions:
        t = type(b)
        name = _REFUSED.get(t)
        if t is Output and b.port in (OFPP_TABLE, OFPP_NORMAL):
            name = "output:TABLE" if b.port == OFPP_TABLE else "NORMAL"
        elif t is Bundle and b.dst is None and OFPP_NORMAL in b.members:  # (a member: as NORMAL, extension.bundles_normal)
            name = "NORMAL"
        elif t is StackPush and b.src.field == "in_port":  # (a move is pinned per copy: pin_in_port)
            name = "in_port"
        elif t is Clone:
            check_clone(b, what, packet_out)
        elif t is CheckPktLarger or (t is Ct and b.table is not None):
            name = "check_pkt_larger" if t is CheckPktLarger else "ct(table=T)"
        if name in _IN_FLOW and not packet_out:
            name = None
        if name is not None:
            read = " (a push reading it)" if name == "in_port" else ""
            why = _WALKED if name in _IN_FLOW else _WHY[name]
            raise TranslationError(what, f"{name}{read} inside clone is not translated by OneSwitch: {why}",
                                   _BAD_ARGUMENT)


def clone_lookups(a: Clone) -> list[Action]:
    """The lookups (``resubmit``, ``output:TABLE``) inside the clone and the clones in it."""
    out: list[Action] = []
    for b in a.actions:
        t = type(b)
        if t is Resubmit or (t is Output and b.port == OFPP_TABLE):
            out.append(b)
        elif t is Clone:
            out += clone_lookups(b)
    return out


def clone_ct_tables(a: Clone) -> list[int]:
    """The tables the ``ct(table=T)`` inside the clone and the clones in it recirculate to."""
    out: list[int] = []
    for b in a.actions:
        t = type(b)
        if t is Ct and b.table is not None:
            out.append(b.table)
        elif t is Clone:
            out += clone_ct_tables(b)
    return out


def clone_output_regs(actions: Sequence[Action], i: int) -> list[tuple[Action, ...]]:
    """For each output_reg inside the clone ``actions[i]`` (nested clones included): the
    actions that ran before it (the list's before the clone, the clone's before it) and
    it last, as ``rule_analysis.output_reg_port`` reads them."""
    out: list[tuple[Action, ...]] = []
    before = tuple(actions[:i])
    nested = actions[i].actions
    for j, b in enumerate(nested):
        if type(b) is OutputReg:
            out.append((*before, *nested[:j], b))
        elif type(b) is Clone:
            out += clone_output_regs((*before, *nested), len(before) + j)
    return out


def learns(actions: Sequence[Action]) -> list[Learn]:
    """The learn actions of a list, those in its clones (nested ones too) included."""
    out: list[Learn] = []
    for b in actions:
        if type(b) is Learn:
            out.append(b)
        elif type(b) is Clone:
            out += learns(b.actions)
    return out


def clone_reads_in_port(a: Clone) -> bool:
    """Does a move inside the clone (or a clone in it) read in_port? The rule's copies
    then pin it, as a move in the rule's own list (``rule_analysis.pin_in_port``)."""
    return any((type(b) is MoveField and b.src.field == "in_port") or (type(b) is Clone and clone_reads_in_port(b))
               for b in a.actions)


def clone_actions(a: Clone, translate) -> Clone:
    """The clone with its nested list translated by ``translate(actions)`` (``Compiler._actions``
    with nothing after the list: it saves and restores the mark around every PCIe output)."""
    return Clone(tuple(translate(a.actions)))
