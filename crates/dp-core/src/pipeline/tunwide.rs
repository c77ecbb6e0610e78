//! Bit ranges of `tun_metadataN` past bit 127 (options mapped longer than 16 bytes, up to
//! Open vSwitch's 124): set_field / load of any bits (`Action::SetTunMetadataWide`), and
//! move, push and pop with such an operand, as Open vSwitch 3.1 runs them (a move reads
//! its whole source first; a push makes one stack entry of up to 1024 bits, whose low bits
//! a narrower pop takes). The other actions' operands (`output:FIELD`, `check_pkt_larger`,
//! `multipath`, `bundle_load`, `ct(zone=…)`) read and write any bits of an option, at most 128
//! of them (`read_subfield`, `write_subfield`). The option's value is `TunMeta::values`
//! (bits 0..127) and `TunMeta::high` (the rest).
//! State: in the packet's `TunMeta`. Cost: only actions on such bits pay (bit by bit).

use super::tunmeta::TunMeta;
use super::*;
use crate::tunwide::{get_bits, masked, of_u128, put_bits, Wide, WideSet};

/// Does this operand reach past bit 127 of a `tun_metadataN`?
#[inline]
pub(super) fn is_wide(sf: &Subfield) -> bool {
    matches!(sf.field, Field::TunMetadata(_)) && sf.ofs + sf.n_bits > 128
}

impl Pipeline {
    /// The whole option (0 where never written).
    fn tm_get(ctx: &Ctx, i: u8) -> Wide {
        let mut w = of_u128(Self::tun_metadata_value(ctx, i));
        if let Some(h) = ctx.tmeta.as_ref().and_then(|t| t.high.as_ref()) {
            w[1..].copy_from_slice(&h[usize::from(i)]);
        }
        w
    }

    /// Write the whole option (present from now on).
    fn tm_put(ctx: &mut Ctx, i: u8, w: &Wide) {
        Self::write_tun_metadata(ctx, i, w[0]);
        let t = ctx.tmeta.as_mut().expect("written above");
        if t.high.is_some() || w[1..].iter().any(|&l| l != 0) {
            t.high.get_or_insert_with(|| Box::new([[0; 7]; crate::field::TUN_METADATA_FIELDS]))[usize::from(i)].copy_from_slice(&w[1..]);
        }
    }

    fn operand_read(ctx: &mut Ctx, sf: &Subfield) -> Wide {
        match sf.field {
            Field::TunMetadata(i) => get_bits(&Self::tm_get(ctx, i), sf.ofs, sf.n_bits),
            f => of_u128((Self::read_field(ctx, f) >> sf.ofs) & crate::rule::ones(sf.n_bits)),
        }
    }

    fn operand_write(ctx: &mut Ctx, sf: &Subfield, bits: &Wide) {
        match sf.field {
            Field::TunMetadata(i) => {
                let mut w = Self::tm_get(ctx, i);
                put_bits(&mut w, sf.ofs, sf.n_bits, bits);
                Self::tm_put(ctx, i, &w);
            }
            _ => Self::write_subfield(ctx, *sf, bits[0]),
        }
    }

    /// The bits of a subfield of at most 128 bits (of any field; past bit 127 of an option too).
    pub(super) fn read_subfield(ctx: &mut Ctx, sf: &Subfield) -> u128 {
        if is_wide(sf) {
            return Self::operand_read(ctx, sf)[0];
        }
        (Self::read_field(ctx, sf.field) >> sf.ofs) & crate::rule::ones(sf.n_bits)
    }

    /// `write_subfield` of an operand past bit 127 of an option (`is_wide`, at most 128 bits).
    pub(super) fn write_wide_subfield(ctx: &mut Ctx, sf: &Subfield, bits: u128) {
        Self::operand_write(ctx, sf, &of_u128(bits & crate::rule::ones(sf.n_bits)));
    }

    /// `Action::SetTunMetadataWide`.
    pub(super) fn set_tun_metadata_wide(ctx: &mut Ctx, s: &WideSet) {
        let w = masked(&Self::tm_get(ctx, s.opt), &s.value, &s.mask);
        Self::tm_put(ctx, s.opt, &w);
    }

    /// A move with an operand past bit 127 of an option (`is_wide`).
    pub(super) fn move_wide(ctx: &mut Ctx, src: &Subfield, dst: &Subfield) {
        let bits = Self::operand_read(ctx, src);
        Self::operand_write(ctx, dst, &bits);
    }

    /// A push while the packet has options (a wide operand, or entries a wide push made).
    pub(super) fn push_wide(ctx: &mut Ctx, sf: &Subfield) {
        let v = Self::operand_read(ctx, sf);
        let depth = ctx.stack.len();
        ctx.stack.push(v[0]);
        let t = ctx.tmeta.get_or_insert_with(TunMeta::new);
        t.wide_stack.retain(|e| e.0 < depth); // (entries popped since, or dropped with a copy's stack)
        if v[1..].iter().any(|&l| l != 0) {
            t.wide_stack.push((depth, v));
        }
    }

    /// A pop while the packet has options: the entry's bits past 127 too, if a wide push made it.
    pub(super) fn pop_wide(ctx: &mut Ctx, sf: &Subfield) {
        let Some(low) = ctx.stack.pop() else { return };
        let depth = ctx.stack.len();
        let mut v = of_u128(low);
        if let Some(t) = ctx.tmeta.as_mut() {
            t.wide_stack.retain(|e| e.0 <= depth);
            if t.wide_stack.last().is_some_and(|e| e.0 == depth && e.1[0] == low) {
                v = t.wide_stack.pop().expect("checked").1;
            }
        }
        let n = sf.n_bits;
        Self::operand_write(ctx, sf, &get_bits(&v, 0, n));
    }
}
