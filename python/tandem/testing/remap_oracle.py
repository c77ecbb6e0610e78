"""OneSwitch port remaps on real OVS, checked by the packet oracle after every step.

An NF's virtual port moves back and forth between the host switch and an
sNIC switch (``OneSwitchState.remap``); each remap's consistent-update plan is
applied step by step to the **OVS backend's** bridges (``backends/ovs.py``:
FLOW_MODs and GROUP_MODs over OpenFlow, a barrier per switch per step).
After every step the oracle (``oneswitch_oracle.Oracle``) injects the test
packets at every virtual port — the moving port's packets at its old and/or
new location, as the plan allows at that point — into the physical bridges
and into a reference bridge holding the virtual rules, and compares what
leaves each virtual port. Frames leaving the port's old or new location both
count as leaving it, so a packet delivered to neither is *lost* and one
delivered to both (or twice) is *duplicated*.

Used by ``tests/oneswitch/test_remap_oracle.py`` and ``tandem bench
remap_oracle``. State: the sandbox bridges it built (removed at the end).
Cost: one packet injection round per plan step.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from tandem.backends.base import PhysicalLayout, PhysicalLink
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.plan import PhysicalOp
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets


@dataclass
class RemapReport:
    rules: int = 0  # random virtual rules (plus the NF port's steering rules)
    remaps: int = 0
    steps: int = 0  # plan steps applied (over all remaps)
    checks: int = 0  # oracle runs (one per state: before the first step and after each)
    packets: int = 0  # packet injections compared (a packet entering at two locations counts twice)
    to_port: int = 0  # frames the virtual switch sends to the moving port (summed over checks)
    outputs: int = 0  # frames that left virtual ports
    lost: int = 0  # a frame for the moving port that left at neither location
    duplicated: int = 0  # a frame for the moving port that left more often than the virtual switch sends it
    other_mismatches: int = 0  # any other difference from the virtual switch
    redrawn: int = 0  # random rules the translator refuses at the port's other location (redrawn)
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0


def default_topology() -> Topology:
    """Host + two sNICs; virtual port 5 is the NF port that moves (host:5 <-> snic0:5)."""
    return Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                          [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                          {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1", 5: "host:5"})


class _BackendOracle(Oracle):
    """The oracle with its physical bridges built and programmed by ``OvsBackend``."""

    def __init__(self, sb: OvsSandbox, topo: Topology, spare: dict[str, list[int]]) -> None:
        # reference bridge only: physical bridges come from the backend
        Oracle.__init__(self, sb, _no_switches(topo), {})
        self.topo = topo
        self.loop = asyncio.new_event_loop()
        ext: dict[str, set[int]] = {s: set(spare.get(s, ())) for s in topo.switch_names}
        for ref in topo.port_map.values():
            ext[ref.switch].add(ref.port)
        links = tuple(PhysicalLink(ln.a.switch, ln.a.port, ln.b.switch, ln.b.port) for ln in topo.links)
        layout = PhysicalLayout({s: tuple(sorted(p)) for s, p in ext.items()}, links)
        self.backend = OvsBackend(sandbox=sb, bridge_prefix=f"rm{self._n}")
        self.loop.run_until_complete(self.backend.start(layout))
        self.bridge = {s: self.backend.bridge_name(s) for s in topo.switch_names}
        self.locations = {v: {ref} for v, ref in topo.port_map.items()}
        self.capture_host_local()

    def apply_step(self, step: list[PhysicalOp]) -> None:  # type: ignore[override]
        if step:
            self.loop.run_until_complete(self.backend.apply(step))

    def load_ops(self, ops: list[PhysicalOp]) -> None:
        self.apply_step(ops)

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.backend.close())
        finally:
            self.loop.close()
            for br in self.bridge.values():
                self.sb.bridges.pop(br, None)
            for b in self.refs:
                self.sb.del_bridge(b)


def _no_switches(topo: Topology) -> Topology:
    """A stand-in with no physical switches for Oracle.__init__ (which would build them)."""
    class _T:
        port_map = topo.port_map
        switch_names: list[str] = []
        links: list = []

        def local_vports(self, s: str) -> list[int]:
            return []
    return _T()  # type: ignore[return-value]


def run_remap_oracle(sb: OvsSandbox, n_rules: int = 1000, n_remaps: int = 10, seed: int = 16, per_port: int = 20,
                     topo: Topology | None = None, vport: int = 5, away: str = "snic0:5",
                     progress=None, reverse_steps: bool = False) -> RemapReport:
    """``n_remaps`` moves of ``vport`` between its home and ``away`` on ``n_rules``
    random virtual rules, the oracle after every plan step (see module doc).
    ``reverse_steps`` applies each plan's steps in reverse order (deletes first):
    a broken update, for checking that the oracle catches one."""
    t0 = time.perf_counter()
    topo = topo or default_topology()
    home, other = topo.port_map[vport], PortRef.parse(away)
    rng = random.Random(seed)
    rules, groups, redrawn = remappable_ruleset(rng, n_rules, topo, vport, other)
    rules = steering_rules(topo, vport) + rules
    state = OneSwitchState(topo, groups)
    init: list[PhysicalOp] = []
    for r in rules:
        plan = state.apply(FlowMod("add", r))
        for step in plan.steps:
            init += step
    packets = random_packets(rng, rules, topo, per_port=per_port)
    packets += aimed_packets(rng, topo, vport, per_port)
    rep = RemapReport(rules=n_rules, redrawn=redrawn)
    spare = {other.switch: [other.port]} if other.switch != home.switch else {home.switch: [other.port]}
    o = _BackendOracle(sb, topo, {home.switch: [home.port], **spare})
    try:
        o.load_virtual(rules, groups)
        o.load_ops(init)
        o.locations[vport] = {home, other}
        _check(o, packets, {v: [ref] for v, ref in state.topo.port_map.items()}, vport, rep, "initial state")
        for i in range(n_remaps):
            old = state.topo.port_map[vport]
            new = other if old == home else home
            plan = state.remap(vport, new)
            if reverse_steps:
                plan.steps.reverse()
            rep.remaps += 1
            for applied in range(1, len(plan.steps) + 1):
                o.apply_step(plan.steps[applied - 1])
                rep.steps += 1
                where = {v: [ref] for v, ref in state.topo.port_map.items()}
                where[vport] = ([old] if applied <= plan.old_ingress_until else []) + \
                               ([new] if applied >= plan.new_ingress_ready else [])
                _check(o, packets, where, vport, rep, f"remap {i + 1} ({old} -> {new}) step {applied}/{len(plan.steps)}")
            if progress:
                progress(i + 1, rep)
    finally:
        o.close()
    rep.seconds = time.perf_counter() - t0
    return rep


def remappable_ruleset(rng: random.Random, n: int, topo: Topology, vport: int, other: PortRef):
    """``oracle_ruleset`` rules that translate with ``vport`` at home *and* at
    ``other`` (a rule may be placeable at one location only, e.g. one that sends
    a double-tagged frame to a group on another switch: docs/oneswitch.md §7);
    returns (rules, groups, number redrawn)."""
    from tandem.oneswitch.translate import Compiler, TranslationError, vkey

    rules, groups = oracle_ruleset(rng, n, topo, tables=3, n_groups=3)
    away = Compiler(topo.with_port(vport, other), groups=groups)
    kept, seen, redrawn = [], set(), 0
    while True:
        for r in rules:
            if len(kept) == n or vkey(r) in seen:
                continue
            try:
                away.add(r)
            except TranslationError:
                redrawn += 1
                continue
            seen.add(vkey(r))
            kept.append(r)
        if len(kept) == n:
            return kept, groups, redrawn
        more, _ = oracle_ruleset(rng, n - len(kept), topo, tables=3, n_groups=0)
        rules = more  # (drawn without groups: the first draw's group ids stay valid)


STEER_UDP = 4789


def steering_rules(topo: Topology, vport: int) -> list[Rule]:
    """The NF's chain hops, as a controller would steer traffic through it: UDP to
    port 4789 from every other virtual port goes to the NF port ``vport``
    (top priority, so the random rules below cannot shadow it), and what the NF
    sends back out of ``vport`` goes on to the lowest other port."""
    others = sorted(v for v in topo.port_map if v != vport)
    steer = Match.of(eth_type=0x0800, ip_proto=17, udp_dst=STEER_UDP)
    out = [Rule(steer.with_field("in_port", v), (ApplyActions((Output(vport),)),), priority=65535) for v in others]
    out.append(Rule(steer.with_field("in_port", vport), (ApplyActions((Output(others[0]),)),), priority=65535))
    return out


def aimed_packets(rng: random.Random, topo: Topology, vport: int, per_port: int) -> list[tuple[int, bytes]]:
    """``per_port`` steered frames (UDP to 4789, random sources and payload) per virtual port."""
    from tandem.rules.packets import build_frame

    return [(v, build_frame(eth_type=0x0800, ip_proto=17, udp_dst=STEER_UDP, udp_src=rng.randrange(1024, 65536),
                            ipv4_src=rng.getrandbits(32), payload=rng.randbytes(rng.randrange(0, 64))))
            for v in sorted(topo.port_map) for _ in range(per_port)]


def _check(o: Oracle, packets, where, vport: int, rep: RemapReport, when: str) -> None:
    report = o.compare(packets, where)
    rep.checks += 1
    rep.packets += report.packets
    rep.outputs += report.outputs
    rep.to_port += report.expected_by_port.get(vport, 0)
    for m in report.mismatches:
        want = sum(1 for p, _ in m.expected if p == vport)
        got = sum(1 for p, _ in m.got if p == vport)
        if got < want:
            rep.lost += 1
        elif got > want:
            rep.duplicated += 1
        else:
            rep.other_mismatches += 1
        if len(rep.examples) < 3:
            rep.examples.append(f"{when}: {m}")
