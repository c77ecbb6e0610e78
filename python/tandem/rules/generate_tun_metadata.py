"""Random rules on Open vSwitch's ``tun_metadata0..63`` (generator feature
``nx_tun_metadata``, opt-in): matches on the mapped options (value and mask within
their mapped length, more often in later tables, where an earlier table may have
written them), and writes: set_field (whole or masked, ``load``), a move between two
options, from a register into one or out of one into a register or the frame's
Ethernet source (which shows in the output bytes), a push of one popped into another
operand, and ``delete_field``. Every value, mask and subfield stays within the
option's length in ``ORACLE_TLV_MAP``, the map every bridge of the oracle holds, except
with feature ``nx_tun_metadata_wide``: then match values and masks, set_field values and
loads are also drawn longer than the option (as ovs-ofctl sends them, the switch keeps
their first mapped bytes: ``tun_metadata.fit``; ``oracle_fit`` is what OneSwitch's
endpoint makes of such a rule). With feature ``nx_tun_metadata_long`` the rules name the
options of ``LONG_TLV_MAP`` instead (mapped 16..124 bytes, longer than the emulator backend
holds: the OVS backend's), with values, masks and subfields across their whole length, and
multipath writing their bits past 119; its matches name ORACLE_TLV_MAP's options too (so a
table matches up to 6 distinct options).
With feature ``nx_tun_metadata_any`` the writes are often Open vSwitch's ``set_field:ANY``
(a load whose mask keeps no bit of the option: ``SetField(f, 0, 0)``; tun_metadata.py),
often followed by a move of the option's top 32 bits into eth_src (where the output shows
them), so matches and moves meet options it made present.

Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import dataclasses
import random

from .ir import Action, DeleteField, FieldMatch, Match, MoveField, Multipath, Rule, SetField, StackPop, StackPush, Subfield
from .tun_metadata import EMU_MATCH_BITS, fit_rule, index

TUN_METADATA_FEATURE = "nx_tun_metadata"
TUN_METADATA_WIDE_FEATURE = "nx_tun_metadata_wide"  # (values longer than the option, too)
TUN_METADATA_LONG_FEATURE = "nx_tun_metadata_long"  # (options mapped longer than 12 bytes: LONG_TLV_MAP)
TUN_METADATA_ANY_FEATURE = "nx_tun_metadata_any"  # (set_field:ANY, too)
TUN_METADATA_FEATURES = frozenset({TUN_METADATA_FEATURE, TUN_METADATA_WIDE_FEATURE, TUN_METADATA_LONG_FEATURE,
                                   TUN_METADATA_ANY_FEATURE})
# tun_metadataN -> its option length in bytes (Geneve class 0xffff, type N)
ORACLE_TLV_MAP = {0: 4, 1: 8, 5: 12}
LONG_TLV_MAP = {2: 16, 3: 124, 4: 40}  # (the OVS backend's; with ORACLE_TLV_MAP 204 of the switch's 256 bytes)
_REGS = ("reg0", "reg1")
# small pools, so that writes meet matches
_VALUES = (0, 1, 5, 0x12345678, 0xFFFFFFFF, 0x0102030405060708, 0xA1A2A3A4A5A6A7A8A9AAABAC)
_MASKS = (0xFF, 0xFF00, 0xFFFF0000, 0x1, 0xF0F0)


_WIDE_MAX_BITS = 992 - 64  # (a wider value or load still fits the IR field: _widen, _wide_write)
_LONG_VALUES = (int.from_bytes(bytes(range(1, 125)), "big"), int.from_bytes(bytes(range(0xF0, 0x10, -2)) * 2, "big"))
_LONG_MASKS = (0xFF << 120, (1 << 128) - 1 << 64, int.from_bytes(b"\xff\x00" * 62, "big"))


def _field(rng: random.Random, long: bool = False) -> tuple[str, int]:
    """An option of ORACLE_TLV_MAP (``long``: of LONG_TLV_MAP) and its bits."""
    tlv = LONG_TLV_MAP if long else ORACLE_TLV_MAP
    i = rng.choice(sorted(tlv))
    return f"tun_metadata{i}", 8 * tlv[i]


def _value(rng: random.Random, bits: int) -> int:
    return rng.choice(_VALUES + (_LONG_VALUES if bits > 96 else ())) & ((1 << bits) - 1)


def tun_metadata_match(rng: random.Random, table: int, fields: dict, wide: bool = False, long: bool = False,
                       any_: bool = False) -> None:
    """Add a match on one mapped option to a drawn match (IR field -> FieldMatch); ``wide``:
    often with a value (and mask) longer than the option; ``long``: on LONG_TLV_MAP's;
    ``any_``: often on 0 in a later table (what a ``set_field:ANY`` makes of an option never
    written: present at 0)."""
    if rng.random() >= (0.5 if table > 0 else 0.15):
        return
    f, bits = _field(rng, long and rng.random() < 0.6)  # (long: ORACLE_TLV_MAP's too, so a table matches up to 6 options)
    if any_ and table > 0 and rng.random() < 0.5:
        m = rng.choice((None, 0xFF, 0xFFFF0000))
        fields[f] = FieldMatch(0, m)
        return
    v = _value(rng, bits)
    k = rng.randint(1, 4) if wide and bits <= _WIDE_MAX_BITS and rng.random() < 0.7 else 0
    if rng.random() < 0.35:
        m = rng.choice(_MASKS + ((1 << bits) - 1,) + (_LONG_MASKS if long and bits > 96 else ())) & ((1 << bits) - 1)
        if k:
            m = _widen(rng, m, k, rng.choice((0, (1 << 8 * k) - 1)))
            v = _widen(rng, v, k)
        fields[f] = FieldMatch(v & m, m) if m != (1 << 992) - 1 else FieldMatch(v)
    else:  # (a mask of a 124-byte option's every bit is no mask: the IR, like ovs-ofctl, holds none)
        fields[f] = FieldMatch(_widen(rng, v, k) if k else v)


def _widen(rng: random.Random, v: int, k: int, low: int | None = None) -> int:
    """``v`` with ``k`` more bytes below it (random ones, or ``low``): longer than its
    option when ``v`` fills it."""
    return v << 8 * k | (rng.getrandbits(8 * k) if low is None else low)


def _wide_write(rng: random.Random, f: str, bits: int) -> SetField:
    """A set_field whose value is longer than the option, or a load reaching past its end."""
    if rng.random() < 0.5:
        v = _widen(rng, rng.choice(_VALUES + ((1 << bits) - 1,)) & ((1 << bits) - 1), rng.randint(1, 4))
        return SetField(f, v)
    n = rng.choice((1, 4, 8, 16, 32))
    ofs = rng.randint(max(0, bits - n + 1), bits + 24)
    return SetField(f, rng.getrandbits(n) << ofs, ((1 << n) - 1) << ofs)


def oracle_fit(rules: list[Rule]) -> list[Rule]:
    """The rules as OneSwitch's endpoint holds them after ovs-ofctl sent them to a switch
    with ``ORACLE_TLV_MAP`` and ``LONG_TLV_MAP``: values longer than their option cut (``tun_metadata.fit``)."""
    return [fit_rule(r, ORACLE_TLV_MAP | LONG_TLV_MAP) for r in rules]


def is_wide(field: str, value: int, mask: int | None) -> bool:
    """A value (mask) on ``field`` longer than its option in ``ORACLE_TLV_MAP`` (as ovs-ofctl sends it)."""
    n = ORACLE_TLV_MAP.get(index(field)) if index(field) is not None else None
    return n is not None and max(value.bit_length(), (mask or 0).bit_length()) > 8 * n


def _sub(rng: random.Random, field: str, bits: int, n: int) -> Subfield:
    return Subfield(field, rng.randrange(bits - n + 1), n)


def tun_metadata_actions(rng: random.Random, wide: bool = False, long: bool = False, any_: bool = False) -> list[Action]:
    """At most a few writes or reads of the mapped options, each valid anywhere; ``wide``:
    often a write longer than the option; ``long``: on LONG_TLV_MAP's options, often with
    32 bits of one moved into eth_src after (where the output shows them); ``any_``: often
    a ``set_field:ANY`` (``_any_write``)."""
    if any_ and rng.random() < 0.5:
        return _any_write(rng)
    acts = _tun_metadata_actions(rng, wide, long)
    if long and rng.random() < 0.25:
        acts += _high_operand(rng)
    if long and rng.random() < 0.7:
        f, bits = _field(rng, long)
        acts.append(MoveField(_sub(rng, f, bits, 32), Subfield("eth_src", 8, 32)))
    return acts


def _any_write(rng: random.Random) -> list[Action]:
    """Open vSwitch's ``set_field:ANY`` on an option of ORACLE_TLV_MAP, often with the
    option's top 32 bits moved into eth_src after."""
    f, bits = _field(rng)
    shown = [MoveField(Subfield(f, bits - 32, 32), Subfield("eth_src", 8, 32))] if rng.random() < 0.6 else []
    return [SetField(f, 0, 0), *shown]


def _high_operand(rng: random.Random) -> list[Action]:
    """multipath writing bits of a LONG_TLV_MAP option past bit 119 (where the emulator backend
    took 120 of old), then those 32 bits moved into eth_src. (No check_pkt_larger: outside a
    clone OVS 3.1 runs the actions after it from datapath actions whose length-check branch
    is still open, a stack pop there writing bits: generate_clone_check.py draws it in clones.)"""
    f, bits = _field(rng, True)
    dst = Subfield(f, rng.randrange(120 - 15, bits - 16 + 1), 16)  # (reaching past bit 119)
    act = Multipath("symmetric_l4", rng.randrange(1024), rng.choice(("hash_threshold", "modulo_n")), rng.randint(1, 8), 0, dst)
    return [act, MoveField(Subfield(f, min(dst.ofs, bits - 32), 32), Subfield("eth_src", 8, 32))]


def _tun_metadata_actions(rng: random.Random, wide: bool, long: bool) -> list[Action]:
    r = rng.random()
    f, bits = _field(rng, long)
    if wide and bits <= _WIDE_MAX_BITS and rng.random() < 0.6:  # (then, often, the option's top 32 bits into eth_src, where the output shows them)
        shown = [MoveField(Subfield(f, bits - 32, 32), Subfield("eth_src", 8, 32))] if rng.random() < 0.7 else []
        return [_wide_write(rng, f, bits), *shown]
    if r < 0.3:
        return [SetField(f, _value(rng, bits))]
    if r < 0.45:
        m = rng.choice(_MASKS + (_LONG_MASKS if long else ())) & ((1 << bits) - 1)
        return [SetField(f, _value(rng, bits) & m, m)]
    if r < 0.6:
        g, gbits = _field(rng, long)
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
        n = min(rng.choice((16, 32) + ((128, bits) if long else ())), bits)
        g, gbits = _field(rng, long)
        if gbits < n:
            g, gbits = f, bits
        return [StackPush(_sub(rng, f, bits, n)), StackPop(_sub(rng, g, gbits, n) if rng.random() < 0.5 or n > 32 else Subfield("reg1", 32 - n, n))]
    return [DeleteField(f)]


def emu_matches(rules: list[Rule]) -> list[Rule]:
    """The rules with each match on a LONG_TLV_MAP option narrowed to the bits the emulator
    backend matches (0..EMU_MATCH_BITS-1: dp-core's key slot; its actions take the whole
    option): the mask cut there (an exact match becomes one masked to those bits), a match
    left with no bit dropped. What the dp-core oracle runs of ``nx_tun_metadata_long``."""
    low = (1 << EMU_MATCH_BITS) - 1
    out = []
    for r in rules:
        fields = []
        for k, fm in r.match:
            if index(k) in LONG_TLV_MAP:
                m = (fm.mask if fm.mask is not None else (1 << 8 * LONG_TLV_MAP[index(k)]) - 1) & low
                if not m:
                    continue
                fm = FieldMatch(fm.value & m, m)
            fields.append((k, fm))
        out.append(dataclasses.replace(r, match=Match(tuple(fields))) if tuple(fields) != tuple(r.match) else r)
    return out
