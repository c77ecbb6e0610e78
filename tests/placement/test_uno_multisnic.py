"""UNO exact engine with several sNICs (uno.multisnic): the subset-sum tools
against brute force, the capacity cuts valid (the method's optimum equals brute
force on small graphs with 2 and 3 sNICs, every PCIe mode), and on 100-node
random graphs the answer agrees with an independent HiGHS MILP's incumbent and
bound, and is proven on the seeds the cuts close."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tandem.placement.uno.brute import solve_brute
from tandem.placement.uno.fast import solve_fast
from tandem.placement.uno.generate import random_graph_problem
from tandem.placement.uno.milp import solve_milp
from tandem.placement.uno.model import UnoInfeasible, evaluate
from tandem.placement.uno.multisnic import knapsack, lattice_scale, solve_multisnic, units
from tandem.placement.uno.subsets import max_subset_sum, subset_fill


def _subset_sums(w):
    return {sum(c) for r in range(len(w) + 1) for c in itertools.combinations(w, r)}


@pytest.mark.parametrize("seed", range(6))
def test_subset_sum_tools_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 40, size=int(rng.integers(1, 11)))
    sums = _subset_sums(list(int(x) for x in w))
    for cap in (0, 5, int(w.sum()) // 2, int(w.sum()) - 1, int(w.sum()) + 3):
        best = max(s for s in sums if s <= cap)
        assert max_subset_sum(w, cap) == best
        take = subset_fill(w, cap)
        assert int(w[take].sum()) == best
    v = rng.uniform(0.1, 5.0, size=len(w))
    cap = int(w.sum()) // 2
    take = knapsack(w, v, cap)
    assert int(w[take].sum()) <= cap
    best_v = max(sum(v[list(c)]) for r in range(len(w) + 1) for c in itertools.combinations(range(len(w)), r)
                 if w[list(c)].sum() <= cap)
    assert abs(v[take].sum() - best_v) <= 1e-9
    assert max_subset_sum(w, -1) == -1


def test_lattice_scale_found_for_generator_numbers_and_refused_for_irrational_ones():
    p = random_graph_problem(100, seed=0, snics=2)
    a = p.arrays
    S = lattice_scale(a.N[a.free, 0])
    assert S is not None and S <= 45_000
    assert np.allclose(a.N[a.free, 0] * S, np.round(a.N[a.free, 0] * S), atol=1e-6)
    assert lattice_scale(np.array([np.pi, np.e])) is None
    u, S2, exact = units(np.array([np.pi, np.e, 1.0]), 10.0)
    assert not exact and np.all(u <= np.array([np.pi, np.e, 1.0]) * S2)  # rounded down: cuts stay valid


def _agrees_with_brute_force(p) -> bool:
    """True when p is feasible and the method's proven optimum equals brute force;
    False when both find p infeasible (checked)."""
    try:
        b = solve_brute(p)
    except UnoInfeasible:
        with pytest.raises(UnoInfeasible):
            solve_multisnic(p)
        return False
    r = solve_multisnic(p)
    assert r is not None and r.status == "optimal"
    assert abs(r.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective)), (r.objective, b.objective)
    assert not evaluate(p, r.assignment).violations
    return True


@pytest.mark.parametrize("snics,seed,pcie", [(2, 0, "duplex"), (2, 1, "shared"), (2, 2, "paper"), (2, 3, "duplex"),
                                              (3, 0, "duplex"), (3, 1, "shared"), (3, 2, "duplex")])
def test_multisnic_equals_brute_force_on_small_graphs(snics, seed, pcie):
    n = 20 if snics == 2 else 15
    p = random_graph_problem(n, seed=seed, snics=snics, pcie=pcie)
    assert (snics + 1) ** len(p.arrays.free) <= 5_000_000
    _agrees_with_brute_force(p)


def test_multisnic_equals_brute_force_with_tight_budgets():
    # tight sNIC capacity and PCIe budgets: some graphs have no placement (both must say so)
    feasible = 0
    for seed in range(10, 16):
        feasible += _agrees_with_brute_force(random_graph_problem(20, seed=seed, snics=2, t_frac=0.25, d_frac=0.25))
    assert feasible >= 2


@pytest.mark.parametrize("seed", [3, 4])
def test_two_snics_100_nodes_proven_and_agrees_with_the_milp(seed):
    p = random_graph_problem(100, seed=seed, snics=2)
    r = solve_fast(p, time_limit_s=60)
    assert r.status == "optimal" and r.details.get("large_component")  # packing or the LP with cuts
    assert not r.details["violations"]
    m = solve_milp(p, time_limit_s=20)
    # the MILP's incumbent is never better than the proven optimum, and its bound never above it
    assert r.objective <= m.objective + 1e-9 * max(1.0, abs(m.objective))
    assert m.details["bound"] <= r.objective + 1e-7 * max(1.0, abs(r.objective))
    if m.status == "optimal":
        assert abs(r.objective - m.objective) <= 2e-9 * max(1.0, abs(m.objective))


def test_time_limit_reports_the_certified_gap():
    p = random_graph_problem(100, seed=0, snics=2)
    r = solve_fast(p, time_limit_s=1.0)
    assert r.objective is not None and not r.details["violations"]
    if r.status != "optimal":
        assert r.gap is not None and 0 <= r.gap < 1e-2


def test_above_max_free_the_structural_method_answers(monkeypatch):
    import tandem.placement.uno.multisnic as ms

    p = random_graph_problem(20, seed=0, snics=2)
    monkeypatch.setattr(ms, "MAX_FREE", 3)
    assert ms.solve_multisnic(p) is None
    r = solve_fast(p)
    b = solve_brute(p)
    assert r.status == "optimal" and not r.details.get("multi_snic")
    assert abs(r.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective))


def test_two_resources_and_host_capacity_equal_brute_force():
    from dataclasses import replace

    from tandem.placement.uno.generate import random_problem

    feasible = 0
    for seed in range(6):
        p = random_problem(18, seed=seed, snics=2, resources=("cores", "mem"))
        p = replace(p, host_capacity={"cores": 0.8 * float(p.arrays.H[:, 0].sum())})
        feasible += _agrees_with_brute_force(p)
    assert feasible >= 2
