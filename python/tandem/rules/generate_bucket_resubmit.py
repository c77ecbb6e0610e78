"""Random groups whose buckets resubmit (Open vSwitch's ``resubmit(,T)`` in a bucket).

``resubmit_groups(rng, n, ports, tables)``: all, indirect and fast-failover groups
(not select: Open vSwitch 3.1 runs a select group by recirculating, and aborts —
``ofproto-dpif-rid.c:235`` — when that happens inside nested resubmits while the
action set holds actions, which a bucket's resubmitted rules may write). Built
on ``generate.random_group``'s buckets (a field set now and then), each given a
resubmit into a later table (1 .. ``tables`` - 1, or table 1 past the last, a
miss) and sometimes a register load, most losing their output (one that keeps it
drops its resubmit, as an action set does). Pure: all randomness comes
from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from dataclasses import replace

from .generate import random_group
from .generate_nx import REG_VALUES, REGS
from .ir import OFPP_IN_PORT, OFPP_TABLE, Action, Group, Output, Resubmit, SetField


def resubmit_group(rng: random.Random, group_id: int, ports: Sequence[int], tables: int) -> Group:
    """One group with resubmits in its buckets: ``generate.random_group``'s (a select
    one made an all group), each bucket given a register load now and then and a
    resubmit, and most buckets' output taken away (a bucket with an output drops its
    resubmit, as an action set does)."""
    return lookup_group(rng, group_id, ports, lambda acts: acts.insert(
        rng.randrange(len(acts) + 1), Resubmit(OFPP_IN_PORT, rng.randint(1, max(1, tables - 1)))))


def lookup_group(rng: random.Random, group_id: int, ports: Sequence[int],
                 place: Callable[[list[Action]], None]) -> Group:
    """``resubmit_group``'s group with ``place`` putting each bucket's lookup into its actions."""
    g = random_group(rng, group_id, ports)
    buckets = []
    for b in g.buckets:
        acts: list[Action] = [a for a in b.actions if type(a) is not Output or rng.random() < 0.2]
        if rng.random() < 0.4:
            acts.insert(0, SetField(rng.choice(REGS), rng.choice(REG_VALUES)))
        place(acts)
        buckets.append(replace(b, actions=tuple(acts), weight=0))
    return Group(group_id, "all" if g.type == "select" else g.type, tuple(buckets))


def resubmit_groups(rng: random.Random, n: int, ports: Sequence[int], tables: int) -> list[Group]:
    """``n`` groups (ids 1 .. n) whose buckets resubmit."""
    return [resubmit_group(rng, i + 1, ports, tables) for i in range(n)]


# groups whose buckets look table 0 up (generate_table0.py's forms; here beside lookup_group, which
# imports generate.py, which imports generate_table0.py)
def table0_group(rng: random.Random, group_id: int, ports: Sequence[int], form: str) -> Group:
    """One group whose buckets look table 0 up (``form``: ``output_table`` or ``resubmit0``):
    ``generate_bucket_resubmit.lookup_group``'s (a select one made an all group, a register
    load now and then, most buckets losing their own output), the lookup mostly last and
    mostly right after a load of a register (with a value other than 0)."""
    look = Output(OFPP_TABLE) if form == "output_table" else Resubmit(OFPP_IN_PORT, 0)

    def place(acts: list[Action]) -> None:
        at = len(acts) if rng.random() < 0.7 else rng.randrange(len(acts) + 1)
        # (mostly after a load of a register, which ``landing_rules`` then match)
        acts[at:at] = [SetField(rng.choice(REGS), rng.choice(_LOADS)), look] if rng.random() < 0.85 else [look]
    return lookup_group(rng, group_id, ports, place)


_LOADS = (1, 2, 3, 0xFF, 0x8000_0000)  # (generate_nx.REG_VALUES but 0)


def table0_groups(rng: random.Random, n: int, ports: Sequence[int], form: str) -> list[Group]:
    """``n`` groups (ids 1 .. n) whose buckets look table 0 up."""
    return [table0_group(rng, i + 1, ports, form) for i in range(n)]
