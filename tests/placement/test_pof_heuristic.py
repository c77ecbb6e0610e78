"""The paper's Algorithms 1 and 2 take the branches the pseudocode describes."""

from __future__ import annotations

import numpy as np

from tandem.placement.pof.exact import solve_fr
from tandem.placement.pof.heuristic import heuristic_fp, heuristic_fr, kernel_throughput_set
from tandem.placement.pof.model import Flows, FpInstance, FrInstance, PofParams, fr_objective, kernel_throughput_mbps

KR64 = float(kernel_throughput_mbps(64))  # 273 Mbps: any rate above it overloads the kernel path


def test_set_b_is_descending_kernel_throughputs() -> None:
    b = kernel_throughput_set()
    assert np.all(np.diff(b) < 0) and b[0] == kernel_throughput_mbps(1024) and b[-1] == KR64


def test_alg1_takes_the_fastest_overloaded_flows_when_they_exceed_capacity() -> None:
    rates = np.array([5000.0, 9000.0, 6000.0, 8000.0, 7000.0])  # all above b = 4,375 Mbps, all overloaded
    x = heuristic_fp(FpInstance(Flows(rates, np.full(5, KR64)), PofParams(capacity=2)))  # line 18: p2 > M
    assert x.tolist() == [False, True, False, True, False]


def test_alg1_offloads_everything_when_few_overloaded_flows_fit() -> None:
    rates = np.array([5000.0, 9000.0, 6000.0, 8000.0, 7000.0, 100.0])
    x = heuristic_fp(FpInstance(Flows(rates, np.full(6, KR64)), PofParams(capacity=10)))  # line 14: n2 < p2 <= M
    assert x.all()


def test_alg1_fills_with_unloaded_flows_after_overloaded_ones() -> None:
    # at b = 4,375 Mbps: P2 = two overloaded flows, P1 = four flows below their (large) kernel throughput
    rates = np.array([9000.0, 8000.0, 7000.0, 6500.0, 6000.0, 5000.0])
    kr = np.array([KR64, KR64, 1e5, 1e5, 1e5, 1e5])
    x = heuristic_fp(FpInstance(Flows(rates, kr), PofParams(capacity=4)))  # line 23: p1 + p2 > M
    assert x.tolist() == [True, True, True, True, False, False]


def test_alg1_offloads_nothing_when_the_batch_cost_dominates() -> None:
    x = heuristic_fp(FpInstance(Flows(np.array([150.0]), np.array([200.0])), PofParams(capacity=10)))
    assert not x.any()  # lines 30-34: (tau2 - tau1) * 1 < tau_add


def test_alg2_swaps_idle_offloaded_flows_for_overloaded_new_ones() -> None:
    p = PofParams(capacity=8)
    ex = Flows(np.array([5000.0] * 8 + [300.0, 300.0]), np.array([1e5] * 8 + [1e5, 1e5]))
    z = np.array([True] * 8 + [False, False])
    nw = Flows(np.full(8, 6000.0), np.full(8, KR64))
    inst = FrInstance(ex, z, nw, p)
    xe, xw = heuristic_fr(inst)  # line 15: p1 = 8 > n3, q2 = 8 > n3, |N| = 10 > M
    assert not xe.any() and xw.all()
    assert fr_objective(inst, xe, xw) == solve_fr(inst).objective  # here the swap is optimal


def test_alg2_places_new_flows_in_the_room_left() -> None:
    p = PofParams(capacity=8)
    ex = Flows(np.array([5000.0, 5000.0]), np.full(2, KR64))
    nw = Flows(np.array([9000.0, 8000.0, 7000.0, 6000.0]), np.full(4, KR64))
    xe, xw = heuristic_fr(FrInstance(ex, np.array([True, True]), nw, p))  # line 27: |N| < M, Alg. 1 on N^nw
    assert xe.all() and xw.all()
    # three new flows: Alg. 1 finds 3 overloaded flows (not > n2) saving less than tau_add, so it adds none
    xe, xw = heuristic_fr(FrInstance(ex, np.array([True, True]), Flows(nw.rate_mbps[:3], nw.kernel_mbps[:3]), p))
    assert xe.all() and not xw.any()
