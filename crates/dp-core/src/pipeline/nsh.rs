//! The NSH fields as Open vSwitch's flow holds them (`crate::nsh`): a set_field
//! writes the flow's whole value, which later lookups and moves see, and the frame's
//! bits (`nsh::set_frame`: 2 flag bits, 6 TTL bits, MD type 1 contexts only). So
//! `set_field:4->nsh_flags` meets a later `nsh_flags=4` while the frame's flags are 0,
//! and a context written on an MD type 2 header is matched but never sent.
//! `Ctx::nsh` holds the written key words; a re-parse of the frame keeps them
//! while the frame is still NSH (Open vSwitch does not re-parse in one pipeline run).
//! State: `Ctx::nsh`. Cost: nothing until an NSH field is written.

use super::{Ctx, Pipeline};
use crate::actions::TtlResult;
use crate::field::Field;
use crate::nsh::{ETH_TYPE_NSH, NSH_WORD, NSH_WORDS};

impl Pipeline {
    /// set_field (or a masked load, through `write_field`) of an NSH field.
    pub(super) fn write_nsh(ctx: &mut Ctx, field: Field, value: u128) {
        Self::reparse(ctx);
        let h = &ctx.h;
        if h.eth_type != ETH_TYPE_NSH {
            return; // (the prerequisite: never met, as the IR's match requires eth_type=0x894f)
        }
        let mut w = ctx.nsh.or(h.nsh).unwrap_or([0; NSH_WORDS]);
        crate::nsh::write_words(&mut w, field, value);
        ctx.nsh = Some(w);
        crate::nsh::set_frame(&mut ctx.data, &ctx.h, field, value);
        ctx.dirty = true; // (re-parse, and keep the path cache from recording)
    }

    /// `dec_nsh_ttl` (Open vSwitch's `compose_dec_nsh_ttl_action`): the flow's TTL less 1
    /// while it is above 1 (written as a set_field), `Expired` at 0 or 1 (a header Open
    /// vSwitch does not parse reads 0), `NotIp` for a frame that is not NSH.
    pub(super) fn dec_nsh_ttl(ctx: &mut Ctx) -> TtlResult {
        Self::reparse(ctx);
        if ctx.h.eth_type != ETH_TYPE_NSH {
            return TtlResult::NotIp;
        }
        let ttl = (ctx.nsh.or(ctx.h.nsh).unwrap_or([0; NSH_WORDS])[0] >> 48) & 0xff;
        if ttl <= 1 {
            return TtlResult::Expired;
        }
        Self::write_nsh(ctx, Field::NshTtl, u128::from(ttl - 1));
        TtlResult::Decremented
    }

    /// Put the written NSH words into the key (after a re-parse of an NSH frame).
    #[inline]
    pub(super) fn nsh_flow(ctx: &mut Ctx) {
        if let (Some(w), ETH_TYPE_NSH) = (ctx.nsh, ctx.h.eth_type) {
            ctx.base[NSH_WORD..NSH_WORD + NSH_WORDS].copy_from_slice(&w);
        }
    }
}
