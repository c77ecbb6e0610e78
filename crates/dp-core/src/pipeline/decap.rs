//! Open vSwitch's `decap()` as the rule IR lets it through (python/tandem/rules/decap.py):
//! the pair `decap(),decap()` on an Ethernet + NSH frame whose NSH next protocol is
//! Ethernet. Open vSwitch 3.1 (measured on a dummy bridge) commits its pending header
//! changes, turns the first `decap()` of an Ethernet frame into packet type
//! (1, ethertype), and on the second, for NSH, pops both headers and recirculates
//! (`pop_eth,pop_nsh(),recirc(…)`): the rest of the list, the later tables and the
//! action set run on the re-parsed inner frame, with the registers, metadata,
//! `pkt_mark`, `tunnel_id`, the stack and the action set kept (measured). dp-core strips both headers at the
//! second `decap()` and goes on in place, which runs the same actions in the same order;
//! the NSH fields written before are gone with their header (`Ctx::nsh`), the frame is
//! all committed (`pipeline/trunc.rs`) and a recirculation counted (fresh resubmit
//! limits, as a new translation; the path cache records no path past it, since the inner
//! frame is not in the ingress key).
//! Open vSwitch fails the whole translation (nothing of the packet is sent, not even an
//! output before it) for a first `decap()` of a VLAN-tagged frame ("cannot decap
//! Ethernet if VLAN is present") and a second one of a packet that is not NSH
//! (packet type (1,0x800), measured); so does dp-core (`Ctx::decap_failed`). An NSH
//! next protocol other than Ethernet leaves a non-Ethernet packet in Open vSwitch; the
//! IR refuses the pair unless the match pins `nsh_np=3`, and dp-core fails it too.
//! State: `Ctx::decap_eth`, `Ctx::decap_failed`. Cost: one copy of the inner frame.

use super::{Ctx, Pipeline};
use crate::nsh::ETH_TYPE_NSH;

const ETH_LEN: usize = 14;
const NSH_NP_ETHERNET: u8 = 3;

impl Pipeline {
    /// One `decap()`; false when Open vSwitch's translation fails here (the packet is
    /// dropped whole: `too_deep` stops everything, `decap_failed` names why).
    pub(super) fn decap(ctx: &mut Ctx) -> bool {
        Self::reparse(ctx);
        ctx.committed.set(ctx.data.len()); // (Open vSwitch commits its pending changes first)
        if !ctx.decap_eth {
            if ctx.h.vlans.len() > 0 {
                return Self::decap_fails(ctx);
            }
            ctx.decap_eth = true; // (packet type (1, eth_type): the Ethernet header pops at the second)
            return true;
        }
        let at = ETH_LEN;
        let nsh_len = ctx.data.get(at..at + 2).map_or(0, |b| usize::from(b[1] & 0x3f) * 4);
        let np = ctx.data.get(at + 3).copied();
        if ctx.h.eth_type != ETH_TYPE_NSH || ctx.h.nsh.is_none() || np != Some(NSH_NP_ETHERNET) || at + nsh_len > ctx.data.len() {
            return Self::decap_fails(ctx);
        }
        ctx.data.drain(..at + nsh_len);
        ctx.decap_eth = false;
        ctx.nsh = None;
        ctx.nd = None;
        ctx.dirty = true;
        ctx.committed.set(ctx.data.len());
        ctx.resubmits = 0; // (the recirculated packet is a new translation)
        ctx.recirc = ctx.recirc.saturating_add(1);
        true
    }

    fn decap_fails(ctx: &mut Ctx) -> bool {
        ctx.decap_failed = true;
        ctx.too_deep = true;
        false
    }
}
