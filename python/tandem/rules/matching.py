"""Set relations between OpenFlow matches (pure): does one match select every
packet another does (``covers``, OpenFlow's non-strict selection), can one
packet match both (``overlaps``, CHECK_OVERLAP). Shared by OneSwitch's state
and its endpoint's stats selection."""

from __future__ import annotations

from tandem.rules.ir import Match, field_bits


def covers(general: Match, specific: Match) -> bool:
    """True if every packet matching ``specific`` matches ``general`` field-wise
    (OpenFlow's non-strict selection: the rule is at least as specific)."""
    for key, fm in general:
        sf = specific.get(key)
        if sf is None:
            return False
        full = (1 << field_bits(key)) - 1
        gmask = full if fm.mask is None else fm.mask
        smask = full if sf.mask is None else sf.mask
        if smask & gmask != gmask or sf.value & gmask != fm.value & gmask:
            return False
    return True


def overlaps(a: Match, b: Match) -> bool:
    """Could one packet match both?"""
    for key, fa in a:
        fb = b.get(key)
        if fb is None:
            continue
        full = (1 << field_bits(key)) - 1
        common = (full if fa.mask is None else fa.mask) & (full if fb.mask is None else fb.mask)
        if fa.value & common != fb.value & common:
            return False
    return True
