"""Random rules with the SFC decap pair split between apply-actions and the action set
(feature ``nx_write_decap``, the OVS oracle's item ``write:decap``; ``decap_set.py``):

    eth_type=0x894f,nsh_np=3, actions=[changes, outputs], decap(),
    write_actions([register / pkt_mark writes], decap(), [push_vlan], [set_queue], output)

with no goto_table (the form OneSwitch runs). The match and the actions before the
``decap()`` are ``generate_decap``'s (now and then a pushed VLAN tag, which fails the
whole translation); the written output sends the inner frame. Pure: all randomness
comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .decap import FIRST_TYPES, SECOND_TYPES
from .generate_decap import decap_rule, meta_write
from .ir import ApplyActions, Decap, Output, PushVlan, Rule, SetQueue, WriteActions

WRITE_DECAP_FEATURE = "nx_write_decap"


def split_decap_rule(rng: random.Random, ports: Sequence[int], tables: int, table: int,
                     priority: int | None) -> Rule:
    """One rule with the split pair: ``generate_decap``'s match and the actions it draws
    before the pair, then the open ``decap()`` and the written one."""
    base = decap_rule(rng, ports, tables, table, priority)
    apply = next(i.actions for i in base.instructions if type(i) is ApplyActions)
    at = next(i for i, a in enumerate(apply) if type(a) is Decap)
    acts = apply[:at] + (Decap(rng.choice((None, None, None, FIRST_TYPES[1]))),)
    written: list = [meta_write(rng) for _ in range(rng.choice((0, 0, 1, 2)))]
    written.insert(rng.randrange(len(written) + 1), Decap(rng.choice((None, None, None, SECOND_TYPES[1]))))
    if rng.random() < 0.25 and not any(type(a) is PushVlan for a in acts):  # (prereq.py counts both tags)
        written.insert(rng.randrange(len(written) + 1), PushVlan(rng.choice((0x8100, 0x88A8))))
    if rng.random() < 0.15:
        written.append(SetQueue(rng.choice((0, 1, 7))))
    if rng.random() < 0.9:
        written.append(Output(rng.choice(list(ports))))
    return Rule(match=base.match, instructions=(ApplyActions(acts), WriteActions(tuple(written))), table=table,
                priority=base.priority)
