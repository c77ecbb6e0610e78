"""Consistent update plans: ordered steps of physical operations with barriers between.

Input: the physical difference between two translations (``Compiler``
journal: {item: (old, new)}). Output: an ``UpdatePlan``. Pure, O(ops log ops).

Ordering (docs/oneswitch.md proves each rule; summary):

1. group adds and shared adds (delivery, transit): nothing sends
   marked frames toward them yet, so they are inert until referenced;
2. rule-copy adds, deepest table first (a goto never points at a table whose
   rules are still missing), and inside a table by descending priority, one
   (table, priority) level per step: with the new rules of a table added from
   the top, a packet meets either its old winner or its new winner;
3. all modifies in one step (each is atomic and each packet meets at most one
   rule per table);
4. rule-copy deletes, shallowest table first, ascending priority, one level per
   step (the mirror image of 2);
5. shared deletes and group deletes, once nothing references them.

For a port remap the copies that move live only on the old/new ingress
switch of that port, whose traffic is switched over between steps, so their
adds (and deletes) collapse into one step each; ``new_ingress_ready`` and
``old_ingress_until`` mark when each location may carry the port's traffic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from tandem.rules.ir import Group, Rule

from .translate import Item, is_delivery_key

OPS = ("add", "modify_strict", "delete_strict", "add_group", "modify_group", "delete_group")


@dataclass(frozen=True)
class PhysicalOp:
    """One change on one physical switch: a flow mod (``rule``) or a group mod (``group``)."""

    switch: str
    op: str  # one of OPS
    rule: Rule | None = None
    group: Group | None = None
    # an "add" whose entry another rule's copy held: its counters start at 0 (OFPFF_RESET_COUNTS;
    # Open vSwitch 3.1 carries an ADD's counters over from the entry it replaces otherwise)
    reset_counts: bool = False

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown physical op {self.op!r}")
        if (self.rule is None) == (self.group is None):
            raise ValueError("a PhysicalOp carries exactly one of rule / group")


@dataclass
class UpdatePlan:
    """Steps in order; the ops of one step may be sent together, with a barrier
    after each step."""

    steps: list[list[PhysicalOp]] = field(default_factory=list)
    # remaps only: the port's new location may receive traffic once steps[:new_ingress_ready]
    # are applied; the old location works while at most steps[:old_ingress_until] are applied.
    new_ingress_ready: int | None = None
    old_ingress_until: int | None = None
    modify_step: int | None = None  # index of the step holding all modifies, if any

    def ops(self) -> Iterator[PhysicalOp]:
        for step in self.steps:
            yield from step

    def __len__(self) -> int:
        return sum(len(s) for s in self.steps)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for op in self.ops():
            out[op.op] = out.get(op.op, 0) + 1
        return out


def plan_remap(changes: dict[Item, tuple[object, object]], old_switch: str, new_switch: str) -> UpdatePlan:
    """Order the diff of a port remap. Besides the general rules above: copies on the
    port's *old* switch keep their old actions until the old location stops
    receiving (there, output to the port must still mean its old physical port,
    the packet's own in_port); copies everywhere else switch first, so the new
    location's traffic never hairpins to the old one. Between the two, both
    locations may carry the port's traffic."""
    plan = plan_changes(changes, coalesce_copies=True)
    steps = plan.steps
    if plan.modify_step is not None:
        i = plan.modify_step
        mods = steps[i]
        rest = [op for op in mods if op.switch != old_switch]
        late = [op for op in mods if op.switch == old_switch]
        if old_switch == new_switch:
            # same switch, new port: a copy cannot serve both locations; traffic pauses for one step
            plan.new_ingress_ready, plan.old_ingress_until = i + 1, i
        else:
            steps[i:i + 1] = [s for s in (rest, late) if s]
            plan.new_ingress_ready = plan.old_ingress_until = i + (1 if rest else 0)
    return plan


def _shared(item: Item) -> bool:
    return item[0] == "rule" and is_delivery_key(item[2])


_new = object.__new__
_setattr = object.__setattr__


def _op(switch: str, op: str, rule: Rule | None, group: Group | None) -> PhysicalOp:
    """PhysicalOp(switch, op, rule, group) for arguments known valid (the hot path)."""
    o = _new(PhysicalOp)
    _setattr(o, "__dict__", {"switch": switch, "op": op, "rule": rule, "group": group})
    return o


def _one_step(op: PhysicalOp, ready: int, until: int) -> UpdatePlan:
    plan = UpdatePlan([[op]])
    plan.new_ingress_ready, plan.old_ingress_until = ready, until
    return plan


def plan_changes(changes: dict[Item, tuple[object, object]], replace: bool = False,
                 coalesce_copies: bool = False, ordered: bool = False, fresh: frozenset | set = frozenset()) -> UpdatePlan:
    """Order a physical diff into a consistent plan. ``replace``: the virtual change
    was an OpenFlow add (replace entries, resetting counters) rather than a modify;
    ``fresh``: entries replaced so whatever the change (another rule's copy took them).
    ``ordered``: the diff's own order is deterministic (a compiler journal), so the
    ops inside a step keep it instead of being sorted."""
    if len(changes) == 1:  # one FLOW_MOD's usual diff: the same plan as below, built directly
        for item, (old, new) in changes.items():
            if item[0] == "rule":
                if old is None:
                    return _one_step(_op(item[1], "add", new, None), 1, 1)  # type: ignore[arg-type]
                if new is None:
                    return _one_step(_op(item[1], "delete_strict", old, None), 0, 0)  # type: ignore[arg-type]
    first: list[PhysicalOp] = []
    adds: dict[tuple, list[PhysicalOp]] = {}
    modifies: list[PhysicalOp] = []
    deletes: dict[tuple, list[PhysicalOp]] = {}
    last: list[PhysicalOp] = []
    # a deterministic order; one change (a controller's single FLOW_MOD) needs no sort and no repr
    for item in (changes if ordered or len(changes) < 2 else sorted(changes, key=repr)):
        old, new = changes[item]
        kind, sw, key = item
        if kind == "group":
            if old is None:
                first.append(PhysicalOp(sw, "add_group", group=new))
            elif new is None:
                last.append(PhysicalOp(sw, "delete_group", group=old))
            else:
                modifies.append(PhysicalOp(sw, "modify_group", group=new))
            continue
        table, prio, _ = key
        level = (0, 0) if coalesce_copies else (table, prio)
        if old is None:
            op = PhysicalOp(sw, "add", rule=new)
            if _shared(item):
                first.append(op)
            else:
                adds.setdefault(level, []).append(op)
        elif new is None:
            op = PhysicalOp(sw, "delete_strict", rule=old)
            if _shared(item):
                last.append(op)
            else:
                deletes.setdefault(level, []).append(op)
        else:
            same_meta = (old.cookie, old.idle_timeout, old.hard_timeout) == (new.cookie, new.idle_timeout, new.hard_timeout)
            modifies.append(PhysicalOp(sw, "modify_strict" if same_meta and not replace and item not in fresh else "add",
                                       rule=new, reset_counts=item in fresh))
    plan = UpdatePlan()
    if first:
        plan.steps.append(first)
    for level in sorted(adds, key=lambda t: (-t[0], -t[1])):
        plan.steps.append(adds[level])
    plan.new_ingress_ready = len(plan.steps)
    if modifies:
        plan.modify_step = len(plan.steps)
        plan.steps.append(modifies)
    plan.old_ingress_until = len(plan.steps)
    for level in sorted(deletes):
        plan.steps.append(deletes[level])
    if last:
        plan.steps.append(last)
    return plan
