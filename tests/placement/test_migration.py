"""Migration planner: minimal move set, capacity-safe order (exhaustively
checked on small random cases), staging when no direct order exists;
hysteresis keeps noisy traffic from causing oscillation."""

import itertools
import random

import numpy as np
import pytest

from tandem.placement.migration import (
    HysteresisPolicy,
    HysteresisState,
    MigrationError,
    decide,
    plan_migration,
)
from tandem.placement.uno.engine import solve
from tandem.placement.uno.model import Edge, Node, Snic, UnoProblem, evaluate


def two_snics(cap=10.0):
    nodes = (Node("a", "nf", {"cores": 1}, {"cores": 6}), Node("b", "nf", {"cores": 1}, {"cores": 6}),
             Node("eth0", "port", pin="snic0"), Node("eth1", "port", pin="snic1"))
    return UnoProblem(nodes, (), (Snic("snic0", 10, {"cores": cap}), Snic("snic1", 10, {"cores": cap})))


PORTS = {"eth0": "snic0", "eth1": "snic1"}


def test_order_respects_capacity():
    p = two_snics()
    plan = plan_migration(p, {"a": "snic0", "b": "host", **PORTS}, {"a": "host", "b": "snic0", **PORTS})
    assert [m.node for m in plan.moves] == ["a", "b"]  # b cannot enter snic0 before a leaves
    assert plan.extra_moves == 0


def test_swap_between_full_snics_is_staged_through_the_host():
    p = two_snics()
    plan = plan_migration(p, {"a": "snic0", "b": "snic1", **PORTS}, {"a": "snic1", "b": "snic0", **PORTS})
    assert len(plan.moves) == 3 and plan.extra_moves == 1
    assert plan.moves[0].dst == "host" and plan.moves[0].staging


def test_blocked_plan_names_the_budget():
    nodes = (Node("a", "nf", {"cores": 1}, {"cores": 6}), Node("b", "nf", {"cores": 1}, {"cores": 6}),
             Node("eth0", "port", pin="snic0"), Node("eth1", "port", pin="snic1"))
    p = UnoProblem(nodes, (), (Snic("snic0", 10, {"cores": 10}), Snic("snic1", 10, {"cores": 10})),
                   host_capacity={"cores": 0.0})
    with pytest.raises(MigrationError, match=r"capacity\[snic"):
        plan_migration(p, {"a": "snic0", "b": "snic1", **PORTS}, {"a": "snic1", "b": "snic0", **PORTS})


def _random_case(rng):
    k = rng.randint(2, 5)
    nodes = [Node("eth0", "port", pin="snic0"), Node("vm", "vm", pin="host")]
    for i in range(k):
        nodes.append(Node(f"n{i}", "nf", {"cores": rng.randint(1, 4)}, {"cores": rng.randint(1, 5)}))
    edges = tuple(Edge(f"n{i}", f"n{(i + 1) % k}", float(rng.randint(1, 3))) for i in range(k))
    p = UnoProblem(tuple(nodes), edges, (Snic("snic0", float(rng.randint(2, 8)), {"cores": float(rng.randint(4, 10))}),),
                   pcie="shared")
    locs = ["host", "snic0"]
    while True:
        cur = {n.name: (n.pin or rng.choice(locs)) for n in nodes}
        tgt = {n.name: (n.pin or rng.choice(locs)) for n in nodes}
        if evaluate(p, cur).feasible and evaluate(p, tgt).feasible:
            return p, cur, tgt


def _order_exists(p, cur, tgt):
    diff = [n for n in cur if cur[n] != tgt[n]]
    for perm in itertools.permutations(diff):
        plc, ok = dict(cur), True
        for n in perm:
            plc[n] = tgt[n]
            if not evaluate(p, plc).feasible:
                ok = False
                break
        if ok:
            return True
    return False


def test_planner_finds_a_safe_minimal_order_whenever_one_exists():
    rng = random.Random(7)
    checked = 0
    for _ in range(150):
        p, cur, tgt = _random_case(rng)
        exists = _order_exists(p, cur, tgt)
        try:
            plan = plan_migration(p, cur, tgt)
        except MigrationError:
            assert not exists
            continue
        plc = dict(cur)
        for m in plan.moves:
            assert plc[m.node] == m.src
            plc[m.node] = m.dst
            assert evaluate(p, plc).feasible, m
        assert plc == dict(tgt)
        if exists:
            assert plan.extra_moves == 0
            assert len(plan.moves) == sum(cur[n] != tgt[n] for n in cur)
            checked += 1
    assert checked > 50


def test_pinned_nodes_cannot_move():
    p = two_snics()
    with pytest.raises(MigrationError, match="pinned"):
        plan_migration(p, {"a": "host", "b": "host", **PORTS}, {"a": "host", "b": "host", "eth0": "snic1", "eth1": "snic1"})

    # ... but one found away from its pin may move back onto it
    away = {"a": "host", "b": "host", **PORTS, "eth0": "snic1"}
    plan = plan_migration(p, away, {"a": "host", "b": "host", **PORTS})
    assert [(m.node, m.dst) for m in plan.moves] == [("eth0", PORTS["eth0"])]


def test_hysteresis_ignores_noise_and_respects_dwell():
    """Traffic jitters ±5 % around a level where two placements are almost
    equally good: without hysteresis the optimum flips; with it, nothing moves."""
    from tandem.placement.uno.sweep import with_pcie_budget
    from tandem.placement.uno.io import load_problem
    from pathlib import Path
    base = load_problem(Path(__file__).resolve().parents[2] / "examples" / "uno-fig15-dpi.yaml")
    rng = np.random.default_rng(1)
    policy = HysteresisPolicy(rel_threshold=0.10, dwell_s=60)
    state = HysteresisState()
    current = solve(with_pcie_budget(base, 20.0)).assignment
    flips_naive, migrations = 0, 0
    prev_target = current
    for step in range(12):
        T = 20.0 * (1 + rng.uniform(-0.05, 0.05)) + (0.0 if step % 2 else -1.6)  # budget wobbles across a step
        p = with_pcie_budget(base, T)
        target = solve(p).assignment
        flips_naive += target != prev_target
        prev_target = target
        cur_ev, tgt_ev = evaluate(p, current), evaluate(p, target)
        d, state = decide(policy, state, now_s=10.0 * step, current_obj=cur_ev.objective,
                          target_obj=tgt_ev.objective, current_feasible=cur_ev.feasible)
        if d.migrate:
            migrations += 1
            current = target
    assert flips_naive >= 4  # the noise really does move the optimum
    assert migrations <= 2  # hysteresis: at most the forced moves, no oscillation


def test_decide_rules():
    pol = HysteresisPolicy(rel_threshold=0.1, dwell_s=60)
    d, s = decide(pol, HysteresisState(), 0.0, 100.0, 95.0)
    assert not d.migrate and "threshold" in d.reason
    d, s = decide(pol, HysteresisState(), 0.0, 100.0, 80.0)
    assert d.migrate and s.last_migration_s == 0.0
    d, s2 = decide(pol, s, 30.0, 100.0, 50.0)
    assert not d.migrate and "dwell" in d.reason
    d, _ = decide(pol, s, 30.0, 100.0, 99.0, current_feasible=False)
    assert d.migrate
