"""Random clones that look a table up, for ``generate`` (opt-in feature ``CLONE_LOOKUP_FEATURE``).

``lookup_clone`` draws a ``clone(…)`` holding a lookup (``generate_nx.resubmit_action``:
mostly ``resubmit(,T)`` into a later table with the packet's own in_port or the
one the rule matches, now and then with another port, into the same or an
earlier table, or ``output:TABLE``), with changes before it that the rules it
finds may see and that must not outlive the clone (an Ethernet address, a
register), now and then an output after it and a clone of that nested once more.
OneSwitch translates the lookup as one in the rule's own list
(``oneswitch/clone_translate.py``). Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate_nx import resubmit_action
from .ir import Action, Clone, Output, SetField

CLONE_LOOKUP_FEATURE = "nx_clone_lookup"
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
