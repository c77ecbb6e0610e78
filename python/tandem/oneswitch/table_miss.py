"""A table-miss flow's packet-ins: reason ``no_match``, as Open vSwitch 3.1 sends them.

OpenFlow 1.3 calls a rule of priority 0 that matches everything the table-miss
flow, and Open vSwitch reports the packet-ins its own actions send with reason
``action`` (``output:CONTROLLER``, ``controller(reason=action)``, also inside
``clone``) as ``no_match`` (its "explicit miss"; written actions, group buckets
and rules a resubmit finds keep theirs). A physical copy of such a rule is often
no table-miss flow of its physical switch: in table 0 it also matches
``pkt_mark=0`` (docs/oneswitch.md §3), and a rule split per in_port or per
register value matches more. So the translation gives the copies
``controller(reason=no_match)`` in place of those actions, with the same
max_len (the endpoint reads the virtual controller id, reason and userdata back:
``packet_in_ext.py``). Pure.
"""

from __future__ import annotations

from dataclasses import replace

from tandem.rules.ir import OFPP_CONTROLLER, ApplyActions, Clone, Controller, Output, Rule

REASON_NO_MATCH, REASON_ACTION = 0, 1


def is_table_miss(rule: Rule) -> bool:
    """Open vSwitch's ``rule_is_table_miss``: priority 0 and a match of nothing."""
    return rule.priority == 0 and not rule.match.fields


def _explicit_miss(actions: tuple) -> tuple:
    out = []
    for a in actions:
        t = type(a)
        if t is Output and a.port == OFPP_CONTROLLER:
            a = Controller(a.max_len, 0, REASON_NO_MATCH)
        elif t is Controller and a.reason == REASON_ACTION:
            a = replace(a, reason=REASON_NO_MATCH)
        elif t is Clone:
            a = Clone(_explicit_miss(a.actions))
        out.append(a)
    return tuple(out) if out != list(actions) else actions


def _apply(ins: ApplyActions) -> ApplyActions:
    actions = _explicit_miss(ins.actions)
    return ins if actions is ins.actions else ApplyActions(actions)


def explicit_miss(rule: Rule) -> Rule:
    """The rule to translate for ``rule``: itself, or for a table-miss flow whose
    apply-actions send packet-ins with reason action, the same rule with those sent as
    ``controller(reason=no_match)``."""
    if not is_table_miss(rule):
        return rule
    instructions = tuple(_apply(i) if type(i) is ApplyActions else i for i in rule.instructions)
    if all(a is b for a, b in zip(instructions, rule.instructions)):
        return rule
    return replace(rule, instructions=instructions)


__all__ = ["explicit_miss", "is_table_miss"]
