//! Open vSwitch's `encap(nsh(md_type=1))` and `encap(ethernet)` in the one form the rule
//! IR lets through (python/tandem/rules/encap.py): `encap(nsh…)`, set_fields on NSH
//! fields, `encap(ethernet)`, in one apply-actions list. Open vSwitch 3.1 wraps the
//! whole frame (VLAN tags included) in an NSH header (MD type 1, flags 0, TTL 63,
//! length 6 words, next protocol 3 = Ethernet, SPI 0, SI 255, contexts 0), then in an
//! Ethernet header with both addresses 0 and ethertype 0x894f. Between the two the
//! packet has no Ethernet header in OVS; the IR admits only NSH set_fields there, which
//! touch the NSH header alone, so dp-core puts both headers on at `encap(nsh)` (the
//! NSH set_fields then run on an ordinary NSH frame) and `encap(ethernet)` changes
//! nothing. State: `Ctx::nsh` is cleared (the new header's fields are the frame's);
//! `Ctx::committed` is the frame with the NSH header but not the Ethernet one (for
//! `output(port=P,max_len=N)`: Open vSwitch commits at `encap(nsh)` and leaves the
//! Ethernet header pending, measured).
//! Cost: one copy of the frame per encap.

use super::{Ctx, Pipeline};

/// Ethernet (addresses 0, 0x894f) + the NSH MD type 1 header `encap(nsh(md_type=1))` pushes.
const ETH_NSH_MD1: [u8; 38] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x89, 0x4f, // Ethernet
    0x0f, 0xc6, 1, 3, 0, 0, 0, 0xff, // ver 0, flags 0, TTL 63, length 6; MD type 1; next protocol 3; SPI 0, SI 255
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // contexts c1..c4
];

impl Pipeline {
    /// `encap(nsh(md_type=1))` (with the `encap(ethernet)` the IR requires after it).
    pub(super) fn encap_nsh(ctx: &mut Ctx) {
        let mut data = Vec::with_capacity(ETH_NSH_MD1.len() + ctx.data.len());
        data.extend_from_slice(&ETH_NSH_MD1);
        data.extend_from_slice(&ctx.data);
        ctx.data = data;
        // Open vSwitch commits here (the NSH header goes onto the frame as committed) and
        // leaves the Ethernet header of encap(ethernet) pending, as a VLAN push (pipeline::trunc)
        ctx.committed.set(ctx.data.len() - 14);
        ctx.nsh = None;
        ctx.dirty = true; // (re-parse: the flow is the NSH frame's now)
    }
}
