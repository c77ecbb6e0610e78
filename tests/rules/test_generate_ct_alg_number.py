"""generate_ct_alg_number.py: about the asked share of ct actions get an alg number
Open vSwitch runs no ALG for (never 0, 21 or 69), beside a nat too; every rule stays
valid (it prints and reads back); the same seed gives the same rules."""

from __future__ import annotations

import random

from tandem.rules.generate_ct_alg import alg_ruleset
from tandem.rules.generate_ct_alg_number import uses_alg_number, with_alg_numbers
from tandem.rules.generate_ct_nat import nat_ruleset
from tandem.rules.ir import ApplyActions, Ct, WriteActions, ct_alg_number
from tandem.rules.ofctl import format_rule, parse_rule

PORTS = [1, 2, 3, 4]


def _cts(r):
    return [a for i in r.instructions if type(i) in (ApplyActions, WriteActions) for a in i.actions if type(a) is Ct]


def test_numbered_algs_take_about_the_share_and_stay_valid():
    base = alg_ruleset(random.Random(5), 200, PORTS) + nat_ruleset(random.Random(6), 200, PORTS, 1.0)
    rules = with_alg_numbers(random.Random(7), base, 0.3)
    cts = [a for r in rules for a in _cts(r)]
    numbered = [a for a in cts if ct_alg_number(a.alg) is not None]
    assert 0.2 < len(numbered) / len(cts) < 0.4
    assert any(a.nat is not None for a in numbered)
    assert all(a.alg not in ("0", "21", "69") for a in cts)
    assert sum(map(uses_alg_number, rules)) > 50 and not any(map(uses_alg_number, base))
    for r in filter(uses_alg_number, rules):
        assert format_rule(parse_rule(format_rule(r))) == format_rule(r) and "alg=" in format_rule(r)
    assert with_alg_numbers(random.Random(7), base, 0.3) == rules  # pure
    assert with_alg_numbers(random.Random(7), base, 0.0) == base
