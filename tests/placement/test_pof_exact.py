"""POF offload: every exact method (O(n) algorithm, corrected MILP-FP/FR) equals
brute-force enumeration on small random instances; heuristics never beat the
exact optimum; the printed linearisation cannot offload anything."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.placement.pof.exact import solve_fp, solve_fr
from tandem.placement.pof.heuristic import heuristic_fp, heuristic_fr
from tandem.placement.pof.milp import solve_fp_milp, solve_fr_milp
from tandem.placement.pof.model import (Flows, FpInstance, FrInstance, PofParams, fp_objective, fr_objective,
                                        random_fp, random_fr)
from tandem.placement.solver import Status


def _subset_sums(d: np.ndarray) -> np.ndarray:
    """Sum of d over every subset (bit i of the index = item i), by doubling."""
    sums = np.zeros(1)
    for v in d:
        sums = np.concatenate([sums, sums + v])
    return sums


def brute_fp(inst: FpInstance) -> float:
    """Enumerate all 2^n offload sets."""
    p, n = inst.params, len(inst.flows)
    kern = np.where(inst.flows.overloaded(), p.tau3_us, p.tau2_us)
    count = _subset_sums(np.ones(n))
    cost = kern.sum() + _subset_sums(p.tau1_us - kern) + p.tau_add_us * (count > 0)
    return float(np.where(count <= p.capacity, cost, np.inf).min())


def brute_fr(inst: FrInstance) -> float:
    """Enumerate all 2^(|N|+|N^nw|) offload sets (existing flows are the low bits);
    fixed costs as eqs. (21)-(22) define them, or per flow."""
    p = inst.params
    ne, nw = len(inst.existing), len(inst.new)
    ke = np.where(inst.existing.overloaded(), p.tau3_us, p.tau2_us)
    kw = np.where(inst.new.overloaded(), p.tau3_us, p.tau2_us)
    kern = np.concatenate([ke, kw])
    count = _subset_sums(np.ones(ne + nw))
    count_e = _subset_sums(np.concatenate([np.ones(ne), np.zeros(nw)]))
    cost = kern.sum() + _subset_sums(p.tau1_us - kern)
    if p.fixed_costs == "per_flow":
        z = np.concatenate([inst.offloaded, np.zeros(nw, dtype=bool)]).astype(float)
        count_z = _subset_sums(z)  # selected flows that were on the sNIC
        cost = cost + p.tau_add_us * (count > count_z) + p.tau_del_us * (count_z < inst.offloaded.sum())
    else:
        cost = cost + p.tau_add_us * (count > count_e) + p.tau_del_us * (count_e < inst.offloaded.sum())
    return float(np.where(count <= p.capacity, cost, np.inf).min())


# small integer latencies make ties (and so the tie-breaking paths) common
params_st = st.builds(PofParams, tau1_us=st.integers(0, 60), tau2_us=st.integers(0, 100), tau3_us=st.integers(0, 200),
                      tau_add_us=st.integers(0, 300), tau_del_us=st.integers(0, 300), capacity=st.integers(0, 8))


@st.composite
def flows_st(draw, max_n: int) -> Flows:
    n = draw(st.integers(0, max_n))
    over = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return Flows(np.where(over, 2000.0, 100.0), np.full(n, 1000.0))


@st.composite
def fp_st(draw, max_n: int = 20) -> FpInstance:
    return FpInstance(draw(flows_st(max_n)), draw(params_st))


@st.composite
def fr_st(draw, max_n: int = 10) -> FrInstance:
    p = replace(draw(params_st), fixed_costs=draw(st.sampled_from(["paper", "per_flow"])))
    ex = draw(flows_st(max_n))
    z = np.array(draw(st.lists(st.booleans(), min_size=len(ex), max_size=len(ex))), dtype=bool)
    z[np.flatnonzero(z)[p.capacity:]] = False  # the current placement respects capacity
    return FrInstance(ex, z, draw(flows_st(max_n)), p)


FAST = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MILP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(fp_st())
def test_exact_fp_equals_brute_force(inst: FpInstance) -> None:
    a = solve_fp(inst)
    assert a.objective == pytest.approx(brute_fp(inst))
    assert fp_objective(inst, a.offload) == pytest.approx(a.objective)


@FAST
@given(fr_st())
def test_exact_fr_equals_brute_force(inst: FrInstance) -> None:
    a = solve_fr(inst)
    assert a.objective == pytest.approx(brute_fr(inst))
    assert fr_objective(inst, a.offload_existing, a.offload_new) == pytest.approx(a.objective)


@MILP
@given(fp_st(max_n=10))
def test_milp_fp_equals_brute_force(inst: FpInstance) -> None:
    m = solve_fp_milp(inst)
    assert m.status is Status.OPTIMAL
    assert m.objective == pytest.approx(brute_fp(inst))
    assert fp_objective(inst, m.offload) == pytest.approx(m.objective)


@MILP
@given(fr_st(max_n=5))
def test_milp_fr_equals_brute_force(inst: FrInstance) -> None:
    m = solve_fr_milp(inst)
    assert m.status is Status.OPTIMAL
    ne = len(inst.existing)
    assert m.objective == pytest.approx(brute_fr(inst))
    assert fr_objective(inst, m.offload[:ne], m.offload[ne:]) == pytest.approx(m.objective)


@pytest.mark.parametrize("seed", range(4))
def test_exact_matches_brute_force_at_twenty_flows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = PofParams(tau1_us=4, tau2_us=50, tau3_us=700, tau_add_us=900, tau_del_us=1000, capacity=int(rng.integers(1, 12)))
    inst = FpInstance(Flows(rng.uniform(100, 3000, 20), np.full(20, 1000.0)), p)
    assert solve_fp(inst).objective == pytest.approx(brute_fp(inst))
    ex = Flows(rng.uniform(100, 3000, 10), np.full(10, 1000.0))
    z = np.zeros(10, dtype=bool)
    z[: min(p.capacity, 10)] = True
    fr = FrInstance(ex, z, Flows(rng.uniform(100, 3000, 10), np.full(10, 1000.0)), p)
    assert solve_fr(fr).objective == pytest.approx(brute_fr(fr))


@pytest.mark.parametrize("seed", range(3))
def test_heuristics_never_beat_exact_on_paper_instances(seed: int) -> None:
    fp = random_fp(20_000, seed)
    assert fp_objective(fp, heuristic_fp(fp)) >= solve_fp(fp).objective - 1e-6
    fr = random_fr(6_000, 4_000, seed)
    assert fr_objective(fr, *heuristic_fr(fr)) >= solve_fr(fr).objective - 1e-6


def test_milp_matches_exact_on_a_mid_sized_paper_instance() -> None:
    fp = random_fp(2_000, 7, PofParams(capacity=480))
    m = solve_fp_milp(fp)
    assert m.status is Status.OPTIMAL and m.gap == pytest.approx(0.0, abs=1e-9)
    assert m.objective == pytest.approx(solve_fp(fp).objective)
    fr = random_fr(600, 400, 7, PofParams(capacity=480))
    mr = solve_fr_milp(fr)
    assert mr.status is Status.OPTIMAL
    assert mr.objective == pytest.approx(solve_fr(fr).objective)


def test_printed_eq10_forbids_every_offload() -> None:
    """As printed, eq. (10) reads 0 >= eps + f3 for x_i = 1, so the printed
    model keeps every flow in the kernel even when offloading pays."""
    inst = random_fp(200, 3, PofParams(capacity=50))
    printed = solve_fp_milp(inst, printed=True)
    assert printed.status is Status.OPTIMAL
    assert not printed.offload.any()
    assert printed.objective == pytest.approx(fp_objective(inst, np.zeros(200, dtype=bool)))
    assert solve_fp(inst).objective < printed.objective - 1000


def test_per_flow_costs_charge_swaps_that_the_paper_model_gets_for_free() -> None:
    # one idle flow on the sNIC, one overloaded existing flow in the kernel, room for one
    ex = Flows(np.array([100.0, 2000.0]), np.full(2, 1000.0))
    z = np.array([True, False])
    empty = Flows(np.zeros(0), np.zeros(0))
    paper = FrInstance(ex, z, empty, PofParams(capacity=1, tau_add_us=5000, tau_del_us=5000))
    a = solve_fr(paper)  # swap for free: only the count of offloaded existing flows matters
    assert a.offload_existing.tolist() == [False, True] and a.case == "none"
    per_flow = FrInstance(ex, z, empty, replace(paper.params, fixed_costs="per_flow"))
    b = solve_fr(per_flow)  # the swap now costs tau_add + tau_del = 10 ms > 6,996 us saved
    assert b.offload_existing.tolist() == [True, False] and b.case == "none"
    assert fr_objective(per_flow, a.offload_existing, a.offload_new) > b.objective


def test_fr_prefers_keeping_flows_already_offloaded_on_ties() -> None:
    p = PofParams(capacity=2, tau_add_us=10, tau_del_us=10)
    ex = Flows(np.array([2000.0, 2000.0, 2000.0]), np.full(3, 1000.0))
    inst = FrInstance(ex, np.array([False, True, True]), Flows(np.zeros(0), np.zeros(0)), p)
    a = solve_fr(inst)
    assert a.offload_existing.tolist() == [False, True, True]
