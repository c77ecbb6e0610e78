"""generate_ct_alg_nat.py: the ALG rule sets with nats hold ``alg=tftp`` and ``alg=ftp`` beside
a nat and expected connections committed with one; the traces answer translated addresses,
and a destination-translated server's 227 names its own address; the same seed gives the
same rules and traces."""

from __future__ import annotations

import random

from tandem.rules.generate_ct_alg_nat import alg_nat_ruleset, alg_nat_traces, uses_alg_nat
from tandem.rules.generate_ct_nat import DNAT_ADDR, SNAT_ADDR
from tandem.rules.ir import ApplyActions, Ct, WriteActions
from tandem.rules.prereq import rule_problems

PORTS = [1, 2, 3, 4]
PAIRS = [(x, y) for x in PORTS for y in PORTS if x != y]


def test_alg_nat_rules_are_valid_and_hold_ftp_and_tftp_beside_a_nat():
    rules = alg_nat_ruleset(random.Random(3), 200, PORTS)
    cts = [a for r in rules for i in r.instructions if type(i) in (ApplyActions, WriteActions) for a in i.actions
           if type(a) is Ct]
    assert sum(map(uses_alg_nat, rules)) >= 10
    assert sum(a.alg == "ftp" and a.nat is not None for a in cts) >= 5
    assert sum(a.alg == "tftp" and a.nat is not None for a in cts) >= 5
    assert any(a.alg == "ftp" for a in cts) and sum(a.nat is not None and a.alg is None and a.commit for a in cts) >= 20
    assert all(not rule_problems(r) for r in rules)
    assert alg_nat_ruleset(random.Random(3), 200, PORTS) == rules


def test_alg_nat_traces_answer_the_translated_address():
    rounds = alg_nat_traces(random.Random(4), PAIRS, 60, share=1.0)
    frames = [f for r in rounds for _, f in r]
    assert any(f[30:34] == SNAT_ADDR.to_bytes(4, "big") and f[23] == 17 for f in frames)  # (UDP to it: TFTP data)
    assert alg_nat_traces(random.Random(4), PAIRS, 60, share=1.0) == rounds


def test_a_destination_translated_server_names_its_own_address():
    rounds = alg_nat_traces(random.Random(5), PAIRS, 80, share=1.0)
    frames = [f for r in rounds for _, f in r]
    named = b"(10,0,0,8,"  # (DNAT_ADDR in a 227, sent from it)
    assert DNAT_ADDR == 0x0A000008
    assert any(named in f and f[26:30] == DNAT_ADDR.to_bytes(4, "big") for f in frames)
