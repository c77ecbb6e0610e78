"""SmartChain dependency analyzer (§III-A): branch and action dependencies.

Inputs: an `ElementGraph` (edges, declared field accesses per element,
operator-declared dependencies). Output: the set D of pairs (i before j) that
the placement must keep in order, each with its kind and a reason. Errors:
a cycle in the edges, an edge against the listed order, or a declared
dependency that contradicts the graph (a dependency cycle) raise
`SmartChainInfeasible` naming the cycle. Cost: O(n^2 * fields).

Rules (our reading of NFP's read/write analysis, for *reordering*: may j run
before i without changing any output packet or any element's state?):
  * branch: an element with several successors decides which of its
    descendants run, so it precedes every descendant;
  * action, for i upstream of j: read-after-write, write-after-read and
    write-after-write on overlapping fields ("ip" overlaps "ip.src");
    a dropper and a stateful element (it must see exactly the packets that
    survive); an encap/decap element and any element that touches a field
    (offsets shift). Two readers, or two droppers, commute.
Only pairs on a common path can depend on each other: elements on different
branches never see the same packet.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.placement.smartchain.model import Element, ElementGraph, SmartChainError, SmartChainInfeasible


@dataclass(frozen=True)
class Dependency:
    before: int
    after: int
    kind: str  # "branch" | "action" | "declared"
    reason: str


def _overlap(a: frozenset[str], b: frozenset[str]) -> list[str]:
    out = []
    for x in sorted(a):
        for y in sorted(b):
            if x == y or x.startswith(y + ".") or y.startswith(x + "."):
                out.append(x if len(x) >= len(y) else y)
    return out


def action_conflict(up: Element, down: Element) -> str | None:
    """Why `down` may not run before `up` (None if they commute)."""
    for label, a, b in (("read-after-write", up.writes, down.reads),
                        ("write-after-read", up.reads, down.writes),
                        ("write-after-write", up.writes, down.writes)):
        f = _overlap(a, b)
        if f:
            return f"{label} on {f[0]}"
    if up.drops and down.stateful:
        return f"{up.name} drops packets that stateful {down.name} must not see"
    if down.drops and up.stateful:
        return f"stateful {up.name} must see packets that {down.name} drops"
    for enc, other in ((up, down), (down, up)):
        if enc.encap and (other.reads or other.writes):
            return f"{enc.name} adds/removes headers, shifting fields {other.name} uses"
    return None


def _find_cycle(g: ElementGraph) -> list[str] | None:
    n = len(g.elements)
    color = [0] * n
    stack_path: list[int] = []

    def visit(u: int) -> list[int] | None:
        color[u] = 1
        stack_path.append(u)
        for v in g.successors[u]:
            if color[v] == 1:
                return stack_path[stack_path.index(v):] + [v]
            if color[v] == 0:
                c = visit(v)
                if c:
                    return c
        stack_path.pop()
        color[u] = 2
        return None

    for s in range(n):
        if color[s] == 0:
            c = visit(s)
            if c:
                return [g.elements[i].name for i in c]
    return None


def descendants(g: ElementGraph) -> list[int]:
    """Bitmask of strict descendants per element (elements listed topologically)."""
    n = len(g.elements)
    desc = [0] * n
    for i in range(n - 1, -1, -1):
        m = 0
        for s in g.successors[i]:
            m |= (1 << s) | desc[s]
        desc[i] = m
    return desc


def check_order(g: ElementGraph) -> None:
    cyc = _find_cycle(g)
    if cyc:
        chain = " -> ".join(cyc)
        raise SmartChainInfeasible(f"graph {g.name!r}: the edges form a cycle {chain}", f"graph cycle {chain}")
    for ed in g.edges:
        if g.index[ed.src] >= g.index[ed.dst]:
            raise SmartChainError(f"graph {g.name!r}: edge {ed.src} -> {ed.dst} goes against the listed element "
                                  f"order; list elements in processing order")


def analyze(g: ElementGraph) -> list[Dependency]:
    """The dependency set D of one graph, sorted by (before, after)."""
    check_order(g)
    n = len(g.elements)
    desc = descendants(g)
    found: dict[tuple[int, int], Dependency] = {}

    def add(i: int, j: int, kind: str, reason: str) -> None:
        found.setdefault((i, j), Dependency(i, j, kind, reason))

    for i in range(n):
        if len(g.successors[i]) >= 2:
            for j in range(n):
                if desc[i] >> j & 1:
                    add(i, j, "branch", f"{g.elements[i].name} chooses the branch that reaches {g.elements[j].name}")
    for i in range(n):
        for j in range(n):
            if desc[i] >> j & 1:
                why = action_conflict(g.elements[i], g.elements[j])
                if why:
                    add(i, j, "action", why)
    for k, (a, b) in enumerate(g.declared_deps):
        i, j = g.index[a], g.index[b]
        if i == j or desc[j] >> i & 1:
            raise SmartChainInfeasible(
                f"graph {g.name!r}: dependency cycle: dependencies[{k}] says {a} before {b}, but {b} precedes {a} "
                f"in the graph", f"dependency cycle {a} -> {b} -> {a}")
        if not desc[i] >> j & 1:
            raise SmartChainError(f"graph {g.name!r}: dependencies[{k}] ({a} before {b}) joins elements on different "
                                  f"branches; no packet visits both")
        add(i, j, "declared", f"declared by the operator (dependencies[{k}])")
    return sorted(found.values(), key=lambda d: (d.before, d.after))
