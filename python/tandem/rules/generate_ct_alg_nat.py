"""TFTP conversations under NAT rules, for the OVS oracles (``tandem bench ct_oracle --
--alg P --nat``).

``alg_nat_ruleset(rng, n, ports)``: ``generate_ct_alg.alg_ruleset``'s rules, each ``ct``
but an ``alg=ftp`` one (refused beside a nat: docs/endpoint.md) then given a ``nat`` with
probability ``share`` as ``generate_ct_nat`` gives them (a commit translates to
``SNAT_ADDR`` / ``DNAT_ADDR``, any other ct applies a connection's translation): so
``ct(commit,alg=tftp,nat(...))`` parents, and expected connections committed with a
``nat``, which take their parent's translation instead of the nat's range.

``alg_nat_traces(rng, pairs, n)``: ``alg_traces``' connections (FTP and TFTP
conversations among plain ones), each in one of ``generate_ct_nat``'s flavours (plain,
the server answering the source-translated address, the client sending to the
virtual address and the server answering from the translated one).
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace

from .generate_ct import as_rounds
from .generate_ct_alg import alg_conn, alg_ruleset
from .generate_ct_nat import _flavour, _nat_for
from .generate_ct_tcp import mixed_connections
from .ir import ApplyActions, Ct, Rule, WriteActions


def alg_nat_ruleset(rng: random.Random, n: int, ports: list[int], newer: float = 1.0, share: float = 0.9) -> list[Rule]:
    out = []
    for r in alg_ruleset(rng, n, ports, newer):
        fm = dict(r.match.fields).get("eth_type")
        eth = fm.value if fm is not None and fm.mask is None else None

        def fix(a):
            if type(a) is Ct and a.alg != "ftp" and rng.random() < share:
                return replace(a, nat=_nat_for(rng, a, eth))
            return a

        out.append(replace(r, instructions=tuple(type(i)(tuple(fix(a) for a in i.actions))
                                                 if type(i) in (ApplyActions, WriteActions) else i
                                                 for i in r.instructions)))
    return out


def uses_alg_nat(rule: Rule) -> bool:
    """A ct with both an ALG and a nat."""
    return any(type(a) is Ct and a.alg in ("ftp", "tftp") and a.nat is not None for i in rule.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions)


def alg_nat_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int, tcp_odd: float = 0.0,
                   share: float = 0.5) -> list[list[tuple[int, bytes]]]:
    conns = mixed_connections(rng, pairs, n, tcp_odd)
    return as_rounds([_flavour(rng, alg_conn(rng, *rng.choice(pairs), 100 + k) if rng.random() < share else c)
                      for k, c in enumerate(conns)])
