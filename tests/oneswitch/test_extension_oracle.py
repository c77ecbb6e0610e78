"""Port extensions (oneswitch/extension.py) against the OVS oracle.

The physical bridges get the extension port pairs (patch ports on the host
link) the layout builds. Random rule sets (all match/action features, groups,
several tables; the seeds and sizes of tests/oneswitch/test_oneswitch_oracle.py,
whose rule sets OVS 3.1 runs without hitting its own recirculation assertion)
are translated, then every sNIC port is extended to the host
plan step by plan step; after every step random frames enter at each virtual
port's *real* port and what leaves every virtual port (and every packet-in)
must equal the reference bridge. Rules of table 0 at priority 65535 (a
wildcard one and one per sNIC port) share that priority with the ports' wire
rules and must hand over without a tie. Finally a wildcard metered rule (a meter too
fast to drop anything) is added on both sides: OVS runs the meter, and the
translation runs its only copy on the host."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import EXT_PORT_BASE, extend, extensions, is_extended, wire_rules
from tandem.oneswitch.ids import INFRA_COOKIE, WIRE_PRIORITY, is_delivery_key, pkey
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets

TOPOS = {
    "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                         [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                         {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"}),
    # the host has no virtual port of its own
    "transit": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                              {1: "s0:1", 2: "s0:2", 3: "s1:1"}),
}


def test_extensions_are_port_pairs_on_links_to_the_host():
    topo = TOPOS["k3"]
    ex = extensions(topo)
    assert sorted(ex) == [3, 4]  # every sNIC port, none of the host's
    assert {(e.switch, e.port, e.near, e.host, e.far) for e in ex.values()} == {
        ("snic0", 1, EXT_PORT_BASE, "host", EXT_PORT_BASE), ("snic1", 1, EXT_PORT_BASE + 1, "host", EXT_PORT_BASE + 1)}
    # a chain host - s0 - s1: s1's ports have no link to the host, so no pair
    chain = Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("s0:8", "s1:9")],
                           {1: "h:3", 2: "s0:1", 3: "s1:1"})
    assert sorted(extensions(chain)) == [2]
    # a port number already taken on either end is skipped
    busy = Topology.build({"h": "host", "s": "snic"}, [("h:1", f"s:{EXT_PORT_BASE}")], {1: "s:1", 2: "s:2"})
    assert [e.far for e in extensions(busy).values()] == [EXT_PORT_BASE + 1, EXT_PORT_BASE + 2]


def _patch_extensions(sb, o, topo):
    for e in extensions(topo).values():
        sb.add_patch(o.bridge[e.switch], e.near, o.bridge[e.host], e.far)


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed, n, tables, only", [
    ("k3", 1, 300, 3, None), ("transit", 5, 150, 2, None),
    ("transit", 5, 150, 2, [1]),  # one of s0's two ports: s0 keeps a pipeline for the other
])
def test_extending_ports_keeps_every_packet_fate(topo_name, seed, n, tables, only):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    rules, groups = oracle_ruleset(rng, n, topo, tables=tables, n_groups=3)
    snic_ports = [v for v, ref in sorted(topo.port_map.items()) if ref.switch != topo.host]
    rules += [parse_rule("priority=65535,udp,tp_dst=4789,actions=set_field:02:00:00:00:00:09->eth_dst,IN_PORT,"
                         f"output:{snic_ports[-1]}")]
    rules += [parse_rule(f"priority=65535,in_port={v},tcp,actions=output:{snic_ports[0]},FLOOD") for v in snic_ports]
    state = OneSwitchState(topo, groups)
    for r in rules:
        state.apply(FlowMod("add", r))
    with OvsSandbox() as sb, Oracle(sb, topo, packet_in=True) as o:
        _patch_extensions(sb, o, topo)
        o.load_virtual(rules, groups)
        o.load_translation(state.translation())
        exts = [e for v, e in extensions(topo).items() if only is None or v in only]
        for e in exts:
            o.remap(e.vport, e.hosted)  # packet-ins from the host's end stand for the port
        plans = extend(state, exts)
        assert len(plans) == len({e.switch for e in exts})  # one remap per sNIC
        checked = 0
        for plan in plans:
            for i, step in enumerate(plan.steps):
                o.apply_step(step)
                report = o.compare(random_packets(rng, rules, topo, per_port=8))
                assert not report.mismatches, f"step {i}: " + "\n".join(str(m) for m in report.mismatches[:3])
                assert not report.packet_in_mismatches, "\n".join(report.packet_in_mismatches[:3])
                checked += report.packets
        assert all(is_extended(state.topo, e) for e in exts)
        if only is None:
            assert state.topo.ingress_switches == (topo.host,)  # every pipeline now runs on the host
            for sw in {e.switch for e in exts}:  # no virtual table copies remain on the sNICs
                assert all(is_delivery_key(pkey(r)) for r in state.physical_rules(sw))
        else:
            assert set(state.topo.ingress_switches) == set(topo.ingress_switches) | {topo.host}
        wires = {(op.switch, op.rule) for p in plans for op in p.ops()
                 if op.op == "add" and op.rule is not None and op.rule.cookie == INFRA_COOKIE and op.rule.priority == WIRE_PRIORITY}
        assert wires == {(e.switch, r) for e in exts for r in wire_rules(e)}
        handed = [op for p in plans for op in p.ops() if op.op == "modify_strict" and op.rule.priority == WIRE_PRIORITY]
        assert len(handed) >= 2 * len(exts)  # each port's two 65535 copies became wires at the switch-over
        dumped = sb.dump_flows(o.bridge[exts[0].switch])
        assert any(f"in_port={exts[0].port} " in f and f"output:{exts[0].near}" in f for f in dumped), dumped
        report = o.compare(random_packets(rng, rules, topo, per_port=40))
        assert report.outputs > report.packets // 4
        assert not report.mismatches, "\n".join(str(m) for m in report.mismatches[:3])
        assert checked > 0
        if only is not None:
            return  # a wildcard metered rule needs every sNIC port extended (the cases above)
        # a wildcard metered rule: the meter runs in OVS on both sides, its copy only on the host
        for br in [o.ref, *o.bridge.values()]:
            sb.ofctl("add-meter", br, "meter=1,kbps,burst,stats,bands=type=drop,rate=10000000,burst_size=10000000")
        metered = parse_rule("table=0,priority=65000,udp,actions=meter:1,output:1")
        plan = state.apply(FlowMod("add", metered))
        assert {op.switch for op in plan.ops()} == {topo.host}
        o.load_virtual([metered])
        for step in plan.steps:
            o.apply_step(step)
        report = o.compare(random_packets(rng, [metered, *rules], topo, per_port=40))
        assert not report.mismatches, "\n".join(str(m) for m in report.mismatches[:3])
