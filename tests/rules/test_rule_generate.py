"""The seeded rule generator: deterministic, valid, feature switches honoured."""

from __future__ import annotations

import random

from tandem.rules.generate import ALL_FEATURES, OF13_FEATURES, random_groups, random_rule, random_ruleset
from tandem.testing.of13_oracle import OF13_FIELDS
from tandem.rules.ir import (
    FIELDS, NXM_FIELDS, ApplyActions, ClearActions, DecTtl, GotoTable, GroupAction, PofAddField, PofDelField, PofField, PopVlan,
    PushVlan, SetField, WriteActions, WriteMetadata,
)

PORTS = [1, 2, 3]


def _actions(rule):
    for ins in rule.instructions:
        if isinstance(ins, (ApplyActions, WriteActions)):
            yield from ins.actions


def test_same_seed_same_rules() -> None:
    a = random_ruleset(random.Random(42), 200, PORTS, tables=3)
    b = random_ruleset(random.Random(42), 200, PORTS, tables=3)
    c = random_ruleset(random.Random(43), 200, PORTS, tables=3)
    assert a == b
    assert a != c


def test_priorities_distinct_per_table_and_gotos_forward() -> None:
    rules = random_ruleset(random.Random(1), 600, PORTS, tables=4)
    seen = {(r.table, r.priority) for r in rules}
    assert len(seen) == len(rules)
    gotos = [r for r in rules if r.goto is not None]
    assert gotos and all(r.goto > r.table and r.goto < 4 for r in gotos)
    assert any("metadata" in r.match for r in rules)
    assert all("metadata" not in r.match for r in rules if r.table == 0)


def test_default_features_cover_the_syntax() -> None:
    rules = random_ruleset(random.Random(2), 1500, PORTS, tables=3, groups=[1, 2])
    kinds = {type(a) for r in rules for a in _actions(r)} | {type(i) for r in rules for i in r.instructions}
    assert {SetField, PushVlan, PopVlan, DecTtl, GroupAction, ClearActions, WriteActions, WriteMetadata,
            GotoTable} <= kinds
    matched = {k for r in rules for k, _ in r.match}
    assert set(FIELDS) - set(OF13_FIELDS) - NXM_FIELDS <= matched
    assert not matched & (set(OF13_FIELDS) | NXM_FIELDS)  # the rest of OF1.3 and OVS's extensions are opt-in
    assert any(fm.mask is not None for r in rules for _, fm in r.match)
    assert not any(isinstance(k, PofField) for k in matched)  # POF is opt-in
    assert all(r.idle_timeout == r.hard_timeout == 0 for r in rules)  # timeouts are opt-in


def test_prerequisites_hold() -> None:
    for r in random_ruleset(random.Random(3), 800, PORTS, tables=2, groups=[1]):
        for key, _ in r.match:
            for pkey, pval in FIELDS[key].prereqs:
                got = r.match.get(pkey)
                if pkey == "vlan_vid":
                    assert got is not None and got.value & 0x1000
                else:
                    assert got is not None and got.mask is None and got.value == pval, (key, r)
            for pkey, vals in FIELDS[key].prereq_any:
                got = r.match.get(pkey)
                assert got is not None and got.value in vals


def test_features_switch_parts_off() -> None:
    features = ALL_FEATURES - {"set_field", "vlan_actions", "groups", "vlan", "ipv6", "masks", "goto"}
    rules = random_ruleset(random.Random(4), 500, PORTS, tables=3, features=features, groups=[1])
    acts = [a for r in rules for a in _actions(r)]
    assert not any(isinstance(a, (SetField, PushVlan, PopVlan, GroupAction)) for a in acts)
    assert all(r.goto is None for r in rules)
    for r in rules:
        assert "vlan_vid" not in r.match and "ipv6_src" not in r.match and "ipv6_dst" not in r.match
        assert all(fm.mask is None for _, fm in r.match)


def test_pof_feature_adds_pof_parts() -> None:
    rules = random_ruleset(random.Random(5), 300, PORTS, features=ALL_FEATURES | {"pof"})
    assert any(isinstance(k, PofField) for r in rules for k, _ in r.match)
    assert any(isinstance(a, (PofAddField, PofDelField)) for r in rules for a in _actions(r))


def test_random_rule_pins_table_and_priority() -> None:
    r = random_rule(random.Random(6), PORTS, tables=5, table=2, priority=77)
    assert (r.table, r.priority) == (2, 77)


def test_groups_are_valid_and_use_given_ports() -> None:
    groups = random_groups(random.Random(8), 30, PORTS)
    assert {g.type for g in groups} == {"all", "select", "indirect", "fast_failover"}
    for g in groups:
        for b in g.buckets:
            assert all(a.port in PORTS for a in b.actions if hasattr(a, "port"))
            if g.type == "select":
                assert b.weight >= 1


def test_ipv6_masks_avoid_the_ovs_text_quirk() -> None:
    # ovs-ofctl 3.1 reads "addr/7fff::" as prefix length 7 + junk; generated masks must not print like that.
    from tandem.rules.ofctl_match import format_value

    seen = 0
    for r in random_ruleset(random.Random(11), 3000, PORTS, features=ALL_FEATURES - {"ipv4", "arp", "mpls"}):
        for key in ("ipv6_src", "ipv6_dst"):
            fm = r.match.get(key)
            if fm is not None and fm.mask is not None:
                mask_text = format_value(key, fm.value, fm.mask).split("/")[1]
                seen += not mask_text.isdigit()
                assert mask_text.isdigit() or not mask_text[0].isdigit(), mask_text
    assert seen  # some non-contiguous masks were drawn


def test_default_features_never_set_extension_fields() -> None:
    rules = random_ruleset(random.Random(3), 1500, PORTS, tables=3, groups=[1, 2])
    setf = {a.field for r in rules for a in _actions(r) if isinstance(a, SetField)}
    assert len(setf) > 10 and not setf & NXM_FIELDS


def test_nx_features_cover_the_extension_fields_and_actions() -> None:
    from tandem.rules.generate import NX_FEATURES
    from tandem.rules.generate_nx import REGS
    from tandem.rules.ir import Exit, MoveField, Note, StackPop, StackPush
    from tandem.rules.prereq import rule_problems

    rules = random_ruleset(random.Random(12), 3000, PORTS, tables=3, features=ALL_FEATURES | OF13_FEATURES | NX_FEATURES)
    matched = {k for r in rules for k, _ in r.match}
    assert {"pkt_mark", "tcp_flags", "ip_frag", "nw_ttl", "mpls_ttl", *REGS} <= matched
    acts = [a for r in rules for a in _actions(r)]
    assert {MoveField, StackPush, StackPop, Note, Exit} <= {type(a) for a in acts}
    assert any(isinstance(a, SetField) and a.mask is not None for a in acts)
    assert {"pkt_mark", "nw_ttl", "mpls_ttl", *REGS} <= {a.field for a in acts if isinstance(a, SetField)}
    assert not [p for r in rules for p in rule_problems(r)]
    # registers and the mark are written in one table and matched in a later one
    assert any(r.table > 0 and "pkt_mark" in r.match for r in rules)


def test_of13_features_cover_every_field_and_action() -> None:
    from tandem.rules.ir import DecMplsTtl, PopMpls, PushMpls, SetMplsTtl, SetNwTtl, SetQueue
    from tandem.rules.prereq import rule_problems

    rules = random_ruleset(random.Random(6), 6000, PORTS, tables=3, features=ALL_FEATURES | OF13_FEATURES)
    matched = {k for r in rules for k, _ in r.match}
    assert set(FIELDS) - NXM_FIELDS <= matched
    kinds = {type(a) for r in rules for a in _actions(r)}
    assert {PushMpls, PopMpls, SetMplsTtl, DecMplsTtl, SetNwTtl, SetQueue} <= kinds
    set_on = {a.field for r in rules for a in _actions(r) if isinstance(a, SetField)}
    assert {f for f in OF13_FIELDS if FIELDS[f].settable} <= set_on
    assert all(not rule_problems(r) for r in rules)
