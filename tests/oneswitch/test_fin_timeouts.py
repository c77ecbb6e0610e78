"""oneswitch/fin_timeouts.py: a virtual rule's timeouts after FINs through any of its copies
(the least set value of each, as Open vSwitch 3.1's successive shrinks leave them), its
FLOW_REMOVED totals over every copy, the ``tcp`` prerequisite Open vSwitch enforces, and
the translation keeping the action in every copy. (Against Open vSwitch:
tests/endpoint/test_endpoint_fin_timeout.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.backends.base import FlowStats
from tandem.oneswitch.fin_timeouts import fin_match_problem, fin_timeout_in, folded, removed_totals, virtual_timeouts
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules.ir import FinTimeout, FlowMod, Match, Rule
from tandem.rules.ofctl import parse_rule

TOPOLOGY = Path(__file__).parents[1] / "endpoint" / "three_switches.yaml"


@pytest.mark.parametrize("own, copies, want", [
    ((30, 60), [(5, 10)], (5, 10)),  # both shrink
    ((3, 0), [(3, 20)], (3, 20)),  # idle 3 is shorter than the FIN's 10: kept; hard none -> 20
    ((0, 0), [(0, 3)], (0, 3)),  # an untimed rule gets a hard timeout
    ((40, 0), [(40, 0), (20, 0), (30, 0)], (20, 0)),  # FINs through several copies: the least
    ((0, 0), [(5, 0), (0, 7), (2, 9)], (2, 7)),
    ((10, 20), [], (10, 20)),  # no copy shrank
])
def test_folded_is_the_least_set_value_of_each_timeout(own, copies, want):
    assert folded(*own, copies) == want


class _State:
    """The one method the helpers ask of OneSwitchState."""

    def __init__(self, copies: dict) -> None:
        self.copies = copies

    def ingress_rules(self, vr: Rule) -> list[tuple[str, Rule]]:
        return self.copies[vr.cookie]


def _rule(cookie: int, text: str, idle: int = 0, hard: int = 0) -> Rule:
    r = parse_rule(f"priority={30 - cookie},cookie={cookie},{text}")
    return Rule(r.match, r.instructions, r.table, r.priority, r.cookie, idle, hard)


FIN_RULE = _rule(1, "tcp,actions=fin_timeout(idle_timeout=5,hard_timeout=10),output:2", 30, 60)
PLAIN = _rule(2, "tcp,actions=output:2", 30, 60)


def _copy(r: Rule, in_port: int, idle: int, hard: int) -> Rule:
    return Rule(Match(r.match.fields + (("in_port", Match.of(in_port=in_port).get("in_port")),)), r.instructions,
                r.table, r.priority, r.cookie, idle, hard)


def test_virtual_timeouts_list_the_rules_whose_copies_fold_to_other_timeouts():
    host, snic = _copy(FIN_RULE, 1, 30, 60), _copy(FIN_RULE, 2, 5, 10)
    plain = _copy(PLAIN, 1, 30, 60)  # (its copies' timeouts are its own: not listed)
    state = _State({1: [("host", host), ("snic0", snic)], 2: [("host", plain)]})
    phys = {"host": [FlowStats(host), FlowStats(plain)], "snic0": [FlowStats(snic)]}
    assert virtual_timeouts(state, [FIN_RULE, PLAIN], phys) == {(0, FIN_RULE.priority, FIN_RULE.match): (5, 10)}
    # a modify took the fin_timeout away: the copies keep what a FIN gave them, as Open vSwitch keeps it
    modified = _copy(PLAIN, 1, 7, 60)
    state.copies[2] = [("host", modified)]
    assert virtual_timeouts(state, [PLAIN], {"host": [FlowStats(modified)]}) == {(0, PLAIN.priority, PLAIN.match): (7, 60)}


def test_removed_totals_count_every_copy_installed_or_gone():
    host, snic0, snic1 = _copy(FIN_RULE, 1, 30, 60), _copy(FIN_RULE, 2, 30, 60), _copy(FIN_RULE, 3, 30, 60)
    copies = [("host", host), ("snic0", snic0), ("snic1", snic1)]
    key = lambda r: (r.table, r.priority, r.match)  # noqa: E731
    gone = {("snic0", key(snic0)): (4, 400, 5, 10),  # the copy whose FIN shrank it, now expired
            ("host", key(host)): (99, 9900, 30, 60)}  # an older record: the installed copy's counters win
    phys = {"host": [FlowStats(host, packet_count=2, byte_count=200)],
            "snic1": [FlowStats(_copy(FIN_RULE, 3, 30, 40), packet_count=1, byte_count=100)]}
    assert removed_totals(FIN_RULE, copies, gone, phys) == (7, 700, 5, 10)


@pytest.mark.parametrize("text, why", [
    ("tcp,actions=fin_timeout(idle_timeout=5),output:2", None),
    ("tcp6,actions=clone(fin_timeout(idle_timeout=5))", None),
    ("tcp,actions=output:2", None),
])
def test_fin_match_problem_accepts_a_tcp_match(text, why):
    assert fin_match_problem(parse_rule(text)) is why


@pytest.mark.parametrize("match, actions", [
    (Match.of(eth_type=0x0800), (FinTimeout(5),)),
    (Match.of(), (FinTimeout(hard_timeout=5),)),
    (Match.of(eth_type=0x0800, ip_proto=17), (FinTimeout(5),)),
])
def test_fin_match_problem_names_the_missing_tcp(match, actions):
    from tandem.rules.ir import ApplyActions

    assert fin_match_problem(Rule(match, (ApplyActions(actions),))) == "fin_timeout needs tcp in the match"


def test_fin_timeout_in_looks_into_clones_not_into_write_actions():
    assert fin_timeout_in(parse_rule("tcp,actions=clone(fin_timeout(idle_timeout=1)),output:1"))
    assert not fin_timeout_in(parse_rule("tcp,actions=output:1"))


def test_every_copy_of_a_wildcard_rule_keeps_the_action():
    state = OneSwitchState(load_topology(TOPOLOGY))
    vr = _rule(7, "tcp,tcp_src=1001,actions=fin_timeout(idle_timeout=20,hard_timeout=40),output:3", 30, 60)
    state.apply(FlowMod("add", vr))
    copies = state.ingress_rules(vr)
    assert sorted({sw for sw, _ in copies}) == ["host", "snic0", "snic1"]
    for _, pr in copies:
        assert (pr.idle_timeout, pr.hard_timeout) == (30, 60)
        assert FinTimeout(20, 40) in pr.instructions[0].actions


def test_dp_core_ignores_it_in_a_group_bucket_as_open_vswitch_does():
    """Open vSwitch 3.1 takes it in a bucket and runs the bucket as an action set, which
    has no place for it: a FIN leaves the calling rule untimed (measured on one bridge)."""
    from tandem.dataplane.switch import Switch
    from tandem.nf.traffic import tcp
    from tandem.rules.ofctl import parse_group

    sw = Switch([1, 2, 3], 1, drop_malformed=False)
    sw.add_groups([parse_group("group_id=1,type=all,bucket=fin_timeout(idle_timeout=5),output:2")])
    sw.add_rules([parse_rule("priority=5,tcp,actions=group:1")])
    assert [p for p, _ in sw.process(1, tcp("10.0.0.1", "10.0.0.2", 1, 80, 0x11, 1))] == [2]
    assert sw.pipeline.timed_rules() == []
