"""OVS-POF-TC offload selection: the entry points `tandem place pof-fp|pof-fr` call.

Inputs: a YAML/JSON file (format in docs/placement-pof.md) with optional
`params` and either explicit flows or a `generate` block (the paper's random
flows, for large instances). Methods: "exact" (default, O(n)), "milp"
(MILP-FP / MILP-FR with the corrected linearisation, HiGHS), "milp-printed"
(the linearisation exactly as printed, to show its flaw) and "heuristic"
(Algorithms 1 / 2). Output: `PlacementResult` whose assignment maps flow ids
to "snic" or "kernel". Every method's objective is recomputed with the same
formula (`fp_objective` / `fr_objective`), so figures are comparable.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tandem.placement.pof_exact import solve_fp as exact_fp, solve_fr as exact_fr
from tandem.placement.pof_heuristic import heuristic_fp, heuristic_fr
from tandem.placement.pof_milp import MilpAnswer, solve_fp_milp, solve_fr_milp
from tandem.placement.pof_model import (Flows, FpInstance, FrInstance, PofInputError, PofParams, fp_objective,
                                        fr_objective, kernel_throughput_mbps, random_fp, random_fr)
from tandem.placement.result import PlacementResult
from tandem.placement.smartchain_io import Document
from tandem.placement.solver import SolverOptions, Status

METHODS = ("exact", "milp", "milp-printed", "heuristic")
FULL_ASSIGNMENT_LIMIT = 100_000  # above this, the assignment lists offloaded flows only


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # .inf/.nan are never a rate or a size


class ParamsSpec(_Strict):
    tau1_us: float = Field(default=PofParams.tau1_us, ge=0)
    tau2_us: float = Field(default=PofParams.tau2_us, ge=0)
    tau3_us: float = Field(default=PofParams.tau3_us, ge=0)
    tau_add_us: float = Field(default=PofParams.tau_add_us, ge=0)
    tau_del_us: float = Field(default=PofParams.tau_del_us, ge=0)
    capacity: int = Field(default=PofParams.capacity, ge=0)
    fixed_costs: Literal["paper", "per_flow"] = "paper"


class FlowSpec(_Strict):
    id: str | None = None
    rate_mbps: float = Field(gt=0)
    packet_bytes: int | None = Field(default=None, gt=0)
    kernel_mbps: float | None = Field(default=None, gt=0)
    offloaded: bool = False

    @model_validator(mode="after")
    def _kernel(self) -> "FlowSpec":
        if (self.packet_bytes is None) == (self.kernel_mbps is None):
            raise ValueError("give exactly one of packet_bytes (C^kr = 0.534 Mpps x size) or kernel_mbps")
        return self

    def kernel(self) -> float:
        return float(self.kernel_mbps) if self.kernel_mbps is not None else float(kernel_throughput_mbps(self.packet_bytes))


class GenerateFp(_Strict):
    flows: int = Field(ge=0)
    seed: int = 0


class GenerateFr(_Strict):
    existing: int = Field(ge=0)
    new: int = Field(ge=0)
    seed: int = 0


class FpSpec(_Strict):
    params: ParamsSpec = ParamsSpec()
    flows: list[FlowSpec] | None = None
    generate: GenerateFp | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "FpSpec":
        if (self.flows is None) == (self.generate is None):
            raise ValueError("give either `flows` or `generate`")
        return self


class FrSpec(_Strict):
    params: ParamsSpec = ParamsSpec()
    existing: list[FlowSpec] | None = None
    new: list[FlowSpec] | None = None
    generate: GenerateFr | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "FrSpec":
        if (self.existing is None and self.new is None) == (self.generate is None):
            raise ValueError("give either `existing`/`new` flows or `generate`")
        return self


def _flows(specs: list[FlowSpec], prefix: str) -> Flows:
    ids = tuple(f.id or f"{prefix}{i}" for i, f in enumerate(specs))
    return Flows(np.array([f.rate_mbps for f in specs], dtype=float), np.array([f.kernel() for f in specs], dtype=float), ids)


def _params(s: ParamsSpec) -> PofParams:
    return PofParams(s.tau1_us, s.tau2_us, s.tau3_us, s.tau_add_us, s.tau_del_us, s.capacity, s.fixed_costs)


def _check_ids(doc: Document, key: str, specs: list[FlowSpec], seen: set[str]) -> None:
    for i, f in enumerate(specs):
        fid = f.id or f"{'e' if key == 'existing' else 'n' if key == 'new' else 'f'}{i}"
        if fid in seen:
            raise doc.fail((key, i, "id"), f"flow id {fid!r} is used twice")
        seen.add(fid)


def load_fp(path: Path) -> FpInstance:
    doc = Document(Path(path), PofInputError)
    try:
        spec = FpSpec.model_validate(doc.data)
    except ValidationError as e:
        raise doc.validation_error(e) from None
    p = _params(spec.params)
    if spec.generate is not None:
        return random_fp(spec.generate.flows, spec.generate.seed, p)
    _check_ids(doc, "flows", spec.flows or [], set())
    return FpInstance(_flows(spec.flows or [], "f"), p)


def load_fr(path: Path) -> FrInstance:
    doc = Document(Path(path), PofInputError)
    try:
        spec = FrSpec.model_validate(doc.data)
    except ValidationError as e:
        raise doc.validation_error(e) from None
    p = _params(spec.params)
    if spec.generate is not None:
        return random_fr(spec.generate.existing, spec.generate.new, spec.generate.seed, p)
    ex, nw = spec.existing or [], spec.new or []
    seen: set[str] = set()
    _check_ids(doc, "existing", ex, seen)
    _check_ids(doc, "new", nw, seen)
    for i, f in enumerate(nw):
        if f.offloaded:
            raise doc.fail(("new", i, "offloaded"), "a new flow cannot already be offloaded")
    z = np.array([f.offloaded for f in ex], dtype=bool)
    if int(z.sum()) > p.capacity:
        raise doc.fail(("existing",), f"{int(z.sum())} existing flows are marked offloaded but the sNIC holds "
                                      f"only params.capacity = {p.capacity}")
    return FrInstance(_flows(ex, "e"), z, _flows(nw, "n"), p)


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


def solve_fp(inst: FpInstance, method: str | None = "exact", time_limit_s: float | None = None) -> PlacementResult:
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
        a = solve_fp_milp(inst, SolverOptions(time_limit_s=time_limit_s), printed=method == "milp-printed")
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


def solve_fr(inst: FrInstance, method: str | None = "exact", time_limit_s: float | None = None) -> PlacementResult:
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
        m = solve_fr_milp(inst, SolverOptions(time_limit_s=time_limit_s), printed=method == "milp-printed")
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


def solve_fp_file(path: Path, method: str | None = None, time_limit_s: float | None = None) -> PlacementResult:
    """`tandem place pof-fp INPUT`."""
    return solve_fp(load_fp(Path(path)), method, time_limit_s)


def solve_fr_file(path: Path, method: str | None = None, time_limit_s: float | None = None) -> PlacementResult:
    """`tandem place pof-fr INPUT`."""
    return solve_fr(load_fr(Path(path)), method, time_limit_s)
