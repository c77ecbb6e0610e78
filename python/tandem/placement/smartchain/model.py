"""SmartChain problem model: element graphs with branches, servers, positions.

Inputs: elements (processing latency on CPU t^C and on the sNIC t^S, capacity
theta^C / theta^S, declared packet-field accesses), directed edges with
traffic fractions, an estimated graph throughput theta^est, servers with sNIC
and CPU capacity (1.0 = the whole device), the PCIe round-trip latency t_trans.
State: none; everything is frozen. Cost: O(elements + edges) to build.

Positions (SmartChain §IV-B): the paper places each element at S_ig (sNIC
ingress) < C (CPU) < S_eg (sNIC egress): at most one PCIe round trip. We number
positions 0..2K (even = sNIC, odd = CPU); K = `max_round_trips` = 1 is exactly
the paper's {S_ig, C, S_eg}; K > 1 allows more round trips (see
docs/placement-smartchain.md for why this matters when comparing strawmen).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tandem.placement.errors import PlacementInfeasible, PlacementInputError


class SmartChainError(PlacementInputError):
    """Bad SmartChain input; the message names what is wrong and where."""


class SmartChainInfeasible(PlacementInfeasible, SmartChainError):
    """No placement satisfies the constraints; `constraint` names the binding one
    (e.g. "C2 sNIC capacity of server s0", "dependency cycle a -> b -> a")."""

    def __init__(self, message: str, constraint: str):
        super().__init__(message, [constraint])
        self.constraint = constraint


# SmartChain Table I: capacity in Mbps (">10Gbps" taken as 10 Gbps, the
# conservative reading) and latency in us. Field accesses are ours (what the
# element must read/write to do its job), used by the dependency analyzer.
FIVE_TUPLE = ("ip.src", "ip.dst", "ip.proto", "l4.sport", "l4.dport")
TABLE_I: dict[str, dict] = {
    "header_classifier": dict(cap_cpu_mbps=4000, cap_snic_mbps=10000, t_cpu_us=14.8, t_snic_us=0.8,
                              reads=FIVE_TUPLE, writes=("meta.class",)),
    "logger": dict(cap_cpu_mbps=4000, cap_snic_mbps=2000, t_cpu_us=15.0, t_snic_us=245.0,
                   reads=FIVE_TUPLE + ("meta.class",), stateful=True),
    "monitor": dict(cap_cpu_mbps=10000, cap_snic_mbps=3200, t_cpu_us=4.0, t_snic_us=24.0,
                    reads=FIVE_TUPLE, stateful=True),
    "payload_analyzer": dict(cap_cpu_mbps=200, cap_snic_mbps=5000, t_cpu_us=800.0, t_snic_us=65.0,
                             reads=("payload",), writes=("meta.verdict",)),
    "alert": dict(cap_cpu_mbps=4000, cap_snic_mbps=10000, t_cpu_us=15.1, t_snic_us=2.1,
                  reads=FIVE_TUPLE + ("meta.verdict",), stateful=True),
    "load_balancer": dict(cap_cpu_mbps=4000, cap_snic_mbps=10000, t_cpu_us=14.5, t_snic_us=0.5,
                          reads=FIVE_TUPLE, writes=("ip.dst", "meta.out_port")),
}


@dataclass(frozen=True)
class Element:
    name: str
    t_cpu_us: float
    t_snic_us: float
    cap_cpu_mbps: float
    cap_snic_mbps: float
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    drops: bool = False  # may drop packets
    encap: bool = False  # adds/removes headers (shifts every field's offset)
    stateful: bool = False  # keeps state that depends on which packets it sees
    kind: str | None = None

    @property
    def suitability(self) -> float:
        """s_e = t^C - t^S (eq. 1): latency saved by running on the sNIC."""
        return self.t_cpu_us - self.t_snic_us


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    fraction: float  # share of src's output that goes to dst


@dataclass(frozen=True)
class ElementGraph:
    """Elements listed in a processing order (a topological order of `edges`).
    `declared_deps` are extra dependencies (a before b) given by the operator."""

    name: str
    elements: tuple[Element, ...]
    edges: tuple[Edge, ...]
    throughput_mbps: float
    declared_deps: tuple[tuple[str, str], ...] = ()

    @cached_property
    def index(self) -> dict[str, int]:
        return {e.name: i for i, e in enumerate(self.elements)}

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        out: list[list[int]] = [[] for _ in self.elements]
        for ed in self.edges:
            out[self.index[ed.src]].append(self.index[ed.dst])
        return tuple(tuple(s) for s in out)

    @cached_property
    def predecessors(self) -> tuple[tuple[int, ...], ...]:
        out: list[list[int]] = [[] for _ in self.elements]
        for ed in self.edges:
            out[self.index[ed.dst]].append(self.index[ed.src])
        return tuple(tuple(s) for s in out)

    @cached_property
    def traffic_share(self) -> tuple[float, ...]:
        """Fraction of the graph's traffic that reaches each element."""
        share = [0.0] * len(self.elements)
        frac = {(self.index[e.src], self.index[e.dst]): e.fraction for e in self.edges}
        for i in range(len(self.elements)):
            if not self.predecessors[i]:
                share[i] = 1.0
            else:
                share[i] = sum(share[p] * frac[(p, i)] for p in self.predecessors[i])
        return tuple(share)

    def paths(self, limit: int = 10000) -> list[tuple[tuple[int, ...], float]]:
        """Every entry-to-exit path with its traffic fraction (depth-first)."""
        frac = {(self.index[e.src], self.index[e.dst]): e.fraction for e in self.edges}
        out: list[tuple[tuple[int, ...], float]] = []
        roots = [i for i in range(len(self.elements)) if not self.predecessors[i]]
        stack: list[tuple[tuple[int, ...], float]] = [((r,), 1.0) for r in reversed(roots)]
        while stack:
            path, f = stack.pop()
            succ = self.successors[path[-1]]
            if not succ:
                out.append((path, f))
                if len(out) > limit:
                    raise SmartChainError(f"graph {self.name!r} has more than {limit} paths")
                continue
            for s in reversed(succ):
                stack.append((path + (s,), f * frac[(path[-1], s)]))
        return out


@dataclass(frozen=True)
class Server:
    name: str
    snic_capacity: float = 1.0  # share of the sNIC available (C2 right-hand side)
    cpu_capacity: float = 1.0  # share of the CPU available (C3 right-hand side)


@dataclass(frozen=True)
class Problem:
    graphs: tuple[ElementGraph, ...]
    servers: tuple[Server, ...] = (Server("server0"),)
    t_trans_us: float = 26.0  # PCIe round trip (SmartChain §II: 5 + 15 + 2 + 4 us)
    max_round_trips: int = 1  # K; 1 = the paper's S_ig < C < S_eg
    capacity_model: str = "upper_bound"  # or "traffic_share"
    name: str = "smartchain"

    @property
    def num_positions(self) -> int:
        return 2 * self.max_round_trips + 1

    def load(self, g: ElementGraph, i: int) -> tuple[float, float]:
        """(sNIC load, CPU load) of element i of g, eq. (8): theta^est / theta_e,
        scaled by the element's traffic share under the "traffic_share" model
        (the paper uses the upper bound: every element sees theta^est)."""
        e = g.elements[i]
        t = g.throughput_mbps * (g.traffic_share[i] if self.capacity_model == "traffic_share" else 1.0)
        return t / e.cap_snic_mbps, t / e.cap_cpu_mbps


def position_name(pos: int, k: int) -> str:
    """0 -> S_ig, 2K -> S_eg, odd -> C (or C1, C2 ... when K > 1), other even -> S1, S2 ..."""
    if pos == 0:
        return "S_ig"
    if pos == 2 * k:
        return "S_eg"
    if pos % 2:
        return "C" if k == 1 else f"C{(pos + 1) // 2}"
    return f"S{pos // 2}"


def is_snic(pos: int) -> bool:
    return pos % 2 == 0
