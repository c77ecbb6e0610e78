"""Exact fast UNO placement: decomposition along pinned nodes + multiple-choice
knapsack with Lagrangian bounds and branch-and-bound (proof in docs/placement.md).

1. Pinned nodes (VMs, ports, accelerated NFs) are the s–t terminals of the cut.
   Removing them splits the free nodes into connected components (in UNO graphs,
   the NF chains between a port/VM and a VM). Every edge touches at most one
   component, so the objective and every budget (PCIe per link/direction, sNIC
   capacity per resource, host capacity, move budget) are a constant plus a sum,
   over components, of a function of that component's configuration alone.
2. Each component's (K+1)^size configurations are enumerated (vectorised) into
   (cost, usage-vector) items; Pareto-dominated items are dropped (never needed).
   The problem is now a multiple-choice knapsack: pick one item per component.
3. Its LP relaxation (HiGHS, one small LP) gives multipliers λ ≥ 0; for any
   λ ≥ 0, L(λ) = Σ_j min_c (cost + λ·usage) − λ·cap is a lower bound.
4. An incumbent from the LP (rounded, then improved by single and paired
   class changes). If it is within `rel_gap` of L(λ) it is proven optimal.
5. Otherwise items whose reduced cost exceeds the gap are fixed out; the
   remaining core is enumerated exactly when small (all pairs of two halves
   against every budget); with several priced budgets (several sNICs), DPs
   over one budget with the others' use fixed look for a better incumbent;
   then a Pareto dynamic programme over the most priced
   budget (others priced by λ; `uno_dp`) gives an exact bound for that
   relaxation and a candidate — enough when the gap is a subset-sum residue
   (ties between DPIs at gap 1e-6); else depth-first branch-and-bound whose
   bound keeps the most priced budget as a knapsack row (LP on the lower convex
   hull of each class) and prices the others with λ.
Fallbacks, still exact: a component with > MAX_CONFIGS configurations, or a
search beyond NODE_LIMIT nodes, hands over to `uno.structural` (LP bound,
reduced-cost fixing, HiGHS on the residual only).
`details.fast_path` says which path proved the answer.
Cost: O(Σ_j (K+1)^|j| · m) to build, one LP, and a (usually tiny) search.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from tandem.placement.result import PlacementResult
from tandem.placement.solver import InfeasibleError, Model, SolverOptions, VarType
from tandem.placement.uno.fill import solve_fill
from tandem.placement.uno.milp import infeasible_error, solve_milp
from tandem.placement.uno.model import UnoInfeasible, UnoProblem, pcie_load, to_result
from tandem.placement.uno.multisnic import solve_multisnic
from tandem.placement.uno.packing import solve_packing
from tandem.placement.uno.search import improve, search, start_point
from tandem.placement.uno.structural import knapsack_first, solve_structural

MAX_CONFIGS = 4096  # per component
PARETO_MAX = 256  # Pareto filtering by broadcasting up to this many configurations
REL_GAP = 1e-9  # optimality is proven to this relative gap by default (the papers' engines are exact)
KNAPSACK_FIRST_FREE = 50  # free nodes above which the knapsack proof (one sNIC) or packing (several) is tried first
PACKING_S = 1.0  # CPU seconds the multi-sNIC packing may search before the LP method takes over
PACKING_RETRY = 3  # budget factor of a second packing when the first found no placement (for the fill search)
FILL_SHARE = 0.5  # of the time left, for the exact fill search when the packing leaves a gap
FILL_S = 60.0  # the fill search's seconds without a time limit (then the LP method runs without one)


def components(a) -> np.ndarray:
    """Component label (smallest member index) per free node; -1 for pinned."""
    n = len(a.names)
    free = a.pin < 0
    lab = np.where(free, np.arange(n), -1)
    both = free[a.src] & free[a.dst]
    s, d = a.src[both], a.dst[both]
    while True:
        m = np.minimum(lab[s], lab[d])
        new = lab.copy()
        np.minimum.at(new, s, m)
        np.minimum.at(new, d, m)
        new[free] = new[new[free]]  # pointer jumping
        if np.array_equal(new, lab):
            return lab
        lab = new


class Items:
    """Per-component configurations as flat arrays."""

    def __init__(self) -> None:
        self.comp: list[np.ndarray] = []  # global component id per item
        self.cost: list[np.ndarray] = []
        self.use: list[np.ndarray] = []
        self.loc: list[tuple[np.ndarray, np.ndarray]] = []  # (node indices C×s, digits per item s)

    def finish(self, m: int = 0):
        if not self.comp:  # no free component (every NF pinned): nothing to choose between
            self.comp_a, self.cost_a, self.use_a = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, m))
            return
        self.comp_a = np.concatenate(self.comp)
        self.cost_a = np.concatenate(self.cost)
        self.use_a = np.concatenate(self.use)


def dimensions(p: UnoProblem):
    """Budget rows: names, capacities and constants (from pinned nodes)."""
    a = p.arrays
    names, caps, consts = [], [], []
    ps, pd = a.pin[a.src], a.pin[a.dst]
    both = (ps >= 0) & (pd >= 0)
    up = np.array([a.t[both & (ps == k + 1) & (pd != k + 1)].sum() for k in range(a.K)])
    down = np.array([a.t[both & (pd == k + 1) & (ps != k + 1)].sum() for k in range(a.K)])
    pcie = []
    for label, k, load, budget in pcie_load(a, p.pcie, up, down):
        names.append(f"pcie[{p.snics[k].name},{label}]"); caps.append(budget); consts.append(float(load))
        pcie.append((label, k))
    cap_dims = []
    for k in range(a.K):
        for r, res in enumerate(p.resources):
            if math.isfinite(a.D[k, r]):
                names.append(f"capacity[{p.snics[k].name},{res}]"); caps.append(a.D[k, r])
                consts.append(float(a.N[a.pin == k + 1, r].sum())); cap_dims.append((k, r))
    host_dims = []
    for r, res in enumerate(p.resources):
        if math.isfinite(a.HC[r]):
            names.append(f"host_capacity[{res}]"); caps.append(a.HC[r])
            consts.append(float(a.H[a.pin == 0, r].sum())); host_dims.append(r)
    move = a.move_budget is not None
    if move:
        names.append("move_budget"); caps.append(float(a.move_budget)); consts.append(0.0)
    return names, np.array(caps, float), np.array(consts, float), pcie, cap_dims, host_dims, move


def build_items(p: UnoProblem, lab: np.ndarray):
    a = p.arrays
    L = a.K + 1
    names, caps, consts, pcie, cap_dims, host_dims, move = dimensions(p)
    m = len(names)
    free = np.flatnonzero(a.pin < 0)
    roots, comp_of = np.unique(lab[free], return_inverse=True)
    ncomp = len(roots)
    cid = np.full(len(a.names), -1)
    cid[free] = comp_of
    sizes = np.bincount(comp_of, minlength=ncomp)
    # Python ints: L ** size overflows int64 from 276 free nodes (L = 2) on
    if ncomp and L ** int(sizes.max()) > MAX_CONFIGS:
        return None
    order = np.lexsort((free, comp_of))
    fs = free[order]
    cs = comp_of[order]
    starts = np.searchsorted(cs, np.arange(ncomp))
    pos = np.zeros(len(a.names), dtype=np.int64)
    pos[fs] = np.arange(len(fs)) - starts[cs]
    cost_node = a.cost
    # edges touching a component
    es = np.where(a.pin[a.src] < 0, cid[a.src], cid[a.dst])
    touching = (es >= 0) & (a.t > 0)
    items = Items()
    const_cost = float(cost_node[a.pin == 0].sum())
    for s in np.unique(sizes):
        cj = np.flatnonzero(sizes == s)  # components of this size
        C = len(cj)
        P = L ** int(s)
        digits = (np.arange(P)[:, None] // (L ** np.arange(s))[None, :]) % L  # P × s
        M = fs[(starts[cj][:, None] + np.arange(s)[None, :])]  # C × s nodes
        on = [(digits[None, :, :] == l) for l in range(L)]  # each 1 × P × s
        cost = (cost_node[M][:, None, :] * on[0]).sum(axis=2)  # C × P
        use = np.zeros((C, P, m))
        if a.move_cost or move:
            cur = a.cur[M][:, None, :]
            moved = ((cur >= 0) & (digits[None] != cur)).sum(axis=2).astype(float)
            cost = cost + a.move_cost * moved
            if move:
                use[:, :, m - 1] = moved
        base = len(pcie)
        for q, (k, r) in enumerate(cap_dims):
            use[:, :, base + q] = (a.N[M, r][:, None, :] * on[k + 1]).sum(axis=2)
        base += len(cap_dims)
        for q, r in enumerate(host_dims):
            use[:, :, base + q] = (a.H[M, r][:, None, :] * on[0]).sum(axis=2)
        # PCIe: edges of these components
        local = np.full(ncomp, -1)
        local[cj] = np.arange(C)
        emask = touching & np.isin(es, cj)
        e = np.flatnonzero(emask)
        if len(e):
            jl = local[es[e]]
            def endpoint(v):
                fv = a.pin[v] < 0
                return np.where(fv[:, None], digits.T[pos[v]] if len(v) else np.zeros((0, P), int), a.pin[v][:, None])
            ls, ld = endpoint(a.src[e]), endpoint(a.dst[e])  # E × P
            te = a.t[e][:, None]
            for q, (label, k) in enumerate(pcie):
                up = ((ls == k + 1) & (ld != k + 1)) * te
                down = ((ld == k + 1) & (ls != k + 1)) * te
                val = up if label == "up" else down if label == "down" else up + down
                acc = np.zeros((C, P))
                np.add.at(acc, jl, val)
                use[:, :, q] = acc
        keep = np.ones((C, P), dtype=bool)
        if P <= PARETO_MAX and m:
            eps = 1e-12
            le_cost = cost[:, :, None] <= cost[:, None, :] + eps  # [c, p', p]: p' no worse in cost
            le_use = np.all(use[:, :, None, :] <= use[:, None, :, :] + eps, axis=3)
            dom = le_cost & le_use
            strictly = (cost[:, :, None] < cost[:, None, :] - eps) | np.any(use[:, :, None, :] < use[:, None, :, :] - eps, axis=3)
            tie_first = np.arange(P)[:, None] < np.arange(P)[None, :]
            dom &= strictly | tie_first[None]
            dom &= ~np.eye(P, dtype=bool)[None]
            keep = ~dom.any(axis=1)
        ci, pi = np.nonzero(keep)
        items.comp.append(cj[ci])
        items.cost.append(cost[ci, pi])
        items.use.append(use[ci, pi])
        items.loc.append((M[ci], digits[pi]))
    items.finish(m)
    return items, ncomp, names, caps - consts, const_cost


def lagrangian(items: Items, ncomp: int, cap: np.ndarray, lam: np.ndarray):
    """Lower bound L(λ) and reduced cost of every item."""
    red = items.cost_a + items.use_a @ lam
    best = np.full(ncomp, np.inf)
    np.minimum.at(best, items.comp_a, red)
    return float(best.sum() - lam @ cap), red - best[items.comp_a]


def lp_multipliers(items: Items, ncomp: int, cap: np.ndarray):
    """λ from the LP relaxation's duals, and the LP item weights."""
    n = len(items.cost_a)
    m = cap.shape[0]
    lp = Model("uno_mckp_lp")
    v = lp.add_vars(range(n), VarType.CONTINUOUS, 0.0, 1.0)
    lp.add_objective_terms(v.indices, items.cost_a)
    lp.add_rows(items.comp_a, v.indices, np.ones(n), 1.0, 1.0, ncomp, ("choose", list(range(ncomp))))
    if m:
        rr, cc = np.nonzero(items.use_a.T)
        lp.add_rows(rr, v.indices[cc], items.use_a.T[rr, cc], -np.inf, cap, m, ("cap", list(range(m))))
    sol = lp.solve(SolverOptions(explain_infeasible=False, presolve=False))
    duals = sol.row_duals
    lam = np.zeros(m) if duals is None else np.maximum(0.0, -duals[ncomp:])
    return lam, sol.x


def solve_fast(p: UnoProblem, time_limit_s: float | None = None, rel_gap: float = REL_GAP,
               structural: bool = True) -> PlacementResult:
    """`structural=False` (for residual problems) falls back to the cut MILP
    instead of the structural method."""
    t0 = time.perf_counter()
    a = p.arrays
    if not len(a.free):  # nothing to decide (check_pinned has checked the budgets)
        return to_result(p, "fast", "optimal", a.pin.copy(), time.perf_counter() - t0, 0.0, {"fast_path": "all pinned"})
    if structural and len(a.free) > KNAPSACK_FIRST_FREE:
        # one sNIC, PCIe slack: the capacity-priced knapsack proves it in O(n log n), before the
        # decomposition's search (which on 5,000-node chain graphs reaches its node limit first)
        quick = knapsack_first(p, rel_gap)
        if quick is not None:
            loc, gap, qstats = quick
            return to_result(p, "fast", "optimal", loc, time.perf_counter() - t0, gap, qstats)
    lab = components(a)
    built = build_items(p, lab)

    def residual(q: UnoProblem, left: float | None) -> PlacementResult | None:
        if build_items(q, components(q.arrays)) is None:
            return None
        return solve_fast(q, time_limit_s=left, rel_gap=rel_gap, structural=False)

    pk = None
    if structural and a.K >= 2 and p.incremental is None and (built is None or len(a.free) > KNAPSACK_FIRST_FREE):
        # several sNICs: the aggregate knapsack bound and a packing (no LP), before the decomposition's
        # search (chain graphs) or the LP with capacity cuts (one large component)
        budget = PACKING_S if time_limit_s is None else min(PACKING_S, time_limit_s / 4)
        pk = solve_packing(p, rel_gap, budget_s=budget)
        if pk is not None and pk.proven:
            return to_result(p, "fast", "optimal", pk.loc, time.perf_counter() - t0, pk.gap,
                             {**pk.details, "large_component": built is None})
        if built is None and pk is not None:
            # one large component, no packing at the bound: the exact fill search (from the packing's
            # incumbent if it found one: its levels need none), before the LP method (chain graphs
            # keep the decomposition's search next)
            left = FILL_S if time_limit_s is None else FILL_SHARE * max(0.0, time_limit_s - (time.perf_counter() - t0))
            fl = solve_fill(p, pk, rel_gap, left)
            if fl is not None:
                fill_details = {**pk.details, **fl.details, "large_component": built is None}
                if fl.proven:
                    return to_result(p, "fast", "optimal", fl.loc, time.perf_counter() - t0, fl.gap, fill_details)
                pk = replace(pk, loc=fl.loc, objective=fl.objective, details=fill_details)
            if pk.loc is None:  # nothing found: the packing once more with more time, for the LP method
                pk = solve_packing(p, rel_gap, budget_s=PACKING_RETRY * budget)
    if built is None and structural and a.K >= 2 and p.incremental is None:
        left = None if time_limit_s is None else max(0.01, time_limit_s - (time.perf_counter() - t0))
        r = solve_multisnic(p, time_limit_s=left, rel_gap=rel_gap, extra={"large_component": True},
                            start=None if pk is None else pk.loc)
        if r is not None:
            gap, details = r.gap, r.details
            fill = {} if pk is None else {k: v for k, v in pk.details.items() if k.startswith("fill_")}
            fill_lb = fill.get("fill_lower_bound")
            if r.status != "optimal" and fill_lb is not None and r.objective is not None:
                # the fill search refuted every placement below fill_lb: a certified bound too
                fill_gap = max(0.0, r.objective - fill_lb) / max(1.0, abs(r.objective))
                gap = fill_gap if gap is None else min(gap, fill_gap)
            details = {**details, **fill}
            return PlacementResult("uno", "fast", r.status, r.objective, r.assignment, time.perf_counter() - t0,
                                   gap, details)
    if built is None and structural:  # a component too large to enumerate: the structural method
        return solve_structural(p, time_limit_s=time_limit_s, rel_gap=rel_gap,
                                extra={"large_component": True}, residual=residual)
    if built is None:
        r = solve_milp(p, time_limit_s=time_limit_s, rel_gap=rel_gap)
        return PlacementResult("uno", "fast", r.status, r.objective, r.assignment, time.perf_counter() - t0, r.gap,
                               {**r.details, "fast_path": "cut MILP (a component is too large to enumerate)"})
    items, ncomp, names, cap, const_cost = built
    m = len(cap)
    tol = 1e-9
    # capacity pruning data: minimal use per component per dimension
    minuse = np.full((ncomp, m), np.inf)
    if m:
        np.minimum.at(minuse, items.comp_a, items.use_a)
    if ncomp and m and np.any(minuse.sum(axis=0) > cap + tol * np.maximum(1.0, np.abs(cap))):
        raise _infeasible_by_bounds(p, items, ncomp, names, cap)
    if ncomp == 0:
        loc = a.pin.copy()
        return to_result(p, "fast", "optimal", loc, time.perf_counter() - t0, 0.0, {"fast_path": "all pinned"})
    try:
        lam, xlp = lp_multipliers(items, ncomp, cap)
    except InfeasibleError as e:
        raise infeasible_error(e, "fast") from None
    lb, rc = lagrangian(items, ncomp, cap, lam)
    stats = {"components": int(ncomp), "items": int(len(items.cost_a)), "lagrangian_bound": lb + const_cost,
             "multipliers": {nm: float(l) for nm, l in zip(names, lam) if l > 0}}
    start = start_point(items, ncomp, cap, xlp, lam)
    if start is not None:
        start = improve(items, ncomp, cap, start)
        stats["root_incumbent"] = float(items.cost_a[start].sum()) + const_cost
    best_cost, best_choice, nodes, complete, kept, proof = search(items, ncomp, cap, lam, lb, rel_gap, start=start, rc=rc)
    stats["bb_nodes"] = nodes
    if m:
        stats["knapsack_row"] = names[kept]
    if not complete:  # search node limit: the structural method (LP fixing + residual MILP), or the MILP
        left = None if time_limit_s is None else max(0.01, time_limit_s - (time.perf_counter() - t0))
        if structural:
            r = solve_structural(p, time_limit_s=left, rel_gap=rel_gap, extra={"search": "node limit reached"},
                                 residual=residual)
        else:
            r = solve_milp(p, time_limit_s=left, rel_gap=rel_gap)
            r.details["fast_path"] = "cut MILP (search node limit reached)"
        return PlacementResult("uno", "fast", r.status, r.objective, r.assignment, time.perf_counter() - t0, r.gap,
                               {**r.details, **{k: v for k, v in stats.items() if k != "fast_path"}})
    else:
        status = "optimal"
        gap = 0.0 if best_choice is None else max(0.0, (best_cost - lb) / max(1.0, abs(best_cost + const_cost)))
        gap = 0.0 if proof == "core enumeration" else min(gap, rel_gap)
        stats["fast_path"] = proof
    if best_choice is None:
        solve_milp(p)  # raises UnoInfeasible naming the binding budget(s)
        raise UnoInfeasible("no placement satisfies the budgets (fast)", names)
    loc = np.where(a.pin >= 0, a.pin, 0)
    offsets = np.cumsum([0] + [len(c) for c in items.comp])
    for item in best_choice:
        g = int(np.searchsorted(offsets, item, side="right") - 1)
        M, dig = items.loc[g]
        j = item - offsets[g]
        loc[M[j]] = dig[j]
    return to_result(p, "fast", status, loc, time.perf_counter() - t0, gap, stats)


def _infeasible_by_bounds(p, items, ncomp, names, cap) -> UnoInfeasible:
    minuse = np.full((ncomp, len(cap)), np.inf)
    np.minimum.at(minuse, items.comp_a, items.use_a)
    need = minuse.sum(axis=0)
    bad = [i for i in range(len(cap)) if need[i] > cap[i] + 1e-9 * max(1.0, abs(cap[i]))]
    parts = [f"{names[i]} (needs at least {need[i]:g} more than the pinned nodes, has {cap[i]:g} left)" for i in bad]
    return UnoInfeasible("no placement satisfies the budgets; binding constraint(s): " + "; ".join(parts),
                         [names[i] for i in bad])
