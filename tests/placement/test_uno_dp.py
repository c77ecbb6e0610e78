"""The Pareto dynamic programme over one budget (uno_dp.pareto_dp) equals
enumerating every choice, with ties and near-equal weights on purpose; with an
incumbent it either finds a better choice or proves none beats it by the gap.
At 500 nodes and gap 1e-6 (ties between all DPIs) it proves what the MILP finds."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tandem.placement.uno.dp import pareto_dp


@st.composite
def knapsacks(draw):
    n_cls = draw(st.integers(1, 7))
    classes, w, c = [], [], []
    for _ in range(n_cls):
        k = draw(st.integers(1, 4))
        its = []
        for _ in range(k):
            # small integer grid plus 1e-13 jitter: many exact and near-exact ties
            wi = draw(st.integers(0, 6)) / 2 + draw(st.sampled_from([0.0, 1e-13, -1e-13]))
            ci = draw(st.integers(-6, 6)) / 2
            its.append(len(w))
            w.append(max(0.0, wi)); c.append(ci)
        classes.append(its)
    cap = draw(st.integers(0, 20)) / 2
    return classes, np.array(w), np.array(c), float(cap)


def enumerate_min(classes, w, c, cap):
    best = math.inf
    for ch in itertools.product(*classes):
        if w[list(ch)].sum() <= cap + 1e-9:
            best = min(best, c[list(ch)].sum())
    return best


@settings(max_examples=300, deadline=None)
@given(knapsacks(), st.sampled_from([0.0, 1.5]))
def test_dp_equals_enumeration(ks, relax):
    classes, w, c, cap = ks
    ref = enumerate_min(classes, w, c, cap)
    lb, ch = pareto_dp(classes, w, c, cap + 1e-9, math.inf, 0.0, relax)
    if ref == math.inf:
        assert ch is None and lb == math.inf  # the search takes an infinite bound as proof of infeasibility
        return
    assert math.isclose(lb, ref - relax, abs_tol=1e-9)
    assert w[ch].sum() <= cap + 1e-9 and math.isclose(c[ch].sum(), ref, abs_tol=1e-9)
    assert all(ch[q] in classes[q] for q in range(len(classes)))


@settings(max_examples=300, deadline=None)
@given(knapsacks(), st.sampled_from([0.0, 0.5, 2.0]), st.sampled_from([0.0, 0.25]))
def test_dp_with_incumbent_proves_or_improves(ks, above, tol):
    classes, w, c, cap = ks
    ref = enumerate_min(classes, w, c, cap)
    if ref == math.inf:
        return
    best = ref + above  # an incumbent `above` worse than the optimum
    lb, ch = pareto_dp(classes, w, c, cap + 1e-9, best, tol, 0.0)
    assert lb <= ref + 1e-9  # a valid lower bound
    if above > tol:  # a choice better by more than the gap exists: the DP must find it
        assert ch is not None and w[ch].sum() <= cap + 1e-9 and c[ch].sum() < best - tol
    else:  # proven: nothing beats the incumbent by more than the gap
        assert best - lb <= tol + 1e-9


def test_dp_gives_up_beyond_state_limit(monkeypatch):
    from tandem.placement.uno import dp as uno_dp
    monkeypatch.setattr(uno_dp, "DP_STATES", 3)
    classes = [[2 * j, 2 * j + 1] for j in range(6)]
    w = np.array([0.0, 1.0] * 6) * (1 + np.arange(12) / 7)
    c = -w
    assert pareto_dp(classes, w, c, 100.0, math.inf, 0.0, 0.0) is None


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_gap_1e6_at_500_nodes_is_proven_without_the_milp(seed):
    from tandem.placement.uno.fast import solve_fast
    from tandem.placement.uno.milp import solve_milp
    from tandem.placement.uno.generate import random_problem
    p = random_problem(500, seed=seed)
    r = solve_fast(p, rel_gap=1e-6)
    assert r.status == "optimal" and "MILP" not in r.details["fast_path"], r.details["fast_path"]
    assert r.gap <= 1e-6 and not r.details["violations"]
    m = solve_milp(p, rel_gap=1e-6)
    assert abs(r.objective - m.objective) <= 2e-6 * max(1.0, abs(m.objective))
