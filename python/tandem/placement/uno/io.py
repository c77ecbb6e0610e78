"""Reading UNO placement problems: the placement YAML/JSON format of
docs/placement.md and Tandem scenario files (`placement.uno` of a scenario).
This is the only I/O of the UNO engine; `problem_from_data` and
`problem_from_scenario` are pure. Every error names the file, line:column
(where known) and the YAML path of the offending value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tandem.placement.errors import PlacementFileError
from tandem.placement.kinds import kind_mismatch
from tandem.placement.uno.model import HOST, Edge, Incremental, Node, Snic, UnoInputError, UnoProblem

TOP_KEYS = {"pcie_accounting", "resources", "objective_weights", "host_capacity", "snics", "nf_types", "nodes",
            "edges", "incremental"}
SCENARIO_KEYS = {"devices", "instances", "placement", "links", "nf_types", "name"}


class _Where:
    """Formats 'file:line:col: path: message' from read_yaml's marks."""

    def __init__(self, file: str, marks: Mapping | None = None):
        self.file, self.marks = file, marks or {}

    def err(self, path: tuple, msg: str) -> UnoInputError:
        mark = self.marks.get(path)
        where = f"{self.file}:{mark[0]}:{mark[1]}" if mark else self.file
        dotted = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in path).replace(".[", "[")
        return UnoInputError(f"{where}: {dotted}: {msg}" if dotted else f"{where}: {msg}")


MAX_NUMBER = 1e9  # Gb/s, cores or any resource: beyond any machine


def _num(w: _Where, path: tuple, v: Any, minimum: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise w.err(path, f"{v!r} is not a number")
    if not math.isfinite(v) or v < minimum:
        raise w.err(path, f"{v!r} must be a finite number ≥ {minimum:g}")
    if v > MAX_NUMBER:  # the solvers' coefficients stay far from overflow
        raise w.err(path, f"{v!r} is too large (at most {MAX_NUMBER:g})")
    return float(v)


def _map(w: _Where, path: tuple, v: Any, what: str) -> Mapping:
    if not isinstance(v, Mapping):
        raise w.err(path, f"{what} must be a mapping, got {type(v).__name__}")
    return v


def _res_map(w: _Where, path: tuple, v: Any, resources: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for r, x in _map(w, path, v, "a resource mapping").items():
        if r not in resources:
            raise w.err(path + (r,), f"unknown resource {r!r}; declared resources: {', '.join(resources)}")
        out[r] = _num(w, path + (r,), x)
    return out


def _keys(w: _Where, path: tuple, m: Mapping, allowed: set[str], required: set[str] = frozenset()) -> None:
    for k in m:
        if k not in allowed:
            raise w.err(path + (k,), f"unknown key {k!r}; allowed: {', '.join(sorted(allowed))}")
    for k in required:
        if k not in m:
            raise w.err(path, f"missing key {k!r}")


def problem_from_data(data: Any, file: str = "<data>", marks: Mapping | None = None) -> UnoProblem:
    """Build a UnoProblem from parsed YAML/JSON in the placement format."""
    w = _Where(file, marks)
    d = _map(w, (), data, "a UNO placement problem")
    if set(d) == {"uno"}:
        return problem_from_data(d["uno"], file, {k[1:]: v for k, v in (marks or {}).items() if k[:1] == ("uno",)})
    wrong = kind_mismatch(d, "uno", file, accepts_scenario=True)
    if wrong:
        raise UnoInputError(wrong)
    _keys(w, (), d, TOP_KEYS, {"snics", "nodes", "edges"})
    mode = d.get("pcie_accounting", "duplex")
    resources = d.get("resources", ["cores"])
    if not isinstance(resources, list) or not resources or not all(isinstance(r, str) for r in resources):
        raise w.err(("resources",), "must be a non-empty list of resource names")
    resources = tuple(resources)
    weights = _res_map(w, ("objective_weights",), d.get("objective_weights", {resources[0]: 1.0}), resources)
    host_cap = _res_map(w, ("host_capacity",), d.get("host_capacity", {}), resources)
    snics = []
    for name, s in _map(w, ("snics",), d["snics"], "snics").items():
        s = _map(w, ("snics", name), s, f"sNIC {name}")
        _keys(w, ("snics", name), s, {"pcie_gbps", "capacity"}, {"pcie_gbps"})
        snics.append(Snic(str(name), _num(w, ("snics", name, "pcie_gbps"), s["pcie_gbps"]),
                          _res_map(w, ("snics", name, "capacity"), s.get("capacity", {}), resources)))
    if not snics:
        raise w.err(("snics",), "no sNIC is given; a UNO problem needs at least one "
                                "(e.g. snic0: {pcie_gbps: 32, capacity: {cores: 36}})")
    snic_names = {s.name for s in snics}
    types = {}
    for tname, t in _map(w, ("nf_types",), d.get("nf_types", {}), "nf_types").items():
        t = _map(w, ("nf_types", tname), t, f"NF type {tname}")
        _keys(w, ("nf_types", tname), t, {"host", "snic"}, {"host", "snic"})
        types[tname] = (_res_map(w, ("nf_types", tname, "host"), t["host"], resources),
                        _res_map(w, ("nf_types", tname, "snic"), t["snic"], resources))
    raw_edges = d["edges"]
    if not isinstance(raw_edges, list):
        raise w.err(("edges",), "must be a list of {from, to, gbps}")
    nodes_raw = _map(w, ("nodes",), d["nodes"], "nodes")
    edges = []
    inflow: dict[str, float] = {}
    outflow: dict[str, float] = {}
    for i, e in enumerate(raw_edges):
        p = ("edges", i)
        if isinstance(e, list) and len(e) == 3:
            e = {"from": e[0], "to": e[1], "gbps": e[2]}
        e = _map(w, p, e, "an edge ({from, to, gbps} or [from, to, gbps])")
        _keys(w, p, e, {"from", "to", "gbps"}, {"from", "to", "gbps"})
        for end in ("from", "to"):
            if e[end] not in nodes_raw:
                raise w.err(p + (end,), f"unknown node {e[end]!r}")
        g = _num(w, p + ("gbps",), e["gbps"])
        edges.append(Edge(str(e["from"]), str(e["to"]), g))
        outflow[e["from"]] = outflow.get(e["from"], 0.0) + g
        inflow[e["to"]] = inflow.get(e["to"], 0.0) + g
    nodes = []
    only_snic = next(iter(snic_names)) if len(snic_names) == 1 else None
    for name, n in nodes_raw.items():
        p = ("nodes", name)
        n = _map(w, p, n, f"node {name}")
        _keys(w, p, n, {"kind", "type", "snic", "pin", "accelerated", "host_use", "snic_use", "load_gbps"}, {"kind"})
        kind = n["kind"]
        if kind not in ("nf", "vm", "port"):
            raise w.err(p + ("kind",), f"{kind!r} is not one of nf, vm, port")
        pin = n.get("pin")
        if kind == "vm":
            pin = HOST
        elif kind == "port":
            pin = n.get("snic", only_snic)
            if pin is None:
                raise w.err(p, "a port needs `snic:` (there are several sNICs)")
        elif n.get("accelerated"):
            pin = n.get("snic", only_snic) if n["accelerated"] is True else n["accelerated"]
            if pin is None:
                raise w.err(p + ("accelerated",), "name the sNIC whose accelerator it uses")
        if pin is not None and pin != HOST and pin not in snic_names:
            raise w.err(p, f"pinned to unknown location {pin!r}; known: host, {', '.join(sorted(snic_names))}")
        host_use: dict[str, float] = {}
        nic_use: dict[str, float] = {}
        if kind == "nf":
            load = n.get("load_gbps")
            load = _num(w, p + ("load_gbps",), load) if load is not None else (inflow.get(name) or outflow.get(name, 0.0))
            if "type" in n:
                if n["type"] not in types:
                    raise w.err(p + ("type",), f"unknown NF type {n['type']!r}; known: {', '.join(sorted(types)) or 'none'}")
                rh, rn = types[n["type"]]
                host_use = {r: v * load for r, v in rh.items()}
                nic_use = {r: v * load for r, v in rn.items()}
            elif "host_use" not in n or "snic_use" not in n:
                raise w.err(p, "an NF needs `type:` or both `host_use:` and `snic_use:`")
            if "host_use" in n:
                host_use = _res_map(w, p + ("host_use",), n["host_use"], resources)
            if "snic_use" in n:
                nic_use = _res_map(w, p + ("snic_use",), n["snic_use"], resources)
        nodes.append(Node(str(name), kind, host_use, nic_use, pin))
    if "resources" in d:  # a declared resource that no node has a demand for is a mistake
        used = {r for nd in nodes for r in (*nd.host_use, *nd.nic_use)}
        for i, r in enumerate(resources):
            if r not in used:
                raise w.err(("resources", i), f"resource {r!r} is declared but no node uses it (give it a demand in "
                                              f"nf_types or host_use/snic_use, or remove it)")
    inc = None
    if "incremental" in d:
        ip = ("incremental",)
        x = _map(w, ip, d["incremental"], "incremental")
        _keys(w, ip, x, {"current", "move_cost", "move_budget"}, {"current"})
        cur = _map(w, ip + ("current",), x["current"], "current placement")
        budget = x.get("move_budget")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise w.err(ip + ("move_budget",), f"{budget!r} must be a whole number ≥ 0")
        inc = Incremental({str(k): str(v) for k, v in cur.items()},
                          _num(w, ip + ("move_cost",), x.get("move_cost", 0.0)), budget)
    try:
        return UnoProblem(tuple(nodes), tuple(edges), tuple(snics), resources, weights, mode, host_cap, inc)
    except UnoInputError as e:
        raise UnoInputError(f"{file}: {e}") from None


def problem_from_scenario(sc: Any, pcie_accounting: str = "shared") -> UnoProblem:
    """The UNO problem of a Tandem scenario: vertices are the NF/VM instances and
    sNIC ports named by `placement.uno.edges`; T defaults to the PCIe link
    bandwidth, D to the sNIC's cores; NF demand is cores_per_gbps × incoming
    traffic; an NF whose sNIC profile uses an accelerator the sNIC has, or with
    `pin:`, is pinned. Scenario budgets are one T per link, so the default
    accounting is "shared" (both directions against T)."""
    uno = sc.placement.uno if sc.placement is not None else None
    if uno is None or not uno.edges:
        raise UnoInputError(f"scenario {sc.name!r}: placement.uno.edges is missing; nothing to place")
    devices = sc.devices
    snic_ids = [k for k, dv in devices.items() if dv.kind == "snic"]
    if not snic_ids:
        raise UnoInputError(f"scenario {sc.name!r}: no sNIC device")
    link_bw = {ln.snic: ln.bandwidth for ln in sc.links.values()} if getattr(sc, "links", None) else {}
    snics = []
    for s in snic_ids:
        T = uno.pcie_budget.get(s, link_bw.get(s, 32e9)) / 1e9
        D = float(uno.snic_capacity_cores.get(s, devices[s].cores))
        snics.append(Snic(s, T, {"cores": D}))
    host_id = next((k for k, dv in devices.items() if dv.kind == "host"), "host")
    names: dict[str, str] = {}  # endpoint -> node name
    inflow: dict[str, float] = {}
    outflow: dict[str, float] = {}
    edges = []

    def node_of(ep: str) -> str:
        head, _, port = ep.partition(".")
        if head in devices and devices[head].kind == "snic":
            names[ep] = ep  # an sNIC Ethernet port
            return ep
        if head not in sc.instances:
            raise UnoInputError(f"scenario {sc.name!r}: placement.uno.edges: unknown endpoint {ep!r}")
        names[head] = head
        return head

    for i, e in enumerate(uno.edges):
        a, b = node_of(e.src), node_of(e.dst)
        g = e.traffic / 1e9
        if a == b:
            continue
        edges.append(Edge(a, b, g))
        outflow[a] = outflow.get(a, 0.0) + g
        inflow[b] = inflow.get(b, 0.0) + g
    nodes = []
    for n in names:
        if n not in sc.instances:
            nodes.append(Node(n, "port", pin=n.split(".")[0]))
            continue
        inst = sc.instances[n]
        if inst.kind == "vm":
            nodes.append(Node(n, "vm", pin=HOST))
            continue
        t = sc.nf_types[inst.type]
        load = inflow.get(n) or outflow.get(n, 0.0)
        hp = t.profile_for(host_id, "host")
        if hp is None or hp.cores_per_gbps is None:
            raise UnoInputError(f"scenario {sc.name!r}: nf_types.{inst.type}.cost.host.cores_per_gbps is needed for UNO placement")
        pin = None
        if inst.pin is not None:
            pin = HOST if inst.pin == host_id or inst.pin == HOST else inst.pin
        nic_use = 0.0
        for s in snic_ids:
            sp = t.profile_for(s, "snic")
            if sp is None or sp.cores_per_gbps is None:
                raise UnoInputError(f"scenario {sc.name!r}: nf_types.{inst.type}.cost.snic.cores_per_gbps is needed for UNO placement")
            nic_use = sp.cores_per_gbps * load
            if pin is None and sp.accelerator is not None and devices[s].has_accelerator(sp.accelerator.kind):
                pin = s
        nodes.append(Node(n, "nf", {"cores": hp.cores_per_gbps * load}, {"cores": nic_use}, pin))
    return UnoProblem(tuple(nodes), tuple(edges), tuple(snics), ("cores",), {"cores": 1.0}, pcie_accounting)


def load_problem(path: Path) -> UnoProblem:
    """Read a placement file (YAML or JSON) or a scenario file."""
    from tandem.model.load import ScenarioError, read_yaml

    file = str(path)
    if not path.exists():
        raise PlacementFileError(f"{file}: no such file")
    if path.is_dir():
        raise PlacementFileError(f"{file}: is a directory, expected a .yaml or .json file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlacementFileError(f"{file}: cannot read: {e}") from None
    try:
        data, marks, _ = read_yaml(text, file)
    except ScenarioError as e:
        raise UnoInputError(str(e).replace("a scenario is a mapping", "expected a UNO problem or a scenario")) from None
    if isinstance(data, Mapping) and (set(data) & SCENARIO_KEYS) and not (set(data) & {"snics", "uno"}):
        from tandem.model.load import load_scenario
        try:
            sc = load_scenario(path)
        except ScenarioError as e:
            raise UnoInputError(str(e)) from None
        return problem_from_scenario(sc)
    return problem_from_data(data, file, marks)
