"""Exact core solver for the UNO fast method (see uno_fast.py / uno_search.py):
a Pareto-list dynamic programme over the one kept budget.

Input: the alive items per class (one item must be picked per class), their
weight `w` in the kept budget d and their priced cost `c2` = cost + λ·(other
budgets). It returns the exact minimum of Σ c2 subject to Σ w ≤ cap[d] — a
lower bound on the true optimum (the other budgets are priced, not enforced)
— and the choice that reaches it, which the caller checks against every budget.

State: one list of (weight, cost) partial sums per processed class, sorted by
weight, keeping only Pareto-optimal entries (each strictly cheaper than every
lighter one), plus back-pointers to rebuild the choice. The list is bounded by
the number of distinct reachable weights, so ties (many items with the same
cost/weight ratio, as every DPI in UNO graphs) cost nothing extra. A state is
dropped when even the lightest completion overflows the budget, or when the
cheapest completion (budget ignored) cannot beat the incumbent by more than the
gap. Weights within 1e-12·max(1, cap) of each other are merged into one state
with the least weight and least cost of the group — a relaxation, so the bound
stays valid; the caller checks the returned choice against every budget.
Classes are ordered light–heavy–light (by weight spread), so the list is wide
only around the few heavy classes.
Cost: O(Σ_classes states · items · log items); gives up (returns None) beyond
DP_STATES states after a class or DP_WORK states generated in all.
"""

from __future__ import annotations

import math

import numpy as np

DP_STATES = 400_000  # per class
DP_WORK = 20_000_000  # states generated over all classes of one call


def _pareto_items(its, w, c2):
    """A class's items that no other item of the class beats in both weight and
    priced cost (the others can never be in a unique optimum of the DP)."""
    if len(its) < 2:
        return list(its)
    its = sorted(its, key=lambda it: (w[it], c2[it]))
    out, low = [], math.inf
    for it in its:
        if c2[it] < low:
            out.append(it)
            low = c2[it]
    return out


def pareto_dp(classes, w, c2, capd: float, best: float, tol: float, relax: float):
    """Exact min of Σ c2 − relax over one item per class with Σ w ≤ capd.
    `best` is the incumbent's true cost (inf if none) and `tol` the absolute
    gap to prove. Returns (lower bound, choice or None): the bound is the DP
    optimum, or `best − tol` when every state was pruned against the incumbent
    (no choice beats it by more than the gap). None if the state list grows
    beyond DP_STATES or the work beyond DP_WORK."""
    ncomp = len(classes)
    classes = [_pareto_items(its, w, c2) for its in classes]
    multi = [q for q in range(ncomp) if len(classes[q]) > 1]
    single = [q for q in range(ncomp) if len(classes[q]) == 1]
    choice = np.array([classes[q][0] for q in range(ncomp)], dtype=np.int64)
    W0 = float(w[choice[single]].sum()) if single else 0.0
    C0 = float(c2[choice[single]].sum()) if single else 0.0
    # light classes at both ends, heavy ones in the middle: few states early (the
    # prefix sums span little) and late (the weight window left for the suffix is
    # narrow); the state list is widest only around the few heavy classes
    spread = np.array([max(w[it] for it in classes[q]) - min(w[it] for it in classes[q]) for q in multi])
    asc = [multi[i] for i in np.argsort(spread, kind="stable")]
    order = asc[0::2] + asc[1::2][::-1]
    # suffix sums of each class's least weight and least priced cost
    rest_w = np.concatenate([np.cumsum([min(w[it] for it in classes[q]) for q in order][::-1])[::-1], [0.0]])
    rest_c = np.concatenate([np.cumsum([min(c2[it] for it in classes[q]) for q in order][::-1])[::-1], [0.0]])
    eps = 1e-12 * max(1.0, abs(capd))
    if W0 + rest_w[0] > capd + eps:
        return math.inf, None  # even the lightest choice overflows: no choice at all
    W = np.array([W0])
    C = np.array([C0])
    layers = []  # (parent index, item) per state, per processed class
    prune = math.isfinite(best)
    work = 0
    for j, q in enumerate(order):
        its = np.array(classes[q], dtype=np.int64)
        S = len(W)
        work += S * len(its)
        if work > DP_WORK:
            return None
        # k blocks (one per item), each sorted by weight because W is; state id =
        # block · S + parent
        Wn = (w[its][:, None] + W[None, :]).ravel()
        Cn = (c2[its][:, None] + C[None, :]).ravel()
        keep = Wn <= capd - rest_w[j + 1] + eps  # the lightest completion must fit
        if prune:  # the cheapest completion (budget ignored) must beat the incumbent
            keep &= Cn < best - tol + relax - rest_c[j + 1]
        ids = np.flatnonzero(keep)
        if not len(ids):
            return best - tol, None
        Wn = Wn[ids]
        o = np.argsort(Wn, kind="stable")  # merges the k sorted blocks
        ids, Wn = ids[o], Wn[o]
        Cn = Cn[ids]
        # Pareto: keep a state only if it is strictly cheaper than every lighter one
        prev_min = np.empty(len(Cn))
        prev_min[0] = np.inf
        np.minimum.accumulate(Cn[:-1], out=prev_min[1:])
        sel = np.flatnonzero(Cn < prev_min)
        Wn, Cn, ids = Wn[sel], Cn[sel], ids[sel]
        # weights within eps of the previous one form a run; a run becomes one state
        # with its least weight (the first) and least cost (the last, as costs fall
        # along the list) — a relaxation: it never excludes a completion
        newrun = np.empty(len(Wn), dtype=bool)
        newrun[0] = True
        np.greater(Wn[1:] - Wn[:-1], eps, out=newrun[1:])
        if newrun.all():
            sel = np.arange(len(Wn))
            W, C = Wn, Cn
        else:
            first = np.flatnonzero(newrun)
            sel = np.concatenate([first[1:] - 1, [len(Wn) - 1]])
            W, C = Wn[first], Cn[sel]
        if len(sel) > DP_STATES:
            return None
        ids = ids[sel]
        layers.append((ids, S, its, q))
    s = int(np.argmin(C))
    lb = float(C[s]) - relax
    for ids, S, its, q in reversed(layers):
        blk, s = divmod(int(ids[s]), S)
        choice[q] = its[blk]
    if prune and lb >= best - tol:
        return best - tol, choice
    return lb, choice
