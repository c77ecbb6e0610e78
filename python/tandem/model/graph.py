"""Graph helpers the scenario schema and its cross-reference checks share (a
leaf module: it imports nothing from ``tandem``)."""

from __future__ import annotations

from collections import deque
from typing import Optional


def topological_order(nodes: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """Kahn's order (first-listed ready node first, successors in edge order).
    Nodes on or behind a cycle are left out, so the result is shorter than the
    set of nodes named by ``nodes`` and ``edges`` exactly when there is a cycle."""
    indeg = {n: 0 for n in nodes}
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        indeg[b] = indeg.get(b, 0) + 1
        indeg.setdefault(a, 0)
        succ.setdefault(a, []).append(b)
    ready = deque(n for n in nodes if indeg[n] == 0)
    order: list[str] = []
    while ready:
        n = ready.popleft()
        order.append(n)
        for b in succ.get(n, ()):
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return order


def topological_or_none(nodes: list[str], edges: list[tuple[str, str]]) -> Optional[list[str]]:
    """Kahn's order, or None if the edges contain a cycle."""
    order = topological_order(nodes, edges)
    return order if len(order) == len(set(nodes).union(*edges)) else None
