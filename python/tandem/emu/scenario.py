"""Build an emulated machine from a ``tandem.model.Scenario``.

Input: a validated Scenario, an optional NF placement (instance -> device; by
default an NF runs where it is pinned, else on the host), a seed. Output: a
``Machine`` ready to run plus a ``Build`` record (where every NF runs, which
switch ports were made, the source names). Pure apart from configuring the
Rust emulator it creates.

How the scenario maps onto the emulator:
- host / sNIC devices keep cores, clock, speed, power; each sNIC Ethernet port
  becomes a line-rate port on the sNIC switch; accelerators keep their rate
  (x engines) and per-request setup time.
- each PCIe link gets the scenario's bandwidth per direction, one-way latency
  = round_trip / 2, queue depth and DMA cycles per crossing.
- every VM port is a host switch port ending in a sink; every NF port a switch
  port of its device. NF cost: the device's profile (see costs.py).
- chains and element graphs become switch port maps: each hop from one
  element to the next on the same device is a port-map entry; a hop between
  devices gets its own PCIe port pair (a VF), and sNIC-to-sNIC hops go via the
  host. Graph branches split flows by their fractions. What a leaf NF that
  drops (actions include ``drop``) emits is dropped as ``dropped_by_rule``.
- each traffic source enters at its (or its target's) ingress; without one,
  the first sNIC's first Ethernet port; egress defaults to that sNIC's
  second port (or the first). Generated sources get their own IPv4 source
  /16 and their flow-size distribution (a ``ramp`` its rate schedule; an
  ``esp`` source its flows as TCP inside ESP, encrypted under its SECGW
  type's inbound SAs: dp_emu ``esp_gen.rs``); a replay source sends its pcap's
  frames unchanged at the recorded gaps (an Ethernet ingress still holds
  them to line rate).
- tenants (FairNIC): an NF belongs to its instance's tenant, else to the
  tenant of the chain or graph listing it (``tenant_of_nfs``); a source to
  its target's tenant. Every tenant gets a ``tenants`` entry in the metrics.
  With ``run.isolation`` on:
  * cores (``tenant_cores``): a tenant's NFs on a device run only on the
    cores its ``cores:`` reserves there (laid out in tenant order from core
    0); the unreserved cores are the shared pool of everyone else;
  * accelerators: ``accelerator_rates`` put a token bucket (burst
    ``ACCEL_BURST_S`` of accelerator time) in front of each accelerator of
    that kind its NFs use;
  * ingress: ``ingress_buffer`` bounds the bytes of its packets waiting for
    sNIC cores (the rest are dropped as ``ingress_buffer_full``);
  * egress: every sNIC Ethernet port shares its wire among the tenants by
    deficit round robin with their ``drr_weight`` (traffic of no tenant is
    one more class of weight 1) — when the sources span two classes or more;
  * cache (static miss-penalty model, ``cache_hits``): a tenant with a
    ``working_set`` hits with probability min(1, its cache part / the
    working sets competing for that part) and each of its NFs on the sNIC
    pays ``memory_accesses_per_packet`` × misses × ``cache_miss_penalty``
    more core time per packet; its part is its ``cache_share`` of the cache.
  With isolation off every NF spreads its packets over all the device's
  cores, accelerators and Ethernet transmitters are plain shared FIFOs, one
  ingress buffer as big as all tenants' together serves every NF on the
  sNIC, and all working sets compete for the whole cache: a costly or greedy
  tenant's packets delay everyone's (head-of-line coupling).

Switching (``switching=``):
- ``"rules"`` (default): every device's switch is a dp-core OpenFlow 1.3 + POF
  pipeline. The scenario's virtual rules (``rules:``, else the chains compiled
  by ``oneswitch.scenario.chain_rules``) are translated by OneSwitch onto the
  topology derived for this placement (``oneswitch.scenario.derive_topology``)
  and installed on the host and every sNIC switch; each switch port number is
  its virtual port (PCIe link i uses port n+1+i on both ends, n virtual ports). Frames no
  rule forwards are dropped with the pipeline's reason (``table_miss``,
  ``no_output``, ...), counted per reason in the metrics.
- ``"portmap"``: the named fast path - a fixed in_port -> out_port map per
  switch built straight from the chains (one PCIe VF per crossing hop, graph
  branches split by flow hash). It accepts only scenarios without ``rules:``
  whose element graphs have no branches, where it forwards every frame like
  the rules do (tests/emu/test_rule_driven.py checks the frames per port).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from tandem.emu.costs import nf_cycles
from tandem.emu.machine import EmuError, Machine
from tandem.nf.config import nf_config_json
from tandem.oneswitch.ids import N_PHYSICAL_TABLES as N_TABLES  # OneSwitch's tables: 0..253 and the empty 254

Element = tuple[str, str]  # ("eth", "snic0.eth0") | ("vm", "vm1.eth0") | ("nf", "fw1")


@dataclass
class Build:
    placement: dict[str, str] = field(default_factory=dict)
    eth_ports: dict[str, tuple[str, int]] = field(default_factory=dict)  # "snic0.eth0" -> (device, port)
    vm_ports: dict[str, tuple[str, int]] = field(default_factory=dict)  # "vm1.eth0" -> (device, port)
    nf_ports: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # nf -> (device, in, out)
    sources: list[str] = field(default_factory=list)
    vf_pairs: int = 0
    nf_tenant: dict[str, str] = field(default_factory=dict)  # nf -> tenant (NFs that have one)
    nf_cores: dict[str, list[int]] = field(default_factory=dict)  # nf -> its cores, when isolation restricts them
    source_tenant: dict[str, str] = field(default_factory=dict)  # source -> tenant (sources that have one)
    cache: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)  # tenant -> sNIC -> (hit ratio, added s per packet)
    translation: Optional[object] = None  # the OneSwitch Translation (rule-driven switching)
    untagged_links: int = 0  # PCIe link directions carrying one destination without its flow-id mark (see untag_single_destination)

# Burst of a tenant's accelerator token bucket, in accelerator time.
ACCEL_BURST_S = 10e-6


def default_placement(sc) -> dict[str, str]:
    return {name: (inst.pin or sc.host_id) for name, inst in sc.nfs().items()}


def tenant_of_nfs(sc) -> dict[str, str]:
    """Each NF's tenant: its instance's own, else that of a chain or graph listing it."""
    out = {n: inst.tenant for n, inst in sc.nfs().items() if inst.tenant}
    groups = [(ch.nfs, ch.tenant) for ch in sc.chains.values()] + [(g.nodes, g.tenant) for g in sc.element_graphs.values()]
    for nfs, tenant in groups:
        for n in nfs:
            if tenant and n not in out:
                out[n] = tenant
    return out


def tenant_of_sources(sc, nf_tenant: dict[str, str]) -> dict[str, str]:
    """Each source's tenant: its target's, else the one tenant all the target's NFs share."""
    groups = {**{k: (c.nfs, c.tenant) for k, c in sc.chains.items()},
              **{k: (g.nodes, g.tenant) for k, g in sc.element_graphs.items()}}
    out = {}
    for sname, src in sc.traffic.items():
        nfs, tenant = groups.get(src.target, ([], None))
        owners = {nf_tenant.get(n) for n in nfs}
        if tenant:
            out[sname] = tenant
        elif len(owners) == 1 and None not in owners:
            out[sname] = owners.pop()
    return out


def tenant_cores(sc) -> dict[str, dict[str, list[int]]]:
    """device -> tenant -> reserved core indices (laid out in tenant order from
    core 0); the key ``""`` holds the device's shared pool (unreserved cores)."""
    out: dict[str, dict[str, list[int]]] = {}
    for dev_id, dev in sc.devices.items():
        nxt, parts = 0, {}
        for tname, t in sc.tenants.items():
            n = t.cores.get(dev_id, 0)
            if n:
                parts[tname] = list(range(nxt, nxt + n))
                nxt += n
        parts[""] = list(range(nxt, dev.cores))
        out[dev_id] = parts
    return out


def _nf_core_set(sc, nname: str, dev_id: str, tenant: Optional[str], parts: dict[str, dict[str, list[int]]]) -> Optional[list[int]]:
    """The cores NF `nname` may use on `dev_id` with isolation on (None: all)."""
    dev_parts = parts[dev_id]
    if len(dev_parts) == 1:
        return None  # nobody reserves cores here
    if tenant in dev_parts:
        return dev_parts[tenant]
    if not dev_parts[""]:
        raise EmuError(f"NF {nname} on {dev_id}: its tenant {tenant or '(none)'} reserves no cores there and the other"
                       f" tenants reserve all {sc.devices[dev_id].cores}; reserve cores for it or turn isolation off")
    return dev_parts[""]


def cache_hits(sc, nf_tenant: dict[str, str], placement: dict[str, str], isolated: bool) -> dict[str, dict[str, float]]:
    """tenant -> sNIC -> hit ratio of its working set (static model, see the module doc).

    Only tenants with a ``working_set`` and NFs on the sNIC take part. With
    isolation a tenant with ``cache_share`` has that part of the cache alone;
    the others share what the shares leave. Without isolation all compete for
    the whole cache. Accesses are spread evenly over the competing working
    sets, so each hits with probability min(1, part / their total)."""
    out: dict[str, dict[str, float]] = {}
    for snic_id, snic in sc.snics.items():
        users = sorted({t for n, t in nf_tenant.items() if placement.get(n) == snic_id and sc.tenants[t].working_set})
        if not users:
            continue
        groups: list[tuple[float, list[str]]] = []  # (cache bytes, tenants sharing them)
        if isolated:
            shared = [t for t in users if not sc.tenants[t].cache_share]
            groups += [(sc.tenants[t].cache_share * snic.cache, [t]) for t in users if sc.tenants[t].cache_share]
            left = 1.0 - sum(t.cache_share or 0.0 for t in sc.tenants.values())
            groups.append((max(left, 0.0) * snic.cache, shared))
        else:
            groups.append((float(snic.cache), users))
        for size, members in groups:
            total = sum(sc.tenants[t].working_set for t in members)
            for t in members:
                out.setdefault(t, {})[snic_id] = min(1.0, size / total) if total else 1.0
    return out


def _ingress_buffer(sc, m: Machine, made: dict[tuple[str, str], int], snic: str, tenant: Optional[str],
                    isolated: bool) -> Optional[int]:
    """The ingress buffer an NF of `tenant` on `snic` uses: with isolation its
    tenant's own (if it sets ``ingress_buffer``), else one shared buffer as big
    as all tenants' together (if any sets one)."""
    if isolated:
        size = sc.tenants[tenant].ingress_buffer if tenant else None
        key = (snic, tenant or "")
    else:
        sizes = [t.ingress_buffer for t in sc.tenants.values() if t.ingress_buffer]
        size = sum(sizes) if sizes else None
        key = (snic, "")
    if not size:
        return None
    if key not in made:
        made[key] = m.ingress_buffer(f"{snic}:{key[1] or 'shared'}", int(size))
    return made[key]


def _endpoint(sc, b: Build, ref: Optional[str], default: Optional[str]) -> Element:
    ref = ref or default
    if ref is None:
        raise EmuError("no ingress/egress given and the scenario has no sNIC Ethernet port to default to")
    inst, _, port = ref.partition(".")
    if inst in sc.devices:
        return ("eth", ref)
    if inst in sc.vms():
        return ("vm", f"{inst}.{port or sc.instances[inst].ports[0]}")
    if inst in sc.nfs():
        return ("nf", inst)
    raise EmuError(f"endpoint {ref!r}: not an sNIC port, VM or NF")


class _Wiring:
    """Accumulates port-map entries and per-hop PCIe pairs."""

    def __init__(self, sc, m: Machine, b: Build) -> None:
        self.sc, self.m, self.b = sc, m, b
        self.entries: dict[tuple[str, int], dict[int, float]] = {}
        self.owner: dict[tuple[str, int], str] = {}  # which chain/graph set each entry
        self.hops: dict[tuple[Element, Element], None] = {}
        self.current = ""  # the chain or graph being wired

    def where(self, el: Element) -> tuple[str, int, int]:
        kind, name = el
        if kind == "eth":
            d, p = self.b.eth_ports[name]
            return d, p, p
        if kind == "vm":
            d, p = self.b.vm_ports[name]
            return d, p, p
        return self.b.nf_ports[name]

    def link_between(self, a: str, b: str) -> tuple[str, bool]:
        """The PCIe link joining host and sNIC; True if `a` is its host side."""
        for lname, ln in self.sc.links.items():
            if {ln.snic, self.sc.host_id} == {a, b}:
                return lname, a == self.sc.host_id
        raise EmuError(f"no PCIe link between {a} and {b}")

    def entry(self, dev: str, in_port: int, out_port: int, weight: float) -> None:
        key = (dev, in_port)
        first = self.owner.setdefault(key, self.current)
        if first != self.current and out_port not in self.entries.get(key, {}):
            raise EmuError(f"{self.current} and {first} both send what leaves switch {dev} port {in_port} to different"
                           f" next hops; a port map cannot tell their packets apart (give them distinct NF instances or"
                           f" use OpenFlow rules through the emu backend)")
        outs = self.entries.setdefault(key, {})
        outs[out_port] = outs.get(out_port, 0.0) + weight

    def cross(self, src_dev: str, dst_dev: str) -> tuple[int, int]:
        """A fresh VF from src_dev to dst_dev: (port on src, port on dst)."""
        lname, src_is_host = self.link_between(src_dev, dst_dev)
        ps, pd = self.m.new_port(src_dev), self.m.new_port(dst_dev)
        host_end, snic_end = (ps, pd) if src_is_host else (pd, ps)
        host, snic = (src_dev, dst_dev) if src_is_host else (dst_dev, src_dev)
        self.m.pcie_pair(lname, self.m.sw(host, host_end), self.m.sw(snic, snic_end))
        self.b.vf_pairs += 1
        return ps, pd

    def hop(self, a: Element, z: Element, weight: float = 1.0) -> None:
        if (a, z) in self.hops:
            return
        self.hops[(a, z)] = None
        da, _, out_a = self.where(a)
        dz, in_z, _ = self.where(z)
        if da == dz:
            self.entry(da, out_a, in_z, weight)
            return
        host = self.sc.host_id
        if da != host and dz != host:  # sNIC -> host -> sNIC
            p1, h1 = self.cross(da, host)
            h2, p2 = self.cross(host, dz)
            self.entry(da, out_a, p1, weight)
            self.entry(host, h1, h2, 1.0)
            self.entry(dz, p2, in_z, 1.0)
            return
        pa, pz = self.cross(da, dz)
        self.entry(da, out_a, pa, weight)
        self.entry(dz, pz, in_z, 1.0)

    def install(self) -> None:
        for (dev, in_port), outs in sorted(self.entries.items()):
            self.m.branch(dev, in_port, sorted(outs.items()))


SWITCHING = ("rules", "portmap")


def portmap_refusal(sc) -> Optional[str]:
    """Why the port-map fast path cannot run `sc` (None: it can)."""
    if sc.rules:
        return "the scenario gives rules:, which only rule-driven switches run"
    for gname, g in sc.element_graphs.items():
        if any(len(g.successors(n)) > 1 for n in g.nodes):
            return f"element graph {gname} branches, which only rule-driven switches split like the rules do"
    return None


def build_from_scenario(sc, *, seed: Optional[int] = None, placement: Optional[dict[str, str]] = None,
                        switching: str = "rules", rules: Optional[list] = None,
                        groups: Optional[list] = None, install: bool = True,
                        migratable: bool = False) -> tuple[Machine, Build]:
    """``rules``/``groups``: virtual rules and groups to install instead of the
    scenario's (rule-driven switching only; the oracle uses it). ``install=False``:
    the pipelines start empty (a live controller fills them through OneSwitch).
    ``migratable``: NFs may move at run time (``Machine.migrate``): the switches run
    a ``OneSwitchState``'s rules as translated (no untagged PCIe hand-offs, which a
    remap would invalidate) and know every NF's ports on every device."""
    if switching not in SWITCHING:
        raise EmuError(f"switching {switching!r}: choose one of {', '.join(SWITCHING)}")
    vrules, vgroups = rules, groups
    rules = switching == "rules"
    if migratable and not rules:
        raise EmuError("NF migration needs rule-driven switching (the port-map fast path cannot remap an NF)")
    if not rules and portmap_refusal(sc):
        raise EmuError(f"the port-map fast path cannot run this scenario: {portmap_refusal(sc)}")
    seed = sc.run.seed if seed is None else seed
    m = Machine(seed)
    b = Build(placement=dict(default_placement(sc), **(placement or {})))
    vp = None
    if rules:
        from tandem.oneswitch.scenario import virtual_ports

        vp = virtual_ports(sc)
    isolated = sc.run.isolation and bool(sc.tenants)
    b.nf_tenant = tenant_of_nfs(sc)
    parts = tenant_cores(sc) if isolated else {}
    hits = cache_hits(sc, b.nf_tenant, b.placement, sc.run.isolation)
    accel_names: dict[tuple[str, str], str] = {}  # (device, kind) -> accelerator name
    buckets: dict[tuple[str, str, str], int] = {}  # (device, accelerator, tenant) -> token bucket
    ingress: dict[tuple[str, str], int] = {}  # (sNIC, tenant or "" for the shared one) -> ingress buffer
    for name, d in sc.devices.items():
        m.device(name, d.cores, d.clock, speed=d.speed, idle_watts=d.idle_power or 0.0,
                 busy_watts=d.busy_power or d.idle_power or 0.0,
                 table_capacity=getattr(d, "flow_table_entries", 1_000_000))
        if d.kind == "snic":
            for aname, a in d.accelerators.items():
                m.accelerator(name, aname, a.throughput * a.engines, setup_s=a.setup)
                accel_names.setdefault((name, a.kind), aname)
            for pname, p in d.ports.items():
                pid = f"{name}.{pname}"
                b.eth_ports[pid] = (name, m.eth(name, pid, p.rate, port=vp.number[pid] if vp else None))
    for lname, ln in sc.links.items():
        m.pcie(lname, sc.host_id, ln.snic, ln.bandwidth, latency_s=ln.one_way, queue_depth=ln.queue_depth_packets,
               dma_cycles=ln.dma_cycles_per_crossing, dma_s=ln.dma_time_per_crossing,
               ring_contexts=ln.dma_ring_contexts, ring_miss_s=ln.dma_ring_miss)
    for vname, vm in sc.vms().items():
        for port in vm.ports:
            p = vp.number[f"{vname}.{port}"] if vp else m.new_port(sc.host_id)
            m.connect(m.sw(sc.host_id, p), m.sink(f"{vname}.{port}"))
            b.vm_ports[f"{vname}.{port}"] = (sc.host_id, p)
    for nname, inst in sc.nfs().items():
        dev_id = b.placement[nname]
        if dev_id not in sc.devices:
            raise EmuError(f"NF {nname}: placed on unknown device {dev_id!r}")
        dev = sc.devices[dev_id]
        ntype = sc.nf_types[inst.type]
        prof = ntype.profile_for(dev_id, dev.kind)
        if prof is None:
            raise EmuError(f"NF {nname}: type {inst.type} has no cost profile for {dev_id} ({dev.kind})")
        c = nf_cycles(prof, cores=dev.cores, clock_hz=dev.clock, speed=dev.speed)
        tenant = b.nf_tenant.get(nname)
        extra_cycles = 0.0
        if tenant in hits and dev_id in hits[tenant]:
            t, hit = sc.tenants[tenant], hits[tenant][dev_id]
            extra_s = t.memory_accesses_per_packet * (1.0 - hit) * dev.cache_miss_penalty
            b.cache.setdefault(tenant, {})[dev_id] = (hit, extra_s)
            extra_cycles = extra_s * dev.clock * dev.speed  # core time = cycles / (clock × speed)
        accel = accel_names.get((dev_id, c.accelerator_kind)) if c.accelerator_kind else None
        ports = 1 if len(inst.ports) == 1 else 2
        cores = _nf_core_set(sc, nname, dev_id, b.nf_tenant.get(nname), parts) if isolated else None
        if cores is not None:
            b.nf_cores[nname] = cores
        m.nf(nname, dev_id, ntype.type or "fixed_cost", ports=ports, cycles_per_packet=c.cycles_per_packet + extra_cycles,
             cycles_per_byte=c.cycles_per_byte, accelerator=accel, cores=cores, config=nf_config_json(ntype))
        if isolated and accel and tenant and c.accelerator_kind in sc.tenants[tenant].accelerator_rates:
            key = (dev_id, accel, tenant)
            if key not in buckets:
                rate = sc.tenants[tenant].accelerator_rates[c.accelerator_kind]
                buckets[key] = m.token_bucket(dev_id, accel, tenant, rate, burst_s=ACCEL_BURST_S)
            m.nf_token_bucket(nname, buckets[key])
        if sc.tenants and dev.kind == "snic":
            buf = _ingress_buffer(sc, m, ingress, dev_id, tenant, isolated)
            if buf is not None:
                m.nf_ingress_buffer(nname, buf)
        if vp:
            sw_ports = vp.nf[nname][:ports]
            for k, sp in enumerate(sw_ports):
                m.connect(m.sw(dev_id, sp), m.nf_port(nname, k))
        else:
            sw_ports = m.attach_nf(nname, dev_id) if ports == 2 else (m.new_port(dev_id),)
        if ports == 1 and not vp:
            m.connect(m.sw(dev_id, sw_ports[0]), m.nf_port(nname, 0))
        b.nf_ports[nname] = (dev_id, sw_ports[0], sw_ports[-1])

    first_snic = next(iter(sc.snics), None)
    snic_ports = list(sc.snics[first_snic].ports) if first_snic else []
    d_in = f"{first_snic}.{snic_ports[0]}" if snic_ports else None
    d_out = f"{first_snic}.{snic_ports[1 if len(snic_ports) > 1 else 0]}" if snic_ports else None
    w = _Wiring(sc, m, b)
    ingress_of: dict[str, Element] = {}
    if rules:
        b.translation = install_rules(sc, m, b, vp, vrules, vgroups, install, migratable=migratable)
        if migratable:
            from tandem.emu.migration import ScenarioMover

            m.mover = ScenarioMover(sc, m, b, vp, b.translation, accel_names)
            b.translation = b.translation.translation()
    for cname, ch in sc.chains.items() if rules else ():
        ingress_of[cname] = _endpoint(sc, b, ch.ingress, d_in)
    for gname, g in sc.element_graphs.items() if rules else ():
        ingress_of[gname] = _endpoint(sc, b, g.ingress, d_in)
    for cname, ch in sc.chains.items() if not rules else ():
        w.current = f"chain {cname}"
        path = [_endpoint(sc, b, ch.ingress, d_in)] + [("nf", n) for n in ch.nfs] + [_endpoint(sc, b, ch.egress, d_out)]
        for a, z in zip(path, path[1:]):
            w.hop(a, z)
        ingress_of[cname] = path[0]
    for gname, g in sc.element_graphs.items() if not rules else ():
        w.current = f"element graph {gname}"
        ing, eg = _endpoint(sc, b, g.ingress, d_in), _endpoint(sc, b, g.egress, d_out)
        w.hop(ing, ("nf", g.root))
        for n in g.nodes:
            succ = g.successors(n)
            for e in succ:
                w.hop(("nf", n), ("nf", e.dst), e.fraction)
            if not succ and "drop" not in sc.nf_types[sc.instances[n].type].effective_actions:
                w.hop(("nf", n), eg)
            elif not succ:
                dev, _, out_port = w.where(("nf", n))
                w.entries.setdefault((dev, out_port), {})  # a dropping leaf: its output is dropped
        ingress_of[gname] = ing
    if not rules:
        w.install()

    for i, (sname, src) in enumerate(sc.traffic.items()):
        el = _endpoint(sc, b, src.ingress, None) if src.ingress else ingress_of[src.target]
        dev, _, out_port = w.where(el)
        line = sc.devices[dev].ports[el[1].split(".", 1)[1]].rate if el[0] == "eth" else None
        if src.pattern == "replay":
            m.source(sname, m.sw(dev, out_port), pattern="pcap", pcap=src.pcap, repeat=src.repeat, start_s=src.start,
                     line_bps=line)
        else:
            extra = _esp_source(sc, src) if src.esp is not None else {}
            if src.pattern == "ramp":
                extra.update(ramp=[(t * 1e9, r) for t, r in src.ramp_points()], ramp_linear=src.interpolate == "linear")
            m.source(sname, m.sw(dev, out_port), pattern=src.pattern, pps=src.offered_pps(), sizes=src.size_mix(),
                     flows=src.flows, flow_size=src.flow_size.emulator_spec() if src.flow_size else None,
                     on_s=src.on_time or 0.0, off_s=src.off_time or 0.0, start_s=src.start, line_bps=line,
                     ip_src=(10 << 24) | ((i + 1) << 16) | 1, ip_dst=(10 << 24) | 0xFF01, **extra)
        b.sources.append(sname)
    b.source_tenant = tenant_of_sources(sc, b.nf_tenant)
    members = {tname: [s for s in b.sources if b.source_tenant.get(s) == tname] for tname in sc.tenants}
    for tname, sources in members.items():
        m.tenant(tname, sources)
    # DRR only matters when traffic of two classes (tenants, or a tenant and no tenant) can meet at a port.
    if isolated and len({b.source_tenant.get(src) for src in b.sources}) > 1:
        classes = [(t.drr_weight, members[tname]) for tname, t in sc.tenants.items()]
        for port_name in sorted(b.eth_ports):
            m.eth_drr(port_name, classes)
    return m, b


def _ipv4(a: str) -> int:
    return int.from_bytes(bytes(int(x) for x in a.split(".")), "big")


def _esp_source(sc, src) -> dict:
    """The emulator's ESP arguments of a source: one tunnel per selected inbound SA of
    its SECGW type, sent from the SA's remote end to its local end (checks.py has
    made sure the type and SPIs exist)."""
    sas = [sa for sa in sc.nf_types[src.esp.secgw].config.get("sas", []) if sa.get("dir") == "in"]
    if src.esp.spis:
        by_spi = {int(sa["spi"]): sa for sa in sas}
        sas = [by_spi[x] for x in src.esp.spis]
    tunnels = [(int(sa["spi"]), bytes.fromhex(sa["key"]), _ipv4(sa["remote"]), _ipv4(sa["local"]),
                bool(sa.get("esn", True)), 64) for sa in sas]
    return {"esp_tunnels": tunnels, "esp_apps": [(a.proto, a.host, a.weight) for a in src.esp.apps],
            "ip_proto": 6}




def install_rules(sc, m: Machine, b: Build, vp, rules: Optional[list] = None, groups: Optional[list] = None,
                  install: bool = True, migratable: bool = False) -> object:
    """Translate the scenario's virtual rules for placement ``b.placement`` and install
    them into a dp-core pipeline on every device; returns the Translation (with
    ``migratable``: the ``OneSwitchState`` holding it, see build_from_scenario)."""
    from tandem.dataplane.convert import group_args, rule_args
    from tandem.oneswitch.scenario import (ScenarioOneSwitchError, derive_topology,
                                          untag_single_destination, virtual_rules)
    from tandem.oneswitch.topology import TopologyError
    from tandem.oneswitch.translate import TranslationError, translate

    state = None
    try:
        topo = derive_topology(sc, b.placement, vp)
        vrules = (virtual_rules(sc) if rules is None else rules) if install else []
        if migratable:
            from tandem.oneswitch.state import OneSwitchState
            from tandem.rules.ir import FlowMod

            state = OneSwitchState(topo, groups or ())
            for r in vrules:
                state.apply(FlowMod("add", r))
            tr = state.translation()
        else:
            tr = translate(vrules, topo, groups or ())
    except (ScenarioOneSwitchError, TopologyError, TranslationError) as e:
        raise EmuError(f"virtual rules: {e}") from None
    if migratable:
        per_switch = {d: list(tr.per_switch[d]) for d in tr.per_switch}
    else:
        per_switch, b.untagged_links = untag_single_destination(tr.per_switch, tr.groups, topo)
    if not install:
        per_switch, tr = {d: [] for d in per_switch}, None
    for i, (lname, ln) in enumerate(sc.links.items()):
        port = vp.pcie_port(i)
        m.pcie_pair(lname, m.sw(sc.host_id, port), m.sw(ln.snic, port))
        b.vf_pairs += 1
    for dev in sc.devices:
        ports = sorted({*(v for v in topo.local_vports(dev)), *topo.link_ports(dev),
                        *(v for p in (vp.nf.values() if migratable else ()) for v in p)})
        # Malformed frames are matched on what parsed, as on Open vSwitch (the oracle).
        m.emu.use_openflow(m.devices[dev], N_TABLES, ports, drop_malformed=False)
        for g in (tr.groups[dev] if tr else ()):
            m._call(f"switch {dev}: group {g.group_id}", m.emu.switch_add_group, m.devices[dev], *group_args(g))
        for r in per_switch[dev]:
            m._call(f"switch {dev}: table {r.table} priority {r.priority}", m.emu.switch_flow_mod, m.devices[dev],
                    {"command": "add", **rule_args(r)})
    return state if migratable else tr

