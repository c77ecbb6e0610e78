"""An output_reg whose port number only the pipeline knows, split into one rule
per value (``oneswitch/output_reg_split.py``, docs/oneswitch.md section 7), pure
(no OVS): the parts cover exactly what the rule matches, each packet meets one,
with the output the virtual switch would make; the forms still refused, and why.
The OVS oracle: ``tandem bench of13_oracle -- --items output_reg_runtime``.

Topology: virtual ports 1, 2 on the host (physical 1, 2), 3 on snic0 (physical 1),
4 on snic1 (physical 1); PCIe host:100-snic0:100, host:101-snic1:100."""

import random

import pytest

from tandem.oneswitch.extension import uses_normal
from tandem.oneswitch.output_reg_split import may_output_normal, runtime_output_reg, split_output_reg
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import Compiler, TranslationError, translate
from tandem.rules.ir import (
    OFPP_LOCAL, OFPP_NORMAL, REG_VIEWS, ApplyActions, Conjunction, Match, MoveField, Output, OutputReg, Resubmit, Rule, SetField,
    StackPop, Subfield,
)

from test_resubmit_output_reg_translate import TOPO
VPORTS = (1, 2, 3, 4, OFPP_LOCAL)
# OpenFlow 1.0 numbers an output_reg outputs to: IN_PORT, TABLE, NORMAL, FLOOD, ALL, CONTROLLER, LOCAL
RESERVED = {v: v | 0xFFFF0000 for v in range(0xFFF8, 0xFFFF)}
ONE = Topology.build({"host": "host"}, [], {1: "host:1", 2: "host:2"})


def out_rule(src, match=None, pre=(), post=(Output(2),), table=1, **kw):
    return Rule(Match.of(**(match or {})), (ApplyActions(tuple(pre) + (OutputReg(src),) + tuple(post)),),
                table=table, priority=9, **kw)


def _value(regs, src):
    first, count = REG_VIEWS[src.field]
    view = 0
    for k in range(count):
        view = view << 32 | regs.get(f"reg{first + k}", 0)
    return (view >> src.ofs) & ((1 << src.n_bits) - 1)


def _meets(match, regs):
    return all(fm.matches(regs.get(k, 0)) for k, fm in match if isinstance(k, str) and k.startswith("reg"))


@pytest.mark.parametrize("src, match", [
    (Subfield("reg0", 0, 12), {}),
    (Subfield("reg2", 4, 15), {"reg2": (0x10, 0x30)}),
    (Subfield("xreg0", 28, 8), {"reg1": (0x10000000, 0x30000000)}),  # bits of two registers
    (Subfield("xxreg0", 60, 12), {}),
    (Subfield("reg0", 0, 32), {"reg0": (0x1, 0xFFFF8001)}),  # 32 bits, but the match rules out TABLE and NORMAL
    (Subfield("reg3", 0, 16), {}),  # all of them
])
def test_the_parts_hold_every_packet_once_with_the_virtual_output(src, match):
    rule = out_rule(src, match)
    parts = split_output_reg(rule, runtime_output_reg(rule), VPORTS)
    regs_named = [f"reg{i}" for i in range(REG_VIEWS[src.field][0], sum(REG_VIEWS[src.field]))]
    rng = random.Random(7)
    pool = [0, 1, 2, 3, 4, 5, 0xFF, 0xFFF8, 0xFFF9, 0xFFFA, 0xFFFD, 0xFFFE, 0x10000, 0x80000000, 0x10, 0x30,
            0x10000003, 0x20000001]
    met = set()
    for _ in range(4000):
        regs = {r: rng.choice(pool + [rng.getrandbits(32), rng.getrandbits(4) << 28 | rng.getrandbits(4)])
                for r in regs_named}
        hits = [p for p in parts if _meets(p.match, regs)]
        assert len(hits) == _meets(rule.match, regs)
        if hits:
            v = _value(regs, src)
            want = v if v in VPORTS else RESERVED.get(v)
            outs = [a.port for a in hits[0].apply_actions if type(a) is Output]
            assert outs == ([want] if want is not None else []) + [2]
            met.add(want)
    assert met & {1, 2, 3, 4} and None in met  # (the draws reach ports and numbers that send nothing)


def test_a_runtime_output_reg_is_translated_as_its_parts_on_every_switch():
    tr = translate([out_rule(Subfield("reg0", 0, 8))], TOPO)
    for sw, rules in tr.per_switch.items():
        parts = {p.match.get("reg0"): p.apply_actions for p in rules if p.table == 1 and p.priority == 9}
        # a part per port (IN_PORT .. LOCAL do not fit 8 bits); the others only output:2, as the rule without it
        ports = {fm.value: acts for fm, acts in parts.items() if fm.mask == 0xFF and 1 <= fm.value <= 4}
        rest = {acts for fm, acts in parts.items() if not (fm.mask == 0xFF and 1 <= fm.value <= 4)}
        assert len(ports) == 4 and len(rest) == 1 and all(acts not in rest for acts in ports.values())
        assert sum(bin(fm.mask).count("1") < 8 for fm in parts) >= 1  # (and masked ones for the ranges)
    host = {p.match.get("reg0"): p.apply_actions for p in tr.per_switch["host"] if p.table == 1}
    exact = {fm.value: acts for fm, acts in host.items() if fm.mask == 0xFF}
    assert exact[1] == (Output(1), Output(2)) and exact[2] == (Output(2), Output(2))  # local: the physical ports
    assert exact[0] == exact[5] == (Output(2),)


def test_the_split_rule_is_one_virtual_rule_and_goes_away_whole():
    comp = Compiler(TOPO)
    rule = out_rule(Subfield("xreg0", 28, 8))
    comp.add(rule)
    key = (rule.table, rule.priority, rule.match)
    assert len(comp.copies[key]) > 3
    comp.remove(key)
    assert not any(comp.rules[sw] for sw in comp.rules)


@pytest.mark.parametrize("rule, why", [
    (out_rule(Subfield("reg0", 0, 8), pre=(SetField("reg0", 0x100, 0xF00),)), "may write part of that register"),
    (out_rule(Subfield("xreg0", 0, 8), pre=(SetField("reg1", 0x100, 0xF00),)), "may write part"),  # reg1: its low half
    (out_rule(Subfield("reg1", 0, 8), pre=(MoveField(Subfield("reg2", 0, 8), Subfield("xreg0", 0, 8)),)),
     "may write part"),
    (out_rule(Subfield("reg1", 0, 8), pre=(StackPop(Subfield("reg1", 8, 8)),)), "may write part"),
    (out_rule(Subfield("reg1", 0, 8), pre=(Resubmit(0xFFFFFFF8, 2),)), "may write part"),
    (out_rule(Subfield("reg1", 0, 8), idle_timeout=10), "idle timeout"),
    (out_rule(Subfield("eth_dst", 0, 8), {"eth_type": 0x800}), "only a register's"),
])
def test_forms_still_refused(rule, why):
    with pytest.raises(TranslationError, match="output_reg") as e:
        translate([rule], TOPO)
    assert why in str(e.value) and e.value.of_error == (2, 5)


@pytest.mark.parametrize("match, normal, table", [
    ({}, True, True), ({"reg0": (1, 1)}, False, True), ({"reg0": (0, 1)}, True, False), ({"reg0": (0, 0xFF00)}, False, False),
])
def test_table_and_normal_numbers_are_the_lookup_and_normal(match, normal, table):
    rule = out_rule(Subfield("reg0", 0, 16), match, post=())
    assert may_output_normal(rule) is normal and uses_normal(rule) is normal
    (host,) = translate([rule], ONE).per_switch.values()
    acts = {p.match.get("reg0").value: p.apply_actions for p in host if p.match.get("reg0").mask == 0xFFFF}
    assert (acts.get(0xFFFA) == (Output(OFPP_NORMAL),)) is normal
    assert (acts.get(0xFFF9) == (SetField("pkt_mark", 0), Resubmit(0xFFFFFFF8, 0))) is table
    if normal:  # NORMAL runs on the host: with sNICs, only while every pipeline is homed there
        with pytest.raises(TranslationError, match="NORMAL"):
            translate([rule], TOPO)


def test_a_table_0_lookup_part_and_a_use_of_the_mark_refuse_each_other():
    comp = Compiler(ONE)
    comp.add(out_rule(Subfield("reg0", 0, 16), {"reg0": (1, 1)}))
    with pytest.raises(TranslationError, match="table 0"):
        comp.add(Rule(Match.of(pkt_mark=5), (ApplyActions((Output(1),)),), table=2))


def test_without_a_runtime_output_reg_nothing_outputs_to_normal():
    assert not may_output_normal(out_rule(Subfield("reg0", 0, 16), {"reg0": 3}))  # the match fixes it
    assert not may_output_normal(out_rule(Subfield("reg0", 0, 12)))
    assert not may_output_normal(Rule(Match.of(), (ApplyActions((Output(1),)),)))


def test_an_earlier_write_of_another_register_does_not_matter():
    rule = out_rule(Subfield("reg1", 0, 4), pre=(SetField("reg2", 3), MoveField(Subfield("reg3", 0, 8), Subfield("reg4", 0, 8))))
    assert len(translate([rule], TOPO).per_switch["host"]) > 1


def test_conjunctive_flows_and_a_split_rule_do_not_share_a_table():
    conj = Rule(Match.of(eth_type=0x800), (ApplyActions((Conjunction(5, 1, 2),)),), table=1, priority=9)
    comp = Compiler(TOPO)
    comp.add(conj)
    with pytest.raises(TranslationError):
        comp.add(out_rule(Subfield("reg0", 0, 8)))
