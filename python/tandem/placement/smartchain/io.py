"""SmartChain input files (YAML or JSON) -> `Problem` (errors carry file:line:column
and the path, through `tandem.model.yaml_document`).

The format is documented in docs/placement-smartchain.md. Elements may name a
Table I `kind` (its latencies, capacities and field accesses become defaults),
give t_cpu_us / t_snic_us directly, or give `measured` samples (their mean is
used). Edges carry traffic fractions (default: an even split); without edges
the elements form a chain in listed order. Pure: reads one file, no other I/O.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tandem.model.scenario import topological_order
from tandem.model.yaml_document import Document, path_str
from tandem.placement.kinds import kind_mismatch
from tandem.placement.smartchain.model import (TABLE_I, Edge, Element, ElementGraph, Problem, Server,
                                               SmartChainError)


# --------------------------------------------------------------------- schema

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # .inf/.nan are never a rate or a size


class MeasuredSpec(_Strict):
    t_cpu_us: list[float] = Field(min_length=1)
    t_snic_us: list[float] = Field(min_length=1)


class ElementSpec(_Strict):
    name: str = Field(min_length=1)
    kind: str | None = None
    t_cpu_us: float | None = Field(default=None, ge=0)
    t_snic_us: float | None = Field(default=None, ge=0)
    suitability_us: float | None = None
    measured: MeasuredSpec | None = None
    cap_cpu_mbps: float | None = Field(default=None, gt=0)
    cap_snic_mbps: float | None = Field(default=None, gt=0)
    reads: list[str] | None = None
    writes: list[str] | None = None
    drops: bool | None = None
    encap: bool | None = None
    stateful: bool | None = None

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str | None) -> str | None:
        if v is not None and v not in TABLE_I:
            raise ValueError(f"unknown kind {v!r}; known: {', '.join(sorted(TABLE_I))}")
        return v

    @model_validator(mode="after")
    def _complete(self) -> "ElementSpec":
        self.build()
        return self

    def build(self) -> Element:
        base = dict(TABLE_I[self.kind]) if self.kind else {}
        t_c, t_s = self.t_cpu_us, self.t_snic_us
        if self.measured is not None:
            t_c = sum(self.measured.t_cpu_us) / len(self.measured.t_cpu_us)
            t_s = sum(self.measured.t_snic_us) / len(self.measured.t_snic_us)
        t_c = base.get("t_cpu_us") if t_c is None else t_c
        t_s = base.get("t_snic_us") if t_s is None else t_s
        if self.suitability_us is not None:  # declared s_e: keep t^C, derive t^S
            t_c = 0.0 if t_c is None else t_c
            t_s = t_c - self.suitability_us
        cap_c = self.cap_cpu_mbps or base.get("cap_cpu_mbps")
        cap_s = self.cap_snic_mbps or base.get("cap_snic_mbps")
        missing = [n for n, v in (("t_cpu_us", t_c), ("t_snic_us", t_s), ("cap_cpu_mbps", cap_c),
                                  ("cap_snic_mbps", cap_s)) if v is None]
        if missing:
            raise ValueError(f"element {self.name!r} needs {', '.join(missing)} (or a Table I `kind`)")

        def pick(name: str, default: Any) -> Any:
            v = getattr(self, name)
            return base.get(name, default) if v is None else v

        return Element(self.name, float(t_c), float(t_s), float(cap_c), float(cap_s),
                       frozenset(pick("reads", ())), frozenset(pick("writes", ())), bool(pick("drops", False)),
                       bool(pick("encap", False)), bool(pick("stateful", False)), self.kind)


class EdgeSpec(_Strict):
    from_: str = Field(alias="from")
    to: str
    fraction: float | None = Field(default=None, gt=0, le=1)


class GraphSpec(_Strict):
    name: str = Field(min_length=1)
    throughput_mbps: float = Field(gt=0)
    elements: list[ElementSpec] = Field(min_length=1)
    edges: list[EdgeSpec | tuple[str, str]] | None = None
    dependencies: list[tuple[str, str]] = []

    @model_validator(mode="after")
    def _names(self) -> "GraphSpec":
        seen: set[str] = set()
        for e in self.elements:
            if e.name in seen:
                raise ValueError(f"element name {e.name!r} is used twice")
            seen.add(e.name)
        for k, ed in enumerate(self.edges or []):
            a, b = (ed.from_, ed.to) if isinstance(ed, EdgeSpec) else ed
            for n in (a, b):
                if n not in seen:
                    raise ValueError(f"edges[{k}] names unknown element {n!r}")
        for k, (a, b) in enumerate(self.dependencies):
            for n in (a, b):
                if n not in seen:
                    raise ValueError(f"dependencies[{k}] names unknown element {n!r}")
        self.build()
        return self

    def build(self) -> ElementGraph:
        elems = tuple(e.build() for e in self.elements)
        if self.edges is None:
            raw = [(a.name, b.name, None) for a, b in zip(elems, elems[1:])]
        else:
            raw = [(e.from_, e.to, e.fraction) if isinstance(e, EdgeSpec) else (e[0], e[1], None) for e in self.edges]
        out_deg: dict[str, list[int]] = {}
        for k, (a, _, _) in enumerate(raw):
            out_deg.setdefault(a, []).append(k)
        edges = []
        for k, (a, b, f) in enumerate(raw):
            sib = out_deg[a]
            given = [raw[j][2] for j in sib if raw[j][2] is not None]
            if f is None:
                left = 1.0 - sum(given)
                f = left / (len(sib) - len(given))
            edges.append(Edge(a, b, float(f)))
        for a, ks in out_deg.items():
            tot = sum(edges[k].fraction for k in ks)
            if abs(tot - 1.0) > 1e-6:
                raise ValueError(f"traffic fractions of the edges leaving {a!r} sum to {tot:g}, not 1")
        roots = {e.name for e in elems} - {b for _, b, _ in raw}
        if len(roots) != 1:
            raise ValueError(f"an element graph needs exactly one entry element; found {sorted(roots) or 'none'}")
        return ElementGraph(self.name, elems, tuple(edges), self.throughput_mbps, tuple(self.dependencies))


class ServerSpec(_Strict):
    name: str
    snic_capacity: float = Field(default=1.0, ge=0)
    cpu_capacity: float = Field(default=1.0, ge=0)


class ProblemSpec(_Strict):
    t_trans_us: float = Field(default=26.0, ge=0)
    max_round_trips: int = Field(default=1, ge=1, le=16)
    capacity_model: Literal["upper_bound", "traffic_share"] = "upper_bound"
    servers: list[ServerSpec] = Field(default_factory=lambda: [ServerSpec(name="server0")], min_length=1)
    graphs: list[GraphSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "ProblemSpec":
        for label, names in (("graph", [g.name for g in self.graphs]), ("server", [s.name for s in self.servers])):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{label} name {dup[0]!r} is used twice")
        return self

    def build(self, name: str = "smartchain") -> Problem:
        return Problem(tuple(g.build() for g in self.graphs), tuple(Server(s.name, s.snic_capacity, s.cpu_capacity)
                                                                   for s in self.servers),
                       self.t_trans_us, self.max_round_trips, self.capacity_model, name)


def problem_from_data(data: dict, doc: Document | None = None, name: str = "smartchain") -> Problem:
    """Validate a parsed document; errors name the YAML path (and line with `doc`)."""
    try:
        spec = ProblemSpec.model_validate(data)
    except ValidationError as e:
        if doc:
            raise doc.validation_error(e) from None
        first = e.errors()[0]
        raise SmartChainError(f"{path_str(tuple(first['loc']))}: {first['msg']}") from None
    return spec.build(name)


def load_problem(path: Path) -> Problem:
    """A SmartChain problem file, or a Tandem scenario file with element graphs."""
    doc = Document(Path(path), SmartChainError)
    if is_scenario(doc.data):
        return problem_from_scenario(Path(path))
    wrong = kind_mismatch(doc.data, "smartchain", str(path), accepts_scenario=True)
    if wrong:
        raise SmartChainError(wrong)
    return problem_from_data(doc.data, doc, Path(path).stem)


# ------------------------------------------------------------ scenario files

def is_scenario(data: dict) -> bool:
    """A Tandem scenario (tandem.model) rather than a SmartChain problem file."""
    return "graphs" not in data and ("element_graphs" in data or "devices" in data)


def _kahn(nodes: list[str], edges: list[tuple[str, str]]) -> list[str]:
    order = topological_order(nodes, edges)
    return order + [n for n in nodes if n not in order]  # a cycle keeps its listed order; the analyzer names it


def problem_from_scenario(path: Path) -> Problem:
    """The element graphs of a scenario file as one SmartChain problem on its
    host and first sNIC: element latencies and capacities from each NF type's
    `cost.host` / `cost.snic` (SmartChain view: capacity, latency), field
    accesses from reads/writes/actions/state, theta_est from
    `throughput_estimate`, t_trans from the sNIC's PCIe link round trip."""
    from tandem.model.load import ScenarioError, load_scenario

    try:
        sc = load_scenario(path)
    except ScenarioError as e:
        raise SmartChainError(str(e)) from None
    return problem_from_model(sc, path)


def problem_from_model(sc, path: "Path | str") -> Problem:
    """`problem_from_scenario` for a loaded Scenario (`path` names it in errors)."""
    if not sc.element_graphs:
        raise SmartChainError(f"{path}: element_graphs: the scenario has no element graph to place")
    host_id = sc.host_id
    snic_id = next(iter(sc.snics), None)
    if snic_id is None:
        raise SmartChainError(f"{path}: devices: SmartChain needs an sNIC device")
    link = next((l for l in sc.links.values() if l.snic == snic_id), None)
    t_trans = (link.round_trip if link else 26e-6) * 1e6
    graphs = []
    for gname, eg in sc.element_graphs.items():
        where = f"{path}: element_graphs.{gname}"
        if eg.throughput_estimate is None:
            raise SmartChainError(f"{where}.throughput_estimate: SmartChain needs the estimated throughput (theta_est)")
        elems = []
        order = _kahn(list(eg.nodes), [(e.src, e.dst) for e in eg.edges])
        for node in order:
            inst = sc.instances[node]
            ntype = getattr(inst, "type", None)
            if ntype is None:
                raise SmartChainError(f"{where}.nodes: {node!r} is not an NF instance")
            t = sc.nf_types[ntype]
            prof = {}
            for dev_id, kind in ((host_id, "host"), (snic_id, "snic")):
                c = t.profile_for(dev_id, kind)
                if c is None or c.capacity is None or c.latency is None:
                    raise SmartChainError(f"{path}: nf_types.{ntype}.cost.{kind}: SmartChain needs capacity and latency "
                                          f"(used by element {node!r} of graph {gname!r})")
                prof[kind] = c
            acts = set(t.effective_actions)
            elems.append(Element(node, prof["host"].latency * 1e6, prof["snic"].latency * 1e6,
                                 prof["host"].capacity / 1e6, prof["snic"].capacity / 1e6,
                                 frozenset(t.reads), frozenset(t.writes), "drop" in acts,
                                 bool(acts & {"encap", "decap"}), t.state != "none", ntype))
        edges = tuple(Edge(e.src, e.dst, e.fraction) for e in eg.edges)
        graphs.append(ElementGraph(gname, tuple(elems), edges, eg.throughput_estimate / 1e6))
    return Problem(tuple(graphs), (Server(host_id),), t_trans, 1, "upper_bound", sc.name)
