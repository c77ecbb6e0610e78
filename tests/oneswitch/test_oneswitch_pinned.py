"""Pinned shared rules (``OneSwitchState(pin_infrastructure=True)``, what `tandem serve`
uses): every FLOW_MOD that outputs to virtual ports is a one-step plan, deletes leave
exactly the pinned rules, and packets meet the same fate as on the virtual switch
(OVS oracle), also across flow mods and a port remap applied step by step."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.oneswitch.translate import TranslationError, is_delivery_key, pkey
from tandem.rules.ir import OFPP_FLOOD, ApplyActions, FlowMod, Match, Output, Rule
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets

K3 = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                    {1: "host:1", 2: "snic0:1", 3: "snic1:1", 4: "snic0:2"})
TRANSIT = Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                         {1: "s0:1", 2: "s0:2", 3: "s1:1"})


def out(port: int, **match) -> Rule:
    return Rule(Match.of(**match), (ApplyActions((Output(port),)),), priority=10)


@pytest.mark.parametrize("topo", [K3, TRANSIT], ids=["k3", "transit"])
def test_pinned_state_makes_every_output_rule_one_step(topo):
    st = OneSwitchState(topo, pin_infrastructure=True)
    first = st.take_plan()
    pinned = {sw: st.physical_rules(sw) for sw in topo.switch_names}
    # and every switch's ("live", port) group of every virtual port (fast-failover liveness)
    live = {sw: st.physical_groups(sw) for sw in topo.switch_names}
    assert first.counts() == {"add": sum(len(v) for v in pinned.values()), "add_group": len(topo.switch_names) * len(topo.port_map)}
    assert len(first.steps) == 1
    assert all(g.type == "fast_failover" and len(g.buckets) == 1 for v in live.values() for g in v)
    assert all(is_delivery_key(pkey(r)) for v in pinned.values() for r in v)
    ports = sorted(topo.port_map)
    for a in ports:
        for b in [*ports, OFPP_FLOOD]:
            if a != b:
                plan = st.apply(FlowMod("add", out(b, in_port=a, eth_type=0x800)))
                assert len(plan.steps) == 1 and {op.op for op in plan.ops()} == {"add"}
    plan = st.apply(FlowMod("add", out(ports[-1], eth_type=0x806)))  # no in_port: a copy per ingress switch
    assert len(plan.steps) == 1
    plan = st.apply(FlowMod("delete", Rule(), all_tables=True))
    assert len(plan.steps) == 1 and {op.op for op in plan.ops()} == {"delete_strict"}
    assert {sw: st.physical_rules(sw) for sw in topo.switch_names} == pinned
    assert {sw: st.physical_groups(sw) for sw in topo.switch_names} == live
    assert len(st.take_plan()) == 0
    unpinned = OneSwitchState(topo)
    assert len(unpinned.apply(FlowMod("add", out(ports[-1], in_port=ports[0]))).steps) == 2  # shared rules, then the copy


@pytest.fixture(scope="module")
def sb():
    with OvsSandbox() as s:
        yield s


def _fail(report, n=3):
    return "\n".join(str(m) for m in report.mismatches[:n])


@pytest.mark.ovs
@pytest.mark.parametrize("topo, seed", [(K3, 11), (TRANSIT, 12)], ids=["k3", "transit"])
def test_pinned_translation_forwards_like_the_virtual_switch_through_mods_and_a_remap(sb, topo, seed):
    rng = random.Random(seed)
    rules, groups = oracle_ruleset(rng, 120, topo, tables=2, n_groups=2)
    extra, _ = oracle_ruleset(rng, 30, topo, tables=2, n_groups=0)
    state = OneSwitchState(topo, groups, pin_infrastructure=True)
    for r in rules:
        state.apply(FlowMod("add", r))
    packets = random_packets(rng, rules + extra, topo, per_port=15)
    with Oracle(sb, topo) as o:
        new_ref = o.add_reference()
        o.load_virtual(rules, groups)
        o.load_virtual(rules, groups, ref=new_ref)
        o.load_translation(state.translation())
        report = o.compare(packets)
        assert report.outputs > report.packets // 4 and not report.mismatches, _fail(report)
        applied = 0
        for fresh in extra[:10]:
            existing = state.virtual_rules()
            mod = FlowMod("add", fresh) if rng.random() < 0.6 or not existing else \
                FlowMod("delete_strict", rng.choice(existing))
            try:
                plan = state.apply(mod)
            except TranslationError:
                continue
            applied += 1
            o.apply_virtual(mod, new_ref)
            for step in plan.steps:
                o.apply_step(step)
                report = o.compare(packets)  # each packet: as the old or as the new virtual switch
                assert not report.mismatches, f"{mod.command}: {_fail(report)}"
            o.refs.remove(o.ref)
            report = o.compare(packets)
            o.refs.insert(0, o.ref)
            assert not report.mismatches, f"after {mod.command}:\n{_fail(report)}"
        assert applied >= 5


@pytest.mark.ovs
def test_pinned_remap_never_loses_or_duplicates_a_packet(sb):
    topo, vport, new = K3, 2, PortRef.parse("snic1:5")
    rng = random.Random(21)
    rules, groups = oracle_ruleset(rng, 100, topo, tables=2, n_groups=2)
    state = OneSwitchState(topo, groups, pin_infrastructure=True)
    for r in rules:
        state.apply(FlowMod("add", r))
    plan = state.remap(vport, new)
    old = topo.port_map[vport]
    packets = random_packets(rng, rules, topo, per_port=20)
    with Oracle(sb, topo, spare_ports={new.switch: [new.port]}) as o:
        o.load_virtual(rules, groups)
        o.load_translation(_before(topo, groups, rules))  # the pinned state before the remap
        o.remap(vport, new)
        for applied in range(len(plan.steps) + 1):
            if applied:
                o.apply_step(plan.steps[applied - 1])
            where = {v: [topo.port_map[v]] for v in topo.port_map}
            where[vport] = ([old] if applied <= plan.old_ingress_until else []) + \
                           ([new] if applied >= plan.new_ingress_ready else [])
            report = o.compare(packets, where)
            assert not report.mismatches, f"after {applied}/{len(plan.steps)} steps:\n{_fail(report)}"


def _before(topo, groups, rules):
    st = OneSwitchState(topo, groups, pin_infrastructure=True)
    for r in rules:
        st.apply(FlowMod("add", r))
    return st.translation()
