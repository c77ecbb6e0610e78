"""OneSwitch's translation of NORMAL rules on the emulator backend, against one
Open vSwitch bridge.

A random NORMAL rule set (generate_normal.py) goes to a OneSwitch state the way
``tandem serve --backend emu`` sends it (shared rules pinned, the ports a rule needs
on the host extended first, then the rule; every step applied to an ``EmuBackend``),
and as it is to a reference bridge of an ``OvsSandbox``. Traffic
(``normal_dp_oracle.normal_dp_traffic``) enters each virtual port's wire one packet
at a time (the emulator run for a millisecond after each; the reference bridge's
datapath flows deleted after each); the frames leaving every virtual port's wire
must be the reference bridge's. A share of the NORMAL rules is deleted on both
sides half-way. At the end the host's MAC table (dp-core's), its ports read back as
virtual ports, must hold the reference bridge's (port, VLAN, MAC) entries.

Used by tests/oneswitch/test_normal_emu_oracle.py and
``tandem bench learn_oracle --normal --emu``. State: the sandbox bridge and an
emulator. Cost: one OVS round trip and one emulator run per packet.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from tandem.backends.emu import EmuBackend
from tandem.oneswitch.endpoint import layout_for
from tandem.oneswitch.endpoint_common import plan_steps
from tandem.oneswitch.extension import extend, ports_to_extend, release, uses_normal
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology
from tandem.rules.generate_normal import normal_ruleset
from tandem.rules.ir import FlowMod, Rule
from tandem.rules.ofctl import format_rule
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.learn_oracle import LearnReport
from tandem.testing.normal_dp_oracle import fdb_text, normal_dp_traffic, ovs_fdb


def _reference(sb, ports: list[int]) -> OvsOracle:
    """The reference bridge for ``ports``, one per port set (a port the topology lacks
    would collect frames no run reads)."""
    o = OvsOracle.__new__(OvsOracle)
    o.BRIDGE = "br-nref" + "".join(map(str, ports))
    if o.BRIDGE in sb.bridges:
        o.sb, o.ports = sb, list(ports)
    else:
        OvsOracle.__init__(o, sb, ports)
    return o


async def _apply(backend: EmuBackend, plans) -> None:
    for plan in plans:
        await backend.apply_steps(plan_steps(plan))


def run_normal_emu_oracle(sb, topo: Topology, seed: int, n_rules: int, n_packets: int,
                          delete_share: float = 0.3, ruleset=normal_ruleset) -> LearnReport:
    return asyncio.run(_run(sb, topo, seed, n_rules, n_packets, delete_share, ruleset))


async def _run(sb, topo: Topology, seed: int, n_rules: int, n_packets: int, delete_share: float,
               ruleset=normal_ruleset) -> LearnReport:
    rng = random.Random(seed)
    ports = sorted(topo.port_map)
    wires = dict(topo.port_map)
    rules = ruleset(rng, n_rules, ports)  # (normal_ruleset, or generate_bundle_normal's)
    report = LearnReport(rules=len(rules), learning_rules=sum(1 for r in rules if uses_normal(r)))
    ref = _reference(sb, ports)
    sb.appctl("fdb/flush", ref.BRIDGE)
    ref._load(rules, [])
    sb.appctl("dpctl/del-flows")
    state = OneSwitchState(topo, pin_infrastructure=True)
    backend = EmuBackend(settle_s=0)
    await backend.start(layout_for(topo))
    try:
        await backend.apply_steps(state.take_plan().steps)
        for r in rules:
            await _apply(backend, extend(state, ports_to_extend(state, r)))
            await _apply(backend, [state.apply(FlowMod("add", r))])
        traffic = normal_dp_traffic(rng, ports, n_packets)
        _send(ref, backend, wires, ports, traffic[: n_packets // 2], report)
        for r in [r for r in rules if r.table == 0 and r.priority and rng.random() < delete_share]:
            head = format_rule(Rule(r.match, (), r.table, r.priority)).split(",actions=")[0]
            sb.ofctl("del-flows", ref.BRIDGE, "--strict", head)
            await _apply(backend, [state.apply(FlowMod("delete_strict", r))])
            await _apply(backend, release(state))
        _send(ref, backend, wires, ports, traffic[n_packets // 2:], report)
        host = backend._dev(topo.host)
        back = {ref_.port: v for v, ref_ in state.topo.port_map.items() if ref_.switch == topo.host}
        got = sorted((back.get(p, -p), vlan, mac) for p, vlan, mac, _ in backend.machine.emu.switch_mac_entries(host))
        want = sorted(ovs_fdb(sb, ref.BRIDGE))
        report.learned_ref = len(want)
        if got != want:
            report.learned_mismatches.append(f"host (as virtual ports) {fdb_text(got)} reference {fdb_text(want)}")
    finally:
        await backend.close()
    return report


def _send(ref: OvsOracle, backend: EmuBackend, wires, ports, packets, report: LearnReport) -> None:
    rep = report.traffic
    for in_port, frame in packets:
        w = wires[in_port]
        backend.inject(w.switch, w.port, frame)
        backend.run_for(1e-3)
        ours = {v: backend.take_output(wires[v].switch, wires[v].port) for v in ports}
        theirs = ref._send([(in_port, frame)], sum(len(x) for x in ours.values()))
        ref.sb.appctl("dpctl/del-flows")
        rep.packets += 1
        rep.outputs += sum(len(x) for x in ours.values())
        for v in ports:
            if ours[v]:
                rep.expected_by_port[v] += len(ours[v])
        if any(Counter(ours[v]) != Counter(theirs[v]) for v in ports):
            rep.mismatches.append(f"packet {rep.packets} in_port {in_port} {frame.hex()}: emu {ours} OVS {theirs}")
