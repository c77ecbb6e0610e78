"""The NF agent's domain logic behind the REST API (UNO §3.2): NF instances,
their configurations and virtual ports, the virtual rules, placements and
migrations, kept in the state database and applied to OneSwitch and the
emulator.

Inputs: a scenario (the machine: devices, PCIe links, sNIC Ethernet ports,
VMs, and its own NFs and traffic), a ``Store``, the emulator backend
(``AgentEmuBackend``) and the ``OneSwitchState`` the controller also writes
(``tandem serve --api``) or that the agent owns alone (``tandem agent``).
Outputs: plain dicts for the REST shell; changes to the switches (OneSwitch
update plans applied with a barrier between steps) and to the emulator's NFs.

NF instances: the scenario's NFs (origin ``scenario``) and NFs created through
the API (origin ``api``; a dp-nf kind with its JSON configuration). Every NF
has one or two virtual ports; virtual port ``v`` sits on physical port ``v``
of the device that runs the NF (the scenario convention of
``oneswitch.scenario.derive_topology``), so a move changes only the switch.
API NFs get virtual ports from ``API_VPORT_BASE`` on. Every device's pipeline
declares every NF port number up front, so an NF can land on any device.

Migration: the emulator's loss-free move (``dp_emu::migration``, docs/migration.md)
driven from here. Provision the NF at the destination on the same port numbers;
``begin_migration`` (the destination buffers every packet it gets) and, at the
same simulated instant, the adds and modifies of ``OneSwitchState.remap_ports``
(new packets go to the destination). Then simulated time passes (the agent's
clock; ``wait_migrations`` moves it when nothing else does): the source drains
what was already on its way, its state crosses the modelled PCIe link, the
buffer is released in order, the source retires and the run pauses, where the
backend applies the plan's deletes (the old location's rules). The migration's
steps record each phase; its ``progress`` carries the modelled figures (state
bytes, buffered packets, modelled duration, lost/duplicated/reordered).

Restart: ``start`` rebuilds everything from the database - the same NF
instances on the same devices and ports, the same virtual rules (translated
for the current port map), the same placement record - and installs it on
the fresh switches exactly once. NF flow state is not checkpointed: an
instance comes back with empty state.

State: the NF table (name -> ``NfInstance``), the OneSwitch state, the
migrations in flight. Cost: an API write is one OneSwitch change plus one
transaction; a move re-translates all virtual rules once.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from tandem.agent.moves import reconcile_cleanup, split_remap
from tandem.agent.store import MigrationRecord, NfRecord, Store

API_VPORT_BASE = 1000  # first virtual (and physical) port number of API-created NFs
MAX_API_NFS = 64  # API NFs, two ports each, whose port numbers every pipeline declares
MAX_NAME = 64


class AgentError(Exception):
    """A request the agent refuses: HTTP ``status``, the failing field's ``path``."""

    status = 422

    def __init__(self, path: str, message: str, status: Optional[int] = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path, self.message = path, message
        if status is not None:
            self.status = status


class NotFound(AgentError):
    status = 404


class Conflict(AgentError):
    status = 409


@dataclass
class NfInstance:
    """An NF and where it runs now: its record and the emulator NF instance (one per generation)."""

    record: NfRecord
    emu_name: str  # the current emulator instance
    generations: list[str] = field(default_factory=list)  # every emulator instance it ever had, current last


# ---------------------------------------------------------------- pure helpers


def rule_key(rule) -> tuple[int, int, str]:
    """(table, priority, match text): what identifies a virtual rule (OpenFlow strict identity)."""
    from tandem.rules.ir import Rule
    from tandem.rules.ofctl import format_rule

    return rule.table, rule.priority, format_rule(Rule(rule.match, (), rule.table, rule.priority))


def scenario_cost(sc, nf_type: str, device: str) -> tuple[float, float, Optional[str]]:
    """(cycles per packet, cycles per byte, accelerator) of a scenario NF type on ``device``,
    as ``emu.scenario.build_from_scenario`` computes them (without tenant cache effects)."""
    from tandem.emu.costs import nf_cycles

    dev = sc.devices[device]
    prof = sc.nf_types[nf_type].profile_for(device, dev.kind)
    if prof is None:
        raise AgentError("destination", f"NF type {nf_type} has no cost profile for {device} ({dev.kind})")
    c = nf_cycles(prof, cores=dev.cores, clock_hz=dev.clock, speed=dev.speed)
    accel = None
    if c.accelerator_kind and dev.kind == "snic":
        accel = next((a for a, spec in dev.accelerators.items() if spec.kind == c.accelerator_kind), None)
    return c.cycles_per_packet, c.cycles_per_byte, accel


def nf_view(inst: NfInstance) -> dict[str, Any]:
    r = inst.record
    return {"id": r.id, "name": r.name, "type": r.kind, "config": r.config, "cost": r.cost, "origin": r.origin,
            "device": r.device, "ports": r.vports, "created": r.created}


def migration_view(m: MigrationRecord) -> dict[str, Any]:
    return {"id": m.id, "nf": m.nf, "source": m.source, "destination": m.destination, "status": m.status,
            "steps": m.steps, "state_bytes": m.state_bytes, "error": m.error, "created": m.created,
            "finished": m.finished, "progress": migration_progress(m)}


def migration_progress(m: MigrationRecord) -> dict[str, Any]:
    """The step a migration has reached and, once it ended, its modelled figures (state
    bytes, buffered packets, modelled duration, lost/duplicated/reordered, ...)."""
    out: dict[str, Any] = {"step": m.steps[-1]["step"] if m.steps else None}
    for s in m.steps:
        out.update(s.get("modelled", {}))
    return out


# ---------------------------------------------------------------- the service


class AgentService:
    """One agent: the scenario's machine, its NFs, rules, placements and migrations."""

    def __init__(self, sc, store: Store, *, owns_rules: bool = True) -> None:
        from tandem.oneswitch.scenario import virtual_ports

        self.sc, self.store = sc, store
        self.vp = virtual_ports(sc)
        self.owns_rules = owns_rules  # tandem agent: yes; serve --api: the controller writes rules too
        self.nfs: dict[str, NfInstance] = {}
        self.backend = None
        self.state = None
        self.running: dict[str, asyncio.Task] = {}  # NF name -> its migration in flight
        self.started_at = time.time()
        self.counters = {"migrations_done": 0, "migrations_failed": 0, "api_errors": 0, "rules_applied": 0}
        self._synced_rules: Optional[frozenset] = None

    # ------------------------------------------------------------ set-up
    def placement(self) -> dict[str, str]:
        """Scenario NF -> device: the database's when it has the NF, else the UNO engine's decision."""
        from tandem.placement.from_scenario import decide

        stored = {r.name: r.device for r in self.store.nfs() if r.origin == "scenario"}
        missing = [n for n in self.sc.nfs() if n not in stored]
        if missing:
            d = decide(self.sc, None, {n: dev for n, dev in stored.items() if n in self.sc.nfs()})
            self.store.add_placement({"mode": d.mode, "method": d.method, "placement": d.placement, "reason": "first start"})
            stored.update({n: d.placement[n] for n in missing})
        return {n: stored[n] for n in self.sc.nfs()}

    def declared_ports(self) -> list[int]:
        """Every port number an NF may occupy on any device (scenario NF ports and the API range)."""
        nf_ports = {v for pair in self.vp.nf.values() for v in pair}
        return sorted(nf_ports | set(range(API_VPORT_BASE, API_VPORT_BASE + 2 * MAX_API_NFS)))

    async def start(self, backend, state) -> None:
        """Adopt a started backend and OneSwitch state, then reconcile them with the database:
        record the scenario's NFs (first start), create the API NFs, install the virtual rules."""
        from tandem.oneswitch.topology import PortRef

        self.backend, self.state = backend, state
        placement = self.placement()
        for name, inst in self.sc.nfs().items():
            rec = next((r for r in self.store.nfs() if r.name == name), None)
            if rec is None:
                i, o = self.vp.nf[name]
                rec = NfRecord(id=str(uuid.uuid4()), name=name, kind=self.sc.nf_types[inst.type].type or "fixed_cost",
                               config=self.sc.nf_types[inst.type].config or {}, cost={}, origin="scenario",
                               device=placement[name], vports=sorted({i, o}))
                self.store.put_nf(rec)
            actual = state.topo.port_map[rec.vports[0]].switch  # where the backend was built to run it
            if rec.device != actual:  # e.g. `serve --place` overriding the database: the switch wins
                rec.device = actual
                self.store.put_nf(rec)
            self.nfs[name] = NfInstance(rec, name, [name])
        topo = state.topo
        for rec in self.store.nfs():
            if rec.origin != "api":
                continue
            self._emu_add(rec, rec.name)
            self.nfs[rec.name] = NfInstance(rec, rec.name, [rec.name])
            for v in rec.vports:
                if v not in topo.port_map:
                    topo = _with_new_port(topo, v, PortRef(rec.device, v))
        if topo is not state.topo:
            await self._apply(_retopologize(state, topo))
        await self._install_stored_rules()
        if self.owns_rules and not self.store.rules() and self.store.get_meta("rules_seeded") is None:
            from tandem.oneswitch.scenario import virtual_rules

            for r in virtual_rules(self.sc):
                await self._add_rule(r)
            self.store.set_meta("rules_seeded", "1")
        self.sync_rules()

    async def _install_stored_rules(self) -> None:
        from tandem.rules.ir import FlowMod
        from tandem.rules.ofctl import parse_rule

        from tandem.oneswitch.state import FlowModError
        from tandem.oneswitch.translate import TranslationError

        for rid, text in self.store.rules():
            try:
                plan = self.state.apply(FlowMod("add", parse_rule(text, f"state-db rule {rid}")))
            except (TranslationError, FlowModError, ValueError) as e:
                raise AgentError("rules", f"{self.store.path}: rule {rid} ({text}) does not fit this scenario: {e}") from None
            await self._apply(plan)

    async def _apply(self, plan) -> None:
        await self.backend.apply_steps(plan.steps)
        self.counters["rules_applied"] += len(plan)

    def _emu_add(self, rec: NfRecord, emu_name: str) -> None:
        """Create an emulator NF for ``rec`` on its device, wired to switch ports ``rec.vports``."""
        m = self.backend.machine
        if rec.origin == "scenario":
            inst = self.sc.nfs()[rec.name]
            cpp, cpb, accel = scenario_cost(self.sc, inst.type, rec.device)
        else:
            cpp, cpb, accel = rec.cost.get("cycles_per_packet", 0.0), rec.cost.get("cycles_per_byte", 0.0), None
        from tandem.nf.config import MODEL_KINDS

        config = None if rec.kind in MODEL_KINDS else json.dumps(rec.config)
        m.nf(emu_name, rec.device, rec.kind, ports=len(rec.vports), cycles_per_packet=cpp, cycles_per_byte=cpb,
             accelerator=accel, config=config)
        for k, v in enumerate(rec.vports):
            m.connect(m.sw(rec.device, v), m.nf_port(emu_name, k))

    # ------------------------------------------------------------ NFs
    def get(self, name_or_id: str) -> NfInstance:
        inst = self.nfs.get(name_or_id) or next((i for i in self.nfs.values() if i.record.id == name_or_id), None)
        if inst is None:
            raise NotFound("id", f"no NF {name_or_id!r}; known: {', '.join(sorted(self.nfs)) or 'none'}")
        return inst

    def list_nfs(self) -> list[dict[str, Any]]:
        return [nf_view(i) for i in sorted(self.nfs.values(), key=lambda i: (i.record.created, i.record.name))]

    def _free_vports(self, n: int) -> list[int]:
        used = {v for i in self.nfs.values() for v in i.record.vports}
        free = [v for v in range(API_VPORT_BASE, API_VPORT_BASE + 2 * MAX_API_NFS) if v not in used]
        if len(free) < n:
            raise Conflict("ports", f"no free NF ports left (this agent runs at most {MAX_API_NFS} API NFs)")
        return free[:n]

    async def create_nf(self, name: str, kind: str, config: dict[str, Any], ports: int = 2,
                        device: Optional[str] = None, cost: Optional[dict[str, float]] = None) -> dict[str, Any]:
        from tandem.nf.config import check_nf_config, known_kinds

        if not name or len(name) > MAX_NAME or not all(c.isalnum() or c in "-_." for c in name):
            raise AgentError("name", f"{name!r}: use 1..{MAX_NAME} letters, digits, '-', '_' or '.'")
        if name in self.nfs or name in self.sc.instances:
            raise Conflict("name", f"an NF or instance named {name!r} already exists")
        if kind not in known_kinds():
            raise AgentError("type", f"unknown NF type {kind!r}; known: {', '.join(known_kinds())}")
        problem = check_nf_config(kind, config)
        if problem is not None:
            path, _, msg = problem.partition(": ")
            raise AgentError(path, msg)
        if ports not in (1, 2):
            raise AgentError("ports", f"{ports}: an NF has 1 or 2 ports")
        device = device or self.sc.host_id
        if device not in self.sc.devices:
            raise AgentError("device", f"unknown device {device!r}; known: {', '.join(self.sc.devices)}")
        from tandem.oneswitch.topology import PortRef

        vports = self._free_vports(ports)
        rec = NfRecord(id=str(uuid.uuid4()), name=name, kind=kind, config=config, cost=dict(cost or {}), origin="api",
                       device=device, vports=vports)
        try:
            self._emu_add(rec, name)
        except ValueError as e:  # EmuError: the emulator refused the NF (names the part)
            raise AgentError("config", str(e)) from None
        topo = self.state.topo
        for v in vports:
            topo = _with_new_port(topo, v, PortRef(device, v))
        await self._apply(_retopologize(self.state, topo))
        self.store.put_nf(rec)
        self.nfs[name] = NfInstance(rec, name, [name])
        return nf_view(self.nfs[name])

    async def delete_nf(self, name_or_id: str) -> None:
        inst = self.get(name_or_id)
        r = inst.record
        if r.origin == "scenario":
            raise Conflict("id", f"NF {r.name} comes from the scenario; only NFs created through the API can be deleted")
        if r.name in self.running:
            raise Conflict("id", f"NF {r.name} is being migrated")
        users = [rule for rule in self.state.virtual_rules()
                 if set(r.vports) & (set(rule.outputs()) | {_in_port(rule)})]
        if users:
            from tandem.rules.ofctl import format_rule

            raise Conflict("id", f"NF {r.name}: virtual rules still use its ports {r.vports}: "
                                 + "; ".join(format_rule(x) for x in users[:3]) + (" ..." if len(users) > 3 else ""))
        topo = self.state.topo
        ports = tuple((v, p) for v, p in topo.ports if v not in r.vports)
        from tandem.oneswitch.topology import Topology

        new = Topology(topo.switches, topo.links, ports)
        new.validate()
        await self._apply(_retopologize(self.state, new))
        # The emulator instance stays (idle, unreachable: no rule outputs to its ports any more).
        self.store.delete_nf(r.id)
        del self.nfs[r.name]

    def nf_counters(self) -> dict[str, dict[str, int]]:
        """NF -> its counters summed over every emulator instance it had (monotonic across moves)."""
        m = self.backend.machine
        out: dict[str, dict[str, int]] = {}
        for name, inst in self.nfs.items():
            tot: dict[str, int] = {}
            for g in inst.generations:
                for k, v in m.emu.nf_counters(m.nfs[g]):
                    tot[k] = tot.get(k, 0) + v
            out[name] = tot
        return out

    # ------------------------------------------------------------ state
    def export_state(self, name_or_id: str) -> bytes:
        inst = self.get(name_or_id)
        m = self.backend.machine
        return bytes(m.emu.nf_export_state(m.nfs[inst.emu_name]))

    def import_state(self, name_or_id: str, blob: bytes) -> None:
        inst = self.get(name_or_id)
        if inst.record.name in self.running:
            raise Conflict("id", f"NF {inst.record.name} is being migrated")
        m = self.backend.machine
        try:
            m.emu.nf_import_state(m.nfs[inst.emu_name], blob)
        except ValueError as e:
            raise AgentError("body", f"not a state blob of this NF: {e}") from None

    # ------------------------------------------------------------ rules
    def list_rules(self) -> list[dict[str, Any]]:
        self.sync_rules()
        return [{"id": rid, "rule": text} for rid, text in self.store.rules()]

    async def add_rule(self, text: str) -> dict[str, Any]:
        from tandem.rules.ofctl import format_rule, parse_rule

        try:
            rule = parse_rule(text, "rule")
        except ValueError as e:
            raise AgentError("rule", str(e)) from None
        await self._add_rule(rule)
        rid = self.store.put_rule(*rule_key(rule), format_rule(rule))
        self.sync_rules()
        return {"id": rid, "rule": format_rule(rule)}

    async def _add_rule(self, rule) -> None:
        from tandem.oneswitch.state import FlowModError
        from tandem.oneswitch.translate import TranslationError
        from tandem.rules.ir import FlowMod
        from tandem.rules.ofctl import format_rule

        try:
            plan = self.state.apply(FlowMod("add", rule))
        except (TranslationError, FlowModError, ValueError) as e:
            raise AgentError("rule", str(e)) from None
        await self._apply(plan)
        if self.owns_rules:
            self.store.put_rule(*rule_key(rule), format_rule(rule))

    async def delete_rule(self, rule_id: int) -> None:
        from tandem.rules.ir import FlowMod
        from tandem.rules.ofctl import parse_rule

        self.sync_rules()
        row = next((t for i, t in self.store.rules() if i == rule_id), None)
        if row is None:
            raise NotFound("id", f"no virtual rule {rule_id}")
        rule = parse_rule(row)
        await self._apply(self.state.apply(FlowMod("delete_strict", rule)))
        self.store.delete_rule(rule_id)
        self.sync_rules()

    def sync_rules(self) -> None:
        """Make the database's rule table the OneSwitch state's virtual rules (a controller may
        have changed them); a no-op when nothing changed since the last sync."""
        from tandem.rules.ofctl import format_rule

        if self.state is None:
            return
        rows = [(*rule_key(r), format_rule(r)) for r in self.state.virtual_rules()]
        snap = frozenset(rows)
        if snap != self._synced_rules:
            self.store.replace_rules(rows)
            self._synced_rules = snap

    # ------------------------------------------------------------ placements
    def placements(self) -> dict[str, Any]:
        return {"placement": {n: i.record.device for n, i in sorted(self.nfs.items())},
                "decision": self.store.last_placement()}

    async def optimize(self, pins: dict[str, str], apply: bool, method: Optional[str] = None) -> dict[str, Any]:
        from tandem.placement.from_scenario import DecisionError, decide

        for nf, dev in pins.items():
            if nf not in self.sc.nfs():
                raise AgentError(f"pins.{nf}", f"not a scenario NF (the UNO graph has {', '.join(self.sc.nfs())})")
            if dev not in self.sc.devices:
                raise AgentError(f"pins.{nf}", f"unknown device {dev!r}; known: {', '.join(self.sc.devices)}")
        try:
            d = decide(self.sc, "uno", pins)
        except (DecisionError, ValueError) as e:
            raise AgentError("", f"no placement: {e}", status=422) from None
        moves = [{"nf": n, "from": self.nfs[n].record.device, "to": dev} for n, dev in sorted(d.placement.items())
                 if self.nfs[n].record.device != dev]
        out = d.as_json() | {"moves": moves, "applied": apply, "migrations": []}
        if apply:
            for mv in moves:
                out["migrations"].append(self.request_migration(mv["nf"], mv["to"])["id"])
        pid = self.store.add_placement({k: out[k] for k in ("mode", "method", "placement", "objective", "host_cores",
                                                              "snic_cores", "pcie_gbps", "moves", "applied")})
        return out | {"id": pid}

    # ------------------------------------------------------------ migrations
    def request_migration(self, name_or_id: str, destination: str) -> dict[str, Any]:
        inst = self.get(name_or_id)
        r = inst.record
        if destination not in self.sc.devices:
            raise AgentError("destination", f"unknown device {destination!r}; known: {', '.join(self.sc.devices)}")
        if r.name in self.running:
            raise Conflict("nf", f"NF {r.name} is already being migrated (one migration per NF at a time)")
        if destination == r.device:
            raise AgentError("destination", f"NF {r.name} already runs on {destination}")
        if r.origin == "scenario":
            scenario_cost(self.sc, self.sc.nfs()[r.name].type, destination)  # refuse now if it cannot run there
        mig = MigrationRecord(id=str(uuid.uuid4()), nf=r.name, source=r.device, destination=destination,
                              status="queued", steps=[])
        self.store.put_migration(mig)
        self.running[r.name] = asyncio.get_running_loop().create_task(self._migrate(inst, mig))
        return migration_view(mig)

    def migrations(self) -> list[dict[str, Any]]:
        return [migration_view(m) for m in self.store.migrations()]

    def migration(self, mig_id: str) -> dict[str, Any]:
        m = next((m for m in self.store.migrations() if m.id == mig_id), None)
        if m is None:
            raise NotFound("id", f"no migration {mig_id!r}")
        return migration_view(m)

    async def _migrate(self, inst: NfInstance, mig: MigrationRecord) -> None:
        """The loss-free move (module doc): provision, buffer, remap, then wait in simulated
        time for the emulator to drain, transfer, release and retire; then the clean-up."""
        from tandem.oneswitch.extension import retract
        from tandem.oneswitch.topology import PortRef
        from tandem.oneswitch.translate import TranslationError

        m = self.backend.machine
        r = inst.record
        t0 = time.perf_counter()

        def step(name: str, **info: Any) -> None:
            mig.steps.append({"step": name, "wall_ms": round((time.perf_counter() - t0) * 1e3, 3), **info})
            self.store.put_migration(mig)  # progress is visible while the move runs

        remapped = committed = False
        mid: Optional[int] = None
        cleanup: list = []
        try:
            mig.status = "running"
            self.store.put_migration(mig)
            await asyncio.sleep(0)  # the request returns before the move starts
            gen = f"{r.name}@{mig.destination}#{len(inst.generations)}"
            dest = NfRecord(**{**r.__dict__, "device": mig.destination})
            self._emu_add(dest, gen)
            step("provision", instance=gen)
            # From here to the end of the switch-over nothing yields to the event loop, so the
            # emulator's clock stands still: the destination buffers from the instant the new
            # rules send packets to it.
            try:
                # an NF port extended to the host (a controller's meter, oneswitch/extension.py)
                # moves back to its wire first: the NF's ports then leave one switch together
                for p in retract(self.state, [v for v in r.vports if v in self.state.extensions]):
                    for st in p.steps:
                        self.backend.apply_now(st)
                plan = self.state.remap_ports({v: PortRef(mig.destination, v) for v in r.vports})
            except (TranslationError, ValueError) as e:
                raise AgentError("destination", f"remap of {r.vports} to {mig.destination}: {e}") from None
            remapped = True  # from here a failure rolls the move back (moves.py)
            mid = m.emu.begin_migration(m.nfs[inst.emu_name], m.nfs[gen])
            inst.generations.append(gen)  # counters sum over both from now on
            step("buffer", instance=gen, simulated_s=m.emu.now_ns / 1e9)
            # Adds and modifies now (the plan orders them before any delete); the deletes (what
            # only the old location used) wait until the source has drained: what it still
            # emits needs its rules.
            now_steps, cleanup = split_remap(plan.steps)
            for st in now_steps:
                self.backend.apply_now(st)
            self.counters["rules_applied"] += len(plan)
            step("remap", vports=r.vports, physical_ops=sum(len(st) for st in now_steps))
            ended = asyncio.get_running_loop().create_future()
            skipped: list = []

            def on_end() -> None:  # inside backend.run_for, at the simulated instant the move ended
                try:
                    rec = json.loads(m.emu.migration_json(mid))
                    if rec.get("phase") != "done":
                        raise RuntimeError(f"emulator migration {rec.get('phase')}: {rec.get('error', 'no reason given')}")
                    # Rule writes made during the move stay: the deferred ops are checked against
                    # the rules OneSwitch wants now (moves.reconcile_cleanup).
                    todo, dropped = reconcile_cleanup(cleanup, self._wanted_rule, self._wanted_group)
                    skipped.extend(dropped)
                    self.backend.apply_now(todo)
                except Exception as e:  # noqa: BLE001 - handed to the migration, never to the clock
                    if not ended.done():
                        ended.set_exception(e)
                    return
                if not ended.done():
                    ended.set_result(m.emu.now_ns / 1e9)

            self.backend.on_migration_end(mid, on_end)
            cleaned_s = await ended  # simulated time passes (the agent's clock, or wait_migrations)
            committed = True  # the state moved and the old location's rules are gone
            await self._rejoin_meters(step)
            rec = json.loads(m.emu.migration_json(mid))
            mig.state_bytes = rec["state_bytes"]
            step("drain", simulated_s=rec["drained_s"])
            step("transfer", state_bytes=rec["state_bytes"], state_flows=rec["state_flows"],
                 transfer_s=rec["transfer_s"])
            step("release", simulated_s=rec["end_s"], packets=rec["replayed_packets"])
            inst.emu_name = gen
            r.device = mig.destination
            step("retire", instance=inst.generations[-2])
            step("cleanup", simulated_s=cleaned_s, physical_ops=len(cleanup) - len(skipped),
                 kept_for_writes_during_move=len(skipped), modelled={
                "state_bytes": rec["state_bytes"], "state_flows": rec["state_flows"],
                "buffered_packets": rec["buffered_packets"], "replayed_packets": rec["replayed_packets"],
                "buffer_peak_packets": rec["buffer_peak_packets"], "start_s": rec["start_s"],
                "end_s": rec["end_s"], "duration_s": rec["end_s"] - rec["start_s"],
                "drain_s": rec["drained_s"] - rec["start_s"], "transfer_s": rec["transfer_s"],
                "added_latency_ns": rec["added_latency_ns"], "lost": rec["lost"],
                "duplicated": rec["duplicated"], "reordered": rec["reordered"]})
            mig.status, mig.finished = "done", time.time()
            self.store.put_migration(mig, r)
            self.counters["migrations_done"] += 1
        except Exception as e:  # noqa: BLE001 - recorded on the migration, never crashes the agent
            error = f"{type(e).__name__}: {e}"
            moved = False
            if remapped and not committed:
                try:
                    note, moved = self._roll_back(inst, r, mid)
                except Exception as e2:  # noqa: BLE001 - recorded; the agent keeps serving
                    note = f"roll-back failed: {type(e2).__name__}: {e2}"
                error += "; " + note
            if moved:  # the state already moved: finish the switch-over instead
                try:
                    todo, _ = reconcile_cleanup(cleanup, self._wanted_rule, self._wanted_group)
                    self.backend.apply_now(todo)
                except Exception as e3:  # noqa: BLE001
                    error += f"; clean-up failed: {type(e3).__name__}: {e3}"
                inst.emu_name, r.device = inst.generations[-1], mig.destination
            mig.status, mig.error, mig.finished = "failed", error, time.time()
            try:
                self.store.put_migration(mig, r if moved else None)
            except Exception:  # noqa: BLE001 - the failure is recorded in memory; the agent keeps serving
                pass
            self.counters["migrations_failed"] += 1
            await self._rejoin_meters(step)
        finally:
            self.running.pop(r.name, None)

    async def _rejoin_meters(self, step) -> None:
        """Make every meter's rules run on one switch again (a move may have split a
        controller's meter over two: ports are extended to the host, oneswitch/extension.py)."""
        from tandem.oneswitch.extension import rebalance

        try:
            for p in rebalance(self.state):
                await self._apply(p)
        except Exception as e:  # noqa: BLE001 - recorded on the migration (ExtensionError, a switch's refusal)
            step("meters", error=f"{type(e).__name__}: {e}")

    def _wanted_rule(self, switch: str, key: tuple):
        return self.state.comp.rules.get(switch, {}).get(key)

    def _wanted_group(self, switch: str, group_id: int):
        return self.state.comp.groups.get(switch, {}).get(group_id)

    def _roll_back(self, inst: NfInstance, r: NfRecord, mid: Optional[int]) -> tuple[str, bool]:
        """Undo a move that failed after the remap (moves.py): call off the emulator's move (the
        source keeps its state and gets what the destination buffered), then remap the NF's ports
        back to its device, planned from the current rules (writes made meanwhile stay).
        Returns (what was done, for the migration's error; True if the state had already moved
        to the destination, so nothing was undone and the caller finishes the switch-over)."""
        from tandem.oneswitch.topology import PortRef

        m = self.backend.machine
        if mid is not None:
            self.backend.forget_migration_end(mid)
            try:
                m.emu.abort_migration(mid)
            except ValueError as e:  # the state moved: the NF stays where it now runs
                return f"not rolled back ({e}); the NF runs on the destination", True
        back = self.state.remap_ports({v: PortRef(r.device, v) for v in r.vports})
        for st in back.steps:
            if st:
                self.backend.apply_now(st)
        self.counters["rules_applied"] += len(back)
        return f"rolled back: {r.name} stays on {r.device}, its ports remapped back ({len(back)} physical ops)", False

    async def wait_migrations(self, step_s: float = 1e-4) -> None:
        """Return when no migration runs. A move ends only as simulated time passes, so
        while one runs and nothing else moves the clock, this advances it ``step_s`` at a time."""
        while self.running:
            done, _ = await asyncio.wait(list(self.running.values()), timeout=0.005)
            if self.running and not done and getattr(self.backend, "machine", None) is not None:
                self.backend.run_for(step_s)

    # ------------------------------------------------------------ health
    def health(self) -> dict[str, Any]:
        return {"status": "ok", "scenario": self.sc.name, "nfs": len(self.nfs),
                "virtual_rules": len(self.state.virtual_rules()) if self.state else 0,
                "simulated_s": getattr(self.backend, "now_s", 0.0), "uptime_s": round(time.time() - self.started_at, 3),
                "migrations_running": len(self.running)}


def _in_port(rule) -> Optional[int]:
    fm = rule.match.get("in_port")
    return None if fm is None else fm.value


def _with_new_port(topo, vport: int, ref):
    from tandem.oneswitch.topology import Topology

    t = Topology(topo.switches, topo.links, tuple(sorted((*topo.ports, (vport, ref)))))
    t.validate()
    return t


def _retopologize(state, topo):
    """Give ``state`` a topology with ports added or removed; returns the consistent update plan
    (every virtual rule re-translated, old and new translations diffed). Raises TranslationError
    and leaves ``state`` unchanged if a rule cannot be translated on the new topology."""
    from tandem.oneswitch.plan import plan_changes

    ids = state.ids.copy()
    comp = state._compiler(topo, ids, state._groups)  # keeps serve's pinned shared rules pinned
    for rule in state.comp.vrules.values():
        comp.add(rule)
    comp.take_journal()
    plan = plan_changes(state._diff(comp))
    state.topo, state.ids, state.comp = topo, ids, comp
    return plan
