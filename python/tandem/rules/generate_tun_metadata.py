"""Random rules on Open vSwitch's ``tun_metadata0..63`` (generator feature
``nx_tun_metadata``, opt-in): matches on the mapped options (value and mask within
their mapped length, more often in later tables, where an earlier table may have
written them), and writes: set_field (whole or masked, ``load``), a move between two
options, from a register into one or out of one into a register or the frame's
Ethernet source (which shows in the output bytes), a push of one popped into another
operand, and ``delete_field``. Every value, mask and subfield stays within the
option's length in ``ORACLE_TLV_MAP``, the map every bridge of the oracle holds.

Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import Action, DeleteField, FieldMatch, MoveField, SetField, StackPop, StackPush, Subfield

TUN_METADATA_FEATURE = "nx_tun_metadata"
# tun_metadataN -> its option length in bytes (Geneve class 0xffff, type N)
ORACLE_TLV_MAP = {0: 4, 1: 8, 5: 12}  # (dp-core: a table matches at most 3 distinct options, POF_SLOTS)
_REGS = ("reg0", "reg1")
# small pools, so that writes meet matches
_VALUES = (0, 1, 5, 0x12345678, 0xFFFFFFFF, 0x0102030405060708, 0xA1A2A3A4A5A6A7A8A9AAABAC)
_MASKS = (0xFF, 0xFF00, 0xFFFF0000, 0x1, 0xF0F0)


def _field(rng: random.Random) -> tuple[str, int]:
    i = rng.choice(sorted(ORACLE_TLV_MAP))
    return f"tun_metadata{i}", 8 * ORACLE_TLV_MAP[i]


def _value(rng: random.Random, bits: int) -> int:
    return rng.choice(_VALUES) & ((1 << bits) - 1)


def tun_metadata_match(rng: random.Random, table: int, fields: dict) -> None:
    """Add a match on one mapped option to a drawn match (IR field -> FieldMatch)."""
    if rng.random() >= (0.5 if table > 0 else 0.15):
        return
    f, bits = _field(rng)
    v = _value(rng, bits)
    if rng.random() < 0.35:
        m = rng.choice(_MASKS + ((1 << bits) - 1,)) & ((1 << bits) - 1)
        fields[f] = FieldMatch(v & m, m)
    else:
        fields[f] = FieldMatch(v)


def _sub(rng: random.Random, field: str, bits: int, n: int) -> Subfield:
    return Subfield(field, rng.randrange(bits - n + 1), n)


def tun_metadata_actions(rng: random.Random) -> list[Action]:
    """At most a few writes or reads of the mapped options, each valid anywhere."""
    r = rng.random()
    f, bits = _field(rng)
    if r < 0.3:
        return [SetField(f, _value(rng, bits))]
    if r < 0.45:
        m = rng.choice(_MASKS) & ((1 << bits) - 1)
        return [SetField(f, _value(rng, bits) & m, m)]
    if r < 0.6:
        g, gbits = _field(rng)
        n = rng.choice((8, 16, 32, min(bits, gbits)))
        n = min(n, bits, gbits)
        return [MoveField(_sub(rng, g, gbits, n), _sub(rng, f, bits, n))]
    if r < 0.72:
        reg = rng.choice(_REGS)
        n = rng.choice((8, 16, 32))
        n = min(n, bits)
        if rng.random() < 0.5:
            return [MoveField(_sub(rng, reg, 32, n), _sub(rng, f, bits, n))]
        return [MoveField(_sub(rng, f, bits, n), _sub(rng, reg, 32, n))]
    if r < 0.8:
        n = min(rng.choice((8, 16, 32)), bits)
        return [MoveField(_sub(rng, f, bits, n), Subfield("eth_src", rng.randrange(48 - n + 1), n))]
    if r < 0.87:
        n = min(rng.choice((16, 32)), bits)
        g, gbits = _field(rng)
        return [StackPush(_sub(rng, f, bits, n)), StackPop(_sub(rng, g, gbits, n) if rng.random() < 0.5 else Subfield("reg1", 32 - n, n))]
    return [DeleteField(f)]
