"""OneSwitch's northbound OpenFlow 1.3 endpoint (asyncio): one virtual switch.

Controllers connect to it (passive ``ptcp:PORT[:IP]``) or it connects to them
(active ``tcp:HOST:PORT``, reconnecting with exponential back-off), exactly
as to an Open vSwitch bridge. Each connection is a ``Session``: HELLO with
version negotiation (1.3 only), then requests are decoded with Tandem's codec,
applied to the virtual state (``OneSwitchState.apply`` returns an update plan)
and the plans carried out on the physical switches by the backend.

Ordering and barriers: FLOW_MOD/GROUP_MOD plans are queued and flushed as one
batch when the connection's input runs dry, before any request that reads
state, and at BARRIER_REQUEST; a BARRIER_REPLY is sent only after every
physical switch confirmed (the backend's ``apply`` ends with barriers).
Multi-step plans (consistent updates) keep their barriers between steps.

Errors: undecodable or unsupported input is answered with OFPT_ERROR of the
right type/code, echoing the xid and the first 64 bytes; the connection stays
up. Only a broken framing (length < 8) or a failed HELLO closes it.
Fail-secure: losing a controller changes nothing in the data plane.

Inputs: the OneSwitch state, its topology, a started backend.
Port status: a virtual port's liveness goes to the translation (fast-failover
buckets on other switches) and is applied before the virtual PORT_STATUS is
sent (docs/endpoint.md, "Port liveness").

State: sessions, virtual groups (no packet buffers: Open vSwitch 3.1 has none), per-rule install time and
flags, role generation id, switch config, the chain of port-status tasks.
Cost: one task per connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import replace
from typing import Iterable, Sequence

from tandem.backends.base import Backend, BackendError, Event, FlowRemoved, PacketIn, PhysicalLayout, PhysicalLink, PortStatus
from tandem.oneswitch.learn_translate import learned_flows
from tandem.rules.ct_nat import nat_match_problem
from tandem.oneswitch.fin_timeouts import fin_match_problem, fin_timeout_in, removed_totals
from tandem.rules.ofwire_stats import FlowStatsEntry
from tandem.oneswitch import endpoint_normal
from tandem.oneswitch.packet_out_ct_group import host_packet_out, problem as ct_group_problem, reached_ct_group
from tandem.oneswitch.packet_out_table import after_table_problem, sends_whole, state_before_table_problem
from tandem.oneswitch.endpoint_clone import check_packet_out_clone, sends_packet_in
from tandem.oneswitch.endpoint_nsh_ttl import Expired, bucket_as_action_set, decide as nsh_ttl_decide, pops_nothing, runs_as_action_set
from tandem.oneswitch.endpoint_packet_in import changed_packet_in, state_match, unmodeled_before_packet_in
from tandem.oneswitch.packet_out_meter import metered_packet_in
from tandem.oneswitch.carried_counters import drop as drop_carried
from tandem.oneswitch.packet_out_whole import whole_on_host, whole_route
from tandem.oneswitch.endpoint_trunc import TruncFrame, on_output, sent, trunc_problem, tracker_for
from tandem.oneswitch.endpoint_output_reg import output_reg_as_output, output_reg_problem, pin_blocked
from tandem.oneswitch.endpoint_bundle import bundle_as_chosen, check_bit, failover_buckets
from tandem.oneswitch.hashsel_translate import refused_member
from tandem.oneswitch import endpoint_stats as V
from tandem.oneswitch.endpoint_common import ApplyGate, plan_steps
from tandem.oneswitch.endpoint_session import Session
from tandem.oneswitch.fastlane import AddLane
from tandem.oneswitch.rule_analysis import writes_mark
from tandem.oneswitch.output_reg_split import may_output_normal
from tandem.oneswitch.translate import packet_in_state
from tandem.oneswitch.packet_in_ext import VirtualPacketIn, encode_for, virtual_packet_in
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import Action, FlowMod, GroupAction, Match, Output, Rule
from tandem.oneswitch.endpoint_tun_metadata import check_tun_metadata_actions, check_tun_metadata_match, tun_metadata_decoding
from tandem.oneswitch.endpoint_pause import pause_keys, pause_problem, virtual_continuation
from tandem.rules.decap import match_problem as decap_match_problem
from tandem.rules.nsh_check_larger import match_problem as nsh_larger_problem

log = logging.getLogger("tandem.endpoint")

# Default async masks (OpenFlow 1.3 §6.1.1): master/equal, slave.
DEFAULT_ASYNC = (0x7, 0x0, 0x7, 0x7, 0xF, 0x0)
# What Open vSwitch accepts as a port number in a flow: 0..0xfeff (a port that may
# not exist) and, for in_port, every reserved number; as an output, these reserved
# ones (OneSwitch also refuses NORMAL and TABLE, see check_actions).
MAX_OFPORT = 0xFEFF
VALID_OUT_RESERVED = {ir.OFPP_IN_PORT, ir.OFPP_FLOOD, ir.OFPP_ALL, ir.OFPP_CONTROLLER, ir.OFPP_LOCAL}
PACKET_OUT_REASON = 5  # Open vSwitch's reason of an output to CONTROLLER in a PACKET_OUT (``action`` in OpenFlow 1.3)
INVALID_TTL_REASON = 2  # OFPR_INVALID_TTL (a PACKET_OUT's dec_nsh_ttl at TTL 0 or 1)
HIDDEN_TABLE = 254  # Open vSwitch's own: a flow there is refused with BAD_REQUEST/EPERM, a goto there accepted


def layout_for(topo: object, port_names: dict | None = None, datapath_ids: dict | None = None) -> PhysicalLayout:
    """The physical layout a backend must build for a OneSwitch topology (the port pairs
    of port extensions come later, on request: ``PairOp``, extension.py)."""
    ext: dict[str, list[int]] = {sw: [] for sw in topo.switch_names}  # type: ignore[attr-defined]
    for ref in topo.port_map.values():  # type: ignore[attr-defined]
        ext[ref.switch].append(ref.port)
    links = tuple(PhysicalLink(l.a.switch, l.a.port, l.b.switch, l.b.port) for l in topo.links)  # type: ignore[attr-defined]
    return PhysicalLayout({sw: tuple(sorted(p)) for sw, p in ext.items()}, links, datapath_ids or {}, port_names or {})


def stable_dpid(topo: object) -> int:
    """A datapath id derived from the topology, the same on every run."""
    digest = hashlib.sha256(repr((topo.switches, topo.links, topo.ports)).encode()).digest()  # type: ignore[attr-defined]
    return 0x7A4D << 48 | int.from_bytes(digest[:6], "big")


def default_n_tables(state: object) -> int:
    """Virtual tables OneSwitch offers: as many as the translator can place."""
    if hasattr(state, "virtual_table"):
        from tandem.oneswitch.translate import MAX_VIRTUAL_TABLE

        return MAX_VIRTUAL_TABLE + 1
    return 64


class OneSwitchEndpoint:
    def __init__(self, state: object, topo: object, backend: Backend, dpid: int | None = None, n_tables: int | None = None) -> None:
        self.state = state
        self.topo = topo
        self.backend = backend
        self.vports = V.virtual_ports(topo)
        self.phys_to_v = {(vp.switch, vp.port): v for v, vp in self.vports.items()}
        self.dpid = dpid if dpid is not None else stable_dpid(topo)
        self.n_tables = n_tables if n_tables is not None else default_n_tables(state)
        self.sessions: set[Session] = set()
        self.groups: dict[int, ir.Group] = {}
        self.meters: dict[int, object] = {}  # virtual meter table (endpoint_meters.py)
        self.rule_meta: dict[V.Key, tuple[float, int]] = {}  # install time, flags
        self._expired: dict[tuple, tuple[int, int, int, int]] = {}  # (switch, key) of a timed-out copy -> counters, timeouts
        self.homed_on_demand = False  # (ports a PACKET_OUT homed, back before the next change: packet_out_whole.py)
        self._ok_instructions: dict[int, tuple] = {}  # id -> instruction tuple that passed check_rule
        self.generation_id: int | None = None
        self.config_flags = 0  # SET_CONFIG's fragment handling (miss_send_len is each session's)
        self.tlv_map: dict = {}  # the virtual NXT_TLV_TABLE_MOD map, index -> TlvMap (endpoint_tlv.py)
        self.apply_lock = ApplyGate()  # one plan written at a time (endpoint_common.py)
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task] = set()
        self._port_events: asyncio.Task | None = None  # the last port-status task (they run in order)
        self._port_backlog: list[list] = []  # liveness steps seen before an event loop ran
        backend.subscribe(self._on_backend_event)
        self.add_lane = AddLane.for_endpoint(self)  # the common ADD without the general path, or None
        self.pause_key, self.pause_bridge = pause_keys()  # (continuations: endpoint_pause.py)
        self._initial_liveness()

    # ------------------------------------------------------------ serving
    async def listen(self, spec: str) -> int:
        """``ptcp:PORT[:IP]``; returns the bound port (PORT 0 picks one)."""
        parts = spec.split(":")
        if parts[0] != "ptcp" or len(parts) not in (2, 3) or not parts[1].isdigit():
            raise ValueError(f"--listen {spec!r}: expected ptcp:PORT or ptcp:PORT:IP")
        host = parts[2] if len(parts) == 3 else "0.0.0.0"
        server = await asyncio.start_server(self._accept, host, int(parts[1]), limit=1 << 20)
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    def connect(self, spec: str, max_backoff: float = 5.0) -> asyncio.Task:
        """``tcp:HOST:PORT``: keep a connection to that controller, reconnecting."""
        parts = spec.split(":")
        if parts[0] != "tcp" or len(parts) != 3 or not parts[2].isdigit():
            raise ValueError(f"--controller {spec!r}: expected tcp:HOST:PORT")
        task = asyncio.create_task(self._connect_loop(parts[1], int(parts[2]), max_backoff))
        self._tasks.add(task)
        return task

    async def _connect_loop(self, host: str, port: int, max_backoff: float) -> None:
        backoff = 0.1
        while True:
            try:
                reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
            except OSError:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, max_backoff)
                continue
            backoff = 0.1
            await Session(self, reader, writer).run()
            await asyncio.sleep(backoff)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await Session(self, reader, writer).run()
        except asyncio.CancelledError:
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def close(self) -> None:
        for s in self._servers:
            s.close()
        for t in list(self._tasks):
            t.cancel()
        for s in list(self.sessions):
            s.close()
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        self.backend.unsubscribe(self._on_backend_event)

    def spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def broadcast(self, data: bytes, kind: int, reason: int) -> None:
        """Send an asynchronous message to every session whose role and async
        config want it (kind 0 packet-in, 1 port-status, 2 flow-removed)."""
        for s in list(self.sessions):
            if s.wants(kind, reason):
                s.send(data)

    # ------------------------------------------------------------ physical -> virtual events
    def _on_backend_event(self, ev: Event) -> None:
        if isinstance(ev, PacketIn):
            self._packet_in(ev)
        elif isinstance(ev, PortStatus):
            self._port_status(ev)
        elif isinstance(ev, FlowRemoved):
            if ev.reason in (M.OFPRR_IDLE_TIMEOUT, M.OFPRR_HARD_TIMEOUT):  # (for a virtual rule's other copies' expiry)
                if len(self._expired) >= 4096:
                    self._expired.clear()
                r = ev.rule
                self._expired[(ev.switch, V.rule_key(r))] = (ev.packet_count, ev.byte_count, r.idle_timeout, r.hard_timeout)
            self.spawn(self._flow_removed(ev))

    # ------------------------------------------------------------ port liveness
    def _wires(self) -> dict[tuple[str, int], int]:
        """(switch, port) of every virtual port's wire (where its link state is seen) -> the port."""
        wire_of = getattr(self.state, "wire_of", None)
        if wire_of is None:
            return dict(self.phys_to_v)
        return {(w.switch, w.port): v for v in self.vports for w in [wire_of(v)]}

    def _initial_liveness(self) -> None:
        """Virtual ports whose wire is down when the endpoint starts are not live."""
        if not hasattr(self.state, "set_port_live"):
            return
        for (sw, port), v in self._wires().items():
            info = next((p for p in self.backend.ports(sw) if p.port == port), None)
            if info is not None and not (info.link_up and info.admin_up):
                self._chain_port_event(self.state.set_port_live(v, False), None)  # type: ignore[attr-defined]

    def _port_status(self, ev: PortStatus) -> None:
        """A physical PORT_STATUS. For a virtual port's wire: the port's liveness goes to
        the translation (fast-failover buckets on other switches watch it through
        their ("live", port) groups), and the controller gets the virtual PORT_STATUS
        only once every switch has applied that change, so a controller that sees the
        port down (up) never sees a switch still treat it as up (down)."""
        v = self._wires().get((ev.switch, ev.port.port))
        if v is None:
            return
        msg = M.encode_port_status(0, ev.reason, V.wire_port(self.vports[v], ev.port))
        live = ev.reason != M.OFPPR_DELETE and ev.port.link_up and ev.port.admin_up
        plan = self.state.set_port_live(v, live) if hasattr(self.state, "set_port_live") else None  # type: ignore[attr-defined]
        self._chain_port_event(plan, (msg, ev.reason))

    def _chain_port_event(self, plan: object, status: tuple[bytes, int] | None) -> None:
        """Apply a liveness plan, then send the virtual PORT_STATUS, after every earlier
        port event and after the plans the sessions queued before it (FLOW_MOD and
        GROUP_MOD plans computed on the state before this change)."""
        steps = self._port_backlog + (plan_steps(plan) if plan is not None else [])
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # built outside an event loop: applied with the first event inside one
            self._port_backlog = steps
            return
        self._port_backlog = []
        prev = self._port_events

        async def run() -> None:
            if prev is not None:
                await asyncio.shield(prev)
            if steps:
                for s in list(self.sessions):
                    await s.flush()
                async with self.apply_lock:
                    try:
                        await self.backend.apply_steps(steps)
                    except BackendError as e:
                        log.warning("applying a port liveness change: %s", e)
            if status is not None:
                self.broadcast(status[0], 1, status[1])

        task = self._port_events = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def port_events_done(self) -> None:
        """Wait until every port event so far is applied and reported (tests, barriers)."""
        while self._port_events is not None and not self._port_events.done():
            await asyncio.shield(self._port_events)

    def virtual_table(self, physical_table: int) -> int:
        fn = getattr(self.state, "virtual_table", None)
        if fn is None:
            return physical_table
        vt = fn(physical_table)
        return 0 if vt is None else vt

    def _packet_in(self, ev: PacketIn) -> None:
        try:
            mapped = self.state.to_virtual_packet_in(ev.switch, ev.in_port, ev.frame)  # type: ignore[attr-defined]
        except ValueError as e:
            log.debug("packet-in not from a virtual port: %s", e)
            return
        if mapped is None:
            return
        vport, frame = mapped
        table = self.virtual_table(ev.table)
        # the pipeline state (metadata, tunnel_id, registers, pkt_mark) is the virtual
        # pipeline's own: it ran on the ingress switch, with the flow-id mark restored
        state = packet_in_state(ev.fields, getattr(self.state, "mark_used", True))
        match = Match(tuple([("in_port", ir.FieldMatch(vport))] + [(k, state_match(k, v)) for k, v in state]))
        nx = virtual_packet_in(ev.userdata, bool(ev.continuation))  # a virtual controller(...) action's (packet_in_ext.py)
        if nx is None:  # an output to CONTROLLER (id 0), or dec_ttl(ids): the physical connection's id is the virtual one
            nx = VirtualPacketIn(ev.controller_id, ir.OFPCML_NO_BUFFER, ev.reason, b"")
        cont = ev.continuation and virtual_continuation(self, ev.switch, ev.in_port, vport, ev.fields, ev.continuation,
                                                        nx.unresumable)
        self.send_packet_in(nx, table, ev.cookie, match, frame, cont)  # (cont: a pause's, endpoint_pause.py)

    def send_packet_in(self, nx: VirtualPacketIn, table: int, cookie: int, match: Match, frame: bytes,
                       continuation: bytes = b"") -> None:
        """A virtual packet-in: to the connections with its controller id whose async config
        takes its reason, in each one's packet-in format; the whole frame, unbuffered,
        whatever its max_len or miss_send_len (as Open vSwitch 3.1 sends it)."""
        reason = ir.sent_reason(nx.reason)  # (a wire reason above 5: 6 is no_match, 7..255 send nothing)
        if reason is None:
            return
        nx = nx._replace(reason=reason)
        encoded: dict[int, bytes] = {}  # packet-in format -> message
        for s in list(self.sessions):
            if s.controller_id == nx.controller_id and s.wants_packet_in(nx.reason):
                fmt = s.packet_in_format
                if fmt not in encoded:
                    with tun_metadata_decoding(self):  # (each option at its mapped length, as Open vSwitch)
                        encoded[fmt] = encode_for(fmt, len(frame), W.OFP_NO_BUFFER, nx.reason, table, cookie, match,
                                                  frame, nx.userdata, continuation)
                s.send(encoded[fmt])

    async def _flow_removed(self, ev: FlowRemoved) -> None:
        """A physical copy timed out: the virtual rule is gone for the controller
        too (its other copies are removed, FLOW_REMOVED sent if asked for).
        Removals OneSwitch caused itself (reason DELETE) are not news. A flow the host
        learned that timed out (it asked for FLOW_REMOVED: the learn's send_flow_rem) is
        reported in virtual terms, as one bridge reports it."""
        if ev.reason not in (M.OFPRR_IDLE_TIMEOUT, M.OFPRR_HARD_TIMEOUT):
            return
        comp = getattr(self.state, "comp", None)
        if comp is not None and comp.learning and ev.switch == self.state.topo.host:  # type: ignore[attr-defined]
            entry = FlowStatsEntry(ev.rule, ev.duration_sec, ev.duration_nsec, 0, ev.packet_count, ev.byte_count)
            for e in learned_flows(self.state, [entry]):  # (a copy of a virtual rule is no learned flow)
                fr = M.WireFlowRemoved(e.rule, ev.reason, e.duration_sec, e.duration_nsec, e.packet_count, e.byte_count)
                self.broadcast(M.encode_flow_removed(0, fr), 2, ev.reason)
                return
        key = (ev.switch, V.rule_key(ev.rule))
        vrules = list(self.state.virtual_rules())  # type: ignore[attr-defined]
        timed = [vr.idle_timeout or vr.hard_timeout or fin_timeout_in(vr) for vr in vrules]
        # (the timed ones first; then the rest: a modify may have taken away the fin_timeout
        # whose FIN gave the copies their timeouts, which they keep, as Open vSwitch does)
        for vr in [vr for vr, t in zip(vrules, timed) if t] + [vr for vr, t in zip(vrules, timed) if not t]:
            copies = self.state.ingress_rules(vr)  # type: ignore[attr-defined]
            if key in {(sw, V.rule_key(pr)) for sw, pr in copies}:
                plan = self.state.apply(FlowMod("delete_strict", vr))  # type: ignore[attr-defined]
                async with self.apply_lock:
                    # the virtual rule's counters and timeouts (a fin_timeout may have shrunk them) come
                    # from every copy: those still installed, read before they are deleted, and those gone
                    phys = {sw: await self.backend.flow_stats(sw) for sw in {sw for sw, _ in copies}}
                    gone = {k: self._expired.pop(k) for k in [(sw, V.rule_key(pr)) for sw, pr in copies]
                            if k in self._expired}
                    gone[key] = (ev.packet_count, ev.byte_count, ev.rule.idle_timeout, ev.rule.hard_timeout)
                    packets, nbytes, idle, hard = removed_totals(vr, copies, gone, phys)
                    try:
                        await self.backend.apply_steps(plan_steps(plan))
                    except BackendError as e:
                        log.warning("removing expired rule: %s", e)
                self.notify_removed(replace(vr, idle_timeout=idle, hard_timeout=hard), ev.reason, packets, nbytes)
                return

    def notify_removed(self, vr: Rule, reason: int, packets: int = 0, nbytes: int = 0) -> None:
        installed, flags = self.rule_meta.pop(V.rule_key(vr), (time.monotonic(), 0))
        drop_carried(self, V.rule_key(vr))  # (carried_counters.py)
        if flags & M.OFPFF_SEND_FLOW_REM:
            age = time.monotonic() - installed
            fr = M.WireFlowRemoved(vr, reason, int(age), int(age % 1 * 1e9), packets, nbytes)
            self.broadcast(M.encode_flow_removed(0, fr), 2, reason)

    # ------------------------------------------------------------ virtual -> physical
    async def packet_out(self, in_vport: int, actions: Sequence[Action], frame: bytes) -> None:
        """Carry out a virtual PACKET_OUT on the physical switches."""
        route = host_packet_out(self, in_vport, actions)  # (a group with ct in a bucket: packet_out_ct_group.py)
        if route is None and whole_on_host(self, actions):  # (a packet-in after ct, …: packet_out_whole.py)
            route = whole_route(self, in_vport, actions)
        if route is None and sends_whole(self, actions):
            route = whole_route(self, in_vport, actions)  # (a TABLE the list goes on after: packet_out_table.py)
        if route is not None:
            await self.backend.packet_out(*route, frame)
            return
        outs: list[tuple[tuple[Action, ...], int]] = []
        mods: list[Action] = []
        exited: list[bool] = []  # (an exit, also in a clone, ends the whole walk: endpoint_clone.py)
        tracker = tracker_for(actions, frame, in_vport, self.vports)  # (output_trunc's commits: endpoint_trunc.py)
        blocked = pin_blocked(actions)  # (an output_reg's CONTROLLER: endpoint_output_reg.py)

        def walk(acts: Iterable[Action], mods: list[Action], depth: int = 0, tail: bool = False) -> None:
            acts = list(acts)
            for i, a in enumerate(acts):
                if exited:
                    return
                if not depth and type(a) is ir.Exit:
                    exited.append(True)
                elif not depth and type(a) is ir.Clone:
                    last = tail and i == len(acts) - 1  # (ends the PACKET_OUT: Open vSwitch runs it inline)
                    was = tracker.clone_start(a, mods, last) if tracker is not None else None
                    walk(a.actions, list(mods), tail=last or was is not None)  # (a datapath clone's list ends too)
                    if tracker is not None:
                        tracker.clone_end(was)
                elif not depth and type(a) is ir.CheckPktLarger:  # (the endpoint has the frame)
                    if tracker is not None:
                        tracker.commit(mods)
                    walk(check_bit(frame, mods, a), mods)
                elif type(a) is ir.DecNshTtl:  # (decided on the frame as changed so far: endpoint_nsh_ttl.py)
                    expired = nsh_ttl_decide(frame, mods, in_vport, self.vports)
                    if expired is None:
                        mods.append(a)
                        continue
                    if expired.frame is not None:
                        outs.append(((), expired))
                    return  # (the list it is in ends: the PACKET_OUT's, a clone's or a bucket's)
                elif not depth and type(a) is ir.OutputTrunc and tracker is not None:
                    outs.extend(((), t) for t in tracker.trunc(a, mods))
                elif not depth and type(a) is ir.Bundle:  # (the endpoint sees every member's liveness)
                    live = getattr(self.state, "port_live", _live)
                    walk(bundle_as_chosen(frame, mods, a, list(self.vports), live), mods)
                elif not depth and type(a) is ir.OutputReg:  # (its port from the registers: endpoint_output_reg.py)
                    walk(output_reg_as_output(frame, mods, a, in_vport, self.vports, id(a) not in blocked), mods)
                elif isinstance(a, Output):
                    outs.append((tuple(mods), a.port))
                    on_output(tracker, a.port, mods)
                elif type(a) is ir.Controller:  # (in a bucket Open vSwitch sends nothing for it, as in a flow)
                    if not depth:
                        outs.append((tuple(mods), a))
                        on_output(tracker, a, mods)
                elif depth and type(a) is ir.PopVlan and pops_nothing(frame, mods, in_vport, self.vports):
                    continue  # (a bucket's pop_vlan on an untagged frame: Open vSwitch pops nothing)
                elif depth and isinstance(a, (ir.Bundle, ir.Multipath, ir.Clone, ir.CheckPktLarger, ir.OutputTrunc, ir.Learn)):
                    continue  # (a bucket runs as an action set, which has no place for them: Open vSwitch ignores them)
                elif isinstance(a, GroupAction):
                    g = self.groups.get(a.group_id)
                    if g is not None and depth < 8:
                        buckets = g.buckets if g.type == "all" else g.buckets[:1]
                        if g.type == "fast_failover":  # (the endpoint knows each port's liveness)
                            live = getattr(self.state, "port_live", _live)  # (a port that does not exist is not live)
                            buckets = failover_buckets(g, self.groups, lambda v: v in self.vports and live(v))
                        for b in buckets:  # (as its action set, as Open vSwitch: endpoint_nsh_ttl.py)
                            acts_b = bucket_as_action_set(b.actions) if runs_as_action_set(b.actions) else b.actions
                            walk(acts_b, list(mods), depth + 1)
                else:
                    mods.append(a)

        walk(actions, mods, tail=True)
        dead: set[int] = set()  # (ports a short cut frame ended: endpoint_trunc.sent)
        host = self.topo.host  # type: ignore[attr-defined]
        for m, port in outs:
            if type(port) is Expired:  # a dec_nsh_ttl ran out: Open vSwitch's invalid_ttl packet-in (table 0, no cookie)
                self.send_packet_in(VirtualPacketIn(0, ir.OFPCML_NO_BUFFER, INVALID_TTL_REASON, b""), 0,
                                    0xFFFF_FFFF_FFFF_FFFF, port.match, port.frame)
                continue
            if type(port) is TruncFrame:  # (cut as Open vSwitch cuts it; sent as it is: endpoint_trunc.py)
                if not sent(port, dead):
                    continue
                vp = self.vports.get(port.port)
                sw, phys = (vp.switch, vp.port) if vp else (host, ir.OFPP_LOCAL)
                await self.backend.packet_out(sw, ir.OFPP_CONTROLLER, [Output(phys)], port.frame)
                continue
            if type(port) is ir.Controller or port == ir.OFPP_CONTROLLER:  # as Open vSwitch: table 0, no cookie
                nx = (VirtualPacketIn(port.controller_id, port.max_len, port.reason, port.userdata) if type(port) is
                      ir.Controller else VirtualPacketIn(0, ir.OFPCML_NO_BUFFER, PACKET_OUT_REASON, b""))
                data, match = changed_packet_in(frame, m, in_vport, self.vports)  # (endpoint_packet_in.py)
                if type(port) is ir.Controller and port.meter_id is not None:  # (its budget's switch: packet_out_meter.py)
                    data = await metered_packet_in(self, port, data)
                    if data is None:
                        continue
                self.send_packet_in(nx, 0, 0xFFFF_FFFF_FFFF_FFFF, match, data)
                continue
            if port == ir.OFPP_NORMAL:  # on the host, whose MAC table is the virtual switch's (endpoint_normal.py)
                await endpoint_normal.packet_out(self, in_vport, list(m), frame)
                continue
            if port == ir.OFPP_TABLE:  # the host's LOCAL is the virtual switch's, CONTROLLER runs there too
                vp = self.vports.get(in_vport)
                sw = vp.switch if vp else host
                phys_in = vp.port if vp else in_vport if in_vport == ir.OFPP_LOCAL else ir.OFPP_CONTROLLER
                await self.backend.packet_out(sw, phys_in, [*m, Output(ir.OFPP_TABLE)], frame)
                continue
            if port in (ir.OFPP_LOCAL, ir.OFPP_FLOOD, ir.OFPP_ALL) and in_vport != ir.OFPP_LOCAL:
                await self.backend.packet_out(host, ir.OFPP_CONTROLLER, [*m, Output(ir.OFPP_LOCAL)], frame)
            if port in (ir.OFPP_FLOOD, ir.OFPP_ALL):
                targets = [v for v in self.vports if v != in_vport]
            elif port == ir.OFPP_IN_PORT:
                targets = [in_vport] if in_vport in self.vports else []
            else:  # (Open vSwitch sends nothing to the PACKET_OUT's own in_port but by IN_PORT)
                targets = [port] if port in self.vports and port != in_vport else []
            for v in targets:
                if not sent(v, dead):
                    continue
                vp = self.vports[v]
                await self.backend.packet_out(vp.switch, ir.OFPP_CONTROLLER, [*m, Output(vp.port)], frame)

    # ------------------------------------------------------------ validation
    def check_rule(self, r: Rule) -> None:
        if r.table >= self.n_tables:
            if r.table == HIDDEN_TABLE:
                raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM, f"table {r.table} is hidden (as in Open vSwitch)")
            raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_BAD_TABLE_ID, f"table {r.table} >= {self.n_tables} tables")
        instructions = r.instructions
        known = self._ok_instructions.get(id(instructions)) is instructions  # decoded rules share instruction tuples
        if not known:
            goto = r.goto
            if goto is not None and goto >= self.n_tables and not (goto == HIDDEN_TABLE and self.n_tables == HIDDEN_TABLE):
                raise W.OFError(W.OFPET_BAD_INSTRUCTION, W.OFPBIC_BAD_TABLE_ID, f"goto_table:{goto} >= {self.n_tables} tables")
        fm = r.match.get("in_port")
        if fm is not None and MAX_OFPORT < fm.value < 0xFFFFFF00 and fm.value not in self.vports:
            raise W.OFError(W.OFPET_BAD_MATCH, W.OFPBMC_BAD_VALUE, f"in_port={fm.value:#x} is outside 0..{MAX_OFPORT:#x} "
                            "and the reserved ports")
        why = nat_match_problem(r) or fin_match_problem(r)
        if why:
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_MATCH_INCONSISTENT, why)
        why = next((decap_match_problem(r.match, i.actions) for i in instructions if isinstance(i, ir.ApplyActions)), None)
        if why:  # (rules/decap.py)
            raise W.OFError(W.OFPET_BAD_ACTION, 3, why)  # OFPBAC_BAD_EXP_TYPE, as the decap forms OneSwitch does not run
        why = next((nsh_larger_problem(r.match, i.actions) for i in instructions if isinstance(i, ir.ApplyActions)), None)
        if why:  # (rules/nsh_check_larger.py)
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT, why)
        check_tun_metadata_match(self, r.match, r.table)  # (against the TLV map: endpoint_tun_metadata.py)
        if not known:
            for ins in instructions:
                if isinstance(ins, (ir.ApplyActions, ir.WriteActions)):
                    self.check_actions(ins.actions)
            if len(self._ok_instructions) >= 4096:
                self._ok_instructions.clear()
            self._ok_instructions[id(instructions)] = instructions  # held, so the id stays this tuple's
        if r.meter is not None:
            from tandem.oneswitch.endpoint_meters import check_meter_rule

            check_meter_rule(self, r)
        if not getattr(self.backend, "runs_normal", True) and may_output_normal(r):
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT, "output_reg whose register may hold NORMAL's "
                            f"number (0xfffa): NORMAL is not run by the {self.backend.name} backend's switches (dp-core)")

    def check_actions(self, actions: Iterable[Action], packet_out: bool = False) -> None:
        """Refuse what Open vSwitch refuses, and NORMAL, and in a PACKET_OUT a TABLE after a write to
        pkt_mark (table 0 takes a frame with a mark for a PCIe arrival: docs/oneswitch.md
        section 3; in a flow the translator sees to it, section 7)."""
        marked = changed = False
        why = trunc_problem(actions) if packet_out else None  # (output_trunc: endpoint_trunc.py)
        carried = getattr(self.backend, "table_carries_state", True)
        whole_table = packet_out and sends_whole(self, actions)  # (to the host whole: packet_out_table.py)
        why = why or (after_table_problem(actions) if packet_out and not whole_table else None)  # (packet_out_table.py)
        if packet_out and not why and not carried and not whole_table:
            why = state_before_table_problem(actions)
        if why:
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, why)
        check_tun_metadata_actions(self, actions)  # (against the TLV map: endpoint_tun_metadata.py)
        why = pause_problem(self, actions, packet_out)  # (controller(pause): endpoint_pause.py)
        if why:
            raise W.OFError(W.OFPET_BAD_ACTION, 3, why)  # OFPBAC_BAD_EXP_TYPE
        why = ct_group_problem(self, list(actions)) if packet_out else None  # (packet_out_ct_group.py)
        if why:
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, why)
        for a in actions:
            if type(a) is ir.Bundle and a.dst is None:  # (its reserved members: the outputs they may become)
                self._check_bundle_members(a, packet_out)
            if packet_out:
                marked = marked or writes_mark(a)
                if marked and isinstance(a, Output) and a.port == ir.OFPP_TABLE:
                    raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT,
                                    "output:TABLE after a write to pkt_mark: table 0 of a physical switch tells a "
                                    "frame crossing PCIe by its mark")
            if isinstance(a, Output) and a.port > MAX_OFPORT and a.port not in self.vports \
                    and a.port not in VALID_OUT_RESERVED and a.port != ir.OFPP_TABLE \
                    and not (a.port == ir.OFPP_NORMAL and getattr(self.backend, "runs_normal", True)):
                why = {ir.OFPP_NORMAL: f"NORMAL is not run by the {self.backend.name} backend's switches"}.get(
                           a.port, f"output:{a.port:#x} is outside 0..{MAX_OFPORT:#x} and the reserved ports")
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT, why)
            if isinstance(a, GroupAction) and a.group_id not in self.groups:
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_GROUP, f"group {a.group_id} does not exist")
            if packet_out and type(a) is ir.Clone:
                check_packet_out_clone(self, a)
            if packet_out and output_reg_problem(a):
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, output_reg_problem(a))
            if packet_out and changed and sends_packet_in([a]) and not self._sent_whole(actions):  # (also in a clone)
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, "a packet-in (CONTROLLER, controller(...)) after "
                                f"{changed} in a PACKET_OUT: the endpoint sends it itself, from the frame and state "
                                "dp-core makes, measured against Open vSwitch for set-field, load, move, push/pop, "
                                "VLAN/MPLS, TTL, multipath, set_queue, ct_clear and check_pkt_larger only")  # (docs/endpoint.md)
            changed = changed or (unmodeled_before_packet_in(a) and type(a).__name__.lower())  # (endpoint_packet_in.py)
            if packet_out and type(a) is ir.CheckPktLarger and not a.dst.field.startswith(("reg", "xreg", "xxreg")) \
                    and not self._sent_whole(actions):  # (sent whole: packet_out_whole.py)
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT, "check_pkt_larger in a PACKET_OUT into "
                                f"{a.dst.field}: only into a register (Open vSwitch writes the bit into the flow, "
                                "not into the packet's headers, and a PACKET_OUT's changes go with its frame)")
            if type(a) is ir.Learn and not getattr(self.backend, "runs_learn", True):
                raise W.OFError(W.OFPET_BAD_ACTION, 3,  # OFPBAC_BAD_EXP_TYPE, as the Nicira actions OneSwitch does not run
                                f"Nicira learn is not run by the {self.backend.name} backend's switches (dp-core)")

    def _sent_whole(self, actions: Sequence[Action]) -> bool:
        """Does this PACKET_OUT go to the host whole (packet_out_whole.py, packet_out_ct_group.py:
        its problems checked before), where the host's Open vSwitch runs what the walk cannot?"""
        return whole_on_host(self, actions) or (reached_ct_group(self.groups, actions) is not None and not getattr(
            self.backend, "packet_out_from_any_port", False))

    def _check_bundle_members(self, a: "ir.Bundle", packet_out: bool) -> None:
        """A ``bundle``'s reserved members: in a flow TABLE, and FLOOD and ALL in ``hrw``, are refused
        (hashsel_translate.refused_member); in a PACKET_OUT, whose bundle the endpoint chooses
        itself, TABLE and NORMAL (the chosen one would be a lookup or the host's MAC learning,
        which the PACKET_OUT checks refuse or home by the actions written, not chosen)."""
        bad = next((m for m in a.members if m in (ir.OFPP_TABLE, ir.OFPP_NORMAL)), None)
        if packet_out and bad is not None:
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT, f"bundle in a PACKET_OUT with member "
                            f"{ir.RESERVED_PORT_NAMES[bad]}: OneSwitch takes IN_PORT, FLOOD, ALL, LOCAL and NONE there")
        why = None if packet_out else refused_member(a)
        if why is not None:
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT, why)


def _live(vport: int) -> bool:  # (a state without liveness: every port live)
    return True


__all__ = ["OneSwitchEndpoint", "Session", "layout_for", "stable_dpid"]
