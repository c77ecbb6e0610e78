"""Split a set of nodes to offload among several sNICs: every sNIC within its
capacity on an integer use lattice, the PCIe budgets met (pure; a heuristic —
the caller checks every answer against every budget).

1. `reference_split`: greedily, the node most attached to one sNIC first,
   each node joins the sNIC its placed neighbours exchange the most traffic
   with (pinned ports and NFs count from the start), among those with room;
   or `lp_split`: the largest share of each node in the LP relaxation of the
   split (all budgets as rows, least total PCIe use), which also tells when
   no split of the set exists at all.
2. `balance`: single moves and pairs between sNICs that lower the overflow
   of the PCIe rows over (1 − margin)·budget, capacity overflow counting alike.
3. `fill`: sNIC by sNIC, the set of moves between it and the later sNICs that
   brings its use into the window leaving those room, with the least predicted
   PCIe overflow (`subsets.best_change`), else a subset sum (`subsets.pick`).
4. `exchange_repair`: exchanges between two sNICs that keep both within
   capacity and lower the exact PCIe overflow.
Input: `UnoProblem`, a placement of every other node, the nodes to split,
their lattice uses and the sNICs' lattice capacities. Output: placements.
Cost: O(E) per move evaluation (`LocalState.deltas`), a few dozen rounds.
"""

from __future__ import annotations

import heapq

import numpy as np

from tandem.placement.solver import InfeasibleError, SolverOptions
from tandem.placement.uno.milp import build_milp
from tandem.placement.uno.model import UnoProblem
from tandem.placement.uno.structural import STRICT, LocalState, _pinned
from tandem.placement.uno.subsets import best_change, pick


def reference_split(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, use: np.ndarray, caps: np.ndarray,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """A location 1..K for each of `nodes` (to be offloaded; `loc` holds every
    other node): the node most attached to one sNIC first (ties: larger use),
    to that sNIC if it has room for the node's use, else to the next most
    attached with room; `rng` adds noise to the order and the ties."""
    a = p.arrays
    K = a.K
    n = len(nodes)
    idx = np.full(len(a.names), -1)
    idx[nodes] = np.arange(n)
    aff = np.zeros((n, K + 1))  # traffic to placed nodes per location (0 = host)
    placed = loc.copy()
    placed[nodes] = -1
    for mine, other in ((a.src, a.dst), (a.dst, a.src)):
        e = np.flatnonzero((idx[mine] >= 0) & (placed[other] >= 0))
        np.add.at(aff, (idx[mine[e]], placed[other[e]]), a.t[e])
    inner = np.flatnonzero((idx[a.src] >= 0) & (idx[a.dst] >= 0))
    nbr: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for e in inner.tolist():
        u, v, t = int(idx[a.src[e]]), int(idx[a.dst[e]]), float(a.t[e])
        nbr[u].append((v, t))
        nbr[v].append((u, t))
    noise = rng.random(n) * 1e-3 if rng is not None else np.zeros(n)
    room = caps.astype(float).copy()
    out = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)

    def key(j: int) -> float:
        return -(float(aff[j, 1:].max()) + float(noise[j]) + 1e-9 * float(use[j]))

    heap = [(key(j), j) for j in range(n)]
    heapq.heapify(heap)
    while heap:
        k0, j = heapq.heappop(heap)
        if done[j] or k0 != key(j):
            continue  # stale entry (its affinity grew since)
        tie = aff[j, 1:] + (noise[j] * rng.random(K) if rng is not None else 0.0)
        k = next((int(k) for k in np.argsort(-tie, kind="stable") if room[k] >= use[j]), int(np.argmax(room)))
        out[j] = k + 1
        room[k] -= use[j]
        done[j] = True
        for v, t in nbr[j]:
            if not done[v]:
                aff[v, k + 1] += t
                heapq.heappush(heap, (key(v), v))
    return out


def lp_split(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, rng: np.random.Generator | None = None
             ) -> np.ndarray | None:
    """A location 1..K for each of `nodes` from the LP relaxation of splitting
    them (every other node fixed as in `loc`) with every sNIC capacity and PCIe
    budget as a row, minimising Σ_links PCIe use / budget: each node to its
    largest LP share (`rng`: noise breaks near-ties). None when even the LP has
    no split: no placement offloads exactly `nodes` within the budgets."""
    a = p.arrays
    K = a.K
    if not len(nodes):
        return np.zeros(0, dtype=np.int64)
    others = np.setdiff1d(a.free, nodes)
    q = _pinned(p, others, loc[others])
    m, X = build_milp(q)
    m.add_rows(np.repeat(np.arange(len(nodes)), K), X[nodes, 1:].ravel(), np.ones(len(nodes) * K), 1.0, 1.0,
               len(nodes), ("on_snic", [a.names[i] for i in nodes]))
    cols, coef = [], []
    for (_, e, k), col in m.keyed_columns(("up", "down")):
        cols.append(col)
        coef.append(a.t[e] / max(float(a.T[k]), 1e-12))
    m.add_objective_terms(np.array(cols, dtype=np.int64), np.array(coef))
    try:
        sol = m.solve(SolverOptions(explain_infeasible=False), relax=True)
    except InfeasibleError:
        return None
    if sol.x is None:
        return None
    share = np.clip(np.nan_to_num(sol.x[X[nodes, 1:]]), 0.0, 1.0)
    if rng is not None:
        share = share + 1e-3 * rng.random(share.shape)
    return np.argmax(share, axis=1) + 1


def balance(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, margin: float = 0.08, rounds: int = 200,
            partners: int = 64) -> np.ndarray:
    """Moves of `nodes` between sNICs (never to or from the host) that lower
    Σ_rows max(0, use − budget)/budget, the PCIe rows' budgets taken as
    (1 − margin)·budget and the capacity rows as they are: the best single
    move or pair of moves first, each checked exactly before it stays."""
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
        cands = []
        s1 = int(np.argmin(single))
        if single[s1] < cur - 1e-12:
            cands.append((float(single[s1]), [(int(node[s1]), int(to[s1]))]))
        first = np.argsort(single, kind="stable")[:partners]  # the most promising first moves
        val = over(use[None, None, :] + dU[first][:, None, :] + dU[None, :, :])
        val[node[first][:, None] == node[None, :]] = np.inf
        for f in np.argsort(val, axis=None, kind="stable")[:4]:
            i, j = divmod(int(f), len(node))
            if val[i, j] < cur - 1e-12:
                cands.append((float(val[i, j]), [(int(node[first[i]]), int(to[first[i]])), (int(node[j]), int(to[j]))]))
        got = _apply_first_better(st, cands, lambda u: float(over(u)), cur)
        if got is None:
            break
        use, cur = got
    return st.loc


def _apply_first_better(st: LocalState, options: list, measure, cur: float) -> tuple[np.ndarray, float] | None:
    """Apply the first of `options` ((predicted value, moves), best first) whose
    exact `measure` of the rows' use falls below `cur`: (use, value), or None
    (nothing applied)."""
    for _, moves in sorted(options, key=lambda o: o[0]):
        saved = st.save()
        st.apply(moves)
        use, _ = st.rows()
        value = measure(use)
        if value < cur - 1e-12:
            return use, value
        st.restore(saved)
    return None


def overflow_score(use: np.ndarray, cap: np.ndarray):
    """Score of predicted row changes d (m × rows): the relative overflow of
    use + d over cap, then the total relative change (small disturbances first)."""
    scale = np.maximum(cap, 1e-9)

    def score(d: np.ndarray) -> np.ndarray:
        return (np.maximum(0.0, use + d - cap) / scale).sum(axis=1) * 1e3 + (np.abs(d) / scale).sum(axis=1) * 1e-3
    return score


def fill(p: UnoProblem, loc: np.ndarray, off: np.ndarray, u: np.ndarray, caps: np.ndarray,
         margin: float = 0.04, candidates: int = 24) -> np.ndarray | None:
    """`loc` (the nodes `off` on sNICs 1..K, possibly over capacity) changed so
    that every sNIC k is within caps[k−1] on the lattice uses `u`: sNIC by sNIC,
    its use is brought into the window that leaves the later sNICs room, by
    the moves between it and them whose predicted PCIe overflow (over
    (1 − margin)·budget) is least (≤ 6, then ≤ 8 moves), else by a subset sum
    over the nodes not yet settled. None if no window can be met."""
    K = p.arrays.K
    loc = loc.copy()
    for k in range(1, K):
        left = off[loc[off] >= k]
        wl = u[left]
        lo, hi = max(0, int(wl.sum()) - int(caps[k:].sum())), min(int(caps[k - 1]), int(wl.sum()))
        base = int(u[left[loc[left] == k]].sum())
        if lo <= base <= hi:
            continue
        st = LocalState(p, loc)
        npc = len(st.budgets)
        use, cap = st.rows()
        node, to, _, dU = st.deltas(left)
        frm = loc[node]
        sel = ((frm == k) & (to > k)) | ((frm > k) & (to == k))
        node, to, frm, dU = node[sel], to[sel], frm[sel], dU[sel, :npc]
        score = overflow_score(use[:npc], cap[:npc] * (1 - margin))
        single = score(dU)
        sw = np.where(frm == k, -u[node], u[node])
        ch = None
        for size, m in ((3, candidates), (4, candidates * 2 // 3)):
            mv = np.concatenate([np.flatnonzero(frm == k)[np.argsort(single[frm == k], kind="stable")[:m]],
                                 np.flatnonzero(frm != k)[np.argsort(single[frm != k], kind="stable")[:m]]])
            ch = best_change(sw[mv], node[mv], dU[mv], lo - base, hi - base, score, size=size)
            if ch is not None:
                loc[node[mv[ch]]] = to[mv[ch]]
                break
        if ch is None:
            order = left[np.argsort(np.where(loc[left] == k, 0, 1), kind="stable")]  # its own nodes first
            take = pick(u[order], lo, hi, base)
            if take is None:
                return None
            loc[order[~take & (loc[order] == k)]] = k + 1
            loc[order[take]] = k
    if int(u[off[loc[off] == K]].sum()) > int(caps[K - 1]):
        return None
    return loc


def exchange_repair(p: UnoProblem, loc: np.ndarray, nodes: np.ndarray, u: np.ndarray, caps: np.ndarray,
                    rounds: int = 12, candidates: int = 20) -> np.ndarray:
    """Exchanges of `nodes` between two sNICs that keep both within capacity on
    the lattice (`u`, `caps`) and lower the PCIe overflow: for each pair of
    sNICs the ≤ 6 moves with the least predicted overflow (`best_change`),
    kept only if the exact overflow falls."""
    K = p.arrays.K
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
        score = overflow_score(use[:npc], cap[:npc])
        single = score(dU)
        slack = caps - np.array([int(u[nodes[st.loc[nodes] == k + 1]].sum()) for k in range(K)])
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
                    options.append((float(score(dU[mv[r]].sum(axis=0)[None])[0]),
                                    [(int(node[i]), int(to[i])) for i in mv[r]]))
        got = _apply_first_better(st, options, lambda u: overflow(u, cap), cur)
        if got is None:
            break
        use, cur = got
    return st.loc
