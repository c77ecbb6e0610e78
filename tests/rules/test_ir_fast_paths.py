"""ir fast paths the translators use: Match's cached hash, the unchecked
internal constructors, and that they behave like the checked ones."""

import copy
import pickle

from tandem.rules.ir import (
    ApplyActions, FieldMatch, GotoTable, Match, Output, PofField, Rule, _new_rule,
)


def test_equal_matches_hash_equal_whatever_the_build_order_and_cache_state() -> None:
    a = Match.of(in_port=3, eth_type=0x800, ipv4_dst=(0x0A000000, 0xFF000000))
    b = Match((("ipv4_dst", FieldMatch(0x0A000000, 0xFF000000)), ("eth_type", FieldMatch(0x800)),
               ("in_port", FieldMatch(3))))
    hash(a)  # a caches its hash, b does not yet
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a != Match.of(in_port=3, eth_type=0x800) and Match() == Match() and hash(Match()) == hash(Match())
    pof = Match.of({PofField(96, 16): 0x800})
    assert hash(pof) == hash(Match.of({PofField(96, 16): 0x800}))


def test_replaced_field_equals_a_match_built_from_scratch() -> None:
    m = Match.of(in_port=3, eth_type=0x800, tcp_dst=80, ip_proto=6)
    hash(m)
    r = m._replaced(("in_port", FieldMatch(7)))
    fresh = Match.of(in_port=7, eth_type=0x800, tcp_dst=80, ip_proto=6)
    assert r == fresh and hash(r) == hash(fresh) and repr(r) == repr(fresh)
    assert m.get("in_port") == FieldMatch(3)  # the original is untouched


def test_copies_and_pickles_never_carry_a_stale_hash_and_compare_equal() -> None:
    m = Match.of(eth_dst=0x0200_0000_0001, vlan_vid=(0x1000, 0x1000))
    hash(m)
    for other in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert "_hash" not in vars(other)  # no cached hash travels with a copy
        assert other == m and hash(other) == hash(m)


def test_field_match_keeps_its_constructor_repr_and_meaning() -> None:
    fm = FieldMatch(0x0A000000, mask=0xFF000000)
    assert repr(fm) == "FieldMatch(value=167772160, mask=4278190080)"
    assert fm.matches(0x0A0B0C0D) and not fm.matches(0x0B000000)
    assert FieldMatch(5) == FieldMatch(5, None) and FieldMatch(5).mask is None


def test_unchecked_rule_equals_the_checked_one() -> None:
    match = Match.of(in_port=1)
    ins = (ApplyActions((Output(2),)), GotoTable(3))
    fast = _new_rule(match, ins, 1, 100, 7, 5, 9)
    slow = Rule(match, ins, table=1, priority=100, cookie=7, idle_timeout=5, hard_timeout=9)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert pickle.loads(pickle.dumps(fast)) == slow
