"""A move reading in_port inside ``clone(…)``: OneSwitch pins it per copy of the rule, as
a move in the rule's own list (a load of the virtual port the copy runs for); a push of
in_port there stays refused. Against Open vSwitch 3.1: a bounded run of ``tandem bench
of13_oracle -- --items clone_in_port`` (dp-core and the translation)."""

import pytest

from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.translate import translate
from tandem.rules.ir import Clone, MoveField, SetField
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs

ITEM = ("clone_in_port",)


def _clones(rule):
    return [a for a in rule.apply_actions if type(a) is Clone]


def test_a_move_from_in_port_inside_a_clone_becomes_a_load_of_each_copys_virtual_port():
    topo = TOPOS["k3"]
    rule = parse_rule("priority=5,actions=clone(move:NXM_OF_IN_PORT[]->NXM_OF_ETH_SRC[0..15],output:2),output:1")
    tr = translate([rule], topo)
    loads = {}
    for sw, r in tr.derived_rules(rule):
        (c,) = _clones(r)
        assert not any(type(a) is MoveField for a in c.actions)
        (load,) = [a for a in c.actions if type(a) is SetField and a.field == "eth_src"]
        loads[(sw, r.match.get("in_port").value)] = load.value
    # one copy per in_port, each loading its own virtual port's number (a reserved in_port,
    # LOCAL or CONTROLLER on the host, is its own number)
    virtual = {(w.switch, w.port): v for v, w in topo.port_map.items()}
    assert set(virtual) <= set(loads)
    assert all(value == virtual.get(k, k[1]) & 0xFFFF for k, value in loads.items()), loads


def test_a_push_of_in_port_inside_a_clone_stays_refused():
    with pytest.raises(TranslationError, match="push reading it"):
        translate([parse_rule("priority=5,actions=clone(push:NXM_OF_IN_PORT[],output:2)")], TOPOS["k3"])


@pytest.mark.ovs
def test_dp_core_and_the_translation_run_clones_reading_in_port_as_open_vswitch():
    assert_item_runs_as_ovs(ITEM[0])
