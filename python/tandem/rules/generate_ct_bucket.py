"""Connection-tracking rule sets whose groups run ``ct`` / ``ct_clear`` in their
buckets, for the dp-core OVS oracle (``tandem bench ct_oracle -- --bucket-ct``).

``bucket_ct_ruleset(rng, n, ports)``: ``generate_ct.ct_ruleset``'s rules and
``N_GROUPS`` groups (all, indirect, fast_failover watching live ports; no select,
below) whose buckets hold, drawn per bucket: ``ct(table=T)`` (its zone immediate or read
from ``reg0[0..15]``, often after a register load the copy carries), a commit
(``ct(commit,exec(...))``, into a table or not), ``ct_clear`` beside an output or a
``ct`` (Open vSwitch runs a bucket as an action set: the output wins over both,
ct_clear over ct), ``ct`` beside an output, or a plain output. Half the drawn rules
are remade to apply one of the groups (after their zone load), keeping their
table, match and priority, and matching ``reg1=0`` too: a bucket loading ``reg1``
keeps its copy from taking such a rule again. No written action goes beside
a group that recirculates (Open vSwitch 3.1 aborts on some recirculations with a
non-empty action set, docs/endpoint.md). Pure: all randomness comes from ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace

from .generate_ct import _commit_zone, _exec, _zone_actions, ZONES, ct_ruleset
from .generate_ct_nat import _nat_for
from .ir import ApplyActions, Bucket, Ct, CtClear, Group, GroupAction, Match, Output, Rule, SetField

N_GROUPS = 8
GUARD = "reg1"  # (as generate_ct_written0's)
_SKELETON_MAX_PRIORITY = 100  # (generate_ct_focus's: the skeleton's priorities are below)


def _bucket_actions(rng: random.Random, ports: list[int]) -> tuple:
    pre, zarg = _zone_actions(rng, rng.choice(ZONES))
    k = rng.random()
    if k < 0.4:
        acts = [Ct(table=rng.choice((1, 1, 2, 0)), **zarg)]
    elif k < 0.55:
        acts = [Ct(commit=True, exec=_exec(rng), table=rng.choice((None, 1, 2)), **_commit_zone(rng))]
    elif k < 0.65:
        acts = [CtClear(), Output(rng.choice(ports))]  # the output wins
    elif k < 0.75:
        acts = [CtClear(), Ct(table=1, **zarg)]  # ct_clear wins: nothing runs
    elif k < 0.85:
        acts = [Ct(table=1, **zarg), Output(rng.choice(ports))]  # the output wins
    else:
        acts = [Output(rng.choice(ports))]
    if rng.random() < 0.6:
        pre = pre + [SetField(GUARD, rng.randint(1, 3))]
    return tuple(pre + acts)


def ct_groups(rng: random.Random, ports: list[int]) -> list[Group]:
    """``N_GROUPS`` groups with ct in their buckets (module doc)."""
    out = []
    for gid in range(1, N_GROUPS + 1):
        # (no select group: Open vSwitch 3.1 picks its bucket by the datapath's hash, which
        # costs a recirculation dp-core does not count, and by a hash dp-core's is not)
        kind = rng.choice(("all", "all", "indirect", "fast_failover"))
        n = 1 if kind == "indirect" else rng.randint(1, 3)
        buckets = []
        for _ in range(n):
            acts = _bucket_actions(rng, ports)
            if kind == "fast_failover":
                buckets.append(Bucket(acts, watch_port=rng.choice(ports)))
            else:
                buckets.append(Bucket(acts))
        out.append(Group(gid, kind, tuple(buckets)))
    return out


def uses_bucket_ct(rule: Rule) -> bool:
    """Does ``rule`` apply a group (of ``ct_groups``)?"""
    return any(type(a) is GroupAction for a in rule.apply_actions)


def bucket_ct_ruleset(rng: random.Random, n: int, ports: list[int],
                      ruleset=ct_ruleset) -> tuple[list[Rule], list[Group]]:
    """``n`` rules, half the drawn ones applying a group of ``ct_groups``, and the groups
    (``ruleset``: the rules' generator, as ``ct_ruleset``; ``generate_ct_nat.nat_ruleset``
    gives the other rules' ct a nat)."""
    groups = ct_groups(rng, ports)
    rules = ruleset(rng, n, ports, 4.0)
    skeleton = [r for r in rules if r.priority < _SKELETON_MAX_PRIORITY]
    drawn = [r for r in rules if r.priority >= _SKELETON_MAX_PRIORITY]
    for i in range(0, len(drawn), 2):
        r = drawn[i]
        pre = [a for a in r.apply_actions if type(a) is SetField and a.field == "reg0"]
        fields = dict(r.match.fields)
        fields[GUARD] = 0
        drawn[i] = Rule(Match.of(**fields), (ApplyActions(tuple(pre) + (GroupAction(rng.choice(groups).group_id),)),),
                        r.table, r.priority)
    return skeleton + drawn, groups


def with_bucket_nat(rng: random.Random, groups: list[Group], share: float = 0.5) -> list[Group]:
    """``groups`` with a ``nat`` on about ``share`` of their buckets' commits (IPv4 ranges: a
    bucket checks no prerequisite, so IPv6 packets meet them too)."""
    out = []
    for g in groups:
        buckets = tuple(replace(b, actions=tuple(replace(a, nat=_nat_for(rng, a, 0x0800)) if type(a) is Ct and a.commit
                                                 and rng.random() < share else a for a in b.actions))
                        for b in g.buckets)
        out.append(replace(g, buckets=buckets))
    return out


def uses_bucket_nat(g: Group) -> bool:
    """Does a bucket of ``g`` run a ct with a ``nat``?"""
    return any(type(a) is Ct and a.nat is not None for b in g.buckets for a in b.actions)
