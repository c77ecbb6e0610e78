"""generate_ct_alg_nat.py: the ALG rule sets with nats hold ``alg=tftp`` beside a nat and
expected connections committed with one, never ``alg=ftp`` beside a nat (refused); the
traces answer translated addresses; the same seed gives the same rules and traces."""

from __future__ import annotations

import random

from tandem.rules.generate_ct_alg_nat import alg_nat_ruleset, alg_nat_traces, uses_alg_nat
from tandem.rules.generate_ct_nat import SNAT_ADDR
from tandem.rules.ir import ApplyActions, Ct, WriteActions
from tandem.rules.prereq import rule_problems

PORTS = [1, 2, 3, 4]
PAIRS = [(x, y) for x in PORTS for y in PORTS if x != y]


def test_alg_nat_rules_are_valid_and_hold_tftp_beside_a_nat():
    rules = alg_nat_ruleset(random.Random(3), 200, PORTS)
    cts = [a for r in rules for i in r.instructions if type(i) in (ApplyActions, WriteActions) for a in i.actions
           if type(a) is Ct]
    assert sum(map(uses_alg_nat, rules)) >= 10
    assert not any(a.alg == "ftp" and a.nat is not None for a in cts)
    assert any(a.alg == "ftp" for a in cts) and sum(a.nat is not None and a.alg is None and a.commit for a in cts) >= 20
    assert all(not rule_problems(r) for r in rules)
    assert alg_nat_ruleset(random.Random(3), 200, PORTS) == rules


def test_alg_nat_traces_answer_the_translated_address():
    rounds = alg_nat_traces(random.Random(4), PAIRS, 60, share=1.0)
    frames = [f for r in rounds for _, f in r]
    assert any(f[30:34] == SNAT_ADDR.to_bytes(4, "big") and f[23] == 17 for f in frames)  # (UDP to it: TFTP data)
    assert alg_nat_traces(random.Random(4), PAIRS, 60, share=1.0) == rounds
