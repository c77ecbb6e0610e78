"""NORMAL rule sets whose NORMAL is a ``bundle`` member, for the NORMAL oracles
(``tandem bench learn_oracle --normal --bundle-normal``).

``bundle_normal_ruleset(rng, n, ports)``: ``normal_ruleset``'s rules with each
``output:NORMAL`` of an apply-actions list replaced by a ``bundle`` holding NORMAL:
``active_backup`` with members drawn from NORMAL, the ports, IN_PORT, NONE and a
number no port has (77: never live), NORMAL often first or after 77 so it is the
choice; or ``hrw`` over NORMAL, IN_PORT and NONE (reserved members, always live in
Open vSwitch 3.1, so the hash decides; OneSwitch keeps an ``hrw`` bundle only where
every member is a port of the switch that runs it, and these are). Written NORMALs
stay outputs (a bundle is no action-set action). Pure: randomness from ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace

from .generate_normal import normal_ruleset
from .ir import HASH_FIELDS, OFPP_ANY, OFPP_IN_PORT, OFPP_NORMAL, ApplyActions, Bundle, Output, Rule

_NEVER_LIVE = 77


def normal_bundle(rng: random.Random, ports: list[int]) -> Bundle:
    """A bundle with NORMAL among its members (module doc)."""
    # (eth_src often: the traffic's MACs vary, so the hash does)
    fields, basis = rng.choice(("eth_src", "eth_src", *HASH_FIELDS)), rng.choice((0, 1, 50, 65535, rng.randrange(65536)))
    if rng.random() < 0.3:
        members = [OFPP_NORMAL, *rng.sample((OFPP_IN_PORT, OFPP_ANY), rng.randint(1, 2))]
        rng.shuffle(members)
        return Bundle(fields, basis, "hrw", tuple(members))
    others = rng.sample([*ports, OFPP_IN_PORT, OFPP_ANY], rng.randint(0, 2))
    r = rng.random()
    at = 0 if r < 0.4 else rng.randint(0, len(others))
    members = [*others[:at], OFPP_NORMAL, *others[at:]]
    if r < 0.7:
        members.insert(0, _NEVER_LIVE)
    return Bundle(fields, basis, "active_backup", tuple(members))


def bundle_normal_ruleset(rng: random.Random, n: int, ports: list[int]) -> list[Rule]:
    out = []
    for r in normal_ruleset(rng, n, ports):
        ins = tuple(ApplyActions(tuple(normal_bundle(rng, ports) if type(a) is Output and a.port == OFPP_NORMAL else a
                                       for a in i.actions)) if type(i) is ApplyActions else i for i in r.instructions)
        out.append(replace(r, instructions=ins))
    return out
