"""The ct rule sets with ct in group buckets (generate_ct_bucket.py): half the drawn
rules apply a group, the skeleton stays, every group is ovs-ofctl text that parses
back, and most buckets hold ct or ct_clear (into a table, too)."""

import random

from tandem.rules.generate_ct_bucket import GUARD, N_GROUPS, bucket_ct_ruleset, uses_bucket_ct
from tandem.rules.ir import Ct, CtClear, GroupAction
from tandem.rules.ofctl import format_group, parse_group

PORTS = [1, 2, 3, 4]


def test_half_the_drawn_rules_apply_a_group_with_ct_in_its_buckets():
    rules, groups = bucket_ct_ruleset(random.Random(3), 200, PORTS)
    assert len(rules) == 200 and len(groups) == N_GROUPS
    users = [r for r in rules if uses_bucket_ct(r)]
    assert len(users) == 97  # (every other one of the 194 drawn)
    assert all(r.match.get(GUARD).value == 0 for r in users)
    ids = {g.group_id for g in groups}
    assert {a.group_id for r in users for a in r.apply_actions if type(a) is GroupAction} <= ids
    assert sorted((r.table, r.priority) for r in rules if r.priority < 100) == [
        (0, 1), (0, 2), (1, 10), (1, 11), (1, 12), (1, 13)]
    buckets = [b for g in groups for b in g.buckets]
    with_ct = [b for b in buckets if any(isinstance(a, (Ct, CtClear)) for a in b.actions)]
    assert len(with_ct) > len(buckets) // 2
    assert any(type(a) is Ct and a.table is not None for b in buckets for a in b.actions)
    assert all(parse_group(format_group(g)) == g for g in groups)
    assert bucket_ct_ruleset(random.Random(3), 200, PORTS) == (rules, groups)  # pure
