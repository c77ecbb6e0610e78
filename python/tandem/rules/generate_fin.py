"""Random Nicira ``fin_timeout`` for ``generate`` (opt-in feature ``FIN_FEATURE``).

``with_fin_timeout`` inserts a ``fin_timeout(idle_timeout=I,hard_timeout=H)`` into
a drawn apply-actions list of a rule whose match pins ``tcp``, at a random place
before any ``push_mpls`` or ``encap(nsh)`` (Open vSwitch 3.1 takes it only where the
packet is known to be TCP). It changes no packet: the oracles check that its rules forward
as on one bridge. The timeouts are long (at least ten minutes, either one may be
left out, now and then both), so that a FIN among the drawn frames shrinks a
rule's timeouts without ending it during a run. Pure: all randomness comes from
the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import Action, EncapNsh, FinTimeout, Match, PushMpls

FIN_FEATURE = "nx_fin_timeout"


def _timeout(rng: random.Random) -> int:
    return 0 if rng.random() < 0.3 else rng.randrange(600, 0x10000)


def with_fin_timeout(rng: random.Random, acts: list[Action], match: Match) -> list[Action]:
    proto = match.get("ip_proto")
    if proto is None or proto.mask is not None or proto.value != 6:
        return acts
    end = next((i for i, a in enumerate(acts) if type(a) in (PushMpls, EncapNsh)), len(acts))
    out = list(acts)
    out.insert(rng.randrange(end + 1), FinTimeout(_timeout(rng), _timeout(rng)))
    return out
