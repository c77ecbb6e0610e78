"""Machine: a named, Pythonic builder over ``tandem._dp.Emulator``.

Inputs: devices, PCIe links and their port pairs, Ethernet ports, NFs, sinks,
sources and switch port maps, all addressed by name; for FairNIC isolation also
tenants (per-tenant metrics), accelerator token buckets, ingress buffers and
DRR Ethernet ports. Output: a configured emulator; ``run(seconds)`` advances
it (optionally in chunks, calling a progress callback) and returns the
metrics dict. State: name -> index maps.
Units: seconds, bits/s and bytes at this interface (as in the scenario
model); the Rust side works in ns/Gb/s. No policy lives here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from tandem import _dp


class EmuError(ValueError):
    """The emulator was configured inconsistently (names the part)."""


@dataclass(frozen=True)
class Place:
    """An address a packet can be sent to: ("switch", dev, port), ("nf", nf, port),
    ("pcie", link, pair, end), ("eth", eth) or ("sink", sink)."""

    key: tuple

    def __iter__(self):
        return iter(self.key)


class Machine:
    def __init__(self, seed: int = 1) -> None:
        self.emu = _dp.Emulator(seed)
        self.seed = seed
        self.devices: dict[str, int] = {}
        self.links: dict[str, int] = {}
        self.nfs: dict[str, int] = {}
        self.sinks: dict[str, int] = {}
        self.eths: dict[str, int] = {}
        self.eth_ports: dict[str, tuple[str, int, float]] = {}  # name -> (device, switch port, bps)
        self.sources: list[str] = []
        self._next_port: dict[str, int] = {}
        self._port_maps: dict[str, dict[int, list[tuple[int, float]]]] = {}
        self._ran_s = 0.0
        # NF migration (see migrate): the scenario shell that provisions and remaps
        # (tandem.emu.migration.ScenarioMover, set by build_from_scenario(migratable=True)),
        # moves not started yet, moves under way, and every move's record.
        self.mover = None
        self._scheduled: list[tuple[float, int, str, str, dict]] = []
        self._moving: dict[int, tuple[str, list]] = {}  # migration id -> (NF, clean-up ops)
        self._migrations: list[tuple[int, str]] = []  # (migration id, NF)
        self.instances: dict[str, list[str]] = {}  # NF -> its instances, oldest first (after a move)

    # ---------------------------------------------------------------- building

    def _call(self, what: str, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except ValueError as e:
            msg = str(e)
            raise EmuError(msg if msg.startswith(what) else f"{what}: {msg}") from None

    def device(self, name: str, cores: int, clock_hz: float, *, speed: float = 1.0, switch_cores: int = 0,
               switch_cycles_per_packet: float = 0.0, switch_cycles_per_byte: float = 0.0,
               table_capacity: int = 1_000_000, idle_watts: float = 0.0, busy_watts: float = 0.0,
               core_queue_depth: int = 1024) -> str:
        self.devices[name] = self._call(
            f"device {name}", self.emu.add_device, name, cores, clock_hz / 1e9, speed=speed,
            switch_cores=switch_cores, switch_cycles_per_packet=switch_cycles_per_packet,
            switch_cycles_per_byte=switch_cycles_per_byte, table_capacity=min(table_capacity, 2**32 - 1),
            idle_watts=idle_watts, busy_watts=busy_watts, core_queue_depth=core_queue_depth)
        self._next_port[name] = 1
        return name

    def new_port(self, device: str) -> int:
        """A fresh switch port number on `device`."""
        p = self._next_port[device]
        self._next_port[device] = p + 1
        return p

    def accelerator(self, device: str, name: str, bps: float, *, setup_s: float = 0.0, queue_depth: int = 1024) -> None:
        self._call(f"accelerator {name} on {device}", self.emu.add_accelerator, self.devices[device], name,
                   bps / 1e9, setup_ns=setup_s * 1e9, queue_depth=queue_depth)

    def pcie(self, name: str, a: str, b: str, bps: float, *, shared: bool = False, latency_s: float = 0.0,
             dma_s: float = 0.0, overhead_bytes: int = 0, queue_depth: int = 1024, dma_cycles: float = 0.0,
             round_robin: bool = False, ring_contexts: int = 0, ring_miss_s: float = 0.0,
             tlp: dict[str, float] | None = None) -> str:
        """``ring_contexts``: DMA ring contexts the device caches (LRU; 0 = all);
        a crossing on an uncached ring pays ``ring_miss_s`` more bus time.
        ``tlp``: use the device-level TLP/DMA model (``dp_emu::pcie::TlpModel``,
        PCIe Gen2 x8 defaults) with these fields overridden; ``{}`` = all defaults.
        Its data rate then replaces ``bps``, and ``dma_s``/``overhead_bytes`` are unused."""
        self.links[name] = self._call(
            f"PCIe link {name}", self.emu.add_pcie_link, name, self.devices[a], self.devices[b], bps / 1e9,
            shared=shared, latency_ns=latency_s * 1e9, dma_ns=dma_s * 1e9, overhead_bytes=overhead_bytes,
            queue_depth=queue_depth, dma_cycles=dma_cycles, round_robin=round_robin, ring_contexts=ring_contexts,
            ring_miss_ns=ring_miss_s * 1e9, tlp=tlp)
        return name

    def pcie_pair(self, link: str, a: Place, b: Place) -> tuple[Place, Place]:
        """A port pair (virtual port pair or SR-IOV VF) on `link`, joined to `a` on
        the link's first device and `b` on its second. Returns the pair's two ends."""
        li = self.links[link]
        pair = self.emu.add_pcie_pair(li)
        ends = (Place(("pcie", li, pair, 0)), Place(("pcie", li, pair, 1)))
        self.connect(a, ends[0])
        self.connect(b, ends[1])
        return ends

    def eth(self, device: str, name: str, bps: float, *, port: Optional[int] = None, queue_depth: int = 1024,
            propagation_s: float = 0.0) -> int:
        """An Ethernet port on `device`'s switch; returns its switch port number."""
        port = self.new_port(device) if port is None else port
        self.eths[name] = self._call(f"Ethernet port {name}", self.emu.add_eth_port, self.devices[device], port, name,
                                     bps / 1e9, queue_depth=queue_depth, propagation_ns=propagation_s * 1e9)
        self.eth_ports[name] = (device, port, bps)
        return port

    def nf(self, name: str, device: str, kind: str = "fixed_cost", *, ports: int = 2, cycles_per_packet: float = 0.0,
           cycles_per_byte: float = 0.0, accelerator: Optional[str] = None, cores: Optional[list[int]] = None,
           config: Optional[str] = None) -> str:
        """An NF on `device`. With `config` (JSON), `kind` is any dp-nf kind built
        from that configuration; the cost profile is charged either way."""
        if config is not None:
            self.nfs[name] = self._call(f"NF {name}", self.emu.add_nf_config, name, self.devices[device], kind, config,
                                        ports, cycles_per_packet, cycles_per_byte, accelerator=accelerator, cores=cores)
        else:
            self.nfs[name] = self._call(f"NF {name}", self.emu.add_nf, name, self.devices[device], kind, ports=ports,
                                        cycles_per_packet=cycles_per_packet, cycles_per_byte=cycles_per_byte,
                                        accelerator=accelerator, cores=cores)
        return name

    def nf_counters(self) -> dict[str, dict[str, int]]:
        """Each NF's own named counters (packets, verdicts, detections, errors by reason);
        for an NF that migrated, summed over all its instances (each packet is
        processed by exactly one of them)."""
        out = {}
        for name in sorted(n for n in self.nfs if "#" not in n):
            total: dict[str, int] = {}
            for inst in self.instances.get(name, [name]):
                for k, v in self.emu.nf_counters(self.nfs[inst]):
                    total[k] = total.get(k, 0) + v
            out[name] = total
        return out

    def current_instance(self, nf: str) -> str:
        """The instance of NF `nf` that holds its state now (itself until it migrates)."""
        return self.instances.get(nf, [nf])[-1]

    def _source_indices(self, what: str, sources: Iterable[str]) -> list[int]:
        idx = []
        for src in sources:
            if src not in self.sources:
                raise EmuError(f"{what}: no source {src!r} (sources: {', '.join(self.sources) or 'none'})")
            idx.append(self.sources.index(src))
        return idx

    def eth_drr(self, name: str, classes: list[tuple[float, list[str]]], *, quantum_bytes: float = 1600.0) -> None:
        """Share Ethernet port `name`'s wire by deficit round robin: each class is
        (weight, its source names); other sources share a default class of weight
        1. Each class may queue the port's queue depth. Add the sources first."""
        idx = [(float(w), self._source_indices(f"Ethernet port {name}", srcs)) for w, srcs in classes]
        self._call(f"Ethernet port {name}", self.emu.set_eth_drr, self.eths[name], idx, quantum_bytes=quantum_bytes)

    def ingress_buffer(self, name: str, capacity_bytes: int) -> int:
        """A bounded buffer (bytes) for packets waiting for their core work; see ``nf_ingress_buffer``."""
        return self.emu.add_ingress_buffer(name, int(capacity_bytes))

    def nf_ingress_buffer(self, nf: str, buffer: int) -> None:
        """Packets arriving at `nf` wait in `buffer` until their core work there is done;
        what does not fit is dropped as ``ingress_buffer_full``."""
        self._call(f"NF {nf}", self.emu.set_nf_buffer, self.nfs[nf], buffer)

    def tenant(self, name: str, sources: Iterable[str]) -> None:
        """A tenant owning these (already added) traffic sources: the metrics get a
        ``tenants`` entry for it."""
        self._call(f"tenant {name}", self.emu.add_tenant, name, self._source_indices(f"tenant {name}", sources))

    def token_bucket(self, device: str, accelerator: str, tenant: str, bps: float, *, burst_s: float = 10e-6,
                     queue_depth: int = 1024) -> int:
        """A FairNIC token bucket: `tenant` may use `accelerator` on `device` at up to
        `bps` of its throughput and `burst_s` of its time at once; jobs beyond that
        wait (at most `queue_depth` of them) before entering the shared accelerator.
        Attach NFs with ``nf_token_bucket``."""
        return self._call(f"token bucket of {tenant} on {device}.{accelerator}", self.emu.add_token_bucket,
                          self.devices[device], accelerator, tenant, bps / 1e9, burst_ns=burst_s * 1e9,
                          queue_depth=queue_depth)

    def nf_token_bucket(self, nf: str, bucket: int) -> None:
        """NF `nf`'s accelerator jobs pass through token bucket `bucket`."""
        self._call(f"NF {nf}", self.emu.set_nf_bucket, self.nfs[nf], bucket)

    def sink(self, name: str) -> Place:
        self.sinks[name] = self.emu.add_sink(name)
        return Place(("sink", self.sinks[name]))

    # addresses
    def sw(self, device: str, port: int) -> Place:
        return Place(("switch", self.devices[device], port))

    def nf_port(self, nf: str, port: int) -> Place:
        return Place(("nf", self.nfs[nf], port))

    def sink_place(self, name: str) -> Place:
        return Place(("sink", self.sinks[name]))

    def connect(self, a: Place, b: Place) -> None:
        """Join two places both ways; a sink or Ethernet port only receives."""
        if a.key[0] in ("sink", "eth"):
            a, b = b, a
        self._call(f"connect {a.key} <-> {b.key}", self.emu.connect, tuple(a.key), tuple(b.key))

    def wire(self, a: Place, b: Place) -> None:
        self._call(f"wire {a.key} -> {b.key}", self.emu.wire, tuple(a.key), tuple(b.key))

    def attach_nf(self, nf: str, device: str) -> tuple[int, ...]:
        """Give each port of `nf` its own port on `device`'s switch; returns the switch ports."""
        ports = []
        for k in range(2):
            p = self.new_port(device)
            self.connect(self.sw(device, p), self.nf_port(nf, k))
            ports.append(p)
        return tuple(ports)

    def forward(self, device: str, in_port: int, out_port: int) -> None:
        """Port-map rule: frames entering `in_port` leave on `out_port`."""
        self.branch(device, in_port, [(out_port, 1.0)])

    def branch(self, device: str, in_port: int, outs: list[tuple[int, float]]) -> None:
        """Port-map rule with weighted branches: each flow entering `in_port` takes
        one of `outs` ((port, weight) pairs), with probability proportional to
        weight; no `outs` drops what enters (reason ``dropped_by_rule``)."""
        pm = self._port_maps.setdefault(device, {})
        if in_port in pm and pm[in_port] != list(outs):
            raise EmuError(f"switch {device}: port {in_port} already forwards to {pm[in_port]}, cannot also forward"
                           f" to {list(outs)} (a port map has one rule per input port; use OpenFlow rules for more)")
        pm[in_port] = list(outs)
        self._call(f"switch {device}", self.emu.set_port_branches, self.devices[device], sorted(pm.items()))

    def source(self, name: str, into: Place, *, pattern: str = "constant", pps: float = 0.0,
               sizes: Iterable[tuple[int, float]] = ((64, 1.0),), size_range: Optional[tuple[int, int]] = None,
               flows: int = 1, flow_size: Optional[tuple] = None, on_s: float = 0.0, off_s: float = 0.0,
               pcap: Optional[str] = None, repeat: bool = False, start_s: float = 0.0, stop_s: Optional[float] = None,
               line_bps: Optional[float] = None, **template) -> None:
        kw = dict(arrival=pattern, pps=pps, concurrent_flows=flows, flow_size=flow_size, on_ns=on_s * 1e9,
                  off_ns=off_s * 1e9, pcap=pcap, repeat=repeat, start_ns=start_s * 1e9,
                  stop_ns=None if stop_s is None else stop_s * 1e9,
                  line_gbps=None if line_bps is None else line_bps / 1e9, **template)
        if size_range is not None:
            kw["size_range"] = size_range
        else:
            kw["sizes"] = list(sizes)
        self._call(f"source {name}", self.emu.add_source, name, tuple(into.key), **kw)
        self.sources.append(name)

    def capture(self, device: str, port: int, path: str, *, rx: bool = False, snaplen: int = 65535,
                limit_bytes: Optional[int] = None) -> None:
        """Write what `device`'s switch sends out of `port` (rx: receives on it) to a pcap file,
        keeping `snaplen` bytes of each frame and at most `limit_bytes` of file."""
        self._call(f"capture {device} port {port}", self.emu.capture, self.devices[device], port, str(path), rx=rx,
                   snaplen=snaplen, limit_bytes=limit_bytes)

    def capture_skipped(self) -> int:
        """Frames the captures left out because a file reached its size limit."""
        return sum(n for *_, n in self.emu.capture_skipped())

    # ---------------------------------------------------------------- running

    def run(self, seconds: float, *, chunks: int = 1, progress: Optional[Callable[[float], None]] = None,
            wall_step_s: Optional[float] = None) -> dict:
        """Run until `seconds` of simulated time; returns the metrics dict.

        With `wall_step_s`, the run advances in slices sized to take about that much
        wall time each (the slices do not change the result: the event order is the
        same), so Ctrl-C is seen within a slice: on KeyboardInterrupt the run stops
        where it is, flushes its captures, and returns the metrics of the time done
        with ``self.interrupted`` set (``metrics()["duration_s"]`` is the time done)."""
        if seconds <= 0:
            raise EmuError(f"run duration must be positive, got {seconds} s")
        self.emu.set_horizon(seconds * 1e9)
        self.interrupted = False
        try:
            if wall_step_s is None:
                chunks = max(1, chunks)
                for i in range(1, chunks + 1):
                    self._run_to(seconds * 1e9 * i / chunks)
                    if progress:
                        progress(seconds * i / chunks)
            else:
                done, step = 0.0, min(seconds, 1e-4)
                while done < seconds:
                    nxt = min(seconds, done + step)
                    t0 = time.perf_counter()
                    self._run_to(nxt * 1e9)
                    took = time.perf_counter() - t0
                    done = nxt
                    if progress:
                        progress(done)
                    # next slice: scaled toward wall_step_s of wall time, at most 4x per step
                    step = step * min(4.0, max(0.25, wall_step_s / max(took, 1e-6)))
        except KeyboardInterrupt:
            self.interrupted = True
        self.emu.finish()
        self._ran_s = self.emu.now_ns / 1e9 if self.interrupted else seconds
        return self.metrics()

    def metrics(self) -> dict:
        """The emulator's metrics; with migrations, ``migrations`` lists each move
        (``tandem.emu.migration`` / ``dp_emu::migration``)."""
        out = json.loads(self.emu.metrics_json())
        if self._migrations:
            out["migrations"] = []
            for i, nf in self._migrations:
                rec = json.loads(self.emu.migration_json(i))
                out["migrations"].append({"nf": nf, "from_instance": rec.pop("nf"), **rec})
        return out

    def metrics_json(self) -> str:
        return json.dumps(self.metrics(), separators=(",", ":")) if self._migrations else self.emu.metrics_json()

    # ---------------------------------------------------------------- migration

    def migrate(self, nf: str, to_device: str, at_s: float, **cost) -> None:
        """Move NF `nf` to `to_device` at simulated time `at_s` (not before now) while
        traffic flows: loss-free and order-preserving (``dp_emu::migration``). The move
        starts when ``advance``/``run`` reaches `at_s`; its record appears in
        ``metrics()["migrations"]``. `cost` overrides fields of ``dp_emu::MigrationCost``:
        ``export_cycles_per_byte``, ``export_cycles_per_flow``, ``import_cycles_per_byte``,
        ``import_cycles_per_flow``, ``lanes``, ``drain_poll_ns``, ``buffer_bytes``."""
        if self.mover is None:
            raise EmuError("NF migration needs a machine built from a scenario with rule-driven switching"
                           " (build_from_scenario(..., migratable=True))")
        if nf not in self.nfs or "#" in nf:
            known = ", ".join(sorted(n for n in self.nfs if "#" not in n)) or "none"
            raise EmuError(f"migrate: unknown NF {nf!r} (NFs: {known})")
        if to_device not in self.devices:
            raise EmuError(f"migrate {nf}: unknown device {to_device!r} (devices: {', '.join(self.devices)})")
        now = self.emu.now_ns / 1e9
        if at_s < now:
            raise EmuError(f"migrate {nf}: time {at_s} s is in the past (now {now} s)")
        if any(n == nf for n, _ in self._moving.values()):
            raise EmuError(f"migrate {nf}: NF {nf} is already migrating")
        bad = set(cost) - {"export_cycles_per_byte", "export_cycles_per_flow", "import_cycles_per_byte",
                           "import_cycles_per_flow", "lanes", "drain_poll_ns", "buffer_bytes"}
        if bad:
            raise EmuError(f"migrate {nf}: unknown cost parameter(s) {', '.join(sorted(bad))}")
        self._scheduled.append((float(at_s), len(self._scheduled), nf, to_device, dict(cost)))
        self._scheduled.sort(key=lambda x: (x[0], x[1]))

    def migrating(self) -> list[str]:
        """NFs whose move is under way."""
        return sorted(n for n, _ in self._moving.values())

    def _start_move(self, nf: str, dev: str, cost: dict) -> None:
        if any(n == nf for n, _ in self._moving.values()):
            raise EmuError(f"migrate {nf}: the move to {dev} at {self.emu.now_ns / 1e9} s starts while NF {nf}"
                           f" is still migrating")
        self.mover.check(nf, dev)
        src = self.current_instance(nf)
        dst = self.mover.provision(nf, dev)
        mig = self._call(f"migrate {nf}", self.emu.begin_migration, self.nfs[src], self.nfs[dst], **cost)
        cleanup = self.mover.switch_over(nf, dev)  # same simulated instant: no event runs in between
        self.instances.setdefault(nf, [nf]).append(dst)
        self._moving[mig] = (nf, cleanup)
        self._migrations.append((mig, nf))

    def _end_moves(self) -> bool:
        ended = self.emu.take_migration_pauses()
        for mig in ended:
            nf, cleanup = self._moving.pop(mig)
            self.mover.finish(cleanup)
        return bool(ended)

    def _run_to(self, until_ns: float) -> None:
        """``emu.run_until`` that starts scheduled moves on time and finishes ended ones."""
        while True:
            nxt = self._scheduled[0] if self._scheduled else None
            target = min(until_ns, nxt[0] * 1e9) if nxt else until_ns
            self.emu.run_until(target)
            if self._end_moves():
                continue  # the run paused at a move's end before `target`
            if nxt and nxt[0] * 1e9 <= until_ns and self.emu.now_ns >= target - 1e-3:
                self._scheduled.pop(0)
                self._start_move(nxt[2], nxt[3], nxt[4])
                continue
            return

    def advance(self, until_s: float) -> None:
        """Run the clock to `until_s` (simulated seconds) without finishing the run:
        ``metrics()`` may be read, ``migrate`` called, and ``advance``/``run`` go on."""
        now = self.emu.now_ns / 1e9
        if until_s < now:
            raise EmuError(f"advance: {until_s} s is before now ({now} s)")
        self._run_to(until_s * 1e9)
