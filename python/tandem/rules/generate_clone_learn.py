"""Learning rule sets whose learn actions run inside ``clone(…)`` (``tandem bench
learn_oracle -- --clone``).

``clone_learn_ruleset`` draws ``generate_learn.learn_ruleset``'s rules and puts every
learn action of a learning rule in a clone of its own, now and then after a change
of the copy's Ethernet source (one of the traffic's addresses, so the flow learned
from the copy differs from the one the packet would give and still meets traffic)
and with an output after it; the packet goes on unchanged to the rule's next table
or output. Pure: all randomness comes from the caller's ``rng``."""

from __future__ import annotations

import random
from dataclasses import replace

from .generate_learn import MACS, learn_ruleset
from .ir import Action, ApplyActions, Clone, Learn, Output, Rule, SetField


def _cloned(rng: random.Random, a: Learn, ports: list[int]) -> Clone:
    nested: list[Action] = [a]
    if rng.random() < 0.4:
        nested.insert(0, SetField("eth_src", rng.choice(MACS)))
    if rng.random() < 0.2:
        nested.append(Output(rng.choice(ports)))
    return Clone(tuple(nested))


def clone_learn_ruleset(rng: random.Random, n: int, ports: list[int]) -> list[Rule]:
    out = []
    for r in learn_ruleset(rng, n, ports):
        ins = tuple(ApplyActions(tuple(_cloned(rng, a, ports) if type(a) is Learn else a for a in i.actions))
                    if type(i) is ApplyActions else i for i in r.instructions)
        out.append(replace(r, instructions=ins))
    return out
