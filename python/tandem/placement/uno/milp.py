"""UNO placement as a MILP on HiGHS: Algorithm 1 as written, generalised to k
sNICs and several resources, with the PCIe fix: per sNIC link, separate
upstream/downstream cut variables (`up ≥ z_i − z_j`, `down ≥ z_j − z_i`), so
traffic crossing the cut in either orientation is counted (see uno.py for the
duplex/shared/paper accounting). Built in bulk with numpy.

Variables: x[i,k] ∈ {0,1} for free node i and sNIC k (host = 1 − Σ_k x[i,k],
so k = 1 is one binary per node, as in the paper's p_i); up/down ∈ [0,1] per (edge, sNIC) where the edge can cross.
Cost: O(n·k + E·k) variables and rows.
"""

from __future__ import annotations

import time

import numpy as np

from tandem.placement.result import PlacementResult
from tandem.placement.solver import InfeasibleError, Model, SolverOptions, Status, VarType
from tandem.placement.uno.model import UnoInfeasible, UnoProblem, pcie_load, to_result

TOL = 1e-9


def build_milp(p: UnoProblem, compact: bool = False) -> tuple[Model, np.ndarray]:
    """The model and an (n, K+1) array of x column indices (-1 for pinned).
    `compact`: no cut variable for edges with a pinned end (see below)."""
    a = p.arrays
    n, K, L = len(a.names), a.K, a.K + 1
    free = a.free
    m = Model("uno")
    # x[i,k] = 1 iff free node i is on sNIC k (k = 1..K); "on host" is 1 - Σ_k x[i,k]
    F = len(free)
    blk = m.add_vars([("x", a.names[i], k) for i in free for k in range(1, L)], VarType.BINARY)
    X = np.full((n, L), -1, dtype=np.int64)
    X[free, 1:] = blk.indices.reshape(F, K)
    if K > 1:
        m.add_rows(np.repeat(np.arange(F), K), blk.indices, np.ones(F * K), -np.inf, 1.0, F,
                   ("assign", [a.names[i] for i in free]))
    # objective: host use of free nodes (+ pinned constant) + move costs
    cost = a.cost
    const = float(cost[a.pin == 0].sum()) + float(cost[free].sum())
    m.add_objective_terms(X[free, 1:].ravel(), np.repeat(-cost[free], K))
    cur_rows = free[a.cur[free] >= 0]
    if len(cur_rows):
        # moved_i = 1 - stay_i; stay on host = 1 - Σ_k x[i,k], stay on sNIC k = x[i,k]
        at_host = cur_rows[a.cur[cur_rows] == 0]
        at_nic = cur_rows[a.cur[cur_rows] > 0]
        mv_idx = np.concatenate([X[at_host, 1:].ravel(), X[at_nic, a.cur[at_nic]]])
        mv_coef = np.concatenate([np.ones(len(at_host) * K), -np.ones(len(at_nic))])
        mv_const = float(len(at_nic))  # moved = const + coef·x
        if a.move_cost:
            const += a.move_cost * mv_const
            m.add_objective_terms(mv_idx, a.move_cost * mv_coef)
        if a.move_budget is not None:
            m.add_rows(np.zeros(len(mv_idx)), mv_idx, mv_coef, -np.inf, a.move_budget - mv_const, 1,
                       ["move_budget"])
    # PCIe cut variables per sNIC and direction. With `compact`, an edge with one
    # pinned end needs no cut variable: its crossing is the free end's x (tail free,
    # head pinned off sNIC k) or 1 − x (head free, tail pinned on k), added to the
    # budget row directly — same integer points and the same LP relaxation
    # (a cut variable above that value only loads a ≤ budget), fewer rows/columns
    s, d = a.src, a.dst
    terms: dict[tuple[str, int], tuple[list[np.ndarray], list[np.ndarray], float]] = {}
    for k in range(K):
        zc = (a.pin == k + 1).astype(float)  # constant part of z (pinned on k)
        zv = X[:, k + 1]  # variable part (-1 if pinned)
        for direction, (tail, head) in (("up", (s, d)), ("down", (d, s))):
            # cross ≥ z_tail − z_head: can be positive iff tail may be on k and head may be off k
            can_tail = (zv[tail] >= 0) | (zc[tail] > 0)
            can_head_off = (zv[head] >= 0) | (zc[head] == 0)
            both_const = (zv[tail] < 0) & (zv[head] < 0)
            c = float(a.t[both_const & (zc[tail] > 0) & (zc[head] == 0)].sum())
            need = np.flatnonzero(can_tail & can_head_off & ~both_const & (a.t > 0))
            idx_l: list[np.ndarray] = []
            coef_l: list[np.ndarray] = []
            if compact and len(need):
                tv, hv = zv[tail[need]], zv[head[need]]
                tail_only = (tv >= 0) & (hv < 0)  # head pinned off k: crossing = x_tail
                head_only = (tv < 0) & (hv >= 0)  # tail pinned on k: crossing = 1 − x_head
                idx_l += [tv[tail_only], hv[head_only]]
                coef_l += [a.t[need[tail_only]], -a.t[need[head_only]]]
                c += float(a.t[need[head_only]].sum())
                need = need[~(tail_only | head_only)]
            if len(need):
                keys = [(direction, int(e), k) for e in need]
                cv = m.add_vars(keys, VarType.CONTINUOUS, 0.0, 1.0)
                r = np.arange(len(need))
                rows = [r]
                cols = [cv.indices]
                vals = [np.ones(len(need))]
                tv, hv = zv[tail[need]], zv[head[need]]
                mt, mh = tv >= 0, hv >= 0
                rows += [r[mt], r[mh]]
                cols += [tv[mt], hv[mh]]
                vals += [-np.ones(mt.sum()), np.ones(mh.sum())]
                lower = zc[tail[need]] - zc[head[need]]
                m.add_rows(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), lower, np.inf, len(need),
                           (f"cut_{direction}", [(a.names[s[e]], a.names[d[e]], p.snics[k].name) for e in need]))
                idx_l.append(cv.indices)
                coef_l.append(a.t[need])
            terms[(direction, k)] = (idx_l, coef_l, c)
    for label, k, _, budget in pcie_load(a, p.pcie, np.zeros(K), np.zeros(K)):
        idx, coef, c = [np.zeros(0, np.int64)], [np.zeros(0)], 0.0
        for direction in ("up", "down"):
            if label in (direction, "both"):
                ti, tc, tconst = terms[(direction, k)]
                idx += ti; coef += tc; c += tconst
        ci, cc = np.concatenate(idx), np.concatenate(coef)
        if compact:  # an x may appear through several edges: one coefficient per column
            ci, inv = np.unique(ci, return_inverse=True)
            cc = np.bincount(inv, weights=cc, minlength=len(ci))
        m.add_rows(np.zeros(len(ci)), ci, cc, -np.inf, budget - c, 1, [f"pcie[{p.snics[k].name},{label}]"])
    # sNIC capacities
    for k in range(K):
        for r, res in enumerate(p.resources):
            if np.isinf(a.D[k, r]):
                continue
            pinned = float(a.N[a.pin == k + 1, r].sum())
            m.add_rows(np.zeros(F), X[free, k + 1], a.N[free, r], -np.inf, a.D[k, r] - pinned, 1,
                       [f"capacity[{p.snics[k].name},{res}]"])
    for r, res in enumerate(p.resources):
        if np.isinf(a.HC[r]):
            continue
        host_all = float(a.H[a.pin == 0, r].sum()) + float(a.H[free, r].sum())
        m.add_rows(np.zeros(F * K), X[free, 1:].ravel(), np.repeat(-a.H[free, r], K), -np.inf, a.HC[r] - host_all, 1,
                   [f"host_capacity[{res}]"])
    m.add_objective_terms(np.zeros(0, np.int64), np.zeros(0))
    m.set_objective_constant(const)
    return m, X


def budget_names(names: list[str]) -> list[str]:
    """The budget constraints among IIS row names (what a user can change)."""
    keep = [n for n in names if n.startswith(("pcie[", "capacity[", "host_capacity[", "move_budget"))]
    return keep or names


def infeasible_error(e: InfeasibleError, method: str) -> UnoInfeasible:
    binding = budget_names(e.constraints)
    what = ", ".join(binding) if binding else "the PCIe and sNIC budgets jointly"
    return UnoInfeasible(f"no placement satisfies the budgets ({method}); binding constraint(s): {what}", binding)


def start_vector(p: UnoProblem, m: Model, X: np.ndarray, loc: np.ndarray) -> np.ndarray:
    """The column values of placement `loc` (node → location index) in model m
    built by `build_milp(p)`: x from the locations, each cut variable at the
    crossing it measures (max(0, z_tail − z_head) on its sNIC)."""
    a = p.arrays
    x = np.zeros(m.num_vars)
    free = a.free
    for k in range(1, a.K + 1):
        x[X[free, k]] = loc[free] == k
    for key, col in m.keyed_columns(("up", "down")):
        direction, e, k = key
        tail, head = (a.src[e], a.dst[e]) if direction == "up" else (a.dst[e], a.src[e])
        x[col] = float(loc[tail] == k + 1 and loc[head] != k + 1)
    return x


def solve_milp(p: UnoProblem, time_limit_s: float | None = None, rel_gap: float = 1e-9,
               options: SolverOptions | None = None, compact: bool = False,
               start: np.ndarray | None = None) -> PlacementResult:
    """HiGHS on the cut formulation; optimal means proven within `rel_gap`.
    `compact` as in `build_milp` (the fast method's residual uses it; the plain
    model is the independent reference of `tandem bench uno`); `start`: a
    feasible placement (location index per node) HiGHS starts from."""
    t0 = time.perf_counter()
    m, X = build_milp(p, compact=compact)
    opts = options or SolverOptions(time_limit_s=time_limit_s, mip_rel_gap=rel_gap)
    try:
        sol = m.solve(opts, start=None if start is None else start_vector(p, m, X, start))
    except InfeasibleError as e:
        raise infeasible_error(e, "milp") from None
    dt = time.perf_counter() - t0
    if not sol.has_solution:
        return to_result(p, "milp", sol.status.value, None, dt, None)
    a = p.arrays
    loc = np.where(a.pin >= 0, a.pin, 0)
    free = a.free
    on = sol.x[X[free, 1:]] > 0.5
    loc[free] = np.where(on.any(axis=1), np.argmax(on, axis=1) + 1, 0)
    status = "optimal" if sol.status is Status.OPTIMAL else sol.status.value
    return to_result(p, "milp", status, loc, dt, sol.gap,
                     {"bound": sol.bound, "num_vars": m.num_vars, "num_rows": m.num_constraints})
