"""A ``resubmit`` in a group bucket, as the OneSwitch compiler translates it.

Open vSwitch runs a bucket as an action set on the packet (its set-fields and
moves, then its group, else its output, else its last resubmit) and rolls the
packet's fields back after it, but not its action set, its stack or its resubmit
count: the write-actions and pushes of the rules a bucket's resubmit finds stay
(dp-core copies that, ``pipeline.rs``'s ``bucket_leaks``). A group is translated
on the switch where the packet's pipeline runs, every virtual table t is physical
table t there and the packet's in_port is its own, so ``resubmit(,T)`` into a
table T >= 1 finds the copy of the rule the virtual lookup finds, as from a rule
(docs/oneswitch.md section 7), and stays as it is. A written output such a rule
leaves in the action set then meets the rest of the pipeline in any table order,
so the mark ledger counts each such group as a rule that resubmits, and a
table-0 rule that calls a group never leaves a flow id in the mark.

A resubmit into table 0 (as ``output:TABLE``) gets the mark set to 0 first
(``table0_lookup.py``). Refused (``BAD_ACTION/BAD_ARGUMENT``): a bucket's
resubmit into 254, or with another in_port (a group is the same on every switch
it is copied to, where that port's rules are not; a resubmit without a table
names one) while that port's pipeline is not on the group's switch: while a group
resubmits with another in_port every port is homed on the host (cross_port.py), where
the resubmit names the port's host end. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from tandem.rules.ir import OFPP_IN_PORT, OFPP_TABLE, Group, Output, Resubmit

from .ids import TranslationError

if TYPE_CHECKING:
    from .compiler import Compiler

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT


def resubmit_groups(groups: Iterable[Group]) -> frozenset[int]:
    """The ids of the groups that have a bucket with a resubmit (or output:TABLE, the same lookup)."""
    return frozenset(g.group_id for g in groups if any(type(a) is Resubmit or (type(a) is Output and a.port == OFPP_TABLE)
                                                       for b in g.buckets for a in b.actions))


def bucket_resubmit(a: Resubmit, what: str, comp: "Compiler | None" = None, sw: str | None = None) -> Resubmit | None:
    """A bucket's resubmit as the physical switch ``sw`` runs it (module doc; with
    another in_port: still virtual, the compiler names the port's number on ``sw``),
    None where it never runs (``sw`` holds no virtual port's pipeline), or
    TranslationError."""
    ref = None if comp is None or a.in_port == OFPP_IN_PORT else comp.in_ports.get(a.in_port)
    if a.table != 254 and ref is not None:  # (every port homed while such a group exists: cross_port.py)
        if ref.switch == sw:
            return a
        if not comp.switch_in_ports[sw]:  # (no packet runs a virtual pipeline there, so nothing applies the group)
            return None
    if a.in_port != OFPP_IN_PORT:
        why = "with another in_port (the group is copied to every switch; that port's rules are on one)"
    elif a.table == 254:
        why = "into table 254, Open vSwitch's own"
    else:
        return a
    raise TranslationError(what, f"resubmit in a group bucket {why} is not translated (docs/oneswitch.md section 7)",
                           _BAD_ARGUMENT)
