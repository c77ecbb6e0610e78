"""Human summary of a scenario as rich renderables (used by ``tandem demo``).

Input: a validated ``Scenario``. Output: a list of rich renderables (panels and
tables: devices, PCIe links, NF types, instances, chains and element graphs,
traffic, placement inputs) plus ``offload_estimate`` — the static core count of
each traffic source's chain all-on-host vs all-on-sNIC from the NF types'
``cores_per_gbps``. Pure: nothing is printed here, so the emulator's live view
can be appended to the same list later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from tandem.model import units as u
from tandem.model.scenario import CostProfile, ElementGraph, FlowSize, Scenario


def _table(title: str, *columns: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", show_edge=False, pad_edge=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def _profile_text(p: CostProfile | None) -> str:
    if p is None:
        return "-"
    parts = []
    if p.cycles_per_packet:
        parts.append(f"{p.cycles_per_packet:g} cyc/pkt")
    if p.cycles_per_byte:
        parts.append(f"{p.cycles_per_byte:g} cyc/B")
    if p.accelerator:
        parts.append(f"{p.accelerator.kind} accel ({p.accelerator.bytes_fraction:.0%} of bytes)")
    if p.cores_per_gbps is not None:
        parts.append(f"{p.cores_per_gbps:g} cores/Gbps")
    if p.capacity is not None:
        parts.append(f"θ {u.human(p.capacity, u.BANDWIDTH)}")
    if p.latency is not None:
        parts.append(f"t {u.human(p.latency, u.DURATION)}")
    return ", ".join(parts) or "free"


def _ports_text(ports: dict) -> str:
    rates = {e.rate for e in ports.values()}
    if not ports:
        return "no Ethernet ports"
    if len(rates) == 1:
        return f"{len(ports)} × {u.human(rates.pop(), u.BANDWIDTH)} ports ({', '.join(ports)})"
    return ", ".join(f"{p} {u.human(e.rate, u.BANDWIDTH)}" for p, e in ports.items())


def devices_table(s: Scenario) -> Table:
    t = _table("Devices", "id", "kind", "compute", "memory", "sNIC features", "power idle/busy")
    for did, d in s.devices.items():
        power = f"{u.human(d.idle_power, u.POWER)} / {u.human(d.busy_power, u.POWER)}" if d.idle_power is not None else "-"
        compute = f"{d.cores} cores × {u.human(d.clock, u.FREQUENCY)}" + (f", speed {d.speed:g}" if d.speed != 1 else "")
        if d.kind == "snic":
            lines = [f"flow table {d.flow_table_entries} entries", _ports_text(d.ports)]
            lines += [f"{a.kind} accelerator {name}: {u.human(a.throughput, u.BANDWIDTH)}" for name, a in d.accelerators.items()]
            features = "\n".join(lines)
        else:
            features = "-"
        t.add_row(did, d.kind, compute, u.human(d.memory, u.SIZE), features, power)
    return t


def links_table(s: Scenario) -> Table:
    t = _table("PCIe links", "id", "joins", "bandwidth/dir", "round trip", "queue", "DMA cycles")
    for lid, l in s.links.items():
        rtt = u.human(l.round_trip, u.DURATION)
        if l.round_trip_breakdown:
            rtt += "\n= " + " + ".join(f"{k} {u.human(v, u.DURATION)}" for k, v in l.round_trip_breakdown.items())
        t.add_row(lid, f"{s.host_id} ↔ {l.snic}", u.human(l.bandwidth, u.BANDWIDTH), rtt, f"{l.queue_depth_packets} pkts", str(l.dma_cycles_per_crossing))
    return t


def nf_types_table(s: Scenario) -> Table:
    t = _table("NF types", "type", "on host", "on sNIC", "actions", "state")
    for tid, nt in s.nf_types.items():
        extra = [f"{k}: {_profile_text(p)}" for k, p in nt.cost.items() if k not in ("host", "snic")]
        snic = _profile_text(nt.cost.get("snic")) + ("; " + "; ".join(extra) if extra else "")
        t.add_row(tid, _profile_text(nt.cost.get("host")), snic, ", ".join(nt.effective_actions) or "-", nt.state)
    return t


def instances_table(s: Scenario, max_rows: int = 12) -> Table:
    """One row per instance; beyond ``max_rows`` instances, one row per identical group."""
    rows: dict[tuple, list[str]] = {}
    for iid, i in s.instances.items():
        typ = i.type if i.kind == "nf" else "-"
        pin = (i.pin or "-") if i.kind == "nf" else s.host_id
        key = (i.kind, typ, ", ".join(i.ports), pin, i.tenant or "-")
        rows.setdefault(key if len(s.instances) > max_rows else (iid, *key), []).append(iid)
    t = _table("Instances", "id", "kind", "type", "ports", "pinned", "tenant")
    for key, ids in rows.items():
        if len(s.instances) <= max_rows:
            t.add_row(*key)
        else:
            names = ", ".join(ids) if len(ids) <= 3 else f"{ids[0]}, {ids[1]} … {ids[-1]} ({len(ids)})"
            t.add_row(names, *key)
    return t


def tenants_table(s: Scenario) -> Table:
    t = _table("Tenants (isolation " + ("on" if s.run.isolation else "off") + ")", "id", "cores", "ingress buffer", "DRR weight", "cache share", "accelerator rates")
    for tid, ten in s.tenants.items():
        cores = ", ".join(f"{n} on {d}" for d, n in ten.cores.items()) or "-"
        rates = ", ".join(f"{k} {u.human(v, u.BANDWIDTH)}" for k, v in ten.accelerator_rates.items()) or "-"
        share = f"{ten.cache_share:.0%}" if ten.cache_share is not None else "-"
        t.add_row(tid, cores, u.human(ten.ingress_buffer, u.SIZE), f"{ten.drr_weight:g}", share, rates)
    return t


def graph_text(g: ElementGraph) -> str:
    edges = ", ".join(f"{e.src}→{e.dst}" + (f" ({e.fraction:.0%})" if e.fraction < 1 else "") for e in g.edges)
    return f"root {g.root}; {edges or 'no edges'}"


def chains_table(s: Scenario) -> Table:
    t = _table("Chains and element graphs", "id", "path", "tenant")
    for cid, c in s.chains.items():
        hops = ([c.ingress] if c.ingress else []) + list(c.nfs) + ([c.egress] if c.egress else [])
        t.add_row(cid, " → ".join(hops), c.tenant or "-")
    for gid, g in s.element_graphs.items():
        est = f"; θ_est {u.human(g.throughput_estimate, u.BANDWIDTH)}" if g.throughput_estimate else ""
        t.add_row(f"{gid} (graph)", f"{len(g.nodes)} elements: " + graph_text(g) + est, g.tenant or "-")
    return t


def traffic_table(s: Scenario) -> Table:
    t = _table("Traffic", "id", "into", "pattern", "rate", "packets", "flows")
    for sid, src in s.traffic.items():
        rate = f"{u.human(src.offered_bps(), u.BANDWIDTH)} ({u.human(src.offered_pps(), u.PACKET_RATE)})"
        if src.pattern == "onoff":
            rate += f", on {u.human(src.on_time, u.DURATION)} / off {u.human(src.off_time, u.DURATION)}"
        if src.pattern == "ramp":
            rate = f"up to {rate}, {len(src.schedule or [])} points ({src.interpolate})"
        if src.esp is not None:
            rate += f", ESP under {src.esp.secgw}"
        rec = src.recording
        if rec is not None:
            rate += ", looped" if src.repeat else ""
            sizes = f"{Path(src.pcap).name}: {rec.frames} frames, mean {src.mean_packet_size():.0f} B"
            flows = "as recorded"
        else:
            sizes = ", ".join(f"{b} B" + (f" {p:.0%}" if p < 1 else "") for b, p in src.size_mix())
            flows = f"{src.flows} at once, {flow_size_text(src.flow_size)}" if src.flow_size else str(src.flows)
        t.add_row(sid, src.target + (f" via {src.ingress}" if src.ingress else ""), src.pattern, rate, sizes, flows)
    return t


def flow_size_text(fs: FlowSize) -> str:
    """``pareto, mean 50 pkts, shape 1.5``: a flow-size distribution in one line."""
    return f"{fs.dist}, mean {fs.mean_packets:g} pkts" + (f", shape {fs.shape:g}" if fs.shape is not None else "")


def placement_text(s: Scenario) -> Text:
    lines = []
    uno = s.placement.uno
    if uno is not None:
        vertices = {e.src for e in uno.edges} | {e.dst for e in uno.edges}
        per_snic = ", ".join(
            f"{sid}: T = {u.human(s.uno_pcie_budget(sid), u.BANDWIDTH)}, D = {s.uno_capacity_cores(sid)} cores" for sid in s.snics
        )
        lines.append(f"UNO placement graph: {len(vertices)} vertices, {len(uno.edges)} edges; {per_snic}")
    p = s.placement.pof
    lines.append(
        f"POF offload: τ1 {u.human(p.tau1, u.DURATION)}, τ2 {u.human(p.tau2, u.DURATION)}, τ3 {u.human(p.tau3, u.DURATION)}, "
        f"kernel path {u.human(p.kernel_path_rate, u.PACKET_RATE)}, τ_add {u.human(p.tau_add, u.DURATION)}, "
        f"τ_del {u.human(p.tau_del, u.DURATION)}, sNIC holds {p.max_offloaded_entries} POF-FTs"
    )
    return Text("\n".join(lines))


@dataclass(frozen=True)
class OffloadEstimate:
    """Static core demand of one traffic source's chain (UNO resource ratios)."""

    source: str
    offered_gbps: float
    host_cores: float | None  # every NF on the host
    snic_cores: float | None  # every NF on the first sNIC


def offload_estimate(s: Scenario) -> list[OffloadEstimate]:
    """cores_per_gbps × offered Gbps summed over each source's NFs (branch shares
    applied in element graphs); None where some NF lacks a ratio for that side."""
    out = []
    for sid, src in s.traffic.items():
        gbps = src.offered_bps() / 1e9
        if src.target in s.chains:
            shares = {n: 1.0 for n in s.chains[src.target].nfs}
        else:
            shares = s.element_graphs[src.target].reach_fractions()
        totals: dict[str, float | None] = {}
        for side in ("host", "snic"):
            total: float | None = 0.0
            for nf, share in shares.items():
                inst = s.instances[nf]
                prof = s.nf_types[inst.type].cost.get(side)
                if prof is None or prof.cores_per_gbps is None:
                    total = None
                    break
                total += prof.cores_per_gbps * gbps * share
            totals[side] = total
        out.append(OffloadEstimate(sid, gbps, totals["host"], totals["snic"]))
    return out


def estimate_table(s: Scenario) -> Table:
    t = _table("Static load estimate (cores_per_gbps × offered load)", "traffic", "offered", "all on host", "all on sNIC")
    for e in offload_estimate(s):
        fmt = lambda x: "-" if x is None else f"{x:.1f} cores"  # noqa: E731
        t.add_row(e.source, f"{e.offered_gbps:g} Gbps", fmt(e.host_cores), fmt(e.snic_cores))
    return t


def summarize(s: Scenario) -> list[RenderableType]:
    """Everything ``tandem demo`` shows about a scenario, in order."""
    head = Text.assemble((s.name, "bold"), ("\n" + s.description) if s.description else "")
    parts: list[RenderableType] = [Panel(head, title="scenario", expand=False), devices_table(s)]
    if s.links:
        parts.append(links_table(s))
    if s.nf_types:
        parts.append(nf_types_table(s))
    if s.instances:
        parts.append(instances_table(s))
    if s.tenants:
        parts.append(tenants_table(s))
    if s.chains or s.element_graphs:
        parts.append(chains_table(s))
    if s.traffic:
        parts.append(traffic_table(s))
        if any(e.host_cores is not None or e.snic_cores is not None for e in offload_estimate(s)):
            parts.append(estimate_table(s))
    parts.append(Panel(placement_text(s), title="placement inputs", expand=False))
    return parts


def summary_group(s: Scenario) -> Group:
    return Group(*summarize(s))
