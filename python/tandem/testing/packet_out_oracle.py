"""PACKET_OUT oracle: random PACKET_OUTs whose actions hold ``clone(…)`` and now and then
``check_pkt_larger`` (its bit shown in the frame) (or, with
``bundles``, ``bundle`` / ``bundle_load`` while random ports are down on both sides)
against one Open vSwitch 3.1 bridge.

``random_packet_out`` draws an in_port (a port or CONTROLLER) and an action list of
field sets (eth_src, eth_dst, a register, a VLAN push with its vid), outputs (ports,
IN_PORT, FLOOD, ALL), group calls, notes, now and then an ``exit``, and clones of
such lists (nested up to two deep, sometimes empty). Two checks, each against
the same PACKET_OUTs sent to a plain bridge (four ports, the same groups):

* ``run_dp``: dp-core runs the list as the emulator backend runs a PACKET_OUT (one
  apply-actions rule of a scratch ``Switch``; in_port a port);
* ``run_translation``: OneSwitch's endpoint over OVS bridges (host and two sNICs,
  ``TOPOLOGY``) carries the PACKET_OUT out (``OneSwitchEndpoint.packet_out``); the
  frames each virtual port's wire sends must be the plain bridge's, port by port.

Frames are compared per batch of PACKET_OUTs as multisets per port, and each batch's
errors too (both must take every PACKET_OUT). Used by ``benches/packet_out_oracle.py``
and tests. State: the sandbox's bridges; cost: one barrier and one settle per batch.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.generate import random_group, random_value
from tandem.rules.ir import (
    OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, Action, ApplyActions, Clone, Exit, Group, GroupAction,
    Match, Note, Output, PushVlan, Rule, SetField,
)
from tandem.rules.packets import random_packet
from tandem.rules.generate_hash import random_bundle
from tandem.rules.generate_tun_metadata import LONG_TLV_MAP
from tandem.rules.tun_metadata import encoding_lengths
from tandem.testing.packet_out_tun_long import TLV_MAP_TEXT, with_long_option
from tandem.rules.ir import OFPP_ALL, OFPP_ANY, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL
from tandem.rules.ir import Bundle, CheckPktLarger, MoveField, Subfield
from tandem.rules.ir import OutputTrunc
from tandem.rules.ir import OutputReg
from tandem.rules.generate_nx import PKT_LENS
from tandem.testing.packet_out_nsh_ttl import ask_for_invalid_ttl, nsh_buckets, with_nsh_ttl
from tandem.testing.packet_out_encap import with_encap
from tandem.testing.packet_out_output_reg import with_field_output_regs
from tandem.testing.packet_out_trunc import trunc_groups, trunc_pushes, with_group_calls, with_output_regs
from tandem.testing.packet_out_meters import (
    SLOW_S, ask_meter_stats, meter_counts, metered_actions, reset_meters, scratch_meter_counts, scratch_with_meters,
    with_meters,
)
from tandem.oneswitch.endpoint_clone import sends_packet_in
from tandem.testing.packet_out_packet_ins import (
    ask_for_packet_ins, controller_streams, dp_packet_in_keys, is_packet_in, ovs_packet_in_keys, packet_in_format,
    packet_in_segment,
)

PORTS = (1, 2, 3, 4)
_TAGS = (b"\x81\x00", b"\x88\xa8")
TOPOLOGY = {"switches": {"host": "host", "snic0": "snic", "snic1": "snic"},
            "links": [("host:100", "snic0:100"), ("host:101", "snic1:100")],
            "ports": {1: "host:1", 2: "snic0:1", 3: "snic1:1", 4: "snic0:2"}}


# reserved bundle members a PACKET_OUT's bundle may choose (the endpoint runs the chosen output as one written there)
_PO_RESERVED = (OFPP_IN_PORT, OFPP_FLOOD, OFPP_ALL, OFPP_LOCAL, OFPP_ANY)


def _segment(rng: random.Random, groups: Sequence[int], depth: int, pushes: list[int], bundles: bool,
             packet_ins: bool = False, truncs: bool = False) -> list[Action]:
    if packet_ins and rng.random() < 0.3:  # (a packet-in, or a change to the state it shows)
        return packet_in_segment(rng, depth == 0)
    if truncs and rng.random() < 0.25:  # (output_trunc: to a port, the in_port or IN_PORT)
        return [OutputTrunc(rng.choice((*PORTS, OFPP_IN_PORT)), rng.choice((14, 20, 24, 40, 60, 64, 100)))]
    x = rng.random()
    if bundles and x < 0.25:  # (bundle, or bundle_load with a move that shows the loaded number)
        return random_bundle(rng, PORTS, rng.random() < 0.4, rng.random() < 0.3, _PO_RESERVED)
    x = rng.random() if bundles else x
    if depth == 0 and x < 0.08 and not packet_ins:  # check_pkt_larger (not inside a clone) into a register, shown in the frame
        bit = rng.choice((0, 3, 7))
        return [CheckPktLarger(rng.choice(PKT_LENS), Subfield("reg1", bit, 1)),
                MoveField(Subfield("reg1", 0, 8), Subfield("eth_src", 0, 8))]
    x = rng.random() if depth == 0 else x
    if x < 0.25:
        f = rng.choice(("eth_src", "eth_dst", "reg0"))
        return [SetField(f, random_value(rng, f) if f != "reg0" else rng.randrange(1 << 32))]
    if x < 0.33 and pushes:  # (one VLAN push per PACKET_OUT: Open vSwitch refuses a flow of three tags)
        pushes.pop()
        return [PushVlan(0x8100), SetField("vlan_vid", 0x1000 | rng.randrange(1, 4095))]
    if x < 0.6:
        return [Output(rng.choice(PORTS))]
    if x < 0.66:
        return [Output(rng.choice((OFPP_IN_PORT, OFPP_FLOOD, OFPP_ALL)))]
    if x < 0.72 and groups:
        return [GroupAction(rng.choice(list(groups)))]
    if x < 0.75:
        return [Note(b"\x01\x02")]
    if x < 0.77:
        return [Exit()]
    if depth < 2:  # (with output_trunc: endpoint_trunc.py follows Open vSwitch's commits around clones)
        return [Clone(tuple(random_actions(rng, groups, depth + 1, rng.randint(0, 4), pushes, bundles, packet_ins,
                                                     truncs)))]
    return [Output(rng.choice(PORTS))]


def random_actions(rng: random.Random, groups: Sequence[int], depth: int = 0, n: int | None = None,
                   pushes: list[int] | None = None, bundles: bool = False, packet_ins: bool = False,
                   truncs: bool = False) -> list[Action]:
    pushes = [1] if pushes is None else pushes
    out: list[Action] = []
    for _ in range(rng.randint(1, 6) if n is None else n):
        out += _segment(rng, groups, depth, pushes, bundles, packet_ins, truncs)
    return out


def random_packet_out(rng: random.Random, groups: Sequence[int], controller: bool = True, bundles: bool = False,
                      packet_ins: bool = False, truncs: bool = False, nsh_ttl: bool = False, encap: bool = False
                      ) -> tuple[int, tuple[Action, ...], bytes]:
    """(in_port, actions, frame): a PACKET_OUT whose actions hold at least one clone (with
    ``bundles``: at least one bundle or bundle_load instead; with ``packet_ins`` also at
    least one packet-in; with ``nsh_ttl``: an NSH frame and a dec_nsh_ttl, packet_out_nsh_ttl.py)."""
    port, frame = random_packet(rng, None, PORTS)
    while truncs and groups and frame[12:14] in _TAGS and frame[16:18] in _TAGS:  # (a bucket may push one more)
        port, frame = random_packet(rng, None, PORTS)
    tags = 2 if frame[12:14] in _TAGS and frame[16:18] in _TAGS else 0
    pushes = trunc_pushes(int(frame[12:14] in _TAGS)) if truncs and groups else [1] if tags < 2 else []
    while True:
        acts = random_actions(rng, groups, pushes=list(pushes), bundles=bundles, packet_ins=packet_ins,
                              truncs=truncs)
        acts = with_output_regs(rng, with_group_calls(rng, acts, groups)) if truncs else acts  # (packet_out_trunc.py)
        if any(type(a) is (Bundle if bundles else OutputTrunc if truncs else Clone) for a in acts) \
                and (not (bundles and truncs) or any(type(a) is OutputTrunc for a in acts)) \
                and (not packet_ins or sends_packet_in(acts)):
            break
    in_port = OFPP_CONTROLLER if controller and rng.random() < 0.3 else port
    if encap:  # (the SFC pattern: packet_out_encap.py)
        acts = list(with_encap(rng, tuple(acts), PORTS))
    if nsh_ttl:
        return (in_port, *with_nsh_ttl(rng, tuple(acts), frame))
    return in_port, tuple(acts), frame


def random_groups(rng: random.Random) -> list[Group]:
    """All, indirect and fast-failover groups 1 .. n (a select group's bucket choice hashes
    differently in dp-core)."""
    out: list[Group] = []
    while len(out) < rng.randint(0, 3):
        g = random_group(rng, len(out) + 1, PORTS)
        if g.type != "select":
            out.append(g)
    return out


@dataclass
class Result:
    packet_outs: int = 0
    clones: int = 0
    bundles: int = 0  # bundle and bundle_load actions
    checks: int = 0  # check_pkt_larger actions
    frames: int = 0
    packet_ins: int = 0  # packet-ins compared (--packet-ins)
    truncs: int = 0  # output(port=P,max_len=N) actions (--truncs)
    nx_packet_ins: int = 0  # of those, in Nicira's two formats (the translation check, --packet-ins)
    groups: int = 0  # group actions at the top and in clones
    output_regs: int = 0  # output_reg actions (--truncs)
    metered: int = 0  # controller(meter_id=M) actions naming a configured meter (--meters)
    slow: int = 0  # batches with metered packet-ins that took over packet_out_meters.SLOW_S (--meters)
    tables: int = 0  # PACKET_OUTs ending in output:TABLE, with random table rules (--table)
    mismatches: list[str] = field(default_factory=list)

    def count(self, pos: list, frames: int) -> None:
        """Add one batch of PACKET_OUTs ``(in_port, actions, frame)`` and the frames they sent."""
        self.packet_outs += len(pos)
        self.clones += sum(_clones(a) for _, a, _ in pos)
        self.bundles += sum(_bundles(a) for _, a, _ in pos)
        self.checks += sum(_bundles(a, CheckPktLarger) for _, a, _ in pos)
        self.truncs += sum(_bundles(a, OutputTrunc) for _, a, _ in pos)
        self.groups += sum(_bundles(a, GroupAction) for _, a, _ in pos)
        self.output_regs += sum(_bundles(a, OutputReg) for _, a, _ in pos)
        self.frames += frames


class _Conn:
    """An OpenFlow 1.3 connection that sends messages and reads up to a barrier's reply."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.buf, self.xid = reader, writer, bytearray(), 1
        self.packet_ins: list[bytes] = []  # (OpenFlow packet-ins read so far)
        self.replies: list[M.RawMessage] = []  # (multipart replies read so far: --meters)

    async def hello(self) -> "_Conn":
        self.writer.write(M.encode_hello())
        await self.barrier()
        return self

    def send(self, build) -> None:
        self.xid += 1
        self.writer.write(build(self.xid))

    async def barrier(self) -> list[tuple[int, int]]:
        """The (type, code) of every error before the barrier's reply."""
        self.xid += 1
        xid = self.xid
        self.writer.write(M.encode_barrier_request(xid))
        errors = []
        while True:
            done = False
            for m in M.split_messages(self.buf):  # (all of them: a packet-in may come after the reply)
                if m.type == W.OFPT_ERROR and not done:
                    errors.append(struct.unpack_from("!HH", m.body))
                if is_packet_in(m):  # (in any of the three formats)
                    self.packet_ins.append(W.header(m.type, m.xid, m.body))
                if m.type == W.OFPT_MULTIPART_REPLY:
                    self.replies.append(m)
                done = done or m.type == W.OFPT_BARRIER_REPLY and m.xid == xid
            if done:
                return errors
            chunk = await asyncio.wait_for(self.reader.read(1 << 16), 10)
            if not chunk:
                raise ConnectionError("closed by the switch")
            self.buf += chunk

    def close(self) -> None:
        self.writer.close()


def _packet_out(in_port: int, acts: tuple[Action, ...], frame: bytes):
    return lambda x: M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, in_port, acts, frame))


def _clones(acts: Sequence[Action]) -> int:
    return sum(1 + _clones(a.actions) for a in acts if type(a) is Clone)


def _bundles(acts: Sequence[Action], kind: type = Bundle) -> int:
    return sum(_bundles(a.actions, kind) if type(a) is Clone else type(a) is kind for a in acts)


def _show(batch, ours, theirs) -> str:
    lines = [f"in_port {p:#x} actions {[str(a) for a in acts]} frame {f.hex()}" for p, acts, f in batch]
    return "\n  ".join(lines) + f"\n  ours: {ours}\n  ovs:  {theirs}"


def _down(rng: random.Random, bundles: bool) -> frozenset[int]:
    """Ports set down on both sides for a batch (bundle runs only: their members' liveness)."""
    return frozenset(rng.sample(PORTS, rng.choice((0, 1, 1, 2, 3)))) if bundles else frozenset()


def _set_admin(sb, wires: dict[int, tuple[str, int]], down: frozenset[int], was: frozenset[int]) -> None:
    for v in down ^ was:
        br, port = wires[v]
        sb.appctl("netdev-dummy/set-admin-state", sb.bridges[br].ports[port], "down" if v in down else "up")


def _scratch(down: frozenset[int], groups: list[Group], setup=lambda sw: sw):
    """dp-core's scratch switch for run_dp: ``down`` ports not live, ``groups`` added."""
    from tandem.dataplane.switch import Switch

    sw = setup(Switch(PORTS, 1, drop_malformed=False))
    for p in down:
        sw.pipeline.set_port_live(p, False)
    sw.add_groups(groups)
    return sw


def run_dp(sb, n: int, seed: int = 0, batch: int = 20, bundles: bool = False, packet_ins: bool = False,
           truncs: bool = False, nsh_ttl: bool = False, encap: bool = False, meters: bool = False,
           tun_long: bool = False, output_regs: bool = False) -> Result:
    """dp-core (a scratch ``Switch`` running the list as apply-actions) vs the plain bridge;
    ``bundles``: PACKET_OUTs with bundle / bundle_load, some ports down on both sides;
    ``packet_ins``: with packet-ins after changes, compared too (packet_out_packet_ins.py);
    ``truncs``: with ``output(port=P,max_len=N)`` and no groups (oneswitch/endpoint_trunc.py);
    ``meters``: with ``packet_ins``, metered packet-ins, one scratch switch per batch holding the
    meters (modelled time stands still) and the meter counters compared (packet_out_meters.py).
    ``tun_long``: after a write of a long tun_metadata option (packet_out_tun_long.py)."""
    br = "po-plain"
    sb.tlv_map = TLV_MAP_TEXT if tun_long else sb.tlv_map
    sb.add_bridge(br, PORTS)
    res = Result()

    pins = packet_ins or nsh_ttl  # (--nsh-ttl: invalid_ttl packet-ins compared too)

    async def go() -> None:
        ovs = await _Conn(*await (controller_streams(sb, br) if pins else
                                  asyncio.open_unix_connection(sb.mgmt(br).removeprefix("unix:")))).hello()
        if pins:
            ask_for_packet_ins(ovs)
        if nsh_ttl:
            ask_for_invalid_ttl(ovs)
        s = 0
        was: frozenset[int] = frozenset()
        while res.packet_outs < n:
            rng = random.Random(f"po-dp:{seed}:{s}:{bundles}" + (":packet-ins" if packet_ins else "")
                                + (":truncs" if truncs else "") + (":meters" if meters else ""))
            s += 1
            groups = trunc_groups(rng, PORTS) if truncs else random_groups(rng)
            groups = nsh_buckets(rng, groups, PORTS) if nsh_ttl else groups
            down = _down(rng, bundles)
            _set_admin(sb, {p: (br, p) for p in PORTS}, down, was)
            was = down
            ovs.send(lambda x: M.encode_group_mod(x, "delete", Group(M.OFPG_ALL)))
            for g in groups:
                ovs.send(lambda x, g=g: M.encode_group_mod(x, "add", g))
            pos = [random_packet_out(rng, [g.group_id for g in groups], False, bundles, packet_ins, truncs, nsh_ttl, encap)
                   for _ in range(batch)]
            if meters:
                pos = [(i, with_meters(rng, acts), f) for i, acts, f in pos]
                res.metered += sum(metered_actions(acts) for _, acts, _ in pos)
                reset_meters(ovs)
                metered = _scratch(down, groups, scratch_with_meters)
            t0 = time.monotonic()
            pos = [(i, with_long_option(rng, a), f) for i, a, f in pos] if tun_long else pos
            pos = [(i, with_field_output_regs(rng, a, f), f) for i, a, f in pos] if output_regs else pos
            ours: Counter = Counter()
            for in_port, acts, frame in pos:
                sw = metered if meters else _scratch(down, groups)
                rid = sw.add_rule(Rule(Match(), (ApplyActions(acts),)))
                fates = sw.process(in_port, frame)
                sw.remove_rule(rid)
                ours.update((p, f) for p, f in fates)
                ours.update(dp_packet_in_keys(fates.controller) if pins else ())
                ovs.send(_packet_out(in_port, acts, frame))
            errors = await ovs.barrier()
            sb.settle()
            errors += await ovs.barrier() if pins else []  # (the packet-ins Open vSwitch sends after the first)
            theirs = Counter((p, f) for p in PORTS for f in sb.take_output(br, p))
            theirs.update(ovs_packet_in_keys(ovs.packet_ins))
            ovs.packet_ins.clear()
            if meters:
                ask_meter_stats(ovs)
                await ovs.barrier()
                theirs.update(("meter", m) for m in meter_counts(ovs.replies))
                ovs.replies.clear()
                ours.update(("meter", m) for m in scratch_meter_counts(metered))
                res.slow += time.monotonic() - t0 > SLOW_S
            res.count(pos, sum(v for k, v in ours.items() if k[0] not in ("packet-in", "meter")))
            res.packet_ins += sum(v for k, v in ours.items() if k[0] == "packet-in")
            if errors or ours != theirs:
                res.mismatches.append(f"set {s - 1}: errors {errors}\n  " + _show(pos, sorted(ours - theirs, key=repr),
                                                                                sorted(theirs - ours, key=repr)))
        ovs.close()

    with encoding_lengths(LONG_TLV_MAP if tun_long else {}):  # (the PACKET_OUTs' tun_metadata headers)
        asyncio.run(go())
    return res


def run_translation(sb, n: int, seed: int = 0, batch: int = 20, bundles: bool = False, packet_ins: bool = False,
                    truncs: bool = False, nsh_ttl: bool = False, encap: bool = False, meters: bool = False,
                    table: bool = False, whole: bool = False, continued: bool = False, output_regs: bool = False,
                    whole_tun: bool = False) -> Result:
    """OneSwitch's endpoint over OVS bridges vs the plain bridge, the same PACKET_OUTs
    (``whole``: ones the endpoint sends whole to the host, packet_out_whole.py)
    (``table``: each ending in output:TABLE, random table rules per set: packet_out_table.py)
    (``bundles``, ``packet_ins``: as in ``run_dp``, packet-ins byte for byte; OneSwitch
    learns the liveness from its bridges; ``meters``: with ``packet_ins``, metered packet-ins
    and each batch's meter counters, packet_out_meters.py)."""
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology

    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    br = "po-plain"
    sb.add_bridge(br, PORTS)
    res = Result()

    pins = packet_ins or nsh_ttl  # (--nsh-ttl: invalid_ttl packet-ins compared too)

    async def go() -> None:
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        port = await ep.listen("ptcp:0:127.0.0.1")
        one = await _Conn(*await asyncio.open_connection("127.0.0.1", port)).hello()
        ovs = await _Conn(*await (controller_streams(sb, br) if pins else
                                  asyncio.open_unix_connection(sb.mgmt(br).removeprefix("unix:")))).hello()
        for c in (ovs, one) if pins else ():
            ask_for_packet_ins(c)
            if nsh_ttl or whole:  # (--whole: dec_nsh_ttl too)
                ask_for_invalid_ttl(c)
            if whole_tun:  # (--whole-tun: one TLV map on both sides, packet_out_whole.TUN_MAP)
                from tandem.testing.packet_out_whole import tlv_table_mod

                c.send(tlv_table_mod)
        wires = {v: (f"tnd-{w.switch}", w.port) for v, w in topo.port_map.items()}

        async def send(pos):
            for c in (ovs, one) if meters else ():  # (fresh buckets: packet_out_meters.py)
                reset_meters(c)
            for in_port, acts, frame in pos:
                for c in (ovs, one):
                    c.send(_packet_out(in_port, acts, frame))
            errors = (await ovs.barrier(), await one.barrier())
            sb.settle()
            if pins:  # (the packet-ins Open vSwitch sends after the first barrier)
                errors = (errors[0] + await ovs.barrier(), errors[1] + await one.barrier())
            out = sb.take_all_output()
            theirs = Counter((p, f) for p in PORTS for f in out.get((br, p), []))
            ours = Counter((v, f) for v, w in wires.items() for f in out.get(w, []))
            theirs.update(("packet-in", m) for m in ovs.packet_ins)
            ours.update(("packet-in", m) for m in one.packet_ins)
            ovs.packet_ins.clear()
            one.packet_ins.clear()
            for c, counts in ((ovs, theirs), (one, ours)) if meters else ():
                ask_meter_stats(c)
                await c.barrier()
                counts.update(("meter", m) for m in meter_counts(c.replies))
                c.replies.clear()
            return errors, ours, theirs
        try:
            s = 0
            was: frozenset[int] = frozenset()
            while res.packet_outs < n:
                rng = random.Random(f"po-tr:{seed}:{s}:{bundles}" + (":packet-ins" if packet_ins else "") + (":whole" if whole else "")
                                    + (":truncs" if truncs else "") + (":meters" if meters else ""))
                s += 1
                groups = [] if whole else trunc_groups(rng, PORTS) if truncs else random_groups(rng)
                groups = nsh_buckets(rng, groups, PORTS) if nsh_ttl else groups
                down = _down(rng, bundles)
                _set_admin(sb, {p: (br, p) for p in PORTS}, down, was)
                _set_admin(sb, wires, down, was)
                was = down
                for _ in range(500):  # (until the endpoint has seen every port's PORT_STATUS)
                    if all(ep.state.port_live(v) == (v not in down) for v in PORTS):
                        break
                    await asyncio.sleep(0.01)
                for c in (ovs, one) if packet_ins else ():
                    packet_in_format(c, s - 1)
                for c in (ovs, one):
                    c.send(lambda x: M.encode_group_mod(x, "delete", Group(M.OFPG_ALL)))
                    for g in groups:
                        c.send(lambda x, g=g: M.encode_group_mod(x, "add", g))
                pos = [random_packet_out(rng, [g.group_id for g in groups], bundles=bundles, packet_ins=packet_ins,
                                         truncs=truncs, nsh_ttl=nsh_ttl, encap=encap) for _ in range(batch)]
                if whole:  # (sent whole to the host: packet_out_whole.py)
                    from tandem.testing.packet_out_whole import random_whole_packet_out

                    pos = [random_whole_packet_out(rng, PORTS, tun=whole_tun) for _ in range(batch)]
                if table:  # (packet_out_table.py)
                    from tandem.rules.ir import FlowMod
                    from tandem.rules.ofctl import parse_rule
                    from tandem.testing.packet_out_table import random_continued, random_table_rules, with_table

                    rules = random_table_rules(rng, PORTS, state=continued)
                    for c in (ovs, one):
                        c.send(lambda x: M.encode_flow_mod(x, FlowMod("delete", parse_rule("actions=drop"),
                                                                      all_tables=True)))
                        for r in rules:
                            c.send(lambda x, r=r: M.encode_flow_mod(x, FlowMod("add", parse_rule(r))))
                    pos = [(i, random_continued(rng, PORTS, f) if continued else with_table(rng, acts), f) for i, acts, f in pos]
                    res.tables += len(pos)
                if meters:
                    pos = [(i, with_meters(rng, acts), f) for i, acts, f in pos]
                    res.metered += sum(metered_actions(acts) for _, acts, _ in pos)
                if output_regs:  # (packet_out_output_reg.py)
                    pos = [(i, with_field_output_regs(rng, acts, f), f) for i, acts, f in pos]
                t0 = time.monotonic()
                errors, ours, theirs = await send(pos)
                slow = meters and time.monotonic() - t0 > SLOW_S
                res.slow += slow
                res.count(pos, sum(v for k, v in theirs.items() if k[0] not in ("packet-in", "meter")))
                res.packet_ins += sum(v for k, v in theirs.items() if k[0] == "packet-in")
                res.nx_packet_ins += sum(v for k, v in theirs.items() if k[0] == "packet-in" and k[1][1] != W.OFPT_PACKET_IN)
                if errors != ([], []) or ours != theirs:
                    for po in pos:  # (one at a time, to name the PACKET_OUTs that differ)
                        errors, ours, theirs = await send([po])
                        if errors != ([], []) or ours != theirs:
                            res.mismatches.append(f"set {s - 1}{' (slow)' if slow else ''}: errors (ovs, oneswitch) {errors}\n  "
                                                  + _show([po], sorted(ours - theirs, key=repr), sorted(theirs - ours, key=repr)))
        finally:
            one.close()
            ovs.close()
            await ep.close()
            await backend.close()

    asyncio.run(go())
    return res
