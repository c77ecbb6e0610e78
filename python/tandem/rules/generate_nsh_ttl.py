"""Random ``dec_nsh_ttl`` in write_actions (feature ``nx_write_nsh_ttl``) for the OVS
oracle's item ``write:dec_nsh_ttl``; group buckets get it through
``generate_bucket_forms`` (form ``"dec_nsh_ttl"``, item ``bucket:dec_nsh_ttl``).

Open vSwitch 3.1 takes ``dec_nsh_ttl`` in write_actions and buckets without an NSH
match (it checks no prerequisite there), runs it in the action set after push_vlan,
push_mpls, dec_ttl and dec_mpls_ttl and before the set-fields, and on a packet that is
not NSH the set stops (measured; crates/dp-core/tests/nsh_ttl_set.rs). So
``written_nsh_ttl`` puts it at a random place of a drawn write_actions list, mostly
where the flow is NSH (``eth_type=0x894f``, from ``generate_nsh``'s matches, whose TTL
pools hold 0 and 1), now and then elsewhere (the set then stops), and beside it, on an
NSH flow, now and then a set_field on ``nsh_ttl`` or another NSH field, which the set
runs after it. Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .generate_nsh import nsh_value
from .ir import Action, DecNshTtl, SetField
from .nsh import ETH_TYPE_NSH

WRITE_NSH_TTL_FEATURE = "nx_write_nsh_ttl"
_SET = ("nsh_ttl", "nsh_ttl", "nsh_si", "nsh_flags")


def written_nsh_ttl(rng: random.Random, wacts: list[Action], flow) -> list[Action]:
    """``wacts`` (a write_actions list) with a dec_nsh_ttl at a random place, and on an
    NSH flow (``flow``: ``prereq.FlowState`` after the apply-actions) maybe an NSH set_field."""
    nsh = flow.eth_type == ETH_TYPE_NSH
    out = list(wacts)
    if rng.random() < (0.9 if nsh else 0.25):
        out.insert(rng.randrange(len(out) + 1), DecNshTtl())
    if nsh and rng.random() < 0.3:
        field = rng.choice(_SET)
        out.insert(rng.randrange(len(out) + 1), SetField(field, nsh_value(rng, field)))
    return out
