"""The emulator's switch (dp-core) against one Open vSwitch bridge, for rules that learn.

A random learning rule set (generate_learn.py) is loaded on one OVS bridge
(``OvsOracle``'s ``br-oracle``) and on a dp-core ``Switch``; traffic goes in one
packet at a time, the datapath's flows deleted after each (so every packet is
translated against the tables as the packets before it left them), and the
frames every port sends must be equal. At the end the learned flows must be
equal too: the bridge's flows beyond its rule set, read back with
``parse_dumped_flow``, against dp-core's ``learned_flows``, both printed by
``format_rule`` (match, priority, cookie, timeouts, actions). Midway a share of
the learning rules is deleted on both sides (``delete_learned`` flushes).

Used by tests/oneswitch/test_learn_oracle.py and ``tandem bench learn_oracle --dp``.
State: the sandbox bridge. Cost: one OVS round trip per packet.
"""

from __future__ import annotations

import random
from collections import Counter

from tandem.dataplane.convert import learned_rule
from tandem.dataplane.switch import Switch
from tandem.rules.generate_learn import LEARN_TABLES, learn_ruleset, learn_traffic
from tandem.rules.ir import ApplyActions, FlowMod, GroupAction, Rule, SetField
from tandem.rules.ofctl import format_rule, parse_dumped_flow
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.learn_oracle import LearnReport, flow_lines, with_groups
from tandem.testing.oneswitch_oracle import OracleReport

N_TABLES = max(LEARN_TABLES) + 1


def dp_learned(sw: Switch) -> list[str]:
    """dp-core's learned flows as ``format_rule`` prints them."""
    return sorted(format_rule(learned_rule(t)[0]) for t in sw.pipeline.learned_flows())


def ovs_learned(lines: list[str], known: set[str]) -> list[str]:
    """The flows of a dump (``flow_lines``) not in ``known``, as ``format_rule`` prints them."""
    return sorted(format_rule(_loads_masked(parse_dumped_flow(x))) for x in lines if x not in known)


def _loads_masked(rule: Rule) -> Rule:
    """A learned flow's whole-field ``load`` as dp-core holds it (a set_field with a full mask)."""
    from tandem.rules.ir import FIELDS
    ins = []
    for i in rule.instructions:
        if isinstance(i, ApplyActions):
            i = ApplyActions(tuple(SetField(a.field, a.value, (1 << FIELDS[a.field].bits) - 1)
                                   if isinstance(a, SetField) and a.mask is None else a for a in i.actions))
        ins.append(i)
    return Rule(rule.match, tuple(ins), rule.table, rule.priority, rule.cookie, rule.idle_timeout, rule.hard_timeout)


def _run(o: OvsOracle, sw: Switch, packets, rep: OracleReport) -> None:
    for in_port, frame in packets:
        ours = {p: [] for p in o.ports}
        for port, out in sw.process(in_port, frame):
            ours[port].append(out)
        theirs = o._send([(in_port, frame)], sum(len(v) for v in ours.values()))
        o.sb.appctl("dpctl/del-flows")
        rep.packets += 1
        rep.outputs += sum(len(v) for v in ours.values())
        if any(Counter(ours[p]) != Counter(theirs[p]) for p in o.ports):
            rep.mismatches.append(f"packet {rep.packets} in_port {in_port} {frame.hex()}: dp-core {ours} OVS {theirs}")


def run_learn_dp_oracle(sb, seed: int, n_rules: int, n_packets: int, delete_share: float = 0.3,
                        ports=(1, 2, 3, 4, 5), ruleset=None) -> LearnReport:
    """One rule set (``ruleset``: its generator instead of ``learn_ruleset``);
    ``report.traffic.mismatches`` describes the packets that differ."""
    rng = random.Random(seed)
    ports = list(ports)
    rules, groups = with_groups((ruleset or learn_ruleset)(rng, n_rules, ports))
    o = OvsOracle(sb, ports) if OvsOracle.BRIDGE not in sb.bridges else _reuse(sb, ports)
    o._load(rules, groups)
    sb.appctl("dpctl/del-flows")
    sw = Switch(ports, N_TABLES, drop_malformed=False)
    sw.add_groups(groups)
    sw.add_rules(rules)
    report = LearnReport(rules=len(rules), learning_rules=sum(1 for r in rules if _learns(r)),
                         group_rules=sum(1 for r in rules if any(type(a) is GroupAction for a in r.apply_actions)))
    known = set(flow_lines(sb, o.BRIDGE))
    _run(o, sw, learn_traffic(rng, ports, n_packets // 2), report.traffic)
    for r in [r for r in rules if r.table == 0 and r.priority and rng.random() < delete_share]:
        fm = FlowMod("delete_strict", r)
        sb.ofctl("del-flows", o.BRIDGE, "--strict", format_rule(Rule(r.match, (), r.table, r.priority)).split(",actions=")[0])
        sw.flow_mod(fm)
        known.discard(next((x for x in known if _same_rule(x, r)), ""))
    _run(o, sw, learn_traffic(rng, ports, n_packets - n_packets // 2), report.traffic)
    want = ovs_learned(flow_lines(sb, o.BRIDGE), known)
    got = dp_learned(sw)
    report.learned_ref = len(want)
    report.learned_mismatches = [f"only in dp-core: {x}" for x in sorted(set(got) - set(want))] + \
                                [f"only in OVS: {x}" for x in sorted(set(want) - set(got))]
    return report


def _learns(rule: Rule) -> bool:
    from tandem.oneswitch.clone_translate import learns
    return bool(learns(rule.apply_actions))  # (in clones too)


def _same_rule(line: str, rule: Rule) -> bool:
    try:
        return format_rule(parse_dumped_flow(line)) == format_rule(rule)
    except ValueError:
        return False


def _reuse(sb, ports) -> OvsOracle:
    o = OvsOracle.__new__(OvsOracle)
    o.sb, o.ports = sb, list(ports)
    return o
