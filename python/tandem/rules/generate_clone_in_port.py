"""Random clones that read ``in_port`` for ``generate`` (opt-in feature ``CLONE_IN_PORT_FEATURE``).

``in_port_clone`` draws a ``clone(…)`` holding a move from in_port (its low 8, 16
or 32 bits) into a register or the low bits of eth_src / eth_dst — so the port
number shows in the frames the clone sends — and one or two outputs, now and then
a clone of that nested once more. OneSwitch pins the move per copy of the rule
(``oneswitch/rule_analysis.pin_in_port``). Pure: all randomness comes from the
caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .ir import Action, Clone, MoveField, Output, Subfield

CLONE_IN_PORT_FEATURE = "nx_clone_in_port"


def in_port_clone(rng: random.Random, ports: Sequence[int]) -> Clone:
    n = rng.choice((8, 16, 32))
    dst = rng.choice(("eth_src", "eth_dst", "reg0", "reg1"))
    nested: list[Action] = [MoveField(Subfield("in_port", 0, n), Subfield(dst, 0, n))]
    nested += [Output(p) for p in rng.sample(list(ports), rng.randint(1, min(2, len(ports))))]
    if rng.random() < 0.2:
        nested = [Clone(tuple(nested))]
    return Clone(tuple(nested))
