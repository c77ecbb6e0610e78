"""Brute-force UNO placement: enumerate every location of every free node
(vectorised in chunks). The reference the exact methods are tested against.
Input: a UnoProblem with (K+1)^free ≤ 5M placements. Cost: O((K+1)^F · E)."""

from __future__ import annotations

import time

import numpy as np

from tandem.placement.result import PlacementResult
from tandem.placement.uno.model import UnoInfeasible, UnoInputError, UnoProblem, evaluate_many, to_result

LIMIT = 5_000_000
CHUNK = 1 << 15


def enumerate_optimum(p: UnoProblem) -> tuple[float, np.ndarray] | None:
    """(optimal objective, one optimal placement) or None if infeasible."""
    a = p.arrays
    free = a.free
    L = a.K + 1
    total = L ** len(free)
    if total > LIMIT:
        raise UnoInputError(f"brute force: {total} placements exceed the limit {LIMIT}")
    base = np.where(a.pin >= 0, a.pin, 0)
    best_obj, best_loc = np.inf, None
    powers = L ** np.arange(len(free), dtype=np.int64)
    for start in range(0, total, CHUNK):
        codes = np.arange(start, min(total, start + CHUNK), dtype=np.int64)
        digits = (codes[:, None] // powers[None, :]) % L
        loc = np.repeat(base[None], len(codes), axis=0)
        loc[:, free] = digits
        ev = evaluate_many(p, loc)
        obj = np.where(ev["feasible"], ev["objective"], np.inf)
        j = int(np.argmin(obj))
        if obj[j] < best_obj - 1e-12:
            best_obj, best_loc = float(obj[j]), loc[j].copy()
    if best_loc is None:
        return None
    return best_obj, best_loc


def solve_brute(p: UnoProblem) -> PlacementResult:
    t0 = time.perf_counter()
    r = enumerate_optimum(p)
    dt = time.perf_counter() - t0
    if r is None:
        raise UnoInfeasible("no placement satisfies the PCIe and sNIC budgets (brute force)", [])
    return to_result(p, "brute", "optimal", r[1], dt, 0.0)
