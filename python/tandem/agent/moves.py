"""Planning of an NF move as a transaction (pure: no I/O; the service applies the result).

A move (``AgentService._migrate``) splits OneSwitch's remap plan in two: the adds and
modifies go in at the instant the move starts, the rest (what only the old location
used: mostly deletes) waits until the source has drained. Rule writes arriving in
between (REST or a controller's FLOW_MOD) are applied at once — their plans are made
against OneSwitch's current rules, which already have the new placement — so the
deferred part is checked against those current rules before it runs:
``reconcile_cleanup`` drops every deferred op that no longer agrees with them (a
delete of an entry a write has put back, an add or modify of an entry a write has
since changed or removed). Nothing written during a move is undone by its end.

A move that fails after the remap is rolled back by the service: the emulator's move
is called off (the source keeps its state and takes what the destination buffered)
and the NF's ports are remapped back to the source — OneSwitch plans that from the
current rules, so writes made during the move stay, translated for the old placement.

State: none. Cost: one dictionary look-up per deferred op.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from tandem.oneswitch.ids import pkey
from tandem.oneswitch.plan import PhysicalOp
from tandem.rules.ir import Group, Rule

DELETES = ("delete_strict", "delete", "delete_group")


def split_remap(steps: Sequence[Sequence[PhysicalOp]]) -> tuple[list[list[PhysicalOp]], list[PhysicalOp]]:
    """(the steps to apply when the move starts, the ops deferred to its end): everything
    before the first step that deletes, and the rest flattened in order."""
    cut = next((i for i, st in enumerate(steps) if any(op.op in DELETES for op in st)), len(steps))
    return [list(st) for st in steps[:cut] if st], [op for st in steps[cut:] for op in st]


def reconcile_cleanup(ops: Sequence[PhysicalOp], wanted_rule: Callable[[str, tuple], Optional[Rule]],
                      wanted_group: Callable[[str, int], Optional[Group]]) -> tuple[list[PhysicalOp], list[PhysicalOp]]:
    """Split a move's deferred ops into (still to apply, dropped) against what OneSwitch wants
    installed now: ``wanted_rule(switch, (table, priority, match))`` and
    ``wanted_group(switch, group_id)``. A delete runs only if nothing is wanted at its key;
    an add or modify only if exactly its rule (group) is wanted there."""
    keep: list[PhysicalOp] = []
    dropped: list[PhysicalOp] = []
    for op in ops:
        if op.rule is not None:
            want = wanted_rule(op.switch, pkey(op.rule))
            ok = want is None if op.op in DELETES else want == op.rule
        else:
            want = wanted_group(op.switch, op.group.group_id)
            ok = want is None if op.op in DELETES else want == op.group
        (keep if ok else dropped).append(op)
    return keep, dropped
