"""Evaluate and interpret SmartChain placements — one formula for every method.

Inputs: a `Problem`, its dependency sets (one per graph) and a `Placement`
(per graph: its server and one position per element). Output: the latency
benefit (the objective of Fig. 6, generalised to K round trips), the list of
violated constraints, and the deployable partitioned graph (which elements
run where, the executed order per path, PCIe crossings per path).
Cost: O(elements + dependencies + paths).

Benefit of a placement = sum over graphs of
    t_trans * (1 - R_g) + sum_e s_e * [e on the sNIC]
where R_g is the number of CPU positions graph g uses (its PCIe round trips).
For K = 1 this is exactly Benefit_trans + Benefit_proc of eqs. (4)-(5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tandem.placement.smartchain.deps import Dependency
from tandem.placement.smartchain.model import ElementGraph, Problem, is_snic, position_name


@dataclass(frozen=True)
class GraphPlacement:
    server: int
    positions: tuple[int, ...]


@dataclass(frozen=True)
class Placement:
    graphs: tuple[GraphPlacement, ...]


def least_levels(on_cpu: Sequence[bool], preds: Sequence[Sequence[int]]) -> list[int]:
    """Smallest positions (even = sNIC, odd = CPU) with pos(j) >= pos(i) for every
    i in preds[j]; elements are in topological order. Any valid positions are
    pointwise >= these, so they use the fewest CPU positions (round trips)."""
    lv: list[int] = []
    for j, cpu in enumerate(on_cpu):
        lo = max((lv[i] for i in preds[j]), default=0)
        lv.append(lo + ((lo % 2) != int(cpu)))
    return lv


def dep_preds(n: int, deps: Sequence[Dependency]) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(n)]
    for d in deps:
        out[d.after].append(d.before)
    return out


def round_trips(positions: Sequence[int]) -> int:
    return len({p for p in positions if p % 2})


def graph_benefit(problem: Problem, g: ElementGraph, positions: Sequence[int]) -> float:
    proc = sum(e.suitability for e, p in zip(g.elements, positions) if is_snic(p))
    return problem.t_trans_us * (1 - round_trips(positions)) + proc


def benefit(problem: Problem, placement: Placement) -> float:
    return sum(graph_benefit(problem, g, gp.positions) for g, gp in zip(problem.graphs, placement.graphs))


def loads(problem: Problem, placement: Placement) -> list[tuple[float, float]]:
    """(sNIC, CPU) load per server (left-hand sides of C2 and C3)."""
    out = [[0.0, 0.0] for _ in problem.servers]
    for g, gp in zip(problem.graphs, placement.graphs):
        for i, p in enumerate(gp.positions):
            ls, lc = problem.load(g, i)
            if is_snic(p):
                out[gp.server][0] += ls
            else:
                out[gp.server][1] += lc
    return [(a, b) for a, b in out]


def violations(problem: Problem, deps: Sequence[Sequence[Dependency]], placement: Placement, tol: float = 1e-9) -> list[str]:
    """Every broken constraint, named as in Fig. 6 (empty list = feasible)."""
    bad: list[str] = []
    top = problem.num_positions - 1
    for g, gp, dg in zip(problem.graphs, placement.graphs, deps):
        for i, p in enumerate(gp.positions):
            if not 0 <= p <= top:
                bad.append(f"C4: {g.name}/{g.elements[i].name} at position {p} outside 0..{top}")
        for d in dg:
            if gp.positions[d.before] > gp.positions[d.after]:
                bad.append(f"C1: {g.name}/{g.elements[d.before].name} must precede "
                           f"{g.elements[d.after].name} ({d.reason})")
    for s, (ls, lc) in zip(problem.servers, loads(problem, placement)):
        if ls > s.snic_capacity + tol:
            bad.append(f"C2: sNIC load {ls:.4g} > capacity {s.snic_capacity:g} on server {s.name}")
        if lc > s.cpu_capacity + tol:
            bad.append(f"C3: CPU load {lc:.4g} > capacity {s.cpu_capacity:g} on server {s.name}")
    return bad


def executed_order(g: ElementGraph, positions: Sequence[int], path: Sequence[int]) -> list[int]:
    """The order a packet on `path` visits its elements after partitioning:
    by position, then by the listed (processing) order."""
    return sorted(path, key=lambda i: (positions[i], i))


def interpret(problem: Problem, placement: Placement) -> list[dict]:
    """The deployable partitioned graph per element graph: elements per device,
    the reconstructed edges, and per path the executed order and PCIe crossings
    (a packet enters and leaves through the sNIC, so each CPU visit costs two)."""
    k = problem.max_round_trips
    out = []
    for g, gp in zip(problem.graphs, placement.graphs):
        pos = gp.positions
        paths = []
        edges: set[tuple[str, str]] = set()
        for path, frac in g.paths():
            order = executed_order(g, pos, path)
            names = [g.elements[i].name for i in order]
            edges.update(zip(names, names[1:]))
            cpu_runs = sum(1 for a, b in zip([0] + [pos[i] for i in order], [pos[i] for i in order])
                           if not is_snic(b) and is_snic(a))
            paths.append({"elements": names, "traffic_fraction": frac, "pcie_crossings": 2 * cpu_runs,
                          "devices": ["snic" if is_snic(pos[i]) else "cpu" for i in order]})
        by_pos: dict[str, list[str]] = {}
        for i, p in sorted(enumerate(pos), key=lambda t: (t[1], t[0])):
            by_pos.setdefault(position_name(p, k), []).append(g.elements[i].name)
        out.append({"graph": g.name, "server": problem.servers[gp.server].name, "positions": by_pos,
                    "edges": sorted(edges), "paths": paths,
                    "round_trips": round_trips(pos), "benefit_us": graph_benefit(problem, g, pos)})
    return out
