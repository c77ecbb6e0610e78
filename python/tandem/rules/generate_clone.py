"""Random ``clone(actions)`` for ``generate`` (opt-in feature ``CLONE_FEATURE``).

``clone_wrapped`` wraps a random run of a drawn apply-actions list in a clone,
sometimes a run inside that again (clones nest), and sometimes adds an empty
clone. Prerequisites stay as OVS checks them: a run that changes what later
actions may rely on (a VLAN or MPLS push or pop) is wrapped only when it ends
the list, since the packet leaves a clone as it entered. Runs with what the
translator does not translate there (``oneswitch/clone_translate.py``: NORMAL, pushes of
in_port) are left unwrapped, and so are those that other generators put in
clones, in rule sets of their own: lookups and ``output_reg``
(``generate_clone_lookup``), ct and ct_clear (``generate_clone_ct``), learn
(``generate_clone_learn``), moves of in_port (``generate_clone_in_port``),
``check_pkt_larger`` (``generate_clone_check``), ``ct(table=T)``
(``generate_ct_lookup``).
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import (
    OFPP_NORMAL, OFPP_TABLE, Action, CheckPktLarger, Clone, Conjunction, Ct, CtClear, Learn, MoveField, Output, OutputReg,
    PopMpls, PopVlan, PushMpls, PushVlan, Resubmit, StackPush,
)

CLONE_FEATURE = "nx_clone"
_RESHAPES = (PushVlan, PopVlan, PushMpls, PopMpls)
_NOT_INSIDE = (CheckPktLarger, Ct, CtClear, Learn, Resubmit, OutputReg, Conjunction)


def _may_wrap(run: list[Action], ends: bool) -> bool:
    for a in run:
        if isinstance(a, _NOT_INSIDE) or (isinstance(a, _RESHAPES) and not ends):
            return False
        if isinstance(a, Output) and a.port in (OFPP_TABLE, OFPP_NORMAL):
            return False
        if isinstance(a, (MoveField, StackPush)) and a.src.field == "in_port":
            return False
        if isinstance(a, Clone) and not _may_wrap(list(a.actions), ends):
            return False
    return True


def clone_wrapped(rng: random.Random, acts: list[Action], depth: int = 0) -> list[Action]:
    """``acts`` with one run (possibly empty) wrapped in a clone, if one may be."""
    n = len(acts)
    for _ in range(4):
        i = rng.randrange(n + 1)
        j = i if n == i or rng.random() < 0.1 else rng.randrange(i + 1, n + 1)  # (an empty clone now and then)
        run = acts[i:j]
        if _may_wrap(run, j == n):
            if depth < 2 and len(run) > 1 and rng.random() < 0.3:
                run = clone_wrapped(rng, run, depth + 1)
            return acts[:i] + [Clone(tuple(run))] + acts[j:]
    return acts
