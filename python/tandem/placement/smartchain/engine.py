"""SmartChain placement: the entry point `tandem place smartchain` calls.

Pipeline (pure): input -> `Problem` -> dependency analyzer (per graph) -> a
method -> `Placement` -> checked and evaluated with one formula -> interpreted
into a deployable partitioned graph -> `PlacementResult`.
Methods: "ilp" (Fig. 6 on HiGHS, default), "enumeration" (exact, no ILP:
2^n subsets + branch and bound), "decomposition" (exact: per-graph Pareto
enumeration + a small assignment MILP; the fast one for many graphs and
servers), "sequential" and "greedy" (the strawmen).
Infeasible inputs raise `SmartChainInfeasible` naming the binding constraint
(dependency cycle, C2 sNIC capacity, C3 CPU capacity, the round-trip limit).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from tandem.placement.result import PlacementResult
from tandem.placement.smartchain.deps import Dependency, analyze
from tandem.placement.smartchain.decomposition import solve_decomposition
from tandem.placement.smartchain.enumeration import MAX_ELEMENTS, solve_enumeration
from tandem.placement.smartchain.evaluate import Placement, benefit, interpret, loads, round_trips, violations
from tandem.placement.smartchain.ilp import solve_ilp
from tandem.placement.smartchain.io import load_problem
from tandem.placement.smartchain.model import Problem, SmartChainError, SmartChainInfeasible, position_name
from tandem.placement.smartchain.strawmen import sequential, suitability_greedy
from tandem.placement.solver import InfeasibleError, SolverOptions, Status

METHODS = ("ilp", "enumeration", "decomposition", "sequential", "greedy")
OPTIMAL_METHODS = ("ilp", "enumeration", "decomposition")


def analyze_all(problem: Problem) -> list[list[Dependency]]:
    return [analyze(g) for g in problem.graphs]


def _exact(problem: Problem, deps: list[list[Dependency]], method: str,
           time_limit_s: float | None, rel_gap: float = 1e-9) -> tuple[Placement | None, float | None, str, float | None]:
    """(placement, objective, status, gap) from an optimal method; None = infeasible."""
    if method in ("enumeration", "decomposition"):
        if method == "enumeration":
            r = solve_enumeration(problem, deps)
        else:
            r = solve_decomposition(problem, deps, SolverOptions(time_limit_s=time_limit_s, mip_rel_gap=rel_gap,
                                                                    explain_infeasible=False))
        return (r[0], r[1], "optimal", 0.0) if r else (None, None, "infeasible", None)
    try:
        a = solve_ilp(problem, deps, SolverOptions(time_limit_s=time_limit_s, mip_rel_gap=rel_gap,
                                                   explain_infeasible=False))
    except InfeasibleError:
        return None, None, "infeasible", None
    status = "optimal" if a.status is Status.OPTIMAL else a.status.value
    return a.placement, a.objective, status, a.gap


def _feasible(problem: Problem, deps: list[list[Dependency]]) -> bool:
    small = all(len(g.elements) <= 16 for g in problem.graphs)
    return _exact(problem, deps, "decomposition" if small else "ilp", None)[0] is not None


def explain_infeasible(problem: Problem, deps: list[list[Dependency]]) -> SmartChainInfeasible:
    """Name the binding constraint by relaxing one family at a time."""
    big = 1e18
    for g in problem.graphs:
        for i, e in enumerate(g.elements):
            ls, lc = problem.load(g, i)
            if all(ls > s.snic_capacity + 1e-9 and lc > s.cpu_capacity + 1e-9 for s in problem.servers):
                return SmartChainInfeasible(
                    f"{g.name}/{e.name} fits nowhere at {g.throughput_mbps:g} Mbps: it needs {ls:.3g} of an sNIC "
                    f"(C2) or {lc:.3g} of a CPU (C3), more than any server has",
                    f"C2/C3 capacity for {g.name}/{e.name}")
    for label, col, cap_name in (("C2", 0, "snic_capacity"), ("C3", 1, "cpu_capacity")):
        # elements that cannot run on the other device must all fit on this one
        other = 1 - col
        forced, need = [], 0.0
        for g in problem.graphs:
            for i, e in enumerate(g.elements):
                ld = problem.load(g, i)
                other_cap = max(getattr(s, "cpu_capacity" if col == 0 else "snic_capacity") for s in problem.servers)
                if ld[other] > other_cap + 1e-9:
                    forced.append(f"{g.name}/{e.name}")
                    need += ld[col]
        have = sum(getattr(s, cap_name) for s in problem.servers)
        if need > have + 1e-9:
            dev = "sNIC" if col == 0 else "CPU"
            return SmartChainInfeasible(
                f"{label}: {', '.join(forced)} cannot run on the {'CPU' if col == 0 else 'sNIC'} and together need "
                f"{need:.3g} of the {dev}, but the servers have {have:.3g}", f"{label} {dev} capacity")
    no_c2 = replace(problem, servers=tuple(replace(s, snic_capacity=big) for s in problem.servers))
    no_c3 = replace(problem, servers=tuple(replace(s, cpu_capacity=big) for s in problem.servers))
    n_max = max(len(g.elements) for g in problem.graphs)
    no_k = replace(problem, max_round_trips=max(problem.max_round_trips, (n_max + 1) // 2))
    names = ", ".join(s.name for s in problem.servers)
    if no_k.max_round_trips > problem.max_round_trips and _feasible(no_k, deps):
        return SmartChainInfeasible(
            f"no placement fits with at most {problem.max_round_trips} PCIe round trip(s) per graph "
            f"(S_ig < C < S_eg); allowing more (max_round_trips) would make it feasible",
            "round-trip limit (positions S_ig < C < S_eg)")
    f2, f3 = _feasible(no_c2, deps), _feasible(no_c3, deps)
    if f2 and not f3:
        return SmartChainInfeasible(f"C2: the sNIC capacity of server(s) {names} is too small for the elements "
                                    f"that cannot run on the CPU", "C2 sNIC capacity")
    if f3 and not f2:
        return SmartChainInfeasible(f"C3: the CPU capacity of server(s) {names} is too small for the elements "
                                    f"that cannot run on the sNIC", "C3 CPU capacity")
    if f2 and f3:
        return SmartChainInfeasible(f"C2 and C3: more sNIC or more CPU capacity on server(s) {names} would make "
                                    f"it feasible; together they are too small", "C2+C3 capacity")
    return SmartChainInfeasible(f"C2 and C3 together: sNIC plus CPU capacity of server(s) {names} cannot carry "
                                f"the graphs at their estimated throughput", "C2+C3 capacity")


def _assignment(problem: Problem, placement: Placement) -> dict[str, str]:
    k = problem.max_round_trips
    multi = len(problem.servers) > 1
    out = {}
    for g, gp in zip(problem.graphs, placement.graphs):
        srv = problem.servers[gp.server].name
        for e, p in zip(g.elements, gp.positions):
            where = position_name(p, max(k, (p + 1) // 2))
            out[f"{g.name}/{e.name}"] = f"{srv}:{where}" if multi else where
    return out


def solve(problem: Problem, method: str | None = "ilp", time_limit_s: float | None = None,
          rel_gap: float | None = None) -> PlacementResult:
    """Solve; the optimal methods prove their answer within `rel_gap` (default 1e-9)."""
    method = method or "ilp"
    if method not in METHODS:
        raise SmartChainError(f"unknown SmartChain method {method!r}; choose one of {', '.join(METHODS)}")
    if method in ("enumeration", "decomposition") and any(len(g.elements) > MAX_ELEMENTS for g in problem.graphs):
        raise SmartChainError(f"method {method!r} handles graphs of up to {MAX_ELEMENTS} elements; use 'ilp'")
    t0 = time.perf_counter()
    deps = analyze_all(problem)
    gap: float | None = None
    reason = ""
    if method in OPTIMAL_METHODS:
        placement, _, status, gap = _exact(problem, deps, method, time_limit_s, 1e-9 if rel_gap is None else rel_gap)
        if placement is None:
            if status == "infeasible":
                raise explain_infeasible(problem, deps)
            raise SmartChainError(f"the ILP found no placement within the time limit ({status})")
    else:
        placement, reason = (sequential if method == "sequential" else suitability_greedy)(problem)
        status = "feasible" if placement is not None else "infeasible"
    elapsed = time.perf_counter() - t0
    details: dict = {"dependencies": [
        {"graph": g.name, "before": g.elements[d.before].name, "after": g.elements[d.after].name,
         "kind": d.kind, "reason": d.reason} for g, dg in zip(problem.graphs, deps) for d in dg]}
    if placement is None:
        details["reason"] = reason
        return PlacementResult("smartchain", method, status, None, {}, elapsed, None, details)
    if method in OPTIMAL_METHODS:
        bad = violations(problem, deps, placement)
        if bad:  # a solver answer that breaks the model is a bug, never an output
            raise AssertionError(f"{method} returned an infeasible placement: {bad}")
    details["partitioned"] = interpret(problem, placement)
    details["loads"] = {s.name: {"snic": l[0], "cpu": l[1]} for s, l in zip(problem.servers, loads(problem, placement))}
    details["round_trips"] = {g.name: round_trips(gp.positions) for g, gp in zip(problem.graphs, placement.graphs)}
    return PlacementResult("smartchain", method, status, benefit(problem, placement), _assignment(problem, placement),
                           elapsed, gap, details)


def solve_file(path: Path, method: str | None = None, time_limit_s: float | None = None,
               rel_gap: float | None = None) -> PlacementResult:
    """`tandem place smartchain INPUT`: a SmartChain YAML/JSON file (format in
    docs/placement-smartchain.md)."""
    return solve(load_problem(Path(path)), method, time_limit_s, rel_gap)

