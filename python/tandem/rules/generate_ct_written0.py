"""Rules that write ``ct(table=0)`` into the action set, for the connection-tracking
oracles (``generate_ct_focus``'s ``write_ct_table0``).

``written_table0(rng, rule, ports)``: a rule of ``generate_ct.ct_ruleset`` in table 1
or 2 remade, with its table, priority and ct match, into one whose write_actions
hold ``ct(table=0)``: alone (its zone immediate or read from ``reg0[0..15]``, loaded
by the apply-actions), committing (``ct(commit,exec(...),table=0)``) or after
``ct_clear`` (which wins: nothing runs); some output the packet in their
apply-actions first. Open vSwitch runs a written ct as a final action when the
pipeline ends and recirculates the tracked copy into table 0 with an empty action
set. Most such rules also match ``reg1=0`` and load ``reg1`` (in
their apply-actions, or written before the ct: the set's set-fields run first), so
that the copy (whose registers go with it) takes the ordinary rules on its second
pass; the others may recirculate until the datapath's depth drops the copy. No
output and no goto go with it (Open vSwitch 3.1 aborts on some recirculations with
a non-empty action set, docs/endpoint.md; ``without_written_outputs``). Pure: all
randomness comes from ``rng``.
"""

from __future__ import annotations

import random

from .generate_ct import _S, _commit_zone, _exec, _outputs, _zone_actions, ZONES
from .ir import ApplyActions, Ct, CtClear, Match, Output, Rule, SetField, WriteActions

# The register that keeps a recirculated copy from taking the same rule again.
GUARD = "reg1"


def written_table0(rng: random.Random, rule: Rule, ports: list[int]) -> Rule:
    """``rule`` (table >= 1, a ct match) remade to write ``ct(table=0)`` (module doc)."""
    fields = dict(rule.match.fields)
    pre, zarg = _zone_actions(rng, rng.choice(ZONES))
    w = rng.random()
    if w < 0.5:
        written: list = [Ct(table=0, **zarg)]
    elif w < 0.65:
        written = [Ct(commit=True, exec=_exec(rng), table=0, **_commit_zone(rng))]
        st = fields["ct_state"]
        if st[0] & _S["inv"]:  # (Open vSwitch commits no +inv packet)
            fields["ct_state"] = (st[0] & ~_S["inv"], st[1])
    elif w < 0.85:
        written = [Ct(table=0, **zarg)]
    else:
        written = [CtClear(), Ct(table=0, **zarg)]  # ct_clear wins: nothing runs
    if rng.random() < 0.85:
        fields[GUARD] = 0
        load = SetField(GUARD, rng.randint(1, 3))
        if 0.65 <= w < 0.85:  # loaded by the action set, whose set-fields run before its ct
            written = [load] + written
        else:
            pre = pre + [load]
    if rng.random() < 0.4:  # an output before the pipeline ends (the packet's own, not the copy's)
        pre = pre + _outputs(rng, ports)[:1]
    ins = ((ApplyActions(tuple(pre)),) if pre else ()) + (WriteActions(tuple(written)),)
    return Rule(Match.of(**fields), ins, rule.table, rule.priority)


def without_written_outputs(rule: Rule) -> Rule:
    """``rule`` with no output in its write_actions (OneSwitch refuses a written
    ``ct(table=0)`` beside a written output that may cross PCIe wherever rules look
    tables up out of order, as the ct rule sets' recirculations back do:
    docs/oneswitch.md section 7)."""
    ins = tuple(WriteActions(tuple(a for a in i.actions if type(a) is not Output)) if type(i) is WriteActions else i
                for i in rule.instructions)
    return rule if ins == rule.instructions else Rule(rule.match, ins, rule.table, rule.priority)


def writes_ct_table0(rule: Rule) -> bool:
    """Does ``rule`` write ``ct(table=0)`` into the action set?"""
    return any(type(i) is WriteActions and any(type(a) is Ct and a.table == 0 for a in i.actions)
               for i in rule.instructions)
