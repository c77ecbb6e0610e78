"""MILP-FP (eqs. 2-16) and MILP-FR (eqs. 17-31) of OVS-POF-TC, built on the
shared HiGHS adapter (`placement/solver.py`) in bulk (numpy row blocks).

Inputs: `FpInstance` / `FrInstance`, `SolverOptions`, and `printed`: build the
linearisation exactly as printed (True) or corrected (False, default).
Output: offload masks plus the solver's status, objective, gap and times.
Cost: 6 columns and 6 rows per flow; HiGHS time grows fast past ~10^5 flows.

Corrections (docs/placement-pof.md, "Checking the linearisation"):
  * eq. (10) as printed, a_i(1 - x_i) >= eps + f_i3, reads 0 >= eps + f_i3 for
    an offloaded flow (x_i = 1): no flow can ever be offloaded. We use
    a_i(1 - x_i) >= eps(1 - x_i) + f_i3, identical for x_i = 0.
  * nothing ties f_i1 to x_i; T_i = tau1 for an offloaded flow only follows
    because the minimisation prefers tau1 < tau2. We add f_i1 >= x_i so the
    model stays right for any latency values.
The big-M and eps constants are derived from the data (M >= max a_i and
>= |N|; eps below the smallest a_i - 1 > 0) instead of "very large/small".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tandem.placement.pof.model import Flows, FpInstance, FrInstance, PofParams
from tandem.placement.solver import Model, Sense, SolverOptions, Status, VarType

COUNT_EPS = 0.5  # the eps of eqs. (14), (15), (26): any value in (0, 1] works for integer counts


@dataclass(frozen=True)
class MilpAnswer:
    offload: np.ndarray  # bool over all flows of the model (FR: existing then new)
    objective: float | None
    status: Status
    gap: float | None
    solve_time_s: float
    build_time_s: float
    num_vars: int
    num_rows: int


def _ratio_eps(a: np.ndarray) -> float:
    over = a[a > 1.0] - 1.0
    return float(min(1e-3, 0.5 * over.min())) if over.size else 1e-3


def _flow_block(model: Model, flows_rate: np.ndarray, flows_kr: np.ndarray, p: PofParams, printed: bool) -> dict[str, np.ndarray]:
    """Columns x, y, T, f1, f2, f3 per flow and rows (4), (7)-(11) [+ f1 >= x]."""
    n = flows_rate.shape[0]
    a = flows_rate / flows_kr  # eq. (7): a_i is data, so it stays a constant
    eps = _ratio_eps(a)
    big = float(max(2.0, a.max() + 1.0)) if n else 2.0
    ids = np.arange(n)
    cols = {}
    for name in ("x", "y", "f1", "f2", "f3"):
        cols[name] = model.add_vars([(name, int(i)) for i in ids], VarType.BINARY).indices
    cols["T"] = model.add_vars([("T", int(i)) for i in ids], VarType.CONTINUOUS, 0.0).indices
    one, r = np.ones(n), ids

    def block(terms: list[tuple[str, np.ndarray | float]], lo, up, label: str) -> None:
        rows = np.concatenate([r] * len(terms))
        cc = np.concatenate([cols[c] for c, _ in terms])
        vv = np.concatenate([np.broadcast_to(np.asarray(v, dtype=float), (n,)) for _, v in terms])
        model.add_rows(rows, cc, vv, lo, up, n, (label, list(range(n))))

    block([("x", one), ("y", one)], 1.0, 1.0, "eq4_one_path")
    block([("f1", one), ("f2", one), ("f3", one)], 1.0, 1.0, "eq8_one_latency")
    block([("f1", p.tau1_us), ("f2", p.tau2_us), ("f3", p.tau3_us), ("T", -one)], 0.0, 0.0, "eq9_latency")
    if printed:  # a(1-x) >= eps + f3  <=>  -a x - f3 >= eps - a
        block([("x", -a), ("f3", -one)], eps - a, np.inf, "eq10_printed")
    else:  # a(1-x) >= eps(1-x) + f3  <=>  (eps - a) x - f3 >= eps - a
        block([("x", eps - a), ("f3", -one)], eps - a, np.inf, "eq10_corrected")
        block([("f1", one), ("x", -one)], 0.0, np.inf, "f1_at_least_x")
    block([("x", -a), ("f2", -one), ("f3", -big * one)], -np.inf, -a, "eq11")
    return cols


def _count_row(model: Model, cols: np.ndarray, extra: list[tuple[int, float]], lo: float, up: float, name: str) -> None:
    cc = np.concatenate([cols, np.asarray([c for c, _ in extra], dtype=np.int64)])
    vv = np.concatenate([np.ones(cols.shape[0]), np.asarray([v for _, v in extra], dtype=float)])
    model.add_rows(np.zeros(cc.shape[0], dtype=np.int64), cc, vv, lo, up, 1, [name])


def _objective(model: Model, cols: dict[str, np.ndarray], p: PofParams) -> None:
    n = cols["x"].shape[0]
    for name, tau in (("f1", p.tau1_us), ("f2", p.tau2_us), ("f3", p.tau3_us)):
        model.add_objective_terms(cols[name], np.full(n, tau))


def _answer(model: Model, cols: dict[str, np.ndarray], options: SolverOptions, build_s: float) -> MilpAnswer:
    sol = model.solve(options)
    if sol.has_solution:
        x = sol.x[cols["x"]] > 0.5
    else:
        x = np.zeros(cols["x"].shape[0], dtype=bool)
    return MilpAnswer(x, sol.objective, sol.status, sol.gap, sol.solve_time_s, build_s + sol.build_time_s,
                      model.num_vars, model.num_constraints)


def solve_fp_milp(inst: FpInstance, options: SolverOptions | None = None, printed: bool = False) -> MilpAnswer:
    """MILP-FP, eqs. (2)-(16)."""
    import time

    t0 = time.perf_counter()
    p, f = inst.params, inst.flows
    n = len(f)
    model = Model("MILP-FP" + (" (as printed)" if printed else ""), Sense.MINIMIZE)
    cols = _flow_block(model, f.rate_mbps, f.kernel_mbps, p, printed)
    g = model.add_vars(["g1", "g2", "g3", "gamma"], VarType.BINARY).indices
    big_n = float(max(n, 1))
    _count_row(model, cols["x"], [], -np.inf, float(p.capacity), "eq3_capacity")
    model.add_rows(np.zeros(3, dtype=np.int64), g[:3], np.ones(3), 1.0, 1.0, 1, ["eq12"])
    model.add_rows(np.zeros(3, dtype=np.int64), np.array([g[3], g[0], g[2]]), np.array([1.0, -1.0, -1.0]), 0.0, 0.0, 1, ["eq13_gamma"])
    _count_row(model, cols["x"], [(int(g[0]), COUNT_EPS), (int(g[2]), -big_n)], -np.inf, 0.0, "eq14")
    _count_row(model, cols["x"], [(int(g[0]), big_n), (int(g[2]), -COUNT_EPS)], 0.0, np.inf, "eq15")
    _objective(model, cols, p)
    model.add_objective_terms(np.array([g[0], g[2]]), np.array([p.tau_add_us, p.tau_add_us]))  # eq. (16)
    return _answer(model, cols, options or SolverOptions(), time.perf_counter() - t0)


def solve_fr_milp(inst: FrInstance, options: SolverOptions | None = None, printed: bool = False) -> MilpAnswer:
    """MILP-FR, eqs. (17)-(31). Flows are indexed existing first, then new.
    With `params.fixed_costs == "per_flow"`, eqs. (25)-(26) and (29)-(30) are
    replaced by rows that fire gamma / xi on any added / removed flow."""
    import time

    t0 = time.perf_counter()
    p = inst.params
    ne, nw = len(inst.existing), len(inst.new)
    both = Flows(np.concatenate([inst.existing.rate_mbps, inst.new.rate_mbps]),
                 np.concatenate([inst.existing.kernel_mbps, inst.new.kernel_mbps]))
    model = Model("MILP-FR" + (" (as printed)" if printed else ""), Sense.MINIMIZE)
    cols = _flow_block(model, both.rate_mbps, both.kernel_mbps, p, printed)
    v = model.add_vars(["h1", "h2", "k1", "k2", "gamma", "xi"], VarType.BINARY).indices
    h1, h2, k1, k2, gamma, xi = (int(c) for c in v)
    xe, xw = cols["x"][:ne], cols["x"][ne:]
    zsum = float(inst.offloaded.sum())
    big = float(max(ne, 1))
    _count_row(model, cols["x"], [], -np.inf, float(p.capacity), "eq18_capacity")

    def row(terms: list[tuple[int, float]], lo: float, up: float, name: str) -> None:
        model.add_rows(np.zeros(len(terms), dtype=np.int64), np.array([c for c, _ in terms]),
                       np.array([w for _, w in terms]), lo, up, 1, [name])

    row([(h1, 1.0), (h2, 1.0)], 1.0, 1.0, "eq23")
    row([(gamma, 1.0), (h2, -1.0)], 0.0, 0.0, "eq24_gamma")
    row([(k1, 1.0), (k2, 1.0)], 1.0, 1.0, "eq27")
    row([(xi, 1.0), (k2, -1.0)], 0.0, 0.0, "eq28_xi")
    if p.fixed_costs == "per_flow":
        # gamma: any flow not on the sNIC before is offloaded; xi: any flow on it is removed
        z = inst.offloaded
        adds = np.concatenate([xe[~z], xw])
        _count_row(model, adds, [(h2, -float(max(adds.shape[0], 1)))], -np.inf, 0.0, "add_any")
        _count_row(model, adds, [(h2, -COUNT_EPS)], 0.0, np.inf, "add_some")
        _count_row(model, xe[z], [(k2, zsum)], zsum, np.inf, "remove_any")
        _count_row(model, xe[z], [(k2, COUNT_EPS)], -np.inf, zsum, "remove_some")
    else:
        _count_row(model, xw, [(h2, -float(nw))], -np.inf, 0.0, "eq25")
        _count_row(model, xw, [(h2, -COUNT_EPS)], 0.0, np.inf, "eq26")
        _count_row(model, xe, [(k1, -big), (k2, -zsum)], -np.inf, 0.0, "eq29")
        _count_row(model, xe, [(k1, -zsum)], 0.0, np.inf, "eq30")
    _objective(model, cols, p)
    model.add_objective_terms(np.array([h2, k2]), np.array([p.tau_add_us, p.tau_del_us]))  # eq. (31)
    return _answer(model, cols, options or SolverOptions(), time.perf_counter() - t0)
