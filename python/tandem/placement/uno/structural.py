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

import math
import time
from collections.abc import Callable
from fractions import Fraction
from dataclasses import replace

import numpy as np

from tandem.placement.result import PlacementResult
from tandem.placement.solver import InfeasibleError, SolverOptions, Status
from tandem.placement.uno.milp import build_milp, solve_milp
from tandem.placement.uno.model import Incremental, Node, UnoInfeasible, UnoProblem, evaluate_many, pcie_load, to_result

SMALL_RESIDUAL = 60  # residual nodes up to which `residual` (decomposition) is tried before the MILP
LARGE_LP_COLUMNS = 12_000  # compact-model columns above which the LP is solved by interior point + crossover
RESIDUAL_FIRST_S = 5.0  # first residual MILP attempt; then the other model (see _solve_residual)
TIGHT_FEASIBILITY = 1e-10  # HiGHS feasibility tolerance after a residual answer came back over a budget
FIX_MARGIN = 1e-9  # relative + absolute slack on the fixing test (LP duals carry ~1e-9 errors)


STRICT = 1e-12  # budget tolerance (relative) of incumbents: floating-point summation noise only
LATTICE_DEN = 100_000  # largest denominator tried per coefficient when looking for an objective lattice
LATTICE_SCALE = 1e9  # largest lattice scale s (s·|objective| must stay far inside double precision)


def _objective_and_feasible(p: UnoProblem, loc: np.ndarray) -> tuple[float, bool]:
    ev = evaluate_many(p, loc[None], tol=STRICT)
    return float(ev["objective"][0]), bool(ev["feasible"][0])


def objective_lattice(coef: np.ndarray) -> tuple[float, float] | None:
    """A scale s > 0 such that every s·c_j is (nearly) an integer, and the
    total deviation Σ_j |s·c_j − round(s·c_j)| (over `coef` with multiplicity);
    None if no s ≤ LATTICE_SCALE leaves a deviation below 1e-3. Found like a
    common denominator: each coefficient whose scaled value is not an integer
    multiplies s by the denominator of its best rational approximation."""
    c = np.abs(coef[coef != 0])
    if not len(c):
        return None
    s = 1.0
    vals = np.unique(c)
    for _ in range(12):
        v = s * vals
        dev = np.abs(v - np.round(v))
        bad = np.flatnonzero(dev > 1e-9 * np.maximum(1.0, v))
        if not len(bad):
            d = s * c
            total = float(np.abs(d - np.round(d)).sum())
            return (s, total) if total < 1e-3 else None
        x = float(v[bad[0]])
        q = Fraction(x - math.floor(x)).limit_denominator(LATTICE_DEN).denominator
        if q <= 1 or s * q > LATTICE_SCALE or s * q * float(c.max()) * len(c) > 1e13:
            return None
        s *= q
    return None


def lattice_bound(lb: float, const: float, s: float, dev: float) -> float:
    """A lower bound on const + Σ c_j·x_j over binary x whose value is ≥ lb,
    when s·c_j = k_j + d_j with integer k_j and Σ|d_j| ≤ dev: the integer
    Σ k_j·x_j is ≥ s·(lb − const) − dev, hence ≥ its ceiling. `margin` keeps
    floating-point error in lb and const from rounding past an integer."""
    margin = dev + 1e-11 * s * (abs(lb) + abs(const) + 1.0)
    k = math.ceil(s * (lb - const) - margin)
    return max(lb, const + (k - dev) / s)


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
        tol = STRICT
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


    def try_moves(self, moves: list[tuple[int, int]]) -> bool:
        """Make all `moves` (node, new location) together if every budget then holds."""
        saved = self.save()
        self.apply(moves)
        use, cap = self.rows()
        if np.all(use <= cap + STRICT * np.maximum(1.0, np.abs(cap))):
            return True
        self.restore(saved)
        return False

    def save(self) -> tuple:
        return self.loc.copy(), self.snic.copy(), self.host.copy(), self.moves, self.up.copy(), self.down.copy()

    def restore(self, saved: tuple) -> None:
        self.loc, self.snic, self.host, self.moves, self.up, self.down = (
            saved[0].copy(), saved[1].copy(), saved[2].copy(), saved[3], saved[4].copy(), saved[5].copy())

    def apply(self, moves: list[tuple[int, int]]) -> None:
        """Make `moves` (node, new location) whatever the budgets."""
        a = self.a
        for i, new in moves:
            old = int(self.loc[i])
            du, dd = self.pcie_delta(i, new)
            self.up += du
            self.down += dd
            if old > 0:
                self.snic[old - 1] -= a.N[i]
            else:
                self.host -= a.H[i]
            if new > 0:
                self.snic[new - 1] += a.N[i]
            else:
                self.host += a.H[i]
            if a.cur[i] >= 0:
                self.moves += int(new != a.cur[i]) - int(old != a.cur[i])
            self.loc[i] = new

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Use and budget of every finite budget row: PCIe (as `budgets`), sNIC
        capacity per (sNIC, resource), host capacity per resource, move budget."""
        a = self.a
        use, cap = [], []
        for label, k, budget in self.budgets:
            use.append(self.up[k] if label == "up" else self.down[k] if label == "down" else self.up[k] + self.down[k])
            cap.append(budget)
        fin = np.isfinite(a.D)
        use += list(self.snic[fin]); cap += list(a.D[fin])
        fin = np.isfinite(a.HC)
        use += list(self.host[fin]); cap += list(a.HC[fin])
        if a.move_budget is not None:
            use.append(self.moves); cap.append(a.move_budget)
        return np.array(use, float), np.array(cap, float)

    def deltas(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every single move of a node in `nodes` to another location, as
        (node, location, objective change, change of every `rows` use) arrays,
        each computed from the current placement (vectorised over edges)."""
        a, loc = self.a, self.loc
        K, L, n = a.K, a.K + 1, len(nodes)
        idx = np.full(len(a.names), -1)
        idx[nodes] = np.arange(n)
        du = np.zeros((n, L, K))
        dd = np.zeros((n, L, K))
        for moving, other, tail in ((a.src, a.dst, True), (a.dst, a.src, False)):
            e = np.flatnonzero(idx[moving] >= 0)
            if not len(e):
                continue
            mi, lo, li, t = idx[moving[e]], loc[other[e]], loc[moving[e]], a.t[e]
            for k in range(K):
                on_o = lo == k + 1
                for l in range(L):
                    if tail:  # the moving node is the edge's tail: up leaves k from it, down enters k at the other end
                        up = ((l == k + 1) & ~on_o).astype(float) - ((li == k + 1) & ~on_o)
                        down = (on_o & (l != k + 1)).astype(float) - (on_o & (li != k + 1))
                    else:
                        up = (on_o & (l != k + 1)).astype(float) - (on_o & (li != k + 1))
                        down = ((l == k + 1) & ~on_o).astype(float) - ((li == k + 1) & ~on_o)
                    du[:, l, k] += np.bincount(mi, weights=t * up, minlength=n)
                    dd[:, l, k] += np.bincount(mi, weights=t * down, minlength=n)
        node = np.repeat(nodes, L)
        to = np.tile(np.arange(L), n)
        keep = to != loc[node]
        node, to = node[keep], to[keep]
        j = np.repeat(np.arange(n), L)[keep]
        frm = loc[node]
        cost = a.cost[node]
        dobj = cost * ((to == 0).astype(float) - (frm == 0))
        known = a.cur[node] >= 0
        dmove = np.where(known, (to != a.cur[node]).astype(float) - (frm != a.cur[node]), 0.0)
        dobj = dobj + a.move_cost * dmove
        cols = []
        for label, k, _ in self.budgets:
            u, d_ = du[j, to, k] - du[j, frm, k], dd[j, to, k] - dd[j, frm, k]
            cols.append(u if label == "up" else d_ if label == "down" else u + d_)
        for k in range(K):
            for r in range(a.D.shape[1]):
                if np.isfinite(a.D[k, r]):
                    cols.append(a.N[node, r] * ((to == k + 1).astype(float) - (frm == k + 1)))
        for r in range(len(a.HC)):
            if np.isfinite(a.HC[r]):
                cols.append(a.H[node, r] * ((to == 0).astype(float) - (frm == 0)))
        if a.move_budget is not None:
            cols.append(dmove)
        return node, to, dobj, np.stack(cols, axis=1) if cols else np.zeros((len(node), 0))


def exchange(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, target: float, rounds: int = 40,
             pairs_max: int = 4_000_000) -> np.ndarray:
    """Single and paired moves among `nodes` that lower the objective and keep
    every budget, best first, until the objective reaches `target` (a proven
    lower bound) or no such move is left. Pairs are what a subset-sum residue
    needs: one node onto the sNIC and another off it, so that the capacity left
    shrinks below one step of the objective lattice. Budget changes of a pair
    are the sum of its moves' (exact unless the two nodes share an edge); every
    move is checked against every budget before it is kept."""
    st = LocalState(p, loc)
    a = p.arrays
    obj = float(a.cost[st.loc == 0].sum()) + a.move_cost * st.moves
    for _ in range(rounds):
        if obj <= target:
            break
        use, cap = st.rows()
        slack = cap - use + STRICT * np.maximum(1.0, np.abs(cap))
        node, to, dobj, dU = st.deltas(nodes)
        gain = -dobj
        single = np.flatnonzero((gain > 1e-12) & np.all(dU <= slack, axis=1))
        best_gain, best = 0.0, None
        if len(single):
            s1 = single[np.argmax(gain[single])]
            best_gain, best = float(gain[s1]), [(int(node[s1]), int(to[s1]))]
        A = np.flatnonzero(gain > 1e-12)
        if len(A) and len(gain) and len(A) * len(gain) <= pairs_max:
            G = gain[A][:, None] + gain[None, :]
            ok = (G > max(best_gain, 1e-12)) & (node[A][:, None] != node[None, :])
            for c in range(dU.shape[1]):
                ok &= dU[A, c][:, None] + dU[None, :, c] <= slack[c]
            cand = np.flatnonzero(ok.ravel())
            paired = False
            for f in cand[np.argsort(-G.ravel()[cand], kind="stable")][:16]:
                ia, ib = divmod(int(f), len(gain))
                if st.try_moves([(int(node[A[ia]]), int(to[A[ia]])), (int(node[ib]), int(to[ib]))]):
                    obj -= float(G[ia, ib])
                    paired = True
                    break
            if paired:
                continue
        if best is None:  # no single or pair: two of each (singles or pairs), met in the middle
            done = False
            for moves, g in _quads(node, to, gain, dU, slack, pairs_max):
                if st.try_moves(moves):
                    obj -= g
                    done = True
                    break
            if done:
                continue
        if best is None or not st.try_moves(best):
            break
        obj -= best_gain
    return st.loc


def _quads(node, to, gain, dU, slack, limit: int, tries: int = 32):
    """Candidate sets of up to four moves (two 'compounds', each a single
    move or a pair on distinct nodes) with positive total gain that fit the
    tightest budget row; best first. For every compound the best partner is
    found by sorting on that row (prefix maximum of gain); the caller checks
    every row and applies the first set that fits."""
    U = len(gain)
    if U < 2 or U * (U - 1) // 2 + U > limit or not dU.shape[1]:
        return []
    ia, ib = np.triu_indices(U, 1)
    keep = node[ia] != node[ib]
    A = np.concatenate([np.arange(U), ia[keep]])
    B = np.concatenate([np.full(U, -1), ib[keep]])
    pair = B >= 0
    G = gain[A] + np.where(pair, gain[np.maximum(B, 0)], 0.0)
    D = dU[A] + np.where(pair[:, None], dU[np.maximum(B, 0)], 0.0)
    scale = np.abs(dU).mean(axis=0) + 1e-300
    c = int(np.argmin(np.maximum(slack, 0.0) / scale))  # the tightest row
    o = np.argsort(D[:, c], kind="stable")
    Ds, Gs = D[o, c], G[o]
    run = np.maximum.accumulate(Gs)
    arg = np.maximum.accumulate(np.where(Gs >= run, np.arange(len(Gs)), 0))
    j = np.searchsorted(Ds, slack[c] - D[:, c], side="right") - 1
    ok = j >= 0
    first = np.flatnonzero(ok)
    partner = o[arg[j[first]]]
    total = G[first] + G[partner]
    sel = np.flatnonzero(total > 1e-12)
    sel = sel[np.argsort(-total[sel], kind="stable")][:tries]
    out = []
    for t in sel.tolist():
        x, y = int(first[t]), int(partner[t])
        ms = [A[x]] + ([B[x]] if B[x] >= 0 else []) + [A[y]] + ([B[y]] if B[y] >= 0 else [])
        nodes = [int(node[u]) for u in ms]
        if x == y or len(set(nodes)) < len(nodes):
            continue
        out.append(([(int(node[u]), int(to[u])) for u in ms], float(total[t])))
    return out


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


def knapsack_first(p: UnoProblem, rel_gap: float) -> tuple[np.ndarray, float, dict] | None:
    """Try to prove the optimum without the LP: price only the sNIC capacity.

    For one sNIC with one finite capacity row (no host capacity, no move
    budget), dropping the PCIe rows leaves a 0-1 knapsack: node i costs h_i on
    the host and s_i (its move cost) on the sNIC, where it uses w_i. For any
    λ ≥ 0, L(λ) = Σ_i min(h_i, s_i + λ·w_i) − λ·W is a lower bound on every
    placement (the dropped rows only remove placements); λ is the critical
    ratio of the fractional knapsack, so L(λ) is its LP bound. The incumbent
    fills the sNIC greedily by ratio and must meet every budget, PCIe
    included. Node i with |s_i + λ·w_i − h_i| above the gap to the incumbent
    is fixed (Lagrangian reduced-cost fixing); the rest is searched by
    `exchange` down to the lattice-rounded bound. Returns (placement, gap,
    details) when proven within rel_gap, None otherwise (the LP path then
    decides). When the PCIe budgets are slack at the LP optimum this bound is
    the LP bound, found by a sort."""
    a = p.arrays
    if a.K != 1 or np.isfinite(a.HC).any() or a.move_budget is not None:
        return None
    fin = np.flatnonzero(np.isfinite(a.D[0]))
    if len(fin) > 1:
        return None
    free = a.free
    cur = a.cur[free]
    h = a.cost[free] + a.move_cost * ((cur >= 0) & (cur != 0))
    sn = a.move_cost * ((cur >= 0) & (cur != 1))
    const = float(a.cost[a.pin == 0].sum())
    if len(fin):
        r0 = int(fin[0])
        w = a.N[free, r0]
        W = float(a.D[0, r0] - a.N[a.pin == 1, r0].sum())
    else:
        w, W = np.zeros(len(free)), 0.0
    gain = h - sn  # what the sNIC saves over the host
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(w > 0, gain / np.where(w > 0, w, 1.0), np.where(gain > 0, np.inf, -np.inf))
    order = np.argsort(-ratio, kind="stable")
    order = order[gain[order] > 0]
    cum = np.cumsum(w[order])
    k = int(np.searchsorted(cum, W * (1 - STRICT), side="right"))  # items 0..k-1 fit entirely
    lam = float(ratio[order[k]]) if k < len(order) else 0.0
    if not np.isfinite(lam) or lam < 0:
        return None
    lb = const + float(np.minimum(h, sn + lam * w).sum()) - lam * W
    x = np.zeros(len(free), dtype=bool)
    x[order[:k]] = True
    room = W - (float(cum[k - 1]) if k else 0.0)
    for i in order[k + 1:].tolist():  # greedy fill of what is left, by ratio
        if w[i] <= room:
            x[i] = True
            room -= w[i]
    loc = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
    loc[free] = x
    ub, ok = _objective_and_feasible(p, loc)
    if not ok:  # a PCIe budget binds: the LP prices it
        return None
    rc = sn + lam * w - h  # reduced cost of the sNIC against the host

    def fixing(ub: float) -> tuple[np.ndarray, float]:
        thr = (ub - lb) + FIX_MARGIN * max(1.0, abs(ub)) + FIX_MARGIN
        fixed = np.abs(rc) > thr
        lat = objective_lattice((sn - h)[~fixed])
        if lat is None:
            return fixed, lb
        c_fixed = const + float(h.sum()) + float(((sn - h) * x)[fixed].sum())
        return fixed, lattice_bound(lb, c_fixed, *lat)

    fixed, lb_lat = fixing(ub)
    stats = {"lagrangian_bound": lb, "root_incumbent": ub}
    if ub - lb_lat > rel_gap * max(1.0, abs(ub)):
        loc2 = exchange(p, loc, free[~fixed], lb_lat + rel_gap * max(1.0, abs(ub)))
        ub2, ok = _objective_and_feasible(p, loc2)
        if ok and ub2 < ub:
            loc, ub = loc2, ub2
            x = loc[free] == 1
            stats["exchange_incumbent"] = ub
            fixed, lb_lat = fixing(ub)
    stats.update({"lattice_bound": lb_lat, "fixed_nodes": int(fixed.sum()), "residual_nodes": int((~fixed).sum())})
    if ub - lb_lat > rel_gap * max(1.0, abs(ub)):
        return None
    stats["fast_path"] = "knapsack bound (sNIC capacity priced) + objective lattice"
    return loc, max(0.0, ub - lb_lat) / max(1.0, abs(ub)), stats


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
    quick = knapsack_first(p, rel_gap)
    if quick is not None:
        loc, gap, qstats = quick
        return to_result(p, method, "optimal", loc, time.perf_counter() - t0, gap, {**(extra or {}), **qstats})
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
    ev = evaluate_many(p, np.stack(cands), tol=STRICT)  # all roundings in one vectorised evaluation
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
    free = a.free
    cols = X[free, 1:]  # F × K
    r = rc[cols]
    cvec, cconst = m.objective_vector()
    on = best_loc[free][:, None] == np.arange(1, a.K + 1)[None, :]  # incumbent's x per free node

    def fixing(ub: float) -> tuple[np.ndarray, np.ndarray, float]:
        """Nodes fixed against incumbent value ub, their locations, and the
        lattice-rounded bound on every placement that agrees with the fixings."""
        thr = (ub - lb) + FIX_MARGIN * max(1.0, abs(ub)) + FIX_MARGIN
        at0 = r > thr  # raising x_j from 0 costs more than the incumbent can gain
        at1 = -r > thr  # lowering x_j from 1 likewise
        fixed = np.all(at0 | at1, axis=1)
        loc_fixed = np.where(at1.any(axis=1), np.argmax(at1, axis=1) + 1, 0)
        # objective = const + fixed columns (at the incumbent's values: it agrees with every fixing)
        # + residual columns; if s·c_j is an integer for the residual columns, round the bound up
        lat = objective_lattice(cvec[cols[~fixed]].ravel())
        if lat is None:
            return fixed, loc_fixed, lb
        c_fixed = cconst + float((cvec[cols[fixed]] * on[fixed]).sum())
        return fixed, loc_fixed, lattice_bound(lb, c_fixed, *lat)

    fixed, loc_fixed, lb_lat = fixing(ub)
    stats["lattice_bound"] = lb_lat
    tol = rel_gap * max(1.0, abs(ub))
    if ub - lb_lat > tol:  # pairs of moves among the residual nodes towards the rounded bound
        loc2 = exchange(p, best_loc, free[~fixed], lb_lat + tol)
        ub2, ok = _objective_and_feasible(p, loc2)
        if ok and ub2 < ub:
            best_loc, ub = loc2, ub2
            on = best_loc[free][:, None] == np.arange(1, a.K + 1)[None, :]
            stats["exchange_incumbent"] = ub
            fixed, loc_fixed, lb_lat = fixing(ub)
            stats["lattice_bound"] = lb_lat
            tol = rel_gap * max(1.0, abs(ub))
    stats["fixed_nodes"] = int(fixed.sum())
    stats["residual_nodes"] = int((~fixed).sum())
    if ub - lb_lat <= tol:
        return to_result(p, method, "optimal", best_loc, time.perf_counter() - t0,
                         max(0.0, ub - lb_lat) / max(1.0, abs(ub)),
                         {**stats, "fast_path": "reduced-cost fixing + objective lattice bound"})
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
                           {**stats, "fast_path": "reduced-cost fixing + residual MILP"}, compact=large,
                           start=best_loc, lb=lb_lat)


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


def _solve_residual(p, q, t0, time_limit_s, rel_gap, method, stats, compact: bool = False,
                    start: np.ndarray | None = None, lb: float = -np.inf) -> PlacementResult:
    """HiGHS on the residual q, first on the `compact` or plain model for at most
    RESIDUAL_FIRST_S, then (if that did not prove its answer) on the other model
    for the time left. HiGHS 1.16 at gap 1e-9 can stall on one model of a residual
    whose bound already meets the incumbent while the other model finishes at once
    (and `SolverOptions.gap_guard` stops a run whose bounds already meet).
    Every MILP answer is checked against every budget here (STRICT): HiGHS
    accepts rows up to its feasibility tolerance (1e-6), so an answer over a
    budget is refused and the next attempt runs at tolerance TIGHT_FEASIBILITY.
    `start` (a feasible placement) is the answer if no attempt returns a
    better one that meets every budget; `lb` a proven lower bound (for the gap
    then). It is not handed to HiGHS: with it as first incumbent HiGHS 1.16
    failed to close gap 1e-9 on residuals it proves in 0.3 s without it.)"""
    def left() -> float | None:
        return None if time_limit_s is None else max(0.01, time_limit_s - (time.perf_counter() - t0))

    a = p.arrays
    idx = {nm: i for i, nm in enumerate(p.locations)}
    best = None  # (objective, placement, result)
    bound = lb
    tight = False
    for attempt, variant in enumerate((compact, not compact, compact)):
        limit = left()
        if attempt == 0:
            limit = RESIDUAL_FIRST_S if limit is None else min(limit, RESIDUAL_FIRST_S)
        elif limit is not None and limit <= 0.01:
            break
        if attempt == 2 and not tight:
            break
        opts = SolverOptions(time_limit_s=limit, mip_rel_gap=rel_gap, feasibility_tol=TIGHT_FEASIBILITY if tight else None)
        try:
            ri = solve_milp(q, rel_gap=rel_gap, compact=variant, options=opts)
        except UnoInfeasible as e:  # cannot happen when an incumbent exists; the MILP names the budgets otherwise
            raise UnoInfeasible(str(e).replace("(milp)", f"({method})"), e.binding) from None
        if ri.details.get("bound") is not None and np.isfinite(ri.details["bound"]):
            # the residual's dual bound bounds every placement better than the incumbent
            bound = max(bound, float(ri.details["bound"]))
        if ri.objective is not None:
            loc = np.array([idx[ri.assignment[nm]] for nm in a.names], dtype=np.int64)
            obj, ok = _objective_and_feasible(p, loc)
            if not ok:  # over a budget by HiGHS's tolerance: refused
                stats = {**stats, "residual_over_budget": True}
                tight = True
                continue
            if best is None or obj <= best[0]:
                best = (obj, loc, ri)
            if ri.status == "optimal":
                break
        stats = {**stats, "residual_retry": True}
    dt = time.perf_counter() - t0
    if best is not None and best[2].status == "optimal":
        obj, loc, ri = best
        return to_result(p, method, "optimal", loc, dt, ri.gap, {**stats, "residual_bound": ri.details.get("bound")})
    if start is not None:
        obj, ok = _objective_and_feasible(p, start)
        if best is None or obj < best[0]:
            best = (obj, start, None)
    if best is None:
        return to_result(p, method, "time_limit", None, dt, None, stats)
    obj, loc, _ = best
    gap = max(0.0, obj - bound) / max(1.0, abs(obj)) if np.isfinite(bound) else None
    status = "optimal" if gap is not None and gap <= rel_gap else "time_limit"
    return to_result(p, method, status, loc, dt, gap, {**stats, "residual_bound": bound})


