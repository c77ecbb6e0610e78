"""Random ``check_pkt_larger`` into an NSH field's bit the rule's match fixes (feature
``nx_nsh_check_larger``, with ``nx_nsh``) for the OVS oracle's item ``nsh_check_larger``.

OneSwitch takes the form only there (``nsh_check_larger.py``: Open vSwitch's header write
follows its datapath flow's mask, which holds a bit the match fixes). The check goes at a
random place of the apply-actions, sometimes with a move of the field's low byte into
``eth_src`` after it, so the flow's value shows too. Pure: all randomness comes from ``rng``."""

from __future__ import annotations

import random

from .generate_nx import PKT_LENS
from .ir import CheckPktLarger, Decap, EncapEthernet, EncapNsh, Match, MoveField, PopMpls, PushMpls, Subfield
from .nsh import ETH_TYPE_NSH

NSH_CHECK_LARGER_FEATURE = "nx_nsh_check_larger"
# the writable NSH fields and the bits a match on them holds (nsh_ttl: the header's 6)
_TYPE_CHANGES = (PushMpls, PopMpls, EncapNsh, EncapEthernet, Decap)
_BITS = {"nsh_flags": 8, "nsh_ttl": 6, "nsh_spi": 24, "nsh_si": 8, "nsh_c1": 32, "nsh_c2": 32, "nsh_c3": 32, "nsh_c4": 32}


def with_nsh_check_larger(rng: random.Random, acts: list, match: Match) -> list:
    """``acts`` with a check_pkt_larger into a bit of an NSH field ``match`` fixes (as they were
    where the match is not NSH or fixes none)."""
    eth = match.get("eth_type")
    if eth is None or eth.value != ETH_TYPE_NSH:
        return acts
    bits = [(f, b) for f in _BITS if match.get(f) is not None for b in range(_BITS[f])
            if match.get(f).mask is None or match.get(f).mask >> b & 1]
    if not bits:
        return acts
    field, bit = rng.choice(bits)
    new: list = [CheckPktLarger(rng.choice(PKT_LENS), Subfield(field, bit, 1))]
    if rng.random() < 0.4:
        n = min(_BITS[field], 8)
        new.append(MoveField(Subfield(field, 0, n), Subfield("eth_src", 0, n)))
    out = list(acts)
    # (before an action that makes the frame no NSH frame: the field's prerequisite, as ovs-ofctl checks it)
    end = next((i for i, a in enumerate(out) if isinstance(a, _TYPE_CHANGES)), len(out))
    at = rng.randrange(end + 1)
    out[at:at] = new
    return out
