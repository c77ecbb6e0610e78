"""Placement problems derived from a scenario, and the decision `tandem run` takes (pure).

Inputs: a validated ``Scenario``. Outputs:
- ``uno_problem(sc)``: the UNO placement graph (§3.2.1). With
  ``placement.uno.edges`` given, exactly those (as ``tandem place uno``
  reads a scenario); otherwise derived from the chains and traffic: every
  hop of a chain (ingress, NFs, egress) is an edge carrying the bandwidth
  of the traffic sources that target the chain; an element graph's hops
  carry that bandwidth times the share of flows reaching the hop
  (``reach_fractions`` x branch fraction). T and D default to the PCIe
  link bandwidth and the sNIC's cores.
- ``smartchain_problem(sc)``: the element graphs as a SmartChain problem.
- ``pof_fp_problem(sc)`` / ``pof_fr_problem(sc)``: the OVS-POF-TC flow placement
  (replacement) problem: each ``traffic:`` source contributes ``flows`` flows of
  ``offered_bps / flows`` each, with kernel-path throughput C^kr =
  ``placement.pof.kernel_path_rate`` x the source's mean packet size; the taus
  come from ``placement.pof``; M^sn is ``placement.pof.max_offloaded_entries``
  capped by the first sNIC's ``flow_table_entries``. FR: sources with
  ``start: 0`` are the existing flows (offloaded as the exact FP answer places
  them), later sources the new ones.
- ``decide(sc, mode, pins)``: the NF -> device map a run uses, with the
  engine's objective, host vs sNIC cores and PCIe load (``Decision``).
  ``uno``: the UNO engine's answer (method ``fast``); ``smartchain``: S_ig,
  S_eg -> the first sNIC, C -> the host; ``pinned``: each NF's pin, else the
  host. ``pins`` (``--place NF=DEV``) override the engine for those NFs: the
  UNO problem is solved with them pinned, so the rest still fits T and D.
State: none. Cost: one engine call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

MODES = ("uno", "smartchain", "pinned")


class DecisionError(ValueError):
    """No placement for this scenario with this engine; says why."""


@dataclass
class Decision:
    mode: str
    placement: dict[str, str]  # NF -> device
    objective: Optional[float] = None
    objective_label: str = ""
    host_cores: float = 0.0  # engine's model: cores the NFs use on the host
    snic_cores: dict[str, float] = field(default_factory=dict)
    pcie_gbps: dict[str, float] = field(default_factory=dict)  # link -> Gbps crossing it (engine's model)
    method: str = ""
    pinned: dict[str, str] = field(default_factory=dict)
    raw: Optional[object] = None  # the engine's PlacementResult

    def as_json(self) -> dict:
        return {"mode": self.mode, "method": self.method, "placement": dict(sorted(self.placement.items())),
                "objective": self.objective, "objective_label": self.objective_label,
                "host_cores": self.host_cores, "snic_cores": self.snic_cores, "pcie_gbps": self.pcie_gbps,
                "pinned": dict(sorted(self.pinned.items()))}


def _chain_traffic(sc) -> dict[str, float]:
    out: dict[str, float] = {}
    for src in sc.traffic.values():
        out[src.target] = out.get(src.target, 0.0) + src.offered_bps()
    return out


def uno_edges(sc) -> list[tuple[str, str, float]]:
    """(from, to, bps) edges of the UNO placement graph derived from chains and traffic."""
    bw = _chain_traffic(sc)
    first = next(iter(sc.snics), None)
    ports = list(sc.snics[first].ports) if first else []
    d_in = f"{first}.{ports[0]}" if ports else None
    d_out = f"{first}.{ports[1 if len(ports) > 1 else 0]}" if ports else None

    def node(ref: Optional[str], default: Optional[str]) -> str:
        ref = ref or default
        if ref is None:
            raise DecisionError("a chain has no ingress/egress and the scenario no sNIC port to default to")
        head = ref.split(".", 1)[0]
        return ref if head in sc.devices else head

    edges: dict[tuple[str, str], float] = {}
    for cname, ch in sc.chains.items():
        path = [node(ch.ingress, d_in), *ch.nfs, node(ch.egress, d_out)]
        for a, z in zip(path, path[1:]):
            edges[(a, z)] = edges.get((a, z), 0.0) + bw.get(cname, 0.0)
    for gname, g in sc.element_graphs.items():
        t = bw.get(gname, 0.0)
        reach = g.reach_fractions()
        ing, eg = node(g.ingress, d_in), node(g.egress, d_out)
        edges[(ing, g.root)] = edges.get((ing, g.root), 0.0) + t
        for n in g.nodes:
            succ = g.successors(n)
            for e in succ:
                edges[(n, e.dst)] = edges.get((n, e.dst), 0.0) + t * reach.get(n, 0.0) * e.fraction
            if not succ and "drop" not in sc.nf_types[sc.instances[n].type].effective_actions:
                edges[(n, eg)] = edges.get((n, eg), 0.0) + t * reach.get(n, 0.0)
    return [(a, z, bps) for (a, z), bps in edges.items()]


def uno_problem(sc, pins: Optional[Mapping[str, str]] = None):
    """The UNO problem of the scenario (see the module doc); ``pins`` fix NFs to devices."""
    from tandem.model.scenario import PlacementInputs, UnoEdge, UnoInputs
    from tandem.placement.uno.model import HOST, UnoInputError
    from tandem.placement.uno.io import problem_from_scenario

    uno = sc.placement.uno
    if uno is None or not uno.edges:
        edges = [UnoEdge.model_construct(src=a, dst=z, traffic=bps) for a, z, bps in uno_edges(sc)]
        if not edges:
            raise DecisionError("no chain, element graph or placement.uno.edges to derive a UNO placement graph from")
        uno = UnoInputs.model_construct(edges=edges, pcie_budget=dict(uno.pcie_budget) if uno else {},
                                        snic_capacity_cores=dict(uno.snic_capacity_cores) if uno else {})
        sc = sc.model_copy(update={"placement": PlacementInputs.model_construct(uno=uno, pof=sc.placement.pof)})
    try:
        p = problem_from_scenario(sc)
    except UnoInputError as e:
        raise DecisionError(str(e)) from None
    if pins:
        from dataclasses import replace

        nodes = tuple(replace(n, pin=(HOST if pins[n.name] == sc.host_id else pins[n.name])) if n.name in pins else n
                      for n in p.nodes)
        p = replace(p, nodes=nodes)
    return p


def smartchain_problem(sc):
    from tandem.placement.smartchain.io import problem_from_model

    return problem_from_model(sc, sc.name)


def _pof_setup(sc, problem: str):
    from tandem.placement.pof.model import PofParams

    if not sc.snics:
        raise DecisionError(f"{problem}: devices: the scenario has no kind: snic device to offload flows to")
    if not sc.traffic:
        raise DecisionError(f"{problem}: traffic: the scenario has no traffic sources; POF places their flows")
    snic = next(iter(sc.snics.values()))
    pof = sc.placement.pof
    us = 1e6
    params = PofParams(pof.tau1 * us, pof.tau2 * us, pof.tau3 * us, pof.tau_add * us, pof.tau_del * us,
                       min(int(pof.max_offloaded_entries), int(snic.flow_table_entries)))
    return params


def _pof_flows(sc, sources: list[str]):
    """Flows of the named traffic sources (ids ``SOURCE`` or ``SOURCE#i``), Mbps."""
    import numpy as np

    from tandem.placement.pof.model import Flows

    kpps = sc.placement.pof.kernel_path_rate
    rates, kernel, ids = [], [], []
    for name in sources:
        src = sc.traffic[name]
        n = int(src.flows)
        rates.append(np.full(n, src.offered_bps() / n / 1e6))
        kernel.append(np.full(n, kpps * src.mean_packet_size() * 8 / 1e6))
        ids.extend([name] if n == 1 else [f"{name}#{i}" for i in range(n)])
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
    return Flows(cat(rates), cat(kernel), tuple(ids))


def pof_fp_problem(sc):
    """The POF flow-placement problem of the scenario's traffic (see the module doc)."""
    from tandem.placement.pof.model import FpInstance

    params = _pof_setup(sc, "pof-fp")
    return FpInstance(_pof_flows(sc, list(sc.traffic)), params)


def pof_fr_problem(sc):
    """The POF flow-replacement problem: sources starting at 0 are the existing flows,
    offloaded as the exact FP answer places them; sources starting later are new."""
    from tandem.placement.pof.exact import solve_fp
    from tandem.placement.pof.model import FpInstance, FrInstance

    params = _pof_setup(sc, "pof-fr")
    old = [n for n, s in sc.traffic.items() if s.start <= 0]
    new = [n for n, s in sc.traffic.items() if s.start > 0]
    if not new:
        raise DecisionError("pof-fr: traffic: no source has start > 0; the new flows of a replacement are "
                            "the sources that start later")
    existing = _pof_flows(sc, old)
    z = solve_fp(FpInstance(existing, params)).offload
    return FrInstance(existing, z, _pof_flows(sc, new), params)


def _nf_loads(sc, placement: Mapping[str, str]) -> tuple[float, dict[str, float]]:
    """Cores the NFs need at the derived edges' traffic (cores_per_gbps x Gbps in)."""
    inflow: dict[str, float] = {}
    try:
        for _, z, bps in uno_edges(sc):
            inflow[z] = inflow.get(z, 0.0) + bps / 1e9
    except DecisionError:
        return 0.0, {}
    host, snic = 0.0, {s: 0.0 for s in sc.snics}
    for n, dev in placement.items():
        t = sc.nf_types[sc.instances[n].type]
        prof = t.profile_for(dev, sc.devices[dev].kind)
        per = prof.cores_per_gbps if prof is not None and prof.cores_per_gbps is not None else 0.0
        if dev == sc.host_id:
            host += per * inflow.get(n, 0.0)
        else:
            snic[dev] = snic.get(dev, 0.0) + per * inflow.get(n, 0.0)
    return host, snic


def _pcie_load(sc, placement: Mapping[str, str]) -> dict[str, float]:
    """Gbps crossing each link (both directions) for the derived edges and this placement."""
    where = dict(placement)
    for vid in sc.vms():
        where[vid] = sc.host_id
    out = {l: 0.0 for l in sc.links}
    link_of = {ln.snic: l for l, ln in sc.links.items()}
    try:
        edges = uno_edges(sc)
    except DecisionError:
        return out
    for a, z, bps in edges:
        da = where.get(a) or a.split(".", 1)[0]
        dz = where.get(z) or z.split(".", 1)[0]
        if da == dz:
            continue
        for d in (da, dz):
            if d in link_of:
                out[link_of[d]] += bps / 1e9
    return out


def decide(sc, mode: Optional[str] = None, pins: Optional[Mapping[str, str]] = None) -> Decision:
    mode = mode or sc.run.placement
    pins = dict(pins or {})
    base = {name: (inst.pin or sc.host_id) for name, inst in sc.nfs().items()}
    free = {name for name, inst in sc.nfs().items() if inst.pin is None} - set(pins)
    if mode == "pinned" or not free:  # nothing left for an engine to decide
        placement = dict(base, **pins)
        d = Decision(mode, placement, method="pins", pinned=pins)
    elif mode == "uno":
        from tandem.placement.uno.engine import solve
        from tandem.placement.uno.model import UnoInfeasible, UnoInputError

        p = uno_problem(sc, pins)
        try:
            r = solve(p, "fast")
        except (UnoInfeasible, UnoInputError) as e:
            raise DecisionError(f"UNO: {e}") from None
        placement = dict(base)
        for n in sc.nfs():
            if n in r.assignment:
                dev = r.assignment[n]
                placement[n] = sc.host_id if dev == "host" else dev
        placement.update(pins)
        d = Decision(mode, placement, r.objective, "host cores (UNO objective)", method=r.method, pinned=pins, raw=r)
    elif mode == "smartchain":
        from tandem.placement.smartchain.engine import solve
        from tandem.placement.smartchain.model import SmartChainError

        if not sc.element_graphs:
            raise DecisionError("SmartChain places element graphs; this scenario has none")
        try:
            r = solve(smartchain_problem(sc))
        except SmartChainError as e:
            raise DecisionError(f"SmartChain: {e}") from None
        snic = next(iter(sc.snics), None)
        placement = dict(base)
        for key, pos in r.assignment.items():
            nf = key.split("/", 1)[1]
            placement[nf] = sc.host_id if pos == "C" or snic is None else snic
        placement.update(pins)
        d = Decision(mode, placement, r.objective, "latency benefit (SmartChain objective)", method=r.method,
                     pinned=pins, raw=r)
    else:
        raise DecisionError(f"run.placement {mode!r}: choose one of {', '.join(MODES)}")
    _loads(sc, d)
    return d


def _loads(sc, d: Decision) -> None:
    """Host / sNIC cores and PCIe Gbps of the decision in UNO's model (``uno.evaluate`` on
    the derived problem) when the scenario gives one, else from the derived chain edges."""
    from tandem.placement.uno.model import HOST, UnoInputError, evaluate

    try:
        p = uno_problem(sc)
    except (DecisionError, UnoInputError):
        d.host_cores, d.snic_cores = _nf_loads(sc, d.placement)
        d.pcie_gbps = _pcie_load(sc, d.placement)
        return
    where = {}
    for n in p.nodes:
        if n.name in d.placement:
            where[n.name] = HOST if d.placement[n.name] == sc.host_id else d.placement[n.name]
        else:
            where[n.name] = n.pin if n.pin is not None else HOST
    ev = evaluate(p, where)
    d.host_cores = float(ev.host_use[0])
    d.snic_cores = {s.name: float(ev.snic_use[k][0]) for k, s in enumerate(p.snics)}
    link_of = {ln.snic: l for l, ln in sc.links.items()}
    d.pcie_gbps = {link_of.get(s.name, s.name): float(ev.pcie_up[k] + ev.pcie_down[k]) for k, s in enumerate(p.snics)}


def explain(sc, d: Decision) -> list[str]:
    """Plain sentences on the decision: where each NF went and what the alternative
    of everything on the host would have cost in the same model."""
    on = {}
    for nf, dev in sorted(d.placement.items()):
        on.setdefault(dev, []).append(nf)
    lines = [f"placement ({d.mode}{', ' + d.method if d.method else ''}): "
             + "; ".join(f"{', '.join(nfs)} -> {dev}" for dev, nfs in sorted(on.items()))]
    if d.pinned:
        lines.append("pinned by --place: " + ", ".join(f"{n}={v}" for n, v in sorted(d.pinned.items())))
    if d.objective is not None:
        lines.append(f"objective: {d.objective:.4g} {d.objective_label}")
    snic = ", ".join(f"{s} {c:.3g}" for s, c in d.snic_cores.items())
    pcie = ", ".join(f"{l} {g:.3g} Gbps" for l, g in d.pcie_gbps.items())
    lines.append(f"host cores {d.host_cores:.3g} | sNIC cores {snic or '-'} | PCIe {pcie or '-'}")
    if d.mode == "uno" and d.placement and any(v != sc.host_id for v in d.placement.values()):
        host_all = Decision("pinned", {n: sc.host_id for n in d.placement})
        _loads(sc, host_all)
        budget = {s: sc.uno_pcie_budget(s) / 1e9 for s in sc.snics if any(l.snic == s for l in sc.links.values())}
        cap = {s: sc.uno_capacity_cores(s) for s in sc.snics}
        lines.append(f"why: all NFs on the host would need {host_all.host_cores:.3g} host cores; this placement needs "
                     f"{d.host_cores:.3g}, within sNIC capacity D ({', '.join(f'{s} {c}' for s, c in cap.items())} cores)"
                     f" and PCIe budget T ({', '.join(f'{s} {t:g} Gbps' for s, t in budget.items())}) - UNO minimizes"
                     f" host cores subject to T and D (§3.2.1)")
    return lines
