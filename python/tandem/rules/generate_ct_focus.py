"""Connection-tracking rule sets focused on one form, for the OVS oracles
(``tandem bench ct_oracle -- --focus FORM``): ``generate_ct.ct_ruleset``'s rules,
half of them rules that use the form, the other half (with the skeleton, which
tracks and commits) ordinary ones, so that traffic still reaches outputs (rules that
all recirculate back would loop to the datapath's depth and send nothing) and a few
sets reach thousands of rules using the form.

Forms (``FOCUS``):
* ``ct_tp_hidden``: ``ct_tp_src`` / ``ct_tp_dst`` matched without ``ct_nw_proto``
  (Open vSwitch matches them but does not show them, ct_shown.py);
* ``ct_table0``: ``ct(table=0)`` in the apply actions (back into table 0);
* ``recirc_id``: ``recirc_id=0`` on every rule but the skeleton (met on arrival,
  never by a copy ct(table=T) recirculated, so the skeleton carries those);
* ``write_ct_table0``: ``ct(table=0)`` written into the action set (drawn rules of
  tables 1 and 2 remade, ``generate_ct_written0.py``; no written outputs).
* ``clone_ct_clear``: ``clone(ct_clear, …)`` in every rule with apply-actions
  but the skeleton (generate_clone_ct.py); ``clone_ct``: ``clone(ct(…), …)``, a
  ct without recirculation, likewise.
* ``lookup_ct``: a ``resubmit`` into a later table (now and then inside a clone) in
  half the drawn rules, so that ``ct(table=T)`` runs in rules a lookup found
  (generate_ct_lookup.py; no rule writes the action set).
* ``ct_table_in_clone``: ``clone(ct(table=T), …)`` in half the drawn rules, the copy
  recirculated from inside the clone (generate_ct_lookup.py; OneSwitch translates it as
  it is, oneswitch/clone_translate.py).
Pure: all randomness comes from the caller's ``rng``."""

from __future__ import annotations

import random

from .ct_shown import ct_ports_hidden
from .generate_ct import ct_ruleset
from .generate_ct_written0 import without_written_outputs, written_table0, writes_ct_table0
from .generate_fields import with_recirc_id
from .ir import Ct, Rule
from .generate_clone_ct import uses_clone_ct, uses_clone_ct_clear, with_clone_ct_clear
from .generate_ct_lookup import uses_clone_ct_table, uses_lookup, with_clone_ct_table, with_lookup, writes

FOCUS = ("ct_tp_hidden", "ct_table0", "recirc_id", "write_ct_table0")
FOCUS += ("clone_ct_clear",)  # clone_ct_clear (generate_clone_ct.py)
FOCUS += ("clone_ct",)  # clone_ct (generate_clone_ct.py)
FOCUS += ("lookup_ct",)  # lookup_ct (generate_ct_lookup.py)
FOCUS += ("ct_table_in_clone",)  # ct_table_in_clone (generate_ct_lookup.py)

# The skeleton ct_ruleset starts with (track, commit new, pass established: per IP
# version) has priorities below 100; every drawn rule's are 1000 or more.
_SKELETON_MAX_PRIORITY = 100
# Draws per kept rule, at the generator's share of the form with ``newer`` 4
# (ct_tp hidden: about 1 rule in 12; ct(table=0): 1 in 10).
_OVERDRAW = 20


def uses(rule: Rule, focus: str) -> bool:
    """Does ``rule`` use the form ``focus``?"""
    if focus == "ct_tp_hidden":
        return ct_ports_hidden(rule.match)
    if focus == "ct_table0":
        return any(type(a) is Ct and a.table == 0 for a in rule.apply_actions)
    if focus == "recirc_id":
        return rule.match.get("recirc_id") is not None
    if focus == "write_ct_table0":
        return writes_ct_table0(rule)
    if focus == "clone_ct_clear":
        return uses_clone_ct_clear(rule)
    if focus == "clone_ct":
        return uses_clone_ct(rule)
    if focus == "lookup_ct":
        return uses_lookup(rule)
    if focus == "ct_table_in_clone":
        return uses_clone_ct_table(rule)
    raise ValueError(f"unknown focus {focus!r} (one of {', '.join(FOCUS)})")


def focused_ct_ruleset(rng: random.Random, n: int, ports: list[int], focus: str) -> list[Rule]:
    """``n`` ct rules (fewer if the draws run out, which the caller sees in the count
    of rules using ``focus``): the skeleton, ``n // 2`` rules that use ``focus`` and
    ordinary ones (for ``recirc_id``: all but the skeleton use it)."""
    if focus not in FOCUS:
        raise ValueError(f"unknown focus {focus!r} (one of {', '.join(FOCUS)})")
    if focus == "recirc_id":
        rules = ct_ruleset(rng, n, ports, 4.0)
        skeleton = [r for r in rules if r.priority < _SKELETON_MAX_PRIORITY]
        return skeleton + with_recirc_id(rng, [r for r in rules if r.priority >= _SKELETON_MAX_PRIORITY], 1.0)
    if focus == "write_ct_table0":  # (half the drawn rules of tables 1 and 2 remade)
        rules = ct_ruleset(rng, n, ports, 4.0)
        skeleton = [r for r in rules if r.priority < _SKELETON_MAX_PRIORITY]
        drawn = [r for r in rules if r.priority >= _SKELETON_MAX_PRIORITY]
        later = [i for i, r in enumerate(drawn) if r.table >= 1][: n // 2]
        for i in later:
            drawn[i] = written_table0(rng, drawn[i], ports)
        return skeleton + [without_written_outputs(r) for r in drawn]
    if focus in ("clone_ct_clear", "clone_ct"):  # (every drawn rule with apply-actions gets the clone, which outputs)
        rules = ct_ruleset(rng, n, ports, 4.0)
        ct = focus == "clone_ct"
        return [r if r.priority < _SKELETON_MAX_PRIORITY else with_clone_ct_clear(rng, r, ports, ct) or r for r in rules]
    if focus in ("lookup_ct", "ct_table_in_clone"):  # (n // 2 drawn rules get the form; none writes the action set)
        add = with_lookup if focus == "lookup_ct" else with_clone_ct_table
        rules = [r for r in ct_ruleset(rng, n * 3, ports, 4.0) if not writes(r)][:n]
        able = [i for i, r in enumerate(rules) if r.priority >= _SKELETON_MAX_PRIORITY and add(rng, r, ports)]
        for i in sorted(rng.sample(able, min(n // 2, len(able)))):
            rules[i] = add(rng, rules[i], ports) or rules[i]
        return rules
    rules = ct_ruleset(rng, n * _OVERDRAW // 2, ports, 4.0)
    skeleton = [r for r in rules if r.priority < _SKELETON_MAX_PRIORITY]
    drawn = [r for r in rules if r.priority >= _SKELETON_MAX_PRIORITY]
    focused = [r for r in drawn if uses(r, focus)][: n // 2]
    return skeleton + focused + [r for r in drawn if not uses(r, focus)][: n - len(skeleton) - len(focused)]
