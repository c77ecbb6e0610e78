"""Migration planning between two UNO placements, and hysteresis. Pure.

`plan_migration(problem, current, target)`: the nodes whose location differs
are the minimal move set (each must move at least once); a pinned node may move
only onto its pin. They are ordered so
that every intermediate placement respects the budgets: no step may push a
budget (sNIC capacity per resource, host capacity, PCIe per link/direction)
over its limit, or push an already-exceeded budget (traffic changed) further
over. Moving A before B may be required (B's destination is full until A
leaves). Up to EXACT_LIMIT moves the order is found by depth-first search over
subsets (complete: if no order exists, none is returned); above it, greedily.
When no direct order exists (e.g. two NFs swapping between full sNICs), one
node at a time is staged on another location first, costing an extra move.

`decide(policy, state, now_s, current_obj, target_obj, current_feasible)`:
hysteresis so noisy traffic does not cause oscillation — migrate only if the
target improves the objective by at least `rel_threshold` (and `abs_threshold`)
and at least `dwell_s` has passed since the last migration; a placement that
violates a budget is always left at once.
Cost: O(moves² · E) greedy; O(2^moves) worst case for the exact order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from tandem.placement.uno.model import UnoProblem, evaluate_many, pcie_load

EXACT_LIMIT = 16


class MigrationError(ValueError):
    """No safe order exists; the message names the blocking budget."""


@dataclass(frozen=True)
class Move:
    node: str
    src: str
    dst: str
    staging: bool = False  # a temporary hop, not the node's final location


@dataclass(frozen=True)
class MigrationPlan:
    moves: tuple[Move, ...]
    objective_before: float
    objective_after: float

    @property
    def extra_moves(self) -> int:
        return sum(1 for m in self.moves if m.staging)


def _budgets(p: UnoProblem) -> tuple[list[str], np.ndarray]:
    a = p.arrays
    names, caps = [], []
    for label, k, _, budget in pcie_load(a, p.pcie, np.zeros(a.K), np.zeros(a.K)):
        names.append(f"pcie[{p.snics[k].name},{label}]"); caps.append(budget)
    for k, s in enumerate(p.snics):
        for r, res in enumerate(p.resources):
            names.append(f"capacity[{s.name},{res}]"); caps.append(a.D[k, r])
    for r, res in enumerate(p.resources):
        names.append(f"host_capacity[{res}]"); caps.append(a.HC[r])
    return names, np.array(caps, dtype=float)


def _loads(p: UnoProblem, loc: np.ndarray) -> np.ndarray:
    """Budget loads for placements loc (P × n) in `_budgets` order."""
    a = p.arrays
    ev = evaluate_many(p, loc)
    cols = [load for _, _, load, _ in pcie_load(a, p.pcie, ev["up"], ev["down"])]
    for k in range(a.K):
        for r in range(len(p.resources)):
            cols.append(ev["snic_use"][:, k, r])
    for r in range(len(p.resources)):
        cols.append(ev["host_use"][:, r])
    return np.stack(cols, axis=1)


def _allowed(new: np.ndarray, old: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """A step is safe if no budget goes above max(limit, its load before)."""
    lim = np.maximum(caps, old) + 1e-9 * np.maximum(1.0, np.where(np.isfinite(caps), np.abs(caps), 1.0))
    return np.all(new <= lim, axis=-1)


def plan_migration(p: UnoProblem, current: Mapping[str, str], target: Mapping[str, str]) -> MigrationPlan:
    a = p.arrays
    locs = p.locations
    li = {l: i for i, l in enumerate(locs)}
    for what, plc in (("current", current), ("target", target)):
        missing = [n for n in a.names if n not in plc]
        if missing:
            raise MigrationError(f"{what} placement has no location for {', '.join(missing[:5])}")
        bad = [f"{n}={plc[n]}" for n in a.names if plc[n] not in li]
        if bad:
            raise MigrationError(f"{what} placement names unknown locations: {', '.join(bad[:5])}")
    cur = np.array([li[current[n]] for n in a.names], dtype=np.int64)
    tgt = np.array([li[target[n]] for n in a.names], dtype=np.int64)
    # a pinned node may only move onto its pin (e.g. a run started it elsewhere)
    pinned_moves = [a.names[i] for i in np.flatnonzero((a.pin >= 0) & (cur != tgt) & (tgt != a.pin))]
    if pinned_moves:
        raise MigrationError(f"pinned nodes cannot move away from their pin: {', '.join(pinned_moves[:5])}")
    names, caps = _budgets(p)
    pending = [int(i) for i in np.flatnonzero(cur != tgt)]
    obj = evaluate_many(p, np.stack([cur, tgt]))["objective"]
    order = _exact_order(p, cur, tgt, pending, caps) if len(pending) <= EXACT_LIMIT else None
    if order is not None:
        moves = tuple(Move(a.names[i], locs[cur[i]], locs[tgt[i]]) for i in order)
        return MigrationPlan(moves, float(obj[0]), float(obj[1]))
    moves = _greedy_with_staging(p, cur, tgt, pending, caps, names)
    return MigrationPlan(tuple(moves), float(obj[0]), float(obj[1]))


def _exact_order(p, cur, tgt, pending, caps):
    """Depth-first search over sets of done moves (memoising dead sets)."""
    dead: set[int] = set()
    k = len(pending)
    order: list[int] = []

    def dfs(mask: int, loc: np.ndarray, load: np.ndarray) -> bool:
        if mask == (1 << k) - 1:
            return True
        if mask in dead:
            return False
        todo = [q for q in range(k) if not mask >> q & 1]
        trials = np.repeat(loc[None], len(todo), axis=0)
        for t, q in enumerate(todo):
            trials[t, pending[q]] = tgt[pending[q]]
        loads = _loads(p, trials)
        ok = _allowed(loads, load[None], caps)
        # try moves that free the most (lowest total relative load) first
        rel = (loads / np.maximum(1e-12, np.where(np.isfinite(caps), caps, np.inf))).sum(axis=1)
        for t in np.argsort(rel, kind="stable"):
            if not ok[t]:
                continue
            order.append(pending[todo[t]])
            if dfs(mask | 1 << todo[t], trials[t], loads[t]):
                return True
            order.pop()
        dead.add(mask)
        return False

    return list(order) if dfs(0, cur.copy(), _loads(p, cur[None])[0]) else None


def _greedy_with_staging(p, cur, tgt, pending, caps, names) -> list[Move]:
    a = p.arrays
    locs = p.locations
    loc = cur.copy()
    load = _loads(p, loc[None])[0]
    todo = list(pending)
    moves: list[Move] = []
    staged: set[int] = set()
    while todo:
        trials = np.repeat(loc[None], len(todo), axis=0)
        for t, i in enumerate(todo):
            trials[t, i] = tgt[i]
        loads = _loads(p, trials)
        ok = _allowed(loads, load[None], caps)
        if ok.any():
            rel = (loads / np.maximum(1e-12, np.where(np.isfinite(caps), caps, np.inf))).sum(axis=1)
            t = int(np.flatnonzero(ok)[np.argmin(rel[ok])])
            i = todo.pop(t)
            moves.append(Move(a.names[i], locs[loc[i]], locs[tgt[i]]))
            loc, load = trials[t], loads[t]
            continue
        # stuck: stage one pending node somewhere else (host first)
        done = False
        for i in todo:
            if i in staged:
                continue
            for alt in [0] + list(range(1, a.K + 1)):
                if alt in (loc[i], tgt[i]):
                    continue
                trial = loc.copy()
                trial[i] = alt
                tl = _loads(p, trial[None])[0]
                if _allowed(tl[None], load[None], caps)[0]:
                    moves.append(Move(a.names[i], locs[loc[i]], locs[alt], staging=True))
                    loc, load = trial, tl
                    staged.add(i)
                    done = True
                    break
            if done:
                break
        if not done:
            t_over = loads - np.maximum(caps, load)[None]
            worst = int(np.argmax(np.max(t_over, axis=0)))
            raise MigrationError(
                f"no safe order for {len(todo)} remaining move(s) ({', '.join(a.names[i] for i in todo[:5])}): "
                f"every next move would exceed {names[worst]}")
    return moves


# ----------------------------------------------------------------- hysteresis

@dataclass(frozen=True)
class HysteresisPolicy:
    rel_threshold: float = 0.10  # target must be ≥ 10 % better
    abs_threshold: float = 0.0  # and better by at least this much (objective units)
    dwell_s: float = 60.0  # minimum time between migrations

    def __post_init__(self) -> None:
        if self.rel_threshold < 0 or self.abs_threshold < 0 or self.dwell_s < 0:
            raise ValueError("hysteresis thresholds and dwell time must be ≥ 0")


@dataclass(frozen=True)
class HysteresisState:
    last_migration_s: float | None = None


@dataclass(frozen=True)
class Decision:
    migrate: bool
    reason: str


def decide(policy: HysteresisPolicy, state: HysteresisState, now_s: float, current_obj: float,
           target_obj: float, current_feasible: bool = True) -> tuple[Decision, HysteresisState]:
    """Whether to move from the current placement to the newly computed target."""
    if not current_feasible:
        return Decision(True, "the current placement violates a budget"), replace(state, last_migration_s=now_s)
    gain = current_obj - target_obj
    rel = gain / max(abs(current_obj), 1e-12)
    if rel < policy.rel_threshold:
        return Decision(False, f"improvement {rel:.1%} below the {policy.rel_threshold:.0%} threshold"), state
    if gain <= policy.abs_threshold:
        return Decision(False, f"improvement {gain:.3g} not above the absolute threshold {policy.abs_threshold:g}"), state
    if state.last_migration_s is not None and now_s - state.last_migration_s < policy.dwell_s:
        left = policy.dwell_s - (now_s - state.last_migration_s)
        return Decision(False, f"dwell time: {left:.0f} s until the next migration may start"), state
    return Decision(True, f"improves the objective by {rel:.1%}"), replace(state, last_migration_s=now_s)
