"""Conjunctive flows (Open vSwitch's ``conjunction(id, k/n)``) in the OneSwitch
translation: the one bookkeeping they need.

A conjunctive flow is copied like any rule (its actions name no port, so every
copy is the same) and runs on the ingress switch's physical table with the
other copies of its virtual table, so OVS runs the very conjunctive match the
virtual switch does (docs/oneswitch.md §3, "Conjunctive matches"), with one
exception: Open vSwitch sees only the highest-priority flow of each distinct
match, hiding the others behind it (a hidden ordinary flow is invisible to the
``conj_id`` search), so which flows have *identical* matches is part of the
semantics. The translator keeps matches distinct or identical exactly as they
were, but for two reshapings: a wildcard-in_port rule copied once per in_port
(one that writes FLOOD/ALL into the action set, or a conjunctive flow at
priority 65535 in table 0, ``Compiler._expanded``; an ordinary rule there is
copied so too, but no flow can hide it and a flow it hides is outranked by it
anyway), and a wildcard-in_port table-0 rule whose ``pkt_mark`` match (one 0
passes) becomes the exact ``pkt_mark=0`` (which a rule without a mark match
also gains).
``ConjLedger.check`` refuses a rule that would put a conjunctive flow and such
a rule in one virtual table (a conjunctive flow that is itself such a rule
always).

State: per virtual table, counts of conjunctive and of reshaped rules. Cost: O(1)
per rule (an action scan only for rules that send nothing).
"""

from __future__ import annotations

from tandem.rules.ir import Conjunction, Rule

from .ids import TAG_FIELD, WIRE_PRIORITY, TranslationError

Facts = tuple[bool, bool]  # (has conjunction actions, copies' matches reshaped)


def conj_facts(rule: Rule, info: tuple, single: bool) -> Facts | None:
    """``rule``'s facts (None if neither): ``info`` is ``rule_analysis._analyze``'s."""
    wflood, inm, sends, marks = info[1], info[2], info[3], info[7]
    conj = not sends and any(type(a) is Conjunction for a in rule.apply_actions)
    if inm is not None:  # one copy per switch, with its own match
        return (True, False) if conj else None
    # (an ordinary rule at 65535 is copied per in_port too, but nothing can hide it, nor
    # can a flow it hides matter: it outranks every soft flow that matches what it does;
    # a table-0 pkt_mark match that 0 fails never matches there: the rule has no copies)
    reshaped = (wflood and not single) or (rule.table == 0 and (
        (conj and rule.priority == WIRE_PRIORITY) or (marks is not None and _admits_mark_0(rule))))
    return (conj, reshaped) if conj or reshaped else None


def _admits_mark_0(rule: Rule) -> bool:
    """Does ``rule`` match ``pkt_mark`` with a match 0 passes?"""
    fm = rule.match.get(TAG_FIELD)
    return fm is not None and fm.matches(0)


class ConjLedger:
    """Counts, per virtual table, of conjunctive rules and of rules whose copies'
    matches are reshaped (``conj_facts``)."""

    def __init__(self) -> None:
        self.conj: dict[int, int] = {}
        self.reshaped: dict[int, int] = {}

    def check(self, rule: Rule, facts: Facts, old: Facts | None) -> None:
        """Refuse ``rule`` (replacing a rule with facts ``old``, if any) when its table
        would hold a conjunctive flow beside a rule with reshaped copies."""
        t = rule.table
        conj = self.conj.get(t, 0) - (old is not None and old[0])
        reshaped = self.reshaped.get(t, 0) - (old is not None and old[1])
        if (facts[0] and (facts[1] or reshaped)) or (facts[1] and conj):
            raise TranslationError(rule, f"table {t} would hold conjunctive flows beside a rule that matches any "
                                   "in_port and is copied once per in_port (it writes FLOOD or ALL, or is a "
                                   "conjunctive flow at priority 65535 in table 0) or matches pkt_mark in table 0: "
                                   "its copies' matches would not be the virtual ones, and Open vSwitch's "
                                   "conjunctive matching depends on which flows have identical matches")

    def count(self, rule: Rule, facts: Facts, sign: int) -> None:
        t = rule.table
        if facts[0]:
            self.conj[t] = self.conj.get(t, 0) + sign
        if facts[1]:
            self.reshaped[t] = self.reshaped.get(t, 0) + sign
