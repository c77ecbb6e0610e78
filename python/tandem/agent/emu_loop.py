"""The agent's loop over an emulated machine (thin shell around ``agent.core``).

Input: a scenario with ``run.agent``, a machine that can ``advance(until_s)``,
report ``metrics()`` (the emulator's metrics dict, cumulative) and
``migrate(nf, to_device, at_s)``, the placement the run started with and the
run's duration. Every ``period`` of simulated time, strictly before the end, it
advances the machine, turns the period's counters into the NF-level traffic
matrix (``telemetry``), takes one ``core.step`` and asks the machine to migrate
each planned move in order, all at that instant: when ``migrate`` returns a
time (the migration's end), the next move of the same plan starts there (the
barrier between ordered moves), else at the same instant; until the last one
has ended (or while the machine's ``migrating()`` names an NF) the loop only records that it is waiting (no decision on counters
disturbed by a move). ``pins`` (NF -> device, ``--place``) stay where they are.
Output: the decision log for metrics.json (``agent``): the policy, every
period's time, smoothed traffic matrix (Gbps per edge), objective now / target
(host cores), moves and the reason for moving or not, the count of
migrations and the final placement. State: the agent's, between periods.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Callable, Mapping, Optional, Protocol

from tandem.agent.core import AgentPolicy, AgentState, configured_offered_bps, graph_shape, step
from tandem.agent.telemetry import Counters, counters, traffic_matrix


class AgentMachine(Protocol):
    def advance(self, until_s: float) -> None: ...

    def metrics(self) -> dict: ...

    def migrate(self, nf: str, to_device: str, at_s: float): ...


def _moving(machine) -> list[str]:
    """NFs the machine says are still migrating (none if it cannot say)."""
    ask = getattr(machine, "migrating", None)
    return list(ask()) if callable(ask) else []


def run_agent(sc, machine: AgentMachine, placement: Mapping[str, str], duration_s: float,
              policy: Optional[AgentPolicy] = None, pins: Optional[Mapping[str, str]] = None,
              on_step: Optional[Callable[[dict], None]] = None) -> dict:
    """Drive `machine` up to (not including) `duration_s`; returns the decision log.
    ``pins`` (NF -> device, e.g. ``--place``) are never moved."""
    if policy is None:
        if sc.run.agent is None:
            raise ValueError("run.agent: the scenario has no agent settings")
        policy = AgentPolicy.from_settings(sc.run.agent)
    shape = graph_shape(sc)
    offered = configured_offered_bps(sc)
    state = AgentState({n: placement[n] for n in sc.nfs() if n in placement}, dict(pins or {}))
    prev = Counters(0.0)
    log: list[dict] = []
    migrations = 0
    busy_until = 0.0  # end of the last planned migration, when the machine said
    k = 1
    eps = policy.period_s * 1e-9
    while k * policy.period_s < duration_s - eps:
        t = k * policy.period_s
        k += 1
        machine.advance(t)
        cur = counters(machine.metrics())
        if cur.time_s <= prev.time_s:
            continue  # the machine did not advance (nothing to measure)
        moving = _moving(machine)
        if cur.time_s < busy_until or moving:  # a plan is still moving NFs: measure again after it
            why = f"{', '.join(moving)} still migrating" if moving else f"migrations run until {busy_until:.6g} s"
            rec = {"time_s": round(cur.time_s, 9), "moves": [], "reason": f"waiting: {why}"}
            log.append(rec)
            if on_step:
                on_step(rec)
            prev = cur
            continue
        s, state = step(sc, policy, state, traffic_matrix(shape, prev, cur, offered), cur.time_s)
        at = cur.time_s
        for mv in s.moves:
            end = machine.migrate(mv.node, mv.dst, at_s=at)
            migrations += 1
            if isinstance(end, (int, float)) and not isinstance(end, bool) and end > at:
                at = float(end)
        busy_until = at
        rec = s.as_json()
        log.append(rec)
        if on_step:
            on_step(rec)
        prev = cur
    return {"policy": asdict(policy), "decisions": log, "migrations": migrations,
            "final_placement": dict(sorted(state.placement.items()))}
