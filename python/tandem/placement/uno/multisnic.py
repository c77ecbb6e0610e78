"""Exact UNO placement with several sNICs when a free component is too large to
enumerate: LP bound + subset-sum capacity cuts + a knapsack-filled incumbent,
reduced-cost fixing, and HiGHS on the residual only if that does not close.

Why a separate method: with 2–3 sNICs the LP relaxation fills every sNIC's
capacity exactly with fractional nodes. Within an NF type, host cost and sNIC
use are proportional, so the LP bound sits a subset-sum residue below the
optimum (~1e-4 relative) and branching on one node lets another fill the gap;
HiGHS does not close it. What this method adds:

1. Capacity cuts (valid for every placement). Put the sNIC uses on an integer
   lattice: S such that every free node's use times S is an integer (detected
   from the numbers, e.g. 3-decimal traffic times the NF ratios), or, if there is
   none, any S with the uses rounded down (weaker, still valid). For sNIC k and
   resource r, every placement's use is a subset sum of the free uses, so
       Σ_i ⌊S·n_i⌋ x[i,k] ≤ M_k = max{subset sum of ⌊S·n_i⌋ ≤ ⌊S·cap_k⌋}
   (a bitset DP over Python ints); likewise the sum over all sNICs against the
   total capacity. With the lattice found, the cut moves the LP's fill from the
   real capacity to the largest reachable one.
2. An incumbent that fills the sNICs as the cut allows: nodes integral in the LP
   keep their place; the fractional ones and the ones with the marginal
   cost/use ratio are packed sNIC by sNIC by an exact subset-sum (or 0/1
   knapsack) DP on the lattice; a packing that breaks a PCIe budget is packed
   again without its largest contributors to that budget, or in another item
   order; then single-node moves and make-room exchanges (`exchange`).
3. Fixing from the LP certificate: a node whose reduced costs exceed UB − LB is
   pinned; a node whose host placement would cost more than UB − LB (its
   negative reduced costs plus its assignment row's dual, by weak duality with
   the row's slack) is kept on *some* sNIC (row Σ_k x[i,k] = 1), and its use
   becomes a constant of the all-sNIC cut. Cuts are recomputed on the residual
   (now mostly one NF type, so the lattice is coarser and the cut tighter).
If the incumbent meets the bound (within `rel_gap`) it is proven. Otherwise the
loop repeats (ROUNDS); then HiGHS gets the residual with the cuts, first only to
find a placement meeting the bound (objective row, TARGET_S), then for the time
left (status checked; a time limit reports the certified gap). All bounds come from `Model.dual_bound` (weak
duality), so LP tolerances cannot make a bound wrong.
Input: `UnoProblem` with ≥ 2 sNICs and no incremental data (the caller keeps the
structural method otherwise). Output: `PlacementResult` (method "fast",
`details.fast_path` names the proof).
Cost: a few LPs on the cut model, O(pool · C) per knapsack DP (C = lattice
capacity, bounded by MAX_DP_CELLS), O(n · C / 64) per bitset cut.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from tandem.placement.result import PlacementResult
from tandem.placement.solver import InfeasibleError, SolverOptions, Status
from tandem.placement.uno.milp import build_milp, solve_milp
from tandem.placement.uno.model import UnoProblem, evaluate_many, pcie_load, to_result
from tandem.placement.uno.structural import FIX_MARGIN, LARGE_LP_COLUMNS, LocalState, _pinned
from tandem.placement.uno.subsets import max_subset_sum, subset_fill

MAX_DEN = 100_000  # largest denominator accepted per use value when detecting the lattice
MAX_SCALE = 10_000_000  # largest lattice scale S
MAX_BITS = 1 << 25  # bitset DP length (cut) above which S is reduced (rounded-down uses)
MAX_DP_CELLS = 40_000_000  # pool size × capacity cells for the incumbent knapsack DP
MAX_POOL = 96  # nodes packed by the knapsack DP
PACK_TRIES = 8  # knapsack packings per pool (PCIe repair, other item orders)
TARGET_S = 5.0  # HiGHS search for a placement meeting the bound (see solve_multisnic)
MAX_FREE = 2000  # free nodes above which the caller's structural method is used (bitset DPs grow with n)
ROUNDS = 4  # LP / fix rounds before HiGHS gets the residual
CAP_TOL = 1e-9  # relative capacity slack, as the fast method's feasibility checks


def lattice_scale(values: np.ndarray) -> int | None:
    """Smallest S ≤ MAX_SCALE with S·v integral (within 1e-9 relative) for every v, or None."""
    S = 1
    for v in np.unique(np.round(values[values > 0], 12)):
        f = Fraction(float(v)).limit_denominator(MAX_DEN)
        if abs(float(f) - v) > 1e-9 * max(1.0, abs(v)):
            return None
        S = S * f.denominator // math.gcd(S, f.denominator)
        if S > MAX_SCALE:
            return None
    return S


def units(values: np.ndarray, total_cap: float) -> tuple[np.ndarray, int, bool]:
    """Integer uses (rounded down unless exact) and the scale S; `exact` says
    whether the uses lie on the lattice."""
    S = lattice_scale(values)
    top = max(float(values.sum()), 1e-12)
    exact = S is not None and S * top <= MAX_BITS
    if not exact:
        S = max(1, int(MAX_BITS // (top * 2)))
    scaled = values * S
    u = np.round(scaled) if exact else np.floor(scaled + 1e-9)
    return u.astype(np.int64), int(S), exact


def capacity_cuts(q: UnoProblem, m, X: np.ndarray, on_nic: np.ndarray | None = None) -> int:
    """Add the subset-sum capacity cuts of `q` to its model `m`; returns how many.
    `on_nic` (bool per free node of q): nodes known to sit on some sNIC in every
    placement considered (Σ_k x[i,k] = 1 is added for them); their uses are a
    constant of the all-sNIC cut."""
    a = q.arrays
    free = a.free
    added = 0
    must = np.zeros(len(free), dtype=bool) if on_nic is None else on_nic
    if must.any():
        fi = np.flatnonzero(must)
        m.add_rows(np.repeat(np.arange(len(fi)), a.K), X[free[fi], 1:].ravel(), np.ones(len(fi) * a.K), 1.0, 1.0,
                   len(fi), ("on_snic", [a.names[free[i]] for i in fi]))
        added += len(fi)
    for r, res in enumerate(q.resources):
        caps = []
        for k in range(a.K):
            if math.isfinite(a.D[k, r]):
                caps.append((k, a.D[k, r] - float(a.N[a.pin == k + 1, r].sum()), a.D[k, r]))
        w_real = a.N[free, r]
        if not caps or not len(free) or not np.any(w_real > 0):
            continue
        w, S, _ = units(w_real, max(c for _, c, _ in caps))
        Ms = []
        for k, cap, D in caps:
            C = math.floor((cap + CAP_TOL * max(1.0, D)) * S + 1e-9)
            M = max_subset_sum(w, C)
            Ms.append(M)
            if M < int(w.sum()):
                if M < 0:
                    M = 0
                m.add_rows(np.zeros(len(free)), X[free, k + 1], w / S, -np.inf, M / S * (1 + 1e-12) + 1e-12, 1,
                           [f"capacity_cut[{q.snics[k].name},{res}]"])
                added += 1
        if len(caps) == a.K and a.K > 1:
            fixed_part = int(w[must].sum())
            total = fixed_part + max_subset_sum(w[~must], sum(max(M, 0) for M in Ms) - fixed_part)
            if total < sum(Ms) and total < int(w.sum()):
                cols = X[free, 1:].ravel()
                m.add_rows(np.zeros(len(cols)), cols, np.repeat(w / S, a.K), -np.inf, total / S * (1 + 1e-12) + 1e-12,
                           1, [f"capacity_cut[all sNICs,{res}]"])
                added += 1
    return added


def knapsack(w: np.ndarray, v: np.ndarray, C: int) -> np.ndarray:
    """Exact 0/1 knapsack: a boolean choice maximising Σv with Σw ≤ C (w integer ≥ 0)."""
    n = len(w)
    if n == 0 or C < 0:
        return np.zeros(n, dtype=bool)
    best = np.full(C + 1, -np.inf)
    best[0] = 0.0
    takes = []
    for i in range(n):
        wi = int(w[i])
        if v[i] <= 0 or wi > C:
            takes.append(None)
            continue
        if wi == 0:
            best += v[i]
            takes.append(np.ones(C + 1, dtype=bool))
            continue
        cand = best[:C + 1 - wi] + v[i]
        take = np.zeros(C + 1, dtype=bool)
        take[wi:] = cand > best[wi:]
        best[wi:] = np.where(take[wi:], cand, best[wi:])
        takes.append(take)
    c = int(np.argmax(best))
    out = np.zeros(n, dtype=bool)
    for i in range(n - 1, -1, -1):
        t = takes[i]
        if t is not None and t[c]:
            out[i] = True
            c -= int(w[i])
    return out


def fill_incumbent(q: UnoProblem, X: np.ndarray, x: np.ndarray, rc: np.ndarray,
                   must: np.ndarray | None = None) -> list[np.ndarray]:
    """Candidate placements of q from an LP point: integral nodes kept, the pool
    (fractional nodes and zero-reduced-cost nodes) packed by knapsack DPs."""
    a = q.arrays
    free = a.free
    v = np.clip(np.nan_to_num(x[X[free, 1:]]), 0.0, 1.0)  # F × K
    r = rc[X[free, 1:]]
    host = 1.0 - v.sum(axis=1)
    integral = (v.max(axis=1) >= 1 - 1e-6) | (host >= 1 - 1e-6)
    base = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
    # nodes wholly on the sNICs go to their largest share, the rest to the host
    base[free] = np.where(host <= 1e-6, np.argmax(v, axis=1) + 1, 0)
    cost = a.cost
    down = base.copy()
    down[free] = np.where(v.max(axis=1) >= 1 - 1e-6, np.argmax(v, axis=1) + 1, 0)
    out = [base.copy(), down]
    if not len(q.resources):
        return out
    # pools: the fractional nodes; with them the zero-reduced-cost nodes the LP put on
    # an sNIC (repacking them changes little traffic); and every zero-reduced-cost node
    # "zero reduced cost" = the marginal cost/use ratio of the fractional nodes (the LP's
    # capacity price), so every pool packs by use alone
    wf = q.arrays.N[free, 0] if len(q.resources) else np.zeros(len(free))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(wf > 0, cost[free] / wf, np.nan)
    marg = ratio[(host > 1e-6) & (host < 1 - 1e-6) & np.isfinite(ratio)]
    near = np.zeros(len(free), dtype=bool)
    for lam in np.unique(np.round(marg, 9))[:4]:
        near |= np.isfinite(ratio) & (np.abs(ratio - lam) <= 1e-9 * max(1.0, abs(lam)))
    on_nic = host <= 1e-6
    pools = []
    share = v > 1e-6  # sNICs the LP uses for each node
    frac = (host > 1e-6) & (host < 1 - 1e-6) & near
    must = np.zeros(len(free), dtype=bool) if must is None else must
    for sel, anywhere in ((frac, 0), (frac | (near & on_nic), 0), (near, 1), (near | must, 1)):
        pool = np.flatnonzero(sel)[:MAX_POOL]
        if len(pool) and not any(len(pool) == len(q_) and np.array_equal(pool, q_) and any_ == anywhere
                                 for q_, any_ in pools):
            pools.append((pool, anywhere))
    lam = float(np.median(marg)) if len(marg) else None
    for pool, anywhere in pools:
        value = cost[free[pool]].copy()
        forced = must[pool]
        if lam is not None and len(marg) and forced.any():
            value[forced] = lam * wf[pool[forced]]  # placed anyway (on some sNIC): packed by use like the rest
        # where pool nodes may go: the LP's sNICs (0) or any sNIC (1)
        elig = share[pool].copy()
        if anywhere == 1:
            elig[:] = True
        out += _pack(q, base, free[pool], elig, value, forced)
    return out


def _pack(q: UnoProblem, base: np.ndarray, pool: np.ndarray, eligible: np.ndarray, value: np.ndarray,
          forced: np.ndarray) -> list[np.ndarray]:
    """`base` with the `pool` nodes repacked sNIC by sNIC by knapsack DPs (two sNIC
    orders); pool node j may go to sNIC k if eligible[j, k]; `forced` nodes left
    over go to their LP sNIC. The DP sees only the capacity; a packing that breaks
    a PCIe budget is packed again without the largest contributors to that budget
    and in a shuffled item order (at most PACK_TRIES packings)."""
    a = q.arrays
    cost = a.cost
    out = []
    # the resource whose sNIC capacity binds most
    r_idx = 0
    if len(q.resources) > 1:
        ratios = [np.max(np.array([a.N[base == k + 1, rr].sum() for k in range(a.K)])
                         / np.where(np.isfinite(a.D[:, rr]), a.D[:, rr], np.inf)) for rr in range(len(q.resources))]
        r_idx = int(np.argmax(ratios))
    wr = a.N[pool, r_idx]
    w, S, exact = units(wr, float(np.nanmax(np.where(np.isfinite(a.D[:, r_idx]), a.D[:, r_idx], 0.0))))
    if not exact:
        w = np.ceil(wr * S - 1e-9).astype(np.int64)  # rounded up: every packing found is feasible
    # PCIe load change of each budget row when pool node j alone moves host → sNIC k
    loc0 = base.copy()
    loc0[pool] = 0
    P = len(pool)
    trial = np.repeat(loc0[None], P * a.K, axis=0)
    jj = np.repeat(np.arange(P), a.K)
    kk = np.tile(np.arange(a.K), P)
    trial[np.arange(P * a.K), pool[jj]] = kk + 1
    ev = evaluate_many(q, np.concatenate([loc0[None], trial]), tol=CAP_TOL)
    rows = pcie_load(a, q.pcie, ev["up"], ev["down"])
    delta = np.stack([load[1:] - load[0] for _, _, load, _ in rows], axis=1).reshape(P, a.K, len(rows))
    ban = ~eligible.copy()
    slack = np.array([max(budget - float(load[0]), 1e-9) for _, _, load, budget in rows])
    rng = np.random.default_rng(len(pool))  # deterministic: same input, same answer
    for attempt in range(PACK_TRIES):
        found = []
        for order_k in (list(range(a.K)), list(range(a.K))[::-1]):
            loc = loc0.copy()
            left = np.ones(P, dtype=bool)
            for k in order_k:
                D = a.D[k, r_idx]
                idx = np.flatnonzero(left & ~ban[:, k] & (value > 0))
                # item order: the reconstruction prefers the last items, so PCIe-heavy ones go first
                # (first attempt); later attempts shuffle to reach other equally full packings
                heavy = (np.maximum(delta[idx, k, :], 0.0) / slack).max(axis=1)
                idx = idx[np.argsort(-heavy, kind="stable")] if attempt == 0 else rng.permutation(idx)
                if not len(idx):
                    continue
                if not math.isfinite(D):
                    take = np.ones(len(idx), dtype=bool)
                else:
                    used = float(a.N[(loc == k + 1), r_idx].sum())
                    C = math.floor((D - used + CAP_TOL * max(1.0, D)) * S + 1e-9)
                    if C < 0:
                        continue
                    C = min(C, int(w[idx].sum()))
                    ratio = value[idx] / np.maximum(wr[idx], 1e-300)
                    if exact and C <= MAX_BITS and np.all(np.abs(ratio - ratio[0]) <= 1e-9 * abs(ratio[0])):
                        take = subset_fill(w[idx], C)  # value ∝ use: the fullest packing is the best
                    else:
                        if len(idx) * (C + 1) > MAX_DP_CELLS:
                            idx = idx[np.argsort(-ratio)][:max(1, MAX_DP_CELLS // (C + 1))]
                        take = knapsack(w[idx], value[idx], C)
                loc[pool[idx[take]]] = k + 1
                left[idx[take]] = False
            f = np.flatnonzero(left & forced)  # forced nodes still unplaced: their LP sNIC
            loc[pool[f]] = np.where(base[pool[f]] > 0, base[pool[f]], order_k[-1] + 1)
            found.append(loc)
        out += found
        ev = evaluate_many(q, np.stack(found), tol=CAP_TOL)
        if ev["feasible"].any():
            break
        # ban the largest contributors to each broken PCIe budget (enough to cover the excess) and pack again
        grew = False
        for f_i, loc in enumerate(found):
            for ri, (_, _, load, budget) in enumerate(pcie_load(a, q.pcie, ev["up"][f_i], ev["down"][f_i])):
                excess = float(load) - budget
                if excess <= CAP_TOL * max(1.0, budget):
                    continue
                placed = np.flatnonzero(loc[pool] > 0)
                kj = loc[pool[placed]] - 1
                d = delta[placed, kj, ri]
                for j in np.argsort(-d):
                    if d[j] <= 0 or excess <= 0:
                        break
                    if not ban[placed[j], kj[j]]:
                        ban[placed[j], kj[j]] = True
                        grew = True
                    excess -= d[j]
        if not grew:
            break  # another budget (host capacity, second resource): the caller's checks decide
    return out


def improve_any(q: UnoProblem, loc: np.ndarray) -> np.ndarray:
    """Single-node moves host → any sNIC that keep every budget, most costly node
    first, each sNIC tried in order of its free capacity."""
    a = q.arrays
    st = LocalState(q, loc)
    free = a.free
    cost = a.cost
    for i in free[np.argsort(-cost[free], kind="stable")]:
        if st.loc[i] != 0 or cost[i] <= 0:
            continue
        room = (a.D - st.snic).min(axis=1)
        for k in np.argsort(-room):
            if st.try_move(int(i), int(k) + 1):
                break
    return st.loc


def exchange(q: UnoProblem, loc: np.ndarray, passes: int = 4, tries: int = 6) -> np.ndarray:
    """Local search filling the sNICs: for each host node j (most costly first) and
    sNIC k, insert j, or make room first by moving one node i off k (to the host
    when it is cheaper than j, or to another sNIC with room); every step keeps
    every budget (checked by `LocalState`), and a move pair that fails is undone."""
    a = q.arrays
    st = LocalState(q, loc)
    free = a.free
    cost = a.cost
    r = 0
    W = a.N[:, r] if len(q.resources) else np.zeros(len(a.names))
    Dk = a.D[:, r] if len(q.resources) else np.full(a.K, np.inf)
    for _ in range(passes):
        improved = False
        for j in free[np.argsort(-cost[free], kind="stable")]:
            j = int(j)
            if st.loc[j] != 0 or cost[j] <= 1e-12:
                continue
            done = False
            for k in range(a.K):
                room = Dk - st.snic[:, r]
                if W[j] <= room[k] + CAP_TOL * max(1.0, Dk[k]):
                    if st.try_move(j, k + 1):
                        improved = done = True
                        break
                    continue
                need = W[j] - room[k]
                on_k = free[st.loc[free] == k + 1]
                ok = on_k[W[on_k] >= need - CAP_TOL]
                if not len(ok):
                    continue
                # gain of each way to make room: to another sNIC (keeps its saving) or to the host
                other = np.array([max((room[kk] for kk in range(a.K) if kk != k), default=-np.inf)])
                to_nic = W[ok] <= other[0] + CAP_TOL
                gain = np.where(to_nic, cost[j], cost[j] - cost[ok])
                order = np.argsort(-gain, kind="stable")[:tries]
                for t in order:
                    if gain[t] <= 1e-12:
                        break
                    i = int(ok[t])
                    dests = [kk + 1 for kk in np.argsort(-room) if kk != k and W[i] <= room[kk] + CAP_TOL] if to_nic[t] else [0]
                    for dest in dests:
                        if st.try_move(i, dest):
                            if st.try_move(j, k + 1):
                                improved = done = True
                                break
                            st.try_move(i, k + 1)  # undo
                    if done:
                        break
                if done:
                    break
        if not improved:
            break
    return st.loc


def _lp(q: UnoProblem, time_limit_s: float | None, on_nic: np.ndarray | None = None):
    m, X = build_milp(q, compact=True)
    large = m.num_vars > LARGE_LP_COLUMNS
    if not large:
        m, X = build_milp(q)
    ncuts = capacity_cuts(q, m, X, on_nic)
    lp = None
    for lp_method in (("ipm", "simplex") if large else ("simplex",)):
        lp = m.solve(SolverOptions(time_limit_s=time_limit_s, explain_infeasible=False, lp_method=lp_method,
                                   presolve=not large), relax=True)
        if lp.status is Status.OPTIMAL and lp.row_duals is not None:
            break
    return m, X, lp, ncuts


def solve_multisnic(p: UnoProblem, time_limit_s: float | None = None, rel_gap: float = 1e-9,
                    extra: dict | None = None, start: np.ndarray | None = None) -> PlacementResult | None:
    """Proven optimum of p (≥ 2 sNICs, no incremental data), or a time-limited
    answer with its certified gap. None when p has more than MAX_FREE free nodes
    or the LP gives no usable certificate (the caller then uses its general method).
    `start`: a placement meeting every budget (the first incumbent)."""
    t0 = time.perf_counter()
    a = p.arrays
    if len(a.free) > MAX_FREE:
        return None
    stats: dict = dict(extra or {})
    stats["multi_snic"] = True

    def left() -> float | None:
        return None if time_limit_s is None else max(0.01, time_limit_s - (time.perf_counter() - t0))

    best_loc, ub = None, math.inf
    if start is not None:
        ev = evaluate_many(p, start[None], tol=CAP_TOL)
        if ev["feasible"][0]:
            best_loc, ub = start.copy(), float(ev["objective"][0])
    q = p
    lb = -math.inf
    cuts_total = 0
    must: set[str] = set()  # nodes on some sNIC in every placement better than the incumbent
    for rnd in range(ROUNDS):
        try:
            m, X, lp, ncuts = _lp(q, left(), np.isin(q.arrays.free, [q.arrays.index[nm] for nm in must]))
        except InfeasibleError:
            if best_loc is None:
                solve_milp(p)  # names the binding budgets (raises UnoInfeasible)
                raise
            lb = ub  # no placement of the residual: none better than the incumbent
            break
        cuts_total += ncuts
        if lp is None or lp.status is not Status.OPTIMAL or lp.row_duals is None:
            if rnd == 0:
                return None
            break
        lb_q, rc = m.dual_bound(lp.row_duals)
        if rnd == 0:
            stats["lp_bound_with_cuts"] = lb_q
        must_q = np.isin(q.arrays.free, [q.arrays.index[nm] for nm in must])
        cands = [improve_any(q, c) for c in fill_incumbent(q, X, lp.x, rc, must_q)]
        ev = evaluate_many(p, np.stack(cands), tol=CAP_TOL)
        for loc, obj, ok in zip(cands, ev["objective"], ev["feasible"]):
            if ok and obj < ub:
                best_loc, ub = loc, float(obj)
        if best_loc is not None and ub - lb_q > rel_gap * max(1.0, abs(ub)):
            loc = exchange(q, best_loc)
            obj, ok = evaluate_many(p, loc[None], tol=CAP_TOL)["objective"][0], True
            ok = bool(evaluate_many(p, loc[None], tol=CAP_TOL)["feasible"][0])
            if ok and obj < ub:
                best_loc, ub = loc, float(obj)
        lb = min(ub, lb_q) if math.isfinite(ub) else lb_q
        if rnd == 0:
            stats["root_incumbent"] = ub
        if best_loc is not None and ub - lb_q <= rel_gap * max(1.0, abs(ub)):
            stats.update(capacity_cuts=cuts_total, rounds=rnd + 1)
            path = "LP bound + capacity cuts" if rnd == 0 else "reduced-cost fixing + capacity cuts"
            return to_result(p, "fast", "optimal", best_loc, time.perf_counter() - t0,
                             max(0.0, ub - lb_q) / max(1.0, abs(ub)), {**stats, "fast_path": path})
        if best_loc is None:
            break
        # reduced-cost fixing against the incumbent (valid for q, which holds every better placement)
        thr = (ub - lb_q) + FIX_MARGIN * max(1.0, abs(ub)) + FIX_MARGIN
        qa = q.arrays
        free = qa.free
        rr = rc[X[free, 1:]]
        at0, at1 = rr > thr, -rr > thr
        fixed = np.all(at0 | at1, axis=1)
        # on the host, node i leaves every column with r < 0 at 0 and its assignment row slack:
        # obj ≥ LB + Σ_k max(0, −r_ik) + |y_assign_i| (weak duality with the slack term)
        y = lp.row_duals
        ya = np.zeros(len(free))
        if qa.K > 1 and m.row_name(0).startswith("assign"):
            ya = np.maximum(0.0, -y[:len(free)])
        host_cost = np.maximum(0.0, -rr).sum(axis=1) + ya
        new_must = (host_cost > thr) & ~fixed
        grew = any(qa.names[i] not in must for i in free[new_must])
        must |= {qa.names[i] for i in free[new_must]}
        if not fixed.any():
            if grew:
                continue
            break
        loc_fixed = np.where(at1.any(axis=1), np.argmax(at1, axis=1) + 1, 0)
        q = _pinned(q, free[fixed], loc_fixed[fixed])
        stats["residual_nodes"] = int(len(q.arrays.free))
        if not len(q.arrays.free):
            lb = ub  # everything fixed: the incumbent's placement is the only candidate better or equal
            break
    stats.update(capacity_cuts=cuts_total)
    if best_loc is not None and ub - lb <= rel_gap * max(1.0, abs(ub)):
        return to_result(p, "fast", "optimal", best_loc, time.perf_counter() - t0, max(0.0, ub - lb) / max(1.0, abs(ub)),
                         {**stats, "fast_path": "reduced-cost fixing + capacity cuts"})
    # HiGHS on the residual q with its cuts; first only for a placement that meets the
    # bound (objective row ≤ lb + gap): found = proven, and HiGHS looks for it far faster
    # than it closes the bound. Then without the row, for the time left.
    qa = q.arrays
    on_nic_q = np.isin(qa.free, [qa.index[nm] for nm in must])
    if math.isfinite(lb) and qa.move_budget is None and not qa.move_cost:
        m, X = build_milp(q)
        capacity_cuts(q, m, X, on_nic_q)
        qf = qa.free
        const = float(qa.cost[qa.pin == 0].sum()) + float(qa.cost[qf].sum())
        target = lb + 0.5 * rel_gap * max(1.0, abs(lb))
        m.add_rows(np.zeros(len(qf) * qa.K), X[qf, 1:].ravel(), np.repeat(qa.cost[qf], qa.K), const - target, np.inf, 1,
                   ["objective_target"])
        limit = TARGET_S if left() is None else min(TARGET_S, left())
        try:
            sol = m.solve(SolverOptions(time_limit_s=limit, mip_rel_gap=rel_gap, explain_infeasible=False))
        except InfeasibleError:
            sol = None
        stats["target_search"] = "none below the target" if sol is None else sol.status.value
        if sol is not None and sol.has_solution:
            loc = np.where(qa.pin >= 0, qa.pin, 0)
            on = sol.x[X[qf, 1:]] > 0.5
            loc[qf] = np.where(on.any(axis=1), np.argmax(on, axis=1) + 1, 0)
            ev = evaluate_many(p, loc[None], tol=CAP_TOL)
            if ev["feasible"][0] and float(ev["objective"][0]) < ub:
                best_loc, ub = loc, float(ev["objective"][0])
            if best_loc is not None and ub - lb <= rel_gap * max(1.0, abs(ub)):
                return to_result(p, "fast", "optimal", best_loc, time.perf_counter() - t0,
                                 max(0.0, ub - lb) / max(1.0, abs(ub)),
                                 {**stats, "fast_path": "reduced-cost fixing + capacity cuts + target search"})
    m, X = build_milp(q)
    capacity_cuts(q, m, X, on_nic_q)
    try:
        sol = m.solve(SolverOptions(time_limit_s=left(), mip_rel_gap=rel_gap, explain_infeasible=False))
    except InfeasibleError:
        sol = None  # no placement of the residual beats or equals the incumbent: it is optimal
    path = "reduced-cost fixing + capacity cuts + residual MILP"
    if sol is None:
        if best_loc is None:
            solve_milp(p)
            raise RuntimeError("unreachable: the MILP found no infeasibility")  # pragma: no cover
        return to_result(p, "fast", "optimal", best_loc, time.perf_counter() - t0, 0.0, {**stats, "fast_path": path})
    qa = q.arrays
    if sol.has_solution:
        loc = np.where(qa.pin >= 0, qa.pin, 0)
        on = sol.x[X[qa.free, 1:]] > 0.5
        loc[qa.free] = np.where(on.any(axis=1), np.argmax(on, axis=1) + 1, 0)
        ev = evaluate_many(p, loc[None], tol=1e-7)
        if ev["feasible"][0] and float(ev["objective"][0]) < ub:
            best_loc, ub = loc, float(ev["objective"][0])
    bound = sol.bound if sol.bound is not None and math.isfinite(sol.bound) else lb
    bound = min(ub, max(bound, lb)) if math.isfinite(ub) else bound
    gap = max(0.0, ub - bound) / max(1.0, abs(ub)) if math.isfinite(ub) else None
    status = "optimal" if sol.status is Status.OPTIMAL else sol.status.value
    stats["residual_bound"] = sol.bound
    return to_result(p, "fast", status, best_loc, time.perf_counter() - t0, gap, {**stats, "fast_path": path})
