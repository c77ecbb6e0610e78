"""One-pass analysis of a virtual rule for the OneSwitch compiler.

``_analyze`` reads a rule once and returns what translation needs (goto target,
pipeline facts, its in_port match, whether it sends anywhere, whether its
apply-actions have exactly one output and no group); ``_live`` and ``_facts``
feed the pipeline-wide check. It also refuses rules that touch the fields
OneSwitch keeps for itself (``ir.INTERNAL_FIELDS``: the PCIe flow-id mark).
Pure; cost O(actions).
"""

from __future__ import annotations

from collections import Counter
from tandem.rules.ir import (
    INTERNAL_FIELDS, ApplyActions, GotoTable, GroupAction, Output, Rule, SetField, WriteActions,
)

from .ids import TranslationError


_BAD_FIELD = (4, 6)  # OFPET_BAD_MATCH, OFPBMC_BAD_FIELD
_BAD_SET_TYPE = (2, 13)  # OFPET_BAD_ACTION, OFPBAC_BAD_SET_TYPE


def _analyze(rule: Rule) -> tuple:
    """One pass over a rule: (goto target, pipeline facts, its in_port match,
    whether any action outputs or calls a group — if not, its copies are the
    same on every switch — whether its apply-actions are free of group actions,
    and, for such apply-actions with exactly one output, that output's index,
    else -1). Facts (fact -> table) feed the pipeline-wide check: ``wgroup``
    writes a group and jumps on (keyed by the goto target); ``wout`` writes an
    output without a group."""
    in_port = None
    for k, fm in rule.match.fields:
        if k == "in_port":
            in_port = fm
        elif k in INTERNAL_FIELDS:
            raise TranslationError(rule, f"matches {k}: OneSwitch carries its PCIe flow id in that field", _BAD_FIELD)
    goto = None
    wg = wo = sends = False
    plain = True
    outs = 0
    out_at = -1
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
                elif ta is SetField and a.field in INTERNAL_FIELDS:
                    raise TranslationError(rule, f"set_field on {a.field}: OneSwitch carries its PCIe flow id in that field",
                                           _BAD_SET_TYPE)
        elif t is WriteActions:
            g = o = False
            for a in ins.actions:
                ta = type(a)
                if ta is GroupAction:
                    g = True
                elif ta is Output:
                    o = True
                elif ta is SetField and a.field in INTERNAL_FIELDS:
                    raise TranslationError(rule, f"set_field on {a.field}: OneSwitch carries its PCIe flow id in that field",
                                           _BAD_SET_TYPE)
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
    return goto, facts, in_port, sends, plain, out_at if plain and outs == 1 else -1


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
