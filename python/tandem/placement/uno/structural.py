"""Exact UNO placement for placement graphs whose free nodes do not fall apart
into small components (general sparse graphs): LP bound, reduced-cost fixing,
MILP on the residual only.

Why it works. The cut formulation (`uno.milp`) is a network matrix — the rows
`up ≥ z_i − z_j` are totally unimodular — plus a handful of budget rows (PCIe
per link and direction, capacity per sNIC and resource, host capacity, move
budget). Its LP relaxation is therefore almost integral (a vertex of the cut
polytope cut by m budget hyperplanes: a few fractional nodes) and its bound is
the Lagrangian bound of pricing the budgets (the priced problem is a min cut).
On random graphs the LP bound sits ~1e-6 (relative) below the optimum; what
remains is a subset-sum question over near-tied nodes, which is what makes one
monolithic MILP slow at gap 1e-9.

Steps:
1. LP relaxation of the cut MILP (HiGHS simplex; above LARGE_LP_COLUMNS
   columns the compact model — no cut variable on edges with a pinned end —
   by interior point + crossover without presolve): a vertex x* and row duals y. From y, `Model.dual_bound` computes a
   rigorous bound LB and reduced costs r by weak duality, so an inexact LP
   answer can weaken the bound but never make it wrong.
2. Incumbent (UB): x* rounded (each fractional node to its best location
   among several roundings), then 1-moves that lower the objective and keep
   every budget, cheapest first (`improve`).
3. If UB − LB ≤ gap·|UB|: proven.
4. Reduced-cost fixing: for every feasible x, obj(x) ≥ LB + |r_j|·|x_j − b_j|
   where b_j is the bound of x_j that LB used (0 if r_j ≥ 0, else 1). A binary
   whose |r_j| exceeds UB − LB (plus a 1e-9·|UB| + 1e-9 margin) cannot leave
   b_j in any placement better than the incumbent: fix it.
   On the random family 2/3 of the nodes are fixed and the rest falls apart
   into small pieces.
5. The residual problem (fixed nodes pinned) is solved exactly: by the
   decomposition method when it has ≤ SMALL_RESIDUAL nodes in components small
   enough to enumerate, else by HiGHS, at the requested gap. Its optimum is the optimum of the whole problem: a placement better
   than the incumbent agrees with every fixing, and the incumbent itself
   satisfies them.
Input: `UnoProblem`; output: `PlacementResult` (method "fast",
`details.fast_path` = "LP bound" or "reduced-cost fixing + residual MILP").
Cost: one LP, O(n·k + E) per improvement pass, one MILP on the residual.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from tandem.placement.result import PlacementResult
from tandem.placement.solver import InfeasibleError, SolverOptions, Status
from tandem.placement.uno.milp import build_milp, solve_milp
from tandem.placement.uno.model import Incremental, Node, UnoInfeasible, UnoProblem, evaluate_many, pcie_load, to_result

SMALL_RESIDUAL = 60  # residual nodes up to which `residual` (decomposition) is tried before the MILP
LARGE_LP_COLUMNS = 12_000  # compact-model columns above which the LP is solved by interior point + crossover
RESIDUAL_FIRST_S = 5.0  # first residual MILP attempt; then the other model (see _solve_residual)
FIX_MARGIN = 1e-9  # relative + absolute slack on the fixing test (LP duals carry ~1e-9 errors)


def _objective_and_feasible(p: UnoProblem, loc: np.ndarray) -> tuple[float, bool]:
    ev = evaluate_many(p, loc[None], tol=1e-9)
    return float(ev["objective"][0]), bool(ev["feasible"][0])


def roundings(p: UnoProblem, X: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    """Candidate integral placements from the LP point: fractional nodes to the
    host, to their largest LP share, and to an sNIC whenever any share is ≥ 1/2."""
    a = p.arrays
    free = a.free
    v = x[X[free, 1:]]  # F × K
    v = np.clip(np.nan_to_num(v), 0.0, 1.0)
    host = 1.0 - v.sum(axis=1)
    best = np.argmax(v, axis=1)
    vmax = v[np.arange(len(free)), best]
    out = []
    for rule in ("down", "nearest", "up"):
        loc = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
        if rule == "down":
            on = vmax >= 1 - 1e-6
        elif rule == "nearest":
            on = vmax > host
        else:
            on = vmax > 1e-6
        loc[free] = np.where(on, best + 1, 0)
        out.append(loc)
    return out


class LocalState:
    """Budgets used by a placement, updated node by node (for `improve`)."""

    def __init__(self, p: UnoProblem, loc: np.ndarray):
        a = self.a = p.arrays
        self.p = p
        self.loc = loc.copy()
        n = len(a.names)
        # incident edges per node (both directions), CSR
        ends = np.concatenate([a.src, a.dst])
        eid = np.concatenate([np.arange(len(a.src)), np.arange(len(a.src))])
        order = np.argsort(ends, kind="stable")
        self.inc = eid[order]
        self.ptr = np.searchsorted(ends[order], np.arange(n + 1))
        ev = evaluate_many(p, loc[None], tol=1e-9)
        self.up = ev["up"][0].copy()
        self.down = ev["down"][0].copy()
        self.snic = ev["snic_use"][0].copy()  # K × R
        self.host = ev["host_use"][0].copy()
        self.moves = int(ev["moves"][0])
        self.budgets = [(label, k, budget) for label, k, _, budget in
                        pcie_load(a, p.pcie, np.zeros(a.K), np.zeros(a.K))]

    def pcie_delta(self, i: int, new: int) -> tuple[np.ndarray, np.ndarray]:
        a = self.a
        e = self.inc[self.ptr[i]:self.ptr[i + 1]]
        K = a.K
        du, dd = np.zeros(K), np.zeros(K)
        if not len(e):
            return du, dd
        for where in (self.loc[i], new):
            sign = -1.0 if where == self.loc[i] else 1.0
            loc = self.loc
            old = loc[i]
            loc[i] = where
            ls, ld, t = loc[a.src[e]], loc[a.dst[e]], a.t[e]
            for k in range(K):
                du[k] += sign * t[(ls == k + 1) & (ld != k + 1)].sum()
                dd[k] += sign * t[(ld == k + 1) & (ls != k + 1)].sum()
            loc[i] = old
        return du, dd

    def try_move(self, i: int, new: int) -> bool:
        """Move node i to `new` if every budget still holds."""
        a = self.a
        old = int(self.loc[i])
        snic = self.snic.copy()
        host = self.host.copy()
        if old > 0:
            snic[old - 1] -= a.N[i]
        else:
            host -= a.H[i]
        if new > 0:
            snic[new - 1] += a.N[i]
        else:
            host += a.H[i]
        tol = 1e-9
        if np.any(snic > a.D + tol * np.maximum(1.0, np.where(np.isinf(a.D), 1.0, a.D))):
            return False
        if np.any(host > a.HC + tol * np.maximum(1.0, np.where(np.isinf(a.HC), 1.0, a.HC))):
            return False
        moves = self.moves
        if a.cur[i] >= 0:
            moves += int(new != a.cur[i]) - int(old != a.cur[i])
        if a.move_budget is not None and moves > a.move_budget:
            return False
        du, dd = self.pcie_delta(i, new)
        up, down = self.up + du, self.down + dd
        for label, k, budget in self.budgets:
            load = up[k] if label == "up" else down[k] if label == "down" else up[k] + down[k]
            if load > budget + tol * max(1.0, budget):
                return False
        self.loc[i] = new
        self.snic, self.host, self.moves, self.up, self.down = snic, host, moves, up, down
        return True


def improve(p: UnoProblem, loc: np.ndarray, order: np.ndarray, passes: int = 2) -> np.ndarray:
    """Single-node moves that lower the objective and keep every budget, tried
    in `order` (free node indices), repeated while a pass improves."""
    a = p.arrays
    st = LocalState(p, loc)
    cost = a.cost
    for _ in range(passes):
        changed = False
        for i in order:
            i = int(i)
            cur = int(st.loc[i])
            mc = a.move_cost if a.cur[i] >= 0 else 0.0
            best_gain, best_to = 1e-12, None
            for to in range(a.K + 1):
                if to == cur:
                    continue
                gain = (cost[i] if cur == 0 else 0.0) - (cost[i] if to == 0 else 0.0)
                if mc:
                    gain += mc * (int(cur != a.cur[i]) - int(to != a.cur[i]))
                if gain > best_gain:
                    best_gain, best_to = gain, to
            if best_to is not None and st.try_move(i, best_to):
                changed = True
        if not changed:
            break
    return st.loc


def solve_structural(p: UnoProblem, time_limit_s: float | None = None, rel_gap: float = 1e-9,
                     method: str = "fast", extra: dict | None = None,
                     residual: Callable[[UnoProblem, float | None], PlacementResult | None] | None = None
                     ) -> PlacementResult:
    """`residual(q, time_left)` may solve the residual problem q exactly (the
    decomposition method does, when q's components are small: it is exact in
    its own arithmetic, whereas HiGHS at gap 1e-9 can stall on a residual whose
    bound already meets the incumbent); None hands q to the MILP."""
    t0 = time.perf_counter()
    a = p.arrays
    # large: the compact model (same LP, ~1/3 fewer columns) by interior point, ×2–3 faster
    m, X = build_milp(p, compact=True)
    large = m.num_vars > LARGE_LP_COLUMNS
    if not large:  # small: the plain model by simplex (its vertex and duals give the fixings measured)
        m, X = build_milp(p)
    lp = None
    # a vertex (near-integral) is what makes the rounded incumbent good: simplex, or for large
    # models interior point + crossover (faster there); simplex again if that fails
    first = "ipm" if large else "simplex"
    for lp_method in (first, "simplex"):
        try:
            # large models: HiGHS presolve costs more than it saves (×1.5–2 slower with it)
            lp = m.solve(SolverOptions(time_limit_s=time_limit_s, explain_infeasible=False, lp_method=lp_method,
                                       presolve=not large), relax=True)
        except InfeasibleError:
            solve_milp(p)  # the MILP names the binding budgets (raises UnoInfeasible)
            raise
        if lp.status is Status.OPTIMAL and lp.row_duals is not None:
            break
    stats: dict = dict(extra or {})
    if lp is None or lp.status is not Status.OPTIMAL or lp.row_duals is None:
        # no usable LP certificate (time limit): the MILP on everything
        return _solve_residual(p, p, t0, time_limit_s, rel_gap, method, {**stats, "fast_path": "cut MILP (no LP duals)"})
    lb, rc = m.dual_bound(lp.row_duals)  # rigorous, whatever the LP's accuracy
    x = lp.x
    stats["lp_bound"] = lb
    # incumbent
    best_loc, ub = None, np.inf
    cands = roundings(p, X, x)
    ev = evaluate_many(p, np.stack(cands), tol=1e-9)  # all roundings in one vectorised evaluation
    for loc, obj, ok in zip(cands, ev["objective"], ev["feasible"]):
        if ok and obj < ub:
            best_loc, ub = loc, float(obj)
    if best_loc is not None:
        free = a.free
        # most attractive moves first: host nodes with the largest cost, by LP reduced cost
        key = np.where(best_loc[free] == 0, -a.cost[free], np.inf)
        order = free[np.argsort(key, kind="stable")]
        best_loc = improve(p, best_loc, order[np.isfinite(np.sort(key))])
        ub, ok = _objective_and_feasible(p, best_loc)
        assert ok
        stats["root_incumbent"] = ub
    tol = rel_gap * max(1.0, abs(ub)) if np.isfinite(ub) else 0.0
    if best_loc is not None and ub - lb <= tol:
        return to_result(p, method, "optimal", best_loc, time.perf_counter() - t0,
                         max(0.0, ub - lb) / max(1.0, abs(ub)), {**stats, "fast_path": "LP bound"})
    # reduced-cost fixing: a node whose every column is fixed is pinned in the residual problem
    if not np.isfinite(ub):
        return _solve_residual(p, p, t0, time_limit_s, rel_gap, method,
                               {**stats, "fast_path": "cut MILP (no incumbent to fix against)"})
    thr = (ub - lb) + FIX_MARGIN * max(1.0, abs(ub)) + FIX_MARGIN
    free = a.free
    cols = X[free, 1:]  # F × K
    r = rc[cols]
    at0 = r > thr  # raising x_j from 0 costs more than the incumbent can gain
    at1 = -r > thr  # lowering x_j from 1 likewise
    fixed = np.all(at0 | at1, axis=1)
    loc_fixed = np.where(at1.any(axis=1), np.argmax(at1, axis=1) + 1, 0)
    stats["fixed_nodes"] = int(fixed.sum())
    stats["residual_nodes"] = int((~fixed).sum())
    q = _pinned(p, free[fixed], loc_fixed[fixed])
    if residual is not None and stats["residual_nodes"] <= SMALL_RESIDUAL:
        left = None if time_limit_s is None else max(0.01, time_limit_s - (time.perf_counter() - t0))
        r = residual(q, left)
        if r is not None and r.objective is not None:
            idx = {nm: i for i, nm in enumerate(p.locations)}
            loc = np.array([idx[r.assignment[nm]] for nm in a.names], dtype=np.int64)
            return to_result(p, method, r.status, loc, time.perf_counter() - t0, r.gap,
                             {**stats, "fast_path": f"reduced-cost fixing + residual by {r.details.get('fast_path')}"})
    return _solve_residual(p, q, t0, time_limit_s, rel_gap, method,
                           {**stats, "fast_path": "reduced-cost fixing + residual MILP"}, compact=large)


def _pinned(p: UnoProblem, nodes: np.ndarray, locs: np.ndarray) -> UnoProblem:
    """`p` with `nodes` pinned to `locs`. Moves of the newly pinned nodes leave the
    residual's objective (to_result re-evaluates on `p`) and its move budget."""
    a = p.arrays
    names = p.locations
    pins = {a.names[int(i)]: names[int(l)] for i, l in zip(nodes, locs)}
    new_nodes = tuple(Node(n.name, n.kind, n.host_use, n.nic_use, pins[n.name]) if n.name in pins else n
                      for n in p.nodes)
    inc = p.incremental
    if inc is not None:
        moved = sum(1 for n, l in pins.items() if n in inc.current and inc.current[n] != l)
        budget = None if inc.move_budget is None else inc.move_budget - moved
        inc = Incremental({n: l for n, l in inc.current.items() if n not in pins}, inc.move_cost, budget)
    return replace(p, nodes=new_nodes, incremental=inc)


def _solve_residual(p, q, t0, time_limit_s, rel_gap, method, stats, compact: bool = False) -> PlacementResult:
    """HiGHS on the residual q, first on the `compact` or plain model for at most
    RESIDUAL_FIRST_S, then (if that did not prove its answer) on the other model
    for the time left. HiGHS 1.16 at gap 1e-9 can stall on one model of a residual
    whose bound already meets the incumbent while the other model finishes at once."""
    def left() -> float | None:
        return None if time_limit_s is None else max(0.01, time_limit_s - (time.perf_counter() - t0))

    r = None
    for attempt, variant in enumerate((compact, not compact)):
        limit = left()
        if attempt == 0:
            limit = RESIDUAL_FIRST_S if limit is None else min(limit, RESIDUAL_FIRST_S)
        elif limit is not None and limit <= 0.01:
            break
        try:
            ri = solve_milp(q, time_limit_s=limit, rel_gap=rel_gap, compact=variant)
        except UnoInfeasible as e:  # cannot happen when an incumbent exists; the MILP names the budgets otherwise
            raise UnoInfeasible(str(e).replace("(milp)", f"({method})"), e.binding) from None
        if r is None or (ri.objective is not None and (r.objective is None or ri.objective <= r.objective)) \
                or ri.status == "optimal":
            r = ri
        if r.status == "optimal":
            break
        stats = {**stats, "residual_retry": True}
    a = p.arrays
    dt = time.perf_counter() - t0
    if r.objective is None:
        return to_result(p, method, r.status, None, dt, None, stats)
    idx = {nm: i for i, nm in enumerate(p.locations)}
    loc = np.array([idx[r.assignment[nm]] for nm in a.names], dtype=np.int64)
    stats = {**stats, "residual_bound": r.details.get("bound")}
    return to_result(p, method, r.status, loc, dt, r.gap, stats)


