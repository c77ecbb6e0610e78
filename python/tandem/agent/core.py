"""The NF agent's decision (UNO §3.2.2): measured traffic -> re-placement -> ordered moves. Pure.

One ``step`` per period: from the period's NF-level traffic matrix
(``telemetry.traffic_matrix``) it
1. smooths the rates (EWMA, ``smoothing`` = weight of the newest period);
2. rebuilds the scenario's UNO problem (§3.2.1) at those rates: the
   placement-graph edges carry them, each NF's h_i / n_i follow from its
   cores-per-Gbps x its incoming traffic, T and D stay the scenario's;
3. solves it in incremental mode (``uno.model.Incremental``: the current
   placement, ``move_cost`` host-core equivalents per moved NF) at the rates
   x (1 + ``headroom``), so a chosen placement keeps that much slack on every
   budget; without a placement that fits with headroom it solves at the rates
   themselves;
4. compares current and target at the measured rates and asks
   ``migration.decide`` (relative/absolute thresholds, dwell time; a current
   placement that breaks a budget is left at once);
5. orders the moves with ``migration.plan_migration`` (every intermediate
   placement stays within the budgets).
Why it does not flap (UNO §3.2.2 leaves this open): a placement entered with
headroom h is forced out only when the load rises by more than h, and the way
back needs both a threshold gain *at headroom* and the dwell time; so load
oscillating by less than h around a budget's threshold moves an NF at most once.
Output: a ``Step`` (time, smoothed matrix, objective now / target, moves, why)
and the next ``AgentState``. Cost: one UNO solve (two when the headroom solve is
infeasible) and one migration ordering per period.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

from tandem.agent.telemetry import EdgeKey, summary
from tandem.placement.migration import (HysteresisPolicy, HysteresisState, MigrationError, Move, decide,
                                        plan_migration)


@dataclass(frozen=True)
class AgentPolicy:
    """The scenario's ``run.agent`` (``model.scenario.AgentSettings``) in seconds and cores."""

    period_s: float = 0.1
    headroom: float = 0.15
    rel_threshold: float = 0.10
    abs_threshold: float = 0.05
    dwell_s: float = 0.5
    move_cost: float = 0.05
    smoothing: float = 0.5
    method: str = "fast"

    @staticmethod
    def from_settings(a) -> "AgentPolicy":
        return AgentPolicy(a.period, a.headroom, a.rel_threshold, a.abs_threshold, a.dwell, a.move_cost, a.smoothing)

    def hysteresis(self) -> HysteresisPolicy:
        return HysteresisPolicy(self.rel_threshold, self.abs_threshold, self.dwell_s)


@dataclass(frozen=True)
class AgentState:
    placement: Mapping[str, str]  # NF -> scenario device id
    pins: Mapping[str, str] = field(default_factory=dict)  # NF -> device the run fixed (--place)
    smoothed: Optional[Mapping[EdgeKey, float]] = None  # bps per edge
    hysteresis: HysteresisState = field(default_factory=HysteresisState)


@dataclass(frozen=True)
class Step:
    time_s: float
    matrix: Mapping[EdgeKey, float]  # smoothed bps per edge
    objective_now: Optional[float]
    objective_target: Optional[float]
    feasible_now: bool
    target: Mapping[str, str]
    moves: tuple[Move, ...]  # ordered; device ids are the scenario's
    reason: str

    def as_json(self) -> dict:
        return {"time_s": round(self.time_s, 9), "traffic_gbps": summary(self.matrix),
                "objective_now": self.objective_now, "objective_target": self.objective_target,
                "feasible_now": self.feasible_now,
                "moves": [{"nf": m.node, "from": m.src, "to": m.dst, **({"staging": True} if m.staging else {})}
                          for m in self.moves],
                "reason": self.reason}


def graph_shape(sc) -> list[tuple[str, str, float]]:
    """The placement graph's edges with their configured bps: ``placement.uno.edges``
    when the scenario gives them, else derived from chains and traffic."""
    from tandem.placement.from_scenario import uno_edges

    uno = sc.placement.uno
    if uno is not None and uno.edges:
        return [(e.src, e.dst, float(e.traffic)) for e in uno.edges]
    return uno_edges(sc)


def configured_offered_bps(sc) -> float:
    return float(sum(s.offered_bps() for s in sc.traffic.values()))


def problem_at(sc, matrix: Mapping[EdgeKey, float], factor: float = 1.0, pins: Optional[Mapping[str, str]] = None):
    """The scenario's UNO problem with the edges carrying ``matrix`` x ``factor`` (and
    ``pins``, NF -> device, fixed as ``tandem run --place`` fixes them)."""
    from tandem.model.scenario import PlacementInputs, UnoEdge, UnoInputs
    from tandem.placement.from_scenario import uno_problem

    uno = sc.placement.uno
    edges = [UnoEdge.model_construct(src=a, dst=z, traffic=bps * factor) for (a, z), bps in matrix.items()]
    inputs = UnoInputs.model_construct(edges=edges, pcie_budget=dict(uno.pcie_budget) if uno else {},
                                       snic_capacity_cores=dict(uno.snic_capacity_cores) if uno else {})
    sc2 = sc.model_copy(update={"placement": PlacementInputs.model_construct(uno=inputs, pof=sc.placement.pof)})
    return uno_problem(sc2, pins or None)


def _to_engine(sc, p, placement: Mapping[str, str]) -> dict[str, str]:
    from tandem.placement.uno.model import HOST

    out = {}
    for n in p.nodes:
        if n.name in placement:
            out[n.name] = HOST if placement[n.name] == sc.host_id else placement[n.name]
        else:
            out[n.name] = n.pin if n.pin is not None else HOST
    return out


def _from_engine(sc, loc: str) -> str:
    from tandem.placement.uno.model import HOST

    return sc.host_id if loc == HOST else loc


def smooth(prev: Optional[Mapping[EdgeKey, float]], new: Mapping[EdgeKey, float], alpha: float) -> dict[EdgeKey, float]:
    if prev is None:
        return dict(new)
    return {k: alpha * v + (1 - alpha) * prev.get(k, v) for k, v in new.items()}


def step(sc, policy: AgentPolicy, state: AgentState, matrix: Mapping[EdgeKey, float],
         now_s: float) -> tuple[Step, AgentState]:
    """One decision on the period's measured ``matrix`` (bps per edge) at ``now_s``."""
    from tandem.placement.from_scenario import DecisionError
    from tandem.placement.uno.engine import solve
    from tandem.placement.uno.model import Incremental, UnoInfeasible, UnoInputError, evaluate

    sm = smooth(state.smoothed, matrix, policy.smoothing)
    st = replace(state, smoothed=sm)
    cur_nfs = dict(state.placement)

    def result(obj_now, obj_tgt, feas, target, moves, reason, new_state):
        return Step(now_s, sm, obj_now, obj_tgt, feas, target, tuple(moves), reason), new_state

    try:
        p_now = problem_at(sc, sm, pins=state.pins)
    except (DecisionError, UnoInputError) as e:
        return result(None, None, True, cur_nfs, (), f"no placement problem: {e}", st)
    current = _to_engine(sc, p_now, cur_nfs)
    ev_now = evaluate(p_now, current)
    feasible_now = ev_now.feasible
    target = None
    how = ""
    tries = [(1.0 + policy.headroom, f"with {policy.headroom:.0%} headroom")]
    if policy.headroom > 0:
        tries.append((1.0, "without headroom"))
    for factor, label in tries:
        try:
            p = problem_at(sc, sm, factor, state.pins).with_incremental(Incremental(current, policy.move_cost))
            target = solve(p, policy.method).assignment
            how = label
            break
        except UnoInfeasible:
            continue
    if target is None:
        return result(ev_now.objective, None, feasible_now, cur_nfs, (),
                      "no placement fits the budgets at the measured traffic; staying", st)
    target = {**current, **target}
    ev_tgt = evaluate(p_now, target)
    tgt_nfs = {n: _from_engine(sc, target[n]) for n in cur_nfs if n in target}
    tgt_nfs = {**cur_nfs, **tgt_nfs}
    if tgt_nfs == cur_nfs:
        why = (f"the current placement is the best, counting {policy.move_cost:g} host cores per move"
               + ("" if feasible_now else " (it breaks a budget; nothing fits better)"))
        return result(ev_now.objective, ev_tgt.objective, feasible_now, cur_nfs, (), f"{why} ({how})", st)
    d, hyst = decide(policy.hysteresis(), state.hysteresis, now_s, ev_now.objective, ev_tgt.objective, feasible_now)
    if not d.migrate:
        return result(ev_now.objective, ev_tgt.objective, feasible_now, tgt_nfs, (), f"stay: {d.reason}", st)
    try:
        plan = plan_migration(p_now, current, target)
    except MigrationError as e:
        return result(ev_now.objective, ev_tgt.objective, feasible_now, tgt_nfs, (), f"stay: {e}", st)
    moves = tuple(Move(m.node, _from_engine(sc, m.src), _from_engine(sc, m.dst), m.staging) for m in plan.moves)
    violated = "" if feasible_now else f" ({'; '.join(ev_now.violations)})"
    return result(ev_now.objective, ev_tgt.objective, feasible_now, tgt_nfs, moves,
                  f"migrate: {d.reason}{violated}; target solved {how}",
                  replace(st, placement=tgt_nfs, hysteresis=hyst))
