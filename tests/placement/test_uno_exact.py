"""Every exact UNO method equals brute-force enumeration on small random
instances: k = 1 and 2 sNICs, one or two resources, all PCIe accountings,
host capacity, and the incremental mode (move cost, move budget)."""

import contextlib
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.placement.uno.model import Edge, Incremental, Node, Snic, UnoInfeasible, UnoProblem, evaluate
from tandem.placement.uno.brute import solve_brute
from tandem.placement.uno.fast import solve_fast
from tandem.placement.uno.milp import solve_milp

EXACT = 1e-9


@st.composite
def problems(draw, max_free=12, incremental=False, min_free=1, snics=(1, 2), twins=None):
    """twins: None (independent budgets), "same" (every sNIC has the first one's
    T and D) or "near" (the same, the later ones 1e-6 relative smaller)."""
    K = draw(st.integers(*snics))
    free_max = max_free if K == 1 else min(max_free, 8 if K == 2 else 7)
    R = draw(st.integers(1, 2))
    res = ("cores", "mem")[:R]
    mode = draw(st.sampled_from(["duplex", "shared", "paper"]))
    snics = [f"snic{k}" for k in range(K)]
    nodes = []
    for i in range(draw(st.integers(1, 3))):
        nodes.append(Node(f"eth{i}", "port", pin=draw(st.sampled_from(snics))))
    for i in range(draw(st.integers(1, 3))):
        nodes.append(Node(f"vm{i}", "vm", pin="host"))
    n_free = draw(st.integers(min(min_free, free_max), free_max))
    n_acc = draw(st.integers(0, 1))
    use = st.integers(0, 8).map(float)
    for i in range(n_free + n_acc):
        hu = {r: draw(use) for r in res}
        nu = {r: draw(use) for r in res}
        pin = draw(st.sampled_from(snics)) if i >= n_free else None
        nodes.append(Node(f"nf{i}", "nf", hu, nu, pin))
    names = [n.name for n in nodes]
    n_edges = draw(st.integers(0, 2 * len(names)))
    edges = {}
    for _ in range(n_edges):
        a = draw(st.sampled_from(names))
        b = draw(st.sampled_from(names))
        if a != b:
            # halves create ties on purpose (many equal-cost placements)
            edges[(a, b)] = draw(st.integers(1, 12)) / 2
    total_t = sum(edges.values()) or 1.0
    total_n = {r: sum(n.nic_use.get(r, 0.0) for n in nodes) or 1.0 for r in res}
    sn = []
    for k, s in enumerate(snics):
        T = draw(st.floats(0.0, 1.0)) * total_t
        D = {r: draw(st.floats(0.0, 1.0)) * total_n[r] for r in res}
        T, D = round(T, 3), {r: round(v, 3) for r, v in D.items()}
        if twins and k:
            shrink = 1.0 if twins == "same" else 1.0 - 1e-6
            T, D = sn[0].pcie_gbps * shrink, {r: v * shrink for r, v in sn[0].capacity.items()}
        sn.append(Snic(s, T, D))
    host_cap = {}
    if draw(st.booleans()):
        host_cap = {res[0]: float(draw(st.integers(0, 40)))}
    weights = {r: float(draw(st.integers(0, 3))) for r in res}
    if not any(weights.values()):
        weights[res[0]] = 1.0
    inc = None
    if incremental:
        locs = ["host", *snics]
        cur = {n.name: draw(st.sampled_from(locs)) for n in nodes if n.pin is None}
        inc = Incremental(cur, move_cost=draw(st.sampled_from([0.0, 0.5, 3.0])),
                          move_budget=draw(st.one_of(st.none(), st.integers(0, 3))))
    return UnoProblem(tuple(nodes), tuple(Edge(a, b, t) for (a, b), t in edges.items()), tuple(sn), res,
                      weights, mode, host_cap, inc)


def outcome(fn, p):
    try:
        r = fn(p)
    except UnoInfeasible:
        return None, None
    return r.objective, r


def check_same(p):
    ref, _ = outcome(solve_brute, p)
    for name, fn in (("milp", lambda q: solve_milp(q, rel_gap=EXACT)), ("fast", lambda q: solve_fast(q, rel_gap=EXACT))):
        got, r = outcome(fn, p)
        if ref is None:
            assert got is None, f"{name} found {got} but brute force says infeasible"
            continue
        assert got is not None, f"{name} says infeasible, brute force found {ref}"
        assert math.isclose(got, ref, rel_tol=1e-7, abs_tol=1e-7), f"{name}: {got} != brute force {ref}"
        ev = evaluate(p, r.assignment)
        assert ev.feasible, f"{name} returned a placement violating {ev.violations}"
        assert math.isclose(ev.objective, got, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_exact_methods_equal_brute_force(p):
    check_same(p)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_free=10, incremental=True))
def test_incremental_equals_brute_force_over_reachable_placements(p):
    check_same(p)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_free=16, min_free=14, snics=(1, 1)))
def test_sixteen_placeable_nodes(p):
    check_same(p)


def test_move_budget_zero_keeps_current():
    from tandem.placement.uno.generate import random_problem
    p = random_problem(40, seed=3)
    first = solve_fast(p)
    q = p.with_incremental(Incremental(first.assignment, move_cost=0.0, move_budget=0))
    again = solve_fast(q)
    assert again.assignment == first.assignment
    assert again.details["moves"] == 0


@pytest.mark.parametrize("down,up,mode,T,offloaded", [
    # vm1 -> fw -> vm2 with fw on the sNIC: `down` Gbps enter the sNIC, `up` Gbps leave it.
    (4.0, 2.0, "paper", 3.9, False), (4.0, 2.0, "paper", 4.0, True),  # only host→sNIC counts
    (2.0, 4.0, "paper", 2.0, True),                                     # ... so 4 Gbps upstream is free
    (2.0, 4.0, "duplex", 3.9, False), (2.0, 4.0, "duplex", 4.0, True),  # each direction ≤ T
    (4.0, 2.0, "shared", 5.9, False), (4.0, 2.0, "shared", 6.0, True),  # both directions share T
])
def test_pcie_accounting_counts_the_documented_orientation(down, up, mode, T, offloaded):
    nodes = (Node("vm1", "vm", pin="host"), Node("vm2", "vm", pin="host"), Node("eth0", "port", pin="snic0"),
             Node("fw", "nf", {"cores": 5.0}, {"cores": 1.0}))
    edges = (Edge("vm1", "fw", down), Edge("fw", "vm2", up))
    p = UnoProblem(nodes, edges, (Snic("snic0", T, {"cores": 10.0}),), pcie=mode)
    for solve in (solve_fast, solve_milp, solve_brute):
        r = solve(p)
        assert (r.assignment["fw"] == "snic0") == offloaded, (solve.__name__, mode, T)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_free=10, incremental=True))
def test_branch_and_bound_alone_equals_brute_force(p):
    """With the core enumeration switched off, the depth-first branch-and-bound
    must still prove the optimum (or hand over to the MILP at its node limit)."""
    from tandem.placement.uno import search as uno_search
    saved = uno_search.NODE_LIMIT, uno_search.pareto_dp
    # no dynamic programme at all (neither incumbent nor bound), a generous node limit
    uno_search.NODE_LIMIT, uno_search.pareto_dp = 100_000, lambda *a, **k: None
    try:
        with _mitm(False):
            ref, _ = outcome(solve_brute, p)
            got, r = outcome(lambda q: solve_fast(q, rel_gap=EXACT), p)
    finally:
        uno_search.NODE_LIMIT, uno_search.pareto_dp = saved
    if r is not None:
        assert "DP" not in r.details.get("fast_path", ""), r.details.get("fast_path")
    assert (got is None) == (ref is None), (got, ref)
    if ref is not None:
        assert math.isclose(got, ref, rel_tol=1e-7, abs_tol=1e-7), (got, ref, r.details.get("fast_path"))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_free=10, incremental=True))
def test_knapsack_dp_then_branch_and_bound_equals_brute_force(p):
    """With the core enumeration switched off, the dynamic programme over the
    kept budget runs first (its bound and candidate must be right), then the
    branch-and-bound."""
    with _mitm(False):
        ref, _ = outcome(solve_brute, p)
        got, r = outcome(lambda q: solve_fast(q, rel_gap=EXACT), p)
    assert (got is None) == (ref is None), (got, ref)
    if ref is not None:
        assert math.isclose(got, ref, rel_tol=1e-7, abs_tol=1e-7), (got, ref, r.details.get("fast_path"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_free=8, snics=(2, 3), twins="same"), st.booleans())
def test_identical_snics_equal_brute_force(p, no_mitm):
    """2 and 3 sNICs with the same PCIe budget and capacities (the case whose
    LP multipliers tie across sNICs); with the core enumeration off the DP
    incumbents and branch-and-bound have to prove it."""
    _check_same_with_mitm(p, not no_mitm)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_free=8, snics=(2, 3), twins="near"), st.booleans())
def test_nearly_identical_snics_equal_brute_force(p, no_mitm):
    """As above with the later sNICs 1e-6 smaller: a solver treating them as
    interchangeable would put a load on the smaller one that only fits the first."""
    _check_same_with_mitm(p, not no_mitm)


def _check_same_with_mitm(p, mitm: bool) -> None:
    with _mitm(mitm):
        check_same(p)


@contextlib.contextmanager
def _mitm(on: bool):
    """The fast method's core enumeration (meet in the middle) on or off."""
    from tandem.placement.uno import search as uno_search
    saved = uno_search.MITM_SIDE
    uno_search.MITM_SIDE = saved if on else 1
    try:
        yield
    finally:
        uno_search.MITM_SIDE = saved


# (3 sNICs, seed 1, 60 nodes): our search reaches its node limit and hands over to the
# MILP (a known gap of the fast method); the other two are proven by the DP incumbents.
@pytest.mark.parametrize("snics,seed,own_proof", [(2, 0, True), (2, 3, True), (3, 1, False)])
def test_identical_snics_random_graphs_match_the_milp(snics, seed, own_proof):
    from tandem.placement.uno.generate import random_problem
    p = random_problem(150 if snics == 2 else 60, seed=seed, snics=snics)
    r = solve_fast(p, rel_gap=1e-4, time_limit_s=60)
    m = solve_milp(p, rel_gap=1e-4, time_limit_s=60)
    assert not r.details["violations"]
    assert ("MILP" not in r.details["fast_path"]) == own_proof, r.details["fast_path"]
    assert r.status == "optimal" and m.status == "optimal"
    assert abs(r.objective - m.objective) <= 2e-4 * max(1.0, abs(m.objective))
