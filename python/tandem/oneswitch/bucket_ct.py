"""``ct``, ``ct_clear`` and ``learn`` in a group bucket, as OneSwitch translates them.

Open vSwitch 3.1 runs a bucket as an action set (``ofpacts_execute_action_set``):
its set-fields and moves, then its group, else its output, else its resubmit, else
its ``ct_clear``, else its ``ct`` (final actions), on a copy of the packet; a
``ct(table=T)`` there recirculates the bucket's copy into table T at once. dp-core
runs it the same way (``pipeline/bucket_ct.rs``). ``learn`` has no place in an
action set, so a bucket's learn does nothing (measured on OVS 3.1: a bucket
``learn(table=1,…),output:2`` sends to 2 and learns nothing; dp-core's action set
drops it too), and the translation leaves it out.

Why the translation is exact:

* **One tracker.** While any virtual group holds ``ct`` in a bucket every virtual
  port's pipeline runs on the host, as while a rule has a ``ct`` action
  (``extension.CT``; ``group_reasons`` gives the reason, the endpoint extends the
  ports before the GROUP_MOD and releases them after the last such group goes,
  whichever of the group and the rules that apply it came first). So every bucket's
  ct runs on the host's tracker, in its pipeline's order (docs/oneswitch.md §6).
  ``ct_clear`` alone needs no move: without a ``ct`` every packet is untracked.
* **The bucket as it is.** The physical bucket keeps the ct (and ct_clear) in place
  among its translated actions; the physical switch runs it as an action set too,
  so an output that wins over the ct in the virtual bucket wins in the physical one.
  A bucket whose ct is its final action (no output, group or resubmit) becomes that
  one list (``bucket_ct_actions``) where a bucket with nothing to output becomes none.
* **The mark.** A bucket's ``ct(table=0)`` copy looks table 0 up again, so it gets
  ``set_field:0->pkt_mark`` first, after the bucket's own set-fields, as a written
  ``ct(table=0)`` does (``table0_lookup.py``); the mark ledger counts such groups as
  lookups of table 0 (refused while the virtual rules use the mark), and every group
  whose bucket may recirculate as a resubmitter (the copy runs tables out of order)
  whose buckets may see the mark (the copy carries it into table T).

Pure.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tandem.rules.ir import Action, Ct, CtClear, Group, GroupAction

from .rule_analysis import _ZERO_MARK


def _bucket_cts(g: Group) -> Iterable[Ct]:
    return (a for b in g.buckets for a in b.actions if type(a) is Ct)


def ct_groups(groups: Iterable[Group]) -> frozenset[int]:
    """The ids of the groups with a ``ct`` in a bucket (they need one tracker)."""
    return frozenset(g.group_id for g in groups if any(True for _ in _bucket_cts(g)))


def recirc_groups(groups: Iterable[Group]) -> frozenset[int]:
    """The ids of the groups with a ``ct(table=T)`` in a bucket (its copy recirculates)."""
    return frozenset(g.group_id for g in groups if any(c.table is not None for c in _bucket_cts(g)))


def ct_table0_groups(groups: Iterable[Group]) -> frozenset[int]:
    """The ids of the groups with a ``ct(table=0)`` in a bucket (a lookup in table 0)."""
    return frozenset(g.group_id for g in groups if any(c.table == 0 for c in _bucket_cts(g)))


def holds_ct(actions: Sequence[Action]) -> bool:
    """Do ``actions`` (a bucket's changes) hold a ``ct`` or ``ct_clear``?"""
    return any(type(a) is Ct or type(a) is CtClear for a in actions)


def bucket_ct_actions(actions: Sequence[Action]) -> list[Action]:
    """A bucket's actions whose final action is a ct with ``set_field:0->pkt_mark``
    before each ``ct(table=0)`` (module doc)."""
    out: list[Action] = []
    for a in actions:
        if type(a) is Ct and a.table == 0:
            out.append(_ZERO_MARK)
        out.append(a)
    return out


def packet_out_ct_group(groups: dict[int, Group], actions: Iterable[Action], depth: int = 0) -> int | None:
    """The id of a group ``actions`` apply (directly or through a bucket's group) that
    has a ``ct`` in a bucket, or None. The endpoint carries a PACKET_OUT out as
    physical PACKET_OUTs of its outputs, which have no place for a bucket's tracker
    operation or recirculated copy."""
    for a in actions:
        if type(a) is GroupAction and depth < 8:
            g = groups.get(a.group_id)
            if g is None:
                continue
            if any(True for _ in _bucket_cts(g)):
                return g.group_id
            for b in g.buckets:
                found = packet_out_ct_group(groups, b.actions, depth + 1)
                if found is not None:
                    return found
    return None
