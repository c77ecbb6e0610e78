"""``nat`` in connection tracking against Open vSwitch 3.1: dp-core's tracker
(crates/dp-core/src/ct_nat.rs) and OneSwitch's translation (every pipeline on the
host's tracker) each against one OVS bridge, on random rule sets whose ct actions
mostly translate (generate_ct_nat.py: ranges of one address and one or no port)
and traces whose replies come back to the translated addresses. The full run is
``tandem bench ct_oracle -- --nat``."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.generate_ct_nat import nat_ruleset, nat_traces, uses_nat
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, dp_core_vs_ovs, translation_vs_ovs

PORTS = [1, 2, 3, 4]


def _addrs(frame: bytes) -> bytes:
    return frame[22:54] if frame[12:14] == b"\x86\xdd" else frame[26:34]


def _translated_frames(rules, rounds) -> int:
    """Frames dp-core sends out with other IP addresses than they came in with."""
    sw = Switch(PORTS, 3, drop_malformed=False)
    sw.add_rules(rules)
    return sum(_addrs(out) != _addrs(f) for rnd in rounds for port, f in rnd for _, out in sw.process(port, f))


@pytest.mark.ovs
@pytest.mark.parametrize("seed", [13, 16])
def test_dp_core_nat_matches_one_ovs_bridge(seed):
    rng = random.Random(seed)
    rules = nat_ruleset(rng, 150, PORTS)
    rounds = nat_traces(rng, [(x, y) for x in PORTS for y in PORTS if x != y], 24)
    assert sum(map(uses_nat, rules)) >= 60
    assert _translated_frames(rules, rounds) >= 20  # (the translation is exercised, not just accepted)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, PORTS)
    assert not bad, "\n".join(bad[:3])
    assert n >= 60 and frames >= n // 6


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed", [("k3", 21), ("chain", 22)])
def test_nat_through_oneswitch_matches_one_ovs_bridge(topo_name, seed):
    topo = ct_topologies()[topo_name]
    rng = random.Random(seed)
    rules = nat_ruleset(rng, 120, sorted(topo.port_map))
    rounds = nat_traces(rng, cross_pairs(topo), 20)
    _, report = translation_vs_ovs(topo, rules, rounds)
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:3]))
    assert report.packets >= 50 and report.outputs > report.packets // 4
