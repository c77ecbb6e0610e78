"""Random NSH context matches without ``nsh_mdtype=1`` (feature ``nx_nsh_context``, with
``nx_nsh``): where ``generate_nsh.nsh_match`` made an NSH match, a context (``nsh_c1`` …
``nsh_c4``, now and then masked) beside no ``nsh_mdtype`` or ``nsh_mdtype=2``. Open
vSwitch matches the flow's context there, which an MD type 2 header leaves 0 and a
set_field of an earlier table may have written (rules/nsh.py); the value pool holds 0,
so MD type 2 frames meet such rules. ``uses_context_without_md1`` says which rules the
of13_oracle item ``match:nsh_context`` counts. Pure: all randomness comes from the
caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import FieldMatch, Match
from .generate_nsh import nsh_value
from .nsh import CONTEXTS, ETH_TYPE_NSH, MD_TYPE1, MD_TYPE2

NSH_CONTEXT_FEATURE = "nx_nsh_context"
_MASKS = (0xFF, 0xFFFF0000, 0x0F)


def context_match(rng: random.Random, fields: dict) -> None:
    """On an NSH match (``fields``: IR field -> FieldMatch), most times: a context matched
    without ``nsh_mdtype=1`` (none, or MD type 2)."""
    if fields.get("eth_type") != FieldMatch(ETH_TYPE_NSH) or rng.random() >= 0.7:
        return
    if not any(c in fields for c in CONTEXTS):
        c = rng.choice(CONTEXTS)
        v = nsh_value(rng, c)
        if rng.random() < 0.3:
            m = rng.choice(_MASKS)
            fields[c] = FieldMatch(v & m, m)
        else:
            fields[c] = FieldMatch(v)
    if rng.random() < 0.7:
        fields.pop("nsh_mdtype", None)
    else:
        fields["nsh_mdtype"] = FieldMatch(MD_TYPE2)


def uses_context_without_md1(match: Match) -> bool:
    """Does ``match`` hold a context without ``nsh_mdtype=1``?"""
    md = match.get("nsh_mdtype")
    return any(c in match for c in CONTEXTS) and (md is None or md.value != MD_TYPE1)
