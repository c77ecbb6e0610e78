"""Random ``actset_output`` matches (feature ``nx_actset``, rules/actset_output.py):
a port the rule set may write into the action set, UNSET, a reserved port, or a
number no port has; mostly in later tables, where earlier tables' write_actions
(the generator's ``write_actions`` feature) have filled the action set. Pure: all
randomness comes from the caller's ``rng``. ``chain_rule`` draws the broad rules
that carry packets from table to table with outputs written on the way."""

from __future__ import annotations

import random
from typing import Sequence

from .actset_output import OFPP_UNSET
from .ir import OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_TABLE, FieldMatch
from .ir import ApplyActions, ClearActions, GotoTable, GroupAction, Match, Output, Rule, WriteActions

ACTSET_FEATURE = "nx_actset"
_RESERVED = (OFPP_IN_PORT, OFPP_CONTROLLER, OFPP_LOCAL, OFPP_FLOOD, OFPP_ALL, OFPP_TABLE)


def actset_value(rng: random.Random, ports: Sequence[int], table: int = 1) -> int:
    """Mostly UNSET in table 0, where only a lookup made again finds a written output."""
    k = rng.random() if table > 0 or rng.random() < 0.2 else 0.7
    if k < 0.55 and ports:
        return rng.choice(list(ports))
    if k < 0.8:
        return OFPP_UNSET
    if k < 0.95:
        return rng.choice(_RESERVED)
    return max(ports, default=0) + rng.randint(1, 9)  # (a number no port has)


def actset_match(rng: random.Random, table: int, ports: Sequence[int], fields: dict) -> None:
    """Add ``actset_output`` to a drawn match (``fields``: IR field -> FieldMatch)."""
    if rng.random() < (0.6 if table > 0 else 0.15):
        fields["actset_output"] = FieldMatch(actset_value(rng, ports, table))


def chain_rule(rng: random.Random, ports: Sequence[int], tables: int, table: int, priority: int | None,
               groups: Sequence[int] = ()) -> Rule:
    """A broad rule of an action-set chain: it matches little beside ``actset_output``
    (often ``in_port``, sometimes ``eth_type``), and in a table before the last writes an output (or a
    FLOOD, a group, or clears the set) and goes on, so later tables' ``actset_output``
    matches meet packets whose action set holds what earlier tables wrote."""
    # (mostly two ports for both the written outputs and the matched ones, so they meet)
    pool = (ports[0], ports[-1]) if rng.random() < 0.85 else tuple(ports)
    fields: dict = {}
    if rng.random() < 0.6:
        fields["in_port"] = FieldMatch(rng.choice(list(ports)))
    if rng.random() < 0.5:  # (so one broad rule does not take every packet)
        fields["eth_type"] = FieldMatch(rng.choice((0x0800, 0x0800, 0x86DD, 0x0806)))
    fields["actset_output"] = FieldMatch(actset_value(rng, pool, table))
    instrs: list = []
    if rng.random() < 0.4:
        instrs.append(ApplyActions((Output(rng.choice(list(ports))),)))
    if table + 1 < tables and rng.random() < 0.85:
        k = rng.random()
        if k < 0.08:
            instrs.append(ClearActions())
        else:
            written = [Output(rng.choice(pool) if k < 0.8 else rng.choice((OFPP_FLOOD, OFPP_CONTROLLER, OFPP_IN_PORT)))]
            if groups and rng.random() < 0.1:
                written.insert(rng.randrange(2), GroupAction(rng.choice(list(groups))))
            instrs.append(WriteActions(tuple(written)))
        instrs.append(GotoTable(rng.randrange(table + 1, tables)))
    return Rule(match=Match(tuple(fields.items())), instructions=tuple(instrs), table=table,
                priority=rng.randrange(1, 65536) if priority is None else priority)
