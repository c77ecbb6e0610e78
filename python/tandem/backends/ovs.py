"""Open vSwitch backend: each physical switch is a real OVS bridge.

Builds, for a ``PhysicalLayout``, one bridge per physical switch (OpenFlow 1.3
only, fail-mode secure, fixed datapath id), one port per external port
(a named kernel interface such as a veth if the layout names one, else a
dummy port recording to ``<port>.pcap``) and a patch-port pair per PCIe link
(always: OneSwitch's flow id crosses in ``pkt_mark``, which Open vSwitch keeps
over a patch port but a veth or a wire would lose, so a layout that names an
interface for a link port is refused).
Physical rules are installed over OpenFlow with Tandem's own codec on one
connection per bridge (its ``.mgmt`` socket), sent as one batch per switch
and confirmed with a barrier; statistics are read with multipart requests.

Two ways to get an ``ovs-vswitchd``:
- private (default): an ``OvsSandbox`` (ovsdb-server + ``ovs-vswitchd
  --enable-dummy --disable-system``) in a run directory, ``datapath_type=dummy``
  bridges. Dummy-datapath bridges also carry real kernel interfaces (veth), so
  namespace tests need neither the kernel module nor ``/dev/net/tun``;
- attach (``ovs_db="unix:/var/run/openvswitch/db.sock"``): bridges are added
  to a running OVS (``datapath_type`` as given, default ``netdev``).
``close()`` deletes the bridges it added and stops what it started.
State: bridge names, OpenFlow connections, port descriptions per switch.
"""

from __future__ import annotations

import asyncio
import os
import struct
import subprocess
from pathlib import Path
from typing import Awaitable, Sequence

from tandem.backends.base import (
    Backend, BackendError, FlowRemoved, group_command, MeterOp, FlowStats, GroupOp, GroupStats, Op, PacketIn, PairOp,
    PhysicalLayout, PortInfo, PortStats, PortStatus, TableStats, pair_ops,
)
from tandem.backends.ofconn import OFSwitchConnection, SwitchError
from tandem.backends.ovs_meter_probe import TIMEOUT_S as PROBE_TIMEOUT_S, MeterProbes
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules.controller_ids import controller_ids
from tandem.rules.ir import Action, FlowMod, Group, Rule
from tandem.rules.meters import OFPM_ALL, Meter, MeterMod, MeterStats
from tandem.rules.nx_fin_timeout import runs_fin_timeout
from tandem.rules.ofwire_meter import decode_meter_stats, encode_meter_mod
from tandem.rules.ofwire_packet_in2 import NX_VENDOR_ID, NXT_PACKET_IN2, WirePacketIn2, decode_packet_in2, encode_resume
from tandem.rules.ofwire_msgs import (
    FLOW_MOD_CMD_NAMES, OFPFF_RESET_COUNTS, OFPFF_SEND_FLOW_REM, RawMessage, WirePacketOut, decode_flow_removed, decode_packet_in,
    decode_port_status, encode_flow_mod, encode_group_mod, encode_packet_out, encode_rule_flow_mod,
)
from tandem.rules.ofwire_stats import (
    OFPMP_FLOW, OFPMP_GROUP, OFPMP_METER, OFPMP_GROUP_DESC, OFPMP_PORT_DESC, OFPMP_PORT_STATS, FlowStatsRequest, MultipartRequest,
    decode_flow_stats, decode_group_desc, decode_group_stats, decode_port_desc, decode_port_stats,
)
from tandem.rules.ofwire_stats import OFPMP_TABLE, decode_table_stats
from tandem.rules.tun_metadata import encoding_lengths

NXT_PACKET_IN2_HEAD = struct.pack("!II", NX_VENDOR_ID, NXT_PACKET_IN2)
FLOW_OPS = {"add": "add", "modify_strict": "modify_strict", "delete_strict": "delete_strict", "delete": "delete",
            "modify": "modify"}
_FLOW_CMD = {op: FLOW_MOD_CMD_NAMES.index(kind) for op, kind in FLOW_OPS.items()}  # op -> OFPFC_* number


def _port_info(p: W.WirePort) -> PortInfo:
    return PortInfo(p.port_no, p.name, p.hw_addr, not p.state & W.OFPPS_LINK_DOWN, not p.config & W.OFPPC_PORT_DOWN,
                    p.curr_speed or 10_000_000, p.max_speed or 10_000_000)


def flow_mod_for(op: Op) -> FlowMod:
    """The FLOW_MOD that carries out one physical flow op."""
    kind = FLOW_OPS.get(op.op)
    if kind is None:
        raise BackendError(f"switch {op.switch}: unknown flow op {op.op!r}", op.switch)
    rule: Rule = op.rule
    send_rem = bool(getattr(op, "send_flow_rem", False)) or bool(rule.idle_timeout or rule.hard_timeout) \
        or runs_fin_timeout(rule)  # (fin_timeout: a FIN may give it timeouts)
    return FlowMod(kind, rule, cookie_mask=0, send_flow_rem=send_rem and kind == "add")


class OvsBackend(Backend):
    name = "ovs"
    speaks_openflow = True  # apply() encodes physical ops with rules.ofwire (see oneswitch/fastlane.py)
    writes_on_submit = True

    def __init__(self, run_dir: str | os.PathLike | None = None, ovs_db: str | None = None,
                 ovs_rundir: str = "/var/run/openvswitch", datapath_type: str | None = None,
                 bridge_prefix: str = "tnd", sandbox: object | None = None) -> None:
        super().__init__()
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.ovs_db = ovs_db
        self.ovs_rundir = Path(ovs_rundir)
        self.datapath_type = datapath_type or ("netdev" if ovs_db else "dummy")
        self.prefix = bridge_prefix
        self.sandbox = sandbox  # an OvsSandbox to build in (tests); else one is started
        self._meter_probes = MeterProbes()  # (a PACKET_OUT's metered packet-ins: ovs_meter_probe.py)
        self._own_sandbox = False
        self.layout: PhysicalLayout | None = None
        self.bridges: dict[str, str] = {}  # switch -> bridge name
        self.conns: dict[str, OFSwitchConnection] = {}
        self.id_conns: dict[tuple[str, int], OFSwitchConnection] = {}  # (switch, controller id other than 0)
        self._ports: dict[str, dict[int, PortInfo]] = {}
        self._created: list[str] = []
        self._pairing: asyncio.Task | None = None  # a batch waiting for its port pairs (submit)

    # ------------------------------------------------------------ ovsdb
    def vsctl(self, *args: str) -> str:
        if self.sandbox is not None:
            return self.sandbox.vsctl(*args)  # type: ignore[attr-defined]
        p = subprocess.run(["ovs-vsctl", f"--db={self.ovs_db}", "--timeout=30", *args], capture_output=True, text=True)
        if p.returncode:
            raise BackendError(f"ovs-vsctl {' '.join(args[:4])} … failed: {p.stderr.strip()}")
        return p.stdout

    def bridge_name(self, switch: str) -> str:
        return f"{self.prefix}-{switch}" if self.prefix else switch

    def mgmt_target(self, bridge: str) -> str:
        rundir = self.sandbox.dir if self.sandbox is not None else self.ovs_rundir  # type: ignore[attr-defined]
        return f"unix:{Path(rundir) / (bridge + '.mgmt')}"

    def pcap_path(self, switch: str, port: int) -> Path | None:
        if self.sandbox is None:
            return None
        return Path(self.sandbox.dir) / f"{self.bridge_name(switch)}-p{port}.pcap"  # type: ignore[attr-defined]

    # ------------------------------------------------------------ lifecycle
    async def start(self, layout: PhysicalLayout) -> None:
        ends = {(ln.a_switch, ln.a_port) for ln in layout.links} | {(ln.b_switch, ln.b_port) for ln in layout.links}
        for (sw, port), name in sorted(layout.port_names.items()):
            if (sw, port) in ends:  # a veth or wire would drop pkt_mark, which carries OneSwitch's flow id
                raise BackendError(f"{sw}:{port} is a PCIe link port: links are patch-port pairs, which keep the "
                                   f"packet mark (the PCIe flow id); interface {name!r} cannot stand in for one", sw)
        self.layout = layout
        if self.sandbox is None and self.ovs_db is None:
            from tandem.backends.ovs_sandbox import OvsSandbox

            self.sandbox = await asyncio.to_thread(OvsSandbox, self.run_dir)
            self._own_sandbox = True
        try:
            await asyncio.to_thread(self._build, layout)
            for sw, br in self.bridges.items():
                conn = OFSwitchConnection(sw, on_async=lambda m, sw=sw: self._on_async(sw, m))
                await conn.connect(self.mgmt_target(br))
                self.conns[sw] = conn
                await self.clear(sw)
                await self._refresh_ports(sw)
        except BaseException:
            await self.close()
            raise

    def _build(self, layout: PhysicalLayout) -> None:
        for i, sw in enumerate(layout.switches):
            br = self.bridge_name(sw)
            self.bridges[sw] = br
            dpid = layout.datapath_ids.get(sw, 0x7A4D_0000_0000 + i + 1)
            if self.sandbox is not None and self.ovs_db is None:
                self.sandbox.add_bridge(br, [], datapath_id=dpid)  # type: ignore[attr-defined]
                if self.datapath_type != "dummy":
                    self.vsctl("set", "bridge", br, f"datapath_type={self.datapath_type}")
            else:
                self.vsctl("--may-exist", "add-br", br, "--", "set", "bridge", br, f"datapath_type={self.datapath_type}",
                           "protocols=OpenFlow13", "fail-mode=secure", f"other-config:datapath-id={dpid:016x}")
            self._created.append(br)
            for port in layout.switches[sw]:
                name = layout.port_names.get((sw, port))
                if name is not None:
                    self.vsctl("--may-exist", "add-port", br, name, "--", "set", "interface", name, f"ofport_request={port}")
                elif self.sandbox is not None and self.ovs_db is None:
                    self.sandbox.add_port(br, port)  # type: ignore[attr-defined]
                else:
                    iface = f"{br}-p{port}"
                    self.vsctl("--may-exist", "add-port", br, iface, "--", "set", "interface", iface, "type=internal",
                               f"ofport_request={port}")
        for ln in layout.links:
            self._patch(ln.a_switch, ln.a_port, ln.b_switch, ln.b_port)
        # NORMAL (OneSwitch runs it on the host, docs/oneswitch.md section 6) floods virtual ports only
        from tandem.backends.ovs_sandbox import set_no_flood

        for sw in layout.switches:
            ends = [ln.a_port for ln in layout.links if ln.a_switch == sw] + [ln.b_port for ln in layout.links if ln.b_switch == sw]
            set_no_flood(self.vsctl, self._ofctl_run, self.mgmt_target(self.bridge_name(sw)), self.bridge_name(sw), ends)

    def _ofctl_run(self, args: list[str]) -> str:
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode:
            raise BackendError(f"{' '.join(args[:4])} … failed: {p.stderr.strip()}")
        return p.stdout

    def _patch(self, a_switch: str, a_port: int, b_switch: str, b_port: int) -> None:
        """A patch-port pair: ``a_switch:a_port`` <-> ``b_switch:b_port`` (kept if it exists)."""
        a, b = f"{self.bridge_name(a_switch)}-x{a_port}", f"{self.bridge_name(b_switch)}-x{b_port}"
        self.vsctl("--", "--may-exist", "add-port", self.bridge_name(a_switch), a, "--", "set", "interface", a,
                   "type=patch", f"options:peer={b}", f"ofport_request={a_port}",
                   "--", "--may-exist", "add-port", self.bridge_name(b_switch), b, "--", "set", "interface", b,
                   "type=patch", f"options:peer={a}", f"ofport_request={b_port}")

    async def close(self) -> None:
        for conn in [*self.conns.values(), *self.id_conns.values()]:
            await conn.close()
        self.conns.clear()
        self.id_conns.clear()
        if self._own_sandbox and self.sandbox is not None:
            await asyncio.to_thread(self.sandbox.close)  # type: ignore[attr-defined]
            self.sandbox = None
            self._own_sandbox = False
        elif self._created:
            for br in self._created:
                try:
                    await asyncio.to_thread(self.vsctl, "--if-exists", "del-br", br)
                except BackendError:
                    pass
        self._created.clear()

    # ------------------------------------------------------------ changes
    def _conn(self, switch: str) -> OFSwitchConnection:
        conn = self.conns.get(switch)
        if conn is None:
            raise BackendError(f"unknown switch {switch!r}; known: {', '.join(self.conns)}", switch)
        return conn

    async def apply(self, ops: Sequence[Op]) -> None:
        await self.submit(ops)

    def submit(self, ops: Sequence[Op]) -> Awaitable[None]:
        """``apply`` in two halves: the ops are encoded and written to their switches now,
        each switch's batch closed by a barrier in the same write; awaiting the result
        waits for every switch's barrier reply (all of them, even after a refusal) and
        raises ``BackendError`` for the first refused op. A batch with port pairs
        (``PairOp``, built with ovs-vsctl in a thread first) is written once they exist,
        and every batch submitted while one waits is written after it, in order."""
        if self._pairing is None and not self._ids_missing(ops):
            started = self._start(ops)
            if started is not None:
                return self._confirm(started)
        prev = self._pairing
        task = asyncio.get_running_loop().create_task(self._pairs_then_ops(prev, ops))
        self._pairing = task
        task.add_done_callback(self._pairing_done)
        return task

    def _pairing_done(self, task: asyncio.Task) -> None:
        if self._pairing is task:
            self._pairing = None

    async def _pairs_then_ops(self, prev: asyncio.Task | None, ops: Sequence[Op]) -> None:
        if prev is not None:
            await asyncio.wait([prev])  # (its refusal is its own submitter's to report)
        for sw, cid in sorted(self._ids_missing(ops)):  # (before the rules that send packet-ins to them)
            await self._connect_id(sw, cid)
        pairs, ops = pair_ops(ops)
        for p in pairs:  # one more patch-port pair on a PCIe link (OneSwitch's port extensions)
            await self._add_pair(p)
        await self._confirm(self._start(ops) or [])

    def _start(self, ops: Sequence[Op]) -> list[tuple] | None:
        """Encode ``ops`` and write each switch's batch with its barrier; what
        ``_confirm`` waits for. None (nothing written) if a pair op is among them."""
        # per switch: its connection, then (xid, message, op) in order
        batches: dict[str, tuple[OFSwitchConnection, list[int], list[bytes], list[Op]]] = {}
        cmds = _FLOW_CMD
        lengths = getattr(self, "tun_metadata_lengths", None)
        if lengths:  # (tun_metadata: each header as long as the TLV map says)
            with encoding_lengths(lengths):
                return self._start_encoded(ops, batches, cmds)
        return self._start_encoded(ops, batches, cmds)

    def _start_encoded(self, ops: Sequence[Op], batches: dict, cmds: dict) -> list[tuple] | None:
        for op in ops:
            sw = op.switch
            b = batches.get(sw)
            if b is None:
                b = batches[sw] = (self._conn(sw), [], [], [])
            conn, xids, msgs, bops = b
            xid = conn.next_xid()
            try:
                rule = getattr(op, "rule", None)
                cmd = cmds.get(op.op) if rule is not None else None
                if isinstance(op, MeterOp):
                    msg = encode_meter_mod(xid, MeterMod(op.op, op.meter))
                elif cmd is not None:  # a flow op (flow_mod_for's FlowMod, encoded without building it)
                    send_rem = cmd == 0 and (rule.idle_timeout or rule.hard_timeout or getattr(op, "send_flow_rem", False)
                                             or runs_fin_timeout(rule))  # (fin_timeout)
                    flags = (OFPFF_SEND_FLOW_REM if send_rem else 0) | (OFPFF_RESET_COUNTS if getattr(op, "reset_counts", False) else 0)
                    msg = encode_rule_flow_mod(xid, cmd, rule, flags)
                elif type(op) is PairOp:
                    return None
                else:
                    gcmd = group_command(op)
                    if gcmd is not None:
                        msg = encode_group_mod(xid, gcmd, op.group)
                    else:
                        msg = encode_flow_mod(xid, flow_mod_for(op))
            except ir.RuleError as e:
                raise BackendError(f"switch {op.switch}: cannot encode {op!r}: {e}", op.switch) from None
            xids.append(xid)
            msgs.append(msg)
            bops.append(op)
        return [(sw, conn, xids, bops, *conn.start_batch(xids, msgs)) for sw, (conn, xids, msgs, bops) in batches.items()]

    @staticmethod
    async def _confirm(started: list[tuple]) -> None:
        refused: BackendError | None = None
        for i, (sw, conn, xids, bops, fut, barrier_xid) in enumerate(started):
            try:
                await conn.finish_batch(fut, barrier_xid, xids)
            except BaseException as e:
                if not isinstance(e, SwitchError):  # no answer (closed, timed out, cancelled): stop waiting
                    for later in started[i + 1:]:
                        later[4].cancel()
                    raise
                if refused is None:
                    xid, etype, code, _ = e.errors[0]
                    bad = bops[xids.index(xid)] if xid in xids else None
                    refused = BackendError(f"switch {sw} refused {bad!r}: OpenFlow error type {etype} code {code}", sw,
                                           (etype, code), bad)
        if refused is not None:
            raise refused

    def _ids_missing(self, ops: Sequence[Op]) -> set[tuple[str, int]]:
        """(switch, controller id) of each id other than 0 that ``ops``' rules and groups send
        packet-ins to (``dec_ttl(ids)``, ``controller(id=…)``) and no connection has yet."""
        need: set[tuple[str, int]] = set()
        for op in ops:
            item = getattr(op, "rule", None) or getattr(op, "group", None)
            if item is not None and not str(getattr(op, "op", "")).startswith("delete"):
                need.update((op.switch, cid) for cid in controller_ids([item]) if (op.switch, cid) not in self.id_conns)
        return need

    async def _connect_id(self, switch: str, controller_id: int) -> None:
        """One more connection to ``switch``, for its packet-ins to ``controller_id``
        (kept while the backend runs); they are emitted with that id."""
        self._conn(switch)  # (an unknown switch: its precise error)
        conn = OFSwitchConnection(f"{switch}#{controller_id}", on_async=lambda m: self._on_async(switch, m, controller_id))
        await conn.connect(self.mgmt_target(self.bridges[switch]), controller_id=controller_id)
        self.id_conns[(switch, controller_id)] = conn

    async def _add_pair(self, op: PairOp) -> None:
        for sw in (op.switch, op.peer):
            self._conn(sw)
        try:
            await asyncio.to_thread(self._patch, op.switch, op.port, op.peer, op.peer_port)
        except (BackendError, RuntimeError) as e:  # OvsError from a sandbox is a RuntimeError
            raise BackendError(f"switch {op.switch}: port pair {op.port} <-> {op.peer}:{op.peer_port}: {e}", op.switch,
                               op=op) from None
        for sw in (op.switch, op.peer):
            await self._refresh_ports(sw)

    async def clear(self, switch: str | None = None) -> None:
        for sw in [switch] if switch else list(self.conns):
            conn = self._conn(sw)
            x1, x2, x3 = conn.next_xid(), conn.next_xid(), conn.next_xid()
            await conn.send_batch([
                (x1, encode_flow_mod(x1, FlowMod("delete", Rule(), all_tables=True))),
                (x2, encode_group_mod(x2, "delete", Group(0xFFFFFFFC, "all"))),
                (x3, encode_meter_mod(x3, MeterMod("delete", Meter(OFPM_ALL)))),
            ])

    async def tlv_table_mod(self, command: int, maps: Sequence[object]) -> None:
        from tandem.rules.ofwire_tlv import encode_tlv_table_mod

        for sw in list(self.conns):
            conn = self._conn(sw)
            x = conn.next_xid()
            try:
                await conn.send_all([x], [encode_tlv_table_mod(x, command, list(maps))])  # type: ignore[arg-type]
            except SwitchError as e:
                _, etype, code, _ = e.errors[0]
                raise BackendError(f"switch {sw} refused NXT_TLV_TABLE_MOD: OpenFlow error type {etype} code {code}",
                                   sw, (etype, code)) from None
        from tandem.rules.ofwire_tlv import apply_tlv_mod

        self.tlv_map = apply_tlv_mod(getattr(self, "tlv_map", {}), command, list(maps))  # type: ignore[arg-type]
        # (the flow mods' tun_metadata headers carry the mapped lengths: rules/tun_metadata.py)
        self.tun_metadata_lengths = {i: m.option_len for i, m in self.tlv_map.items()}

    async def resume(self, switch: str, pi: WirePacketIn2) -> None:
        """NXT_RESUME to ``switch`` (its own continuation); ``BackendError`` with its error if it refuses it."""
        conn = self._conn(switch)
        xid = conn.next_xid()
        try:
            await conn.send_batch([(xid, encode_resume(xid, pi))])
        except SwitchError as e:
            _, etype, code, _ = e.errors[0]
            raise BackendError(f"switch {switch} refused NXT_RESUME: OpenFlow error type {etype} code {code}",
                               switch, (etype, code)) from None

    async def packet_out(self, switch: str, in_port: int, actions: Sequence[Action], frame: bytes) -> None:
        conn = self._conn(switch)
        conn.send(encode_packet_out(conn.next_xid(), WirePacketOut(W.OFP_NO_BUFFER, in_port, tuple(actions), frame)))

    # ------------------------------------------------------------ read-back
    def switches(self) -> list[str]:
        return list(self.bridges)

    def ports(self, switch: str) -> list[PortInfo]:
        return sorted(self._ports.get(switch, {}).values(), key=lambda p: p.port)

    async def _refresh_ports(self, switch: str) -> None:
        body = await self._conn(switch).multipart(MultipartRequest(OFPMP_PORT_DESC, 0))
        self._ports[switch] = {p.port_no: _port_info(p) for p in decode_port_desc(body) if p.port_no < 0xFFFFFF00}

    async def flow_stats(self, switch: str) -> list[FlowStats]:
        body = await self._conn(switch).multipart(MultipartRequest(OFPMP_FLOW, 0, flow=FlowStatsRequest()))
        return decode_flow_stats(body)

    async def port_stats(self, switch: str) -> list[PortStats]:
        body = await self._conn(switch).multipart(MultipartRequest(OFPMP_PORT_STATS, 0))
        return [e for e in decode_port_stats(body) if e.port_no < 0xFFFFFF00]

    async def group_stats(self, switch: str) -> list[GroupStats]:
        body = await self._conn(switch).multipart(MultipartRequest(OFPMP_GROUP, 0))
        return [GroupStats(gid, p, b, tuple(bk)) for gid, p, b, bk in decode_group_stats(body)]

    # OVS 3.1's userspace datapath runs drop bands only (a dscp_remark band is OFPMMFC_BAD_BAND)
    meter_band_types = frozenset({"drop"})

    async def meter_packet_in(self, switch: str, meter_id: int, frame: bytes) -> bytes | None:
        # (the bridge's own meter decides: ovs_meter_probe.py; its datapath runs no DSCP remark)
        try:
            return frame if await self._meter_probes.run(self._conn(switch), meter_id, frame) else None
        except asyncio.TimeoutError:
            raise BackendError(f"switch {switch} did not run meter {meter_id} on a packet-in within "
                               f"{PROBE_TIMEOUT_S:g} s", switch) from None

    async def meter_stats(self, switch: str) -> list[MeterStats]:
        return decode_meter_stats(await self._conn(switch).multipart(MultipartRequest(OFPMP_METER, 0)))

    async def table_stats(self, switch: str) -> list[TableStats]:
        body = await self._conn(switch).multipart(MultipartRequest(OFPMP_TABLE, 0))
        return [TableStats(*t) for t in decode_table_stats(body)]

    async def groups(self, switch: str) -> list[Group]:
        return decode_group_desc(await self._conn(switch).multipart(MultipartRequest(OFPMP_GROUP_DESC, 0)))

    # ------------------------------------------------------------ events
    def _on_async(self, switch: str, msg: RawMessage, controller_id: int = 0) -> None:
        try:
            if msg.type == W.OFPT_PACKET_IN:
                pi = decode_packet_in(msg.body)
                fm = pi.match.get("in_port")
                state = tuple((k, v.value) for k, v in pi.match if k != "in_port")  # (ct_state: masked 0xff)
                self.emit(PacketIn(switch, fm.value if fm else ir.OFPP_CONTROLLER, pi.data, pi.reason, pi.table_id,
                                   pi.cookie, pi.total_len, state, controller_id=controller_id))
            elif msg.type == W.OFPT_EXPERIMENTER and msg.body[:8] == NXT_PACKET_IN2_HEAD:
                p2 = decode_packet_in2(msg.body)
                if self._meter_probes.take(p2.userdata):
                    return
                fm = p2.match.get("in_port")
                state = tuple((k, v.value) for k, v in p2.match if k != "in_port")
                self.emit(PacketIn(switch, fm.value if fm else ir.OFPP_CONTROLLER, p2.data, p2.reason, p2.table_id,
                                   p2.cookie, p2.total_len, state, p2.userdata, controller_id, p2.continuation))
            elif msg.type == W.OFPT_FLOW_REMOVED:
                fr = decode_flow_removed(msg.body)
                self.emit(FlowRemoved(switch, fr.rule, fr.reason, fr.packet_count, fr.byte_count, fr.duration_sec, fr.duration_nsec))
            elif msg.type == W.OFPT_PORT_STATUS:
                reason, port = decode_port_status(msg.body)
                info = _port_info(port)
                if reason == 1:
                    self._ports.get(switch, {}).pop(port.port_no, None)
                elif port.port_no < 0xFFFFFF00:
                    self._ports.setdefault(switch, {})[port.port_no] = info
                self.emit(PortStatus(switch, reason, info))
        except W.OFError:
            pass  # a message from the switch we cannot parse is dropped, not fatal


__all__ = ["OvsBackend", "flow_mod_for", "OFPFF_SEND_FLOW_REM"]
