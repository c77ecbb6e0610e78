"""Cross-reference checks of a scenario (run as the last step of validation).

Input: a ``Scenario`` whose fields each passed their own validation. Output: a
list of ``ReferenceProblem(loc, message, value)`` — every name that points nowhere
(devices, NF types, instances, ports, tenants, chains), exactly one host, one
PCIe link per sNIC, element graphs that are rooted DAGs with branch fractions
adding up to 1, tenant core partitions that fit, one tenant per NF. ``raise_problems`` turns the
list into one pydantic ``ValidationError`` so each problem keeps its own YAML
path. Pure; no state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from tandem.model.graph import topological_or_none

if TYPE_CHECKING:  # pragma: no cover
    from tandem.model.scenario import Scenario

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class ReferenceProblem:
    loc: Loc
    message: str
    value: Any = None


def raise_problems(problems: list[ReferenceProblem]) -> None:
    if not problems:
        return
    details = [
        InitErrorDetails(
            type=PydanticCustomError("reference", "{message}", {"message": p.message}),
            loc=p.loc,
            input=p.value,
        )
        for p in problems
    ]
    raise ValidationError.from_exception_data("Scenario", details)


def _names(xs: Any) -> str:
    xs = sorted(xs)
    return ", ".join(xs) if xs else "none defined"


def resolve_endpoint(scn: "Scenario", ref: str) -> str | None:
    """None if ``ref`` names an existing instance, instance port or sNIC port; else why not."""
    inst, _, port = ref.partition(".")
    if inst in scn.instances:
        if port and port not in scn.instances[inst].ports:
            return f"instance {inst} has no port {port!r} (ports: {_names(scn.instances[inst].ports)})"
        return None
    dev = scn.devices.get(inst)
    if dev is not None:
        if dev.kind != "snic":
            return f"{inst} is the host; endpoints are instances or sNIC Ethernet ports"
        if not port:
            return f"{inst} is an sNIC; name one of its ports, e.g. {inst}.{next(iter(dev.ports), 'eth0')}"
        if port not in dev.ports:
            return f"sNIC {inst} has no port {port!r} (ports: {_names(dev.ports)})"
        return None
    return f"unknown instance or sNIC {inst!r} (instances: {_names(scn.instances)})"


def reference_problems(scn: "Scenario") -> list[ReferenceProblem]:
    out: list[ReferenceProblem] = []
    _devices_and_links(scn, out)
    _nf_types(scn, out)
    _instances(scn, out)
    _tenants(scn, out)
    _chains(scn, out)
    _graphs(scn, out)
    _tenant_owners(scn, out)
    _traffic(scn, out)
    _placement(scn, out)
    _migrations(scn, out)
    return out


def _migrations(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    """Scheduled NF moves: known NF and device, a cost profile there, inside the run,
    and per NF no two moves at one time nor two moves in a row to one device."""
    last: dict[str, tuple[float, str, int]] = {}  # NF -> (time, device, index) of its latest move
    order = sorted(range(len(scn.migrations)), key=lambda i: (scn.migrations[i].at, i))
    for i in order:
        mv, loc = scn.migrations[i], ("migrations", i)
        if mv.nf not in scn.nfs():
            out.append(ReferenceProblem(loc + ("nf",), f"unknown NF {mv.nf!r} (NFs: {_names(scn.nfs())})", mv.nf))
            continue
        if mv.to not in scn.devices:
            out.append(ReferenceProblem(loc + ("to",), f"unknown device {mv.to!r} (devices: {_names(scn.devices)})", mv.to))
            continue
        if mv.at >= scn.run.duration:
            out.append(ReferenceProblem(loc + ("at",), f"{mv.at:g} s is not inside the run (run.duration {scn.run.duration:g} s)", mv.at))
        t = scn.nf_types.get(scn.instances[mv.nf].type)
        if t is not None and t.profile_for(mv.to, scn.devices[mv.to].kind) is None:
            out.append(ReferenceProblem(loc + ("to",), f"NF type {scn.instances[mv.nf].type} has no cost profile for {mv.to}", mv.to))
        prev = last.get(mv.nf)
        if prev is not None and prev[0] == mv.at:
            out.append(ReferenceProblem(loc + ("at",), f"NF {mv.nf} already moves at {mv.at:g} s (migrations[{prev[2]}]); moves of one NF cannot overlap", mv.at))
        elif prev is not None and prev[1] == mv.to:
            out.append(ReferenceProblem(loc + ("to",), f"NF {mv.nf} is already on {mv.to} by then (migrations[{prev[2]}] moves it there)", mv.to))
        last[mv.nf] = (mv.at, mv.to, i)


def _devices_and_links(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    hosts = [k for k, d in scn.devices.items() if d.kind == "host"]
    if not hosts:
        out.append(ReferenceProblem(("devices",), "no host: exactly one device must have kind: host"))
    for extra in hosts[1:]:
        out.append(ReferenceProblem(("devices", extra, "kind"), f"a second host (first is {hosts[0]}); exactly one host is allowed", "host"))
    linked: dict[str, str] = {}
    for lid, link in scn.links.items():
        dev = scn.devices.get(link.snic)
        if dev is None or dev.kind != "snic":
            out.append(ReferenceProblem(("links", lid, "snic"), f"{link.snic!r} is not an sNIC (sNICs: {_names(scn.snics)})", link.snic))
        elif link.snic in linked:
            out.append(ReferenceProblem(("links", lid, "snic"), f"sNIC {link.snic} is already joined to the host by links.{linked[link.snic]}", link.snic))
        else:
            linked[link.snic] = lid
    for sid in scn.snics:
        if sid not in linked:
            out.append(ReferenceProblem(("devices", sid), f"sNIC {sid} has no PCIe link: add links.<name> with snic: {sid}"))


def _nf_types(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    for tid, t in scn.nf_types.items():
        for key, prof in t.cost.items():
            loc: tuple = ("nf_types", tid, "cost", key)
            if key not in ("host", "snic") and key not in scn.devices:
                out.append(ReferenceProblem(loc, f"{key!r} is neither a device kind (host, snic) nor a device id ({_names(scn.devices)})", key))
                continue
            if prof.accelerator is None:
                continue
            kind = prof.accelerator.kind
            if key == "host" or (key in scn.devices and scn.devices[key].kind == "host"):
                out.append(ReferenceProblem(loc + ("accelerator",), "the host has no accelerators; accelerator use belongs in an sNIC profile", kind))
            elif key == "snic" and not any(s.has_accelerator(kind) for s in scn.snics.values()):
                out.append(ReferenceProblem(loc + ("accelerator", "kind"), f"no sNIC has a {kind} accelerator", kind))
            elif key in scn.snics and not scn.snics[key].has_accelerator(kind):
                out.append(ReferenceProblem(loc + ("accelerator", "kind"), f"sNIC {key} has no {kind} accelerator", kind))


def _instances(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    for iid, inst in scn.instances.items():
        if inst.tenant is not None and inst.tenant not in scn.tenants:
            out.append(ReferenceProblem(("instances", iid, "tenant"), f"unknown tenant {inst.tenant!r} (tenants: {_names(scn.tenants)})", inst.tenant))
        if inst.kind != "nf":
            continue
        t = scn.nf_types.get(inst.type)
        if t is None:
            out.append(ReferenceProblem(("instances", iid, "type"), f"unknown NF type {inst.type!r} (nf_types: {_names(scn.nf_types)})", inst.type))
        if inst.pin is not None:
            dev = scn.devices.get(inst.pin)
            if dev is None:
                out.append(ReferenceProblem(("instances", iid, "pin"), f"unknown device {inst.pin!r} (devices: {_names(scn.devices)})", inst.pin))
            elif t is not None and t.profile_for(inst.pin, dev.kind) is None:
                out.append(ReferenceProblem(("instances", iid, "pin"), f"NF type {inst.type} has no cost profile for {inst.pin} ({dev.kind})", inst.pin))


def _tenants(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    used: Counter[str] = Counter()
    for tid, ten in scn.tenants.items():
        for dev, n in ten.cores.items():
            if dev not in scn.devices:
                out.append(ReferenceProblem(("tenants", tid, "cores", dev), f"unknown device {dev!r} (devices: {_names(scn.devices)})", n))
            else:
                used[dev] += n
        for kind in ten.accelerator_rates:
            if not any(s.has_accelerator(kind) for s in scn.snics.values()):
                out.append(ReferenceProblem(("tenants", tid, "accelerator_rates", kind), f"no sNIC has a {kind} accelerator", kind))
    for dev, n in used.items():
        if n > scn.devices[dev].cores:
            out.append(ReferenceProblem(("tenants",), f"tenants reserve {n} cores on {dev}, which has {scn.devices[dev].cores}", n))
    share = sum(t.cache_share or 0.0 for t in scn.tenants.values())
    if share > 1 + 1e-9:
        out.append(ReferenceProblem(("tenants",), f"cache_share values add up to {share:g}; they must add up to at most 1", share))


def _tenant_owners(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    """An NF belongs to one tenant: its own ``tenant`` and those of the chains and
    graphs listing it must agree (isolation confines it to one tenant's share)."""
    owner: dict[str, tuple[str, str]] = {}  # nf -> (tenant, where it was set)
    for iid, inst in scn.instances.items():
        if inst.kind == "nf" and inst.tenant in scn.tenants:
            owner[iid] = (inst.tenant, f"instances.{iid}")
    groups = [(("chains", cid), ch.nfs, ch.tenant) for cid, ch in scn.chains.items()]
    groups += [(("element_graphs", gid), g.nodes, g.tenant) for gid, g in scn.element_graphs.items()]
    for loc, nfs, tenant in groups:
        if tenant not in scn.tenants:
            continue
        for nf in nfs:
            if nf not in scn.instances:
                continue
            first = owner.setdefault(nf, (tenant, ".".join(loc)))
            if first[0] != tenant:
                out.append(ReferenceProblem(loc + ("tenant",), f"{nf} belongs to tenant {first[0]} ({first[1]}), not {tenant};"
                                            f" an NF instance serves one tenant", tenant))


def _check_nf_ref(scn: "Scenario", name: str, loc: Loc, out: list[ReferenceProblem]) -> None:
    inst = scn.instances.get(name)
    if inst is None:
        out.append(ReferenceProblem(loc, f"unknown instance {name!r} (NFs: {_names(scn.nfs())})", name))
    elif inst.kind != "nf":
        out.append(ReferenceProblem(loc, f"{name} is a VM; only NF instances can be chained here", name))


def _check_endpoint(scn: "Scenario", ref: str | None, loc: Loc, out: list[ReferenceProblem]) -> None:
    if ref is not None:
        why = resolve_endpoint(scn, ref)
        if why:
            out.append(ReferenceProblem(loc, why, ref))


def _check_tenant(scn: "Scenario", tenant: str | None, loc: Loc, out: list[ReferenceProblem]) -> None:
    if tenant is not None and tenant not in scn.tenants:
        out.append(ReferenceProblem(loc, f"unknown tenant {tenant!r} (tenants: {_names(scn.tenants)})", tenant))


def _chains(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    for cid, ch in scn.chains.items():
        for i, nf in enumerate(ch.nfs):
            _check_nf_ref(scn, nf, ("chains", cid, "nfs", i), out)
        _check_endpoint(scn, ch.ingress, ("chains", cid, "ingress"), out)
        _check_endpoint(scn, ch.egress, ("chains", cid, "egress"), out)
        _check_tenant(scn, ch.tenant, ("chains", cid, "tenant"), out)


def _graphs(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    for gid, g in scn.element_graphs.items():
        base: Loc = ("element_graphs", gid)
        seen: set[str] = set()
        for i, n in enumerate(g.nodes):
            if n in seen:
                out.append(ReferenceProblem(base + ("nodes", i), f"{n} is listed twice", n))
            seen.add(n)
            _check_nf_ref(scn, n, base + ("nodes", i), out)
        bad_edge = False
        for k, e in enumerate(g.edges):
            for end, name in (("from", e.src), ("to", e.dst)):
                if name not in seen:
                    out.append(ReferenceProblem(base + ("edges", k, end), f"{name!r} is not a node of this graph (nodes: {_names(seen)})", name))
                    bad_edge = True
            if e.src == e.dst:
                out.append(ReferenceProblem(base + ("edges", k), f"self-loop on {e.src}", e.src))
                bad_edge = True
        _check_endpoint(scn, g.ingress, base + ("ingress",), out)
        _check_endpoint(scn, g.egress, base + ("egress",), out)
        _check_tenant(scn, g.tenant, base + ("tenant",), out)
        if bad_edge or len(seen) != len(g.nodes):
            continue
        pairs = [(e.src, e.dst) for e in g.edges]
        if len(set(pairs)) != len(pairs):
            out.append(ReferenceProblem(base + ("edges",), "the same edge appears twice"))
        if topological_or_none(g.nodes, pairs) is None:
            out.append(ReferenceProblem(base + ("edges",), "the edges form a cycle; an element graph must be acyclic"))
            continue
        roots = [n for n in g.nodes if n not in {e.dst for e in g.edges}]
        if len(roots) != 1:
            out.append(ReferenceProblem(base + ("edges",), f"an element graph needs exactly one root (node without incoming edges); found {len(roots)}: {', '.join(roots)}"))
        for n in g.nodes:
            succ = g.successors(n)
            total = sum(e.fraction for e in succ)
            if succ and abs(total - 1.0) > 1e-6:
                out.append(ReferenceProblem(base + ("edges",), f"branch fractions leaving {n} add up to {total:g}; they must add up to 1", total))


def _traffic(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    for sid, src in scn.traffic.items():
        if src.target not in scn.chains and src.target not in scn.element_graphs:
            known = list(scn.chains) + list(scn.element_graphs)
            out.append(ReferenceProblem(("traffic", sid, "target"), f"unknown chain or element graph {src.target!r} (known: {_names(known)})", src.target))
        _check_endpoint(scn, src.ingress, ("traffic", sid, "ingress"), out)
        if src.esp is not None:
            _esp(scn, sid, src.esp, out)


def _esp(scn: "Scenario", sid: str, esp: Any, out: list[ReferenceProblem]) -> None:
    """An ESP source encrypts for inbound SAs of a SECGW NF type of the scenario."""
    loc: Loc = ("traffic", sid, "esp")
    t = scn.nf_types.get(esp.secgw)
    if t is None or t.type != "secgw":
        secgws = [n for n, x in scn.nf_types.items() if x.type == "secgw"]
        why = f"unknown NF type {esp.secgw!r}" if t is None else f"NF type {esp.secgw!r} is not a secgw (type: {t.type})"
        out.append(ReferenceProblem(loc + ("secgw",), f"{why}; the SAs come from a type: secgw NF type (those: {_names(secgws)})"))
        return
    inbound = {int(sa.get("spi", 0)) for sa in t.config.get("sas", []) if sa.get("dir") == "in"}
    if not inbound:
        out.append(ReferenceProblem(loc + ("secgw",), f"nf_types.{esp.secgw}.config.sas has no inbound (dir: in) SA to encrypt for"))
    for k, spi in enumerate(esp.spis):
        if spi not in inbound:
            known = ", ".join(str(x) for x in sorted(inbound)) or "none"
            out.append(ReferenceProblem(loc + ("spis", k), f"SPI {spi} is not an inbound SA of nf_types.{esp.secgw} (inbound SPIs: {known})"))


def _placement(scn: "Scenario", out: list[ReferenceProblem]) -> None:
    uno = scn.placement.uno
    if uno is None:
        return
    base: Loc = ("placement", "uno")
    for k, e in enumerate(uno.edges):
        for end, ref in (("from", e.src), ("to", e.dst)):
            inst, _, port = ref.partition(".")
            if inst in scn.instances and port:
                out.append(ReferenceProblem(base + ("edges", k, end), f"placement-graph vertices are instances ({inst}) or sNIC ports, not instance ports", ref))
            else:
                _check_endpoint(scn, ref, base + ("edges", k, end), out)
    for field in ("pcie_budget", "snic_capacity_cores"):
        for sid, v in getattr(uno, field).items():
            if sid not in scn.snics:
                out.append(ReferenceProblem(base + (field, sid), f"{sid!r} is not an sNIC (sNICs: {_names(scn.snics)})", v))
