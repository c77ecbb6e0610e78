"""The focused connection-tracking rule sets (generate_ct_focus.py): half the rules
(the clone forms: every rule with apply-actions) use the form asked for, the skeleton that tracks and commits stays, and every
rule still uses connection tracking."""

import random

import pytest

from tandem.rules.generate_ct import ct_ruleset
from tandem.rules.generate_ct_focus import FOCUS, focused_ct_ruleset, uses
from tandem.rules.ir import ApplyActions, Ct, CtClear

PORTS = [1, 2, 3, 4]


@pytest.mark.parametrize("focus", FOCUS)
def test_half_the_rules_use_the_focus_and_the_skeleton_stays(focus):
    rules = focused_ct_ruleset(random.Random(5), 200, PORTS, focus)
    assert len(rules) == 200
    # half (for recirc_id: all but the six skeleton rules; for the clone forms every rule but
    # the skeleton's that has apply-actions, generate_clone_ct.py)
    applying = sum(r.priority >= 100 and any(type(i) is ApplyActions for i in r.instructions) for r in rules)
    want = 194 if focus == "recirc_id" else applying if focus.startswith("clone_") else 100
    assert sum(uses(r, focus) for r in rules) == want and want >= 100
    skeleton = [(r.table, r.priority) for r in rules if r.priority < 100]
    assert sorted(skeleton) == [(0, 1), (0, 2), (1, 10), (1, 11), (1, 12), (1, 13)]
    assert all(any(k.startswith("ct_") for k, _ in r.match) or
               any(isinstance(a, (Ct, CtClear)) for i in r.instructions for a in getattr(i, "actions", ()))
               for r in rules)
    assert focused_ct_ruleset(random.Random(5), 200, PORTS, focus) == rules  # pure


def test_the_plain_generator_uses_each_focus_far_less():
    rules = ct_ruleset(random.Random(5), 200, PORTS, 4.0)
    for focus in ("ct_tp_hidden", "ct_table0"):
        assert 0 < sum(uses(r, focus) for r in rules) < 40


def test_an_unknown_focus_is_one_precise_error():
    with pytest.raises(ValueError, match="unknown focus 'nat'"):
        focused_ct_ruleset(random.Random(1), 20, PORTS, "nat")
