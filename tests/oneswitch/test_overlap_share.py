"""Two virtual rules of equal priority whose copies would be one physical rule
(overlap_share.py): both are accepted, one physical entry stands for both (the same
one whatever order they came in), the other rule's copy counts nothing and takes the
entry's place when the first rule goes."""

from tandem.oneswitch.translate import Compiler, pkey, translate, vkey
from tandem.rules.ir import ApplyActions, Match, Output, Rule, WriteActions, OFPP_FLOOD
from test_oneswitch_translate import TOPO

LLDP = 0x88CC
WILD = Rule(Match.of(eth_type=LLDP), (ApplyActions((Output(2),)),), priority=0xFFFF)  # copied once per in_port on the sNICs
AT3 = Rule(Match.of(in_port=3, eth_type=LLDP), (ApplyActions((Output(1),)),), priority=0xFFFF)  # port 3 is snic0:1
FLOODS = Rule(Match.of(eth_type=0x0800), (WriteActions((Output(OFPP_FLOOD),)),), table=1, priority=7)  # per in_port too
AT1 = Rule(Match.of(in_port=1, eth_type=0x0800), (WriteActions((Output(3),)),), table=1, priority=7)


def test_both_rules_are_accepted_and_one_entry_stands_for_both_whatever_the_order():
    for tr in (translate([WILD, AT3], TOPO), translate([AT3, WILD], TOPO)):  # (flow ids differ with the order)
        (shared,) = [p for p in tr.per_switch["snic0"] if p.priority == 0xFFFF
                     and p.match == Match.of(in_port=1, eth_type=LLDP)]
        assert [r for r in (WILD, AT3) if ("snic0", shared) in tr.derived_rules(r)] == [AT3]  # (the smaller match's repr)
        assert sorted(sw for sw, _ in tr.derived_rules(WILD)) == ["host", "snic1"]  # its copy on snic0 waits
        assert len(tr.derived_rules(AT3)) == 1


def test_the_waiting_copy_takes_the_entry_when_the_other_rule_goes_and_nothing_changes_the_other_way():
    for first, second in ((WILD, AT3), (AT3, WILD), (FLOODS, AT1), (AT1, FLOODS)):
        comp = Compiler(TOPO)
        comp.add(first)
        comp.add(second)
        comp.take_journal()
        shared = {(sw, pkey(p)) for sw, p in comp.copies[vkey(first)]} & {
            (sw, pkey(p)) for k in (vkey(second),) for sw, p in comp.copies[k] + comp.shared.shadowed.get(k, [])}
        shared |= {(sw, pkey(p)) for sw, p in comp.shared.shadowed.get(vkey(first), [])}
        assert len(shared) == 1
        (sw, pk), = shared
        installed = comp.rules[sw][pk]
        owner = next(k for k in (vkey(first), vkey(second)) if (sw, installed) in comp.copies[k])
        other = vkey(second) if owner == vkey(first) else vkey(first)
        waiting = dict((pkey(p), p) for s, p in comp.shared.shadowed[other] if s == sw)[pk]
        comp.remove(owner)
        assert comp.rules[sw][pk] == waiting and (sw, waiting) in comp.copies[other]
        assert ("rule", sw, pk) in comp.take_journal()  # (the plan replaces the entry)
        assert not comp.shared.claims and not comp.shared.shadowed
        comp.add(comp.vrules.get(owner) or (first if vkey(first) == owner else second))
        comp.take_journal()
        # removing the rule whose copy waits changes no physical entry there
        now = comp.rules[sw][pk]
        loser = other if (sw, now) not in comp.copies[other] else owner
        comp.remove(loser)
        assert comp.rules[sw][pk] == now and ("rule", sw, pk) not in comp.take_journal()
        assert not comp.shared.claims and not comp.shared.shadowed
