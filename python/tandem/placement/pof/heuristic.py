"""The paper's heuristics: Algorithm 1 (flow placement) and Algorithm 2 (flow
replacement) of OVS-POF-TC §V-B, with n1 = 500, n2 = 3, n3 = 6.

Inputs: `FpInstance` / `FrInstance`, the set B of kernel-path throughputs for
packet sizes {1024, 512, 256, 128, 64} B, and the coefficients. Output: offload
masks (objective evaluated by the caller with the model's own formula).
Cost: one sort by sending rate, then |B| vectorised passes: O(n log n).

Where the printed pseudocode cannot run as written we take the nearest
feasible reading, and say so (also in docs/placement-pof.md):
  * Alg. 1 lines 15 and 32 set N' = N, which breaks eq. (3) when |N| > M^sn;
    we offload all of N when it fits, else its M^sn fastest flows.
  * Alg. 2 lines 16-19 swap P1 flows out for Q2 flows; only P1 flows that are
    currently offloaded can be removed, so P1 is read as P1 ∩ N' (otherwise the
    swap adds flows without freeing room).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tandem.placement.pof.model import FpInstance, Flows, FrInstance, PofParams, kernel_throughput_mbps

PAPER_SIZES_DESC = (1024, 512, 256, 128, 64)


@dataclass(frozen=True)
class HeuristicCoefficients:
    n1: int = 500
    n2: int = 3
    n3: int = 6


def kernel_throughput_set() -> np.ndarray:
    """The set B, in descending order."""
    return kernel_throughput_mbps(np.asarray(PAPER_SIZES_DESC))


def _all_or_fastest(order: np.ndarray, m: int) -> np.ndarray:
    """Reading of "N' = N": every flow if they fit, else the m fastest."""
    return order[:m]


def algorithm1(flows: Flows, p: PofParams, capacity: int | None = None,
               coef: HeuristicCoefficients = HeuristicCoefficients(), order: np.ndarray | None = None) -> np.ndarray:
    """Alg. 1 on `flows`; returns the offload mask. `capacity` overrides M^sn
    (Alg. 2 line 28 calls it with the room that is left)."""
    m = p.capacity if capacity is None else capacity
    n = len(flows)
    x = np.zeros(n, dtype=bool)
    if n == 0 or m <= 0:
        return x
    if order is None:
        order = np.argsort(-flows.rate_mbps, kind="stable")  # line 2
    rate = flows.rate_mbps[order]
    over = (flows.rate_mbps > flows.kernel_mbps)[order]
    p1 = p2 = 0
    for b in kernel_throughput_set():  # line 3
        in_p0 = rate > b  # line 5 (a prefix of the rate order)
        is_p2 = in_p0 & over  # lines 6-12
        is_p1 = in_p0 & ~over
        p1, p2 = int(is_p1.sum()), int(is_p2.sum())  # line 13
        if coef.n2 < p2 <= m or coef.n1 < p1 <= m:  # line 14
            x[_all_or_fastest(order, m)] = True  # line 15
            return x
        if p2 > m:  # line 18
            x[order[np.flatnonzero(is_p2)[:m]]] = True
            return x
        if p1 + p2 > m:  # line 23
            x[order[np.flatnonzero(is_p2)]] = True
            x[order[np.flatnonzero(is_p1)[: m - p2]]] = True
            return x
    # lines 30-34: nothing decided inside the loop
    if (p.tau3_us - p.tau1_us) * p2 + (p.tau2_us - p.tau1_us) * p1 > p.tau_add_us:
        x[_all_or_fastest(order, m)] = True
    return x


def heuristic_fp(inst: FpInstance, coef: HeuristicCoefficients = HeuristicCoefficients()) -> np.ndarray:
    return algorithm1(inst.flows, inst.params, coef=coef)


def heuristic_fr(inst: FrInstance, coef: HeuristicCoefficients = HeuristicCoefficients()) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2; returns (offload mask over existing flows, over new flows)."""
    p = inst.params
    m = p.capacity
    ex, nw = inst.existing, inst.new
    xe = inst.offloaded.copy()  # line 1: N'' = N'
    xw = np.zeros(len(nw), dtype=bool)
    oe = np.argsort(-ex.rate_mbps, kind="stable")  # line 2
    ow = np.argsort(-nw.rate_mbps, kind="stable")
    re_, rw = ex.rate_mbps[oe], nw.rate_mbps[ow]
    over_e = (ex.rate_mbps > ex.kernel_mbps)[oe]
    over_w = (nw.rate_mbps > nw.kernel_mbps)[ow]
    held = inst.offloaded[oe]
    for b in kernel_throughput_set():  # line 3
        p1_idx = np.flatnonzero((re_ > b) & ~over_e & held)  # lines 5-13, P1 ∩ N'
        q2_idx = np.flatnonzero((rw > b) & over_w)  # line 14
        if p1_idx.shape[0] > coef.n3 and q2_idx.shape[0] > coef.n3 and len(ex) > m:  # line 15
            k = min(p1_idx.shape[0], q2_idx.shape[0])
            xe[oe[p1_idx[:k]]] = False  # line 17
            xw[ow[q2_idx[:k]]] = True  # line 18
            return xe, xw
    if not inst.offloaded.any():  # line 25: run Alg. 1 on N ∪ N^nw
        both = Flows(np.concatenate([ex.rate_mbps, nw.rate_mbps]), np.concatenate([ex.kernel_mbps, nw.kernel_mbps]))
        x = algorithm1(both, p, coef=coef)
        return x[: len(ex)], x[len(ex):]
    if len(ex) < m:  # line 27: Alg. 1 on N^nw with the room left
        xw = algorithm1(nw, p, capacity=m - len(ex), coef=coef, order=ow)
    return xe, xw
