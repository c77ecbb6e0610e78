"""``check_pkt_larger`` and ``ct(table=T)`` inside a flow's ``clone(…)``: OneSwitch
translates them as they are (the physical switch forks the rest of the clone and its
action set at the check, and recirculates a tracked copy at the ct, as the virtual
one does), with a ``ct(table=T)`` into the rule's own or an earlier table counted as a
lookup and into table 0 with the mark reset first; a PACKET_OUT's clone still refuses
both. Against Open vSwitch 3.1: the cases below through the translation on the
host + 2 sNIC topology (written outputs crossing PCIe in the forked action set), and a
bounded run of ``tandem bench of13_oracle -- --items clone_check``
(``ct_table_in_clone``: tests/dataplane/test_ct_focus_oracle.py)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.clone_translate import check_clone
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.rule_analysis import _analyze, output_reg_port
from tandem.oneswitch.translate import translate
from tandem.rules.ir import CheckPktLarger, Clone, Ct, SetField, StackPop, StackPush
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.oneswitch_oracle import Oracle

from test_of13_translation import TOPOS, assert_item_runs_as_ovs

# frames on both sides of the checks' 100 bytes
FRAMES = [build_frame(udp_dst=1), build_frame(udp_dst=2, payload=bytes(120)), build_frame(udp_dst=3, vlan_vid=0x1005)]

# k3: virtual ports 1, 2 on the host, 3 on snic0, 4 on snic1; every case enters on 1 and 3
CASES = {
    # the rest of the clone forks at the check; each branch ends in the clone's action set, whose
    # written output crosses PCIe, then the set of the check's moment (empty here) runs again
    "written output after the check": [
        "ip,actions=clone(set_field:02:00:00:00:00:0b->eth_src,check_pkt_larger(100)->NXM_NX_REG0[0],resubmit(,1),"
        "output:4),output:3",
        "table=1,reg0=1,actions=write_actions(set_field:02:00:00:00:00:0e->eth_dst,output:3)",
        "table=1,priority=0,actions=write_actions(output:4)"],
    # the packet's action set (written in table 0) is the clone's at the check: it runs in both
    # branches (the first empties it) and again after them
    "the packet's action set at the check": [
        "ip,actions=write_actions(set_field:02:00:00:00:00:0e->eth_dst,output:4),goto_table:1",
        "table=1,ip,actions=clone(check_pkt_larger(100)->NXM_NX_REG1[31],resubmit(,2),output:2),output:3",
        "table=2,reg1=0x80000000,actions=output:4", "table=2,priority=0,actions=write_actions(output:1)"],
    # a check in a nested clone, and one after a lookup that wrote the clone's action set
    "nested and after a lookup": [
        "ip,actions=clone(resubmit(,1),check_pkt_larger(64)->NXM_NX_REG2[1],clone(check_pkt_larger(100)->"
        "NXM_NX_REG0[0],resubmit(,2)),output:4),output:2",
        "table=1,actions=write_actions(set_field:02:00:00:00:00:0f->eth_src,output:3)",
        "table=2,reg0=1,reg2=2,actions=output:4", "table=2,reg2=2,actions=output:3", "table=2,priority=0,actions=output:1"],
}


def _packets(topo):
    return [(v, f) for v in (1, 3) for f in FRAMES]


@pytest.mark.ovs
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_check_inside_a_clone_forks_on_the_physical_switches_as_on_the_virtual_one(name):
    rules = [parse_rule(t) for t in CASES[name]]
    topo = TOPOS["k3"]
    with OvsSandbox() as sb, Oracle(sb, topo) as o:
        o.load_virtual(rules)
        o.load_translation(translate(rules, topo))
        rep = o.compare(_packets(topo))
    assert not rep.mismatches, rep.mismatches[0]
    assert rep.outputs >= 2 * len(FRAMES)


def _clone(rule):
    (c,) = [a for a in rule.apply_actions if type(a) is Clone]
    return c


def test_the_check_stays_and_every_pcie_output_in_the_clone_restores_the_mark():
    rule = parse_rule("ip,in_port=1,actions=clone(check_pkt_larger(100)->NXM_NX_REG0[0],output:3),output:2")
    ((sw, r),) = translate([rule], TOPOS["k3"]).derived_rules(rule)
    acts = _clone(r).actions
    assert sw == "host" and acts[0] == CheckPktLarger(100, rule.apply_actions[0].actions[0].dst)
    assert type(acts[1]) is StackPush and type(acts[-1]) is StackPop  # (output:3 crosses to snic0)


def test_a_ct_back_into_table_0_inside_a_clone_resets_the_mark_and_counts_as_a_lookup():
    rule = parse_rule("ip,actions=clone(ct(table=0,zone=3),output:2)")
    for _sw, r in translate([rule], TOPOS["k3"]).derived_rules(rule):
        assert _clone(r).actions[:2] == (SetField("pkt_mark", 0), Ct(zone=3, table=0))
    facts = _analyze(parse_rule("table=1,ip,actions=clone(ct(table=1)),output:2"))[7]
    assert facts.resubmits and not facts.table0
    assert _analyze(parse_rule("table=1,ip,actions=clone(ct(table=2)),output:2"))[7] is None  # (upward, as a goto)


def test_a_packet_outs_clone_still_refuses_both():
    for text, name in (("actions=clone(check_pkt_larger(100)->NXM_NX_REG0[0])", "check_pkt_larger"),
                       ("ip,actions=clone(ct(table=1))", r"ct\(table=T\)")):
        c = _clone(parse_rule(text))
        check_clone(c, "a flow")
        with pytest.raises(TranslationError, match=f"{name} inside clone is not translated.*PACKET_OUT"):
            check_clone(c, "clone in a PACKET_OUT", packet_out=True)


def test_an_output_reg_after_a_check_into_its_register_is_not_fixed_by_the_load_before():
    rule = parse_rule("actions=load:0x2->NXM_NX_REG0[0..15],check_pkt_larger(100)->NXM_NX_REG0[0],"
                      "output:NXM_NX_REG0[0..15]")
    with pytest.raises(TranslationError, match="do not fix the port number"):
        output_reg_port(rule.apply_actions, 2, rule.match, rule)
    inside = parse_rule("actions=load:0x2->NXM_NX_REG0[0..15],clone(check_pkt_larger(100)->NXM_NX_REG0[0],"
                        "output:NXM_NX_REG0[0..15])")
    with pytest.raises(TranslationError, match="do not fix the port number"):
        translate([inside], TOPOS["k3"])


@pytest.mark.ovs
def test_dp_core_and_the_translation_run_checks_inside_clones_as_open_vswitch():
    assert_item_runs_as_ovs("clone_check", per_item=300)
