"""Differential oracle for `tandem run`: the whole emulated machine vs one OVS bridge.

Inputs: a scenario, a placement, its virtual rules and frames to send in at
external virtual ports (sNIC Ethernet and VM ports). The emulated side is what
`tandem run` builds (``build_from_scenario``, rule-driven: OneSwitch-translated
rules in dp-core pipelines on host and sNICs, PCIe, NFs on their devices,
timing and all) with the scenario's traffic sources replaced by the given
frames, injected 50 µs apart and captured where they leave each external
port. The reference is one real Open vSwitch bridge whose OpenFlow ports are
the virtual ports, holding the virtual rules, with every NF a pass-through:
its ``in`` and ``out`` virtual ports are patch ports to a bridge of its own
that wires them together both ways (what leaves by one comes back in by the
other, as the emulator's pass-through NF does). ``compare`` reports, per external port,
the multisets of frames from both.

``random_case`` makes the seeded random scenarios of the acceptance test and
bench: 1-2 sNICs, 1-2 VMs, 2-4 two-port NFs at random places, and >= N random
virtual rules (every match/action feature of ``tandem.rules.generate``)
arranged so no frame loops: table 0 sends what enters an external port to
stage 0 and what leaves NF i to stage i+1 (each stage its own tables), and
stage s outputs only to external ports and to NFs after it (and to port
numbers no port has, which send nothing). ``last_tables`` puts the stages in
the last tables Open vSwitch offers (up to 253, some gotos to its own 254),
``features`` adds generator features (``action_sets``: groups and outputs
written in different tables). Used by tests/emu/test_run_oracle.py and
benches/run_oracle.py.
State: none (the sandbox belongs to the caller). Cost: one emulator run and
one bridge per case.
"""

from __future__ import annotations

import random
import struct
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from tandem.rules.ir import Group, Rule

GAP_S = 50e-6
STAGE_TABLES = 3


@dataclass
class PortDiff:
    port: int
    name: str
    missing: list[bytes]  # the reference sent these, the run did not
    extra: list[bytes]  # the run sent these, the reference did not


@dataclass
class RunOracleReport:
    packets: int = 0
    frames_out: int = 0  # frames that left external ports (reference count)
    two_tags: int = 0  # of those, frames that left with two or more VLAN tags
    ports: int = 0
    diffs: list[PortDiff] = field(default_factory=list)

    @property
    def mismatches(self) -> int:
        return sum(len(d.missing) + len(d.extra) for d in self.diffs)


def _read_pcap(path: Path) -> list[bytes]:
    if not path.exists():
        return []
    data = path.read_bytes()
    frames, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack("<I", data[off + 8: off + 12])[0]
        frames.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return frames


def emulate(sc, placement: dict[str, str], rules: Sequence[Rule], groups: Sequence[Group],
            packets: Sequence[tuple[int, bytes]]) -> dict[int, list[bytes]]:
    """Frames leaving each external virtual port of the rule-driven emulated machine."""
    from tandem.emu.scenario import build_from_scenario
    from tandem.oneswitch.scenario import virtual_ports

    # The reference wires each NF's two ports together, so the NFs run as their cost
    # model only (a real NF - SECGW, L7FW, ... - would decrypt, block or rewrite frames).
    as_wires = {k: t.model_copy(update={"type": None, "config": {}}) for k, t in sc.nf_types.items()}
    quiet = sc.model_copy(update={"traffic": {}, "nf_types": as_wires})
    vp = virtual_ports(sc)
    m, b = build_from_scenario(quiet, placement=placement, rules=list(rules), groups=list(groups))
    ext = {v: n for n, v in vp.number.items() if vp.kind[n] != "nf"}
    where = {**b.eth_ports, **b.vm_ports}
    with tempfile.TemporaryDirectory(prefix="tandem-run-oracle-") as tmp:
        for v, name in ext.items():
            dev, port = where[name]
            m.capture(dev, port, str(Path(tmp) / f"{v}.pcap"))
        for i, (v, frame) in enumerate(packets):
            dev, port = where[ext[v]]
            m.emu.inject(("switch", m.devices[dev], port), bytes(frame), (i + 1) * GAP_S * 1e9)
        m.run((len(packets) + 20) * GAP_S + 0.01)
        del m
        return {v: _read_pcap(Path(tmp) / f"{v}.pcap") for v in ext}


def reference(sb, sc, rules: Sequence[Rule], groups: Sequence[Group], packets: Sequence[tuple[int, bytes]],
              bridge: str = "vref") -> dict[int, list[bytes]]:
    """Frames leaving each external virtual port of one OVS bridge holding the virtual
    rules, NFs as pass-through patch pairs. ``sb``: an OvsSandbox."""
    from tandem.oneswitch.scenario import virtual_ports
    from tandem.rules.ofctl import format_group, format_rule

    vp = virtual_ports(sc)
    ext = sorted(vp.external())
    sb.add_bridge(bridge, ext)
    nf_bridges = []
    try:
        for k, (nf, (i, o)) in enumerate(vp.nf.items()):
            if i == o:
                raise ValueError(f"NF {nf}: the OVS reference models two-port NFs only")
            # the NF: a bridge of its own wiring its two ports together, both ways
            nb = f"{bridge}n{k}"
            sb.add_bridge(nb)
            nf_bridges.append(nb)
            sb.add_patch(bridge, i, nb, 1)
            sb.add_patch(bridge, o, nb, 2)
            sb.add_flows(nb, ["in_port=1,actions=output:2", "in_port=2,actions=output:1"])
        if groups:
            sb.add_groups(bridge, [format_group(g) for g in groups])
        if rules:
            sb.add_flows(bridge, [format_rule(r) for r in rules])
        by_port: dict[int, list[bytes]] = {}
        for v, frame in packets:
            by_port.setdefault(v, []).append(frame)
        for v, frames in by_port.items():
            sb.inject(bridge, v, frames)
        sb.settle(quiet_s=0.1)
        return {v: sb.take_output(bridge, v) for v in ext}
    finally:
        for b in [bridge, *nf_bridges]:
            sb.del_bridge(b)


def compare(sb, sc, placement: dict[str, str], rules: Sequence[Rule], groups: Sequence[Group],
            packets: Sequence[tuple[int, bytes]], bridge: str = "vref") -> RunOracleReport:
    from tandem.oneswitch.scenario import virtual_ports

    ours = emulate(sc, placement, rules, groups, packets)
    ref = reference(sb, sc, rules, groups, packets, bridge)
    names = virtual_ports(sc).name
    rep = RunOracleReport(len(packets), sum(len(v) for v in ref.values()), ports=len(ref),
                          two_tags=sum(_vlan_tags(f) >= 2 for v in ref.values() for f in v))
    for v in sorted(ref):
        a, b = Counter(ref[v]), Counter(ours.get(v, []))
        if a != b:
            rep.diffs.append(PortDiff(v, names[v], list((a - b).elements()), list((b - a).elements())))
    return rep


def _vlan_tags(frame: bytes) -> int:
    n, off = 0, 12
    while frame[off:off + 2] in (b"\x81\x00", b"\x88\xa8"):
        n, off = n + 1, off + 4
    return n


# ---------------------------------------------------------------- random cases

_RESERVED_OUT = None  # filled lazily (ports a random rule may not output to)


def _scenario_text(rng: random.Random, name: str) -> tuple[str, list[str]]:
    n_snic, n_vm, n_nf = rng.randint(1, 2), rng.randint(1, 2), rng.randint(2, 4)
    lines = [f"name: {name}", "devices:", "  host: {kind: host, cores: 8, clock: 2.7GHz}"]
    for s in range(n_snic):
        lines.append(f"  snic{s}: {{kind: snic, cores: 16, clock: 1.2GHz, ports: {{eth0: {{rate: 10Gbps}}, eth1: {{rate: 10Gbps}}}}}}")
    lines.append("links:")
    for s in range(n_snic):
        lines.append(f"  pcie{s}: {{snic: snic{s}}}")
    lines += ["nf_types:", "  pt: {cost: {host: {cycles_per_packet: 300, cores_per_gbps: 0.1},"
              " snic: {cycles_per_packet: 600, cores_per_gbps: 0.2}}}", "instances:"]
    nfs = [f"nf{i}" for i in range(n_nf)]
    for n in nfs:
        lines.append(f"  {n}: {{kind: nf, type: pt}}")
    for v in range(n_vm):
        lines.append(f"  vm{v}: {{kind: vm}}")
    order = nfs[:]
    rng.shuffle(order)
    lines += ["chains:", f"  c0: {{nfs: [{', '.join(order)}], ingress: snic0.eth0, egress: vm0}}",
              "run: {placement: pinned}"]
    devices = ["host"] + [f"snic{s}" for s in range(n_snic)]
    return "\n".join(lines) + "\n", [rng.choice(devices) for _ in nfs]


_NO_PORTS = (0, 77, 0xFEFF)  # port numbers no port of a random case has: an output there sends nothing


def _sanitize(actions: tuple, allowed: Sequence[int], rng: random.Random) -> tuple:
    """Outputs only to `allowed` ports or to no port (FLOOD/ALL/IN_PORT/... could send a
    frame back into an earlier NF and loop; CONTROLLER outputs reach no port on either
    side); everything else unchanged."""
    from tandem.rules.ir import Output

    out = []
    for a in actions:
        if isinstance(a, Output) and a.port not in allowed and a.port not in _NO_PORTS:
            a = Output(rng.choice(list(allowed)))
        out.append(a)
    return tuple(out)


def _restage(r: Rule, base: int, allowed: Sequence[int], rng: random.Random, hidden: bool = False) -> Rule:
    """``r`` in stage tables from ``base``; ``hidden``: a rule of the stage's last table
    goes on to Open vSwitch's own table 254 three times in ten (it drops there, after
    running the packet's action set)."""
    from tandem.rules.ir import ApplyActions, GotoTable, WriteActions

    ins = []
    for i in r.instructions:
        if isinstance(i, ApplyActions):
            i = ApplyActions(_sanitize(i.actions, allowed, rng))
        elif isinstance(i, WriteActions):
            i = WriteActions(_sanitize(i.actions, allowed, rng))
        elif isinstance(i, GotoTable):
            i = GotoTable(i.table + base)
        ins.append(i)
    if hidden and r.table == STAGE_TABLES - 1 and rng.random() < 0.3:
        ins.append(GotoTable(254))
    match = r.match.without("in_port") if "in_port" in r.match else r.match
    return Rule(match, tuple(ins), r.table + base, r.priority, r.cookie)


def _is_mpls(frame: bytes) -> bool:
    off = 12
    while frame[off:off + 2] in (b"\x81\x00", b"\x88\xa8"):
        off += 4
    return frame[off:off + 2] in (b"\x88\x47", b"\x88\x48")


def random_case(seed: int, n_rules: int = 500, per_port: int = 40, last_tables: bool = False,
                features: frozenset[str] = frozenset()):
    """(scenario, placement, rules, groups, packets) of one seeded random case."""
    from tandem.model.load import parse_scenario_text
    from tandem.oneswitch.scenario import derive_topology, virtual_ports
    from tandem.oneswitch.translate import Compiler, TranslationError
    from tandem.rules.generate import ALL_FEATURES, random_groups, random_ruleset
    from tandem.rules.ir import ApplyActions, Bucket, GotoTable, Match
    from tandem.rules.packets import random_frame

    rng = random.Random(seed)
    text, where = _scenario_text(rng, f"random-{seed}")
    sc = parse_scenario_text(text, f"<random {seed}>")
    placement = dict(zip(sc.nfs(), where))
    vp = virtual_ports(sc)
    ext = sorted(vp.external())
    chain = list(sc.chains["c0"].nfs)
    groups = []
    for g in random_groups(rng, 3, ext):
        # select: which bucket a frame takes is the switch's own choice (OVS hashes, dp-core
        # too, differently); fast-failover watches liveness: both become all-groups
        kind = "all" if g.type in ("fast_failover", "select") else g.type
        groups.append(Group(g.group_id, kind, tuple(Bucket(_sanitize(b.actions, ext, rng), b.weight) for b in g.buckets)))
    topo = derive_topology(sc, placement, vp)
    comp = Compiler(topo, groups=groups)
    rules: list[Rule] = []

    def keep(r: Rule) -> bool:
        try:
            comp.add(r)
        except TranslationError:
            return False
        rules.append(r)
        return True

    # table 0: where a frame entered picks its stage
    stage_in = [(None, 0)] + [(vp.nf[n][1], i + 1) for i, n in enumerate(chain)]
    first = 254 - len(stage_in) * STAGE_TABLES if last_tables else 1  # the last stage ends in 253
    for port, s in stage_in:
        base = first + s * STAGE_TABLES
        if port is None:
            for e in ext:
                keep(Rule(Match.of(in_port=e), (GotoTable(base),), 0, 1000))
        else:
            keep(Rule(Match.of(in_port=port), (GotoTable(base),), 0, 1000))
    stages = len(stage_in)
    per_stage = max(1, (n_rules + stages - 1) // stages)
    for s in range(stages):
        base = first + s * STAGE_TABLES
        allowed = ext + [vp.nf[n][0] for n in chain[s:]]
        # VLAN push/pop in every stage: a frame an NF hands back with two tags crosses PCIe
        # whole (the flow id is the packet mark, docs/oneswitch.md §2).
        # No MPLS: Open vSwitch recirculates MPLS frames, and recirculation through the NF
        # patch pairs on one bridge misroutes them or trips an assertion in ovs-vswitchd
        # (the reference, not Tandem, is wrong there; see tandem.testing.oneswitch_oracle for MPLS).
        feats = (ALL_FEATURES | features) - {"mpls"}
        have = 0
        while have < per_stage:
            for r in random_ruleset(rng, per_stage - have, allowed, STAGE_TABLES, feats, groups=[g.group_id for g in groups]):
                if have < per_stage and keep(_restage(r, base, allowed, rng, last_tables)):
                    have += 1
    hints = [r for r in rules if r.table > 0]
    packets = []
    for v in ext:
        while sum(p == v for p, _ in packets) < per_port:
            f = random_frame(rng, hints)
            if not _is_mpls(f):
                packets.append((v, f))
    rng.shuffle(packets)
    return sc, placement, rules, groups, packets


def scenario_packets(sc, rules: Sequence[Rule], seed: int = 1, per_port: int = 30) -> list[tuple[int, bytes]]:
    """Frames for an example scenario: at each external port, UDP and TCP frames shaped
    like the emulator's generated traffic (source i: 10.<i+1>.0.1, source ports 10000+)
    and random frames biased to hit the rules."""
    from tandem.oneswitch.scenario import virtual_ports
    from tandem.rules.packets import build_frame, random_frame

    rng = random.Random(seed)
    vp = virtual_ports(sc)
    out = []
    for v in sorted(vp.external()):
        for k in range(per_port):
            if k % 3 == 2:
                out.append((v, random_frame(rng, list(rules) or None)))
                continue
            i = rng.randrange(max(1, len(sc.traffic)))
            fields = {"eth_type": 0x0800, "ipv4_src": (10 << 24) | ((i + 1) << 16) | 1, "ipv4_dst": (10 << 24) | 0xFF01,
                      "ip_proto": rng.choice((6, 17))}
            l4 = "udp" if fields["ip_proto"] == 17 else "tcp"
            fields[f"{l4}_src"] = 10000 + rng.randrange(50000)
            fields[f"{l4}_dst"] = 80
            out.append((v, build_frame(**fields, payload=bytes(rng.randrange(0, 64)))))
    rng.shuffle(out)
    return out
