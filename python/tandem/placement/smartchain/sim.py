"""Random SmartChain instances for the paper's simulations (§V-C, §V-D).

Inputs: a topology name (Fig. 7: "linear" 7 elements, "two_branch" 8,
"nested" 10 — the figure is not in our copy of the paper, so these are our
reconstruction from its text), a number of action dependencies, a seed.
Elements are drawn from Table I with fixed mix weights (NFP's enterprise mix
is not given numerically; ours is in MIX); action dependencies are random
pairs of elements on a common path, as the paper's "randomly select element
pairs". Output: `Problem`s. Pure and seeded. Cost: O(elements^2).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tandem.placement.smartchain.deps import descendants
from tandem.placement.smartchain.model import TABLE_I, Edge, Element, ElementGraph, Problem, Server

# kinds and the share of each in a random graph
MIX: dict[str, float] = {"header_classifier": 0.2, "logger": 0.1, "monitor": 0.25, "payload_analyzer": 0.15,
                         "alert": 0.1, "load_balancer": 0.2}

# (edges as (src, dst) over elements 0..n-1, n)
TOPOLOGIES: dict[str, tuple[tuple[tuple[int, int], ...], int]] = {
    "linear": (tuple((i, i + 1) for i in range(6)), 7),
    "two_branch": (((0, 1), (1, 2), (2, 3), (3, 4), (1, 5), (5, 6), (6, 7)), 8),
    "nested": (((0, 1), (1, 2), (2, 3), (1, 4), (4, 5), (0, 6), (6, 7), (6, 8), (8, 9)), 10),
}


def _element(name: str, kind: str) -> Element:
    t = TABLE_I[kind]
    # field accesses are left out: the simulation sets action dependencies at random
    return Element(name, t["t_cpu_us"], t["t_snic_us"], t["cap_cpu_mbps"], t["cap_snic_mbps"], kind=kind)


def random_graph(topology: str, n_action_deps: int, rng: np.random.Generator, throughput_mbps: float,
                 name: str = "g") -> ElementGraph:
    edges_ix, n = TOPOLOGIES[topology]
    kinds = list(MIX)
    pick = rng.choice(len(kinds), size=n, p=np.array([MIX[k] for k in kinds]))
    elems = tuple(_element(f"e{i}", kinds[k]) for i, k in enumerate(pick))
    out: dict[int, list[int]] = {}
    for a, b in edges_ix:
        out.setdefault(a, []).append(b)
    edges = tuple(Edge(f"e{a}", f"e{b}", 1.0 / len(out[a])) for a, b in edges_ix)
    g = ElementGraph(name, elems, edges, throughput_mbps)
    desc = descendants(g)
    pairs = [(i, j) for i in range(n) for j in range(n) if desc[i] >> j & 1]
    k = min(n_action_deps, len(pairs))
    chosen = rng.choice(len(pairs), size=k, replace=False)
    deps = tuple((f"e{pairs[c][0]}", f"e{pairs[c][1]}") for c in sorted(chosen))
    return replace(g, declared_deps=deps)


def fig8_instance(topology: str, n_action_deps: int, seed: int, throughput_mbps: float = 500.0,
                  t_trans_us: float = 26.0, max_round_trips: int = 1) -> Problem:
    rng = np.random.default_rng(seed)
    g = random_graph(topology, n_action_deps, rng, throughput_mbps)
    return Problem((g,), (Server("server0"),), t_trans_us, max_round_trips, name=f"{topology}-{n_action_deps}-{seed}")


def scale_instance(n_graphs: int, n_servers: int, seed: int, throughput_mbps: float = 500.0,
                   n_action_deps: int = 10) -> Problem:
    """§V-D: copies of topology 2 ("two_branch") on several servers. The
    paper duplicates one graph; we draw each copy's elements afresh."""
    rng = np.random.default_rng(seed)
    graphs = tuple(random_graph("two_branch", n_action_deps, rng, throughput_mbps, f"g{i}") for i in range(n_graphs))
    servers = tuple(Server(f"s{i}") for i in range(n_servers))
    return Problem(graphs, servers, name=f"scale-{n_graphs}x{n_servers}-{seed}")


def general_round_trips(problem: Problem) -> Problem:
    """The same problem with as many round trips as any placement could use
    (ceil(n/2) for the largest graph): every strawman placement is feasible
    for it, so its optimum is >= both strawmen by construction."""
    n = max(len(g.elements) for g in problem.graphs)
    return replace(problem, max_round_trips=max(problem.max_round_trips, (n + 1) // 2))


def compare(problem: Problem) -> dict[str, float | None]:
    """Latency benefit (us) of SmartChain as in the paper (K = 1), SmartChain
    with enough round trips, and both strawmen; None = no feasible placement."""
    from tandem.placement.smartchain.deps import analyze
    from tandem.placement.smartchain.enumeration import solve_enumeration
    from tandem.placement.smartchain.evaluate import benefit
    from tandem.placement.smartchain.strawmen import sequential, suitability_greedy

    deps = [analyze(g) for g in problem.graphs]
    paper = solve_enumeration(problem, deps)
    general = solve_enumeration(general_round_trips(problem), deps)
    seq, _ = sequential(problem)
    greedy, _ = suitability_greedy(problem)
    return {"smartchain": paper[1] if paper else None, "smartchain_k": general[1] if general else None,
            "sequential": benefit(problem, seq) if seq else None, "greedy": benefit(problem, greedy) if greedy else None}
