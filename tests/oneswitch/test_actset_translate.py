"""``actset_output=P`` in the OneSwitch translation (oneswitch/actset_translate.py):
each copy matches the physical output that stands for P on its switch, and a rule
that would make one physical output stand for two written ports where a copy
matches it is refused, naming both."""

from __future__ import annotations

import pytest

from tandem.oneswitch.compiler import Compiler
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.topology import Topology
from tandem.rules.actset_output import OFPP_UNSET
from tandem.rules.ir import OFPP_CONTROLLER
from tandem.rules.ofctl import parse_rule

# port 1 on the host, 2 on snic0, 3 and 4 on snic1; PCIe: host:100-snic0:100, host:101-snic1:100
TOPO = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                      [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                      {1: "host:1", 2: "snic0:1", 3: "snic1:1", 4: "snic1:2"})


def _forms(comp: Compiler, text: str) -> dict[str, int]:
    rule = parse_rule(text)
    comp.add(rule)
    key = (rule.table, rule.priority, rule.match)
    return {sw: r.match.get("actset_output").value for sw, r in comp.copies[key]}


def test_each_copy_matches_the_physical_output_that_stands_for_the_port():
    comp = Compiler(TOPO)
    assert _forms(comp, "table=1,actset_output=2,actions=output:1") == {"host": 100, "snic0": 1, "snic1": 100}
    assert _forms(comp, "table=1,in_port=3,actset_output=4,actions=output:1") == {"snic1": 2}
    unset = _forms(comp, "table=2,actset_output=UNSET,actions=output:1")
    assert unset == dict.fromkeys(("host", "snic0", "snic1"), OFPP_UNSET)
    assert set(_forms(comp, "table=2,actset_output=CONTROLLER,actions=output:1").values()) == {OFPP_CONTROLLER}


def test_a_written_port_with_the_same_physical_form_is_refused_with_both_named():
    comp = Compiler(TOPO)
    comp.add(parse_rule("table=0,actions=write_actions(output:2),goto_table:1"))
    comp.add(parse_rule("table=1,actset_output=3,actions=output:1"))  # (2 and 3 differ on every switch)
    with pytest.raises(TranslationError) as e:  # on snic0, 1 and 3 both go out on PCIe port 100
        comp.add(parse_rule("table=0,priority=9,actions=write_actions(output:1),goto_table:1"))
    assert "output:1" in e.value.reason and "actset_output=3" in e.value.reason and "snic0" in e.value.reason
    comp.add(parse_rule("table=0,priority=8,actions=write_actions(output:3),goto_table:1"))
    with pytest.raises(TranslationError):  # a matcher of 4 beside the writer of 3 (snic1's other port: host:101)
        comp.add(parse_rule("table=1,priority=7,actset_output=4,actions=drop"))


def test_a_matcher_and_a_writer_of_floods_or_no_port_are_refused_where_they_meet():
    comp = Compiler(TOPO)
    comp.add(parse_rule("table=0,actions=write_actions(output:FLOOD),goto_table:1"))
    with pytest.raises(TranslationError):  # FLOOD goes to the host over PCIe, as port 1 does from an sNIC
        comp.add(parse_rule("table=1,actset_output=1,actions=drop"))
    comp.add(parse_rule("table=1,in_port=1,actset_output=1,actions=drop"))  # (its one copy is on the host)
    comp.add(parse_rule("table=0,priority=5,actions=write_actions(output:77),goto_table:1"))
    with pytest.raises(TranslationError):  # every number no port has is output:0 there
        comp.add(parse_rule("table=1,priority=3,actset_output=78,actions=drop"))


def test_removing_the_writer_lets_the_matcher_in_and_a_bad_number_gets_bad_value():
    comp = Compiler(TOPO)
    w = parse_rule("table=0,actions=write_actions(output:1),goto_table:1")
    comp.add(w)
    m = parse_rule("table=1,actset_output=3,actions=drop")
    with pytest.raises(TranslationError):
        comp.add(m)
    comp.remove((w.table, w.priority, w.match))
    comp.add(m)
    with pytest.raises(TranslationError) as e:
        comp.add(parse_rule("table=1,actset_output=0xff00,actions=drop"))
    assert e.value.of_error == (4, 4)  # BAD_MATCH/BAD_VALUE, as Open vSwitch


def test_a_reshaped_actset_output_match_keeps_conjunctive_flows_out_of_its_table():
    comp = Compiler(TOPO)
    comp.add(parse_rule("table=1,actset_output=2,actions=drop"))  # (host: 100, snic1: 100, as for 4 there)
    with pytest.raises(TranslationError):
        comp.add(parse_rule("table=1,priority=5,ip,actions=conjunction(1,1/2)"))
    comp.add(parse_rule("table=2,priority=5,ip,actions=conjunction(1,1/2)"))
    comp.add(parse_rule("table=2,actset_output=UNSET,actions=drop"))  # (the same on every switch)
