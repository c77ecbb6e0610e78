"""OVS-POF-TC offload selection: the entry points `tandem place pof-fp|pof-fr` call.

Inputs: an instance, or a file read by `pof.io`. Methods: "exact" (default, O(n)), "milp"
(MILP-FP / MILP-FR with the corrected linearisation, HiGHS), "milp-printed"
(the linearisation exactly as printed, to show its flaw) and "heuristic"
(Algorithms 1 / 2). Output: `PlacementResult` whose assignment maps flow ids
to "snic" or "kernel". Every method's objective is recomputed with the same
formula (`fp_objective` / `fr_objective`), so figures are comparable.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from tandem.placement.pof.exact import solve_fp as exact_fp, solve_fr as exact_fr
from tandem.placement.pof.heuristic import heuristic_fp, heuristic_fr
from tandem.placement.pof.milp import MilpAnswer, solve_fp_milp, solve_fr_milp
from tandem.placement.pof.io import load_fp, load_fr
from tandem.placement.pof.model import Flows, FpInstance, FrInstance, PofInputError, fp_objective, fr_objective
from tandem.placement.result import PlacementResult
from tandem.placement.solver import SolverOptions, Status

METHODS = ("exact", "milp", "milp-printed", "heuristic")
FULL_ASSIGNMENT_LIMIT = 100_000  # above this, the assignment lists offloaded flows only


def _assignment(flows: Flows, x: np.ndarray, prefix: str) -> dict[str, str]:
    if len(flows) <= FULL_ASSIGNMENT_LIMIT:
        return {flows.name(i, prefix): ("snic" if x[i] else "kernel") for i in range(len(flows))}
    return {flows.name(int(i), prefix): "snic" for i in np.flatnonzero(x)}


def _milp_status(a: MilpAnswer) -> tuple[str, float | None]:
    if a.status is Status.OPTIMAL:
        return "optimal", a.gap
    return (a.status.value if a.objective is not None else "no_solution"), a.gap


def _check(method: str) -> None:
    if method not in METHODS:
        raise PofInputError(f"unknown POF method {method!r}; choose one of {', '.join(METHODS)}")


def solve_fp(inst: FpInstance, method: str | None = "exact", time_limit_s: float | None = None,
             rel_gap: float | None = None) -> PlacementResult:
    method = method or "exact"
    _check(method)
    t0 = time.perf_counter()
    details: dict = {"flows": len(inst.flows), "capacity": inst.params.capacity}
    gap: float | None = 0.0
    status = "optimal"
    if method == "exact":
        x = exact_fp(inst).offload
    elif method == "heuristic":
        x, gap, status = heuristic_fp(inst), None, "feasible"
    else:
        a = solve_fp_milp(inst, SolverOptions(time_limit_s=time_limit_s, mip_rel_gap=1e-9 if rel_gap is None else rel_gap),
                          printed=method == "milp-printed")
        x = a.offload
        status, gap = _milp_status(a)
        details.update(milp_objective=a.objective, num_vars=a.num_vars, num_rows=a.num_rows,
                       build_time_s=a.build_time_s)
    elapsed = time.perf_counter() - t0
    details.update(offloaded=int(x.sum()), overloaded_in_kernel=int((inst.flows.overloaded() & ~x).sum()))
    if status == "no_solution":
        return PlacementResult("pof-fp", method, status, None, {}, elapsed, None, details)
    return PlacementResult("pof-fp", method, status, fp_objective(inst, x), _assignment(inst.flows, x, "f"),
                           elapsed, gap, details)


def solve_fr(inst: FrInstance, method: str | None = "exact", time_limit_s: float | None = None,
             rel_gap: float | None = None) -> PlacementResult:
    method = method or "exact"
    _check(method)
    t0 = time.perf_counter()
    details: dict = {"existing": len(inst.existing), "new": len(inst.new), "capacity": inst.params.capacity,
                     "offloaded_before": int(inst.offloaded.sum())}
    gap: float | None = 0.0
    status = "optimal"
    if method == "exact":
        a = exact_fr(inst)
        xe, xw = a.offload_existing, a.offload_new
        details["fixed_costs"] = a.case
    elif method == "heuristic":
        (xe, xw), gap, status = heuristic_fr(inst), None, "feasible"
    else:
        m = solve_fr_milp(inst, SolverOptions(time_limit_s=time_limit_s, mip_rel_gap=1e-9 if rel_gap is None else rel_gap),
                          printed=method == "milp-printed")
        ne = len(inst.existing)
        xe, xw = m.offload[:ne], m.offload[ne:]
        status, gap = _milp_status(m)
        details.update(milp_objective=m.objective, num_vars=m.num_vars, num_rows=m.num_rows,
                       build_time_s=m.build_time_s)
    elapsed = time.perf_counter() - t0
    details.update(offloaded_existing=int(xe.sum()), offloaded_new=int(xw.sum()),
                   removed=int((inst.offloaded & ~xe).sum()), added_existing=int((~inst.offloaded & xe).sum()))
    if status == "no_solution":
        return PlacementResult("pof-fr", method, status, None, {}, elapsed, None, details)
    assignment = _assignment(inst.existing, xe, "e") | _assignment(inst.new, xw, "n")
    return PlacementResult("pof-fr", method, status, fr_objective(inst, xe, xw), assignment, elapsed, gap, details)


def solve_fp_file(path: Path, method: str | None = None, time_limit_s: float | None = None,
                  rel_gap: float | None = None) -> PlacementResult:
    """`tandem place pof-fp INPUT`."""
    return solve_fp(load_fp(Path(path)), method, time_limit_s, rel_gap)


def solve_fr_file(path: Path, method: str | None = None, time_limit_s: float | None = None,
                  rel_gap: float | None = None) -> PlacementResult:
    """`tandem place pof-fr INPUT`."""
    return solve_fr(load_fr(Path(path)), method, time_limit_s, rel_gap)
