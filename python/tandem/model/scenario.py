"""The scenario schema: the one source of truth for what a Tandem scenario file holds.

Inputs: a mapping (usually YAML, read by ``tandem.model.load``). Output: a
frozen, fully cross-checked ``Scenario``. Every model forbids unknown keys.
Quantities carry units (``tandem.model.units``) and are stored in SI base
units: bandwidth in bps, time in seconds, frequency in Hz, sizes in bytes,
packet rates in pps, power in W. Plain numbers appear only where the field
name carries the unit (``cores``, ``cycles_per_packet``, ``entries`` ...).

Defaults are the calibration figures of the papers (DESIGN "Calibration
defaults"): a TILE-Gx36-like sNIC (36 cores at 1.2 GHz, four 10GbE ports), a
24-core 2.7 GHz x86 host (UNO §5), PCIe Gen2 x8 at 32 Gbps per direction with a
26 µs round trip (SmartChain §II), and the OVS-POF-TC τ values. Every default
can be overridden in the file. Cross-reference checks live in ``checks.py``
and run as part of validation. Pure data; the one I/O is that validating a
replay traffic source reads its pcap file (``pcap_file.py``).
"""

from __future__ import annotations


import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from tandem.model.graph import topological_or_none, topological_order  # noqa: F401  (re-exported)
from tandem.model.pcap_file import PcapFileError, Recording, read_recording
from tandem.model.units import Bandwidth, Duration, Frequency, PacketRate, Power, Size

GIB = 1024**3
MIB = 1024**2

# --------------------------------------------------------------------------- names


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ENDPOINT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)?$")


def _check_name(v: str) -> str:
    if not _NAME.match(v):
        raise PydanticCustomError(
            "name", "{msg}", {"msg": f"{v!r} is not a valid name: use letters, digits, '_' or '-', starting with a letter"}
        )
    return v


def _check_endpoint(v: str) -> str:
    if not _ENDPOINT.match(v):
        raise PydanticCustomError(
            "endpoint", "{msg}", {"msg": f"{v!r} is not an endpoint: write INSTANCE, INSTANCE.PORT or SNIC.PORT"}
        )
    return v


# Upper bounds: the largest values the emulator and solvers handle (u32 counters, memory
# per core/flow/queue slot), so `validate` refuses what `run` could not do.
MAX_CORES = 4096
MAX_COUNT = 1_000_000  # queue slots, concurrent flows, engines, ring contexts
MAX_PACKET = 65535  # bytes in one frame
PositiveInt = Annotated[int, Field(ge=1, le=MAX_CORES)]
Name = Annotated[str, AfterValidator(_check_name)]
"""An identifier used as a mapping key and in references (no dots)."""
Endpoint = Annotated[str, AfterValidator(_check_endpoint)]
"""A reference to a traffic endpoint: ``vm1``, ``fw1.in`` or ``snic0.eth0``."""

AcceleratorKind = Literal["crypto", "regex", "compression"]
NfAction = Literal["read", "write", "drop", "encap", "decap"]
StateKind = Literal["none", "per_flow", "multi_flow", "global"]
TrafficPattern = Literal["constant", "poisson", "onoff", "ramp", "replay"]
FlowSizeKind = Literal["fixed", "exponential", "pareto"]


class Model(BaseModel):
    """Base of every scenario model: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True, allow_inf_nan=False)


def _power_order(m: Any) -> Any:
    if m.idle_power is not None and m.busy_power is not None and m.busy_power < m.idle_power:
        raise PydanticCustomError("power_order", "busy_power must be ≥ idle_power")
    return m


# --------------------------------------------------------------------------- devices


class Accelerator(Model):
    """A fixed-function engine on an sNIC (e.g. TILE-Gx MiCA crypto)."""

    kind: AcceleratorKind
    throughput: Bandwidth = Field(gt=0)
    setup: Duration = 0.0  # fixed cost per request, before the bytes stream through
    engines: int = Field(1, ge=1, le=MAX_COUNT)  # independent engines of this kind


class EthernetPort(Model):
    """An external Ethernet port on an sNIC."""

    rate: Bandwidth = Field(10e9, gt=0)  # TILE-Gx36: four 10GbE interfaces (UNO §4)


def _default_eth_ports() -> dict[str, EthernetPort]:
    return {f"eth{i}": EthernetPort() for i in range(4)}


class HostDevice(Model):
    """The x86 host: general-purpose cores only. UNO §5: 24 Xeon cores at 2.7 GHz, 128 GB."""

    kind: Literal["host"]
    cores: int = Field(24, ge=1, le=MAX_CORES)
    clock: Frequency = Field(2.7e9, gt=0)
    speed: float = Field(1.0, gt=0)  # relative per-core speed (work per cycle)
    memory: Optional[Size] = 128 * GIB
    idle_power: Optional[Power] = None
    busy_power: Optional[Power] = None  # at all cores busy; linear in between

    _power = model_validator(mode="after")(_power_order)


class SnicDevice(Model):
    """A SmartNIC: cores, accelerators, a flow table and Ethernet ports (TILE-Gx36 defaults)."""

    kind: Literal["snic"]
    cores: int = Field(36, ge=1, le=MAX_CORES)
    clock: Frequency = Field(1.2e9, gt=0)
    speed: float = Field(1.0, gt=0)
    memory: Optional[Size] = None
    flow_table_entries: int = Field(65536, ge=0, le=2**32 - 1)  # UNO §5.1 offloads 64K rules to TILE-Gx OVS
    cache: Size = 4 * MIB  # shared last-level cache that tenants' cache_share splits (assumption)
    cache_miss_penalty: Duration = 100e-9  # extra time of a memory access that misses it (assumption)
    accelerators: dict[Name, Accelerator] = Field(default_factory=dict)
    ports: dict[Name, EthernetPort] = Field(default_factory=_default_eth_ports)
    idle_power: Optional[Power] = None
    busy_power: Optional[Power] = None

    _power = model_validator(mode="after")(_power_order)

    def has_accelerator(self, kind: str) -> bool:
        return any(a.kind == kind for a in self.accelerators.values())


def _kind_tag(v: Any) -> Optional[str]:
    kind = v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)
    return f"kind:{kind}" if isinstance(kind, str) else None


Device = Annotated[
    Union[Annotated[HostDevice, Tag("kind:host")], Annotated[SnicDevice, Tag("kind:snic")]],
    Discriminator(
        _kind_tag,
        custom_error_type="device_kind",
        custom_error_message="kind must be 'host' or 'snic'",
    ),
]


# --------------------------------------------------------------------------- PCIe


class PcieLink(Model):
    """The PCIe link between the host and one sNIC (defaults: Gen2 x8, SmartChain §II)."""

    snic: Name
    bandwidth: Bandwidth = Field(32e9, gt=0)  # per direction; PCIe Gen2 x8 (UNO §2.3)
    round_trip: Duration = 26e-6  # host<->sNIC and back (SmartChain §II)
    # optional named parts of the round trip; must add up to round_trip
    round_trip_breakdown: Optional[dict[Name, Duration]] = None
    queue_depth_packets: int = Field(1024, ge=1, le=MAX_COUNT)
    dma_cycles_per_crossing: int = Field(0, ge=0, le=2**32 - 1)  # charged to the sending side
    dma_time_per_crossing: Duration = 0.0  # fixed bus time per crossing (descriptors, doorbells)
    # DMA ring contexts the sNIC caches (one ring per port pair and direction, LRU);
    # 0 = all. A crossing on an uncached ring pays dma_ring_miss more bus time.
    dma_ring_contexts: int = Field(0, ge=0, le=MAX_COUNT)
    dma_ring_miss: Duration = 0.0

    @property
    def one_way(self) -> float:
        """Latency of one crossing, in seconds (half the round trip)."""
        return self.round_trip / 2

    @model_validator(mode="after")
    def _breakdown_sums(self) -> "PcieLink":
        if self.round_trip_breakdown:
            total = sum(self.round_trip_breakdown.values())
            if abs(total - self.round_trip) > 1e-9:
                raise PydanticCustomError(
                    "breakdown_sum",
                    "{msg}",
                    {"msg": f"round_trip_breakdown adds up to {total * 1e6:.4g} µs but round_trip is {self.round_trip * 1e6:.4g} µs"},
                )
        return self


# --------------------------------------------------------------------------- NF types


class AcceleratorUse(Model):
    """Part of an NF's byte work done by an accelerator instead of cores."""

    kind: AcceleratorKind
    bytes_fraction: float = Field(1.0, ge=0, le=1)


class CostProfile(Model):
    """What one packet costs an NF on one kind of device.

    Emulator view: time on a core = (cycles_per_packet + cycles_per_byte ×
    bytes × (1 − accelerated fraction)) / (clock × speed). UNO view:
    ``cores_per_gbps`` (r_host / r_nic, §3.2.1). SmartChain view: ``capacity``
    (θ, max throughput alone on the device) and ``latency`` (t, per packet)."""

    cycles_per_packet: float = Field(0.0, ge=0, le=1e12)
    cycles_per_byte: float = Field(0.0, ge=0, le=1e9)
    accelerator: Optional[AcceleratorUse] = None
    cores_per_gbps: Optional[float] = Field(None, ge=0, le=MAX_CORES)
    capacity: Optional[Bandwidth] = Field(None, gt=0)
    latency: Optional[Duration] = None


# Packet fields an NF may read or write: the rule IR's OXM names plus these.
EXTRA_FIELDS = frozenset({"payload", "ip_ttl", "ip_len", "checksum", "tunnel", "flow_id"})


class NfType(Model):
    """An NF kind: its per-device cost profiles and what it does to packets.

    ``cost`` keys are a device kind (``host``, ``snic``) or a device id; a
    device id entry overrides the kind entry for that device. ``preset`` names a
    calibrated entry of ``catalog.PRESETS`` whose fields are the defaults."""

    preset: Optional[str] = None
    description: str = ""
    cost: dict[Name, CostProfile] = Field(min_length=1)
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    actions: list[NfAction] = Field(default_factory=list)
    state: StateKind = "per_flow"
    # The NF code that runs in the emulator: a dp-nf kind (``secgw``, ``l7fw``,
    # ``nat`` …, see ``tandem._dp.nf_kinds()``) with its configuration. Omitted:
    # the ``fixed_cost`` model NF (forwards, charges the cost profile only).
    type: Optional[str] = None
    config: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        from tandem.model.catalog import PRESETS, deep_merge

        name = data["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            msg = f"unknown preset {name!r}; known: {', '.join(sorted(PRESETS))}"
            raise ValidationError.from_exception_data(
                "NfType", [InitErrorDetails(type=PydanticCustomError("preset", "{msg}", {"msg": msg}), loc=("preset",), input=name)]
            )
        return deep_merge(PRESETS[name], data)

    @model_validator(mode="after")
    def _fields_and_actions(self) -> "NfType":
        from tandem.rules.ir import FIELDS

        for attr in ("reads", "writes"):
            for f in getattr(self, attr):
                if f not in FIELDS and f not in EXTRA_FIELDS:
                    extra = ", ".join(sorted(EXTRA_FIELDS))
                    raise PydanticCustomError(
                        "unknown_field",
                        "{msg}",
                        {"msg": f"{attr}: unknown packet field {f!r}; use an OXM name (ipv4_src, tcp_dst …) or one of {extra}"},
                    )
        if self.writes and self.actions and "write" not in self.actions:
            raise PydanticCustomError("actions", "writes fields, so actions must include 'write'")
        return self

    @model_validator(mode="after")
    def _nf_code(self) -> "NfType":
        from tandem.nf.config import check_nf_config

        if self.type is not None or self.config:
            msg = check_nf_config(self.type, self.config)
            if msg:
                raise PydanticCustomError("nf_config", "{msg}", {"msg": msg})
            if not (self.reads or self.writes or self.actions):
                # The NF code declares what it touches; SmartChain's dependency
                # analyzer reads these fields, so real NFs need no hand-written lists.
                from tandem.nf.config import declared

                reads, writes, actions = declared(self.type, self.config)
                object.__setattr__(self, "reads", reads)
                object.__setattr__(self, "writes", writes)
                object.__setattr__(self, "actions", actions)
        return self

    @property
    def effective_actions(self) -> tuple[str, ...]:
        """``actions`` if given, else read/write derived from the field lists."""
        if self.actions:
            return tuple(self.actions)
        return tuple(a for a, fs in (("read", self.reads), ("write", self.writes)) if fs)

    def profile_for(self, device_id: str, device_kind: str) -> Optional[CostProfile]:
        """The profile that applies on a device: by id first, then by kind."""
        return self.cost.get(device_id) or self.cost.get(device_kind)


# --------------------------------------------------------------------------- instances, tenants


class NfInstance(Model):
    """One running NF, of an ``nf_types`` entry, optionally pinned to a device."""

    kind: Literal["nf"]
    type: Name
    ports: list[Name] = Field(default_factory=lambda: ["in", "out"], min_length=1)
    pin: Optional[Name] = None
    tenant: Optional[Name] = None


class VmInstance(Model):
    """A tenant VM; VMs always run on the host (UNO §3.2.1)."""

    kind: Literal["vm"]
    ports: list[Name] = Field(default_factory=lambda: ["eth0"], min_length=1)
    tenant: Optional[Name] = None


Instance = Annotated[
    Union[Annotated[NfInstance, Tag("kind:nf")], Annotated[VmInstance, Tag("kind:vm")]],
    Discriminator(
        _kind_tag,
        custom_error_type="instance_kind",
        custom_error_message="kind must be 'nf' or 'vm'",
    ),
]


class Tenant(Model):
    """FairNIC isolation share of one tenant on the sNIC(s)."""

    cores: dict[Name, PositiveInt] = Field(default_factory=dict)  # device id -> cores reserved
    ingress_buffer: Optional[Size] = None
    drr_weight: float = Field(1.0, gt=0)  # egress deficit-round-robin weight
    cache_share: Optional[float] = Field(None, gt=0, le=1)
    accelerator_rates: dict[AcceleratorKind, Bandwidth] = Field(default_factory=dict)  # token rates
    # cache model: hot data the tenant's NFs touch on an sNIC, and accesses to it per packet per NF
    working_set: Optional[Size] = None
    memory_accesses_per_packet: float = Field(0.0, ge=0)


# --------------------------------------------------------------------------- chains and graphs


class Chain(Model):
    """A service chain: traffic enters at ``ingress``, visits ``nfs`` in order, leaves at ``egress``."""

    nfs: list[Name] = Field(min_length=1)
    ingress: Optional[Endpoint] = None
    egress: Optional[Endpoint] = None
    tenant: Optional[Name] = None


class GraphEdge(Model):
    """Packets leaving ``from`` go to ``to``; ``fraction`` of them take this branch."""

    src: Name = Field(alias="from")
    dst: Name = Field(alias="to")
    fraction: float = Field(1.0, gt=0, le=1)


class ElementGraph(Model):
    """A SmartChain element graph: NF instances (elements) joined by branching edges.

    The root (the one node without incoming edges) receives all traffic; each
    node's outgoing fractions add up to 1. ``throughput_estimate`` is θ_est."""

    nodes: list[Name] = Field(min_length=1)
    edges: list[GraphEdge] = Field(default_factory=list)
    throughput_estimate: Optional[Bandwidth] = None
    ingress: Optional[Endpoint] = None
    egress: Optional[Endpoint] = None
    tenant: Optional[Name] = None

    @property
    def root(self) -> str:
        targets = {e.dst for e in self.edges}
        return next(n for n in self.nodes if n not in targets)

    def successors(self, node: str) -> list[GraphEdge]:
        return [e for e in self.edges if e.src == node]

    def reach_fractions(self) -> dict[str, float]:
        """Share of the graph's traffic that reaches each node (root = 1)."""
        order = topological_or_none(self.nodes, [(e.src, e.dst) for e in self.edges])
        share = {n: 0.0 for n in self.nodes}
        share[self.root] = 1.0
        for n in order or []:
            for e in self.successors(n):
                share[e.dst] += share[n] * e.fraction
        return share


# --------------------------------------------------------------------------- traffic


class FlowSize(Model):
    """Packets per flow: each of a source's ``flows`` slots sends one flow of a
    drawn size, then starts a new flow (a new 5-tuple). Sizes are whole packets
    averaging ``mean_packets``; ``pareto`` is heavy-tailed with tail index ``shape``."""

    dist: FlowSizeKind
    mean_packets: float = Field(ge=1, le=1e15)
    shape: Optional[float] = Field(None, gt=1)

    @model_validator(mode="after")
    def _shape_and_whole(self) -> "FlowSize":
        if self.dist == "pareto" and self.shape is None:
            raise PydanticCustomError("flow_size", "dist pareto needs shape (> 1, e.g. shape: 1.5)")
        if self.dist != "pareto" and self.shape is not None:
            raise PydanticCustomError("flow_size", "{msg}", {"msg": f"shape applies only to dist pareto, not {self.dist}"})
        if self.dist == "fixed" and self.mean_packets != int(self.mean_packets):
            raise PydanticCustomError("flow_size", "{msg}", {"msg": f"dist fixed needs a whole number of packets, got {self.mean_packets:g}"})
        return self

    def emulator_spec(self) -> tuple:
        """The emulator's form: ("fixed", n) | ("exponential", mean) | ("pareto", mean, shape)."""
        if self.dist == "fixed":
            return ("fixed", int(self.mean_packets))
        if self.dist == "exponential":
            return ("exponential", self.mean_packets)
        return ("pareto", self.mean_packets, self.shape)


class RatePoint(Model):
    """One point of a ``ramp`` source's rate schedule: from ``at`` (after the
    source's start) the rate is ``bandwidth`` or ``packet_rate`` (one of them; 0 pauses)."""

    at: Duration = Field(ge=0)
    bandwidth: Optional[Bandwidth] = Field(None, ge=0)
    packet_rate: Optional[PacketRate] = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_rate(self) -> "RatePoint":
        if (self.bandwidth is None) == (self.packet_rate is None):
            raise PydanticCustomError("rate", "give exactly one of bandwidth (e.g. 4Gbps) or packet_rate (e.g. 1.5Mpps)")
        return self


class InnerApp(Model):
    """An application an ESP source's inner flows may be: each new flow opens with an
    HTTP request carrying ``Host: host`` (``http``, port 80) or a TLS ClientHello whose
    SNI is ``host`` (``tls``, port 443), chosen by ``weight``."""

    proto: Literal["http", "tls"]
    host: str = Field(min_length=1, max_length=253, pattern=r"^[!-~]+$")
    weight: float = Field(1.0, gt=0, le=1e6)


def _default_apps() -> list[InnerApp]:
    return [InnerApp(proto="tls", host="video.example.net"), InnerApp(proto="tls", host="mail.example.org"),
            InnerApp(proto="http", host="crm.example.com")]


# ESP tunnel-mode frames are 66 bytes of outer Ethernet/IPv4, ESP header, IV and ICV plus a
# body padded to 4 bytes; the body holds the inner IPv4/TCP segment and 2 trailer bytes.
ESP_FIXED = 66
ESP_MIN_FRAME = 110  # an inner segment with 2 bytes of payload (dp_emu esp_gen.rs)


def esp_frame_len(size: int) -> int:
    """The ESP frame a requested frame size becomes: the largest 66 + 4·k not above it (at least 110 B)."""
    return max(ESP_MIN_FRAME, ESP_FIXED + (size - ESP_FIXED) // 4 * 4)


class EspTraffic(Model):
    """A source's flows sent as live IPsec ESP (tunnel mode, AES-GCM): the far end of
    the tunnels of ``secgw`` (an NF type of ``type: secgw``) encrypts each packet under
    one of that type's inbound SAs (``spis``; default every inbound SA; flow i rides SA
    i mod n), with per-SA sequence numbers. The inner packets are TCP flows of ``apps``."""

    secgw: Name
    spis: list[int] = Field(default_factory=list, max_length=4096)
    apps: list[InnerApp] = Field(default_factory=_default_apps, min_length=1, max_length=1000)

    @field_validator("spis")
    @classmethod
    def _spis(cls, v: list[int]) -> list[int]:
        for x in v:
            if not 256 <= x <= 0xFFFFFFFF:
                raise PydanticCustomError("spi", "{msg}", {"msg": f"SPI {x} must be 256..4294967295 (1..255 are reserved, RFC 4303 §2.1)"})
        if len(set(v)) != len(v):
            raise PydanticCustomError("spi", "{msg}", {"msg": "each SPI may be listed once"})
        return v


def _field_errors(problems: list[tuple[str, str, Any]]) -> ValidationError:
    """One error per (field, message, value), each at its own field's YAML path."""
    details = [InitErrorDetails(type=PydanticCustomError("traffic", "{msg}", {"msg": m}), loc=(f,), input=v) for f, m, v in problems]
    return ValidationError.from_exception_data("TrafficSource", details)


# Fields a replay source must not set: the recording fixes rates, sizes, flows and timing.
_NOT_WITH_REPLAY = ("bandwidth", "packet_rate", "packet_size", "packet_size_mix", "flows", "flow_size", "on_time", "off_time",
                    "schedule", "interpolate", "esp")


class TrafficSource(Model):
    """Offered load into a chain or element graph.

    Generated traffic (``constant``, ``poisson``, ``onoff``): give exactly one of
    ``bandwidth`` / ``packet_rate`` and at most one of ``packet_size`` /
    ``packet_size_mix`` (default 64B). ``onoff`` sources need ``on_time`` and
    ``off_time``; the rate applies while on. ``ramp`` follows ``schedule`` instead
    (rate points, the first at 0; ``interpolate: linear`` or ``step``; the last rate
    holds; its ``offered_bps`` is the peak). ``flow_size`` makes flows end and new
    ones start. ``esp`` sends generated flows as ESP tunnel traffic under a SECGW's
    SAs (frames of at least 110B, rounded down to ESP's 4-byte alignment, see
    ``esp_frame_len``). ``replay`` sends the frames of a pcap file at their recorded
    gaps instead: ``pcap`` names the file relative to the scenario file (stored
    resolved); rates, sizes and flows come from the recording. Validating a
    replay source reads its file (``pcap_file.py``); every other check is pure."""

    target: Name  # a chain or element graph
    pattern: TrafficPattern = "constant"
    bandwidth: Optional[Bandwidth] = Field(None, gt=0)
    packet_rate: Optional[PacketRate] = Field(None, gt=0)
    packet_size: Optional[Size] = None
    packet_size_mix: Optional[dict[Size, float]] = None  # size -> relative weight
    flows: int = Field(1, ge=1, le=MAX_COUNT)  # flows active at once
    flow_size: Optional[FlowSize] = None  # default: flows never end
    on_time: Optional[Duration] = Field(None, gt=0)
    off_time: Optional[Duration] = None
    pcap: Optional[str] = Field(None, min_length=1)  # replay: the recording
    repeat: bool = False  # replay: loop the recording
    schedule: Optional[list[RatePoint]] = Field(None, min_length=1, max_length=10_000)  # ramp: rate points
    interpolate: Literal["linear", "step"] = "linear"  # ramp: between points
    esp: Optional[EspTraffic] = None  # generated flows as ESP tunnel traffic
    start: Duration = 0.0
    ingress: Optional[Endpoint] = None  # default: the target's ingress
    _recording: Optional[Recording] = PrivateAttr(None)

    @field_validator("pcap")
    @classmethod
    def _resolve(cls, v: Optional[str], info: ValidationInfo) -> Optional[str]:
        """Relative paths are relative to the scenario file's directory (validation
        context ``scenario_dir``, set by ``load_scenario``), else to the working directory."""
        if v is None:
            return v
        base = Path((info.context or {}).get("scenario_dir") or Path.cwd())
        return os.path.normpath(base.absolute() / Path(v).expanduser())

    @model_validator(mode="after")
    def _consistent(self) -> "TrafficSource":
        if self.pattern == "replay":
            return self._check_replay()
        misplaced = [(f, "applies only to pattern replay", getattr(self, f)) for f in ("pcap", "repeat") if self._given(f)]
        if self.pattern != "ramp":
            misplaced += [(f, "applies only to pattern ramp", getattr(self, f)) for f in ("schedule", "interpolate") if self._given(f)]
        if misplaced:
            raise _field_errors(misplaced)
        if self.pattern != "ramp" and (self.bandwidth is None) == (self.packet_rate is None):
            raise PydanticCustomError("rate", "give exactly one of bandwidth (e.g. 4Gbps) or packet_rate (e.g. 1.5Mpps)")
        if self.packet_size is not None and self.packet_size_mix is not None:
            raise PydanticCustomError("size", "give packet_size or packet_size_mix, not both")
        for size, w in (self.packet_size_mix or {}).items():
            if size < 14 or w <= 0:
                raise PydanticCustomError(
                    "size_mix", "{msg}", {"msg": f"packet_size_mix: each size must be ≥ 14B and each weight > 0 (got {size}B: {w:g})"}
                )
        big = [(f, sz) for f, sz in [("packet_size", self.packet_size), *(("packet_size_mix", k) for k in self.packet_size_mix or {})]
               if sz is not None and sz > MAX_PACKET]
        if big:
            raise _field_errors([(big[0][0], f"{big[0][1]}B is larger than a frame can be ({MAX_PACKET}B)", None)])
        if self.packet_size is not None and self.packet_size < 14:
            raise PydanticCustomError("size", "{msg}", {"msg": f"packet_size {self.packet_size}B is smaller than an Ethernet header (14B)"})
        if self.esp is not None:
            sizes = [("packet_size_mix", k) for k in self.packet_size_mix or {}] or [
                ("packet_size", self.packet_size if self.packet_size is not None else 64)]
            small = [(f, sz) for f, sz in sizes if sz < ESP_MIN_FRAME]
            if small:
                raise _field_errors([(small[0][0], f"{small[0][1]}B is too small for an ESP tunnel frame with an inner "
                                                   f"TCP segment (at least {ESP_MIN_FRAME}B)", None)])
        if self.pattern == "onoff" and (self.on_time is None or self.off_time is None):
            raise PydanticCustomError("onoff", "pattern onoff needs both on_time and off_time (e.g. on_time: 10ms)")
        if self.pattern != "onoff" and (self.on_time is not None or self.off_time is not None):
            raise PydanticCustomError("onoff", "on_time/off_time apply only to pattern onoff")
        if self.pattern == "ramp":
            self._check_ramp()
        return self

    def _check_ramp(self) -> None:
        problems = [(f, "not allowed with pattern ramp: the schedule gives the rates", None)
                    for f in ("bandwidth", "packet_rate") if self._given(f)]
        if self.schedule is None:
            problems.append(("schedule", "pattern ramp needs schedule: a list of {at: TIME, bandwidth: RATE} points, "
                                         "the first at 0s", None))
        if problems:
            raise _field_errors(problems)
        details = []
        pts = self.schedule or []
        if pts[0].at != 0:
            details.append((0, "at", f"the first point must be at 0s (the source's start), not {pts[0].at:g}s"))
        for k in range(1, len(pts)):
            if pts[k].at < pts[k - 1].at:
                details.append((k, "at", f"{pts[k].at:g}s is earlier than point {k - 1} ({pts[k - 1].at:g}s); "
                                         "times must not decrease"))
        if all(self._point_pps(p) == 0 for p in pts):
            details.append((0, "bandwidth" if pts[0].bandwidth is not None else "packet_rate",
                            "every rate of the schedule is 0: the source would send nothing"))
        if details:
            raise ValidationError.from_exception_data("TrafficSource", [
                InitErrorDetails(type=PydanticCustomError("schedule", "{msg}", {"msg": m}), loc=("schedule", k, f), input=None)
                for k, f, m in details])

    def _point_pps(self, p: RatePoint) -> float:
        if p.packet_rate is not None:
            return float(p.packet_rate)
        return float(p.bandwidth or 0.0) / (self.mean_packet_size() * 8)

    def ramp_points(self) -> list[tuple[float, float]]:
        """A ramp's schedule as (seconds after the start, packets/s) points."""
        return [(p.at, self._point_pps(p)) for p in self.schedule or []]

    def scheduled_packets(self, seconds: float) -> float:
        """Packets a ramp sends in its first `seconds` (the integral of its rate)."""
        pts = self.ramp_points()
        total = 0.0
        for k, (t0, r0) in enumerate(pts):
            t1, r1 = pts[k + 1] if k + 1 < len(pts) else (max(seconds, t0), r0)
            if self.interpolate == "step":
                r1 = r0
            a, b = min(t0, seconds), min(t1, seconds)
            if b > a:
                rate = (lambda x: r0 + (r1 - r0) * (x - t0) / (t1 - t0)) if t1 > t0 else (lambda x: r0)
                total += 0.5 * (rate(a) + rate(b)) * (b - a)
        return total

    def _given(self, field: str) -> bool:
        """The field holds something other than its default (a dumped model spells out every default)."""
        return getattr(self, field) != type(self).model_fields[field].default

    def _check_replay(self) -> "TrafficSource":
        why = "not allowed with pattern replay: the recording sets rates, sizes, flows and timing"
        extra = [(f, why, getattr(self, f)) for f in _NOT_WITH_REPLAY if self._given(f)]
        if extra:
            raise _field_errors(extra)
        if self.pcap is None:
            raise _field_errors([("pcap", "pattern replay needs pcap: FILE (a pcap file, relative to the scenario file)", None)])
        try:
            rec = read_recording(Path(self.pcap))
        except PcapFileError as e:
            raise _field_errors([("pcap", f"{self.pcap}: {e}", None)]) from None
        if rec.frames == 0:
            raise _field_errors([("pcap", f"{self.pcap}: the recording holds no frames", None)])
        if self.repeat and rec.span_ns == 0:
            raise _field_errors([("repeat", f"{self.pcap}: cannot repeat a recording that spans no time"
                                            f" ({rec.frames} frame{'s' if rec.frames > 1 else ''} at one timestamp)", None)])
        self._recording = rec
        return self

    @property
    def recording(self) -> Optional[Recording]:
        """What a replay source's pcap holds (None for generated traffic)."""
        return self._recording

    def size_mix(self) -> list[tuple[int, float]]:
        """(bytes, probability) pairs; probabilities add up to 1. A replay source
        reports its recording's mean frame size."""
        if self._recording is not None:
            return [(round(self._recording.bytes / self._recording.frames), 1.0)]
        fit = esp_frame_len if self.esp is not None else (lambda s: s)
        if self.packet_size_mix:
            total = sum(self.packet_size_mix.values())
            out: dict[int, float] = {}
            for s, w in sorted(self.packet_size_mix.items()):
                out[fit(s)] = out.get(fit(s), 0.0) + w / total
            return sorted(out.items())
        return [(fit(self.packet_size if self.packet_size is not None else 64), 1.0)]

    def mean_packet_size(self) -> float:
        if self._recording is not None:
            return self._recording.bytes / self._recording.frames
        return sum(s * p for s, p in self.size_mix())

    def offered_bps(self) -> float:
        """Average offered bandwidth while sending (bits/s)."""
        if self.bandwidth is not None:
            return self.bandwidth
        if self.pattern == "ramp":
            return max(p.bandwidth if p.bandwidth is not None else self._point_pps(p) * self.mean_packet_size() * 8
                       for p in self.schedule or [])
        return self.offered_pps() * self.mean_packet_size() * 8

    def offered_pps(self) -> float:
        """Packets/s while sending; a recording's rate is one frame per mean gap."""
        if self._recording is not None:
            gap = self._recording.mean_gap_s
            return 1.0 / gap if gap > 0 else 0.0
        if self.packet_rate is not None:
            return self.packet_rate
        if self.pattern == "ramp":
            return max(r for _, r in self.ramp_points())
        return float(self.bandwidth or 0.0) / (self.mean_packet_size() * 8)


# --------------------------------------------------------------------------- placement inputs


class UnoEdge(Model):
    """An edge of the UNO placement graph (§3.2.1): average traffic between two vertices."""

    src: Endpoint = Field(alias="from")
    dst: Endpoint = Field(alias="to")
    traffic: Bandwidth


class UnoInputs(Model):
    """UNO Alg. 1 inputs. Vertices are NF/VM instances and sNIC Ethernet ports
    (``snic0.eth0``). T and D default to the link bandwidth and the sNIC cores."""

    edges: list[UnoEdge] = Field(default_factory=list)
    pcie_budget: dict[Name, Bandwidth] = Field(default_factory=dict)  # sNIC id -> T
    snic_capacity_cores: dict[Name, PositiveInt] = Field(default_factory=dict)  # sNIC id -> D


class PofInputs(Model):
    """OVS-POF-TC offload parameters (measured values of the paper, §IV and §V)."""

    tau1: Duration = 4e-6  # per-packet latency on the sNIC path
    tau2: Duration = 50e-6  # kernel path, flow within kernel throughput
    tau3: Duration = 7e-3  # kernel path, flow above kernel throughput
    kernel_path_rate: PacketRate = 0.534e6
    tau_add: Duration = 22.5e-3
    tau_del: Duration = 25.3e-3
    max_offloaded_entries: int = Field(4800, ge=0)  # M^sn of the simulations (§VI)


class PlacementInputs(Model):
    uno: Optional[UnoInputs] = None
    pof: PofInputs = Field(default_factory=PofInputs)


class AgentSettings(Model):
    """The NF agent's re-placement loop during an emulated run (UNO §3.2.2): every
    ``period`` of simulated time it measures the NF-level traffic matrix, re-solves
    placement in incremental mode and migrates when that pays. The other fields damp
    it so traffic noise does not make it move NFs back and forth (see docs/agent.md)."""

    period: Duration = Field(0.1, gt=0)
    policy: Literal["uno"] = "uno"
    # The target is solved for the measured traffic x (1 + headroom): a placement
    # chosen near a budget is not forced out again by a small rise.
    headroom: float = Field(0.15, ge=0, le=10)
    rel_threshold: float = Field(0.10, ge=0)  # move only if host cores fall by this share ...
    abs_threshold: float = Field(0.05, ge=0)  # ... and by at least this many cores
    dwell: Duration = Field(0.5, ge=0)  # minimum simulated time between two migrations
    move_cost: float = Field(0.05, ge=0)  # host-core equivalent charged per moved NF
    smoothing: float = Field(0.5, gt=0, le=1)  # EWMA weight of the newest period's rates


class RunSettings(Model):
    """How an emulated run is driven."""

    duration: Duration = Field(1.0, gt=0)
    seed: int = Field(1, ge=0, le=2**64 - 1)
    isolation: bool = True  # FairNIC tenant isolation on/off
    # Where `tandem run` puts the NFs: the UNO engine on the derived problem, SmartChain
    # (element graphs), or each NF's pin (else the host). --place NF=DEV pins on top.
    placement: Literal["uno", "smartchain", "pinned"] = "uno"
    agent: Optional[AgentSettings] = None  # re-place NFs while the run goes (UNO §3.2.2)


class MigrationStep(Model):
    """One scheduled NF move of an emulated run (``tandem.emu`` migration)."""

    at: Duration = Field(ge=0)  # simulated time the move starts
    nf: Name  # the NF instance to move
    to: Name  # the device it moves to


# --------------------------------------------------------------------------- scenario


class Scenario(Model):
    """A whole scenario: one host, its sNICs and links, NFs, tenants, chains, traffic."""

    name: str = Field(min_length=1)
    description: str = ""
    devices: dict[Name, Device] = Field(min_length=1)
    links: dict[Name, PcieLink] = Field(default_factory=dict)
    nf_types: dict[Name, NfType] = Field(default_factory=dict)
    instances: dict[Name, Instance] = Field(default_factory=dict)
    tenants: dict[Name, Tenant] = Field(default_factory=dict)
    chains: dict[Name, Chain] = Field(default_factory=dict)
    element_graphs: dict[Name, ElementGraph] = Field(default_factory=dict)
    traffic: dict[Name, TrafficSource] = Field(default_factory=dict)
    placement: PlacementInputs = Field(default_factory=PlacementInputs)
    run: RunSettings = Field(default_factory=RunSettings)
    # NF moves during `tandem run` (loss-free, order-preserving; docs/migration.md).
    migrations: list[MigrationStep] = Field(default_factory=list)
    # The controller's rules on the one virtual switch (ovs-ofctl text, one flow a line),
    # or the path of a file holding them; without it the chains compile to rules.
    rules: Optional[str] = Field(None, min_length=1)

    @field_validator("rules")
    @classmethod
    def _rules_file(cls, v: Optional[str], info: ValidationInfo) -> Optional[str]:
        """A rules file path is relative to the scenario file's directory (as pcap paths are)."""
        if v is None or "actions=" in v or "\n" in v.strip():
            return v
        base = Path((info.context or {}).get("scenario_dir") or Path.cwd())
        return os.path.normpath(base.absolute() / Path(v.strip()).expanduser())

    @model_validator(mode="after")
    def _cross_references(self) -> "Scenario":
        from tandem.model.checks import raise_problems, reference_problems

        raise_problems(reference_problems(self))
        return self

    # ---- convenient views (pure) ----

    @property
    def host_id(self) -> str:
        return next(k for k, d in self.devices.items() if d.kind == "host")

    @property
    def host(self) -> HostDevice:
        return self.devices[self.host_id]  # type: ignore[return-value]

    @property
    def snics(self) -> dict[str, SnicDevice]:
        return {k: d for k, d in self.devices.items() if d.kind == "snic"}  # type: ignore[misc]

    def link_for(self, snic_id: str) -> PcieLink:
        return next(l for l in self.links.values() if l.snic == snic_id)

    def nfs(self) -> dict[str, NfInstance]:
        return {k: i for k, i in self.instances.items() if i.kind == "nf"}  # type: ignore[misc]

    def vms(self) -> dict[str, VmInstance]:
        return {k: i for k, i in self.instances.items() if i.kind == "vm"}  # type: ignore[misc]

    def uno_pcie_budget(self, snic_id: str) -> float:
        """T for one sNIC in bps: the explicit budget, else the link bandwidth."""
        uno = self.placement.uno
        if uno and snic_id in uno.pcie_budget:
            return uno.pcie_budget[snic_id]
        return self.link_for(snic_id).bandwidth

    def uno_capacity_cores(self, snic_id: str) -> int:
        """D for one sNIC: the explicit capacity, else its core count."""
        uno = self.placement.uno
        if uno and snic_id in uno.snic_capacity_cores:
            return uno.snic_capacity_cores[snic_id]
        return self.snics[snic_id].cores
