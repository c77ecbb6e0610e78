"""Rule sets focused on one connection-tracking form (generate_ct_focus.py: hidden
ct_tp_*, ct(table=0), recirc_id=0) against Open vSwitch: dp-core, and OneSwitch's
translation on the host + 2 sNIC topology. `tandem bench ct_oracle -- --focus FORM`
runs the same at thousands of rules."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.generate_ct import ct_traces
from tandem.rules.generate_ct_focus import FOCUS, focused_ct_ruleset, uses
from tandem.rules.ir import ApplyActions
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, dp_core_vs_ovs, translation_vs_ovs

PORTS = [1, 2, 3, 4]


@pytest.mark.ovs
@pytest.mark.parametrize("focus", FOCUS)
def test_dp_core_on_a_focused_rule_set_as_open_vswitch(focus):
    rng = random.Random(11)
    rules = focused_ct_ruleset(rng, 120, PORTS, focus)
    applying = sum(r.priority >= 100 and any(type(i) is ApplyActions for i in r.instructions) for r in rules)
    # (the clone forms: every rule but the skeleton's with apply-actions, generate_clone_ct.py)
    clone_forms = ("clone_ct_clear", "clone_ct")
    assert sum(uses(r, focus) for r in rules) == (114 if focus == "recirc_id" else applying if focus in clone_forms else 60)
    rounds = ct_traces(rng, [(a, b) for a in PORTS for b in PORTS if a != b], 24)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, PORTS)
    assert not bad, "\n".join(bad[:5])
    assert n >= 70 and frames > 0


@pytest.mark.ovs
@pytest.mark.parametrize("focus", FOCUS)
def test_the_translation_of_a_focused_rule_set_as_open_vswitch(focus):
    topo = ct_topologies()["k3"]
    rng = random.Random(12)
    rules = focused_ct_ruleset(rng, 100, sorted(topo.port_map), focus)
    _, report = translation_vs_ovs(topo, rules, ct_traces(rng, cross_pairs(topo), 20))
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:3]))
    assert report.packets >= 60 and report.outputs > 0
