"""Random moves, pushes and pops of ``nsh_ttl`` (feature ``nx_nsh_ttl_operands``, with
``nx_nsh``) for the OVS oracle's item ``nsh_ttl_operands``.

Open vSwitch's ``nsh_ttl`` subfield is 8 bits over the header's 6-bit TTL: a write
keeps all 8 bits in the flow (later moves, matches and ``dec_nsh_ttl`` see them) and
the frame gets the low 6. So the drawn values reach past 63 now and then (a register
or eth_src byte moved in, a pop of a pushed byte, a write into bits 6..7), and the
TTL moves out into eth_src, where it shows in the frame, or into a register; a
``dec_nsh_ttl`` follows now and then. Pure: all randomness comes from ``rng``.
"""

from __future__ import annotations

import random

from .ir import DecNshTtl, MoveField, SetField, StackPop, StackPush, Subfield
from .nsh import ETH_TYPE_NSH

NSH_TTL_OPERAND_FEATURE = "nx_nsh_ttl_operands"
_OTHER = ("reg0", "reg1", "eth_src", "nsh_si", "nsh_flags")  # (8 bits and more; eth_src shows in the frame)


def _ttl_sub(rng: random.Random) -> Subfield:
    n = rng.choice((8, 8, 8, 6, 2, 1, 4))
    return Subfield("nsh_ttl", rng.randrange(8 - n + 1), n)


def _other(rng: random.Random, n: int) -> Subfield:
    field = rng.choice(_OTHER)
    width = 48 if field == "eth_src" else 32 if field.startswith("reg") else 8
    return Subfield(field, rng.choice((0, rng.randrange(width - n + 1))), n)


def nsh_ttl_operand_actions(rng: random.Random, flow) -> list:
    """Where the flow is NSH: a move into nsh_ttl, out of it, or a push and pop through it
    (a register loaded first now and then, so values past 63 are common)."""
    if flow.eth_type != ETH_TYPE_NSH or rng.random() >= 0.8:
        return []
    ttl = _ttl_sub(rng)
    other = _other(rng, ttl.n_bits)
    acts: list = []
    if other.field.startswith("reg") and rng.random() < 0.6:
        acts.append(SetField(other.field, rng.choice((0xFF, 0xC5, 0x40, 0x80, 2, 1)) << other.ofs & 0xFFFFFFFF))
    kind = rng.choice(("into", "from", "stack", "stack_from"))
    if kind == "into":
        acts.append(MoveField(other, ttl))
    elif kind == "from":
        acts.append(MoveField(ttl, other))
    elif kind == "stack":
        acts += [StackPush(other), StackPop(ttl)]
    else:
        acts += [StackPush(ttl), StackPop(other)]
    if rng.random() < 0.3:
        acts.append(DecNshTtl())
    if rng.random() < 0.4:  # (the flow's 8 bits, shown in the frame)
        acts.append(MoveField(Subfield("nsh_ttl", 0, 8), Subfield("eth_src", 0, 8)))
    return acts
