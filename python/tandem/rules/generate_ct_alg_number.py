"""ct actions with an alg number Open vSwitch 3.1 runs no ALG for (``ct(commit,alg=80)``:
any NXAST_CT alg but 0, 21 and 69), for the OVS oracles (``tandem bench ct_oracle --
--alg P --alg-number Q``).

``with_alg_numbers(rng, rules, share)``: ``rules`` with about ``share`` of their ct
actions (with ``alg=ftp|tftp``, with ``nat`` or neither) given such a number instead;
OVS then tracks the connection as without an alg (no helper: an FTP / TFTP control
message through it expects nothing). Pure: the same ``rng`` state gives the same rules.
"""

from __future__ import annotations

import random
from dataclasses import replace

from .ir import ApplyActions, Ct, Rule, WriteActions, ct_alg_number

# the well-known neighbours of the ALGs' ports, and the ends of the range
NUMBERS = (1, 20, 22, 68, 70, 80, 2121, 6969, 65535)


def _number(rng: random.Random) -> str:
    n = rng.choice(NUMBERS) if rng.random() < 0.7 else rng.randint(1, 0xFFFF)
    return str(n if n not in (21, 69) else n + 1)


def with_alg_numbers(rng: random.Random, rules: list[Rule], share: float) -> list[Rule]:
    def fix(a):
        if type(a) is Ct and rng.random() < share:
            return replace(a, alg=_number(rng))
        return a

    return [replace(r, instructions=tuple(replace(i, actions=tuple(fix(a) for a in i.actions))
                                          if type(i) in (ApplyActions, WriteActions) else i for i in r.instructions))
            for r in rules]


def uses_alg_number(rule: Rule) -> bool:
    return any(type(a) is Ct and ct_alg_number(a.alg) is not None for i in rule.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions)
