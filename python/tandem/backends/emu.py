"""The ``emu`` backend: OneSwitch's physical switches as devices of the
built-in emulator (one device per switch, each running dp-core's OpenFlow 1.3
+ POF pipeline, joined by PCIe port pairs).

Inputs: a ``PhysicalLayout``; then rule-IR flow/group/meter ops and port pairs
(``PairOp``: one more pair on the PCIe link of two switches); ``set_port_up``
takes a port's link down or up (buckets watching it follow; a ``PortStatus``
is emitted). Each external port
delivers to a sink and, optionally, is captured to a pcap file so tests can
read what left it (``take_output``). Time moves in ``run_for`` (and for
``settle_s`` after each packet-out, so a live endpoint works without a
driver): packet-ins found on the way are emitted as ``PacketIn`` events. Flow statistics come from the pipeline's
per-rule counters, port statistics from its per-port counters.
State: the emulator, a registry (table, priority, match) -> (rule, rule id)
per switch, the installed groups. Cost: one Rust call per op.
Device timing uses host-like defaults (8 cores at 2.7 GHz, PCIe Gen2 x8 with a
13 µs crossing); run a scenario through ``tandem run`` for calibrated timing.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from tandem.backends.base import (
    Backend, BackendError, FlowRemoved, FlowStats, GroupOp, MeterOp, Op, PacketIn, PairOp, PhysicalLayout, PortInfo, PortStats,
    PortStatus, TableStats, group_command, pair_ops,
)
from tandem.dataplane.convert import action_args, group_args, learned_rule, meter_args, removed_rule, rule_args
from tandem.rules.meters import MeterStats
from tandem.rules.nx_fin_timeout import runs_fin_timeout
from tandem.emu.machine import Machine
from tandem.rules.ir import OFPP_NORMAL, OFPP_TABLE, Action, FlowMod, Group, Match, Output, Rule
from tandem.rules.tun_metadata import EMU_MATCH_BITS, EMU_MATCH_SLOTS
from tandem.oneswitch.packet_out_table import table_whole

Key = tuple[int, int, Match]
_REASONS = {"no_match": 0, "action": 1, "invalid_ttl": 2, "action_set": 3, "group": 4, "packet_out": 5}
_REMOVED = {"idle_timeout": 0, "hard_timeout": 1, "delete": 2}  # OFPRR_*


def _with_timeouts(r: Rule, idle: int, hard: int) -> Rule:
    return Rule(r.match, r.instructions, r.table, r.priority, r.cookie, idle, hard)


def _read_pcap_frames(path: Path) -> list[bytes]:
    data = path.read_bytes()
    frames, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack("<I", data[off + 8: off + 12])[0]
        frames.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return frames


class EmuBackend(Backend):
    name = "emu"
    # a PACKET_OUT holding a group runs on the switch's own pipeline (its groups, tables and tracker), from
    # any in_port (oneswitch/packet_out_ct_group.py)
    packet_out_from_any_port = True
    table_carries_state = False  # (a PACKET_OUT's output:TABLE injects the changed frame: _changed_before_table)
    # key slots a table folds its (tun_metadataN, mask) pairs' values into (dp-core's pipeline/tunfold.rs:
    # endpoint_tun_metadata.py)
    match_slots = EMU_MATCH_SLOTS
    # tun_metadata bits a match may name (dp-core's tunfold: bits 0..127), and a learn's operand
    # (dp-core's 128-bit field reads; the other actions take any bits: pipeline/tunwide.rs)
    match_bits = EMU_MATCH_BITS
    runs_pause = False  # (dp-core keeps no continuation: controller(pause) is refused, endpoint_pause.py)

    def __init__(self, *, n_tables: int = 16, seed: int = 1, pcie_bps: float = 32e9, crossing_s: float = 13e-6,
                 capture: bool = True, table_capacity: int | Mapping[str, int] | None = None,
                 settle_s: float = 1e-3) -> None:
        """`table_capacity`: flow entries a switch holds (all tables), one number or per
        switch (e.g. an sNIC's 64K); an add beyond it fails with OFPFMFC_TABLE_FULL.
        `settle_s`: simulated time a packet-out runs for, so a live OneSwitch endpoint
        sees its effects (and the packet-ins it causes) without driving the clock; 0 = never."""
        super().__init__()
        self.settle_s = settle_s
        self.table_capacity = table_capacity
        self.n_tables, self.seed, self.pcie_bps, self.crossing_s = n_tables, seed, pcie_bps, crossing_s
        self.capture = capture
        self.machine: Machine | None = None
        self.layout: PhysicalLayout | None = None
        self.rules: dict[str, dict[Key, tuple[Rule, int]]] = {}
        self.group_tables: dict[str, dict[int, Group]] = {}
        self.meter_tables: dict[str, dict[int, object]] = {}
        self.now_s = 0.0
        self.ports_down: set[tuple[str, int]] = set()  # (switch, port) whose link is down (set_port_up)
        # switch pair -> (the PCIe link joining them, that link's first device): where PairOps go
        self.link_names: dict[frozenset, tuple[str, str]] = {}
        self.pair_ports: dict[str, set[int]] = {}  # ports added by PairOps, per switch
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._read: dict[tuple[str, int], int] = {}

    # ---------------------------------------------------------------- lifecycle

    async def start(self, layout: PhysicalLayout) -> None:
        m = Machine(self.seed)
        self.layout, self.machine = layout, m
        self._tmp = tempfile.TemporaryDirectory(prefix="tandem-emu-") if self.capture else None
        for sw, ports in layout.switches.items():
            m.device(sw, 8, 2.7e9)
            for p in ports:
                m.connect(m.sw(sw, p), m.sink(f"{sw}:{p}"))
                if self._tmp:
                    m.capture(sw, p, str(Path(self._tmp.name) / f"{sw}-{p}.pcap"))
            self.rules[sw], self.group_tables[sw] = {}, {}
        for i, ln in enumerate(layout.links):
            name = f"pcie{i}"
            m.pcie(name, ln.a_switch, ln.b_switch, self.pcie_bps, latency_s=self.crossing_s)
            m.pcie_pair(name, m.sw(ln.a_switch, ln.a_port), m.sw(ln.b_switch, ln.b_port))
            self.link_names.setdefault(frozenset((ln.a_switch, ln.b_switch)), (name, ln.a_switch))
        for sw in layout.switches:
            # (every controller id: each packet-in carries its id, as from the OVS backend's connection per id)
            m.emu.use_openflow(m.devices[sw], self.n_tables, layout.all_ports(sw), every_controller_id=True)
        for ln in layout.links:  # NORMAL (run on the host, docs/oneswitch.md section 6) floods virtual ports only
            m.emu.switch_set_no_flood(m.devices[ln.a_switch], ln.a_port, True)
            m.emu.switch_set_no_flood(m.devices[ln.b_switch], ln.b_port, True)
        m.emu.set_horizon(1e30)

    async def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self.machine = None

    def _dev(self, switch: str) -> int:
        if self.machine is None or switch not in self.machine.devices:
            known = ", ".join(self.machine.devices) if self.machine else "none (not started)"
            raise BackendError(f"unknown switch {switch!r}; known: {known}", switch)
        return self.machine.devices[switch]

    # ---------------------------------------------------------------- changes

    def _flow_mod(self, switch: str, command: str, rule: Rule, op: Op) -> list[int]:
        # a timed copy always reports its expiry (as on the OVS backend): the endpoint removes
        # the virtual rule, and sends FLOW_REMOVED if the controller asked for it
        send_rem = bool(getattr(op, "send_flow_rem", False)) or bool(rule.idle_timeout or rule.hard_timeout) \
            or runs_fin_timeout(rule)  # (fin_timeout: a FIN may give it timeouts)
        try:
            return self.machine.emu.switch_flow_mod(self._dev(switch), {"command": command, **rule_args(rule),
                                                                        "send_flow_rem": send_rem})
        except ValueError as e:
            raise BackendError(f"switch {switch}: {command} table={rule.table} priority={rule.priority}: {e}",
                               switch, (5, 0), op) from None

    async def apply(self, ops: Sequence[Op]) -> None:
        pairs, ops = pair_ops(ops)
        for p in pairs:
            self._add_pair(p)
        for op in ops:
            dev = self._dev(op.switch)
            if isinstance(op, MeterOp):
                self._meter_mod(dev, op)
                continue
            gcmd = group_command(op)
            if gcmd is not None:
                g: Group = op.group  # type: ignore[union-attr]
                groups = self.group_tables[op.switch]
                if gcmd == "delete":  # (a modify is an add, which replaces: dp-core's remove_group would also
                    self.machine.emu.switch_remove_group(dev, g.group_id)  # delete the rules that use the group)
                    groups.pop(g.group_id, None)
                if gcmd in ("add", "modify"):
                    try:
                        self.machine.emu.switch_add_group(dev, *group_args(g))
                    except ValueError as e:
                        raise BackendError(f"switch {op.switch}: group {g.group_id}: {e}", op.switch, (6, 0), op) from None
                    groups[g.group_id] = g
                continue
            r = op.rule
            key = (r.table, r.priority, r.match)
            reg = self.rules[op.switch]
            if op.op == "add":
                cap = self._capacity(op.switch)
                if cap is not None and key not in reg and len(reg) >= cap:
                    raise BackendError(f"switch {op.switch}: flow table full ({cap} entries)", op.switch, (5, 1), op)
                if getattr(op, "reset_counts", False) and key in reg:  # (dp-core's ADD carries counters over, as OVS's
                    self._flow_mod(op.switch, "delete_strict", r, op)  # without OFPFF_RESET_COUNTS: no packet runs between)
                ids = self._flow_mod(op.switch, "add", r, op)
                reg[key] = (r, ids[0] if ids else -1)
            elif op.op == "modify_strict":
                self._flow_mod(op.switch, "modify_strict", r, op)
                if key in reg:
                    old, rid = reg[key]
                    reg[key] = (Rule(r.match, r.instructions, r.table, r.priority, old.cookie, old.idle_timeout,
                                     old.hard_timeout), rid)
            elif op.op in ("delete_strict", "delete"):
                gone = set(self._flow_mod(op.switch, op.op, r, op))
                for k in [k for k, (_, rid) in reg.items() if rid in gone]:
                    del reg[k]
            else:
                raise BackendError(f"switch {op.switch}: unknown flow op {op.op!r}", op.switch, op=op)

    def _add_pair(self, op: PairOp) -> None:
        """One more port pair (a VF) on the PCIe link joining ``op.switch`` and ``op.peer``,
        its ends new ports of the two switches' pipelines (kept if it exists)."""
        m = self.machine
        if op.port in self.pair_ports.get(op.switch, ()):
            return
        link = self.link_names.get(frozenset((op.switch, op.peer)))
        if link is None:
            raise BackendError(f"no PCIe link joins {op.switch} and {op.peer} for a port pair", op.switch, op=op)
        name, first = link
        for sw, port in ((op.switch, op.port), (op.peer, op.peer_port)):
            if port in self.layout.all_ports(sw) or port in self.pair_ports.get(sw, ()):
                raise BackendError(f"switch {sw}: port {port} exists; cannot add a port pair there", sw, op=op)
        for sw, port in ((op.switch, op.port), (op.peer, op.peer_port)):
            m.emu.switch_add_port(m.devices[sw], port)
            self.pair_ports.setdefault(sw, set()).add(port)
        a, b = m.sw(op.switch, op.port), m.sw(op.peer, op.peer_port)
        m.pcie_pair(name, *((a, b) if first == op.switch else (b, a)))

    def all_ports(self, switch: str) -> list[int]:
        """The switch's ports: the layout's and those port pairs added."""
        return sorted({*self.layout.all_ports(switch), *self.pair_ports.get(switch, ())})

    def _meter_mod(self, dev: int, op: MeterOp) -> None:
        m = op.meter
        known = self.meter_tables.setdefault(op.switch, {})
        try:
            if op.op == "delete":
                for mid in ([*known] if m.meter_id == 0xFFFFFFFF else [m.meter_id]):
                    self.machine.emu.switch_meter_mod(dev, "delete", mid)
                    known.pop(mid, None)
                return
            self.machine.emu.switch_meter_mod(dev, op.op, **meter_args(m))
        except ValueError as e:
            code = 1 if "exists" in str(e) else 3 if "does not exist" in str(e) else 0  # METER_EXISTS / UNKNOWN_METER
            raise BackendError(f"switch {op.switch}: meter {m.meter_id}: {e}", op.switch, (12, code), op) from None
        known[m.meter_id] = m

    async def meter_stats(self, switch: str) -> list[MeterStats]:
        dev = self._dev(switch)
        out = []
        for mid in sorted(self.meter_tables.get(switch, {})):
            got = self.machine.emu.switch_meter_stats(dev, mid)
            if got is None:
                continue
            pkts, byts, bands, since_ns = got
            age_ns = max(0, int(self.machine.emu.now_ns) - since_ns)
            out.append(MeterStats(mid, 0, pkts, byts, age_ns // 10**9, age_ns % 10**9, tuple(bands)))
        return out

    def _capacity(self, switch: str) -> int | None:
        c = self.table_capacity
        return c.get(switch) if isinstance(c, Mapping) else c

    async def clear(self, switch: str | None = None) -> None:
        for sw in [switch] if switch else list(self.rules):
            dev = self._dev(sw)
            self.machine.emu.switch_flow_mod(dev, {"command": "delete", **rule_args(Rule()), "all_tables": True})
            for gid in list(self.group_tables[sw]):
                self.machine.emu.switch_remove_group(dev, gid)
            self.rules[sw].clear()
            self.group_tables[sw].clear()
            if self.meter_tables.get(sw):
                self.machine.emu.switch_meter_mod(dev, "delete", 0xFFFFFFFF)
                self.meter_tables[sw].clear()

    async def meter_packet_in(self, switch: str, meter_id: int, frame: bytes) -> bytes | None:
        out = self.machine.emu.switch_meter_packet_in(self._dev(switch), meter_id, bytes(frame))  # (dp-core, now)
        return None if out is None else bytes(out)

    async def packet_out(self, switch: str, in_port: int, actions: Sequence[Action], frame: bytes) -> None:
        dev = self._dev(switch)
        at = self.now_s * 1e9
        if table_whole(actions, False):  # (OneSwitch's whole route: dp-core's resubmit, oneswitch/packet_out_table.py)
            self._device_packet_out(switch, dev, in_port, actions, frame, at)
        elif any(isinstance(a, Output) and a.port == OFPP_TABLE for a in actions):
            frame = _changed_before_table(self.all_ports(switch), in_port, actions, frame)
            self.machine.emu.inject(("switch", dev, in_port), bytes(frame), at)
        elif len(actions) == 1 and type(actions[0]) is Output and actions[0].port in self.all_ports(switch):
            # (a frame sent as it is, as Open vSwitch sends it: also one cut short, the endpoint's output_trunc)
            self.machine.emu.inject_out(dev, actions[0].port, bytes(frame), at)
        elif _applies_group(actions) or _sent_whole(actions):  # (OneSwitch's whole PACKET_OUTs: packet_out_ct_group.py, packet_out_whole.py)
            self._device_packet_out(switch, dev, in_port, actions, frame, at)
        elif any(isinstance(a, Output) and a.port == OFPP_NORMAL for a in actions):
            for port, out in _normal_packet_out(self.machine.emu, dev, self.all_ports(switch), in_port, actions, frame):
                self.machine.emu.inject_out(dev, port, out, at)
        else:
            from tandem.dataplane.switch import Switch

            scratch = Switch(self.all_ports(switch), 1)
            scratch.add_rule(Rule(Match(), ()) if not actions else _apply_rule(actions))
            for port, out in scratch.process(in_port, bytes(frame)):
                self.machine.emu.inject_out(dev, port, out, at)
        if self.settle_s > 0:
            self.run_for(self.settle_s)

    def _device_packet_out(self, switch: str, dev: int, in_port: int, actions: Sequence[Action], frame: bytes,
                           at: float) -> None:
        """Run a PACKET_OUT on device ``dev``'s own pipeline (dp-core ``packet_out``): its
        outputs leave now, its packet-ins are emitted."""
        from tandem.dataplane.convert import action_args

        for kind, a, b, *more in self.machine.emu.switch_packet_out(dev, in_port, [action_args(x) for x in actions],
                                                                     bytes(frame)):
            if kind == "output" and a in self.all_ports(switch):  # (IN_PORT from CONTROLLER: none, as in OVS)
                self.machine.emu.inject_out(dev, a, bytes(b), at)
            elif kind == "controller":
                table, cookie, meta, userdata = more
                self.emit(PacketIn(switch, in_port, bytes(b), _REASONS.get(a, 1), table=table, cookie=cookie,
                                   fields=tuple(meta), userdata=bytes(userdata)))

    # ---------------------------------------------------------------- time and packets

    def inject(self, switch: str, in_port: int, frame: bytes) -> None:
        """A frame arrives on `in_port` of `switch` now (test and demo helper)."""
        self.machine.emu.inject(("switch", self._dev(switch), in_port), bytes(frame), self.now_s * 1e9)

    def run_for(self, seconds: float) -> list[PacketIn]:
        """Advance simulated time; emit (and return) the packet-ins that happened."""
        self.now_s += seconds
        self._run_until(self.now_s * 1e9)
        self.machine.emu.finish()
        names = {i: n for n, i in self.machine.devices.items()}
        events = [PacketIn(names[d], p, bytes(f), _REASONS.get(r, 1), table=t, cookie=c, fields=tuple(meta),
                           userdata=bytes(u), controller_id=cid)
                  for d, p, r, t, c, f, meta, u, cid in self.machine.emu.take_controller()]
        for ev in events:
            self.emit(ev)
        for sw, dev in self.machine.devices.items():
            if sw in self.rules:
                for t in self.machine.emu.switch_take_removed(dev):
                    rule, reason, dur, pk, by, rid = removed_rule(t)
                    if reason != "delete":  # (a timed-out copy leaves the registry; a deleted one has left it)
                        installed = self._forget(sw, rid)  # (with the timeouts it had then: a fin_timeout may shrink them)
                        rule = rule if installed is None else _with_timeouts(installed, rule.idle_timeout, rule.hard_timeout)
                    self.emit(FlowRemoved(sw, rule, _REMOVED[reason], pk, by, dur // 10**9, dur % 10**9))
        return events

    def _forget(self, switch: str, rule_id: int) -> Rule | None:
        """Drop the registry's entry for rule ``rule_id`` that timed out: the rule as it was
        installed, or None (a flow the switch learned is in no registry)."""
        reg = self.rules[switch]
        for key, (rule, rid) in reg.items():
            if rid == rule_id:
                del reg[key]
                return rule
        return None

    def _run_until(self, until_ns: float) -> None:
        """Run the emulator's events up to ``until_ns`` (a subclass may stop on the way)."""
        self.machine.emu.run_until(until_ns)

    def set_port_up(self, switch: str, port: int, up: bool) -> None:
        """Bring a port's link down or up (a cable pulled or put back): the switch's
        fast-failover and select buckets watching it follow at once, and a
        ``PortStatus`` (OFPPR_MODIFY) is emitted as a switch would send it."""
        if not self.machine.emu.switch_set_port_live(self._dev(switch), port, up):
            raise BackendError(f"switch {switch} has no port {port}", switch)
        (self.ports_down.discard if up else self.ports_down.add)((switch, port))
        info = next(p for p in self.ports(switch) if p.port == port)
        self.emit(PortStatus(switch, 2, info))

    def take_output(self, switch: str, port: int) -> list[bytes]:
        """Frames sent out of external port `port` of `switch` since the last call."""
        if self._tmp is None:
            raise BackendError("take_output needs capture=True", switch)
        frames = _read_pcap_frames(Path(self._tmp.name) / f"{switch}-{port}.pcap")
        seen = self._read.get((switch, port), 0)
        self._read[(switch, port)] = len(frames)
        return frames[seen:]

    # ---------------------------------------------------------------- read-back

    def switches(self) -> list[str]:
        return list(self.rules)

    def ports(self, switch: str) -> list[PortInfo]:
        self._dev(switch)
        names = self.layout.port_names
        return [PortInfo(p, names.get((switch, p), f"{switch}-p{p}"), link_up=(switch, p) not in self.ports_down)
                for p in self.all_ports(switch)]

    async def flow_stats(self, switch: str) -> list[FlowStats]:
        dev = self._dev(switch)
        out = []
        timed = {rid: (idle, hard) for rid, idle, hard in self.machine.emu.switch_rule_timeouts(dev)}
        for rule, rid in self.rules[switch].values():
            pk, by = self.machine.emu.switch_rule_stats(dev, rid) or (0, 0)
            if rid in timed and timed[rid] != (rule.idle_timeout, rule.hard_timeout):  # (a fin_timeout shrank them)
                rule = _with_timeouts(rule, *timed[rid])
            out.append(FlowStats(rule, packet_count=pk, byte_count=by))
        for t in self.machine.emu.switch_learned_flows(dev):  # (flows its rules learned)
            rule, pk, by = learned_rule(t)
            out.append(FlowStats(rule, packet_count=pk, byte_count=by))
        return out

    async def port_stats(self, switch: str) -> list[PortStats]:
        c = dict(self.machine.emu.switch_counters(self._dev(switch)))
        return [PortStats(p, rx_packets=c.get(f"port.{p}.rx_packets", 0), tx_packets=c.get(f"port.{p}.tx_packets", 0),
                          rx_bytes=c.get(f"port.{p}.rx_bytes", 0), tx_bytes=c.get(f"port.{p}.tx_bytes", 0))
                for p in self.all_ports(switch)]

    async def groups(self, switch: str) -> list[Group]:
        self._dev(switch)
        return list(self.group_tables[switch].values())

    async def table_stats(self, switch: str) -> list[TableStats]:
        """From the pipeline's per-table counters (every lookup, and the lookups a rule matched)."""
        c = dict(self.machine.emu.switch_counters(self._dev(switch)))
        active: dict[int, int] = {}
        for rule, _ in self.rules[switch].values():
            active[rule.table] = active.get(rule.table, 0) + 1
        tables = sorted({int(k.split(".")[1]) for k in c if k.startswith("table.")} | set(active))
        return [TableStats(t, active.get(t, 0), c.get(f"table.{t}.lookups", 0), c.get(f"table.{t}.matched", 0))
                for t in tables]


def _normal_packet_out(emu, dev: int, ports: list[int], in_port: int, actions: Sequence[Action],
                       frame: bytes) -> list[tuple[int, bytes]]:
    """A packet-out's actions, each output in turn: NORMAL on the device's own MAC table
    (``switch_packet_out_normal``), others as usual; each on the frame the actions before
    it made (read from a scratch switch's output to a port no switch has)."""
    from tandem.dataplane.switch import Switch

    probe = 0xFFFF_FE00
    scratch = Switch([*ports, probe], 1)
    outs: list[tuple[int, bytes]] = []
    for i, a in enumerate(actions):
        if not isinstance(a, Output):
            continue
        mods = [x for x in actions[:i] if not isinstance(x, Output)]
        if a.port == OFPP_NORMAL:
            scratch.flow_mod(FlowMod("add", _apply_rule([*mods, Output(probe)])))
            for _, f in scratch.process(in_port, bytes(frame)):
                outs += emu.switch_packet_out_normal(dev, in_port, f)
        else:
            scratch.flow_mod(FlowMod("add", _apply_rule([*mods, a])))
            outs += [(p, f) for p, f in scratch.process(in_port, bytes(frame)) if p != probe]
    return outs


def _changed_before_table(ports: Sequence[int], in_port: int, actions: Sequence[Action], frame: bytes) -> bytes:
    """The frame that meets table 0 at a PACKET_OUT's last action, ``output:TABLE`` (the
    endpoint sends nothing after it but notes: oneswitch/packet_out_table.py): the actions
    before it run on ``frame`` by dp-core, which the injected frame then carries (their
    header changes; their writes to pipeline state, such as registers, are not carried)."""
    from tandem.dataplane.switch import Switch

    head = [a for a in actions if not (isinstance(a, Output) and a.port == OFPP_TABLE)]
    away = next((p for p in ports if p != in_port), None)
    if not head or away is None:
        return frame
    sent = Switch(ports, 1).packet_out(in_port, [*head, Output(away)], bytes(frame))
    return next((out for port, out in sent if port == away), frame)


def _applies_group(actions: Sequence[Action]) -> bool:
    from tandem.rules.ir import Clone, GroupAction

    return any(type(a) is GroupAction or type(a) is Clone and _applies_group(a.actions) for a in actions)


def _sent_whole(actions: Sequence[Action]) -> bool:
    """A PACKET_OUT the endpoint sends whole (oneswitch/packet_out_whole.py): its packet-ins,
    ``ct`` and ``dec_nsh_ttl`` are the host device's own (its tracker, its packet-ins)."""
    from tandem.rules.ir import Clone, Controller, Ct, DecNshTtl

    return any(type(a) in (Controller, Ct, DecNshTtl) or type(a) is Clone and _sent_whole(a.actions) for a in actions)


def _apply_rule(actions: Sequence[Action]) -> Rule:
    from tandem.rules.ir import ApplyActions

    return Rule(Match(), (ApplyActions(tuple(actions)),))


async def advance_in_real_time(backend, speed: float, tick_s: float = 0.01) -> None:
    """Move an emulator backend's clock forward in real time (x ``speed``), forever
    (``tandem serve --scenario`` and ``tandem agent`` run it as a task)."""
    import asyncio

    loop = asyncio.get_running_loop()
    start, done = loop.time(), 0.0
    while True:
        await asyncio.sleep(tick_s)
        target = (loop.time() - start) * speed
        if target > done:
            backend.run_for(target - done)
            done = target
