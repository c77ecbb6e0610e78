"""Conjunctive flows (``conjunction(id, k/n)``, ``conj_id``) through the translator:
copied like any rule (the wildcard ones of table 0 with pkt_mark=0, the in_port
ones to their switch only), and refused exactly where a table would hold them
beside a rule whose copies reshape their match (conj_ledger.py). The OVS
oracle (test_of13_translation.py, item ``conjunction``) checks the behaviour."""

import pytest

from tandem.oneswitch.translate import TAG_FIELD, Compiler, TranslationError, translate
from tandem.oneswitch.topology import Topology
from tandem.rules.ir import ApplyActions, Conjunction, GotoTable, Match, Output, Rule, WriteActions
from tandem.rules.ir import OFPP_FLOOD

TOPO = Topology.build(
    {"host": "host", "snic0": "snic", "snic1": "snic"},
    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
    {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"},
)
TCP = dict(eth_type=0x0800, ip_proto=6)


def soft(cid, k, n, table=0, priority=10, **match):
    return Rule(Match.of(**TCP, **match), (ApplyActions((Conjunction(cid, k, n),)),), table=table, priority=priority)


def hard(*actions, table=0, priority=5, write=None, **match):
    ins = [ApplyActions(tuple(actions))] if actions else []
    if write:
        ins.append(WriteActions(tuple(write)))
    return Rule(Match.of(**match), tuple(ins), table=table, priority=priority)


def test_conjunctive_flows_are_copied_like_any_rule():
    rules = [soft(7, 1, 2, tcp_src=80), soft(7, 2, 2, in_port=3), hard(Output(4), conj_id=7)]
    tr = translate(rules, TOPO)
    a, b, c = (dict(tr.derived_rules(r)) for r in rules)
    assert set(a) == set(c) == {"host", "snic0", "snic1"}
    assert a["snic0"].match == rules[0].match.with_field(TAG_FIELD, 0)  # table 0: no flow id
    assert a["snic0"].instructions == rules[0].instructions  # nothing switch-specific in it
    assert set(b) == {"snic0"} and b["snic0"].match.get("in_port").value == 1
    assert c["host"].match.get("conj_id").value == 7


@pytest.mark.parametrize("other", [
    hard(Output(1), priority=3, pkt_mark=0),  # table 0, a pkt_mark match: it becomes the exact 0
    hard(Output(1), priority=3, pkt_mark=(0, 0xF0)),
])
def test_a_table_with_conjunctive_flows_refuses_a_rule_whose_copies_reshape_its_match(other):
    for first, second in ((soft(1, 1, 2, tcp_dst=22), other), (other, soft(1, 1, 2, tcp_dst=22))):
        comp = Compiler(TOPO)
        comp.add(first)
        with pytest.raises(TranslationError, match="conjunctive flows beside"):
            comp.add(second)
        assert len(comp.vrules) == 1


def test_a_conjunctive_flow_copied_per_in_port_is_refused_and_a_mark_0_fails_is_no_reshaping():
    comp = Compiler(TOPO)
    with pytest.raises(TranslationError, match="conjunctive flows beside"):
        comp.add(soft(2, 1, 2, priority=0xFFFF, tcp_src=5))  # table 0, 65535: one copy per in_port on sNICs
    comp.add(soft(2, 1, 2, priority=0xFFFF, tcp_src=5, in_port=1))
    comp.add(hard(Output(1), priority=3, pkt_mark=5))  # no copy at all: table 0 holds no marked packet
    assert len(comp.vrules) == 2


def test_a_flooding_written_output_beside_conjunctive_flows_is_refused_in_that_table_only():
    flood = hard(write=[Output(OFPP_FLOOD)], table=1, priority=3)
    comp = Compiler(TOPO)
    comp.add(soft(1, 1, 2, table=1, tcp_dst=22))
    with pytest.raises(TranslationError, match="table 1 would hold conjunctive flows"):
        comp.add(flood)
    comp.add(Rule(flood.match, flood.instructions, table=2, priority=3))  # another table: fine
    # the conjunctive flow replaced by an ordinary one (same key): the table takes the flood rule
    comp.add(hard(Output(2), table=1, priority=10, **TCP, tcp_dst=22))
    comp.add(flood)
    with pytest.raises(TranslationError):
        comp.add(soft(2, 1, 2, table=1, tcp_dst=80))
    comp.remove((1, 3, flood.match))
    comp.add(soft(2, 1, 2, table=1, tcp_dst=80))


def test_a_rule_pinned_to_an_in_port_is_not_reshaped_nor_an_ordinary_one_at_65535():
    comp = Compiler(TOPO)
    comp.add(soft(1, 1, 2, tcp_dst=22))
    comp.add(hard(Output(2), priority=0xFFFF, in_port=3))  # one copy, its own match
    comp.add(hard(Output(2), priority=0xFFFF, eth_type=0x88CC))  # copied per in_port, but nothing can hide it
    comp.add(hard(Output(2), priority=4, in_port=1, pkt_mark=0))
    comp.add(Rule(Match.of(**TCP), (ApplyActions((Output(1),)), GotoTable(2)), priority=2))
