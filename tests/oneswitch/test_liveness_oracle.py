"""Port liveness and fast-failover groups across switches, against the OVS oracle.

Random rule sets whose fast-failover groups watch ports on every switch (and
each other: ``watch_group``) are translated with the pinned ("live", port)
groups (docs/oneswitch.md §4, "Groups"); in one run the sNIC ports are first
extended to the host (extension.py), so the host watches them through their
("live", port) groups while their wires stay on the sNICs. Then virtual ports go down and come
back one after another: the reference bridge's port and the physical port
under it are set admin-down (``netdev-dummy/set-admin-state``), the plan of
``OneSwitchState.set_port_live`` is applied, and every virtual port's frames
must leave exactly as from the reference bridge, whose Open vSwitch decides
bucket liveness itself. A control run that skips the plan is caught."""

from __future__ import annotations

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import extend
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.rules.ir import FlowMod
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets

pytestmark = [pytest.mark.ovs]

K3 = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                    {1: "host:1", 2: "snic0:1", 3: "snic1:1", 4: "snic0:2"})
CHAIN = Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:10", "s0:10"), ("s0:11", "s1:10")],
                       {1: "h:1", 2: "s0:1", 3: "s1:1", 4: "s1:2"})


def _admin(sb: OvsSandbox, bridge: str, port: int, up: bool) -> None:
    sb.appctl("netdev-dummy/set-admin-state", f"{bridge}-p{port}", "up" if up else "down")


def _set(o: Oracle, state: OneSwitchState, v: int, up: bool, apply_plan: bool = True) -> None:
    wire: PortRef = state.wire_of(v)
    _admin(o.sb, o.ref, v, up)
    _admin(o.sb, o.bridge[wire.switch], wire.port, up)
    plan = state.set_port_live(v, up)
    assert len(plan.steps) == 1 and {op.op for op in plan.ops()} == {"modify_group"}
    assert {op.switch for op in plan.ops()} == set(state.topo.switch_names)  # every switch's ("live", v)
    if apply_plan:
        o.apply_step(plan.steps[0])


@pytest.mark.parametrize("topo, seed, extended", [(K3, 3, False), (CHAIN, 9, False), (K3, 10, True)],
                         ids=["k3", "chain", "k3-extended"])
def test_buckets_follow_ports_on_every_switch_as_ovs_does(topo, seed, extended):
    rng = random.Random(seed)
    rules, groups = oracle_ruleset(rng, 150, topo, tables=2, n_groups=6, watch_groups=True)
    assert any(g.type == "fast_failover" and any(b.watch_group != 0xFFFFFFFF for b in g.buckets) for g in groups)
    state = OneSwitchState(topo, groups, pin_infrastructure=True)
    for r in rules:
        state.apply(FlowMod("add", r))
    remote = [(sw, g) for sw in topo.switch_names for g in state.physical_groups(sw)
              if g.group_id < 0xF0000000 and any(b.watch_group >= 0xF0000000 for b in g.buckets)]
    assert remote, "no group watches a port on another switch"
    with OvsSandbox() as sb, Oracle(sb, topo) as o:
        o.load_virtual(rules, groups)
        o.load_translation(state.translation())
        if extended:
            snic_ports = [v for v, ref in topo.port_map.items() if ref.switch != topo.host]
            for plan in extend(state, snic_ports):
                for step in plan.steps:
                    o.apply_step(step)
            assert state.topo.ingress_switches == (topo.host,)
        order = sorted(topo.port_map)
        rng.shuffle(order)
        checked = 0
        for v, up in [*((v, False) for v in order[:-1]), *((v, True) for v in order[:2])]:
            _set(o, state, v, up)
            report = o.compare(random_packets(rng, rules, topo, per_port=12))
            assert not report.mismatches, f"port {v} {'up' if up else 'down'}:\n" + "\n".join(map(str, report.mismatches[:3]))
            checked += report.outputs
        assert checked > 100


def test_skipping_the_liveness_plan_is_caught():
    topo = K3
    rules_text = ["priority=10,in_port=1,actions=group:1"]
    from tandem.rules.ofctl import parse_group, parse_rule

    groups = [parse_group("group_id=1,type=fast_failover,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3")]
    rules = [parse_rule(t) for t in rules_text]
    state = OneSwitchState(topo, groups, pin_infrastructure=True)
    for r in rules:
        state.apply(FlowMod("add", r))
    with OvsSandbox() as sb, Oracle(sb, topo) as o:
        o.load_virtual(rules, groups)
        o.load_translation(state.translation())
        packets = random_packets(random.Random(1), rules, topo, per_port=4)
        assert not o.compare(packets).mismatches
        _set(o, state, 2, False, apply_plan=False)  # the host still thinks port 2 (snic0) is live
        assert o.compare(packets).mismatches
