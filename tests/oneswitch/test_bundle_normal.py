"""NORMAL as a member of a Nicira ``bundle`` in a flow (oneswitch/hashsel_translate.py,
extension.bundles_normal): Open vSwitch 3.1 counts NORMAL always live and, when the
bundle chooses it, runs output:NORMAL (measured with ofproto/trace on one bridge:
``bundle(…,active_backup,…,members:1,NORMAL)`` with port 1 down floods as NORMAL does
for an unknown destination; ``hrw`` over ``1,2,NORMAL,FLOOD`` picks NORMAL for some
source MACs). OneSwitch homes every port's pipeline on the host, as for
output:NORMAL, and keeps NORMAL there: the active_backup group's bucket outputs to
it, an hrw copy keeps it as a member. Oracles (random NORMAL rule sets whose NORMAL
is a bundle member, ``generate_bundle_normal``, one packet at a time against one OVS
bridge): the translation on OVS bridges, dp-core alone, the emulator backend."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import NORMAL, one_switch, ports_to_extend
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.state import OneSwitchState
from tandem.rules.generate_bundle_normal import bundle_normal_ruleset
from tandem.rules.ir import OFPP_NORMAL, Bundle, FlowMod, GroupAction, Output
from tandem.rules.ofctl import parse_rule
from tandem.testing.learn_oracle import TOPOS, build, run_learn_oracle
from tandem.testing.normal_dp_oracle import run_normal_dp_oracle
from tandem.testing.normal_emu_oracle import run_normal_emu_oracle

ACTIVE_BACKUP = "priority=5,actions=bundle(eth_src,0,active_backup,ofport,members:77,NORMAL,3)"
HRW = "priority=6,actions=bundle(eth_src,0,hrw,ofport,members:NORMAL,IN_PORT,ANY)"


@pytest.mark.parametrize("text", [ACTIVE_BACKUP, HRW])
def test_a_bundle_with_a_normal_member_homes_every_port(text):
    topo = TOPOS["k3"]
    rule = parse_rule(text)
    assert one_switch(rule) == [NORMAL] and ports_to_extend(OneSwitchState(topo), rule) == [3, 4, 5]


def test_bundle_load_of_normal_homes_nothing():
    rule = parse_rule("priority=5,actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:NORMAL,1),output:1")
    assert one_switch(rule) == []


def test_on_the_host_active_backup_buckets_output_to_normal_and_hrw_keeps_it():
    state, _ = build(TOPOS["k3"], [parse_rule(ACTIVE_BACKUP), parse_rule(HRW)])
    host = {r.priority: r for r in state.physical_rules("host") if r.priority in (5, 6)}
    (ga,) = host[5].apply_actions
    assert type(ga) is GroupAction
    (g,) = [g for g in state.translation().groups["host"] if g.group_id == ga.group_id]
    never, normal, three = g.buckets
    assert g.type == "fast_failover" and normal.actions == (Output(OFPP_NORMAL),) and never.actions == ()
    (b,) = host[6].apply_actions
    assert type(b) is Bundle and b.algorithm == "hrw" and b.members[0] == OFPP_NORMAL


@pytest.mark.parametrize("text", [ACTIVE_BACKUP.replace("actions", "in_port=3,actions"),
                                  HRW.replace("actions", "in_port=3,actions")])
def test_a_normal_member_on_an_snic_is_refused_as_normal_is(text):
    with pytest.raises(TranslationError, match="host switch only"):
        OneSwitchState(TOPOS["k3"]).apply(FlowMod("add", parse_rule(text)))


def test_a_normal_member_inside_a_clone_is_refused_as_normal_is():
    with pytest.raises(TranslationError, match="NORMAL inside clone"):
        OneSwitchState(TOPOS["k3"]).apply(FlowMod("add", parse_rule(
            "priority=5,actions=clone(bundle(eth_src,0,active_backup,ofport,members:NORMAL,1))")))


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed", [("k3", 5), ("chain", 6)])
def test_bundle_normal_through_oneswitch_matches_one_ovs_bridge(topo_name, seed):
    r = run_learn_oracle(TOPOS[topo_name], seed, 30, 60, normal=True, ruleset=bundle_normal_ruleset)
    assert not r.traffic.mismatches, "\n".join(map(str, r.traffic.mismatches[:3]))
    assert r.learning_rules >= 15 and r.traffic.outputs > 60 and len(r.traffic.expected_by_port) >= 3


@pytest.mark.ovs
def test_bundle_normal_in_dp_core_and_on_the_emulator_backend_matches_one_ovs_bridge():
    with OvsSandbox() as sb:
        dp = run_normal_dp_oracle(sb, 7, 30, 60, ruleset=bundle_normal_ruleset)
        emu = run_normal_emu_oracle(sb, TOPOS["chain"], 8, 30, 60, ruleset=bundle_normal_ruleset)
    for r in (dp, emu):
        assert not r.traffic.mismatches, "\n".join(map(str, r.traffic.mismatches[:3]))
        assert not r.learned_mismatches, "\n".join(r.learned_mismatches)
        assert r.learning_rules >= 15 and r.traffic.outputs > 30 and r.learned_ref >= 1
