"""Connection-tracking rules with ``clone(ct_clear, …)`` or ``clone(ct(…), …)`` (the
``clone_ct_clear`` and ``clone_ct`` focuses of ``generate_ct_focus``, ``tandem bench
ct_oracle -- --focus clone_ct_clear``).

``with_clone_ct_clear`` puts into a rule's apply-actions a clone that clears the
connection state of its copy and outputs it (now and then after a change of a
header); the packet itself must leave the clone with its state as it was (the
rule's own later actions — ct, commits, recirculations — and the tables after
it see it). No lookup follows the ct_clear inside (lookups inside clones that reach
``ct(table=T)`` are the ``lookup_ct`` focus, generate_ct_lookup.py). Pure: all
randomness comes from the caller's ``rng``."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Sequence

from .generate_ct import ZONES, _commit_zone, _exec
from .ir import Action, ApplyActions, Clone, Ct, CtClear, Output, Rule, SetField


def clone_ct_clear(rng: random.Random, ports: Sequence[int]) -> Clone:
    """The clone."""
    nested: tuple[Action, ...] = (CtClear(),)
    if rng.random() < 0.3:
        nested += (SetField("eth_dst", rng.getrandbits(48) & ~(1 << 40)),)
    return Clone(nested + tuple(Output(p) for p in rng.sample(list(ports), rng.randint(1, 2))))


def clone_ct(rng: random.Random, ports: Sequence[int], commit: bool = True) -> Clone:
    """A clone with a ct (no recirculation; a commit only if ``commit``) and outputs."""
    if commit and rng.random() < 0.7:
        ct = Ct(commit=True, exec=_exec(rng), **_commit_zone(rng))
    else:
        ct = Ct(zone=rng.choice(ZONES))
    return Clone((ct, *(Output(p) for p in rng.sample(list(ports), rng.randint(1, 2)))))


def uses_clone_ct_clear(rule: Rule) -> bool:
    return any(type(a) is Clone and any(type(b) is CtClear for b in a.actions) for a in rule.apply_actions)


def uses_clone_ct(rule: Rule) -> bool:
    return any(type(a) is Clone and any(type(b) is Ct for b in a.actions) for a in rule.apply_actions)


def with_clone_ct_clear(rng: random.Random, rule: Rule, ports: Sequence[int], ct: bool = False) -> Rule | None:
    """``rule`` with such a clone (``ct``: a ``clone_ct``) in its apply-actions (None if it has none)."""
    out = []
    done = False
    for ins in rule.instructions:
        if type(ins) is ApplyActions and not done:
            acts = list(ins.actions)
            acts.insert(rng.randrange(len(acts) + 1), clone_ct(rng, ports, _may_commit(rule)) if ct else clone_ct_clear(rng, ports))
            ins = ApplyActions(tuple(acts))
            done = True
        out.append(ins)
    return replace(rule, instructions=tuple(out)) if done else None


_INV = 0x10  # (ct_state +inv: Open vSwitch refuses a commit in a rule that matches it)


def _may_commit(rule: Rule) -> bool:
    fm = rule.match.get("ct_state")
    return fm is None or not fm.value & _INV
