"""Random clones holding ``check_pkt_larger``, for ``generate`` (opt-in feature
``CLONE_CHECK_FEATURE``, the ``clone_check`` item of the OVS oracles).

``check_clone`` draws a ``clone(…)`` whose list has a ``check_pkt_larger(N)->regR[b]``
(N around the drawn frames' lengths) with, before it, changes that must not
outlive the clone (an Ethernet address, a register) and now and then a lookup (the
rules it finds may write the clone's action set, which Open vSwitch runs again at
the check), and after it the rest of the clone that Open vSwitch forks there: a
lookup into a later table (whose rules match the register bits, so the two branches
go different ways and end in the clone's action set), outputs, more changes, and now
and then a nested clone with a check of its own. OneSwitch translates it as it is
(``oneswitch/clone_translate.py``). Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate_nx import PKT_LENS, resubmit_action
from .ir import Action, CheckPktLarger, Clone, Output, SetField, Subfield

CLONE_CHECK_FEATURE = "nx_clone_check"
_CHANGED = ("eth_src", "eth_dst", "reg0", "reg1")
_CHECKED = ("reg0", "reg1", "reg2")


def _changes(rng: random.Random, n: int) -> list[Action]:
    out: list[Action] = []
    for f in rng.sample(_CHANGED, n):
        value = rng.getrandbits(48 if f.startswith("eth") else 32)
        out.append(SetField(f, value & ~(1 << 40) if f.startswith("eth") else value))  # (no multicast source)
    return out


def check_clone(rng: random.Random, table: int, tables: int, ports: Sequence[int], in_port: int | None,
                depth: int = 0) -> Clone:
    """A clone with a ``check_pkt_larger`` from a rule in ``table`` (module doc)."""
    nested = _changes(rng, rng.choice((0, 1, 1, 2)))
    if rng.random() < 0.25:
        before = resubmit_action(rng, table, tables, ports, in_port)
        if before is not None:
            nested.append(before)
    nested.append(CheckPktLarger(rng.choice(PKT_LENS), Subfield(rng.choice(_CHECKED), rng.choice((0, 0, 1, 31)), 1)))
    if rng.random() < 0.3:
        nested += _changes(rng, 1)
    if rng.random() < 0.6:
        after = resubmit_action(rng, table, tables, ports, in_port)
        if after is not None:
            nested.append(after)
    nested += [Output(p) for p in rng.sample(list(ports), rng.choice((0, 1, 1, 2)))]
    if depth == 0 and rng.random() < 0.15:
        nested.insert(rng.randrange(len(nested) + 1), check_clone(rng, table, tables, ports, in_port, 1))
    return Clone(tuple(nested))


def clone_checks(a: Clone) -> bool:
    """Does the clone (or a clone in it) hold a ``check_pkt_larger``?"""
    return any(type(b) is CheckPktLarger or (type(b) is Clone and clone_checks(b)) for b in a.actions)
