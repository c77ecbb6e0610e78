"""Subset sums on an integer lattice, for filling sNICs exactly (pure).

- `max_subset_sum`, `subset_fill`: the largest subset sum ≤ a capacity and a
  subset reaching it (bitset DP over Python ints, one bit per lattice unit).
- `pick`: a subset whose sum lies in a window, near a wanted sum, with the
  items in preference order (earlier items are taken first); only a core of
  about CORE items around the boundary of the preferred prefix is decided by
  the DP, so the cost does not grow with the number of items.
- `best_change`: the set of signed changes (moves of items in or out) that
  lands a sum in a window and minimises a score of their summed side effects
  (PCIe row changes), met in the middle of two tables of small sets.
Cost: O(items · C / 64) word operations for a DP over capacity C;
O(T log T) for `best_change` with T = Σ_{r ≤ size} C(n, r) table rows.
"""

from __future__ import annotations

import itertools

import numpy as np

CORE = 48  # items whose choice `pick`'s DP decides (the rest follow the preference order)
MAX_CORE_BITS = 1 << 26  # largest DP range (lattice units) `pick` tries before giving up


def _reach(w: np.ndarray, cap: int) -> list[int]:
    """Reachable subset sums ≤ cap after each prefix of `w` (bitsets)."""
    mask = (1 << (cap + 1)) - 1
    hist = [1]
    for x in w:
        b = hist[-1]
        hist.append((b | (b << int(x))) & mask)
    return hist


def _rebuild(w: np.ndarray, hist: list[int], t: int) -> np.ndarray:
    """A subset of w summing to t (t reachable): walking back, item i is taken
    only when the earlier items cannot reach what is left, so earlier items are
    preferred."""
    out = np.zeros(len(w), dtype=bool)
    for i in range(len(w), 0, -1):
        if not (hist[i - 1] >> t) & 1:
            out[i - 1] = True
            t -= int(w[i - 1])
    return out


def max_subset_sum(w: np.ndarray, cap: int) -> int:
    """Largest subset sum of the non-negative integers `w` that is ≤ cap (−1 if cap < 0)."""
    if cap < 0:
        return -1
    if int(w.sum()) <= cap:
        return int(w.sum())
    mask = (1 << (cap + 1)) - 1
    bits = 1
    for x in sorted((int(v) for v in w if v > 0), reverse=True):
        bits = (bits | (bits << x)) & mask
        if bits >> cap & 1:
            return cap
    return bits.bit_length() - 1


def subset_fill(w: np.ndarray, cap: int) -> np.ndarray:
    """A subset of the non-negative integers `w` with the largest sum ≤ cap."""
    if cap < 0 or len(w) == 0:
        return np.zeros(len(w), dtype=bool)
    hist = _reach(w, cap)
    return _rebuild(w, hist, hist[-1].bit_length() - 1)


def _nearest(bits: int, lo: int, hi: int, want: int) -> int | None:
    """The set bit of `bits` in [lo, hi] nearest to `want` (ties: the higher)."""
    if hi < lo:
        return None
    want = min(max(want, lo), hi)
    cand = []
    up = bits >> want
    if up:
        u = want + ((up & -up).bit_length() - 1)
        if u <= hi:
            cand.append(u)
    down = bits & ((1 << (want + 1)) - 1)
    if down:
        d = down.bit_length() - 1
        if d >= lo:
            cand.append(d)
    return min(cand, key=lambda v: (abs(v - want), -v)) if cand else None


def pick(w: np.ndarray, lo: int, hi: int, want: int) -> np.ndarray | None:
    """A subset of the non-negative integers `w` (in preference order) whose sum
    lies in [lo, hi], as near `want` as a subset reaches; None if none is found.
    The leading items that surely fit are taken and the trailing ones left out;
    the DP decides a core of about CORE items around that boundary, doubled
    until the window is reached or every item is in the core (then the answer
    is exact: None means no subset sum lies in the window)."""
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
        if 0 <= cap <= MAX_CORE_BITS and lo - base <= cap:
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
    independent; `score` maps an (m, rows) array to m values) among the sets
    of ≤ 2·size changes met in the middle of two tables of ≤ size changes
    (the empty set included); None if there is none."""
    sw = np.asarray(sw, dtype=np.int64)
    M = _subsets(len(sw), size)
    valid = M >= 0
    Mi = np.maximum(M, 0)
    own = np.where(valid, owner[Mi], -1 - np.arange(size)[None, :])
    srt = np.sort(own, axis=1)
    ok = np.all(srt[:, 1:] != srt[:, :-1], axis=1)  # one change per owner within a table row
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
