"""``check_pkt_larger`` into an NSH field's bit: taken where the rule's own match fixes that bit.

Open vSwitch 3.1 writes the bit into the flow (later moves and tables read it) without putting
it into its datapath flow's mask, and commits the NSH header as a masked set under that mask,
so the frame's header gets the bit only where a match, a read or another write of it put it
into the mask (measured, tests/dataplane/test_nsh_check_pkt_larger_vs_ovs.py). A bit the
rule's match fixes is in the mask from the rule's lookup on, so the header always gets it, as
dp-core writes it (measured: ``nsh_spi=0x123`` then ``check_pkt_larger(50)->NXOXM_NSH_SPI[2]``
leaves with 0x127, with 500 into bit 0 with 0x122; ``nsh_c1=0x11/0xff`` covers bit 1, ``0x10/0xf0``
does not, and the header keeps it). Other bits depend on Open vSwitch's classifier lookups: refused.
Pure; cost: one pass over the rule's apply-actions (and clones in them)."""

from __future__ import annotations

from .ir import NSH_FIELDS, CheckPktLarger, Clone, Match


def match_problem(match: Match, actions) -> str | None:
    """Why a ``check_pkt_larger`` into an NSH field in ``actions`` is refused with ``match``, or None."""
    for a in actions:
        if type(a) is Clone:
            why = match_problem(match, a.actions)
            if why:
                return why
        elif type(a) is CheckPktLarger and a.dst.field in NSH_FIELDS:
            fm = match.get(a.dst.field)
            if fm is None or (fm.mask is not None and not fm.mask >> a.dst.ofs & 1) or a.dst.ofs >= _MATCH_BITS.get(
                    a.dst.field, 64):
                return (f"check_pkt_larger into {a.dst.field}[{a.dst.ofs}]: only a bit the rule's match fixes (Open "
                        "vSwitch writes the frame's NSH header only where its datapath flow's mask holds the bit)")
    return None


_MATCH_BITS = {"nsh_ttl": 6}  # (a match on nsh_ttl holds the header's 6 bits; the operand has 8)
