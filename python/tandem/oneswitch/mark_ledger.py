"""The packet mark's pipeline-wide bookkeeping for the OneSwitch compiler.

A written output that may cross PCIe becomes ``set_field:<flow id>->pkt_mark,
output:<PCIe port>`` in the action set (compiler.py), and the action set runs
every set_field before its group or output (Open vSwitch: set-fields and moves in
the order written, then the group if any, else the output). So from that
set_field on the action set holds the flow id where the virtual switch holds its
own mark. Nothing can see the difference when the flow id's output is the one
that runs (the mark never leaves the switches), nor when no virtual rule or group
uses the mark (the virtual mark is then 0 and a packet-in leaves ``pkt_mark`` out:
``MarkLedger.used``). Otherwise a later table's write_actions that read or write the
mark or write an output to CONTROLLER (a packet-in lists the mark), or a written
group whose buckets can see the mark, would see the flow id; ``MarkLedger.check``
refuses the rule that would complete such a pipeline (docs/oneswitch.md section 2).
Within one write_actions list the translator keeps only the output that counts and
puts its flow id last (``rule_analysis.kept_output``), so one rule never conflicts
with itself. Whether or not the virtual rules use the mark, it also refuses a
resubmit into table 0 written after a written output's flow id: the resubmit's
``set_field:0->pkt_mark`` runs even when the output wins (``table0_lookup.py``).

State: counts per table of the rules with each fact. Pure otherwise; cost O(1)
per rule with facts, O(tables) for a check.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from tandem.rules.ir import Group, Rule

from .ids import TranslationError
from .rule_analysis import MarkFacts, _touches_mark, observes_mark
from .bucket_resubmit import resubmit_groups
from .table0_lookup import table0_groups
from .bucket_ct import ct_table0_groups, recirc_groups


class MarkLedger:
    """Counts of the virtual rules' ``MarkFacts`` (tables of the rules that set a flow
    id in the action set and of those that observe the mark there; rules that write
    a group whose buckets see the mark; rules that use the mark at all)."""

    def __init__(self, groups: Iterable[Group], single: bool) -> None:
        vgroups = {g.group_id: g for g in groups}
        self.single = single  # one switch: no flow ids, nothing to check
        self.groups_use = any(_touches_mark(a) for g in vgroups.values() for b in g.buckets for a in b.actions)
        self.observing = frozenset(gid for gid, g in vgroups.items()
                                   if any(observes_mark(b.actions, vgroups) for b in g.buckets))
        self.users = 0
        self.sets_id: Counter = Counter()  # table -> rules
        self.observes: Counter = Counter()  # table -> rules
        self.group_observers = 0
        self.resubmitters = 0  # rules that resubmit: the tables then run in any order
        self.resubmitters += len(resubmit_groups(vgroups.values()))  # (and groups whose buckets do)
        self.table0 = 0  # rules that look table 0 up again, which needs the virtual mark at 0
        self.table0 += len(table0_groups(vgroups.values()))  # (and groups whose buckets do)
        self.resubmitters += len(recirc_groups(vgroups.values()))  # (and groups whose bucket's ct(table=T) recirculates:
        self.table0 += len(ct_table0_groups(vgroups.values()))  # its copy runs tables out of order, into 0 too,
        self.observing |= recirc_groups(vgroups.values())  # with the mark the bucket sees: bucket_ct.py)
        self.at_end = 0  # of the rules that resubmit, those whose lookups are all written: they run last
        self.zeroes: Counter = Counter()  # table -> rules whose write_actions reset the mark (table0_lookup.py)
        self.changers = 0  # rules with a resubmit that looks up with another in_port
        self.specialised = 0  # rules whose copies are specialised to their in_port

    @property
    def used(self) -> bool:
        """May the virtual mark be non-zero (a rule or a group uses it)?"""
        return self.users > 0 or self.groups_use

    def count(self, rule: Rule, facts: MarkFacts, delta: int) -> None:
        self.users += delta * facts.uses
        if facts.sets_id:
            self.sets_id[rule.table] += delta
        if facts.observes:
            self.observes[rule.table] += delta
        if any(g in self.observing for g in facts.groups):
            self.group_observers += delta
        self.resubmitters += delta * facts.resubmits
        self.at_end += delta * facts.lookups_at_end
        self.table0 += delta * facts.table0
        if facts.zeroes:
            self.zeroes[rule.table] += delta
        self.changers += delta * facts.changes_in_port
        self.specialised += delta * facts.port_specialised

    def check(self, rule: Rule, facts: MarkFacts | None, old: tuple[Rule, MarkFacts] | None) -> None:
        """Raise TranslationError if adding ``rule`` (replacing ``old``'s rule and facts)
        would let a pipeline see a written output's flow id in place of its own mark."""
        if self.single and not (self.table0 or self.changers or self.specialised) and not (
                facts is not None and (facts.table0 or facts.changes_in_port or facts.port_specialised)):
            return  # (one switch sets no flow id; its table-0 copies still need mark 0)
        self.count(rule, facts or _NONE, +1)
        if old is not None:
            self.count(old[0], old[1], -1)
        try:
            why = self._conflict()
        finally:
            if old is not None:
                self.count(old[0], old[1], +1)
            self.count(rule, facts or _NONE, -1)
        if why:
            raise TranslationError(rule, why)

    def _conflict(self) -> str | None:
        if self.changers > 0 and self.specialised > 0:
            return ("a resubmit looks up with another in_port while a rule's copies are specialised to the in_port "
                    "it matches (a move of in_port made a load of it, a written FLOOD/ALL leaving it out): a rule "
                    "found that way runs with the packet's own in_port (docs/oneswitch.md section 7)")
        why = self._zeroed_id()
        if why:
            return why
        if not self.used:
            return None
        if self.table0 > 0:
            return ("a rule looks table 0 up again (a resubmit into table 0, output:TABLE) and the virtual rules use "
                    "the mark: physical table 0 tells the copies of virtual table 0 from the delivery rules by a mark "
                    "of 0, which the translation sets for that lookup, exactly only while the virtual mark is 0 "
                    "(docs/oneswitch.md section 7)")
        if self.single:
            return None
        ids = [t for t, n in self.sets_id.items() if n > 0]
        if not ids:
            return None
        first = min(ids)
        seen = [t for t, n in self.observes.items() if n > 0 and (t > first or self.resubmitters > 0)]
        if seen:
            return (f"a rule in table {first} writes an output whose flow id (set in the packet mark by the action "
                    f"set) a rule in table {max(seen)} would see: its write_actions read or write pkt_mark or write "
                    "output:CONTROLLER (a packet-in lists the mark), and the virtual rules use the mark "
                    + ("(with a resubmit among the rules, a table may run after any other) " if self.resubmitters
                       else "") + "(docs/oneswitch.md section 2)")
        if self.group_observers > 0:
            return (f"a rule in table {first} writes an output whose flow id (set in the packet mark by the action "
                    "set) a written group's buckets would see (they read the mark or send packet-ins, which list "
                    "it), and the virtual rules use the mark (docs/oneswitch.md section 2)")
        return None

    def _zeroed_id(self) -> str | None:
        """A written reset of the mark (for a resubmit into table 0) after a written output's
        flow id: the output would run with mark 0 (table0_lookup.py)."""
        if self.single:
            return None
        ids = [t for t, n in self.sets_id.items() if n > 0]
        zeroes = [t for t, n in self.zeroes.items() if n > 0]
        reorder = self.resubmitters > self.at_end  # (lookups from apply-actions or buckets run tables in any order)
        if not ids or not zeroes or (max(zeroes) <= min(ids) and not reorder):
            return None
        return (f"a rule in table {max(zeroes)} writes a lookup in table 0 (a resubmit or ct(table=0)), whose "
                f"set_field:0->pkt_mark the action set runs even when an output wins, and a rule in table {min(ids)} "
                "writes an output that may cross PCIe, whose flow id that set_field would clear "
                + ("(with a resubmit among the rules, a table may run after any other) " if reorder
                   else "") + "(docs/oneswitch.md section 7)")


_NONE = MarkFacts()
