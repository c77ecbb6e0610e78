"""UNO NF placement (UNO §3.2.1, Algorithm 1), generalised to k sNICs and several
resources. Pure data and evaluation; the methods (`engine`) build on it.

Problem: a placement graph whose nodes are NFs, VMs and sNIC Ethernet ports and
whose directed edges carry traffic t_ij (Gbps). Each node goes to the host or to
one of the sNICs ("locations"; index 0 = host, 1..k = sNICs). VMs are pinned to
the host, Ethernet ports and accelerated NFs to their sNIC. An NF on the host
uses h_i[r] of resource r, on an sNIC n_i[r] (from per-Gbps ratios × the NF's
load: its incoming traffic, or outgoing if it has none). Minimise Σ_r w_r Σ_{i on host} h_i[r] subject to
every sNIC's capacity D_k[r] and PCIe budget T_k.

PCIe accounting (the paper's `d_ij ≥ p_i − p_j` counts only edges whose tail is
on the host and head on the sNIC — one orientation). We count, per sNIC link k,
*upstream* traffic (edges leaving sNIC k) and *downstream* traffic (edges
entering sNIC k, from the host or another sNIC — peer traffic crosses both
links):
  - "duplex" (default; PCIe is full duplex): upstream ≤ T_k and downstream ≤ T_k;
  - "shared": upstream + downstream ≤ T_k (both directions share one budget);
  - "paper": downstream ≤ T_k only, the orientation Algorithm 1 counts.

Methods (dispatched by `uno.engine`): "milp" (HiGHS, `uno.milp`), "fast"
(exact, s–t cut structure, `uno.fast`), "brute" (enumeration, ≤ 20 free nodes,
for tests). Incremental
mode: `Incremental(current, move_cost, move_budget)` restricts/penalises moves
of free nodes away from their current location.
Cost: evaluation is O(E·k) numpy per placement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tandem.placement.errors import PlacementInfeasible, PlacementInputError
from tandem.placement.result import PlacementResult

HOST = "host"
KINDS = ("nf", "vm", "port")
PCIE_MODES = ("duplex", "shared", "paper")
METHODS = ("fast", "milp", "brute")


class UnoInputError(PlacementInputError):
    """Bad problem data; the message names the offending item."""


class UnoInfeasible(PlacementInfeasible):
    """No placement satisfies the budgets; `binding` names the constraint(s)."""


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # nf | vm | port
    host_use: Mapping[str, float] = field(default_factory=dict)  # h_i[r]
    nic_use: Mapping[str, float] = field(default_factory=dict)  # n_i[r]
    pin: str | None = None  # "host" or an sNIC name


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    gbps: float


@dataclass(frozen=True)
class Snic:
    name: str
    pcie_gbps: float  # T_k
    capacity: Mapping[str, float]  # D_k[r]


@dataclass(frozen=True)
class Incremental:
    """Current placement (node → location name) and how moves are limited:
    `move_cost` is added to the objective per moved node (objective units),
    `move_budget` caps the number of moved free nodes."""

    current: Mapping[str, str]
    move_cost: float = 0.0
    move_budget: int | None = None


@dataclass(frozen=True)
class UnoProblem:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    snics: tuple[Snic, ...]
    resources: tuple[str, ...] = ("cores",)
    weights: Mapping[str, float] = field(default_factory=lambda: {"cores": 1.0})
    pcie: str = "duplex"
    host_capacity: Mapping[str, float] = field(default_factory=dict)
    incremental: Incremental | None = None

    def __post_init__(self) -> None:
        validate(self)

    # -- indexed views (cached arrays; the dataclass is frozen so compute lazily)
    @property
    def arrays(self) -> "Arrays":
        a = self.__dict__.get("_arrays")
        if a is None:
            a = Arrays.build(self)
            object.__setattr__(self, "_arrays", a)
        return a

    @property
    def locations(self) -> list[str]:
        return [HOST] + [s.name for s in self.snics]

    def with_incremental(self, inc: Incremental | None) -> "UnoProblem":
        return UnoProblem(self.nodes, self.edges, self.snics, self.resources, self.weights, self.pcie,
                          self.host_capacity, inc)


def validate(p: UnoProblem) -> None:
    if p.pcie not in PCIE_MODES:
        raise UnoInputError(f"pcie_accounting: {p.pcie!r} is not one of {', '.join(PCIE_MODES)}")
    if not p.snics:
        raise UnoInputError("snics: at least one sNIC is needed")
    names = [n.name for n in p.nodes]
    locs = {HOST} | {s.name for s in p.snics}
    seen: set[str] = set()
    for i, n in enumerate(p.nodes):
        if n.name in seen:
            raise UnoInputError(f"nodes[{i}]: duplicate node name {n.name!r}")
        if n.name in locs:
            raise UnoInputError(f"nodes[{i}]: node name {n.name!r} clashes with a location name")
        seen.add(n.name)
        if n.kind not in KINDS:
            raise UnoInputError(f"nodes[{i}] ({n.name}): kind {n.kind!r} is not one of {', '.join(KINDS)}")
        if n.pin is not None and n.pin not in locs:
            raise UnoInputError(f"nodes[{i}] ({n.name}): pinned to unknown location {n.pin!r}")
        if n.kind == "vm" and n.pin != HOST:
            raise UnoInputError(f"nodes[{i}] ({n.name}): a VM must be pinned to the host")
        if n.kind == "port" and (n.pin is None or n.pin == HOST):
            raise UnoInputError(f"nodes[{i}] ({n.name}): an Ethernet port must be pinned to its sNIC")
        for what, use in (("host", n.host_use), ("nic", n.nic_use)):
            for r, v in use.items():
                if r not in p.resources:
                    raise UnoInputError(f"nodes[{i}] ({n.name}): {what} use of unknown resource {r!r}")
                if not (v >= 0 and math.isfinite(v)):
                    raise UnoInputError(f"nodes[{i}] ({n.name}): {what} use of {r} must be ≥ 0, got {v}")
    nameset = set(names)
    for j, e in enumerate(p.edges):
        for end in (e.src, e.dst):
            if end not in nameset:
                raise UnoInputError(f"edges[{j}]: unknown node {end!r}")
        if e.src == e.dst:
            raise UnoInputError(f"edges[{j}]: self loop on {e.src!r}")
        if not (e.gbps >= 0 and math.isfinite(e.gbps)):
            raise UnoInputError(f"edges[{j}] ({e.src}->{e.dst}): traffic must be ≥ 0 Gbps, got {e.gbps}")
    for k, s in enumerate(p.snics):
        if not (s.pcie_gbps >= 0):
            raise UnoInputError(f"snics[{k}] ({s.name}): pcie_gbps must be ≥ 0, got {s.pcie_gbps}")
        for r, v in s.capacity.items():
            if r not in p.resources:
                raise UnoInputError(f"snics[{k}] ({s.name}): capacity of unknown resource {r!r}")
            if not v >= 0:
                raise UnoInputError(f"snics[{k}] ({s.name}): capacity of {r} must be ≥ 0, got {v}")
    if len({s.name for s in p.snics}) != len(p.snics):
        raise UnoInputError("snics: duplicate sNIC name")
    for r in p.weights:
        if r not in p.resources:
            raise UnoInputError(f"objective_weights: unknown resource {r!r}")
    inc = p.incremental
    if inc is not None:
        for name, loc in inc.current.items():
            if name not in nameset:
                raise UnoInputError(f"current: unknown node {name!r}")
            if loc not in locs:
                raise UnoInputError(f"current.{name}: unknown location {loc!r}")
        if inc.move_budget is not None and inc.move_budget < 0:
            raise UnoInputError(f"move_budget must be ≥ 0, got {inc.move_budget}")
        if inc.move_cost < 0:
            raise UnoInputError(f"move_cost must be ≥ 0, got {inc.move_cost}")


@dataclass(frozen=True)
class Arrays:
    """Index form of a problem. Locations: 0 = host, 1..K = sNICs."""

    names: list[str]
    index: dict[str, int]
    K: int
    pin: np.ndarray  # int, -1 = free
    H: np.ndarray  # (n, R) host use
    N: np.ndarray  # (n, R) sNIC use
    w: np.ndarray  # (R,) objective weights
    src: np.ndarray
    dst: np.ndarray
    t: np.ndarray
    T: np.ndarray  # (K,) PCIe budgets
    D: np.ndarray  # (K, R) capacities (inf if unset)
    HC: np.ndarray  # (R,) host capacity (inf if unset)
    cur: np.ndarray  # current location per node, -1 unknown
    move_cost: float
    move_budget: int | None

    @staticmethod
    def build(p: UnoProblem) -> "Arrays":
        names = [n.name for n in p.nodes]
        index = {n: i for i, n in enumerate(names)}
        locidx = {loc: i for i, loc in enumerate(p.locations)}
        R = len(p.resources)
        H = np.array([[n.host_use.get(r, 0.0) for r in p.resources] for n in p.nodes], dtype=float).reshape(len(names), R)
        N = np.array([[n.nic_use.get(r, 0.0) for r in p.resources] for n in p.nodes], dtype=float).reshape(len(names), R)
        pin = np.array([locidx[n.pin] if n.pin is not None else -1 for n in p.nodes], dtype=np.int64)
        src = np.array([index[e.src] for e in p.edges], dtype=np.int64)
        dst = np.array([index[e.dst] for e in p.edges], dtype=np.int64)
        t = np.array([e.gbps for e in p.edges], dtype=float)
        T = np.array([s.pcie_gbps for s in p.snics], dtype=float)
        D = np.array([[s.capacity.get(r, math.inf) for r in p.resources] for s in p.snics], dtype=float)
        HC = np.array([p.host_capacity.get(r, math.inf) for r in p.resources], dtype=float)
        w = np.array([p.weights.get(r, 0.0) for r in p.resources], dtype=float)
        cur = np.full(len(names), -1, dtype=np.int64)
        mc, mb = 0.0, None
        if p.incremental is not None:
            for n, loc in p.incremental.current.items():
                cur[index[n]] = locidx[loc]
            mc, mb = float(p.incremental.move_cost), p.incremental.move_budget
        return Arrays(names, index, len(p.snics), pin, H, N, w, src, dst, t, T, D, HC, cur, mc, mb)

    @property
    def free(self) -> np.ndarray:
        return np.flatnonzero(self.pin < 0)

    @property
    def cost(self) -> np.ndarray:
        """Objective contribution of each node when on the host."""
        return self.H @ self.w


@dataclass(frozen=True)
class Evaluation:
    objective: float  # host resource (weighted) + move cost
    host_use: np.ndarray  # (R,)
    snic_use: np.ndarray  # (K, R)
    pcie_up: np.ndarray  # (K,) Gbps leaving each sNIC
    pcie_down: np.ndarray  # (K,) Gbps entering each sNIC
    moves: int
    violations: list[str]

    @property
    def feasible(self) -> bool:
        return not self.violations


def pcie_load(a: Arrays, mode: str, up: np.ndarray, down: np.ndarray) -> list[tuple[str, int, np.ndarray, float]]:
    """The PCIe constraints as (label, sNIC index, load, budget) for a mode; `up`,
    `down` have shape (..., K)."""
    out = []
    for k in range(a.K):
        if mode == "duplex":
            out.append(("up", k, up[..., k], a.T[k]))
            out.append(("down", k, down[..., k], a.T[k]))
        elif mode == "shared":
            out.append(("both", k, up[..., k] + down[..., k], a.T[k]))
        else:
            out.append(("down", k, down[..., k], a.T[k]))
    return out


def evaluate_many(p: UnoProblem, loc: np.ndarray, tol: float = 1e-7) -> dict[str, np.ndarray]:
    """Vectorised evaluation of placements `loc` (P × n location indices)."""
    a = p.arrays
    loc = np.atleast_2d(loc)
    ls, ld = loc[:, a.src], loc[:, a.dst]
    up = np.zeros((loc.shape[0], a.K))
    down = np.zeros((loc.shape[0], a.K))
    # einsum, not `@`: a one-row product goes to BLAS dot/gemv, whose thread start-up
    # costs ~40 ms per call on a busy machine (15k edges); einsum stays in numpy
    for k in range(a.K):
        up[:, k] = np.einsum("pe,e->p", ((ls == k + 1) & (ld != k + 1)).astype(float), a.t)
        down[:, k] = np.einsum("pe,e->p", ((ld == k + 1) & (ls != k + 1)).astype(float), a.t)
    on_host = (loc == 0).astype(float)
    host_use = np.einsum("pn,nr->pr", on_host, a.H)
    snic_use = np.stack([np.einsum("pn,nr->pr", (loc == k + 1).astype(float), a.N) for k in range(a.K)], axis=1)
    free = a.pin < 0
    cur_known = free & (a.cur >= 0)
    moves = ((loc != a.cur) & cur_known).sum(axis=1)
    obj = host_use @ a.w + a.move_cost * moves
    ok = np.all(loc[:, ~free] == a.pin[~free], axis=1)
    for _, _, load, budget in pcie_load(a, p.pcie, up, down):
        ok &= load <= budget + tol * max(1.0, budget)
    ok &= np.all(snic_use <= a.D[None] + tol * np.maximum(1.0, np.where(np.isinf(a.D), 1, a.D))[None], axis=(1, 2))
    ok &= np.all(host_use <= a.HC[None] + tol * np.maximum(1.0, np.where(np.isinf(a.HC), 1, a.HC))[None], axis=1)
    if a.move_budget is not None:
        ok &= moves <= a.move_budget
    return {"objective": obj, "feasible": ok, "up": up, "down": down, "host_use": host_use,
            "snic_use": snic_use, "moves": moves}


def evaluate(p: UnoProblem, placement: Mapping[str, str]) -> Evaluation:
    """Objective, resource and PCIe use, and every violated constraint by name."""
    a = p.arrays
    locidx = {loc: i for i, loc in enumerate(p.locations)}
    loc = np.array([locidx[placement[n]] for n in a.names], dtype=np.int64)
    ev = evaluate_many(p, loc[None])
    viol: list[str] = []
    for i in np.flatnonzero((a.pin >= 0) & (loc != a.pin)):
        viol.append(f"pin[{a.names[i]}] must be on {p.locations[a.pin[i]]}")
    for label, k, load, budget in pcie_load(a, p.pcie, ev["up"][0], ev["down"][0]):
        if load > budget + 1e-7 * max(1.0, budget):
            viol.append(f"pcie[{p.snics[k].name},{label}]: {load:g} Gbps > T = {budget:g} Gbps")
    for k, s in enumerate(p.snics):
        for r, res in enumerate(p.resources):
            if ev["snic_use"][0, k, r] > a.D[k, r] + 1e-7 * max(1.0, a.D[k, r]):
                viol.append(f"capacity[{s.name},{res}]: {ev['snic_use'][0, k, r]:g} > D = {a.D[k, r]:g}")
    for r, res in enumerate(p.resources):
        if ev["host_use"][0, r] > a.HC[r] + 1e-7 * max(1.0, a.HC[r]):
            viol.append(f"host_capacity[{res}]: {ev['host_use'][0, r]:g} > {a.HC[r]:g}")
    if a.move_budget is not None and ev["moves"][0] > a.move_budget:
        viol.append(f"move_budget: {ev['moves'][0]} moves > {a.move_budget}")
    return Evaluation(float(ev["objective"][0]), ev["host_use"][0], ev["snic_use"][0], ev["up"][0], ev["down"][0],
                      int(ev["moves"][0]), viol)


def check_pinned(p: UnoProblem) -> None:
    """Raise UnoInfeasible when pinned nodes alone break a budget (names it)."""
    a = p.arrays
    pinned = a.pin >= 0
    for k, s in enumerate(p.snics):
        on_k = a.pin == k + 1
        for r, res in enumerate(p.resources):
            need = float(a.N[on_k, r].sum())
            if need > a.D[k, r] + 1e-9 * max(1.0, a.D[k, r]):
                who = ", ".join(a.names[i] for i in np.flatnonzero(on_k & (a.N[:, r] > 0))[:8])
                raise UnoInfeasible(
                    f"sNIC capacity D[{s.name},{res}] = {a.D[k, r]:g} is below the {need:g} needed by the nodes "
                    f"pinned to {s.name} ({who})", [f"capacity[{s.name},{res}]"])
    both = pinned[a.src] & pinned[a.dst]
    if both.any():
        loc = a.pin.copy()
        loc[~pinned] = 0
        up = np.zeros(a.K)
        down = np.zeros(a.K)
        ls, ld = loc[a.src], loc[a.dst]
        for k in range(a.K):
            up[k] = a.t[both & (ls == k + 1) & (ld != k + 1)].sum()
            down[k] = a.t[both & (ld == k + 1) & (ls != k + 1)].sum()
        for label, k, load, budget in pcie_load(a, p.pcie, up, down):
            if load > budget + 1e-9 * max(1.0, budget):
                raise UnoInfeasible(
                    f"PCIe budget T[{p.snics[k].name},{label}] = {budget:g} Gbps is below the {load:g} Gbps "
                    f"that pinned nodes (VMs, ports, accelerated NFs) already exchange across it",
                    [f"pcie[{p.snics[k].name},{label}]"])
    for r, res in enumerate(p.resources):
        need = float(a.H[a.pin == 0, r].sum())
        if need > a.HC[r] + 1e-9 * max(1.0, a.HC[r]):
            raise UnoInfeasible(f"host capacity[{res}] = {a.HC[r]:g} is below the {need:g} used by pinned nodes",
                                [f"host_capacity[{res}]"])


def placement_dict(p: UnoProblem, loc: np.ndarray) -> dict[str, str]:
    locs = p.locations
    return {n: locs[int(l)] for n, l in zip(p.arrays.names, loc)}


def to_result(p: UnoProblem, method: str, status: str, loc: np.ndarray | None, solve_time_s: float,
              gap: float | None, extra: Mapping | None = None) -> PlacementResult:
    if loc is None:
        return PlacementResult("uno", method, status, None, {}, solve_time_s, gap, dict(extra or {}))
    assign = placement_dict(p, loc)
    ev = evaluate(p, assign)
    details = {
        "host_use": {r: float(v) for r, v in zip(p.resources, ev.host_use)},
        "snic_use": {s.name: {r: float(v) for r, v in zip(p.resources, ev.snic_use[k])} for k, s in enumerate(p.snics)},
        "pcie_up_gbps": {s.name: float(ev.pcie_up[k]) for k, s in enumerate(p.snics)},
        "pcie_down_gbps": {s.name: float(ev.pcie_down[k]) for k, s in enumerate(p.snics)},
        "pcie_accounting": p.pcie,
        "moves": ev.moves,
        "violations": ev.violations,
    }
    details.update(extra or {})
    return PlacementResult("uno", method, status, ev.objective, assign, solve_time_s, gap, details)


def budget_excess(p: UnoProblem, placement: Mapping[str, str]) -> dict[str, float]:
    """use − budget of every budget row (PCIe per sNIC and direction, sNIC
    capacity per resource, host capacity, move budget) and of every pin
    (1 if broken), recomputed from the placement with no tolerance: > 0 means
    the row is exceeded by that much."""
    a = p.arrays
    locidx = {loc: i for i, loc in enumerate(p.locations)}
    loc = np.array([locidx[placement[n]] for n in a.names], dtype=np.int64)
    ev = evaluate_many(p, loc[None], tol=0.0)
    out: dict[str, float] = {}
    for label, k, load, budget in pcie_load(a, p.pcie, ev["up"][0], ev["down"][0]):
        out[f"pcie[{p.snics[k].name},{label}]"] = float(load - budget)
    for k, s in enumerate(p.snics):
        for r, res in enumerate(p.resources):
            if math.isfinite(a.D[k, r]):
                out[f"capacity[{s.name},{res}]"] = float(ev["snic_use"][0, k, r] - a.D[k, r])
    for r, res in enumerate(p.resources):
        if math.isfinite(a.HC[r]):
            out[f"host_capacity[{res}]"] = float(ev["host_use"][0, r] - a.HC[r])
    if a.move_budget is not None:
        out["move_budget"] = float(ev["moves"][0] - a.move_budget)
    pinned = a.pin >= 0
    out["pins"] = float(np.any(loc[pinned] != a.pin[pinned]))
    return out
