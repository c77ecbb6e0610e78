"""A ``load`` into ``nsh_ttl``, whose Open vSwitch subfield is 8 bits over the NSH
header's 6-bit TTL: the flow keeps all 8 bits, which later moves and ``dec_nsh_ttl``
see (a match, 6 bits, never meets a value above 63), and the frame gets the low 6
(measured on Open vSwitch 3.1 with frames: ``load:0xc5->NXOXM_NSH_TTL[]`` leaves 0xc5
in the flow and TTL 5 in the frame; ``load:0x2->NXOXM_NSH_TTL[6..7]`` on TTL 63 leaves
0xbf and the frame's 63; ``load:0x7->NXOXM_NSH_TTL[0..5]`` keeps bits 6 and 7;
``load:0xc1->…,dec_nsh_ttl`` leaves 0xc0, frame TTL 0; docs/rule-syntax.md).

In the IR a load is the masked set_field with the subfield's 8-bit mask (0xff for
the whole ``NXOXM_NSH_TTL[]``; ``SetField`` takes 8-bit values and masks for nsh_ttl
when masked), which dp-core runs as its masked write of the flow's 8 bits and the
codecs carry as ``load`` (text) and NXAST_REG_LOAD2 (wire; the whole subfield without
a mask, as Open vSwitch sends it back). The unmasked set_field stays the header's
6 bits (Open vSwitch refuses ``set_field:0xc5->nsh_ttl``). Pure."""

from __future__ import annotations

from .ir import SetField

FLOW_BITS = 8  # (Open vSwitch's subfield; the header holds the low 6)
WHOLE = (1 << FLOW_BITS) - 1


def nsh_ttl_load(value: int, ofs: int, n_bits: int) -> list[SetField]:
    """``load:value->NXOXM_NSH_TTL[ofs..ofs+n_bits-1]`` as the IR's masked set_field."""
    return nsh_ttl_masked(value << ofs, ((1 << n_bits) - 1) << ofs)


def nsh_ttl_masked(value: int, mask: int) -> list[SetField]:
    """A masked write of Open vSwitch's 8-bit nsh_ttl (a load, NXAST_REG_LOAD2) as the IR's set_field."""
    return [SetField("nsh_ttl", value & mask, mask)]


def wire_mask(mask: int | None) -> int | None:
    """The mask NXAST_REG_LOAD2 carries for a load into nsh_ttl: none for the whole
    subfield, as Open vSwitch's ``nx_put_entry`` sends an all-ones mask."""
    return None if mask == WHOLE else mask
