"""Lookups in table 0 written into the action set or made by a group bucket, as the
OneSwitch compiler translates them (docs/oneswitch.md section 7).

Physical table 0 tells the copies of virtual table 0 from the delivery rules by a
packet mark of 0, and a packet looked up again may carry a flow id a PCIe output
left in the mark; so a lookup in table 0 runs with the mark set to 0 first, which
is exact while the virtual mark is 0 (the mark ledger refuses a table-0 lookup
beside rules or groups that use the mark). Open vSwitch runs an action set (and a
bucket, which it runs as one) as: the set-fields and moves in the order written,
then the group, else the output, else the last resubmit. Where the reset goes:

* ``output:TABLE`` written into the action set stays the set's output, and the
  reset is written with it, after the list's own set-fields:
  ``set_field:0->pkt_mark, output:TABLE`` (``WRITTEN_TABLE``). When it is the
  output that runs, every set-field written before it (a flow id an earlier
  written output set, the list's own) runs first, so the mark is 0 at the lookup;
  set-fields written later come from rules that leave the virtual mark alone
  (the ledger), or are the flow id of a later written output, which then replaces
  output:TABLE and runs with its own id last. A written group wins over both and
  its buckets see the mark at 0, the virtual mark.
* ``resubmit(,0)`` / ``resubmit:PORT`` written into the action set becomes
  ``set_field:0->pkt_mark, resubmit(,0)`` (``rule_analysis.resubmits_translated``).
  It runs only when the set holds neither group nor output, and then it holds no
  flow id either (each is written with its output, which stays until a
  clear_actions empties both), so the reset meets nothing of the translation's.
  But the reset runs even when an output wins, and one written after an output's
  flow id would send that output on with mark 0: so the mark ledger refuses a
  written table-0 resubmit in a later table than a written output that may cross
  PCIe (in any table while some rule resubmits: the tables may then run in any
  order), and within one list the compiler writes the kept output's flow id last.
* in a bucket, ``output:TABLE`` or ``resubmit(,0)`` as the bucket's final action
  becomes ``set_field:0->pkt_mark`` and it, after the bucket's own set-fields
  (``bucket_table0``); the bucket runs on a copy of the packet, so the mark is
  given back after it.

Pure.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules.ir import OFPP_IN_PORT, OFPP_TABLE, Action, Group, Output, Resubmit

from .rule_analysis import _ZERO_MARK

WRITTEN_TABLE: tuple[Action, ...] = (_ZERO_MARK, Output(OFPP_TABLE))


def looks_up_table0(a: Action) -> bool:
    """Is ``a`` a bucket's lookup in table 0 (``output:TABLE``, ``resubmit(,0)``)?"""
    t = type(a)
    return (t is Output and a.port == OFPP_TABLE) or (t is Resubmit and a.in_port == OFPP_IN_PORT and a.table == 0)


def bucket_table0(a: Action) -> tuple[Action, ...]:
    """A bucket's final lookup in table 0 as the physical switch runs it (module doc)."""
    return (_ZERO_MARK, a)


def table0_groups(groups: Iterable[Group]) -> frozenset[int]:
    """The ids of the groups that have a bucket with a lookup in table 0."""
    return frozenset(g.group_id for g in groups if any(looks_up_table0(a) for b in g.buckets for a in b.actions))
