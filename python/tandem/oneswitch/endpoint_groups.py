"""GROUP_MOD for the endpoint: re-translate with a new virtual group table.

The OneSwitch translator takes the virtual groups when its state is built.
``regroup(state, groups)`` builds a fresh state of the same class over the same
topology with ``groups``, re-adds every virtual rule (in the old state's
order), and returns it with the physical update steps that move the switches
from the old translation to the new one:

1. shared rules (dispatch table 0, delivery table 253) and groups added or changed,
2. rule copies added or changed,
3. rule copies deleted,
4. shared rules and groups deleted,

so a packet never meets a reference (goto, tag, group) whose target is missing.
A group the translator cannot place, or a rule that no longer translates,
raises and leaves the old state in force. Cost: one full re-translation
(O(rules)) per GROUP_MOD; group changes are rare next to flow changes.
State: none (pure).
"""

from __future__ import annotations

from typing import Iterable

from tandem.backends.base import FlowOp, GroupOp
from tandem.rules.ir import FlowMod, Group, Rule

SHARED_TABLES = (0, 253)  # translate.DISPATCH_TABLE, translate.DELIVERY_TABLE


def _key(r: Rule) -> tuple:
    return (r.table, r.priority, r.match)


def regroup(state: object, groups: Iterable[Group]) -> tuple[object, list[list]]:
    new = type(state)(state.topo, list(groups))  # type: ignore[attr-defined,call-arg]
    for r in state.virtual_rules():  # type: ignore[attr-defined]
        new.apply(FlowMod("add", r))  # type: ignore[attr-defined]
    shared_add: list = []
    copy_add: list = []
    copy_del: list = []
    shared_del: list = []
    for sw in state.topo.switch_names:  # type: ignore[attr-defined]
        old_r = {_key(r): r for r in state.physical_rules(sw)}  # type: ignore[attr-defined]
        new_r = {_key(r): r for r in new.physical_rules(sw)}  # type: ignore[attr-defined]
        for k, r in new_r.items():
            if old_r.get(k) != r:
                op = "add" if k not in old_r else "modify_strict"
                if r.cookie != old_r.get(k, r).cookie or r.idle_timeout or r.hard_timeout:
                    op = "add"  # modify keeps the old cookie/timeouts; re-add instead
                (shared_add if k[0] in SHARED_TABLES else copy_add).append(FlowOp(sw, op, r))  # type: ignore[arg-type]
        for k, r in old_r.items():
            if k not in new_r:
                (shared_del if k[0] in SHARED_TABLES else copy_del).append(FlowOp(sw, "delete_strict", r))
        old_g = {g.group_id: g for g in state.physical_groups(sw)}  # type: ignore[attr-defined]
        new_g = {g.group_id: g for g in new.physical_groups(sw)}  # type: ignore[attr-defined]
        for gid, g in new_g.items():
            if old_g.get(gid) != g:
                shared_add.append(GroupOp(sw, "add" if gid not in old_g else "modify", g))
        for gid, g in old_g.items():
            if gid not in new_g:
                shared_del.append(GroupOp(sw, "delete", g))
    # groups before the rules that use them, and OneSwitch's internal groups
    # (split buckets, ids >= 0xF0000000) before the virtual groups that use them;
    # deletes in the opposite order
    shared_add.sort(key=lambda o: (isinstance(o, FlowOp), 0 if isinstance(o, FlowOp) else -o.group.group_id))
    shared_del.sort(key=lambda o: (isinstance(o, GroupOp), 0 if isinstance(o, FlowOp) else o.group.group_id))
    return new, [s for s in (shared_add, copy_add, copy_del, shared_del) if s]
