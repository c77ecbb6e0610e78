"""OVS-POF-TC on the emulator: a host kernel path and an sNIC hardware path, both
running POF flow tables (POF-FTs) on the dp-core pipeline (the runtime shell).

Ports: the sNIC pipeline has the NIC's Ethernet ports and HOST_PORT (the PCIe
crossing); its table-miss rule sends a packet to HOST_PORT, i.e. to the kernel
path. The kernel pipeline has HOST_PORT and the same Ethernet port numbers (a
kernel Output leaves through the NIC without sNIC processing). The kernel
(software switch) holds every POF-FT; the sNIC holds the ones marked in_hw, so a
packet of an offloaded flow is rewritten and sent out by the sNIC and never
reaches the host CPU, and taking a POF-FT out of hardware never leaves a gap.
State: the POF-FTs (match <offset,length,value>, actions, priority, in_hw,
per-path packet and byte counters), the two pipelines, the pending hardware
batches (offload commits after tau_add, removal after tau_del: Fig. 8), the clock.
Decisions are the pure functions of `decision.py`; time comes from `timemodel.py`.
Cost profile: real packets cost one or two pipeline calls each; `run()` moves
traffic as a fluid per tick (rates from the time model) and routes one real sample
frame per flow per tick through the pipelines to find its path.
Packet fate: output on a port, or drop with a named reason (`no_pof_ft` when the
kernel has no POF-FT for it); fluid traffic beyond the kernel backlog is counted in
`kernel_backlog_drops`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tandem.dataplane.switch import Switch
from tandem.rules.ir import ApplyActions, FieldMatch, FlowMod, Match, Output, PofAddField, PofField, Rule, SetField

from .decision import FlowArrays, decide_install, decide_revalidate, POLICIES, PolicyError
from .timemodel import PathModel

HOST_PORT = 100  # the sNIC's port towards the host (PCIe), seen by both pipelines
MISS_PRIORITY = 0


class PofOffloadError(ValueError):
    """A bad POF-FT or command; the message names the POF-FT and the field."""


@dataclass
class PofFt:
    """One POF flow table entry as the controller installed it."""

    id: str
    match: tuple[tuple[int, int, int], ...]  # (offset bits, length bits, value)
    actions: tuple  # rule-IR actions: SetField(PofField), PofAddField, Output
    priority: int = 100
    frame_bytes: int = 64  # size of the flow's packets (the engine's C^kr needs it)
    rate_hint_pps: float = 0.0  # announced rate, used until counters exist
    in_hw: bool = False
    seq: int = 0
    # counters: path -> [packets, bytes]; real packets add via the pipelines' rule counters
    fluid: dict = field(default_factory=lambda: {"hw": [0.0, 0.0], "kernel": [0.0, 0.0]})
    slot: int = -1  # row in the system's columns (`Columns`)
    rule_ids: dict = field(default_factory=dict)  # path -> rule id in that pipeline
    base_real: dict = field(default_factory=lambda: {"hw": [0, 0], "kernel": [0, 0]})
    # probe frames `run()` routes to find a flow's path: counted by the pipelines, not traffic
    probes: dict = field(default_factory=lambda: {"hw": [0, 0], "kernel": [0, 0]})
    hw_actions: tuple = ()  # the actions the sNIC holds (differ from `actions` while an update syncs)

    @property
    def n_set(self) -> int:
        return sum(isinstance(a, SetField) for a in self.actions)

    @property
    def n_add(self) -> int:
        return sum(isinstance(a, PofAddField) for a in self.actions)

    def action_counts(self, path: str) -> tuple[int, int]:
        acts = self.hw_actions if path == "hw" else self.actions
        return sum(isinstance(a, SetField) for a in acts), sum(isinstance(a, PofAddField) for a in acts)

    def rule(self) -> Rule:
        m = Match(tuple((PofField(o, l), FieldMatch(v, None)) for o, l, v in self.match))
        return Rule(match=m, instructions=(ApplyActions(tuple(self.actions)),), priority=self.priority)


class Columns:
    """Per-POF-FT numbers the decision module reads, as numpy columns indexed by slot
    (slots are handed out in arrival order and never reused), so a decision over a
    million POF-FTs is array work, not a Python loop."""

    NAMES = {"offered": float, "offered_at_last": float, "installed_at": float, "measured": float, "hint": float, "size": float,
             "n_set": float, "n_add": float, "seen": bool, "target": bool, "valid": bool}

    def __init__(self) -> None:
        self.n = 0
        self.c = {k: np.zeros(16, dtype=t) for k, t in self.NAMES.items()}
        self.c["measured"][:] = np.nan
        self.ids = np.empty(16, dtype=object)

    def new(self, ft_id: str) -> int:
        if self.n == self.ids.shape[0]:
            for k, a in self.c.items():
                b = np.zeros(2 * a.shape[0], dtype=a.dtype)
                if k == "measured":
                    b[:] = np.nan
                b[: a.shape[0]] = a
                self.c[k] = b
            ids = np.empty(2 * self.ids.shape[0], dtype=object)
            ids[: self.n] = self.ids[: self.n]
            self.ids = ids
        slot = self.n
        self.n += 1
        self.ids[slot] = ft_id
        self.c["valid"][slot] = True
        return slot

    def __getitem__(self, k: str) -> np.ndarray:
        return self.c[k][: self.n]


@dataclass
class Pending:
    at: float
    kind: str  # "offload" | "remove" | "update"
    ids: tuple[str, ...]


@dataclass
class TrafficFlow:
    """Offered traffic of one flow: packets `frame` hitting POF-FT `ft` at `rate_pps`."""

    name: str
    ft: str
    frame: bytes
    rate_pps: float
    in_port: int = 1


class OffloadSystem:
    """The running OVS-POF-TC switch (see module doc)."""

    def __init__(self, ports=(1, 2, 3, 4, 5, 6, 7, 8), capacity: int = 4800, policy: str = "exact",
                 model: PathModel | None = None, period_s: float = 1.0, fixed_costs: str = "per_flow") -> None:
        if policy not in POLICIES:
            raise PolicyError(f"unknown offload policy {policy!r}; choose one of {', '.join(POLICIES)}")
        if HOST_PORT in ports:
            raise PofOffloadError(f"port {HOST_PORT} is the PCIe port to the host; use other port numbers")
        self.ports = tuple(ports)
        self.capacity = int(capacity)
        self.policy = policy
        self.model = model or PathModel()
        self.period_s = float(period_s)
        self.fixed_costs = fixed_costs
        self.snic = Switch([*self.ports, HOST_PORT])
        self.kernel = Switch([*self.ports, HOST_PORT])
        self.snic.add_rule(Rule(match=Match(), instructions=(ApplyActions((Output(HOST_PORT),)),),
                                priority=MISS_PRIORITY))
        self.fts: dict[str, PofFt] = {}
        self.cols = Columns()
        self.pending: list[Pending] = []
        self.now = 0.0
        self._seq = 0
        self._next_reval = self.period_s
        self._last_reval = 0.0
        self.kernel_backlog = 0.0
        self.counters = {"hw_packets": 0.0, "kernel_packets": 0.0, "kernel_backlog_drops": 0.0,
                         "hw_overload_drops": 0.0, "no_pof_ft_drops": 0.0,
                         "host_cpu_packets_of_offloaded_fts": 0.0, "revalidations": 0, "decisions": 0}
        self.log: list[tuple[float, str]] = []
        self._kernel_latency = self.model.tau2_s  # mean kernel-path latency of the last tick

    # ------------------------------------------------------------------ placement state
    def arrays(self) -> tuple[np.ndarray, FlowArrays]:
        """(slots, the decision module's view) of the live POF-FTs in arrival order."""
        c = self.cols
        valid = c["valid"]
        idx = np.arange(c.n) if valid.all() else np.flatnonzero(valid)
        sel = slice(None) if idx.shape[0] == c.n else idx  # no gathers when nothing was deleted
        meas = c["measured"][sel]
        rate = np.where(np.isnan(meas), c["hint"][sel], meas)
        return idx, FlowArrays(rate, c["size"][sel], c["n_set"][sel], c["n_add"][sel], c["target"][sel].copy(),
                               c["seen"][sel].copy())

    def _target_hw(self, ft_id: str) -> bool:
        """in_hw once the pending batches complete (what the decision builds on)."""
        return bool(self.cols["target"][self.fts[ft_id].slot])

    def _apply_decision(self, idx: np.ndarray, x: np.ndarray) -> None:
        target = self.cols["target"]
        cur = target[idx]
        add_slots, rem_slots = idx[x & ~cur], idx[~x & cur]
        add = tuple(self.cols.ids[add_slots])
        rem = tuple(self.cols.ids[rem_slots])
        t_add, t_del = self.model.tau_add_s, self.model.tau_del_s
        hw_after_adds = int(cur.sum()) + len(add)
        if rem:
            self.pending.append(Pending(self.now + t_del, "remove", rem))
            target[rem_slots] = False
        if add:
            # offloads that need the room freed by this batch's removals wait for them
            wait = max(t_add, t_del) if rem and hw_after_adds > self.capacity else t_add
            self.pending.append(Pending(self.now + wait, "offload", add))
            target[add_slots] = True
        if add or rem:
            self.log.append((self.now, f"decision: offload {len(add)} remove {len(rem)}"))

    # ------------------------------------------------------------------ controller API
    def add(self, ft: PofFt) -> None:
        """Install a POF-FT (FlowMod add): kernel copy at once, then the decision module."""
        if ft.id in self.fts:
            raise PofOffloadError(f"POF-FT {ft.id!r} exists already; delete it first or update it")
        self._check_ports(ft)
        self._register(ft)
        ft.in_hw = False
        ft.rule_ids = {"kernel": self.kernel.add_rule(ft.rule())}
        self._decide(install=True)

    def add_batch(self, fts) -> None:
        """Install many POF-FTs as one batch (one FlowMod bundle): one decision at the end."""
        for ft in fts:
            if ft.id in self.fts:
                raise PofOffloadError(f"POF-FT {ft.id!r} exists already; delete it first or update it")
            self._check_ports(ft)
            self._register(ft)
            ft.in_hw = False
            ft.rule_ids = {"kernel": self.kernel.add_rule(ft.rule())}
        self._decide(install=True)

    def _check_ports(self, ft: PofFt) -> None:
        for a in ft.actions:
            if isinstance(a, Output) and a.port not in self.ports:
                raise PofOffloadError(f"POF-FT {ft.id!r}: actions: output port {a.port} is not a NIC port "
                                      f"({', '.join(map(str, self.ports))})")

    def _register(self, ft: PofFt) -> None:
        self._seq += 1
        ft.seq = self._seq
        ft.slot = self.cols.new(ft.id)
        c = self.cols
        c["hint"][ft.slot] = ft.rate_hint_pps
        c["installed_at"][ft.slot] = self.now
        c["size"][ft.slot] = ft.frame_bytes
        c["n_set"][ft.slot], c["n_add"][ft.slot] = ft.n_set, ft.n_add
        self.fts[ft.id] = ft

    def measured_pps(self, ft: PofFt) -> float | None:
        v = float(self.cols["measured"][ft.slot])
        return None if np.isnan(v) else v

    def seen(self, ft: PofFt) -> bool:
        return bool(self.cols["seen"][ft.slot])

    def restore_ft(self, ft: PofFt, in_hw: bool, counters: dict, measured_pps, seen: bool) -> None:
        """Re-create a POF-FT from a saved run (no decision; placement as saved)."""
        self._register(ft)
        ft.rule_ids = {"kernel": self.kernel.add_rule(ft.rule())}
        if in_hw:
            ft.rule_ids["hw"] = self.snic.add_rule(ft.rule())
            ft.hw_actions = ft.actions
        ft.in_hw = in_hw
        c = self.cols
        c["target"][ft.slot] = in_hw
        c["measured"][ft.slot] = np.nan if measured_pps is None else float(measured_pps)
        c["seen"][ft.slot] = seen
        ft.fluid = {path: [float(counters[path][0]), float(counters[path][1])] for path in ("hw", "kernel")}

    def delete(self, ft_id: str) -> None:
        ft = self._get(ft_id)
        if ft.in_hw:
            self.snic.remove_rule(ft.rule_ids.pop("hw"))
        self.kernel.remove_rule(ft.rule_ids.pop("kernel"))
        self.pending = [Pending(p.at, p.kind, tuple(i for i in p.ids if i != ft_id)) for p in self.pending]
        self.cols["valid"][ft.slot] = False
        self.cols["target"][ft.slot] = False
        del self.fts[ft_id]
        self._decide(install=False)  # the freed sNIC slot may go to another POF-FT

    def update(self, ft_id: str, actions: tuple) -> None:
        """Replace a POF-FT's actions while traffic flows (Fig. 7). The software copy
        changes at once; the hardware copy is rewritten in one atomic modify when the
        sync batch completes (tau_add later), so every packet meets one whole rule."""
        ft = self._get(ft_id)
        ft.actions = tuple(actions)
        self.cols["n_set"][ft.slot], self.cols["n_add"][ft.slot] = ft.n_set, ft.n_add
        self.kernel.flow_mod(FlowMod("modify_strict", ft.rule()))
        if ft.in_hw or self._target_hw(ft_id):
            self.pending.append(Pending(self.now + self.model.tau_add_s, "update", (ft_id,)))
        self.log.append((self.now, f"update {ft_id}"))

    def _get(self, ft_id: str) -> PofFt:
        try:
            return self.fts[ft_id]
        except KeyError:
            raise PofOffloadError(f"no POF-FT {ft_id!r}; known: {', '.join(self.fts) or 'none'}") from None

    def _decide(self, install: bool) -> None:
        ids, f = self.arrays()
        if len(f) == 0:
            return
        fn = decide_install if install else decide_revalidate
        x = fn(f, self.policy, self.model, self.capacity, self.fixed_costs)
        self.counters["decisions"] += 1
        self._apply_decision(ids, x)

    # ------------------------------------------------------------------ clock
    def advance(self, t: float) -> None:
        """Move the clock to t: complete hardware batches and run revalidations due."""
        while True:
            due = [p for p in self.pending if p.at <= t]
            t_next = min([p.at for p in due], default=None)
            if self._next_reval <= t and (t_next is None or self._next_reval < t_next):
                self.now = self._next_reval
                self.revalidate()
                self._next_reval += self.period_s
                continue
            if t_next is None:
                break
            self.now = t_next
            for p in [p for p in self.pending if p.at == t_next]:
                self.pending.remove(p)
                self._commit(p)
        self.now = t

    def _commit(self, p: Pending) -> None:
        n_hw = sum(1 for f in self.fts.values() if f.in_hw) if p.kind == "offload" else 0
        deferred: list[str] = []
        for i in p.ids:
            ft = self.fts.get(i)
            if ft is None:
                continue
            if p.kind == "offload" and not ft.in_hw:
                if n_hw >= self.capacity:  # a removal that frees the room has not completed yet
                    deferred.append(i)
                    continue
                n_hw += 1
                ft.rule_ids["hw"] = self.snic.add_rule(ft.rule())
                ft.hw_actions = ft.actions
                ft.in_hw = True
            elif p.kind == "remove" and ft.in_hw:
                self._fold_real(ft, "hw")
                self.snic.remove_rule(ft.rule_ids.pop("hw"))
                ft.in_hw = False
            elif p.kind == "update" and ft.in_hw:
                self.snic.flow_mod(FlowMod("modify_strict", ft.rule()))
                ft.hw_actions = ft.actions
        if deferred:
            later = [q.at for q in self.pending if q.kind == "remove"]
            if later:
                self.pending.append(Pending(min(later), "offload", tuple(deferred)))
            else:  # nothing will free room: the POF-FTs stay in the kernel
                for i in deferred:
                    self.cols["target"][self.fts[i].slot] = False
                self.counters["offloads_refused_full"] = self.counters.get("offloads_refused_full", 0) + len(deferred)
        self.log.append((self.now, f"commit {p.kind} {len(p.ids) - len(deferred)}"))

    def _fold_real(self, ft: PofFt, path: str) -> None:
        sw = self.snic if path == "hw" else self.kernel
        st = sw.rule_stats(ft.rule_ids[path]) or (0, 0)
        ft.base_real[path][0] += st[0]
        ft.base_real[path][1] += st[1]

    def revalidate(self) -> None:
        """Offload revalidator: per-flow counters of the last period -> rates -> flow replacement."""
        c = self.cols
        # rate over the part of the period each POF-FT existed (a POF-FT installed
        # mid-period is not diluted); one installed this instant keeps its hint
        span = self.now - np.maximum(c["installed_at"], self._last_reval)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = (c["offered"] - c["offered_at_last"]) / span
        c["measured"][:] = np.where(span > 1e-9, rate, c["measured"])
        c["offered_at_last"][:] = c["offered"]
        self._last_reval = self.now
        self._decide(install=False)
        c["seen"][:] = True
        self.counters["revalidations"] += 1

    # ------------------------------------------------------------------ packets
    def send(self, frame: bytes, in_port: int = 1, ft_hint: str | None = None) -> tuple[str, list[tuple[int, bytes]], list]:
        """One real packet into NIC port in_port: ('hw' | 'kernel', outputs, drops).
        The path is decided by the sNIC pipeline: a hit leaves from the sNIC, a miss
        crosses to the host and runs the kernel pipeline."""
        fates = self.snic.process(in_port, frame)
        to_host = [f for p, f in fates if p == HOST_PORT]
        if not to_host:
            return "hw", list(fates), list(fates.drops)
        outs: list[tuple[int, bytes]] = [(p, f) for p, f in fates if p != HOST_PORT]
        drops: list = []
        for f in to_host:
            k = self.kernel.process(HOST_PORT, f)
            outs.extend(k)
            drops.extend(k.drops or ([] if list(k) else [("no_pof_ft", "no POF-FT in the kernel matches")]))
        if ft_hint is not None and ft_hint in self.fts and self.fts[ft_hint].in_hw:
            self.counters["host_cpu_packets_of_offloaded_fts"] += 1
        return "kernel", outs, drops

    def probe(self, fl: TrafficFlow) -> tuple[str, list[tuple[int, bytes]], list]:
        """Route one real frame of `fl` (to find its path or capture its output) without
        counting it as traffic: the pipelines count it, the POF-FT's probe tally takes it off."""
        path, outs, drops = self.send(fl.frame, fl.in_port, ft_hint=fl.ft)
        ft = self.fts.get(fl.ft)
        if ft is not None and not drops:
            ft.probes[path][0] += 1
            ft.probes[path][1] += len(fl.frame)
        return path, outs, drops


    def run(self, flows: list[TrafficFlow], until: float, dt: float = 1e-3,
            schedule=None, on_tick=None) -> list[dict]:
        """Move fluid traffic from now to `until` in ticks of dt. `schedule(t, system)`
        may change flows or POF-FTs at each tick (returning nothing). Returns one row
        per tick: time, per-path served packet rate, kernel latency, per-flow rates."""
        rows = []
        m = self.model
        while self.now + dt <= until + 1e-12:
            t0 = self.now
            if schedule is not None:
                schedule(t0, self)
            # which path each flow takes now: route one real sample frame
            hw_load, k_arr, k_work = 0.0, 0.0, 0.0
            where = []
            for fl in flows:
                if fl.rate_pps <= 0:
                    where.append(None)
                    continue
                path, outs, drops = self.probe(fl)
                ft = self.fts.get(fl.ft)
                if ft is None or drops or not outs:
                    where.append(("drop", ft))
                    continue
                where.append((path, ft))
                if path == "hw":
                    hw_load += fl.rate_pps * m.hw_packet_time(*ft.action_counts("hw"))
                else:
                    k_arr += fl.rate_pps
                    k_work += fl.rate_pps * m.kernel_packet_time(*ft.action_counts("kernel"))
            hw_scale = 1.0 if hw_load <= 1.0 else 1.0 / hw_load
            # kernel: one work-conserving server (capacity from the flows' action mix) with a
            # fluid backlog of at most B packets; beyond it packets are dropped
            cap_pps = k_arr / k_work if k_work > 0 else m.kernel_knee_pps
            served_k = min(k_arr + self.kernel_backlog / dt, cap_pps) if k_arr > 0 else 0.0
            backlog = self.kernel_backlog + (k_arr - served_k) * dt
            if k_arr == 0:
                backlog = max(0.0, backlog - cap_pps * dt)
            if backlog > m.kernel_backlog_packets:
                self.counters["kernel_backlog_drops"] += backlog - m.kernel_backlog_packets
                backlog = m.kernel_backlog_packets
            self.kernel_backlog = max(0.0, backlog)
            k_share = served_k / k_arr if k_arr > 0 else 0.0
            self._kernel_latency = m.kernel_latency(min(k_work, 0.999999), self.kernel_backlog)
            row = {"t": t0, "hw_pps": 0.0, "kernel_pps": 0.0, "kernel_latency_s": self._kernel_latency,
                   "flows": {}}
            for fl, w in zip(flows, where):
                if w is None:
                    continue
                path, ft = w
                if ft is not None:
                    self.cols["offered"][ft.slot] += fl.rate_pps * dt
                if path == "drop":
                    self.counters["no_pof_ft_drops"] += fl.rate_pps * dt
                    row["flows"][fl.name] = 0.0
                    continue
                served = fl.rate_pps * (hw_scale if path == "hw" else k_share)
                if path == "hw":
                    self.counters["hw_overload_drops"] += fl.rate_pps * dt - served * dt
                ft.fluid[path][0] += served * dt
                ft.fluid[path][1] += served * dt * len(fl.frame)
                row[f"{path}_pps"] += served
                self.counters[f"{'hw' if path == 'hw' else 'kernel'}_packets"] += served * dt
                row["flows"][fl.name] = served
            row["latency_s"] = {fl.name: (m.tau1_s if w and w[0] == "hw" else self._kernel_latency)
                                for fl, w in zip(flows, where) if w is not None}
            rows.append(row)
            if on_tick is not None:
                on_tick(t0, self, row)
            self.advance(t0 + dt)
        return rows

    # ------------------------------------------------------------------ dump
    def stats(self, ft: PofFt) -> dict[str, tuple[int, int]]:
        out = {}
        for path, sw in (("hw", self.snic), ("kernel", self.kernel)):
            real = [ft.base_real[path][0] - ft.probes[path][0], ft.base_real[path][1] - ft.probes[path][1]]
            if path in ft.rule_ids:
                st = sw.rule_stats(ft.rule_ids[path]) or (0, 0)
                real[0] += st[0]
                real[1] += st[1]
            out[path] = (int(real[0] + round(ft.fluid[path][0])), int(real[1] + round(ft.fluid[path][1])))
        return out

    def dump(self) -> str:
        """`tc -s filter show`-like text, one block per POF-FT."""
        from .textfmt import format_dump
        return format_dump(self)
