"""The ALG rule sets and conversations (generate_ct_alg.py): rules commit
``ct(alg=ftp|tftp)`` where the match pins the protocol OVS asks for, none uses
``force``, and the conversations carry every FTP command form the ALGs read, TFTP
requests, and the data connections after them."""

import random

from tandem.rules.generate_ct_alg import alg_ruleset, alg_traces, uses_alg
from tandem.rules.ir import ApplyActions, Ct, WriteActions
from tandem.rules.prereq import rule_problems

PORTS = [1, 2, 3, 4]
PAIRS = [(x, y) for x in PORTS for y in PORTS if x != y]


def _cts(rule):
    return [a for i in rule.instructions if type(i) in (ApplyActions, WriteActions) for a in i.actions if type(a) is Ct]


def test_alg_rules_are_valid_and_many():
    rules = alg_ruleset(random.Random(3), 200, PORTS)
    assert 190 <= len(rules) <= 210
    assert len({(r.table, r.priority) for r in rules}) == len(rules)
    alg = [r for r in rules if uses_alg(r)]
    assert len(alg) >= 40
    for r in alg:
        assert r.match.get("ip_proto").value == {"ftp": 6, "tftp": 17}[next(a.alg for a in _cts(r) if a.alg)]
    assert all(rule_problems(r) == [] for r in rules)
    assert not any(a.force for r in rules for a in _cts(r))
    assert alg_ruleset(random.Random(3), 200, PORTS) == rules  # pure


def test_conversations_carry_every_command_form():
    rounds = alg_traces(random.Random(4), PAIRS, 60, share=1.0)
    frames = [f for rnd in rounds for _, f in rnd]
    for form in (b"PORT ", b"227 Entering", b"EPRT |2|", b"229 Entering Extended Passive", b"port ", b"PASV\r\n",
                 b"EPSV\r\n", b"\x00\x01file0\x00octet"):
        assert any(form in f for f in frames), form
    assert sum(1 for f in frames if f[12:14] == b"\x86\xdd") > 20  # IPv6 too
