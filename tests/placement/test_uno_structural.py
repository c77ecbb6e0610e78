"""UNO exact engine on general placement graphs (one large free component):
no overflow in the enumeration guard, the structural method (LP dual bound,
reduced-cost fixing, residual solved exactly) agrees with brute force and with
an independent HiGHS MILP at gap 1e-9, and the dual bound is valid for any
multipliers."""

from __future__ import annotations

import numpy as np
import pytest

from tandem.placement.uno.brute import solve_brute
from tandem.placement.uno.fast import build_items, components, solve_fast
from tandem.placement.uno.generate import random_graph_problem
from tandem.placement.uno.milp import build_milp, solve_milp
from tandem.placement.uno.model import UnoInfeasible, evaluate
from tandem.placement.solver import SolverOptions


def test_large_component_does_not_overflow_the_guard():
    p = random_graph_problem(500, seed=0)
    lab = components(p.arrays)
    sizes = np.bincount(np.unique(lab[lab >= 0], return_inverse=True)[1])
    assert sizes.max() >= 276  # 2**276 overflows int64: the old guard passed and numpy failed
    assert build_items(p, lab) is None  # refused, in Python ints
    r = solve_fast(p)
    # proven by the one-sNIC knapsack bound (tried first on large problems) or the structural method
    assert r.status == "optimal" and (r.details.get("large_component") or "knapsack" in r.details["fast_path"])
    assert not r.details["violations"]


@pytest.mark.parametrize("seed", range(4))
def test_structural_equals_brute_force_on_small_general_graphs(seed):
    p = random_graph_problem(24, seed=seed)
    assert len(p.arrays.free) <= 20
    b = solve_brute(p)
    r = solve_fast(p)
    assert r.status == "optimal" and r.details.get("large_component")  # the structural path
    assert abs(r.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective))
    assert not evaluate(p, r.assignment).violations


@pytest.mark.parametrize("n,snics,seed", [(100, 1, 0), (100, 1, 1), (100, 1, 2), (500, 1, 2)])
def test_structural_equals_the_milp_at_gap_1e9(n, snics, seed):
    p = random_graph_problem(n, seed=seed, snics=snics)
    r = solve_fast(p, rel_gap=1e-9)
    m = solve_milp(p, rel_gap=1e-9, time_limit_s=120)
    assert r.status == "optimal" and r.gap is not None and r.gap <= 1e-9
    assert "fixing" in r.details["fast_path"] or "LP bound" in r.details["fast_path"]
    assert not r.details["violations"]
    # the MILP may stop at its time limit with the optimum as incumbent; it can never be better
    assert r.objective <= m.objective + 1e-9 * abs(m.objective)
    if m.status == "optimal":
        assert abs(r.objective - m.objective) <= 1e-9 * abs(m.objective)
    assert r.details["lp_bound"] <= r.objective + 1e-9 * abs(r.objective)


def test_dual_bound_is_valid_for_any_multipliers():
    p = random_graph_problem(60, seed=3)
    m, _ = build_milp(p)
    lp = m.solve(SolverOptions(explain_infeasible=False), relax=True)
    opt = solve_milp(p).objective
    b, r = m.dual_bound(lp.row_duals)
    assert abs(b - lp.objective) <= 1e-7 * abs(lp.objective)
    assert np.allclose(r, lp.col_duals, atol=1e-7)
    rng = np.random.default_rng(0)
    for _ in range(20):  # perturbed (wrong-signed, inexact) multipliers still bound the optimum from below
        y = lp.row_duals + rng.normal(0, 0.3, lp.row_duals.shape)
        assert m.dual_bound(y)[0] <= opt + 1e-9


@pytest.mark.parametrize("pcie", ["duplex", "shared", "paper"])
@pytest.mark.parametrize("snics,n", [(1, 24), (2, 16), (3, 14)])
def test_compact_model_has_the_same_optimum_and_lp_bound(pcie, snics, n):
    """The compact cut model (no cut variable on edges with a pinned end) keeps
    the integer optimum (brute force) and the LP relaxation of the plain model,
    with fewer columns."""
    for seed in range(3):
        p = random_graph_problem(n, seed=seed, snics=snics, pcie=pcie)
        if 3 ** len(p.arrays.free) > 5_000_000 and snics > 1:
            continue
        try:
            b = solve_brute(p)
        except UnoInfeasible:
            with pytest.raises(UnoInfeasible):
                solve_milp(p, rel_gap=0.0, compact=True)
            continue
        c = solve_milp(p, rel_gap=0.0, compact=True)
        assert c.status == "optimal"
        assert abs(c.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective))
        assert not evaluate(p, c.assignment).violations
        plain, _ = build_milp(p)
        comp, _ = build_milp(p, compact=True)
        assert comp.num_vars < plain.num_vars
        lp_p = plain.solve(SolverOptions(explain_infeasible=False), relax=True)
        lp_c = comp.solve(SolverOptions(explain_infeasible=False), relax=True)
        assert abs(lp_p.objective - lp_c.objective) <= 1e-9 * max(1.0, abs(lp_p.objective))
        assert abs(comp.dual_bound(lp_c.row_duals)[0] - lp_c.objective) <= 1e-7 * max(1.0, abs(lp_c.objective))


@pytest.mark.parametrize("seed", range(4))
def test_large_model_path_equals_brute_force(seed, monkeypatch):
    """The path taken for large models (compact LP by interior point without
    presolve) gives the same proven optimum as brute force."""
    import tandem.placement.uno.structural as structural

    monkeypatch.setattr(structural, "LARGE_LP_COLUMNS", 0)
    p = random_graph_problem(24, seed=seed)
    b = solve_brute(p)
    r = solve_fast(p)
    assert r.status == "optimal" and r.details.get("large_component")
    assert abs(r.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective))
    assert not evaluate(p, r.assignment).violations
    assert r.details["lp_bound"] <= b.objective + 1e-9 * max(1.0, abs(b.objective))


def test_residual_milp_is_retried_on_the_other_model(monkeypatch):
    """When the first residual MILP does not prove its answer (HiGHS can stall at
    gap 1e-9), the other model is solved and its proven optimum returned."""
    import dataclasses

    import tandem.placement.uno.structural as structural

    calls = []
    real = structural.solve_milp

    def first_unproven(q, time_limit_s=None, rel_gap=1e-9, options=None, compact=False):
        r = real(q, time_limit_s=time_limit_s, rel_gap=rel_gap, options=options, compact=compact)
        calls.append((compact, options.time_limit_s if options is not None else time_limit_s))
        return dataclasses.replace(r, status="time_limit") if len(calls) == 1 else r

    monkeypatch.setattr(structural, "solve_milp", first_unproven)
    monkeypatch.setattr(structural, "SMALL_RESIDUAL", -1)  # residual by MILP, not by decomposition
    monkeypatch.setattr(structural, "knapsack_first", lambda p, gap: None)  # the LP path
    monkeypatch.setattr(structural, "objective_lattice", lambda c: None)  # no lattice proof
    p = random_graph_problem(24, seed=1)
    b = solve_brute(p)
    r = solve_fast(p)
    assert "residual MILP" in r.details["fast_path"]
    assert [c for c, _ in calls] == [False, True]  # plain model first (small), then the compact one
    assert calls[0][1] == structural.RESIDUAL_FIRST_S
    assert r.status == "optimal" and r.details["residual_retry"]
    assert abs(r.objective - b.objective) <= 1e-9 * max(1.0, abs(b.objective))
