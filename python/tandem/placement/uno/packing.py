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
fill what is left exactly, by subset sum on the integer use lattice (`pick`);
the offloaded set is split among the sNICs by subset sums too (each sNIC gets
a window that leaves the others room), following a reference split that
keeps heavy traffic inside one sNIC (`reference_split`). Reconstructions
prefer the reference's items and are repeated with shuffled orders until a
packing meets every PCIe budget. Every candidate is evaluated on the whole
problem (every budget, floating-point noise only) before it counts.

If the incumbent meets the lattice bound (within `rel_gap`) it is proven
optimal; otherwise None (the caller's LP method decides): the PCIe budgets
bind, or the packing search found no placement at the bound.
Input: `UnoProblem` with ≥ 2 sNICs, one finite capacity resource, no host
capacity, no incremental data. Output: (placement, certified gap, details).
Cost: O(n log n) for the bound, O(core · C / 64) word operations per subset
sum (core ≤ a few dozen items, C its capacity in lattice units), O(E) per
candidate evaluation.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from tandem.placement.uno.model import UnoProblem, evaluate_many, pcie_load
from tandem.placement.uno.multisnic import lattice_scale
from tandem.placement.uno.structural import FIX_MARGIN, STRICT, LocalState, lattice_bound, objective_lattice

CORE = 48  # items whose choice a subset sum decides (the rest follow the preference order)
MAX_CORE_BITS = 1 << 26  # largest subset-sum range (lattice units) tried before giving up
TRIES = 8  # packings tried at the bound per sNIC beyond the first
TIE = 1e-9  # relative: cost/use ratios this close are one ratio


def _reach(w: np.ndarray, cap: int) -> list[int]:
    """Reachable subset sums ≤ cap after each prefix of `w` (Python-int bitsets)."""
    mask = (1 << (cap + 1)) - 1
    hist = [1]
    for x in w:
        b = hist[-1]
        hist.append((b | (b << int(x))) & mask)
    return hist


def _rebuild(w: np.ndarray, hist: list[int], t: int) -> np.ndarray:
    """A subset of w summing to t (t reachable); the earliest items are taken
    whenever a sum needs them, so the order is a preference."""
    out = np.zeros(len(w), dtype=bool)
    for i in range(len(w), 0, -1):
        if not (hist[i - 1] >> t) & 1:
            out[i - 1] = True
            t -= int(w[i - 1])
    return out


def _nearest(bits: int, lo: int, hi: int, want: int) -> int | None:
    """The set bit of `bits` in [lo, hi] nearest to `want` (ties: the higher)."""
    if hi < lo:
        return None
    want = min(max(want, lo), hi)
    up = bits >> want
    cand = []
    if up:
        u = want + ((up & -up).bit_length() - 1)
        if u <= hi:
            cand.append(u)
    down = bits & ((1 << (want + 1)) - 1)
    if down:
        d = down.bit_length() - 1
        if d >= lo:
            cand.append(d)
    if not cand:
        return None
    return min(cand, key=lambda v: (abs(v - want), -v))


def pick(w: np.ndarray, lo: int, hi: int, want: int) -> np.ndarray | None:
    """A subset of the non-negative integers `w` (in preference order: earlier
    items are taken first) whose sum lies in [lo, hi], as near `want` as a
    subset reaches; None if none is found. The leading items that surely fit
    are taken and the trailing ones left out; the subset sum decides only a
    core of about CORE items around the boundary, doubled until the window is
    reached or every item is in the core (then the answer is exact: None
    means no subset sum lies in the window)."""
    n = len(w)
    w = np.asarray(w, dtype=np.int64)
    total = int(w.sum())
    if lo > total or hi < 0 or hi < lo:
        return None
    cs = np.cumsum(w)
    mid = int(np.searchsorted(cs, min(want, hi), side="right"))  # items 0..mid-1 sum to ≤ want
    half = CORE // 2
    while True:
        i0, i1 = max(0, mid - half), min(n, mid + half)
        base = int(cs[i0 - 1]) if i0 else 0
        core = w[i0:i1]
        cap = min(hi - base, int(core.sum()))
        if cap >= 0 and lo - base <= cap and cap <= MAX_CORE_BITS:
            hist = _reach(core, cap)
            t = _nearest(hist[-1], max(0, lo - base), cap, want - base)
            if t is not None:
                out = np.zeros(n, dtype=bool)
                out[:i0] = True
                out[i0:i1] = _rebuild(core, hist, t)
                return out
        if (i0 == 0 and i1 == n) or cap > MAX_CORE_BITS:
            return None
        half *= 2


def reference_split(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, use: np.ndarray, caps: np.ndarray,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """A location 1..K for each of `nodes` (to be offloaded; `loc` holds every
    other node): greedily, heaviest traffic first, each node joins the sNIC
    its already placed neighbours exchange the most traffic with (pinned
    ports and NFs count from the start), among the sNICs with room left for
    its use; `rng` adds noise to the order."""
    a = p.arrays
    K = a.K
    idx = np.full(len(a.names), -1)
    idx[nodes] = np.arange(len(nodes))
    # traffic of each node to each location (0 = host, 1..K), counting placed neighbours only
    aff = np.zeros((len(nodes), K + 1))
    placed = loc.copy()
    placed[nodes] = -1
    # adjacency among `nodes`
    s_in, d_in = idx[a.src] >= 0, idx[a.dst] >= 0
    for mine, other in ((a.src, a.dst), (a.dst, a.src)):
        e = np.flatnonzero((idx[mine] >= 0) & (placed[other] >= 0))
        np.add.at(aff, (idx[mine[e]], placed[other[e]]), a.t[e])
    both = np.flatnonzero(s_in & d_in)
    nbr = [[] for _ in range(len(nodes))]
    for e in both.tolist():
        u, v, t = int(idx[a.src[e]]), int(idx[a.dst[e]]), float(a.t[e])
        nbr[u].append((v, t))
        nbr[v].append((u, t))
    room = caps.astype(float).copy()
    out = np.zeros(len(nodes), dtype=np.int64)
    done = np.zeros(len(nodes), dtype=bool)
    noise = rng.random(len(nodes)) * 1e-3 if rng is not None else np.zeros(len(nodes))
    total = aff[:, 1:].sum(axis=1)
    for _ in range(len(nodes)):
        # the node most attached to one sNIC (ties: heaviest use first)
        score = np.where(done, -np.inf, aff[:, 1:].max(axis=1) - 1e-6 * total + noise + 1e-9 * use)
        j = int(np.argmax(score))
        pref = np.argsort(-(aff[j, 1:] + noise[j] * rng.random(K) if rng is not None else aff[j, 1:]), kind="stable")
        k = next((int(k) for k in pref if room[k] >= use[j]), int(np.argmax(room)))
        out[j] = k + 1
        room[k] -= use[j]
        done[j] = True
        for v, t in nbr[j]:
            if not done[v]:
                aff[v, k + 1] += t
    return out


def balance(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, keep_capacity: bool, rounds: int = 200,
            partners: int = 64, margin: float = 0.0) -> np.ndarray:
    """Moves of `nodes` between sNICs (never to or from the host, so the objective
    stays) that lower the overflow Σ_rows max(0, use − budget)/budget of the PCIe
    rows; with `keep_capacity` no sNIC may exceed its capacity (single moves and
    swaps of two nodes), else capacity overflow counts like PCIe overflow. Best
    single move or pair first; a pair's effect is checked exactly before it stays.
    `margin`: the PCIe rows count as overflowing above (1 − margin)·budget."""
    st = LocalState(p, loc)
    npc = len(st.budgets)
    use, cap = st.rows()
    cap = cap.copy()
    cap[:npc] *= 1.0 - margin
    scale = np.maximum(np.abs(cap), 1e-9)
    tol = STRICT * np.maximum(1.0, np.abs(cap))

    def over(u: np.ndarray) -> np.ndarray:
        return (np.maximum(0.0, u - cap - tol) / scale).sum(axis=-1)

    cur = float(over(use))
    for _ in range(rounds):
        if cur <= 0:
            break
        node, to, _, dU = st.deltas(nodes)
        ok = to > 0
        node, to, dU = node[ok], to[ok], dU[ok]
        if not len(node):
            break
        single = over(use + dU)
        if keep_capacity:
            single = np.where(np.all(use[npc:] + dU[:, npc:] <= cap[npc:] + tol[npc:], axis=1), single, np.inf)
        cands = []
        s1 = int(np.argmin(single))
        if single[s1] < cur - 1e-12:
            cands.append((float(single[s1]), [(int(node[s1]), int(to[s1]))]))
        # pairs: the most promising first moves against every second move
        first = np.argsort(over(use + dU), kind="stable")[:partners]
        tot = use[None, None, :] + dU[first][:, None, :] + dU[None, :, :]
        val = over(tot)
        val[node[first][:, None] == node[None, :]] = np.inf
        if keep_capacity:
            val[~np.all(tot[:, :, npc:] <= cap[npc:] + tol[npc:], axis=2)] = np.inf
        f2 = np.argsort(val, axis=None, kind="stable")[:4]
        for f in f2:
            i, j = divmod(int(f), len(node))
            if val[i, j] < cur - 1e-12:
                cands.append((float(val[i, j]), [(int(node[first[i]]), int(to[first[i]])), (int(node[j]), int(to[j]))]))
        cands.sort(key=lambda c: c[0])
        moved = False
        for _, mv in cands:
            saved = st.save()
            st.apply(mv)
            u2, _ = st.rows()
            o2 = float(over(u2))
            if o2 < cur - 1e-12 and (not keep_capacity or np.all(u2[npc:] <= cap[npc:] + tol[npc:])):
                use, cur, moved = u2, o2, True
                break
            st.restore(saved)
        if not moved:
            break
    return st.loc


def _subsets(n: int, size: int) -> np.ndarray:
    """Every subset of range(n) with at most `size` members, as rows padded with −1."""
    rows = [np.full((1, size), -1, dtype=np.int64)]
    for r in range(1, min(size, n) + 1):
        combo = np.array(list(itertools.combinations(range(n), r)), dtype=np.int64).reshape(-1, r)
        rows.append(np.concatenate([combo, np.full((len(combo), size - r), -1, dtype=np.int64)], axis=1))
    return np.concatenate(rows)


def best_change(sw: np.ndarray, owner: np.ndarray, dU: np.ndarray, lo: int, hi: int,
                score, size: int = 3, max_pairs: int = 400_000) -> np.ndarray | None:
    """The set of candidate changes (indices) with at most one change per
    `owner`, whose signed uses `sw` sum into [lo, hi], that minimises
    score(Σ dU) (dU: each change's effect on the budget rows, summed as if
    independent) among the sets of ≤ 2·size changes met in the middle of two
    tables of ≤ size changes (the empty set included); None if there is none."""
    sw = np.asarray(sw, dtype=np.int64)
    M = _subsets(len(sw), size)
    valid = M >= 0
    Mi = np.maximum(M, 0)
    own = np.where(valid, owner[Mi], -1 - np.arange(size)[None, :])
    srt = np.sort(own, axis=1)
    ok = np.all(srt[:, 1:] != srt[:, :-1], axis=1)  # one change per owner within a subset
    M, valid, Mi = M[ok], valid[ok], Mi[ok]
    S = np.where(valid, sw[Mi], 0).sum(axis=1)
    D = np.where(valid[:, :, None], dU[Mi], 0.0).sum(axis=1)
    o = np.argsort(S, kind="stable")
    M, S, D = M[o], S[o], D[o]
    a0 = np.searchsorted(S, lo - S, side="left")
    a1 = np.searchsorted(S, hi - S, side="right")
    cnt = np.maximum(0, a1 - a0)
    if not cnt.any():
        return None
    if int(cnt.sum()) > max_pairs:
        cnt = np.minimum(cnt, max(1, max_pairs // max(1, int((cnt > 0).sum()))))
    x = np.repeat(np.arange(len(S)), cnt)
    y = a0[x] + (np.arange(len(x)) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    val = score(D[x] + D[y])
    for f in np.argsort(val, kind="stable")[:2048]:
        m = np.concatenate([M[x[f]], M[y[f]]])
        m = m[m >= 0]
        if len(np.unique(owner[m])) == len(m):
            return m
    return None


def _overflow_score(use: np.ndarray, cap: np.ndarray):
    """Score of predicted row changes: overflow over `cap` (relative), then the
    total relative change (fewer, smaller disturbances first)."""
    scale = np.maximum(cap, 1e-9)

    def score(d: np.ndarray) -> np.ndarray:
        return (np.maximum(0.0, use + d - cap) / scale).sum(axis=1) * 1e3 + (np.abs(d) / scale).sum(axis=1) * 1e-3
    return score


def exchange_repair(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, u: np.ndarray, caps: np.ndarray,
                    rounds: int = 12, candidates: int = 20) -> np.ndarray:
    """Exchanges of `nodes` between two sNICs that keep every sNIC within its
    capacity on the use lattice (`u`, `caps`) and lower the PCIe overflow: for
    each pair of sNICs the set of up to six moves whose net use fits both and
    whose predicted overflow is least (`best_change`); kept only if the exact
    overflow falls."""
    a = p.arrays
    K = a.K
    st = LocalState(p, loc)
    npc = len(st.budgets)

    def overflow(use: np.ndarray, cap: np.ndarray) -> float:
        return float(np.maximum(0.0, use[:npc] - cap[:npc] - STRICT * np.maximum(1.0, cap[:npc])).sum())

    use, cap = st.rows()
    cur = overflow(use, cap)
    for _ in range(rounds):
        if cur <= 0:
            break
        node, to, _, dU = st.deltas(nodes)
        sel = to > 0
        node, to, dU = node[sel], to[sel], dU[sel, :npc]
        frm = st.loc[node]
        score = _overflow_score(use[:npc], cap[:npc])
        single = score(dU)
        fill = np.array([int(u[nodes[st.loc[nodes] == k + 1]].sum()) for k in range(K)])
        slack = caps - fill
        options = []
        for ka in range(1, K + 1):
            for kb in range(ka + 1, K + 1):
                ia = np.flatnonzero((frm == ka) & (to == kb))
                ib = np.flatnonzero((frm == kb) & (to == ka))
                mv = np.concatenate([ia[np.argsort(single[ia], kind="stable")[:candidates]],
                                     ib[np.argsort(single[ib], kind="stable")[:candidates]]])
                sw = np.where(frm[mv] == ka, -u[node[mv]], u[node[mv]])
                r = best_change(sw, node[mv], dU[mv], -int(slack[kb - 1]), int(slack[ka - 1]), score)
                if r is not None and len(r):
                    options.append((float(score(dU[mv[r]].sum(axis=0)[None])[0]), [(int(node[i]), int(to[i])) for i in mv[r]]))
        moved = False
        for _, moves in sorted(options, key=lambda o: o[0]):
            saved = st.save()
            st.apply(moves)
            u2, _ = st.rows()
            o2 = overflow(u2, cap)
            if o2 < cur - 1e-12:
                use, cur, moved = u2, o2, True
                break
            st.restore(saved)
        if not moved:
            break
    return st.loc


class Packer:
    """Placements of p that offload a given set of free nodes, split among the
    sNICs on the integer use lattice (see the module docstring)."""

    def __init__(self, p: UnoProblem, u: np.ndarray, caps: np.ndarray, seed: int = 0):
        self.p, self.u, self.caps = p, u, caps  # u: lattice use per node (all nodes)
        self.a = p.arrays
        self.rng = np.random.default_rng(seed)

    def split(self, off: np.ndarray, ref: np.ndarray, margin: float = 0.04, candidates: int = 24) -> np.ndarray | None:
        """A placement that puts the nodes `off` on the sNICs (each within its
        capacity on the use lattice) and every other free node on the host, near
        the split `ref` (1..K per node of `off`). Each sNIC k in turn is brought
        into the window of total use that leaves the later sNICs room, by the set
        of moves between it and the later sNICs whose predicted PCIe overflow
        (over (1 − margin)·budget) is least (`best_change`, ≤ 6 then ≤ 8 moves),
        else by a subset sum over the nodes still unplaced (`pick`)."""
        a, u = self.a, self.u
        K = a.K
        loc = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
        loc[off] = ref
        for k in range(1, K):
            left = off[loc[off] >= k]
            wl = u[left]
            rest = int(self.caps[k:].sum())
            lo, hi = max(0, int(wl.sum()) - rest), min(int(self.caps[k - 1]), int(wl.sum()))
            base = int(u[left[loc[left] == k]].sum())
            if lo <= base <= hi:
                continue
            st = LocalState(self.p, loc)
            npc = len(st.budgets)
            use, cap = st.rows()
            node, to, _, dU = st.deltas(left)
            frm = loc[node]
            sel = ((frm == k) & (to > k)) | ((frm > k) & (to == k))
            node, to, frm, dU = node[sel], to[sel], frm[sel], dU[sel, :npc]
            score = _overflow_score(use[:npc], cap[:npc] * (1 - margin))
            single = score(dU)
            sw_all = np.where(frm == k, -u[node], u[node])
            ch = None
            for size, m in ((3, candidates), (4, candidates * 2 // 3)):
                mv = np.concatenate([np.flatnonzero(frm == k)[np.argsort(single[frm == k], kind="stable")[:m]],
                                     np.flatnonzero(frm != k)[np.argsort(single[frm != k], kind="stable")[:m]]])
                ch = best_change(sw_all[mv], node[mv], dU[mv], lo - base, hi - base, score, size=size)
                if ch is not None:
                    ch = mv[ch]
                    break
            if ch is not None:
                loc[node[ch]] = to[ch]
            else:
                key = np.where(loc[left] == k, -1.0, 1.0)
                order = left[np.argsort(key, kind="stable")]
                take = pick(u[order], lo, hi, base)
                if take is None:
                    return None
                loc[order[take]] = k
                moved_out = order[~take & (loc[order] == k)]
                loc[moved_out] = k + 1
        if int(u[off[loc[off] == K]].sum()) > int(self.caps[K - 1]):
            return None
        return loc


def move_costs(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """cost[j, k]: PCIe change of moving nodes[j] alone to sNIC k+1 from `loc`
    (0 for its own sNIC), each row's change weighted by 1/(room left in the row)
    so nearly full rows count most."""
    st = LocalState(p, loc)
    npc = len(st.budgets)
    use, cap = st.rows()
    price = 1.0 / np.maximum(cap[:npc] - use[:npc], 1e-3 * np.maximum(cap[:npc], 1e-9))
    node, to, _, dU = st.deltas(nodes)
    idx = np.full(len(p.arrays.names), -1)
    idx[nodes] = np.arange(len(nodes))
    out = np.zeros((len(nodes), p.arrays.K))
    sel = to > 0
    out[idx[node[sel]], to[sel] - 1] = dU[sel, :npc] @ price
    return out


@dataclass
class Packing:
    loc: np.ndarray  # a placement meeting every budget
    objective: float
    proven: bool  # within rel_gap of the bound
    gap: float | None  # certified relative gap when proven
    details: dict


def solve_packing(p: UnoProblem, rel_gap: float, budget_s: float | None = None, tries: int | None = None
                  ) -> Packing | None:
    """The proven optimum (`proven`), else the best placement found (for the
    caller's method to start from), else None (not applicable, or nothing found
    within `budget_s` CPU seconds or `tries` packings at the bound, by default
    TRIES·(K − 1))."""
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
    if S is not None:
        uf = np.round(w * S).astype(np.int64)
    else:
        S = max(1, int(2 ** 40 // max(1.0, float(w.sum()))))
        uf = np.ceil(w * S - 1e-9).astype(np.int64)
    caps = np.array([math.floor((Wk[k] + STRICT * max(1.0, a.D[k, r0])) * S + 1e-9) for k in range(K)], dtype=np.int64)
    u = np.zeros(len(a.names), dtype=np.int64)
    u[free] = uf
    stats: dict = {"aggregate_bound": lb, "critical_ratio": lam}
    packer = Packer(p, u, caps)
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
    rng = packer.rng
    base = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
    attempts = 0

    def packings(target: int, tries: int):
        """Candidate placements offloading the nodes above the ratio and ties of
        total use `target`, each split among the sNICs (None: time is up)."""
        nonlocal attempts
        for t in range(tries):
            if deadline is not None and time.process_time() > deadline:
                return
            attempts += 1
            tie_order = ties[np.argsort(-wt, kind="stable")] if t == 0 else rng.permutation(ties)
            take = pick(u[free[tie_order]], target, target, target)
            if take is None:
                return
            off = np.concatenate([above_nodes, free[tie_order[take]]])
            ref = reference_split(p, base, off, u[off], caps, rng if t else None)
            loc = packer.split(off, ref)
            if loc is not None:
                yield loc
                if not evaluate_many(p, loc[None], tol=STRICT)["feasible"][0]:
                    rl = base.copy()
                    rl[off] = ref
                    ref = balance(p, rl, off, keep_capacity=False, margin=0.08)[off]
                    loc = packer.split(off, ref)
                    if loc is not None:
                        yield exchange_repair(p, loc, off, u, caps)

    # at the bound: ties of the largest reachable total
    for loc in packings(target, TRIES * (K - 1) if tries is None else tries):
        if consider([loc]):
            lb_lat, fixed = bound(ub)
            if ub - lb_lat <= rel_gap * max(1.0, abs(ub)):
                stats.update(lattice_bound=lb_lat, fixed_nodes=int(fixed.sum()), residual_nodes=int((~fixed).sum()),
                             packings=attempts, fast_path="aggregate knapsack bound + objective lattice + sNIC packing")
                return Packing(best_loc, ub, True, max(0.0, ub - lb_lat) / max(1.0, abs(ub)), stats)
    # not at the bound: a feasible placement with fewer ties offloaded (wider windows) for the caller
    for frac in (0.002, 0.01, 0.03):
        if best_loc is not None:
            break
        lower = pick(wt, 0, target - int(frac * caps.sum()), target - int(frac * caps.sum()))
        if lower is None:
            break
        for loc in packings(int(wt[lower].sum()), 2):
            consider([loc])
    stats.update(packings=attempts, lattice_bound=bound(ub)[0] if best_loc is not None else None)
    return Packing(best_loc, ub, False, None, stats) if best_loc is not None else None
