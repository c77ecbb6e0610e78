"""A ``load`` into ``nsh_ttl``, whose Open vSwitch subfield is 8 bits over the NSH
header's 6-bit TTL (the flow keeps all 8 bits, which later moves, matches and
``dec_nsh_ttl`` see; the frame gets the low 6: measured on Open vSwitch 3.1,
docs/rule-syntax.md). The IR's set_field holds the header's 6 bits, so a load is
taken where a set_field says exactly what it does:

- the whole ``NXOXM_NSH_TTL[]`` with a value up to 63: the unmasked set_field (all
  8 bits written, bits 6 and 7 cleared, as Open vSwitch's load does);
- bits within 0..5, not all six: the masked set_field (the other bits kept).

A value above 63, a load into bit 6 or 7, and one into bits 0..5 together (whose
set_field would also clear bits 6 and 7) are refused with one error line; ``move``
and ``pop`` write those bits. Pure."""

from __future__ import annotations

from .ir import RuleError, SetField

HEADER_BITS = 6  # (the NSH header's TTL)


def nsh_ttl_load(value: int, ofs: int, n_bits: int) -> list[SetField]:
    """``load:value->NXOXM_NSH_TTL[ofs..ofs+n_bits-1]`` as the IR's set_field (RuleError where not exact)."""
    return nsh_ttl_masked(value << ofs, ((1 << n_bits) - 1) << ofs)


def nsh_ttl_masked(value: int, mask: int) -> list[SetField]:
    """A masked write of Open vSwitch's 8-bit nsh_ttl (a load, NXAST_REG_LOAD2) as the IR's set_field."""
    if mask == 0xFF:
        if value >> HEADER_BITS:
            raise RuleError(f"{value:#x} into nsh_ttl is not taken: a load holds the header's 6 bits "
                            "(0..63); move or pop write bits 6 and 7")
        return [SetField("nsh_ttl", value)]
    if mask >> HEADER_BITS or mask == (1 << HEADER_BITS) - 1:
        raise RuleError(f"nsh_ttl with mask {mask:#x} is not taken: a load writes the whole NXOXM_NSH_TTL[] "
                        "(0..63) or bits within 0..5 but not all six; move or pop write bits 6 and 7")
    return [SetField("nsh_ttl", value & mask, mask)]
