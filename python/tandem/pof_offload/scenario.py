"""POF offload scenario files and scenario-run directories (the I/O shell).

A scenario (YAML/JSON) lists the switch settings, the POF-FTs the controller
installs, the offered traffic and timed events; `run_scenario` drives an
`OffloadSystem` through it and writes a run directory: `state.json` (the POF-FTs,
their placement and per-path counters, the clock) that `tandem pof add|del|dump RUN`
reload, `throughput.csv` (per tick) and, with `pcap`, `egress.pcap` (the real frames
of each flow's first packets as they left the NIC). Errors: `PofScenarioError` as
`file:line:col: path: message`.

    params:   {policy: exact, capacity: 4800, period_s: 1.0, fixed_costs: per_flow,
               tau1_us: 4, tau2_us: 50, tau3_us: 7000, kernel_knee_mpps: 0.534,
               tau_add_ms: 22.5, tau_del_ms: 25.3}          # all optional
    ports:    [1, 5]
    pof_fts:  - {id: ft1, match: "208/32=0x02020203",
                 actions: "set_field:240/32=0x0a020202,output:5", priority: 100, frame_bytes: 60}
    traffic:  - {name: a, ft: ft1, src: 2.2.2.3, dst: 2.2.2.1, length: 60, rate_pps: 1000, in_port: 1}
    events:   - {at_s: 0.5, update: ft1, actions: "add_field:112/32=0x0a0a0908,output:5"}
              - {at_s: 1.0, rate: a, rate_pps: 5000}
    run:      {duration_s: 2.0, tick_s: 0.001, pcap_packets: 4}
"""

from __future__ import annotations

import csv
import json
from ipaddress import IPv4Address
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tandem.model.yaml_document import Document

from .experiments import udp_frame
from .system import OffloadSystem, PofFt, PofOffloadError, TrafficFlow
from .textfmt import PofSyntaxError, format_actions, parse_actions, parse_match
from .timemodel import PathModel

STATE_FILE = "state.json"


class PofScenarioError(ValueError):
    pass


class _S(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamsSpec(_S):
    policy: Literal["exact", "heuristic", "fifo", "actions"] = "exact"
    capacity: int = Field(4800, ge=0)
    period_s: float = Field(1.0, gt=0)
    fixed_costs: Literal["paper", "per_flow"] = "per_flow"
    tau1_us: float = Field(4.0, gt=0)
    tau2_us: float = Field(50.0, gt=0)
    tau3_us: float = Field(7000.0, gt=0)
    kernel_knee_mpps: float = Field(0.534, gt=0)
    hw_output_mpps: float = Field(28.64, gt=0)
    hw_addfield_mpps: float = Field(26.65, gt=0)
    tau_add_ms: float = Field(22.5, ge=0)
    tau_del_ms: float = Field(25.3, ge=0)

    def model_(self) -> PathModel:
        return PathModel(self.tau1_us * 1e-6, self.tau2_us * 1e-6, self.tau3_us * 1e-6, self.kernel_knee_mpps * 1e6,
                         self.hw_output_mpps * 1e6, self.hw_addfield_mpps * 1e6, self.tau_add_ms * 1e-3,
                         self.tau_del_ms * 1e-3)


class FtSpec(_S):
    id: str
    match: str
    actions: str
    priority: int = Field(100, ge=1, le=65535)
    frame_bytes: int = Field(64, ge=60, le=9000)
    rate_hint_pps: float = Field(0.0, ge=0)


class TrafficSpec(_S):
    name: str
    ft: str
    src: IPv4Address  # validated here, so the packet builder never resolves a name
    dst: IPv4Address
    length: int = Field(64, ge=60, le=9000)
    rate_pps: float = Field(gt=0)
    in_port: int = 1


class EventSpec(_S):
    at_s: float = Field(ge=0)
    update: Optional[str] = None
    actions: Optional[str] = None
    rate: Optional[str] = None
    rate_pps: Optional[float] = Field(None, ge=0)

    @model_validator(mode="after")
    def _one(self) -> "EventSpec":
        if (self.update is None) == (self.rate is None):
            raise ValueError("an event has exactly one of `update` (with `actions`) or `rate` (with `rate_pps`)")
        if self.update is not None and self.actions is None:
            raise ValueError("`update` needs `actions`")
        if self.rate is not None and self.rate_pps is None:
            raise ValueError("`rate` needs `rate_pps`")
        return self


class RunSpec(_S):
    duration_s: float = Field(1.0, gt=0)
    tick_s: float = Field(1e-3, gt=0)
    pcap_packets: int = Field(4, ge=0)


class ScenarioSpec(_S):
    params: ParamsSpec = Field(default_factory=ParamsSpec)
    ports: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5, 6, 7, 8])
    pof_fts: list[FtSpec] = Field(default_factory=list)
    traffic: list[TrafficSpec] = Field(default_factory=list)
    events: list[EventSpec] = Field(default_factory=list)
    run: RunSpec = Field(default_factory=RunSpec)


def load(path: Path) -> tuple[ScenarioSpec, Document]:
    doc = Document(Path(path), PofScenarioError)
    try:
        spec = ScenarioSpec.model_validate(doc.data)
    except ValidationError as e:
        raise doc.validation_error(e) from None
    return spec, doc


def _ft(spec: FtSpec, where: str) -> PofFt:
    try:
        return PofFt(spec.id, parse_match(spec.match, f"{where}.match"), parse_actions(spec.actions, f"{where}.actions"),
                     priority=spec.priority, frame_bytes=spec.frame_bytes, rate_hint_pps=spec.rate_hint_pps)
    except PofSyntaxError as e:
        raise PofScenarioError(str(e)) from None


def build(spec: ScenarioSpec, doc: Document) -> tuple[OffloadSystem, list[TrafficFlow]]:
    p = spec.params
    try:
        s = OffloadSystem(tuple(spec.ports), p.capacity, p.policy, p.model_(), p.period_s, p.fixed_costs)
    except PofOffloadError as e:
        raise doc.fail(("ports",), str(e)) from None
    for i, f in enumerate(spec.pof_fts):
        loc = ("pof_fts", i)
        try:
            s.add(_ft(f, f"{doc.where(loc)}: pof_fts[{i}]"))
        except PofOffloadError as e:
            raise doc.fail(loc, str(e)) from None
    flows = []
    for i, t in enumerate(spec.traffic):
        if t.in_port not in s.ports:
            raise doc.fail(("traffic", i, "in_port"), f"port {t.in_port} is not a NIC port ({', '.join(map(str, s.ports))})")
        if t.ft not in s.fts:
            raise doc.fail(("traffic", i, "ft"), f"no POF-FT {t.ft!r}; known: {', '.join(s.fts) or 'none'}")
        try:
            frame = udp_frame(str(t.src), str(t.dst), t.length)
        except Exception as e:  # scapy: bad address
            raise doc.fail(("traffic", i), f"cannot build the packet: {e}") from None
        flows.append(TrafficFlow(t.name, t.ft, frame, t.rate_pps, t.in_port))
    names = {f.name for f in flows}
    for i, ev in enumerate(spec.events):
        if ev.update is not None and ev.update not in s.fts:
            raise doc.fail(("events", i, "update"), f"no POF-FT {ev.update!r}")
        if ev.rate is not None and ev.rate not in names:
            raise doc.fail(("events", i, "rate"), f"no traffic flow {ev.rate!r}")
        if ev.actions is not None:
            try:
                parse_actions(ev.actions, f"{doc.where(('events', i, 'actions'))}: events[{i}].actions")
            except PofSyntaxError as e:
                raise PofScenarioError(str(e)) from None
    return s, flows


def run_scenario(path: Path, out: Path, pcap: bool = True) -> OffloadSystem:
    spec, doc = load(path)
    s, flows = build(spec, doc)
    events = sorted(spec.events, key=lambda e: e.at_s)
    done: set[int] = set()
    by_name = {f.name: f for f in flows}
    egress: list[bytes] = []
    seen_per_flow: dict[str, int] = {}
    dt = spec.run.tick_s

    def schedule(t, sys):
        for k, ev in enumerate(events):
            if k not in done and ev.at_s <= t + dt / 2:
                done.add(k)
                if ev.update is not None:
                    sys.update(ev.update, parse_actions(ev.actions or ""))
                else:
                    by_name[ev.rate].rate_pps = ev.rate_pps or 0.0
        if pcap and spec.run.pcap_packets:
            for f in flows:
                if f.rate_pps > 0 and seen_per_flow.get(f.name, 0) < spec.run.pcap_packets:
                    seen_per_flow[f.name] = seen_per_flow.get(f.name, 0) + 1
                    _, outs, _ = sys.probe(f)
                    egress.extend(fr for _, fr in outs)

    rows = s.run(flows, until=spec.run.duration_s, dt=dt, schedule=schedule)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "throughput.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", "hw_pps", "kernel_pps", "kernel_latency_us", *[f.name for f in flows]])
        for r in rows:
            w.writerow([f"{r['t']:.6f}", f"{r['hw_pps']:.1f}", f"{r['kernel_pps']:.1f}",
                        f"{r['kernel_latency_s'] * 1e6:.2f}", *[f"{r['flows'].get(f.name, 0.0):.1f}" for f in flows]])
    if pcap:
        write_pcap(out / "egress.pcap", egress)
    save(s, out, spec.params)
    return s


def write_pcap(path: Path, frames: list[bytes]) -> None:
    import struct
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, f in enumerate(frames):
            fh.write(struct.pack("<IIII", i // 1000, (i % 1000) * 1000, len(f), len(f)))
            fh.write(f)


# ------------------------------------------------------------------ run directory state
def save(s: OffloadSystem, out: Path, params: ParamsSpec) -> None:
    fts = []
    for ft in sorted(s.fts.values(), key=lambda f: f.seq):
        st = s.stats(ft)
        fts.append({"id": ft.id, "match": ",".join(f"{o}/{l}={v:#x}" for o, l, v in ft.match),
                    "actions": format_actions(ft.actions), "priority": ft.priority, "frame_bytes": ft.frame_bytes,
                    "rate_hint_pps": ft.rate_hint_pps, "measured_pps": s.measured_pps(ft), "in_hw": ft.in_hw,
                    "seen": s.seen(ft), "counters": {"hw": list(st["hw"]), "kernel": list(st["kernel"])}})
    pending = [{"at_s": p.at, "kind": p.kind, "ids": list(p.ids)} for p in s.pending]
    doc = {"params": params.model_dump(), "ports": list(s.ports), "now_s": s.now, "pof_fts": fts,
           "pending": pending, "counters": s.counters}
    (out / STATE_FILE).write_text(json.dumps(doc, indent=1))


def restore(run: Path) -> tuple[OffloadSystem, ParamsSpec]:
    f = Path(run) / STATE_FILE
    try:
        doc = json.loads(f.read_text())
    except OSError as e:
        raise PofScenarioError(f"{run}: not a POF scenario run (cannot read {STATE_FILE}: {e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise PofScenarioError(f"{f}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    try:
        p = ParamsSpec.model_validate(doc["params"])
        s = OffloadSystem(tuple(doc["ports"]), p.capacity, p.policy, p.model_(), p.period_s, p.fixed_costs)
        s.now = float(doc["now_s"])
        s._next_reval = (int(s.now / s.period_s) + 1) * s.period_s
        s._last_reval = s._next_reval - s.period_s
        for k, ft_doc in enumerate(doc["pof_fts"]):
            ft = _ft(FtSpec(id=ft_doc["id"], match=ft_doc["match"], actions=ft_doc["actions"],
                            priority=ft_doc["priority"], frame_bytes=ft_doc["frame_bytes"],
                            rate_hint_pps=ft_doc["rate_hint_pps"]), f"{f}: pof_fts[{k}]")
            s.restore_ft(ft, bool(ft_doc["in_hw"]), ft_doc["counters"], ft_doc["measured_pps"], bool(ft_doc["seen"]))
        from .system import Pending
        s.pending = [Pending(float(q["at_s"]), q["kind"], tuple(q["ids"])) for q in doc["pending"]]
        s.counters.update(doc["counters"])
    except (KeyError, TypeError, ValueError, ValidationError) as e:
        raise PofScenarioError(f"{f}: damaged run state: {e}") from None
    return s, p
