"""Exact SmartChain placement without an ILP: enumeration + branch and bound.

Idea: once we know which elements run on the CPU, the best positions follow
(`least_levels`: each element at the smallest position its dependencies allow),
and they use the fewest round trips. So a graph with n elements has only 2^n
candidate placements (not 3^n), each with a benefit, an sNIC load and a CPU
load. We enumerate them with numpy (one vector op per element over all 2^n
subsets), keep the Pareto-optimal ones per graph, then assign every graph to
a server and a candidate by depth-first branch and bound (bound: the best
unconstrained benefit of the graphs still open).
Inputs: `Problem` + dependency sets. Output: an optimal `Placement` or None.
Cost: O(n 2^n) per graph (n <= ~20), then search over graphs x servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tandem.placement.smartchain.deps import Dependency
from tandem.placement.smartchain.evaluate import GraphPlacement, Placement, dep_preds
from tandem.placement.smartchain.model import ElementGraph, Problem

MAX_ELEMENTS = 22


@dataclass(frozen=True)
class Candidates:
    """Pareto-optimal placements of one graph, best benefit first."""

    benefit: np.ndarray
    snic_load: np.ndarray
    cpu_load: np.ndarray
    levels: np.ndarray  # (num candidates, n) positions


def enumerate_graph(problem: Problem, g: ElementGraph, deps: Sequence[Dependency],
                    snic_cap: float = np.inf, cpu_cap: float = np.inf, pareto: bool = True) -> Candidates:
    """All 2^n CPU subsets of g with their least positions; drops those that
    need more than K round trips or exceed the given capacities, and those
    dominated by another (no more benefit, no less load)."""
    n = len(g.elements)
    if n > MAX_ELEMENTS:
        raise ValueError(f"enumeration handles graphs up to {MAX_ELEMENTS} elements; {g.name!r} has {n}")
    masks = np.arange(1 << n, dtype=np.int64)
    cpu = ((masks[None, :] >> np.arange(n, dtype=np.int64)[:, None]) & 1).astype(np.int16)
    lv = np.zeros_like(cpu)
    for j, preds in enumerate(dep_preds(n, deps)):
        lo = lv[list(preds)].max(axis=0) if preds else np.zeros(1 << n, dtype=np.int16)
        lv[j] = lo + ((lo & 1) != cpu[j])
    max_cpu = np.where(cpu == 1, lv, -1).max(axis=0) if n else np.full(1, -1)
    rt = (max_cpu + 1) // 2
    ld = np.array([problem.load(g, i) for i in range(n)]).reshape(n, 2)
    s = np.array([e.suitability for e in g.elements])
    nic = 1 - cpu
    snic_load = ld[:, 0] @ nic if n else np.zeros(1)
    cpu_load = ld[:, 1] @ cpu if n else np.zeros(1)
    ben = problem.t_trans_us * (1 - rt) + (s @ nic if n else 0.0)
    ok = (rt <= problem.max_round_trips) & (snic_load <= snic_cap + 1e-9) & (cpu_load <= cpu_cap + 1e-9)
    idx = np.flatnonzero(ok)
    idx = idx[np.lexsort((cpu_load[idx], snic_load[idx], -ben[idx]))]
    if pareto:
        idx = _pareto(idx, snic_load, cpu_load)
    return Candidates(ben[idx], snic_load[idx], cpu_load[idx], lv[:, idx].T.astype(np.int64))


def _pareto(idx: np.ndarray, s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Keep candidates (sorted best benefit first) that no earlier one weakly
    dominates in both loads."""
    if idx.shape[0] <= 4096:
        si, ci = s[idx], c[idx]
        dom = (si[None, :] <= si[:, None] + 1e-12) & (ci[None, :] <= ci[:, None] + 1e-12)
        dom &= np.tri(idx.shape[0], k=-1, dtype=bool)
        return idx[~dom.any(axis=1)]
    keep: list[int] = []
    for i in idx:
        if keep:
            k = np.asarray(keep)
            if np.any((s[k] <= s[i] + 1e-12) & (c[k] <= c[i] + 1e-12)):
                continue
        keep.append(int(i))
    return np.asarray(keep, dtype=np.int64)


def _multipliers(cands: list[Candidates]) -> np.ndarray:
    """A grid of Lagrange multipliers (lam_s, lam_c) >= 0 for the pooled
    capacity constraints, spanning the benefit-per-load ratios that occur."""
    ratios = []
    for c in cands:
        for ld in (c.snic_load, c.cpu_load):
            pos = ld[ld > 1e-12]
            if pos.size:
                ratios.append(np.abs(c.benefit).max() / pos.min())
                ratios.append(max(1e-3, np.abs(c.benefit).min()) / pos.max())
    lo, hi = (min(ratios), max(ratios)) if ratios else (1.0, 1.0)
    axis = np.concatenate([[0.0], np.geomspace(max(lo, 1e-6) / 10, hi * 10, 12)])
    return np.array([(a, b) for a in axis for b in axis])


class SearchBudgetExceeded(Exception):
    """The branch and bound visited more nodes than allowed (no answer)."""


def all_candidates(problem: Problem, deps: Sequence[Sequence[Dependency]]) -> list[Candidates] | None:
    """Pareto candidates of every graph (None if some graph has none)."""
    max_s = max(s.snic_capacity for s in problem.servers)
    max_c = max(s.cpu_capacity for s in problem.servers)
    cands = [enumerate_graph(problem, g, d, max_s, max_c) for g, d in zip(problem.graphs, deps)]
    return None if any(c.benefit.shape[0] == 0 for c in cands) else cands


def solve_enumeration(problem: Problem, deps: Sequence[Sequence[Dependency]]) -> tuple[Placement, float] | None:
    """Optimal placement over all graphs and servers, or None if infeasible."""
    servers = problem.servers
    if len(problem.graphs) == 1 and len(servers) == 1:  # no assignment to search
        c = enumerate_graph(problem, problem.graphs[0], deps[0], servers[0].snic_capacity,
                            servers[0].cpu_capacity, pareto=False)
        if c.benefit.shape[0] == 0:
            return None
        return Placement((GraphPlacement(0, tuple(int(v) for v in c.levels[0])),)), float(c.benefit[0])
    cands = all_candidates(problem, deps)
    return None if cands is None else assign_bnb(problem, cands)


def assign_bnb(problem: Problem, cands: list[Candidates], max_nodes: int | None = None) -> tuple[Placement, float] | None:
    """Pick one candidate and one server per graph, maximising the benefit
    under per-server capacity: depth-first branch and bound. Raises
    `SearchBudgetExceeded` after `max_nodes` nodes."""
    servers = problem.servers
    order = sorted(range(len(cands)), key=lambda i: -(cands[i].benefit[0] - cands[i].benefit[-1]))
    lam = _multipliers(cands)
    # tails[d, l]: sum over graphs order[d:] of max_k (b - lam_s * ls - lam_c * lc)
    per = np.array([(cands[i].benefit[None, :] - lam[:, :1] * cands[i].snic_load[None, :]
                     - lam[:, 1:] * cands[i].cpu_load[None, :]).max(axis=1) for i in order]).reshape(len(order), -1)
    tails = np.concatenate([np.cumsum(per[::-1], axis=0)[::-1], np.zeros((1, lam.shape[0]))])
    rem_s = [s.snic_capacity for s in servers]
    rem_c = [s.cpu_capacity for s in servers]
    choice: list[tuple[int, int]] = [(0, 0)] * len(order)
    best: list = [-np.inf, None]
    nodes = [0]

    def bound(depth: int, free_s: np.ndarray | float, free_c: np.ndarray | float) -> np.ndarray:
        """Lagrangian bound on what graphs order[depth:] can still add when the
        servers' free capacity is pooled (valid for every multiplier >= 0)."""
        fs, fc = np.asarray(free_s, dtype=float), np.asarray(free_c, dtype=float)
        return (tails[depth][:, None] + lam[:, :1] * fs.reshape(1, -1) + lam[:, 1:] * fc.reshape(1, -1)).min(axis=0)

    def dfs(depth: int, acc: float) -> None:
        nodes[0] += 1
        if max_nodes is not None and nodes[0] > max_nodes:
            raise SearchBudgetExceeded(f"more than {max_nodes} nodes")
        if depth == len(order):
            if acc > best[0] + 1e-9:
                best[0], best[1] = acc, list(choice)
            return
        tot_s, tot_c = sum(rem_s), sum(rem_c)
        if acc + bound(depth, tot_s, tot_c)[0] <= best[0] + 1e-9:
            return
        c = cands[order[depth]]
        seen: set[tuple[float, float, float, float]] = set()
        for si, srv in enumerate(servers):
            state = (rem_s[si], rem_c[si], srv.snic_capacity, srv.cpu_capacity)
            if state in seen:  # an identical server in the same state: same subtree
                continue
            seen.add(state)
            fits = np.flatnonzero((c.snic_load <= rem_s[si] + 1e-9) & (c.cpu_load <= rem_c[si] + 1e-9))
            if fits.shape[0] == 0:
                continue
            ub = acc + c.benefit[fits] + bound(depth + 1, tot_s - c.snic_load[fits], tot_c - c.cpu_load[fits])
            for k, u in zip(fits, ub):
                if u <= best[0] + 1e-9:
                    continue
                rem_s[si] -= c.snic_load[k]
                rem_c[si] -= c.cpu_load[k]
                choice[depth] = (si, int(k))
                dfs(depth + 1, acc + float(c.benefit[k]))
                rem_s[si] += c.snic_load[k]
                rem_c[si] += c.cpu_load[k]

    dfs(0, 0.0)
    if best[1] is None:
        return None
    per_graph: list[GraphPlacement | None] = [None] * len(order)
    for depth, (si, k) in enumerate(best[1]):
        gi = order[depth]
        per_graph[gi] = GraphPlacement(si, tuple(int(v) for v in cands[gi].levels[k]))
    return Placement(tuple(per_graph)), float(best[0])  # type: ignore[arg-type]
