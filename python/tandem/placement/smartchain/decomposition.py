"""Exact SmartChain placement for many graphs and servers by decomposition.

Step 1 (per graph, no solver): enumerate the graph's Pareto-optimal
placements — benefit vs (sNIC load, CPU load) — with `enumerate_graph`
(2^n subsets, least positions). Some optimal overall placement uses only such
candidates: replacing a graph's placement by one that dominates it keeps every
capacity and does not lower the objective.
Step 2: choose one candidate and one server per graph. First a branch and
bound with a node budget (it proves most instances optimal in milliseconds);
if the budget runs out, a small 0-1 program (a multiple-choice knapsack per
server) whose LP relaxation is far tighter than Fig. 6's, solved with HiGHS
through `placement/solver.py`. Identical servers
are ordered (a graph may open server s only if an earlier graph uses the
previous identical server) to remove symmetric copies.
Inputs: `Problem` + dependency sets. Output: optimal `Placement` or None.
Cost: O(sum_g n_g 2^n_g) + a MILP with sum_g |candidates_g| * |servers| binaries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tandem.placement.smartchain.deps import Dependency
from tandem.placement.smartchain.enumeration import SearchBudgetExceeded, all_candidates, assign_bnb

BNB_NODES = 2000  # after this many search nodes, hand the assignment to the MILP
from tandem.placement.smartchain.evaluate import GraphPlacement, Placement
from tandem.placement.smartchain.model import Problem, SmartChainError
from tandem.placement.solver import InfeasibleError, Model, Sense, SolverOptions, Status, VarType


def solve_decomposition(problem: Problem, deps: Sequence[Sequence[Dependency]],
                        options: SolverOptions | None = None) -> tuple[Placement, float] | None:
    servers = problem.servers
    S = len(servers)
    cands = all_candidates(problem, deps)
    if cands is None:
        return None
    try:  # easy instances: a short branch and bound proves the optimum fastest
        return assign_bnb(problem, cands, max_nodes=BNB_NODES)
    except SearchBudgetExceeded:
        pass
    m = Model(f"smartchain-assign[{problem.name}]", Sense.MAXIMIZE)
    blocks = []
    for gi, (g, c) in enumerate(zip(problem.graphs, cands)):
        K = c.benefit.shape[0]
        w = m.add_vars([(g.name, k, s.name) for k in range(K) for s in servers], VarType.BINARY).indices.reshape(K, S)
        blocks.append(w)
        m.add_rows(np.zeros(K * S, dtype=np.int64), w.reshape(-1), np.ones(K * S), 1.0, 1.0, 1, [f"one_placement[{g.name}]"])
        m.add_objective_terms(w.reshape(-1), np.repeat(c.benefit, S))
    for s, srv in enumerate(servers):
        for label, attr, cap in (("C2_snic_capacity", "snic_load", srv.snic_capacity),
                                 ("C3_cpu_capacity", "cpu_load", srv.cpu_capacity)):
            cols = np.concatenate([b[:, s] for b in blocks])
            vals = np.concatenate([getattr(c, attr) for c in cands])
            m.add_rows(np.zeros(cols.shape[0], dtype=np.int64), cols, vals, -np.inf, cap, 1, [f"{label}[{srv.name}]"])
    prev: dict[tuple[float, float], int] = {}
    for s, srv in enumerate(servers):
        key = (srv.snic_capacity, srv.cpu_capacity)
        if key in prev:
            p0 = prev[key]
            for gi in range(len(blocks)):
                cols = np.concatenate([blocks[gi][:, s]] + [blocks[h][:, p0] for h in range(gi)])
                vals = np.concatenate([np.ones(blocks[gi].shape[0])] + [-np.ones(blocks[h].shape[0]) for h in range(gi)])
                m.add_rows(np.zeros(cols.shape[0], dtype=np.int64), cols, vals, -np.inf, 0.0, 1,
                           [f"symmetry[{problem.graphs[gi].name},{srv.name}]"])
        prev[key] = s
    try:
        sol = m.solve(options or SolverOptions(explain_infeasible=False))
    except InfeasibleError:
        return None
    if sol.status is not Status.OPTIMAL:
        raise SmartChainError(f"the assignment MILP stopped without a proven optimum ({sol.status.value})")
    per = []
    total = 0.0
    for w, c in zip(blocks, cands):
        k, s = np.argwhere(sol.x[w] > 0.5)[0]
        per.append(GraphPlacement(int(s), tuple(int(v) for v in c.levels[k])))
        total += float(c.benefit[k])
    return Placement(tuple(per)), total
