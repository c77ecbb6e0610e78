"""Checks across the groups of one file: duplicate ids, self-references, cycles.

Input: (line, Group) pairs as read from a ``.groups`` file. Output: one
OfctlSyntaxError per problem (``source:line:column: message``), in line order.
A group's bucket may name another group (``group:N``); a group that reaches
itself through such references - directly or around a cycle - would loop a
packet forever, and a second ``group_id=N`` silently replaces the first, so
both are errors (OVS refuses a self-chain too). Pure.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules.ir import Group, GroupAction
from tandem.rules.ofctl_lex import OfctlSyntaxError


def _targets(g: Group) -> list[int]:
    return [a.group_id for b in g.buckets for a in b.actions if isinstance(a, GroupAction)]


def group_problems(groups: Iterable[tuple[int, Group]], source: str = "<string>") -> list[OfctlSyntaxError]:
    def err(line: int, msg: str) -> OfctlSyntaxError:
        return OfctlSyntaxError(msg, source=source, line=line, column=1)

    out: list[OfctlSyntaxError] = []
    first: dict[int, int] = {}  # group id -> line of its first definition
    by_id: dict[int, Group] = {}
    for line, g in groups:
        if g.group_id in first:
            out.append(err(line, f"group_id={g.group_id} is already defined on line {first[g.group_id]}"
                                 " (a second definition would replace it)"))
            continue
        first[g.group_id] = line
        by_id[g.group_id] = g
    for gid, g in by_id.items():
        if gid in _targets(g):
            out.append(err(first[gid], f"group {gid} sends packets to itself (group:{gid} in its own bucket)"))
    # cycles of two or more groups: depth-first search, reporting each cycle once at its first line
    state: dict[int, int] = {}  # 1 on the path, 2 done
    reported: set[frozenset[int]] = set()

    def visit(gid: int, path: list[int]) -> None:
        state[gid] = 1
        path.append(gid)
        for t in _targets(by_id[gid]):
            if t == gid or t not in by_id:
                continue
            if state.get(t) == 1:
                cycle = path[path.index(t):]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    start = min(cycle, key=lambda c: first[c])
                    i = cycle.index(start)
                    ring = cycle[i:] + cycle[:i] + [start]
                    out.append(err(first[start], "groups form a cycle: " + " -> ".join(f"group {c}" for c in ring)))
            elif state.get(t) is None:
                visit(t, path)
        path.pop()
        state[gid] = 2

    for gid in by_id:
        if gid not in state:
            visit(gid, [])
    out.sort(key=lambda e: e.line)
    return out
