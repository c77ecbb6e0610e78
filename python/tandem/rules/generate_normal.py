"""Random rule sets that send packets to Open vSwitch's NORMAL (its MAC-learning
switch), for the OVS oracles.

``normal_ruleset(rng, n, ports)``: rules in tables 0 and 1 whose actions end in
``output:NORMAL`` (in apply- or write-actions; sometimes after a rewrite of the
source MAC, a VLAN push or beside another output), among plain rules that drop,
output or go to table 1; unique priorities per table (overlapping rules of equal
priority meet packets in an undefined order), catch-alls below the rest. Traffic: ``learn_traffic``'s hosts
(generate_learn.py), plus VLAN-tagged and broadcast frames (``normal_traffic``).
Pure: randomness from ``rng``.
"""

from __future__ import annotations

import random

from .generate_learn import MACS, learn_traffic
from .ir import OFPP_NORMAL, ApplyActions, GotoTable, Match, Output, PushVlan, Rule, SetField, WriteActions
from .packets import build_frame

_NORMAL = Output(OFPP_NORMAL)


def normal_ruleset(rng: random.Random, n: int, ports: list[int]) -> list[Rule]:
    free = {t: rng.sample(range(100, 60000), 2 * n + 4) for t in (0, 1)}
    rules: list[Rule] = [Rule(Match(), (ApplyActions((_NORMAL,)),), 0, 0)]
    while len(rules) < n:
        t = rng.choice((0, 0, 1))
        m: dict = {}
        r = rng.random()
        if r < 0.25:
            m["in_port"] = rng.choice(ports)
        elif r < 0.45:
            m["eth_src"] = rng.choice(MACS)
        elif r < 0.6:
            m["eth_dst"] = rng.choice(MACS)
        elif r < 0.7:
            m["eth_type"] = rng.choice((0x0800, 0x0806))
        k = rng.random()
        if k < 0.45:
            ins: tuple = (ApplyActions((_NORMAL,)),)
        elif k < 0.55:
            ins = (ApplyActions((SetField("eth_src", rng.choice(MACS)), _NORMAL)),)
        elif k < 0.62:
            ins = (ApplyActions((PushVlan(), SetField("vlan_vid", 0x1000 | rng.choice((5, 7))), _NORMAL)),)
        elif k < 0.7:
            ins = (ApplyActions((Output(rng.choice(ports)), _NORMAL)),)
        elif k < 0.8 and t == 0:
            ins = (WriteActions((_NORMAL,)), GotoTable(1))
        elif k < 0.9:
            ins = (ApplyActions((Output(rng.choice(ports)),)),)
        else:
            ins = (ApplyActions(()),)
        # a catch-all below every rule that matches something (else the highest one takes all the traffic)
        rules.append(Rule(Match.of(**m), ins, t, free[t].pop() if m else rng.randint(1, 99)))
    return rules


def normal_traffic(rng: random.Random, ports: list[int], n: int) -> list[tuple[int, bytes]]:
    """``learn_traffic`` with a share of frames tagged VLAN 5 or 7 and some broadcasts."""
    out = []
    for v, frame in learn_traffic(rng, ports, n):
        r = rng.random()
        if r < 0.15:  # an 802.1Q tag after the MACs
            vid = rng.choice((5, 7))
            frame = frame[:12] + bytes((0x81, 0x00, 0x00, vid)) + frame[12:]
        elif r < 0.22:
            frame = build_frame(eth_src=MACS[rng.randrange(len(MACS))], eth_dst=0xFFFF_FFFF_FFFF)
        out.append((v, frame))
    return out
