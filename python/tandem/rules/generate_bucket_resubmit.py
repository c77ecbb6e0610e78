"""Random groups whose buckets resubmit (Open vSwitch's ``resubmit(,T)`` in a bucket).

``resubmit_groups(rng, n, ports, tables)``: all, indirect and fast-failover groups
(not select: Open vSwitch 3.1 runs a select group by recirculating, and aborts —
``ofproto-dpif-rid.c:235`` — when that happens inside nested resubmits while the
action set holds actions, which a bucket's resubmitted rules may write). Most
buckets set a field or a register and resubmit into a later table (1 ..
``tables`` - 1, or table 1 past the last, a miss); some also output, so the
resubmit is the one the bucket's action set drops. Pure: all randomness comes
from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate import random_value
from .generate_nx import REG_VALUES, REGS
from .ir import OFPG_ANY, OFPP_ANY, OFPP_IN_PORT, Action, Bucket, Group, Output, Resubmit, SetField


def resubmit_group(rng: random.Random, group_id: int, ports: Sequence[int], tables: int) -> Group:
    """One group with resubmits in its buckets."""
    gtype = rng.choice(("all", "indirect", "fast_failover"))
    n = 1 if gtype == "indirect" else rng.randint(1, 3)
    buckets = []
    for _ in range(n):
        acts: list[Action] = []
        if rng.random() < 0.4:
            f = rng.choice(("eth_src", "eth_dst"))
            acts.append(SetField(f, random_value(rng, f)))
        if rng.random() < 0.4:
            acts.append(SetField(rng.choice(REGS), rng.choice(REG_VALUES)))
        acts.insert(rng.randrange(len(acts) + 1), Resubmit(OFPP_IN_PORT, rng.randint(1, max(1, tables - 1))))
        port = rng.choice(list(ports))
        if rng.random() < 0.2:
            acts.append(Output(port))
        watch = port if gtype == "fast_failover" else OFPP_ANY
        buckets.append(Bucket(tuple(acts), watch_port=watch, watch_group=OFPG_ANY))
    return Group(group_id, gtype, tuple(buckets))


def resubmit_groups(rng: random.Random, n: int, ports: Sequence[int], tables: int) -> list[Group]:
    """``n`` groups (ids 1 .. n) whose buckets resubmit."""
    return [resubmit_group(rng, i + 1, ports, tables) for i in range(n)]
