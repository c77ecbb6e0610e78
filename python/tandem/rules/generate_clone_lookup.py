"""Random clones that look a table up or output to a register's port, for ``generate``
(opt-in features ``CLONE_LOOKUP_FEATURE``, ``CLONE_OUTPUT_REG_FEATURE``).

``lookup_clone`` draws a ``clone(…)`` holding a lookup (``generate_nx.resubmit_action``:
mostly ``resubmit(,T)`` into a later table with the packet's own in_port or the
one the rule matches, now and then with another port, into the same or an
earlier table, or ``output:TABLE``), with changes before it that the rules it
finds may see and that must not outlive the clone (an Ethernet address, a
register), now and then an output after it and a clone of that nested once more.
OneSwitch translates the lookup as one in the rule's own list
(``oneswitch/clone_translate.py``). ``output_reg_clone`` draws a clone holding
``generate_nx.output_reg_actions`` (an output_reg, mostly after a load of the
register, in the clone or — ``before`` — ahead of it in the rule's list), now and
then nested once more. Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate_nx import output_reg_actions, resubmit_action
from .ir import Action, Clone, Match, Output, OutputReg, SetField

CLONE_LOOKUP_FEATURE = "nx_clone_lookup"
CLONE_OUTPUT_REG_FEATURE = "nx_clone_output_reg"
_CHANGED = ("eth_src", "eth_dst", "reg0", "reg1")


def lookup_clone(rng: random.Random, table: int, tables: int, ports: Sequence[int], in_port: int | None) -> Clone | None:
    """A clone with a lookup from a rule in ``table`` (None when no lookup is drawn)."""
    lookup = resubmit_action(rng, table, tables, ports, in_port)
    if lookup is None:
        return None
    nested: list[Action] = []
    for f in rng.sample(_CHANGED, rng.choice((0, 1, 1, 2))):
        value = rng.getrandbits(48 if f.startswith("eth") else 32)
        nested.append(SetField(f, value & ~(1 << 40) if f.startswith("eth") else value))  # (no multicast source)
    nested.append(lookup)
    if rng.random() < 0.3:
        nested.append(Output(rng.choice(list(ports))))
    if rng.random() < 0.15:
        nested = [Clone(tuple(nested))]
    return Clone(tuple(nested))


def output_reg_clone(rng: random.Random, ports: Sequence[int], match: Match) -> list[Action]:
    """A clone with an output_reg (and the load before the clone, now and then)."""
    acts = output_reg_actions(rng, ports, match)
    before: list[Action] = []
    if len(acts) == 2 and rng.random() < 0.3:
        before, acts = acts[:1], acts[1:]
    if rng.random() < 0.3:
        acts.insert(0, SetField("eth_dst", rng.getrandbits(48) & ~(1 << 40)))
    if rng.random() < 0.3:
        acts.append(Output(rng.choice(list(ports))))
    clone = Clone(tuple(acts))
    return [*before, Clone((clone,)) if rng.random() < 0.15 else clone]


def clone_has_output_reg(a: Clone) -> bool:
    return any(type(b) is OutputReg or (type(b) is Clone and clone_has_output_reg(b)) for b in a.actions)
