"""The OneSwitch oracle for rules that learn, or output to NORMAL.

A random learning rule set (generate_learn.py) is translated the way the endpoint
does it (the ports the rules need on the host extended first, then each rule), and
loaded on the physical bridges and on one reference bridge of an ``OvsSandbox``.
Traffic goes in one packet at a time, the datapath's flows deleted after each, so
every packet is translated against the tables as the packets before it left them
(a cached datapath flow from before a flow was learned would otherwise decide
some packets on one side and not on the other); every frame leaving every virtual
port must equal what the reference bridge sends. Learned flows are compared too:
the host's learned flows, their ports mapped back to virtual numbers, must be the
reference bridge's (``learned_flows``). Then a share of the learning rules is
deleted on both sides and more traffic runs (learned flows outlive their rules
unless ``delete_learned``; the ports stay on the host).

Used by tests/oneswitch/test_learn_oracle.py and ``tandem bench learn_oracle``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import extend, one_switch, ports_to_extend
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology
from tandem.rules.generate_learn import learn_ruleset, learn_traffic
from tandem.rules.generate_normal import normal_ruleset, normal_traffic
from tandem.rules.ir import FlowMod, GroupAction, Rule
from tandem.testing.oneswitch_oracle import Oracle, OracleReport


# The topologies the tests and ``tandem bench learn_oracle`` use: a host with two sNICs, and a chain
TOPOS = {
    "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                         [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                         {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1", 5: "snic1:2"}),
    "chain": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:10", "s0:10"), ("s0:11", "s1:10")],
                            {1: "h:1", 2: "s0:1", 3: "s1:1", 4: "s1:2"}),
}


@dataclass
class LearnReport:
    rules: int = 0
    learning_rules: int = 0
    traffic: OracleReport = field(default_factory=OracleReport)
    learned_ref: int = 0  # flows the reference bridge learned (at the end)
    learned_mismatches: list[str] = field(default_factory=list)
    group_rules: int = 0  # rules that apply a group (a ruleset that returns groups: generate_bucket_learn.py)


def with_groups(drawn) -> tuple[list[Rule], list]:
    """A rule set generator's result as (rules, groups): some return both."""
    return drawn if isinstance(drawn, tuple) else (drawn, [])


def build(topo: Topology, rules: list[Rule], groups: list = ()) -> tuple[OneSwitchState, list]:
    """The endpoint's order: the groups, then for each rule the ports it needs extended
    first, then the rule."""
    state = OneSwitchState(topo)
    steps = state.set_groups(groups).steps if groups else []
    for r in rules:
        for plan in extend(state, ports_to_extend(state, r)):
            steps += plan.steps
        steps += state.apply(FlowMod("add", r)).steps
    return state, steps


def _run_packets(o: Oracle, sb: OvsSandbox, packets, total: OracleReport) -> None:
    for p in packets:
        r = o.compare([p])
        sb.appctl("dpctl/del-flows")
        total.packets += r.packets
        total.outputs += r.outputs
        total.mismatches += r.mismatches
        total.expected_by_port.update(r.expected_by_port)


_STATS = re.compile(r"(cookie=\S+, )?duration=[^,]*, (table=\d+, )?n_packets=\d+, n_bytes=\d+, "
                    r"(idle_timeout=\d+, )?(hard_timeout=\d+, )?(idle_age=\d+, )?(hard_age=\d+, )?")


def flow_lines(sb: OvsSandbox, bridge: str) -> list[str]:
    """``bridge``'s flows as ovs-ofctl dumps them, counters dropped."""
    out = []
    for line in sb.ofctl("dump-flows", bridge, "--no-stats").splitlines():
        line = line.strip()
        if line and not line.startswith(("OFPST", "NXST")):
            out.append(_STATS.sub("", line))
    return out


def learned_flows(sb: OvsSandbox, bridge: str, known: set[str], ports: dict[int, int]) -> list[str]:
    """The flows of ``bridge`` not in ``known`` (``flow_lines`` of its rule set), with
    ``in_port=P`` / ``output:P`` written with the virtual port ``ports[P]`` (``?P`` if
    P is no virtual port's number there)."""
    return sorted(re.sub(r"\b(in_port=|output:)(\d+)",
                         lambda m: f"{m.group(1)}{ports.get(int(m.group(2)), '?' + m.group(2))}", line)
                  for line in flow_lines(sb, bridge) if line not in known)


def run_learn_oracle(topo: Topology, seed: int, n_rules: int, n_packets: int, delete_share: float = 0.3,
                     normal: bool = False, ruleset=None) -> LearnReport:
    """``normal``: rules that output to NORMAL (generate_normal.py) instead of learning
    rules, on bridges whose PCIe link ports are no-flood as the OVS backend makes them;
    ``learning_rules`` then counts the rules that output to NORMAL. ``ruleset``: the
    rule set's generator instead of ``learn_ruleset`` / ``normal_ruleset`` (same arguments)."""
    rng = random.Random(seed)
    ports = sorted(topo.port_map)
    rules, groups = with_groups((ruleset or (normal_ruleset if normal else learn_ruleset))(rng, n_rules, ports))
    traffic = normal_traffic if normal else learn_traffic
    state, steps = build(topo, rules, groups)
    report = LearnReport(rules=len(rules), learning_rules=sum(1 for r in rules if one_switch(r)),
                         group_rules=sum(1 for r in rules if any(type(a) is GroupAction for a in r.apply_actions)))
    with OvsSandbox() as sb, Oracle(sb, topo) as o:
        for link in topo.links:  # (backends/ovs.py does the same)
            sb.no_flood(o.bridge[link.a.switch], [link.a.port])
            sb.no_flood(o.bridge[link.b.switch], [link.b.port])
        o.load_virtual(rules, groups)
        o.load_translation(OneSwitchState(topo).translation())
        for step in steps:
            o.apply_step(step)
        for v, e in state.extensions.items():
            o.remap(v, e.hosted)
        host = o.bridge[topo.host]
        known_host, known_ref = set(flow_lines(sb, host)), set(flow_lines(sb, o.ref))
        _run_packets(o, sb, traffic(rng, ports, n_packets // 2), report.traffic)
        doomed = [r for r in rules if r.table == 0 and r.priority and rng.random() < delete_share]
        for r in doomed:
            mod = FlowMod("delete_strict", r)
            o.apply_virtual(mod, o.ref)
            for step in state.apply(mod).steps:
                o.apply_step(step)
        _run_packets(o, sb, traffic(rng, ports, n_packets - n_packets // 2), report.traffic)
        back = {ref.port: v for v, ref in topo.port_map.items() if ref.switch == topo.host}
        back.update({e.hosted.port: v for v, e in state.extensions.items()})
        got = learned_flows(sb, host, known_host, back)
        want = learned_flows(sb, o.ref, known_ref, {v: v for v in ports})
        report.learned_ref = len(want)
        report.learned_mismatches = [f"only on the host: {x}" for x in sorted(set(got) - set(want))] + \
                                    [f"only on the reference: {x}" for x in sorted(set(want) - set(got))]
    return report
