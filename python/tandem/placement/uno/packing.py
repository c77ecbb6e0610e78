"""Exact UNO placement with several sNICs when the PCIe budgets do not bind:
an aggregate knapsack bound, the objective lattice, and a packing that fills
every sNIC — no LP, no MILP.

Bound. Drop the PCIe rows and merge the sNICs' capacities (one finite
resource): every placement offloads a set of free nodes whose total use is at
most W = Σ_k W_k (W_k: sNIC k's capacity left by its pinned nodes). For any
λ ≥ 0, L(λ) = const + Σ_i min(h_i, λ·w_i) − λ·W ≤ every placement's objective
(h_i: node i's host cost, w_i: its sNIC use); λ is the critical ratio of the
fractional knapsack. Node i with |λ·w_i − h_i| > UB − LB keeps its side (host
or some sNIC) in every placement better than the incumbent (Lagrangian
reduced-cost fixing); the objective of such placements is then a constant
plus a sum over the other nodes' host costs, which lie on a lattice (s·h_i
integral: 3-decimal traffic times the NF ratios), so the bound rounds up to
the next lattice point (`structural.objective_lattice`).

Incumbent. Nodes above the critical ratio are offloaded; the nodes at it
(same cost/use ratio: host cost and sNIC use proportional within an NF type)
fill what is left exactly, by subset sum on the integer use lattice
(`subsets.pick`); the offloaded set is split among the sNICs (`split`): a
reference split that keeps heavy traffic inside one sNIC (greedy, or the LP
relaxation of the split), then sNIC by sNIC the cheapest moves (predicted
PCIe overflow) that bring its use into its window, then exchanges that lower
the PCIe overflow. Every candidate is evaluated on the whole problem (every
budget, floating-point noise only) before it counts.

If a packing meets the lattice bound (within `rel_gap`) it is proven
optimal. Otherwise the best packing found, perhaps with fewer ties (1, 2, 4 …
lattice steps below), is handed to the caller's LP method as its first
incumbent: the PCIe budgets bind, or the search found no packing at the bound.
Input: `UnoProblem` with ≥ 2 sNICs, one finite capacity resource, no host
capacity, no incremental data. Output: `Packing` (placement, objective,
proven, certified gap, details) or None.
Cost: O(n log n) for the bound, O(core · C / 64) word operations per subset
sum (core ≤ a few dozen items, C its capacity in lattice units), O(E) per
move evaluation, one small LP per LP-split try.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from tandem.placement.uno.model import UnoProblem, evaluate_many, pcie_load
from tandem.placement.uno.multisnic import lattice_scale
from tandem.placement.uno.split import balance, exchange_repair, fill, lp_split, reference_split
from tandem.placement.uno.structural import FIX_MARGIN, STRICT, lattice_bound, objective_lattice
from tandem.placement.uno.subsets import pick

TRIES = 8  # packings tried at the bound per sNIC beyond the first
GREEDY_SHARE = 0.6  # of the budget for the greedy packings at the bound (the rest: incumbents, LP splits)
TIE = 1e-9  # relative: cost/use ratios this close are one ratio
LOWER_STEPS = 256  # tie-lattice steps below the bound tried for a first incumbent (1, 2, 4, …)
LP_SPLIT_FREE = 2000  # free nodes up to which LP_TRIES more tries split by the LP relaxation
LP_TRIES = 16
PCIE_HOPELESS = 1.4  # PCIe use / budget of the best repaired packing above which packing stops


@dataclass
class Knapsack:
    """The aggregate knapsack relaxation a packing was measured against (for
    `uno.fill`, which searches the same problem exactly)."""

    ratio: float  # λ, the critical cost/use ratio
    bound: float  # L(λ)
    rc: np.ndarray  # per free node: λ·w_i − h_i
    units: np.ndarray  # per node: sNIC use in integer units (free nodes)
    caps: np.ndarray  # per sNIC: capacity left by the pinned nodes, in units
    scale: float  # units per unit of use
    exact: bool  # the units are the uses exactly (a common denominator), not rounded up


@dataclass
class Packing:
    loc: np.ndarray | None  # a placement meeting every budget (None: none found)
    objective: float
    proven: bool  # within rel_gap of the bound
    gap: float | None  # certified relative gap when proven
    details: dict
    knapsack: Knapsack | None = None


def solve_packing(p: UnoProblem, rel_gap: float, budget_s: float | None = None, tries: int | None = None
                  ) -> Packing | None:
    """The proven optimum (`proven`), else the best placement found (for the
    caller's method to start from; `loc` None when nothing was found within
    `budget_s` CPU seconds or `tries` packings at the bound, by default
    TRIES·(K − 1)), else None (not applicable)."""
    t0 = time.process_time()  # the budget counts CPU time: the same work on a busy machine
    a = p.arrays
    K = a.K
    if K < 2 or np.isfinite(a.HC).any() or a.move_budget is not None or (a.cur >= 0).any() or a.move_cost:
        return None
    fin = [r for r in range(len(p.resources)) if np.isfinite(a.D[:, r]).any()]
    if len(fin) != 1 or not np.isfinite(a.D[:, fin[0]]).all():
        return None
    r0 = fin[0]
    free = a.free
    if not len(free):
        return None
    h = a.cost[free]
    w = a.N[free, r0]
    Wk = np.array([a.D[k, r0] - float(a.N[a.pin == k + 1, r0].sum()) for k in range(K)])
    if (Wk < 0).any():
        return None  # pinned nodes alone overflow an sNIC: the general method names the budget
    W = float(Wk.sum())
    const = float(a.cost[a.pin == 0].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(w > 0, h / np.where(w > 0, w, 1.0), np.where(h > 0, np.inf, -np.inf))
    order = np.argsort(-ratio, kind="stable")
    order = order[h[order] > 0]
    cum = np.cumsum(w[order])
    kc = int(np.searchsorted(cum, W * (1 - STRICT), side="right"))
    lam = float(ratio[order[kc]]) if kc < len(order) else 0.0
    if not math.isfinite(lam) or lam < 0:
        return None
    lb = const + float(np.minimum(h, lam * w).sum()) - lam * W
    rc = lam * w - h  # what offloading node i costs over the bound
    tie = np.abs(rc) <= TIE * np.maximum(1.0, np.abs(h))
    above = (rc < 0) & ~tie
    # integer uses: exact on the lattice, else rounded up (every packing found then fits)
    S = lattice_scale(w)
    exact = S is not None
    if S is not None:
        uf = np.round(w * S).astype(np.int64)
    else:  # no common denominator: 2^24 units for the largest capacity, uses rounded up
        S = 2 ** 24 / max(1e-12, float(Wk.max()))
        uf = np.ceil(w * S - 1e-9).astype(np.int64)
    caps = np.array([math.floor((Wk[k] + STRICT * max(1.0, a.D[k, r0])) * S + 1e-9) for k in range(K)], dtype=np.int64)
    u = np.zeros(len(a.names), dtype=np.int64)
    u[free] = uf
    knap = Knapsack(lam, lb, rc, u, caps, float(S), exact)
    stats: dict = {"aggregate_bound": lb, "critical_ratio": lam}
    rng = np.random.default_rng(0)  # deterministic: the same problem gives the same answer
    best_loc, ub = None, math.inf

    def consider(cands: list[np.ndarray]) -> bool:
        nonlocal best_loc, ub
        if not cands:
            return False
        ev = evaluate_many(p, np.stack(cands), tol=STRICT)
        got = False
        for loc, obj, ok in zip(cands, ev["objective"], ev["feasible"]):
            if ok and obj < ub - 1e-12 * max(1.0, abs(obj)):
                best_loc, ub, got = loc, float(obj), True
        return got

    def bound(ub: float) -> tuple[float, np.ndarray]:
        """The lattice-rounded bound on placements better than ub, and the fixed nodes."""
        thr = (ub - lb) + FIX_MARGIN * max(1.0, abs(ub)) + FIX_MARGIN
        fixed = np.abs(rc) > thr
        lat = objective_lattice(h[~fixed])
        if lat is None:
            return lb, fixed
        c_fixed = const + float(h[fixed & (rc > 0)].sum()) + float(h[~fixed].sum())
        # objective = c_fixed − Σ_{unfixed offloaded} h_i: coefficients −h_i on the lattice
        return lattice_bound(lb, c_fixed, *lat), fixed

    above_nodes = free[above]
    room = int(caps.sum()) - int(u[above_nodes].sum())
    if room < 0:
        return None
    ties = np.flatnonzero(tie & (h > 0))
    wt = u[free[ties]]
    full = pick(wt, 0, room, room)  # the ties fill the room as far as a subset sum reaches
    if full is None:
        return None
    target = int(wt[full].sum())
    deadline = None if budget_s is None else t0 + budget_s
    phase_end = [deadline]  # the current phase's deadline (the greedy phase leaves time for the next)
    base = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
    attempts = 0

    least_pcie = [math.inf]  # least max(PCIe use / budget) of the repaired packings

    def pcie_ratio(loc: np.ndarray) -> float:
        ev = evaluate_many(p, loc[None], tol=STRICT)
        return max(float(load[0]) / max(budget, 1e-12) for _, _, load, budget in pcie_load(a, p.pcie, ev["up"], ev["down"]))

    greedy_tries = TRIES * (K - 1) if tries is None else tries

    def packings(target: int, tries: int, lp: bool = False):
        """Candidate placements offloading the nodes above the ratio and ties of
        total use `target`, each split among the sNICs from a greedy reference
        (or, with `lp`, the LP relaxation's split); stops when time is up, or
        when two tries leave a PCIe budget exceeded by more than PCIE_HOPELESS."""
        nonlocal attempts
        for t in range(tries):
            if phase_end[0] is not None and time.process_time() > phase_end[0]:
                return
            if attempts >= 2 and least_pcie[0] > PCIE_HOPELESS:
                return  # PCIe binds far beyond what a split can fix: the LP method's bound is needed
            attempts += 1
            tie_order = ties[np.argsort(-wt, kind="stable")] if t == 0 and not lp else rng.permutation(ties)
            take = pick(u[free[tie_order]], target, target, target)
            if take is None:
                return
            off = np.concatenate([above_nodes, free[tie_order[take]]])
            ref = base.copy()
            if lp:
                split = lp_split(p, base, off, rng)
                if split is None:
                    continue  # no split of this offload set meets the budgets, even fractionally
                ref[off] = split
            else:
                ref[off] = reference_split(p, base, off, u[off], caps, rng if t else None)
            loc = fill(p, ref, off, u, caps)
            if loc is not None:
                yield loc
                if not evaluate_many(p, loc[None], tol=STRICT)["feasible"][0]:
                    loc = fill(p, balance(p, ref, off), off, u, caps)  # PCIe kept below 92 % first
                    if loc is not None:
                        loc = exchange_repair(p, loc, off, u, caps)
                        least_pcie[0] = min(least_pcie[0], pcie_ratio(loc))
                        yield loc

    def at_bound(cands) -> Packing | None:
        for loc in cands:
            if consider([loc]):
                lb_lat, fixed = bound(ub)
                if ub - lb_lat <= rel_gap * max(1.0, abs(ub)):
                    stats.update(lattice_bound=lb_lat, fixed_nodes=int(fixed.sum()),
                                 residual_nodes=int((~fixed).sum()), packings=attempts,
                                 fast_path="aggregate knapsack bound + objective lattice + sNIC packing")
                    return Packing(best_loc, ub, True, max(0.0, ub - lb_lat) / max(1.0, abs(ub)), stats, knap)
        return None

    # 1. at the bound (ties of the largest reachable total), greedy reference splits
    phase_end[0] = None if budget_s is None else t0 + GREEDY_SHARE * budget_s
    done = at_bound(packings(target, greedy_tries))
    if done is not None:
        return done
    phase_end[0] = deadline
    # 2. for the caller, a feasible placement with fewer ties offloaded, 1, 2, 4 … steps of their
    # use lattice below (each step widens every sNIC's window by one step)
    step = int(np.gcd.reduce(wt)) if len(wt) else 0
    j = 1
    while best_loc is None and step and j <= LOWER_STEPS:
        lower = pick(wt, 0, target - j * step, target - j * step)
        if lower is None:
            break
        for loc in packings(int(wt[lower].sum()), 2):
            consider([loc])
        j *= 2
    # 3. at the bound again, split by the LP relaxation (one small LP per try)
    if tries is None and len(free) <= LP_SPLIT_FREE:
        done = at_bound(packings(target, LP_TRIES, lp=True))
        if done is not None:
            return done
    stats.update(packings=attempts, lattice_bound=bound(ub)[0] if best_loc is not None else None)
    return Packing(best_loc, ub, False, None, stats, knap)
