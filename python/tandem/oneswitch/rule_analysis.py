"""One-pass analysis of a virtual rule for the OneSwitch compiler.

``_analyze`` reads a rule once and returns what translation needs (goto target,
its in_port match, whether it sends anywhere, whether its
apply-actions have exactly one output and no group, whether it writes FLOOD
or ALL into the action set). It also refuses rules that touch the fields
OneSwitch keeps for itself (``ir.INTERNAL_FIELDS``: the PCIe flow-id mark).
Pure; cost O(actions).
"""

from __future__ import annotations

from tandem.rules.ir import (
    INTERNAL_FIELDS, OFPP_ALL, OFPP_FLOOD, ApplyActions, GotoTable, GroupAction, Output, Rule, SetField, WriteActions,
)

from .ids import TranslationError


_BAD_FIELD = (4, 6)  # OFPET_BAD_MATCH, OFPBMC_BAD_FIELD
_BAD_SET_TYPE = (2, 13)  # OFPET_BAD_ACTION, OFPBAC_BAD_SET_TYPE


def _analyze(rule: Rule) -> tuple:
    """One pass over a rule: (goto target, whether it writes FLOOD or ALL into the
    action set, its in_port match, whether any action outputs or calls a group —
    if not, its copies are the same on every switch — whether its apply-actions
    are free of group actions, and, for such apply-actions with exactly one
    output, that output's index, else -1)."""
    in_port = None
    for k, fm in rule.match.fields:
        if k == "in_port":
            in_port = fm
        elif k in INTERNAL_FIELDS:
            raise TranslationError(rule, f"matches {k}: OneSwitch carries its PCIe flow id in that field", _BAD_FIELD)
    goto = None
    wflood = sends = False
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
            for a in ins.actions:
                ta = type(a)
                if ta is GroupAction:
                    sends = True
                elif ta is Output:
                    sends = True
                    wflood = wflood or a.port in _FLOODS
                elif ta is SetField and a.field in INTERNAL_FIELDS:
                    raise TranslationError(rule, f"set_field on {a.field}: OneSwitch carries its PCIe flow id in that field",
                                           _BAD_SET_TYPE)
        elif t is GotoTable:
            goto = ins.table
    if outs:
        sends = True
    return goto, wflood, in_port, sends, plain, out_at if plain and outs == 1 else -1


_FLOODS = (OFPP_FLOOD, OFPP_ALL)
