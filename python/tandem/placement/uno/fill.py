"""Exact multi-sNIC fill search: what closes the gap the packing method leaves
when the PCIe budgets bind (UNO, 2 or more sNICs, one finite capacity
resource, uses on an integer lattice).

The packing method (`uno.packing`) bounds every placement by the aggregate
knapsack L(λ) and fixes by reduced cost: with incumbent UB, a free node with
λ·w_i − h_i > UB − L stays on the host, one with h_i − λ·w_i > UB − L on some
sNIC, in every placement better than UB. What is left — the nodes that go to
some sNIC (which one open) and the nodes whose side is open — is searched
exactly by `tandem._dp.uno_fill_search` (dp-place's `fill`: depth-first over
the nodes, capacities in integer units, PCIe loads checked as they grow, and
the bound λ·(largest subset sums fitting the sNICs' rooms) + Σ max(0, h − λ·w)
on what the nodes left can still save). A complete search that finds nothing
better than UB − gap proves UB; one that finds better placements proves the
last one. Every placement it returns is checked against every budget here.
The search fills the sNICs one after the other; the order changes its work
tenfold and more, so each objective level tries the orders in turn (least
capacity left first) with doubling node budgets, and fixes by reduced cost
below its own top, so no incumbent is needed.

Input: the problem and the packing's result (its incumbent and relaxation).
Output: `Fill` (placement, objective, proven, certified gap, details) or None
when the search does not apply (uses not on a lattice, too many nodes left), or
when it was given no incumbent and found no placement.
Cost: the search is exponential in the worst case; it stops at `seconds`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from tandem._dp import uno_fill_search
from tandem.placement.uno.model import UnoProblem, evaluate_many
from tandem.placement.uno.packing import Packing
from tandem.placement.uno.structural import FIX_MARGIN, STRICT, lattice_bound, objective_lattice

MAX_NODES = 400  # searched nodes (not fixed by reduced cost) above which the search is not tried
# search nodes of each sNIC order's first run per level (≈ 1 CPU-s); the budget doubles each round
ORDER_NODES = 1 << 21


@dataclass
class Fill:
    loc: np.ndarray
    objective: float
    proven: bool
    gap: float | None  # certified relative gap when proven
    details: dict


def snic_orders(caps) -> list[list[int]]:
    """The orders in which the search fills the sNICs, best guess first: the least capacity left
    first (the most constrained; on the 3-sNIC 100-node seeds 1 and 2 and the 2-sNIC seed 9 the
    best of every order), then each other sNIC first with the rest in the same order."""
    first = sorted(range(len(caps)), key=lambda k: (int(caps[k]), k))
    return [[k] + [m for m in first if m != k] for k in first]


@dataclass
class _Fixing:
    """The search's input for placements below one objective: the nodes reduced-cost fixing
    leaves open (`searched`, `host_ok` False: on some sNIC) and one argument tuple per sNIC order."""
    searched: np.ndarray
    host_ok: np.ndarray
    c_all: float  # objective = c_all − Σ host costs of the offloaded searched nodes
    runs: list


def _fixing(p: UnoProblem, kn, below: float, orders: list[list[int]]) -> _Fixing:
    """Reduced-cost fixing for placements whose objective is below `below`: obj(x) ≥ L +
    Σ_i |rc_i|·[x_i off its side], so a node with |rc_i| > below − L keeps its side."""
    a = p.arrays
    free, cost = a.free, a.cost
    thr = (below - float(kn.bound)) + FIX_MARGIN * max(1.0, abs(below)) + FIX_MARGIN
    open_side = kn.rc <= thr
    host_fixed = free[~open_side]
    searched = free[open_side]
    host_ok = kn.rc[open_side] >= -thr  # else the node stays on some sNIC
    loc0 = np.where(a.pin >= 0, a.pin, 0)  # pinned, and host-fixed nodes on the host
    index = np.full(len(a.names), -1, dtype=np.int64)
    index[searched] = np.arange(len(searched))
    c_open = float(cost[a.pin == 0].sum()) + float(cost[host_fixed].sum()) + float(cost[searched[host_ok]].sum())
    c_all = c_open + float(cost[searched[~host_ok]].sum())
    budgets = [float(T) + STRICT * max(1.0, float(T)) for T in a.T]
    zeros = [0.0] * a.K

    def args_for(order: list[int]) -> tuple:
        """The search's input with its sNIC q being `order[q - 1]` (fixed ends renumbered to match)."""
        rank = np.zeros(a.K + 1, dtype=np.int64)
        rank[np.asarray(order) + 1] = np.arange(1, a.K + 1)
        ends_s = np.where(index[a.src] >= 0, index[a.src], -1 - rank[loc0[a.src]])
        ends_d = np.where(index[a.dst] >= 0, index[a.dst], -1 - rank[loc0[a.dst]])
        return ([int(kn.caps[k]) for k in order], [budgets[k] for k in order], p.pcie, zeros, zeros,
                [int(x) for x in kn.units[searched]], [float(x) for x in cost[searched]], host_ok.tolist(),
                ends_s.tolist(), ends_d.tolist(), a.t.tolist(), kn.ratio / kn.scale)

    return _Fixing(searched, host_ok, c_all, [(o, args_for(o)) for o in orders])


def solve_fill(p: UnoProblem, pk: Packing, rel_gap: float, seconds: float | None,
               orders: list[list[int]] | None = None, max_nodes: int | None = None) -> Fill | None:
    """Search for placements better than the packing's incumbent (see module doc). `orders`:
    the sNIC orders to try (default `snic_orders`); `max_nodes`: search nodes per order and level
    (default ORDER_NODES, doubling each round over the orders)."""
    kn = pk.knapsack
    if kn is None or not kn.exact:
        return None
    t0 = time.perf_counter()
    a = p.arrays
    cost = a.cost
    lb = float(kn.bound)
    # without an incumbent, the levels go up to every free node on the host (an objective no
    # placement exceeds); the first placement a level finds is the answer
    ub = float(pk.objective) if pk.loc is not None else float(cost[a.pin <= 0].sum()) + 1.0
    slack = rel_gap * max(1.0, abs(ub))
    orders = snic_orders(kn.caps) if orders is None else [list(o) for o in orders]
    widest = _fixing(p, kn, ub, orders)  # every placement better than ub
    if len(widest.searched) > MAX_NODES:
        return None
    # objective values better than ub lie on a lattice (step 1/s): each level is searched in turn, the
    # first placement found is optimal, and a level refuted lifts the certified bound. A placement
    # below a level's top keeps the sides that top fixes, so each level searches only the nodes its
    # own fixing leaves open (the lattice of the widest fixing holds for every narrower one)
    host_ok = widest.host_ok
    lat = objective_lattice(cost[widest.searched[host_ok]])
    if lat is None and pk.loc is None:  # without levels, a search from no incumbent fixes nothing
        return None
    levels = [ub - slack]
    proven_lb = float(pk.details.get("lattice_bound") or lb)
    if lat is not None:
        sc, dev = lat
        c_open = widest.c_all - float(cost[widest.searched[~host_ok]].sum())
        lo = lattice_bound(lb, c_open, sc, dev)
        proven_lb = max(proven_lb, lo)
        # widths 1, 1, 2, 4 … lattice steps: a level of one step stops at its first placement
        steps, w = [1], 1
        while lo + (steps[-1] - 0.5) / sc < ub - slack:
            steps.append(steps[-1] + w)
            w *= 2
        levels = [lo + (j - 0.5) / sc for j in steps if lo + (j - 0.5) / sc < ub - slack] + [ub - slack]
        widths = np.diff(np.concatenate([[lo - 0.5 / sc], levels])) * sc
    deadline = None if seconds is None else t0 + seconds
    best, complete, nodes, used, fx, searched = None, True, 0, orders[0], widest, []
    for j, top in enumerate(levels):
        # every level below was refuted: in a level one lattice step wide the first placement found is
        # optimal, in a wider one the search improves on it to the end
        one = lat is not None and widths[j] < 1.5
        fx = widest if j + 1 == len(levels) else _fixing(p, kn, top, orders)
        searched.append(len(fx.searched))
        try:
            best, complete, more, used = _level(fx.runs, fx.c_all - top, slack, fx.c_all - top if one else math.inf,
                                                deadline, max_nodes)
        except ValueError:  # its subset-sum tables would exceed dp-place's MAX_WORDS: not tried
            return None
        nodes += more
        if best is not None or not complete:
            break
        if j + 1 < len(levels) and lat is not None:
            proven_lb = max(proven_lb, top + 0.5 / lat[0] - lat[1] / lat[0])  # none below this level's top
    details = {"fill_nodes": int(nodes), "fill_searched": searched, "fill_complete": bool(complete),
               "fill_levels": j + 1, "fill_lattice_step": None if lat is None else 1 / lat[0],
               "fill_s": time.perf_counter() - t0, "fill_lower_bound": proven_lb, "fill_order": used}
    loc, obj = pk.loc, ub
    if best is not None:
        cand = np.where(a.pin >= 0, a.pin, 0).astype(np.int64)
        cand[fx.searched] = np.concatenate([[0], np.asarray(used) + 1])[np.asarray(best)]  # back to sNIC numbers
        ev = evaluate_many(p, cand[None], tol=STRICT)
        if ev["feasible"][0] and float(ev["objective"][0]) < obj:
            loc, obj = cand, float(ev["objective"][0])
        else:  # the search's float sums disagree with the evaluation at a budget's edge: no proof
            complete = False
    if loc is None:  # no incumbent and none found
        return None
    if not complete:
        return Fill(loc, obj, False, None, details)
    gap = min(rel_gap, max(0.0, obj - proven_lb) / max(1.0, abs(obj)))
    details["fast_path"] = "aggregate knapsack bound + exact multi-sNIC fill search"
    return Fill(loc, obj, True, gap, details)


def _level(runs, need: float, improve_by: float, enough: float, deadline: float | None,
           max_nodes: int | None):
    """One objective level: the sNIC orders in turn, each searched up to a node budget that doubles
    each round (ORDER_NODES first, or `max_nodes` once), until one run is complete; the order
    changes the work tenfold and more, never the answer. A placement a run finds raises `need` for
    the runs after it. Returns (best placement or None, complete, search nodes, its sNIC order)."""
    nodes, budget = 0, ORDER_NODES if max_nodes is None else max_nodes
    found, found_in = None, runs[0][0]
    while True:
        for order, args in runs:
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            cap = None if len(runs) == 1 and max_nodes is None else budget
            best, value, complete, more = uno_fill_search(*args, need, improve_by, enough, left, cap)
            nodes += more
            if best is not None:
                found, found_in, need = best, order, value + improve_by
            if complete:
                return found, True, nodes, found_in
            if deadline is not None and time.perf_counter() >= deadline:
                return found, False, nodes, found_in
        if max_nodes is not None:
            return found, False, nodes, found_in
        budget *= 2
