"""Random groups whose buckets resubmit with another in_port (``resubmit(V,T)``).

``cross_resubmit_groups(rng, n, ports, tables)``: ``generate_bucket_resubmit``'s
groups (all, indirect, fast-failover; a register load now and then, most buckets
losing their output), each bucket's resubmit naming a virtual port mostly, the
packet's own in_port sometimes, into a later table (1 .. ``tables`` - 1). Pure: all
randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate_bucket_resubmit import lookup_group
from .ir import OFPP_IN_PORT, Group, Resubmit


def cross_resubmit_group(rng: random.Random, group_id: int, ports: Sequence[int], tables: int) -> Group:
    """One group whose buckets resubmit, mostly with another in_port (module doc)."""
    def place(acts: list) -> None:
        port = rng.choice(list(ports)) if rng.random() < 0.75 else OFPP_IN_PORT
        acts.insert(rng.randrange(len(acts) + 1), Resubmit(port, rng.randint(1, max(1, tables - 1))))
    return lookup_group(rng, group_id, ports, place)


def cross_resubmit_groups(rng: random.Random, n: int, ports: Sequence[int], tables: int) -> list[Group]:
    """``n`` groups (ids 1 .. n) whose buckets resubmit with another in_port."""
    return [cross_resubmit_group(rng, i + 1, ports, tables) for i in range(n)]
