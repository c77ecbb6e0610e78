"""Random loads into ``nsh_ttl`` (feature ``nx_nsh_ttl_loads``, with ``nx_nsh``) for the
OVS oracle's item ``nsh_ttl_loads`` (rules/nsh_ttl_load.py).

Open vSwitch's ``nsh_ttl`` subfield is 8 bits over the header's 6-bit TTL; a load keeps
all 8 bits in the flow (later moves, ``dec_nsh_ttl`` and matches see them) and puts the
low 6 into the frame. So the loads drawn reach past 63 (the whole subfield), into bits
6 and 7, into bits 0..5 together (bits 6 and 7 kept) and into runs across bit 5; a
``dec_nsh_ttl`` follows now and then, and the flow's 8 bits are moved into eth_src
(where they show in the frame) or a register (which later tables match and move).
Pure: all randomness comes from ``rng``."""

from __future__ import annotations

import random

from .ir import DecNshTtl, MoveField, SetField, Subfield
from .nsh import ETH_TYPE_NSH

NSH_TTL_LOAD_FEATURE = "nx_nsh_ttl_loads"
_RUNS = ((0, 8), (0, 8), (0, 6), (6, 2), (7, 1), (6, 1), (4, 3), (5, 2), (0, 7), (1, 2))  # (ofs, n_bits)
_VALUES = (0xFF, 0xC5, 0xC1, 0x80, 0x40, 0x41, 0x3F, 2, 1, 0)


def is_nsh_ttl_load(a) -> bool:
    """A set_field the IR holds only for a load (past bit 5, or bits 0..5 together keeping 6 and 7)."""
    return type(a) is SetField and a.field == "nsh_ttl" and a.mask is not None and (a.mask >> 6 or a.mask == 0x3F)


def nsh_ttl_load_actions(rng: random.Random, flow) -> list:
    """Where the flow is NSH: one or two loads into nsh_ttl, a dec_nsh_ttl now and then,
    the flow's 8 bits moved out now and then."""
    if flow.eth_type != ETH_TYPE_NSH or rng.random() >= 0.8:
        return []
    acts: list = []
    for _ in range(rng.choice((1, 1, 2))):
        ofs, n = rng.choice(_RUNS)
        mask = ((1 << n) - 1) << ofs
        acts.append(SetField("nsh_ttl", (rng.choice(_VALUES) << ofs) & mask, mask))
    if rng.random() < 0.3:
        acts.append(DecNshTtl())
    if rng.random() < 0.5:  # (the flow's 8 bits: in the frame's eth_src, or a register later tables read)
        acts.append(MoveField(Subfield("nsh_ttl", 0, 8), Subfield(rng.choice(("eth_src", "reg0")), 0, 8)))
    return acts
