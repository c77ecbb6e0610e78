"""``learn`` inside a flow's ``clone(…)``: OneSwitch checks and translates it as in the
rule's own list, and such a rule homes every pipeline on the host as a learning rule
does; a PACKET_OUT's clone still refuses it. Open vSwitch 3.1 counts a
``delete_learned`` only in a rule's own list (deleting the rule whose clone learned
leaves the flows), and so does dp-core. Against Open vSwitch: that case, and a
bounded run of ``tandem bench learn_oracle -- --clone`` (the translation and, with
``--dp``, dp-core)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.oneswitch.clone_translate import check_clone
from tandem.oneswitch.extension import uses_learn
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.translate import translate
from tandem.rules.generate_clone_learn import clone_learn_ruleset
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.learn_dp_oracle import dp_learned, run_learn_dp_oracle
from tandem.testing.learn_oracle import TOPOS, flow_lines, run_learn_oracle

LEARNS = "table=0,priority=9,in_port=3,actions=clone(learn(table=1,priority=5,delete_learned,cookie=0x77," \
         "output:OXM_OF_IN_PORT[])),goto_table:1"


def test_a_learn_inside_a_clone_homes_the_pipelines_and_is_checked_as_in_the_rules_own_list():
    assert uses_learn(parse_rule(LEARNS))
    with pytest.raises(TranslationError, match=r"learn\(table=0\)"):
        translate([parse_rule("actions=clone(learn(table=0,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]))")], TOPOS["k3"])
    (c,) = parse_rule(LEARNS).apply_actions
    with pytest.raises(TranslationError, match="learn inside clone"):
        check_clone(c, "clone in a PACKET_OUT", packet_out=True)


@pytest.mark.ovs
def test_deleting_the_rule_whose_clone_learned_leaves_the_learned_flow_as_open_vswitch():
    rules = [parse_rule(LEARNS)]
    with OvsSandbox() as sb:
        o = OvsOracle(sb, [1, 2, 3, 4, 5])
        o._load(rules, [])
        sb.inject(o.BRIDGE, 3, [build_frame(udp_dst=1)])
        sb.settle(quiet_s=0.05, timeout_s=20)
        sb.ofctl("del-flows", o.BRIDGE, "--strict", "table=0,priority=9,in_port=3")
        ovs = [line for line in flow_lines(sb, o.BRIDGE) if "cookie=0x77" in line]
    sw = Switch([1, 2, 3, 4, 5], 4, drop_malformed=False)
    sw.add_rules(rules)
    sw.process(3, build_frame(udp_dst=1))
    sw.flow_mod(FlowMod("delete_strict", rules[0]))
    assert len(ovs) == 1 and len(dp_learned(sw)) == 1


@pytest.mark.ovs
def test_the_translation_and_dp_core_learn_inside_clones_as_open_vswitch():
    reports = [run_learn_oracle(TOPOS["k3"], 3, 80, 60, ruleset=clone_learn_ruleset)]
    with OvsSandbox() as sb:
        reports.append(run_learn_dp_oracle(sb, 3, 80, 60, ruleset=clone_learn_ruleset))
    for r in reports:
        assert r.learning_rules >= 20 and r.traffic.outputs > 20
        assert not r.traffic.mismatches and not r.learned_mismatches, (r.traffic.mismatches[:1], r.learned_mismatches[:2])
