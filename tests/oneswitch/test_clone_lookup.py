"""Lookups inside a flow's ``clone(…)`` (``resubmit(,T)``, ``resubmit(P,T)``,
``output:TABLE``): OneSwitch translates them as in the rule's own list (a lookup in
table 0 with the mark set to 0 first, another in_port named by its physical number
per switch), while a PACKET_OUT's clone still refuses them. Against Open vSwitch
3.1: the cases below on one plain bridge (dp-core) and through the translation,
and a bounded run of ``tandem bench of13_oracle -- --items clone_resubmit``."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.translate import translate
from tandem.rules.ir import OFPP_IN_PORT, Clone, Resubmit, SetField
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.oneswitch_oracle import Oracle

from test_of13_translation import TOPOS, assert_item_runs_as_ovs

ITEM = ("clone_resubmit",)
FRAMES = [build_frame(udp_dst=1), build_frame(udp_dst=2, vlan_vid=0x1005), build_frame(udp_dst=3, ip_ttl=1)]

# Open vSwitch 3.1 on one bridge: the lookup runs on the copy (its changes, and what the
# rules it finds change, are undone after the clone), the outputs happen in order
CASES = {
    "changes undone after": ["ip,actions=clone(set_field:02:00:00:00:00:0c->eth_dst,set_field:0x7->reg0,resubmit(,1)),"
                             "resubmit(,1),output:3",
                             "table=1,ip,reg0=0x7,actions=set_field:10.9.9.9->ip_src,output:2",
                             "table=1,reg0=0,actions=output:4"],
    "outputs in order": ["actions=output:2,clone(push_vlan:0x8100,resubmit(,1),output:3),output:4",
                         "table=1,actions=set_field:02:00:00:00:00:0f->eth_src,output:4"],
    "table 0 again": ["priority=5,reg1=0,actions=clone(set_field:0x1->reg1,set_field:02:00:00:00:00:0d->eth_src,"
                      "output:TABLE),output:2",
                      "priority=9,reg1=0x1,actions=output:3"],
    "another in_port": ["priority=5,in_port=1,actions=clone(resubmit(2,1)),output:3",
                        "table=1,in_port=2,actions=output:4", "table=1,in_port=1,actions=output:2"],
    "written inside runs inside": ["actions=clone(resubmit(,1)),output:3",
                                   "table=1,actions=write_actions(set_field:02:00:00:00:00:0e->eth_dst,output:4)"],
}


def _packets(topo):
    return [(v, f) for v in sorted(topo.port_map)[:2] for f in FRAMES]


@pytest.mark.ovs
@pytest.mark.parametrize("name", sorted(CASES))
def test_lookups_inside_a_clone_run_as_open_vswitch_runs_them(name):
    rules = [parse_rule(t) for t in CASES[name]]
    tables = 1 + max(r.table for r in rules)
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare(rules, [], [(1, f) for f in FRAMES], tables)
        assert not res.mismatches, res.mismatches[0]
        assert res.frames_compared >= 2
        topo = TOPOS["k3"]
        with Oracle(sb, topo) as o:
            o.load_virtual(rules)
            o.load_translation(translate(rules, topo))
            rep = o.compare(_packets(topo))
        assert not rep.mismatches, rep.mismatches[0]
        assert rep.outputs >= 2


def _clone(rule):
    (c,) = [a for a in rule.apply_actions if type(a) is Clone]
    return c


def test_a_lookup_in_table_0_inside_a_clone_runs_with_the_mark_at_0():
    rule = parse_rule("priority=5,actions=clone(set_field:0x1->reg1,output:TABLE),output:2")
    for _sw, r in translate([rule], TOPOS["k3"]).derived_rules(rule):
        assert _clone(r).actions[-2:] == (SetField("pkt_mark", 0), Resubmit(OFPP_IN_PORT, 0))


def test_a_resubmit_with_another_in_port_inside_a_clone_names_its_physical_number():
    topo = TOPOS["k2"]  # virtual port 5 is snic0:1
    rule = parse_rule("priority=5,in_port=6,actions=clone(resubmit(5,1))")
    ((sw, r),) = translate([rule], topo).derived_rules(rule)
    assert sw == "snic0" and _clone(r).actions == (Resubmit(1, 1),)
    with pytest.raises(TranslationError, match="resubmit with in_port 5"):  # (5's rules are not on the host)
        translate([parse_rule("priority=5,in_port=1,actions=clone(resubmit(5,1))")], topo)


def test_outside_a_flow_lookups_inside_a_clone_stay_refused():
    from tandem.oneswitch.clone_translate import check_clone

    with pytest.raises(TranslationError, match="resubmit inside clone"):
        check_clone(_clone(parse_rule("actions=clone(resubmit(,1))")), "clone in a PACKET_OUT", packet_out=True)
    check_clone(_clone(parse_rule("actions=clone(resubmit(,1))")), "a flow")


@pytest.mark.ovs
def test_dp_core_and_the_translation_run_clones_with_lookups_as_open_vswitch():
    assert_item_runs_as_ovs(ITEM[0])
