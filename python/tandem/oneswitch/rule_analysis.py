"""One-pass analysis of a virtual rule for the OneSwitch compiler.

``_analyze`` reads a rule once and returns what translation needs (goto target,
VLAN depth on entry and after its actions, pipeline facts, its in_port match,
whether it sends anywhere, whether its apply-actions take the plain path);
``_live`` and ``_facts`` feed the pipeline-wide checks. Pure; cost O(actions).
"""

from __future__ import annotations

from collections import Counter
from tandem.rules.ir import (
    OFPVID_PRESENT, ApplyActions, GotoTable, GroupAction, Output, PopVlan, PushVlan, Rule, WriteActions,
)

def _analyze(rule: Rule) -> tuple:
    """One pass over a rule: (goto target, VLAN tags OVS may track on entry, after
    its actions, pipeline facts, its in_port match, whether any action outputs
    or calls a group — if not, its copies are the same on every switch, whether
    its apply-actions are free of push_vlan, pop_vlan and group — if so, they
    take ``Compiler._plain_actions`` — and, for plain apply-actions with exactly
    one output, that output's index, else -1). Entry depth is an upper bound: OVS parses one
    tag and rules never jump on holding two (see ``_translate_rule``); 0 if the
    rule matches untagged packets only. Facts (fact -> table) feed the
    pipeline-wide checks: ``wgroup`` writes a group and jumps on (keyed by the
    goto target); ``wout`` writes an output without a group; ``wsend`` writes an
    output or a group; ``deep`` ends the pipeline possibly holding two tags."""
    entry = 1
    in_port = None
    for k, fm in rule.match.fields:
        if k == "vlan_vid":
            if not fm.value & OFPVID_PRESENT and (0x1FFF if fm.mask is None else fm.mask) & OFPVID_PRESENT:
                entry = 0
        elif k == "in_port":
            in_port = fm
    goto = None
    v = entry
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
                elif ta is PushVlan:
                    v += 1
                    plain = False
                elif ta is PopVlan:
                    v = max(0, v - 1)
                    plain = False
                elif ta is GroupAction:
                    sends = True
                    plain = False
        elif t is WriteActions:
            g = o = False
            for a in ins.actions:
                ta = type(a)
                if ta is PushVlan:
                    v += 1
                elif ta is GroupAction:
                    g = True
                elif ta is Output:
                    o = True
            wg, wo = g, o
            sends = sends or g or o
        elif t is GotoTable:
            goto = ins.table
    if outs:
        sends = True
    if not wg and not wo and (goto is not None or v < 2):
        facts = _NO_FACTS
    else:
        facts = {}
        if wg and goto is not None:
            facts["wgroup"] = goto
        if wo and not wg:
            facts["wout"] = rule.table
        if wo or wg:
            facts["wsend"] = rule.table
        if goto is None and v >= 2:
            facts["deep"] = rule.table
    return goto, entry, v, facts, in_port, sends, plain, out_at if plain and outs == 1 else -1


_NO_FACTS: dict[str, int] = {}  # shared, never written


def _live(pipeline: dict[str, Counter], name: str, plus: dict[str, int], minus: dict[str, int]) -> list[int]:
    """Tables holding fact ``name`` once a rule with facts ``plus`` replaces one with ``minus``."""
    counts, add, sub = pipeline[name], plus.get(name), minus.get(name)
    out = [t for t, n in counts.items() if n + (t == add) - (t == sub) > 0]
    if add is not None and add not in counts:
        out.append(add)
    return out


def _facts(rule: Rule) -> dict[str, int]:
    return _analyze(rule)[3]
