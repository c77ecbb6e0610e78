"""The SmartChain 0-1 ILP (Fig. 6), on the shared HiGHS adapter.

Variables: x[e, s, p] = 1 if element e runs on server s at position p
(p = 0..2K; the paper's S_ig, C, S_eg when K = 1); z[g, s] = 1 if graph g runs
on server s (only with several servers: a graph's packets stay on one server);
y[g, k] = 1 if graph g uses CPU position 2k-1 (the paper's y, eq. 3).
Objective: max sum_g t_trans (1 - sum_k y[g,k]) + sum_e s_e sum_{s, even p} x.
Constraints: C1 sum_p p x[j] >= sum_p p x[i] for each dependency i before j;
C2 / C3 sNIC / CPU load per server (eq. 8); C4 one position per element;
C5 y[g,k] >= x[e, s, 2k-1]. With one graph and one server this is Fig. 6
verbatim. Multiple graphs get one y each (each graph's packets make their own
round trip), which is what "optimise them together as one big graph" needs.
Inputs: `Problem` + dependency sets + `SolverOptions`. Output: `Placement`,
objective, solver status and gap. Cost: |E| * |S| * (2K+1) binaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tandem.placement.smartchain.deps import Dependency
from tandem.placement.smartchain.evaluate import GraphPlacement, Placement
from tandem.placement.smartchain.model import Problem
from tandem.placement.solver import LinExpr, Model, Sense, SolverOptions, Status, VarType


@dataclass(frozen=True)
class IlpAnswer:
    placement: Placement | None
    objective: float | None
    status: Status
    gap: float | None
    solve_time_s: float
    num_vars: int
    num_rows: int


def build(problem: Problem, deps: Sequence[Sequence[Dependency]],
          cuts: bool = True) -> tuple[Model, np.ndarray, list[tuple[int, int]]]:
    """The model, the column index array x[u, s, p] and, per global element u,
    its (graph, element) pair."""
    P, S, K = problem.num_positions, len(problem.servers), problem.max_round_trips
    elems = [(gi, i) for gi, g in enumerate(problem.graphs) for i in range(len(g.elements))]
    gid = np.array([gi for gi, _ in elems], dtype=np.int64)
    first = {}
    for u, (gi, i) in enumerate(elems):
        first.setdefault(gi, u)
    U = len(elems)
    m = Model(f"smartchain[{problem.name}]", Sense.MAXIMIZE)
    keys = [(problem.graphs[gi].name, problem.graphs[gi].elements[i].name, problem.servers[s].name, p)
            for gi, i in elems for s in range(S) for p in range(P)]
    x = m.add_vars(keys, VarType.BINARY).indices.reshape(U, S, P)
    pos = np.arange(P)
    even = pos % 2 == 0
    ld = np.array([problem.load(problem.graphs[gi], i) for gi, i in elems]).reshape(U, 2)
    suit = np.array([problem.graphs[gi].elements[i].suitability for gi, i in elems])
    names = [f"{problem.graphs[gi].name}/{problem.graphs[gi].elements[i].name}" for gi, i in elems]

    # C4: one position on one server per element
    m.add_rows(np.repeat(np.arange(U), S * P), x.reshape(-1), np.ones(U * S * P), 1.0, 1.0, U, ("C4_one_position", names))
    # one server per graph
    if S > 1:
        G = len(problem.graphs)
        z = m.add_vars([("z", g.name, s.name) for g in problem.graphs for s in problem.servers], VarType.BINARY).indices.reshape(G, S)
        m.add_rows(np.repeat(np.arange(G), S), z.reshape(-1), np.ones(G * S), 1.0, 1.0, G,
                   ("graph_on_one_server", [g.name for g in problem.graphs]))
        rows = np.repeat(np.arange(U * S), P + 1)
        cols = np.concatenate([x.reshape(U * S, P), z[gid].reshape(U * S, 1)], axis=1).reshape(-1)
        vals = np.tile(np.concatenate([np.ones(P), [-1.0]]), U * S)
        m.add_rows(rows, cols, vals, 0.0, 0.0, U * S,
                   ("element_on_graph_server", [(n, s.name) for n in names for s in problem.servers]))
        # symmetry breaking among identical servers: graph g may open server s
        # only if an earlier graph uses the previous identical server. Any
        # placement can be relabelled to satisfy this, so the optimum stays.
        prev: dict[tuple[float, float], int] = {}
        for s, srv in enumerate(problem.servers):
            key = (srv.snic_capacity, srv.cpu_capacity)
            if key in prev:
                p0 = prev[key]
                for g in range(G):
                    terms = [(int(z[g, s]), 1.0)] + [(int(z[h, p0]), -1.0) for h in range(g)]
                    m.add_rows(np.zeros(len(terms), dtype=np.int64), np.array([c for c, _ in terms]),
                               np.array([v for _, v in terms]), -np.inf, 0.0, 1,
                               [f"symmetry[{problem.graphs[g].name},{srv.name}]"])
            prev[key] = s
    # C1: dependencies keep their order
    pairs = [(first[gi] + d.before, first[gi] + d.after) for gi, dg in enumerate(deps) for d in dg]
    if pairs:
        a = np.array(pairs, dtype=np.int64)
        D = a.shape[0]
        cols = np.concatenate([x[a[:, 1]].reshape(D, -1), x[a[:, 0]].reshape(D, -1)], axis=1).reshape(-1)
        w = np.tile(pos, S).astype(float)
        vals = np.tile(np.concatenate([w, -w]), D)
        m.add_rows(np.repeat(np.arange(D), 2 * S * P), cols, vals, 0.0, np.inf, D,
                   ("C1_dependency", [f"{names[i]} before {names[j]}" for i, j in pairs]))
        if cuts:
            # valid inequalities implied by C1 for 0-1 x (same integer points,
            # tighter LP): j at position <= q forces i at position <= q
            for q in range(P - 1):
                pre = x[:, :, : q + 1].reshape(U, -1)
                w = pre.shape[1]
                cols = np.concatenate([pre[a[:, 0]], pre[a[:, 1]]], axis=1).reshape(-1)
                vals = np.tile(np.concatenate([np.ones(w), -np.ones(w)]), D)
                m.add_rows(np.repeat(np.arange(D), 2 * w), cols, vals, 0.0, np.inf, D,
                           (f"C1_cut{q}", [f"{names[i]} before {names[j]}" for i, j in pairs]))
    # C2 / C3: capacity per server
    for s, srv in enumerate(problem.servers):
        for label, mask, lcol, cap in (("C2_snic_capacity", even, 0, srv.snic_capacity),
                                       ("C3_cpu_capacity", ~even, 1, srv.cpu_capacity)):
            cols = x[:, s, mask].reshape(-1)
            vals = np.repeat(ld[:, lcol], int(mask.sum()))
            m.add_rows(np.zeros(cols.shape[0], dtype=np.int64), cols, vals, -np.inf, cap, 1, [f"{label}[{srv.name}]"])
    # C5: y[g, k] >= x[e, s, 2k-1]
    G = len(problem.graphs)
    y = m.add_vars([("y", g.name, k) for g in problem.graphs for k in range(1, K + 1)], VarType.BINARY).indices.reshape(G, K)
    for k in range(1, K + 1):
        xs = x[:, :, 2 * k - 1]  # (U, S): an element sits on one server, so sum over servers
        rows = np.repeat(np.arange(U), S + 1)
        cols = np.concatenate([y[gid, k - 1][:, None], xs], axis=1).reshape(-1)
        vals = np.tile(np.concatenate([[1.0], -np.ones(S)]), U)
        m.add_rows(rows, cols, vals, 0.0, np.inf, U, (f"C5_y{k}", names))
    # objective: t_trans * (1 - sum y) + sum s_e * (sNIC positions)
    m.set_objective(LinExpr(const=problem.t_trans_us * G))
    m.add_objective_terms(y.reshape(-1), np.full(G * K, -problem.t_trans_us))
    xe = x[:, :, even]
    m.add_objective_terms(xe.reshape(-1), np.repeat(suit, xe.shape[1] * xe.shape[2]))
    return m, x, elems


def solve_ilp(problem: Problem, deps: Sequence[Sequence[Dependency]], options: SolverOptions | None = None,
              cuts: bool = True) -> IlpAnswer:
    """Solve; raises solver.InfeasibleError (the caller explains it)."""
    m, x, elems = build(problem, deps, cuts)
    sol = m.solve(options or SolverOptions())
    placement = None
    if sol.has_solution:
        val = sol.x[x] > 0.5  # (U, S, P)
        per: list[list[int]] = [[0] * len(g.elements) for g in problem.graphs]
        server = [0] * len(problem.graphs)
        for u, (gi, i) in enumerate(elems):
            s, p = np.argwhere(val[u])[0]
            per[gi][i] = int(p)
            server[gi] = int(s)
        placement = Placement(tuple(GraphPlacement(server[gi], tuple(per[gi])) for gi in range(len(problem.graphs))))
    return IlpAnswer(placement, sol.objective, sol.status, sol.gap, sol.solve_time_s, m.num_vars, m.num_constraints)
