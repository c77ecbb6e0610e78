"""FTP and TFTP conversations under NAT rules, for the OVS oracles (``tandem bench
ct_oracle -- --alg P --nat``).

``alg_nat_ruleset(rng, n, ports)``: ``generate_ct_alg.alg_ruleset``'s rules, each ``ct``
then given a ``nat`` with probability ``share`` as ``generate_ct_nat`` gives them (a
commit translates to ``SNAT_ADDR`` / ``DNAT_ADDR``, any other ct applies a connection's
translation): so ``ct(commit,alg=ftp|tftp,nat(...))`` parents, whose FTP messages a ct
with a ``nat`` rewrites (dp-core's ``ct_alg_ftp_nat.rs``), and expected connections
committed with a ``nat``, which take their parent's translation instead of the nat's range.

``alg_nat_traces(rng, pairs, n)``: ``alg_traces``' connections (FTP and TFTP
conversations among plain ones), each in one of ``generate_ct_nat``'s flavours (plain,
the server answering the source-translated address, the client sending to the
virtual address and the server answering from the translated one); an FTP message
names its sender's address as the sender sees it (a destination-translated server its
own or, now and then, the virtual one; a source-translated client now and then the
translated one: Open vSwitch takes either).
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace

from .generate_ct import as_rounds
from .generate_ct_alg import alg_conn, alg_ruleset
from .generate_ct_nat import DNAT6, DNAT6_VIP, DNAT_ADDR, DNAT_VIP, FLAVOURS, SNAT6, SNAT_ADDR, _flavour, _nat_for
from .generate_ct_tcp import mixed_connections
from .generate_ct import _S
from .ir import ApplyActions, Ct, CtNat, Match, Output, Rule, WriteActions


def alg_nat_ruleset(rng: random.Random, n: int, ports: list[int], newer: float = 1.0, share: float = 0.9) -> list[Rule]:
    out = []
    for r in alg_ruleset(rng, n, ports, newer):
        fm = dict(r.match.fields).get("eth_type")
        eth = fm.value if fm is not None and fm.mask is None else None

        def fix(a):
            if type(a) is Ct and rng.random() < share:
                return replace(a, nat=_nat_for(rng, a, eth))
            return a

        out.append(replace(r, instructions=tuple(type(i)(tuple(fix(a) for a in i.actions))
                                                 if type(i) in (ApplyActions, WriteActions) else i
                                                 for i in r.instructions)))
    if rng.random() < 0.8:
        out += _ftp_nat_skeleton(rng, ports)
    return out


def _ftp_nat_skeleton(rng: random.Random, ports: list[int]) -> list[Rule]:
    """FTP control packets tracked with a bare ``nat`` in table 0; new control connections
    committed with ``alg=ftp`` and a nat in table 1: to the virtual address a destination
    translation to ``DNAT_ADDR``, any other a source translation to ``SNAT_ADDR``."""
    new = (_S["trk"] | _S["new"], _S["trk"] | _S["new"] | _S["inv"] | _S["rel"])
    out = []
    for eth, vip, dnat, snat, dst in ((0x0800, DNAT_VIP, DNAT_ADDR, SNAT_ADDR, "ipv4_dst"),
                                      (0x86DD, DNAT6_VIP, DNAT6, SNAT6, "ipv6_dst")):
        v6 = eth == 0x86DD
        for k, side in enumerate(("tcp_dst", "tcp_src")):
            out.append(Rule(Match.of(eth_type=eth, ip_proto=6, **{side: 21}),
                            (ApplyActions((Ct(table=1, nat=CtNat()),)),), 0, 31000 + 2 * v6 + k))
        for k, (m, nat) in enumerate((({dst: vip}, CtNat("dst", dnat, v6=v6)), ({}, CtNat("src", snat, v6=v6)))):
            ct = Ct(commit=True, exec=(("ct_mark", rng.choice((3, 7)), None),), nat=nat, alg="ftp")
            out.append(Rule(Match.of(eth_type=eth, ip_proto=6, tcp_dst=21, ct_state=new, **m),
                            (ApplyActions((ct, Output(rng.choice(ports)))),), 1, 31010 + 2 * v6 - k))
    return out


def uses_alg_nat(rule: Rule, algs: tuple[str, ...] = ("ftp", "tftp")) -> bool:
    """A ct with both an ALG (one of ``algs``) and a nat."""
    return any(type(a) is Ct and a.alg in algs and a.nat is not None for i in rule.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions)


def alg_nat_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int, tcp_odd: float = 0.0,
                   share: float = 0.5) -> list[list[tuple[int, bytes]]]:
    conns = mixed_connections(rng, pairs, n, tcp_odd)
    return as_rounds([_alg_conn_flavoured(rng, *rng.choice(pairs), 100 + k) if rng.random() < share else _flavour(rng, c)
                      for k, c in enumerate(conns)])


def _alg_conn_flavoured(rng: random.Random, a: int, b: int, k: int) -> list[tuple[int, bytes]]:
    kind = rng.choice(FLAVOURS)

    def rename(active: bool, addr: int) -> int:
        v6 = addr >> 32 != 0
        if kind == "snat" and active and rng.random() < 0.3:
            return SNAT6 if v6 else SNAT_ADDR
        if kind == "dnat" and not active:
            return (DNAT6_VIP if v6 else DNAT_VIP) if rng.random() < 0.3 else (DNAT6 if v6 else DNAT_ADDR)
        return addr

    return _flavour(rng, alg_conn(rng, a, b, k, rename), kind)
