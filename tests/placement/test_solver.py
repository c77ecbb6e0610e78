"""The HiGHS adapter: keyed variables, status mapping, bulk rows, infeasibility naming."""

import numpy as np
import pytest

from tandem.placement.solver import (
    InfeasibleError,
    Model,
    Sense,
    SolverError,
    SolverOptions,
    Status,
    VarType,
    quicksum,
)


def test_knapsack_by_key():
    m = Model("knap", Sense.MAXIMIZE)
    w = {"a": 3, "b": 4, "c": 5, "d": 6, "e": 2}
    v = {"a": 4, "b": 5, "c": 6, "d": 7, "e": 1}
    x = {k: m.binary(("take", k)) for k in w}
    m.add_constraint(quicksum(w[k] * x[k] for k in w) <= 10, "capacity")
    m.set_objective(quicksum(v[k] * x[k] for k in w))
    s = m.solve()
    assert s.status is Status.OPTIMAL and s.gap == 0.0
    assert s.objective == pytest.approx(12.0)
    chosen = {k for k in w if s[("take", k)] > 0.5}
    assert chosen == {"b", "d"}
    assert s.bound == pytest.approx(12.0)


def test_duplicate_key_rejected():
    m = Model()
    m.binary("x")
    with pytest.raises(ValueError, match="duplicate variable key 'x'"):
        m.binary("x")


def test_infeasible_names_conflicting_constraints():
    m = Model("toy")
    a, b, c = m.binary("a"), m.binary("b"), m.binary("c")
    m.add_constraint(a + b >= 2, "need_both")
    m.add_constraint(a + b <= 1, "at_most_one")
    m.add_constraint(c <= 1, "harmless")
    with pytest.raises(InfeasibleError) as ei:
        m.solve()
    assert set(ei.value.constraints) == {"need_both", "at_most_one"}
    assert "need_both" in str(ei.value)


def test_integer_only_infeasibility_found_by_deletion_filter():
    # LP relaxation feasible (x = 0.5) but no integer point.
    m = Model("parity")
    x = m.integer("x", 0, 10)
    y = m.continuous("y", 0, 10)
    m.add_constraint(2 * x == 1, "odd")
    m.add_constraint(y <= 3, "slack")
    with pytest.raises(InfeasibleError) as ei:
        m.solve()
    assert ei.value.constraints == ["odd"]


def test_lp_and_objective_offset():
    m = Model("lp")
    y = m.continuous("y", ub=5)
    m.add_constraint(y >= 1.5, "lo")
    m.set_objective(2 * y + 1)
    s = m.solve()
    assert s.status is Status.OPTIMAL
    assert s.objective == pytest.approx(4.0)
    assert s.value(2 * y + 1) == pytest.approx(4.0)


def test_bulk_rows_match_scalar_rows():
    rng = np.random.default_rng(3)
    n = 30
    profit = rng.integers(1, 20, n).astype(float)
    weight = rng.integers(1, 10, n).astype(float)
    cap = weight.sum() / 3
    m1 = Model("bulk", Sense.MAXIMIZE)
    blk = m1.add_vars([("f", i) for i in range(n)], VarType.BINARY)
    m1.add_objective_terms(blk.indices, profit)
    m1.add_rows(np.zeros(n), blk.indices, weight, -np.inf, cap, 1, ("cap", ["all"]))
    m2 = Model("scalar", Sense.MAXIMIZE)
    xs = [m2.binary(("f", i)) for i in range(n)]
    m2.add_constraint(quicksum(weight[i] * xs[i] for i in range(n)) <= cap, "cap")
    m2.set_objective(quicksum(profit[i] * xs[i] for i in range(n)))
    s1, s2 = m1.solve(), m2.solve()
    assert s1.objective == pytest.approx(s2.objective)
    assert m1.row_name(0) == "cap['all']"
    assert s1.values(blk).round() @ weight <= cap + 1e-9


def test_time_limit_status_is_mapped():
    # A 1 ns limit is over before HiGHS has done anything, every time: the status
    # must be our TIME_LIMIT (not a raw HiGHS code) and there is no incumbent.
    rng = np.random.default_rng(0)
    n = 400
    m = Model("tl", Sense.MAXIMIZE)
    blk = m.add_vars(list(range(n)), VarType.BINARY)
    m.add_objective_terms(blk.indices, rng.random(n))
    k = 40
    rows = np.repeat(np.arange(k), n)
    cols = np.tile(blk.indices, k)
    m.add_rows(rows, cols, rng.random(k * n), -np.inf, n / 8, k, ("knap", list(range(k))))
    s = m.solve(SolverOptions(time_limit_s=1e-9))
    assert s.status is Status.TIME_LIMIT
    assert s.objective is None


def test_options_validated():
    with pytest.raises(ValueError, match="time_limit_s"):
        SolverOptions(time_limit_s=0)


def test_a_column_named_twice_in_a_row_counts_twice():
    # HiGHS refuses a row with a repeated column; the adapter sums the entries
    # (before, HiGHS dropped the row and x reached its bound 10)
    m = Model("dup", Sense.MAXIMIZE)
    x = m.continuous("x", 0, 10)
    m.add_constraint(x + x <= 3, "twice")
    m.set_objective(x)
    assert m.solve().objective == pytest.approx(1.5)
    m2 = Model("dup_bulk", Sense.MAXIMIZE)
    blk = m2.add_vars(["y", "z"], VarType.BINARY)
    m2.add_rows(np.zeros(3), blk.indices[[0, 0, 1]], np.array([1.0, 1.0, 1.0]), -np.inf, 2.0, 1, ["cap"])
    m2.add_objective_terms(blk.indices, np.array([3.0, 2.0]))
    s = m2.solve()
    assert s.objective == pytest.approx(3.0) and s.values(blk).round().tolist() == [1.0, 0.0]


@pytest.mark.parametrize("where", ["column", "row"])
def test_a_model_highs_refuses_raises_instead_of_solving_another(where):
    m = Model("nan", Sense.MAXIMIZE)
    x = m.add_vars(["x"], lb=0.0, ub=np.nan if where == "column" else 5.0)
    if where == "row":
        m.add_rows(np.zeros(1), x.indices, np.ones(1), -np.inf, np.nan, 1, ["r"])
    m.add_objective_terms(x.indices, np.ones(1))
    with pytest.raises(SolverError, match="HiGHS refused"):
        m.solve()
