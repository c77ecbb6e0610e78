"""Property tests: parse(format(r)) == r and format is a fixed point.

Two rule sources: the seeded generator (pool values, all features incl. POF)
and direct hypothesis strategies over full-width field values and arbitrary
masks (exercises IPv6 compression, non-contiguous masks, reserved ports ...).
Together they run > 1,000 examples per test session.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.rules.generate import ALL_FEATURES, OPTIONAL_FEATURES, random_group, random_rule
from tandem.rules.ir import OFPCML_NO_BUFFER, OFPP_CONTROLLER, ApplyActions, Output, Rule
from tandem.rules.ofctl import OfctlSyntaxError, format_group, format_rule, parse_dumped_flow, parse_group, parse_rule
from tandem.rules.prereq import rule_problems

from rule_strategies import rules

EVERYTHING = ALL_FEATURES | OPTIONAL_FEATURES


def assert_round_trip(rule: Rule, check_actions: bool = True) -> None:
    text = format_rule(rule)
    again = parse_rule(text, check_actions=check_actions)
    assert again == rule, f"{text}\n{rule}\n{again}"
    assert format_rule(again) == text
    if check_actions:
        assert rule_problems(rule) == []


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**64 - 1), tables=st.integers(1, 6))
def test_generated_rules_round_trip(seed: int, tables: int) -> None:
    rng = random.Random(seed)
    assert_round_trip(random_rule(rng, ports=[1, 2, 3, 7, 100], tables=tables, features=EVERYTHING, groups=[1, 2]))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), gid=st.integers(0, 2**32 - 257))
def test_generated_groups_round_trip(seed: int, gid: int) -> None:
    g = random_group(random.Random(seed), gid, [1, 2, 3])
    assert parse_group(format_group(g)) == g
    assert format_group(parse_group(format_group(g))) == format_group(g)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules())
def test_arbitrary_rules_round_trip(rule: Rule) -> None:
    # Arbitrary action lists may break OVS's action prerequisites; the text form still round-trips.
    assert_round_trip(rule, check_actions=False)
    problems = rule_problems(rule)
    if problems:
        with pytest.raises(OfctlSyntaxError):
            parse_rule(format_rule(rule))
    else:
        assert parse_rule(format_rule(rule)) == rule


def test_empty_apply_actions_print_as_drop_and_parse_as_no_instruction() -> None:
    # The one documented non-identity: ApplyActions(()) carries no behaviour.
    r = Rule(instructions=(ApplyActions(()),))
    assert format_rule(r) == "table=0,priority=32768,actions=drop"
    assert parse_rule(format_rule(r)) == Rule()


def test_controller_default_max_len() -> None:
    r = parse_rule("actions=controller")
    assert r.apply_actions == (Output(OFPP_CONTROLLER, OFPCML_NO_BUFFER),)
    assert format_rule(r).endswith("actions=CONTROLLER:65535")


def test_dump_flows_lines_with_statistics_and_flags() -> None:
    # Lines as OVS 3.1 dump-flows prints them (with and without --no-stats).
    want = parse_rule("priority=5,idle_timeout=100,in_port=1,actions=output:1")
    for line in (" cookie=0x0, duration=0.031s, table=0, n_packets=0, n_bytes=0, idle_timeout=100, "
                 "send_flow_rem reset_counts priority=5,in_port=1 actions=output:1",
                 "idle_timeout=100, send_flow_rem reset_counts priority=5,in_port=1 actions=output:1"):
        assert parse_dumped_flow(line) == want
    # OVS's own spellings map to the same IR as ours
    assert parse_dumped_flow("cookie=0x5, table=2, priority=9,tcp,dl_vlan=10,dl_vlan_pcp=3,nw_tos=32,tp_dst=0x50/0xfff0 "
                             "actions=set_field:4101->vlan_vid,set_field:32->nw_tos,goto_table:3") == parse_rule(
        "table=2,priority=9,cookie=0x5,tcp,vlan_vid=0x100a,vlan_pcp=3,ip_dscp=8,tcp_dst=0x50/0xfff0,"
        "actions=set_field:0x1005->vlan_vid,set_field:8->ip_dscp,goto_table:3")
