"""UNO structural method, proof without the residual MILP: the objective
lattice bound is valid (never above the best value ≥ the bound it rounds), the
knapsack-first Lagrangian proof and the pair/quad exchange give the same
optimum as brute force and the HiGHS MILP, every incumbent meets every budget
with no tolerance beyond float noise, and the HiGHS gap guard ends a MIP
(as proven) only when its own bounds are within the gap."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tandem.placement.solver import Model, SolverOptions, Status, VarType, _gap_guard
from tandem.placement.uno import structural as S
from tandem.placement.uno.brute import solve_brute
from tandem.placement.uno.fast import solve_fast
from tandem.placement.uno.generate import random_graph_problem
from tandem.placement.uno.milp import build_milp, solve_milp, start_vector
from tandem.placement.uno.model import budget_excess, evaluate, placement_dict


def test_lattice_scale_of_paper_ratios_times_decimal_traffic():
    rng = np.random.default_rng(0)
    loads = rng.integers(100, 20_000, 200) / 1000  # Gb/s with three decimals
    coef = -np.concatenate([5 / 9 * loads[:100], 0.4 * loads[100:150], 0.8 * loads[150:]])
    s, dev = S.objective_lattice(coef)
    k = s * coef
    assert np.abs(k - np.round(k)).sum() <= dev < 1e-3
    assert s <= 45_000 * 10  # lcm(1800, 2500) = 45,000 (up to a small factor)
    assert S.objective_lattice(rng.normal(size=50)) is None  # no common denominator


@pytest.mark.parametrize("seed", range(6))
def test_lattice_bound_never_exceeds_the_best_value_above_the_bound(seed):
    """For every binary x, c0 + c·x ≥ lb implies c0 + c·x ≥ lattice_bound(lb):
    checked over all 2^12 points and many lb, with costs k/s in floating point."""
    rng = np.random.default_rng(seed)
    s_true = [900, 1800, 45_000][seed % 3]
    c = rng.integers(-9000, 9000, 12) / s_true
    c0 = float(rng.normal() * 100)
    vals = np.array([c0 + float(c @ np.array(x)) for x in itertools.product((0, 1), repeat=12)])
    lat = S.objective_lattice(c)
    assert lat is not None
    for lb in rng.uniform(vals.min() - 1, vals.max(), 300):
        above = vals[vals >= lb]
        b = S.lattice_bound(float(lb), c0, *lat)
        assert b >= lb
        if len(above):
            assert b <= above.min() + 1e-12 * max(1.0, abs(above.min()))
    # a bound strictly between two lattice values rounds up to the upper one
    v = np.sort(np.unique(np.round((vals - c0) * s_true)))
    hi = float(v[len(v) // 2]) / s_true
    assert abs(S.lattice_bound(c0 + hi - 0.4 / s_true, c0, *lat) - (c0 + hi)) <= 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_knapsack_first_equals_brute_force(seed):
    p = random_graph_problem(22, seed=seed)
    b = solve_brute(p)
    q = S.knapsack_first(p, 1e-9)
    if q is not None:
        loc, gap, details = q
        obj = evaluate(p, placement_dict(p, loc)).objective
        assert abs(obj - b.objective) <= 1e-9 * max(1.0, abs(b.objective))
        assert details["lattice_bound"] <= b.objective + 1e-9 * max(1.0, abs(b.objective))
    r = solve_fast(p)
    assert abs(r.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective))
    assert max(budget_excess(p, r.assignment).values()) <= 1e-12 * 1e4


@pytest.mark.parametrize("seed", range(3))
def test_knapsack_first_declines_when_pcie_binds(seed):
    """With a tight PCIe budget the greedy knapsack incumbent breaks it: the
    quick path must decline (or still be right), and the LP path decides."""
    p = random_graph_problem(200, seed=seed, t_frac=0.25)
    q = S.knapsack_first(p, 1e-9)
    r = solve_fast(p)
    m = solve_milp(p, time_limit_s=60)
    assert not r.details["violations"]
    if q is not None:
        assert abs(evaluate(p, placement_dict(p, q[0])).objective - r.objective) <= 1e-9 * r.objective
    if m.status == "optimal":
        assert abs(r.objective - m.objective) <= 2e-9 * max(1.0, abs(m.objective))


@pytest.mark.parametrize("n,seed,lattice", [(500, 0, False), (500, 3, False), (500, 7, False), (5000, 1, True)])
def test_lattice_proof_on_random_graphs_matches_the_lp_path(n, seed, lattice, monkeypatch):
    """The knapsack-first answer equals the answer of the LP path (LP bound,
    reduced-cost fixing, lattice bound or, without it, the residual MILP) on
    the same graph, and both meet every budget from the recomputed placement
    (5,000 nodes seed 1 is the graph where HiGHS's answer exceeded D by 8.9e-6)."""
    p = random_graph_problem(n, seed=seed)
    r = solve_fast(p)
    assert r.status == "optimal" and "lattice" in r.details["fast_path"]
    monkeypatch.setattr(S, "knapsack_first", lambda p, gap: None)
    if not lattice:
        monkeypatch.setattr(S, "objective_lattice", lambda c: None)  # the residual MILP proves it
    r2 = solve_fast(p)
    assert r2.status == "optimal" and ("lattice" if lattice else "residual") in r2.details["fast_path"]
    assert abs(r.objective - r2.objective) <= 2e-9 * r2.objective
    for x in (r, r2):
        over = budget_excess(p, x.assignment)
        assert all(v <= 1e-12 * 1e4 for v in over.values()), over


def test_residual_answer_over_a_budget_is_refused(monkeypatch):
    """A residual MILP answer that exceeds a budget within HiGHS's tolerance is
    not returned: the next attempt runs at a tight feasibility tolerance."""
    import tandem.placement.uno.structural as st
    p = random_graph_problem(500, seed=0)
    real = st.solve_milp
    calls = []

    def fake(q, **kw):
        calls.append(kw["options"].feasibility_tol)
        r = real(q, **kw)
        if len(calls) == 1:  # pretend the first answer put every free node on the sNIC
            import dataclasses
            r = dataclasses.replace(r, assignment={n: (p.snics[0].name if n in free_names else loc)
                                                   for n, loc in r.assignment.items()})
        return r

    free_names = {p.arrays.names[i] for i in p.arrays.free}
    monkeypatch.setattr(st, "solve_milp", fake)
    monkeypatch.setattr(S, "knapsack_first", lambda p, gap: None)
    monkeypatch.setattr(S, "objective_lattice", lambda c: None)
    r = solve_fast(p)
    assert calls[0] is None and calls[1] == st.TIGHT_FEASIBILITY
    assert r.status == "optimal" and r.details.get("residual_over_budget")
    assert not r.details["violations"]


def test_exchange_keeps_every_budget_and_never_worsens():
    p = random_graph_problem(300, seed=5)
    a = p.arrays
    rng = np.random.default_rng(1)
    loc = np.where(a.pin >= 0, a.pin, 0)
    ok = False
    for _ in range(50):  # a random feasible start with some nodes on the sNIC
        loc = np.where(a.pin >= 0, a.pin, 0)
        loc[a.free] = rng.random(len(a.free)) < 0.2
        ok = S._objective_and_feasible(p, loc)[1]
        if ok:
            break
    assert ok
    before = S._objective_and_feasible(p, loc)[0]
    out = S.exchange(p, loc, a.free, -math.inf, rounds=10)
    after, feasible = S._objective_and_feasible(p, out)
    assert feasible and after < before
    assert max(budget_excess(p, placement_dict(p, out)).values()) <= 1e-9


def test_start_vector_is_a_feasible_point_of_the_model():
    p = random_graph_problem(60, seed=2)
    r = solve_fast(p)
    idx = {n: i for i, n in enumerate(p.locations)}
    loc = np.array([idx[r.assignment[n]] for n in p.arrays.names])
    for compact in (False, True):
        m, X = build_milp(p, compact=compact)
        x = start_vector(p, m, X, loc)
        cost, const = m.objective_vector()
        assert abs(const + cost @ x - r.objective) <= 1e-9 * r.objective
        rows = np.concatenate(m._r_row)
        act = np.zeros(m.num_constraints)
        np.add.at(act, rows, np.concatenate(m._r_val) * x[np.concatenate(m._r_col)])
        lo, up = np.concatenate(m._r_lo), np.concatenate(m._r_up)
        assert np.all(act >= lo - 1e-9) and np.all(act <= up + 1e-9)
        s = solve_milp(p, compact=compact, start=loc)
        assert abs(s.objective - r.objective) <= 1e-9 * r.objective


class _Event:
    def __init__(self, primal, dual):
        self.data_out = type("O", (), {"mip_primal_bound": primal, "mip_dual_bound": dual})()
        self.stopped = False

    def interrupt(self):
        self.stopped = True


@pytest.mark.parametrize("primal,dual,stop", [(100.0, 100.0, True), (100.0, 100.0 - 5e-8, True),
                                              (100.0, 99.9, False), (math.inf, 1.0, False), (1e30, 1.0, False)])
def test_gap_guard_stops_only_within_the_gap(primal, dual, stop):
    hit: dict = {}
    e = _Event(primal, dual)
    _gap_guard(1e-9 * 1000, hit)(e)
    assert e.stopped is stop and bool(hit) is stop


def test_gap_guard_keeps_the_optimum():
    rng = np.random.default_rng(3)
    w = rng.integers(1, 1000, 40).astype(float)
    v = w + rng.integers(0, 5, 40)
    res = []
    for guard in (True, False):
        m = Model("knap")
        x = m.add_vars(range(40), VarType.BINARY)
        m.add_objective_terms(x.indices, -v)
        m.add_rows(np.zeros(40), x.indices, w, -np.inf, float(w.sum() / 3), 1, ["cap"])
        sol = m.solve(SolverOptions(gap_guard=guard))
        assert sol.status is Status.OPTIMAL
        res.append(sol.objective)
    assert res[0] == pytest.approx(res[1], abs=1e-9 * abs(res[1]))


def test_chain_graphs_large_enough_are_proven_by_the_knapsack_bound_first():
    """5,000-node chain graphs (one sNIC): the decomposition's search reaches its
    node limit there, so the knapsack bound is tried first; its answer equals the
    HiGHS MILP's where that proves."""
    from tandem.placement.uno.generate import random_problem

    p = random_problem(5000, seed=1)
    r = solve_fast(p)
    assert r.status == "optimal" and "knapsack bound" in r.details["fast_path"]
    assert "bb_nodes" not in r.details  # no decomposition search ran
    assert not r.details["violations"]
    m = solve_milp(p, time_limit_s=60)
    assert r.objective <= m.objective + 1e-9 * m.objective
    if m.status == "optimal":
        assert abs(r.objective - m.objective) <= 2e-9 * m.objective
