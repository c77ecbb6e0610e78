"""``ct_clear`` and ``ct(…)`` (without recirculation) inside a flow's ``clone(…)``:
OneSwitch keeps them as they are, as in the rule's own list (a ct in a clone homes
every pipeline on the host as one in the rule's own list does); a PACKET_OUT's
clone still refuses them. Against Open vSwitch 3.1: cases on a plain bridge
(dp-core) and bounded runs of ``tandem bench ct_oracle -- --focus clone_ct_clear``
and ``--focus clone_ct`` (dp-core and the translation)."""

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


# a commit inside the clone stays (the next packet of the connection is +est), the copy's state does not
COMMITTED_BY_THE_COPY = ["table=0,ip,actions=ct(table=1)",
                         "table=1,ct_state=+trk+new,ip,actions=clone(ct(commit,exec(set_field:0x5->ct_mark)),output:2),"
                         "resubmit(,2)",
                         "table=1,ct_state=+trk+est,ct_mark=0x5,ip,actions=output:3",
                         "table=2,ct_state=+trk+new,ct_mark=0,ip,actions=output:4"]


@pytest.mark.parametrize("text", ["actions=clone(ct_clear,output:1)", "ip,actions=clone(ct(commit),output:1)"])
def test_a_packet_outs_clone_still_refuses_ct_clear_and_ct(text):
    (c,) = parse_rule(text).apply_actions
    check_clone(c, "a flow")
    with pytest.raises(TranslationError, match="ct(_clear)? inside clone"):
        check_clone(c, "clone in a PACKET_OUT", packet_out=True)


def test_a_ct_inside_a_clone_homes_the_pipelines_as_one_in_the_rules_own_list():
    from tandem.oneswitch.extension import uses_ct

    assert uses_ct(parse_rule("ip,actions=clone(clone(ct(zone=3)),output:1)"))
    assert not uses_ct(parse_rule("ip,actions=clone(ct_clear,output:1)"))


@pytest.mark.ovs
def test_ct_clear_inside_a_clone_clears_the_copys_state_only():
    rules = [parse_rule(t) for t in CLEARED_IN_THE_COPY_ONLY]
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, [[(1, build_frame(udp_dst=1))]], PORTS)
    assert not bad and frames == 2, bad


@pytest.mark.ovs
def test_a_commit_inside_a_clone_stays_and_the_copys_state_does_not():
    rules = [parse_rule(t) for t in COMMITTED_BY_THE_COPY]
    frame = build_frame(udp_dst=1)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, [[(1, frame)], [(1, frame)]], PORTS)
    assert not bad and frames == 3, bad


@pytest.mark.ovs
@pytest.mark.parametrize("focus", ["clone_ct_clear", "clone_ct"])
def test_dp_core_and_the_translation_run_clones_with_ct_as_open_vswitch(focus):
    topos = ct_topologies()
    rng = random.Random(7)
    used = frames = 0
    rs = focused_ct_ruleset(rng, 120, PORTS, focus)
    used += sum(uses(r, focus) for r in rs)
    with OvsSandbox() as sb:
        n, f, bad = dp_core_vs_ovs(sb, rs, ct_traces(rng, [(x, y) for x in PORTS for y in PORTS if x != y], 12), PORTS)
    assert not bad, bad[:3]
    frames += f
    topo = topos["k3"]
    rs = focused_ct_ruleset(rng, 120, sorted(topo.port_map), focus)
    used += sum(uses(r, focus) for r in rs)
    _, rep = translation_vs_ovs(topo, rs, ct_traces(rng, cross_pairs(topo), 12))
    assert not rep.mismatches, rep.mismatches[:3]
    assert used >= 150 and frames + rep.outputs > 50
