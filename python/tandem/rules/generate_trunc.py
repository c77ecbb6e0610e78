"""Random ``output(port=P,max_len=N)`` for ``generate`` (opt-in feature ``TRUNC_FEATURE``).

``with_output_trunc`` inserts one or two truncated outputs at random places of
a drawn apply-actions list, so they meet the VLAN and MPLS pushes and pops, the
outputs, groups and clones around them that decide what Open vSwitch's datapath
cuts (docs/rule-syntax.md). Ports: mostly the switch's, now and then IN_PORT
(which sends nothing) or a number no port has; lengths around the drawn
frames'. Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .ir import OFPP_IN_PORT, Action, OutputTrunc

TRUNC_FEATURE = "nx_output_trunc"
TRUNC_LENS = (14, 18, 20, 34, 42, 54, 60, 64, 100, 1500)


def with_output_trunc(rng: random.Random, acts: list[Action], ports: Sequence[int]) -> list[Action]:
    out = list(acts)
    for _ in range(rng.choice((1, 1, 2))):
        x = rng.random()
        port = rng.choice(list(ports)) if x < 0.85 else rng.choice((OFPP_IN_PORT, 77))
        out.insert(rng.randrange(len(out) + 1), OutputTrunc(port, rng.choice(TRUNC_LENS)))
    return out
