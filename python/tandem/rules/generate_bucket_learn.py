"""Learning rule sets whose rules also apply groups with ``learn`` in their buckets
(``tandem bench learn_oracle -- --bucket-learn``).

Open vSwitch 3.1 runs a bucket as an action set, which has no place for ``learn``:
there it learns nothing (measured), and dp-core and OneSwitch do the same. So
``bucket_learn_ruleset`` draws ``generate_learn.learn_ruleset``'s rules and gives
every learning rule a group of its own, applied first in its list, whose buckets
hold learn actions (its own specs, or the rule's learns moved there in about half of
them, so the rule then learns nothing itself), one bucket with an output to a random
port now and then, another with a learn alone; the learned flows and the frames
must still be what one OVS bridge gives. Returns the rules and the groups. Pure:
all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace

from .generate_learn import learn_ruleset
from .ir import ApplyActions, Bucket, Group, GroupAction, Learn, Output, Rule


def _group(rng: random.Random, gid: int, learns: list[Learn], ports: list[int]) -> Group:
    first = tuple(learns) + ((Output(rng.choice(ports)),) if rng.random() < 0.4 else ())
    buckets = [Bucket(first)] + ([Bucket((learns[-1],))] if rng.random() < 0.5 else [])
    return Group(gid, "all", tuple(buckets))


def uses_bucket_learn(rule: Rule, groups: dict[int, Group]) -> bool:
    """Does ``rule`` apply a group with a learn in a bucket?"""
    return any(type(a) is GroupAction and a.group_id in groups
               and any(type(b) is Learn for bk in groups[a.group_id].buckets for b in bk.actions)
               for a in rule.apply_actions)


def bucket_learn_ruleset(rng: random.Random, n: int, ports: list[int]) -> tuple[list[Rule], list[Group]]:
    """``n`` rules and the groups their learning rules apply (module doc)."""
    rules, groups = [], []
    for r in learn_ruleset(rng, n, ports):
        learns = [a for a in r.apply_actions if type(a) is Learn]
        if not learns:
            rules.append(r)
            continue
        gid = len(groups) + 1
        groups.append(_group(rng, gid, learns, ports))
        moved = rng.random() < 0.5
        ins = tuple(ApplyActions((GroupAction(gid),) + tuple(a for a in i.actions if not (moved and type(a) is Learn)))
                    if type(i) is ApplyActions else i for i in r.instructions)
        rules.append(replace(r, instructions=ins))
    return rules, groups
