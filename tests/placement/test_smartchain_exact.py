"""SmartChain: the ILP (Fig. 6) and the enumeration solver both equal brute-force
enumeration of every (server, position) assignment on random small instances,
including multiple graphs, multiple servers and K > 1 round trips; infeasible
instances are infeasible for all three."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.placement.smartchain.engine import analyze_all, solve
from tandem.placement.smartchain.evaluate import benefit, violations
from tandem.placement.smartchain.model import Edge, Element, ElementGraph, Problem, Server, SmartChainInfeasible

FIELDS = ["a", "b", "a.x", "c"]


@st.composite
def element_st(draw, name: str) -> Element:
    sub = st.lists(st.sampled_from(FIELDS), max_size=2, unique=True)
    return Element(name, float(draw(st.integers(0, 300))), float(draw(st.integers(0, 300))),
                   float(draw(st.sampled_from([100, 200, 400, 1000]))), float(draw(st.sampled_from([100, 200, 400, 1000]))),
                   frozenset(draw(sub)), frozenset(draw(st.lists(st.sampled_from(FIELDS), max_size=1))),
                   draw(st.booleans()), draw(st.integers(0, 9)) == 0, draw(st.booleans()))


@st.composite
def graph_st(draw, n_max: int, name: str = "g") -> ElementGraph:
    n = draw(st.integers(1, n_max))
    elems = tuple(draw(element_st(f"{name}e{i}")) for i in range(n))
    edges: list[tuple[int, int]] = []
    for j in range(1, n):
        parents = draw(st.lists(st.integers(0, j - 1), min_size=1, max_size=2, unique=True))
        edges += [(p, j) for p in parents]
    outdeg = {a: sum(1 for x, _ in edges if x == a) for a, _ in edges}
    g = ElementGraph(name, elems, tuple(Edge(elems[a].name, elems[b].name, 1.0 / outdeg[a]) for a, b in edges),
                     float(draw(st.sampled_from([20, 50, 100]))))
    return g


@st.composite
def problem_st(draw, n_max: int = 10, graphs: int = 1, servers: int = 1, k: int = 1) -> Problem:
    gs = tuple(draw(graph_st(n_max, f"g{i}")) for i in range(draw(st.integers(1, graphs))))
    ss = tuple(Server(f"s{i}", draw(st.sampled_from([0.2, 0.5, 1.0])), draw(st.sampled_from([0.2, 0.5, 1.0])))
               for i in range(draw(st.integers(1, servers))))
    return Problem(gs, ss, float(draw(st.sampled_from([0, 26, 100]))), draw(st.integers(1, k)),
                   draw(st.sampled_from(["upper_bound", "traffic_share"])))


def brute_force(problem: Problem) -> float | None:
    """Best objective over every assignment of every element to (server,
    position), checking C1-C5 and one server per graph directly."""
    deps = analyze_all(problem)
    P, S = problem.num_positions, len(problem.servers)
    per_graph = []
    for g, dg in zip(problem.graphs, deps):
        n = len(g.elements)
        pos = (np.arange(P ** n, dtype=np.int64)[:, None] // P ** np.arange(n, dtype=np.int64)[None, :]) % P
        ok = np.ones(pos.shape[0], dtype=bool)
        for d in dg:
            ok &= pos[:, d.after] >= pos[:, d.before]
        pos = pos[ok]
        nic = pos % 2 == 0
        ld = np.array([problem.load(g, i) for i in range(n)]).reshape(n, 2)
        used = np.zeros(pos.shape[0], dtype=np.int64)
        for c in range(1, P, 2):
            used += (pos == c).any(axis=1)
        val = problem.t_trans_us * (1 - used) + nic @ np.array([e.suitability for e in g.elements])
        per_graph.append((val, nic @ ld[:, 0], (~nic) @ ld[:, 1]))
    best = None
    for servers in itertools.product(range(S), repeat=len(problem.graphs)):
        # combine graph options on each server: a cross product over graphs
        tot = np.zeros(1)
        sl = np.zeros((1, S))
        cl = np.zeros((1, S))
        for gi, (val, ls, lc) in enumerate(per_graph):
            s = servers[gi]
            tot = (tot[:, None] + val[None, :]).reshape(-1)
            add_s = np.zeros((ls.shape[0], S))
            add_s[:, s] = ls
            add_c = np.zeros((lc.shape[0], S))
            add_c[:, s] = lc
            sl = (sl[:, None, :] + add_s[None, :, :]).reshape(-1, S)
            cl = (cl[:, None, :] + add_c[None, :, :]).reshape(-1, S)
        cap_s = np.array([s.snic_capacity for s in problem.servers])
        cap_c = np.array([s.cpu_capacity for s in problem.servers])
        feas = np.all(sl <= cap_s + 1e-9, axis=1) & np.all(cl <= cap_c + 1e-9, axis=1)
        if feas.any():
            v = float(tot[feas].max())
            best = v if best is None else max(best, v)
    return best


def check_optimal(problem: Problem) -> None:
    expect = brute_force(problem)
    for method in ("ilp", "enumeration", "decomposition"):
        if expect is None:
            with pytest.raises(SmartChainInfeasible):
                solve(problem, method)
            continue
        r = solve(problem, method)
        assert r.status == "optimal"
        assert r.objective == pytest.approx(expect, abs=1e-6), method
        # the answer is a real placement of the model and its benefit is what the method claims
        assert r.gap == pytest.approx(0.0, abs=1e-6)


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(problem_st(n_max=10))
def test_one_graph_one_server_matches_brute_force(problem: Problem) -> None:
    check_optimal(problem)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem_st(n_max=6, k=2))
def test_more_round_trips_matches_brute_force(problem: Problem) -> None:
    check_optimal(problem)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem_st(n_max=3, graphs=3, servers=2))
def test_several_graphs_and_servers_match_brute_force(problem: Problem) -> None:
    check_optimal(problem)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem_st(n_max=8))
def test_placements_returned_satisfy_every_constraint(problem: Problem) -> None:
    from tandem.placement.smartchain.enumeration import solve_enumeration
    from tandem.placement.smartchain.ilp import solve_ilp
    from tandem.placement.solver import InfeasibleError

    deps = analyze_all(problem)
    e = solve_enumeration(problem, deps)
    if e is None:  # enumeration found no feasible placement: the ILP must agree
        with pytest.raises(InfeasibleError):
            solve_ilp(problem, deps)
        return
    assert violations(problem, deps, e[0]) == []
    assert benefit(problem, e[0]) == pytest.approx(e[1])
    try:
        a = solve_ilp(problem, deps)
    except InfeasibleError:  # pragma: no cover - would contradict the enumeration
        pytest.fail("ILP infeasible where enumeration found a placement")
    assert violations(problem, deps, a.placement) == []
    assert benefit(problem, a.placement) == pytest.approx(a.objective, abs=1e-6)
