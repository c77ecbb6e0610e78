"""The backend interface: what OneSwitch needs from the physical switches.

A backend owns k physical switches (one host switch, one or more sNIC
switches) joined by PCIe links, and exposes them through one asyncio
interface, whatever implements them (real Open vSwitch bridges in ``ovs.py``,
the Rust emulator in ``emu.py``, an in-memory table in ``fake.py``).

Inputs: a ``PhysicalLayout`` (switch names, their port numbers, PCIe links as
port pairs), then batches of ``FlowOp``/``GroupOp``/``MeterOp`` (rule IR) and
``PairOp`` (one more port pair on a PCIe link) to apply.
Outputs: flow/port/group statistics per switch and asynchronous events
(packet-in, flow-removed, port-status) delivered to subscribed listeners.

Contract:
- ``apply(ops)`` applies every op in order and returns only once every
  switch it touched has confirmed them (an OpenFlow barrier or equivalent).
  A switch that rejects an op raises ``BackendError`` naming the switch, the
  op and the switch's error; ops before it stay applied.
- Switch and port identities are stable for the backend's lifetime.
- ``close()`` removes everything the backend created and is idempotent.
State: whatever the implementation keeps; the interface itself is stateless.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable, Literal, Mapping, Protocol, Sequence, Union

from tandem.rules.ir import Action, Group, Rule
from tandem.rules.meters import Meter, MeterStats
from tandem.rules.ofwire_stats import FlowStatsEntry, PortStatsEntry

FlowOpKind = Literal["add", "delete_strict", "modify_strict", "delete"]
GroupOpKind = Literal["add", "modify", "delete"]


class BackendError(RuntimeError):
    """A backend could not do what was asked. ``of_error`` carries the
    switch's OpenFlow (type, code) when the switch itself refused, and ``op``
    the refused op when known."""

    def __init__(self, message: str, switch: str | None = None, of_error: tuple[int, int] | None = None,
                 op: object | None = None) -> None:
        super().__init__(message)
        self.switch = switch
        self.of_error = of_error
        self.op = op


# ---------------------------------------------------------------- layout


@dataclass(frozen=True)
class PhysicalLink:
    """A PCIe link between two physical switches, as a pair of ports (more pairs on
    the same link come later, as ``PairOp``s)."""

    a_switch: str
    a_port: int
    b_switch: str
    b_port: int


@dataclass(frozen=True)
class PhysicalLayout:
    """What a backend must build: switches with their external (Ethernet or
    VM-facing) port numbers, and the PCIe links between them. Port numbers are
    OpenFlow port numbers on each switch and are unique per switch, link ports
    included. ``port_names`` optionally names a port (``(switch, port) ->
    name``), e.g. the veth a namespace test attaches."""

    switches: Mapping[str, tuple[int, ...]]
    links: tuple[PhysicalLink, ...] = ()
    datapath_ids: Mapping[str, int] = field(default_factory=dict)
    port_names: Mapping[tuple[str, int], str] = field(default_factory=dict)

    def all_ports(self, switch: str) -> list[int]:
        ports = list(self.switches[switch])
        for ln in self.links:
            if ln.a_switch == switch:
                ports.append(ln.a_port)
            if ln.b_switch == switch:
                ports.append(ln.b_port)
        return sorted(set(ports))


# ---------------------------------------------------------------- changes


@dataclass(frozen=True)
class FlowOp:
    """One physical flow-table change. Field names match OneSwitch's
    ``PhysicalOp`` so either can be passed to ``apply``.
    ``op='delete'`` is a non-strict delete of everything ``rule.match`` covers
    in ``rule.table`` (used for resynchronisation)."""

    switch: str
    op: FlowOpKind
    rule: Rule
    send_flow_rem: bool = False


@dataclass(frozen=True)
class GroupOp:
    switch: str
    op: GroupOpKind
    group: Group


@dataclass(frozen=True)
class MeterOp:
    """A meter-table change on one switch: ``op`` add / modify / delete
    (OFPT_METER_MOD; a delete needs only ``meter.meter_id``)."""

    switch: str
    op: str
    meter: Meter


@dataclass(frozen=True)
class PairOp:
    """Build one more port pair on the PCIe link joining two adjacent switches
    (an SR-IOV-style function: ``switch:port`` <-> ``peer:peer_port``), used by
    OneSwitch's port extensions. Idempotent: a pair that exists is left as it is.
    A backend carries out a step's pair ops before its other ops."""

    switch: str
    port: int
    peer: str
    peer_port: int
    op: str = "add_pair"
    rule: None = None  # (PhysicalOp's fields, for code that looks at any op)
    group: None = None


def pair_ops(ops: Sequence["Op"]) -> tuple[list[PairOp], list["Op"]]:
    """(the pair ops of a batch, the rest in order)."""
    pairs = [op for op in ops if isinstance(op, PairOp)]
    return pairs, ([op for op in ops if not isinstance(op, PairOp)] if pairs else list(ops))


class FlowOpLike(Protocol):
    """OneSwitch's ``PhysicalOp``: a flow op (``rule`` set) or, with op
    ``add_group``/``modify_group``/``delete_group``, a group op (``group`` set)."""

    switch: str
    op: str
    rule: Rule | None


Op = Union[FlowOp, GroupOp, MeterOp, PairOp, FlowOpLike]


# ---------------------------------------------------------------- read-back


# Flow and port read-back use the OpenFlow 1.3 multipart entries themselves
# (one record type per kind, shared with the wire codec): ``FlowStats`` has
# rule, packet_count, byte_count, duration_*, flags; ``PortStats`` has port_no
# and the twelve OpenFlow port counters.
FlowStats = FlowStatsEntry
PortStats = PortStatsEntry


@dataclass(frozen=True)
class TableStats:
    """One physical flow table's counters: every lookup, and the lookups a rule matched."""

    table_id: int
    active_count: int
    lookup_count: int
    matched_count: int


@dataclass(frozen=True)
class GroupStats:
    group_id: int
    packet_count: int
    byte_count: int
    bucket_counts: tuple[tuple[int, int], ...] = ()  # (packets, bytes) per bucket
    duration_sec: int = 0


@dataclass(frozen=True)
class PortInfo:
    """One physical port as the switch describes it (OFPMP_PORT_DESC terms)."""

    port: int
    name: str
    hw_addr: int = 0
    link_up: bool = True
    admin_up: bool = True
    curr_speed_kbps: int = 10_000_000
    max_speed_kbps: int = 10_000_000


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class PacketIn:
    switch: str
    in_port: int
    frame: bytes
    reason: int = 0  # OFPR_NO_MATCH 0, OFPR_ACTION 1, OFPR_INVALID_TTL 2
    table: int = 0
    cookie: int = 0
    total_len: int | None = None
    # pipeline state the switch lists in the packet-in's match (not zero): metadata,
    # tunnel_id, regN, pkt_mark, as (IR field, value), OVS's order
    fields: tuple[tuple[str, int], ...] = ()
    # Open vSwitch's controller(userdata=...): its bytes (a switch sends them in NXT_PACKET_IN2)
    userdata: bytes = b""
    # the controller id of the switch's connection it came on (dec_ttl(ids): ovs.py opens one per id in use)
    controller_id: int = 0
    # a controller(pause)'s continuation (NXPINT_CONTINUATION's bytes: the switch's own state; endpoint_pause.py)
    continuation: bytes = b""


@dataclass(frozen=True)
class FlowRemoved:
    switch: str
    rule: Rule
    reason: int  # OFPRR_IDLE_TIMEOUT 0, HARD_TIMEOUT 1, DELETE 2, GROUP_DELETE 3
    packet_count: int = 0
    byte_count: int = 0
    duration_sec: int = 0
    duration_nsec: int = 0


@dataclass(frozen=True)
class PortStatus:
    switch: str
    reason: int  # OFPPR_ADD 0, DELETE 1, MODIFY 2
    port: PortInfo


Event = Union[PacketIn, FlowRemoved, PortStatus]
Listener = Callable[[Event], None]


# ---------------------------------------------------------------- interface


class Backend(abc.ABC):
    """Physical switches behind OneSwitch. All I/O methods are coroutines;
    listeners are called from the backend's event loop."""

    name: str = "abstract"
    # apply() builds port pairs on request (``PairOp``: OneSwitch's port extensions)
    extension_pairs: bool = True
    # the switches run Open vSwitch's learn action (adding the learned flows themselves)
    runs_learn: bool = True
    # the switches run Open vSwitch's NORMAL (the host's PCIe link ports are no-flood)
    runs_normal: bool = True
    # a PACKET_OUT's recirculated copy survives whatever its in_port (oneswitch/packet_out_ct_group.py: Open
    # vSwitch 3.1 loses the copy of one from a patch port, so OneSwitch sends it from LOCAL and sets in_port)
    packet_out_from_any_port: bool = False
    # a PACKET_OUT's output:TABLE carries the pipeline state (registers, metadata, tunnel fields …) its earlier
    # actions write into the lookup (oneswitch/packet_out_table.py; the emulator injects the changed frame only)
    table_carries_state: bool = True
    # the switches pause at controller(pause) and resume an NXT_RESUME (``resume``; oneswitch/endpoint_pause.py)
    runs_pause: bool = True

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    # lifecycle
    @abc.abstractmethod
    async def start(self, layout: PhysicalLayout) -> None:
        """Build (or attach to) the switches, ports and links of ``layout``."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Remove everything this backend created. Idempotent."""

    # changes
    @abc.abstractmethod
    async def apply(self, ops: Sequence[Op]) -> None:
        """Apply ``ops`` in order; return once every touched switch confirmed."""

    # submit() has written the ops to the switches when it returns (else they go when awaited)
    writes_on_submit: bool = False

    def submit(self, ops: Sequence[Op]) -> Awaitable[None]:
        """``apply(ops)`` started: awaiting the result is awaiting ``apply``. A backend
        with ``writes_on_submit`` (OVS) has written the ops when this returns."""
        return self.apply(ops)

    async def apply_steps(self, steps: Iterable[Sequence[Op]]) -> None:
        """Apply steps one after another with a barrier between them (an
        ``UpdatePlan``'s consistent-update order)."""
        for step in steps:
            if step:
                await self.apply(step)

    @abc.abstractmethod
    async def clear(self, switch: str | None = None) -> None:
        """Delete every flow and group (of one switch, or of all)."""

    @abc.abstractmethod
    async def packet_out(self, switch: str, in_port: int, actions: Sequence[Action], frame: bytes) -> None:
        """Send ``frame`` through ``actions`` as if it arrived on ``in_port``
        (``OFPP_CONTROLLER`` for none)."""

    async def resume(self, switch: str, pi: object) -> None:
        """NXT_RESUME (``pi``: an ``ofwire_packet_in2.WirePacketIn2`` holding ``switch``'s own continuation);
        ``BackendError`` (with the switch's error) if it is refused. A backend whose switches send no
        continuation is never asked."""
        raise BackendError(f"the {self.name} backend's switches keep no continuation", switch)

    async def tlv_table_mod(self, command: int, maps: Sequence[object]) -> None:
        """Relay a virtual NXT_TLV_TABLE_MOD (``ofwire_tlv``: command, ``TlvMap`` list) to
        every switch; ``BackendError`` (with the switch's error) if one refuses it. A
        backend whose switches keep no TLV map (fake, emulator) has nothing to do."""

    # read-back
    @abc.abstractmethod
    def switches(self) -> list[str]:
        ...

    @abc.abstractmethod
    def ports(self, switch: str) -> list[PortInfo]:
        ...

    @abc.abstractmethod
    async def flow_stats(self, switch: str) -> list[FlowStats]:
        ...

    @abc.abstractmethod
    async def port_stats(self, switch: str) -> list[PortStats]:
        ...

    async def group_stats(self, switch: str) -> list[GroupStats]:
        return []

    # meters (MeterOp in ``apply``): band types this backend's switches run
    meter_band_types: frozenset[str] = frozenset({"drop", "dscp_remark"})

    async def meter_stats(self, switch: str) -> list[MeterStats]:
        """Counters of every meter on ``switch`` (OFPMP_METER)."""
        return []

    @abc.abstractmethod
    async def meter_packet_in(self, switch: str, meter_id: int, frame: bytes) -> bytes | None:
        """Pass a packet-in of ``frame`` through meter ``meter_id`` of ``switch`` now, as the
        switch passes its own ``controller(meter_id=…)`` packet-ins (the token is spent, the
        meter's counters count it): the frame to send (remarked by a DSCP band), or None if a
        drop band dropped it (OneSwitch's PACKET_OUT ``controller(meter_id=M)``)."""

    async def table_stats(self, switch: str) -> list[TableStats]:
        """Per-table lookup and match counters of one switch (tables it has used)."""
        raise NotImplementedError(f"backend {self.name} has no table statistics")

    async def groups(self, switch: str) -> list[Group]:
        return []

    # events
    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        for fn in list(self._listeners):
            fn(event)


def group_command(op: Op) -> str | None:
    """``add``/``modify``/``delete`` if ``op`` changes a group (a ``GroupOp``, or a
    OneSwitch ``PhysicalOp`` with op ``add_group``/``modify_group``/``delete_group``),
    else None."""
    if isinstance(op, GroupOp):
        return op.op
    if op.op.endswith("_group"):
        return op.op[: -len("_group")]
    return None
