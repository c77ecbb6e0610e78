"""``ct_clear`` inside a flow's ``clone(…)``: OneSwitch keeps it as it is (as in the
rule's own list: while a rule tracks connections every pipeline runs on the host);
a PACKET_OUT's clone still refuses it. Against Open vSwitch 3.1: one case on a
plain bridge (dp-core) and a bounded run of ``tandem bench ct_oracle -- --focus
clone_ct_clear`` (dp-core and the translation)."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.clone_translate import check_clone
from tandem.oneswitch.ids import TranslationError
from tandem.rules.generate_ct_focus import focused_ct_ruleset, uses
from tandem.rules.generate_ct_tcp import ct_traces
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, dp_core_vs_ovs, translation_vs_ovs

PORTS = [1, 2, 3, 4]
# the copy's state is cleared, the packet's is not: the lookup after the clone still sees +trk
CLEARED_IN_THE_COPY_ONLY = ["table=0,ip,actions=ct(table=1)",
                            "table=1,ct_state=+trk+new,ip,actions=clone(ct_clear,output:2),resubmit(,2)",
                            "table=2,ct_state=-trk,ip,actions=output:3",
                            "table=2,ct_state=+trk,ip,actions=output:4"]


def test_a_packet_outs_clone_still_refuses_ct_clear():
    (c,) = parse_rule("actions=clone(ct_clear,output:1)").apply_actions
    check_clone(c, "a flow")
    with pytest.raises(TranslationError, match="ct_clear inside clone"):
        check_clone(c, "clone in a PACKET_OUT", packet_out=True)


@pytest.mark.ovs
def test_ct_clear_inside_a_clone_clears_the_copys_state_only():
    rules = [parse_rule(t) for t in CLEARED_IN_THE_COPY_ONLY]
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, [[(1, build_frame(udp_dst=1))]], PORTS)
    assert not bad and frames == 2, bad


@pytest.mark.ovs
def test_dp_core_and_the_translation_run_clones_that_clear_ct_as_open_vswitch():
    topos = ct_topologies()
    rng = random.Random(7)
    used = frames = 0
    rs = focused_ct_ruleset(rng, 120, PORTS, "clone_ct_clear")
    used += sum(uses(r, "clone_ct_clear") for r in rs)
    with OvsSandbox() as sb:
        n, f, bad = dp_core_vs_ovs(sb, rs, ct_traces(rng, [(x, y) for x in PORTS for y in PORTS if x != y], 12), PORTS)
    assert not bad, bad[:3]
    frames += f
    topo = topos["k3"]
    rs = focused_ct_ruleset(rng, 120, sorted(topo.port_map), "clone_ct_clear")
    used += sum(uses(r, "clone_ct_clear") for r in rs)
    _, rep = translation_vs_ovs(topo, rs, ct_traces(rng, cross_pairs(topo), 12))
    assert not rep.mismatches, rep.mismatches[:3]
    assert used >= 150 and frames + rep.outputs > 50
