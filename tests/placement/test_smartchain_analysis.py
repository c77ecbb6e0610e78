"""SmartChain dependency analyzer, strawmen, interpretation, input errors and
infeasibility messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.placement.smartchain.engine import analyze_all, solve, solve_file
from tandem.placement.smartchain.deps import action_conflict, analyze
from tandem.placement.smartchain.io import load_problem
from tandem.placement.smartchain.model import (Edge, Element, ElementGraph, Problem, Server, SmartChainError,
                                               SmartChainInfeasible)


def el(name: str, **kw) -> Element:
    base = dict(t_cpu_us=10.0, t_snic_us=5.0, cap_cpu_mbps=1000.0, cap_snic_mbps=1000.0)
    base.update(kw)
    return Element(name, **base)


def chain(*elems: Element, throughput: float = 100.0, deps: tuple = ()) -> ElementGraph:
    edges = tuple(Edge(a.name, b.name, 1.0) for a, b in zip(elems, elems[1:]))
    return ElementGraph("g", elems, edges, throughput, deps)


def pairs(g: ElementGraph) -> set[tuple[str, str, str]]:
    return {(g.elements[d.before].name, g.elements[d.after].name, d.kind) for d in analyze(g)}


def test_action_rules() -> None:
    w = el("nat", writes=frozenset({"ip.dst"}))
    r = el("fw", reads=frozenset({"ip"}))
    assert "read-after-write on ip.dst" == action_conflict(w, r)
    assert "write-after-read" in action_conflict(r, w)
    assert "write-after-write" in action_conflict(w, el("lb", writes=frozenset({"ip.dst"})))
    assert action_conflict(r, el("mon", reads=frozenset({"ip.src"}))) is None  # two readers commute
    assert action_conflict(el("d1", drops=True), el("d2", drops=True)) is None
    assert "stateful" in action_conflict(el("acl", drops=True), el("count", stateful=True))
    assert "stateful" in action_conflict(el("count", stateful=True), el("acl", drops=True))
    assert "headers" in action_conflict(el("vx", encap=True), r)
    assert action_conflict(el("vx", encap=True), el("pure")) is None


def test_branch_dependencies_reach_every_descendant() -> None:
    elems = (el("cls"), el("a"), el("b"), el("c"))
    g = ElementGraph("g", elems, (Edge("cls", "a", 0.5), Edge("cls", "b", 0.5), Edge("a", "c", 1.0)), 100.0)
    assert pairs(g) == {("cls", "a", "branch"), ("cls", "b", "branch"), ("cls", "c", "branch")}
    assert g.traffic_share == (1.0, 0.5, 0.5, 0.5)


def test_elements_on_different_branches_never_depend() -> None:
    elems = (el("cls"), el("w", writes=frozenset({"x"})), el("r", reads=frozenset({"x"})))
    g = ElementGraph("g", elems, (Edge("cls", "w", 0.5), Edge("cls", "r", 0.5)), 100.0)
    assert ("w", "r", "action") not in pairs(g)


def test_dependency_cycle_is_named() -> None:
    g = chain(el("a"), el("b"), el("c"), deps=(("c", "a"),))
    with pytest.raises(SmartChainInfeasible) as e:
        analyze(g)
    assert e.value.constraint == "dependency cycle c -> a -> c"
    assert "dependencies[0] says c before a" in str(e.value)


def test_edge_cycle_is_named() -> None:
    elems = (el("a"), el("b"), el("c"))
    g = ElementGraph("g", elems, (Edge("a", "b", 1.0), Edge("b", "c", 1.0), Edge("c", "b", 1.0)), 100.0)
    with pytest.raises(SmartChainInfeasible) as e:
        analyze(g)
    assert e.value.constraint == "graph cycle b -> c -> b"


def test_fig5_strawmen_and_smartchain() -> None:
    """Fig. 5's story: sequential puts the I/O-heavy logger on the sNIC;
    suitability-greedy bounces the packet between devices; SmartChain groups
    the suitable elements and needs one round trip."""
    from tandem.placement.smartchain.model import TABLE_I

    def kind(name: str, k: str) -> Element:
        t = TABLE_I[k]
        return Element(name, t["t_cpu_us"], t["t_snic_us"], t["cap_cpu_mbps"], t["cap_snic_mbps"], kind=k)

    g = chain(kind("cls", "header_classifier"), kind("log", "logger"), kind("lb", "load_balancer"),
              kind("mon", "monitor"), kind("alert", "alert"), throughput=100.0)
    p = Problem((g,), (Server("s", snic_capacity=0.08, cpu_capacity=1.0),))
    seq = solve(p, "sequential")
    assert seq.assignment["g/log"] == "S_ig"  # the logger lands on the sNIC
    greedy = solve(p, "greedy")
    assert greedy.details["round_trips"]["g"] == 2  # cls, lb, alert on the sNIC; log and mon between
    best = solve(p, "ilp")
    assert best.details["round_trips"]["g"] == 1
    on_snic = {k: v != "C" for k, v in best.assignment.items()}
    assert on_snic == {"g/cls": True, "g/log": False, "g/lb": True, "g/mon": False, "g/alert": True}
    assert best.objective == pytest.approx(14 + 14 + 13)  # one round trip costs what "all on CPU" costs
    assert best.objective > greedy.objective and best.objective > seq.objective
    (path,) = best.details["partitioned"][0]["paths"]
    assert path["pcie_crossings"] == 2 and path["traffic_fraction"] == 1.0
    cpu_at = [i for i, d in enumerate(path["devices"]) if d == "cpu"]
    assert [path["elements"][i] for i in cpu_at] == ["log", "mon"] and cpu_at[1] == cpu_at[0] + 1  # one CPU visit
    assert [x["pcie_crossings"] for x in solve(p, "greedy").details["partitioned"][0]["paths"]] == [4]


def test_capacity_too_small_names_c2() -> None:
    g = chain(el("a", cap_cpu_mbps=10.0), el("b", cap_cpu_mbps=10.0), throughput=100.0)
    p = Problem((g,), (Server("s0", snic_capacity=0.15, cpu_capacity=1.0),))
    for method in ("ilp", "enumeration"):
        with pytest.raises(SmartChainInfeasible) as e:
            solve(p, method)
        assert e.value.constraint == "C2 sNIC capacity"


def test_element_that_fits_nowhere_is_named() -> None:
    g = chain(el("a"), el("huge", cap_cpu_mbps=10.0, cap_snic_mbps=10.0))
    with pytest.raises(SmartChainInfeasible, match=r"g/huge fits nowhere"):
        solve(Problem((g,)), "ilp")


def test_round_trip_limit_is_named() -> None:
    # sNIC-only a, c around CPU-only b, then CPU-only d after c: needs two round trips
    a, c = el("a", cap_cpu_mbps=1.0), el("c", cap_cpu_mbps=1.0)
    b, d = el("b", cap_snic_mbps=1.0), el("d", cap_snic_mbps=1.0)
    g = chain(a, b, c, d, deps=(("a", "b"), ("b", "c"), ("c", "d")))
    with pytest.raises(SmartChainInfeasible) as e:
        solve(Problem((g,)), "ilp")
    assert e.value.constraint.startswith("round-trip limit")
    two = solve(Problem((g,), max_round_trips=2), "ilp")
    assert two.assignment == {"g/a": "S_ig", "g/b": "C1", "g/c": "S1", "g/d": "C2"}


YAML = """\
t_trans_us: 26
graphs:
  - name: ids
    throughput_mbps: 150
    elements:
      - {name: cls, kind: header_classifier}
      - {name: pa, kind: payload_analyzer}
      - {name: log, kind: logger, measured: {t_cpu_us: [14, 16], t_snic_us: [240, 250]}}
      - {name: mon, kind: monitor}
      - {name: alert, kind: alert}
    edges:
      - {from: cls, to: pa, fraction: 0.25}
      - {from: cls, to: mon}
      - [pa, alert]
      - [pa, log]
"""


def test_file_input_and_methods(tmp_path: Path) -> None:
    f = tmp_path / "ids.yaml"
    f.write_text(YAML)
    prob = load_problem(f)
    g = prob.graphs[0]
    assert g.traffic_share == (1.0, 0.25, 0.125, 0.75, 0.125)
    assert g.elements[2].t_snic_us == 245.0
    results = {m: solve_file(f, m) for m in ("ilp", "enumeration", "sequential", "greedy")}
    assert results["ilp"].objective == pytest.approx(results["enumeration"].objective)
    assert all(results["ilp"].objective >= r.objective for r in results.values())
    kinds = {(d["before"], d["after"]): d["kind"] for d in results["ilp"].details["dependencies"]}
    assert kinds[("pa", "alert")] == "branch" and kinds[("cls", "mon")] == "branch"
    assert ("mon", "cls") not in kinds


@pytest.mark.parametrize("text, where, words", [
    ("graphs:\n  - {name: g, throughput_mbps: 0, elements: [{name: a, kind: monitor}]}\n", ":2:",
     ["graphs[0].throughput_mbps", "greater than 0"]),
    ("graphs:\n  - name: g\n    throughput_mbps: 5\n    elements:\n      - {name: a, kind: mon}\n", ":5:",
     ["graphs[0].elements[0].kind", "unknown kind 'mon'"]),
    ("graphs:\n  - name: g\n    throughput_mbps: 5\n    elements:\n      - {name: a, t_cpu_us: 3}\n", ":5:",
     ["graphs[0].elements[0]", "needs t_snic_us, cap_cpu_mbps, cap_snic_mbps"]),
    ("graphs:\n  - name: g\n    throughput_mbps: 5\n    elements:\n      - {name: a, kind: monitor}\n"
     "      - {name: b, kind: monitor}\n      - {name: c, kind: monitor}\n"
     "    edges:\n      - {from: a, to: b, fraction: 0.5}\n      - {from: a, to: c, fraction: 0.6}\n", ":2:",
     ["graphs[0]", "leaving 'a' sum to 1.1"]),
    ("graphs:\n  - name: g\n    throughput_mbps: 5\n    elements:\n      - {name: a, kind: monitor}\n"
     "    edges:\n      - [a, z]\n", ":2:", ["edges[0] names unknown element 'z'"]),
])
def test_input_errors_name_the_place(tmp_path: Path, text: str, where: str, words: list[str]) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(SmartChainError) as e:
        solve_file(f)
    assert str(e.value).startswith(str(f) + where)
    for w in words:
        assert w in str(e.value)


def test_cycle_in_file_is_reported_without_traceback(tmp_path: Path) -> None:
    f = tmp_path / "cyc.yaml"
    f.write_text("graphs:\n  - name: g\n    throughput_mbps: 5\n    elements:\n      - {name: a, kind: monitor}\n"
                 "      - {name: b, kind: monitor}\n    dependencies: [[b, a]]\n")
    with pytest.raises(SmartChainInfeasible, match="dependency cycle"):
        solve_file(f)


def test_analyze_all_covers_every_graph() -> None:
    p = Problem((chain(el("a", writes=frozenset({"x"})), el("b", reads=frozenset({"x"}))),))
    assert [(d.before, d.after) for d in analyze_all(p)[0]] == [(0, 1)]


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "smartchain-ids.yaml"


def test_scenario_example_is_accepted() -> None:
    r = {m: solve_file(EXAMPLE, m) for m in ("ilp", "enumeration", "decomposition", "sequential", "greedy")}
    assert r["ilp"].objective == pytest.approx(r["enumeration"].objective) == pytest.approx(r["decomposition"].objective)
    assert all(r["ilp"].objective >= x.objective for x in r.values())
    # the payload analyzer (s = 735 us) runs on the sNIC, the logger (s = -230 us) on the CPU
    assert r["ilp"].assignment["ids/analyzer"] in ("S_ig", "S_eg") and r["ilp"].assignment["ids/logger"] == "C"
    assert r["ilp"].details["round_trips"] == {"ids": 1}


def test_scenario_without_throughput_estimate_is_refused(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("    throughput_estimate: 1Gbps", "")
    f = tmp_path / "noest.yaml"
    f.write_text(text)
    with pytest.raises(SmartChainError, match=r"element_graphs\.ids\.throughput_estimate: SmartChain needs"):
        solve_file(f)
