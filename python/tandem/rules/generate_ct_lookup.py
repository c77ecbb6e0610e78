"""Connection-tracking rules that reach ``ct(table=T)`` through a lookup (the
``lookup_ct`` focus of ``generate_ct_focus``, ``tandem bench ct_oracle -- --focus
lookup_ct``).

``with_lookup`` puts a ``resubmit(,T2)`` (now and then ``resubmit(P,T2)``, with
another in_port for the lookup alone) into a rule's apply-actions, or a
``clone(resubmit(,T2), output:P…)``, T2 a later table than the rule's, so that the
rules it finds — whose ``ct(table=T)`` Open vSwitch recirculates wherever its
translation meets it — run in the middle of another rule's list, or inside a clone.
``with_clone_ct_table`` puts a ``clone(ct(table=T), …)`` there instead (the
``ct_table_in_clone`` focus). Rules that write the action set are left out of such sets: Open vSwitch 3.1 aborts
(``ofproto-dpif-rid.c``: ``action_set_len <= ofpacts_len``) when ``ct(table=T)``
forks a packet whose action set is not empty. Pure: all randomness comes from the
caller's ``rng``."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Sequence

from .ir import ApplyActions, Clone, Ct, Output, Resubmit, Rule, SetField, WriteActions

LAST_TABLE = 2  # (ct_ruleset's tables are 0..2)


def _lookup(rng: random.Random, table: int, ports: Sequence[int]):
    later = rng.randint(table + 1, LAST_TABLE)
    r = Resubmit(table=later) if rng.random() < 0.8 else Resubmit(in_port=rng.choice(list(ports)), table=later)
    if rng.random() < 0.3:
        return Clone((r, *(Output(p) for p in rng.sample(list(ports), rng.randint(0, 1)))))
    return r


def with_lookup(rng: random.Random, rule: Rule, ports: Sequence[int]) -> Rule | None:
    """``rule`` with such a lookup at a random place in its apply-actions (None if it
    has none, or is in the last table)."""
    if rule.table >= LAST_TABLE:
        return None
    return _inserted(rng, rule, _lookup(rng, rule.table, ports))


def _inserted(rng: random.Random, rule: Rule, action) -> Rule | None:
    """``rule`` with ``action`` at a random place in its apply-actions (None if it has none)."""
    out = []
    done = False
    for ins in rule.instructions:
        if type(ins) is ApplyActions and not done:
            acts = list(ins.actions)
            acts.insert(rng.randrange(len(acts) + 1), action)
            ins = ApplyActions(tuple(acts))
            done = True
        out.append(ins)
    return replace(rule, instructions=tuple(out)) if done else None


def writes(rule: Rule) -> bool:
    return any(type(i) is WriteActions for i in rule.instructions)


def uses_lookup(rule: Rule) -> bool:
    def lookup(a) -> bool:
        return type(a) is Resubmit or (type(a) is Clone and any(map(lookup, a.actions)))
    return any(lookup(a) for a in rule.apply_actions)


def clone_ct_table(rng: random.Random, table: int, ports: Sequence[int]) -> Clone:
    """A clone with a ``ct(table=T)`` (T any table: the copy recirculates from inside the
    clone), now and then after a register load the copy carries, and outputs after it."""
    from .generate_ct import ZONES

    pre = (SetField("reg1", rng.randint(1, 3)),) if rng.random() < 0.3 else ()
    ct = Ct(zone=rng.choice(ZONES), table=rng.randint(0, LAST_TABLE))
    return Clone((*pre, ct, *(Output(p) for p in rng.sample(list(ports), rng.randint(0, 2)))))


def with_clone_ct_table(rng: random.Random, rule: Rule, ports: Sequence[int]) -> Rule | None:
    """``rule`` with a ``clone_ct_table`` at a random place in its apply-actions (None if it has none)."""
    return _inserted(rng, rule, clone_ct_table(rng, rule.table, ports))


def uses_clone_ct_table(rule: Rule) -> bool:
    return any(type(a) is Clone and any(type(b) is Ct and b.table is not None for b in a.actions)
               for a in rule.apply_actions)
