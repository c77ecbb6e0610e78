//! Open vSwitch's `tun_metadata0`..`63` (Geneve option data named by the switch's TLV
//! map), as pipeline state of a packet.
//!
//! Packets enter with no option present (OneSwitch has no tunnel ports). A set_field,
//! load, move or pop into `tun_metadataN` writes its value and makes it present; a
//! masked write keeps the other bits of the bytes the field holds. `delete_field`
//! makes it absent again but keeps its bytes, as Open vSwitch 3.1 does (a later masked
//! write or a move reading it sees them). A match on the field, whatever its mask, meets
//! only a packet on which it is present (`tun_metadata0=0` does not meet a packet that
//! never had it), so a table matching one numbers the masked values its rules match in
//! fields of its POF slots (`pipeline/tunfold.rs`; 0: absent, or no rule's value). The map's lengths are the endpoint's to check (values within the mapped length).
//! An option holds Open vSwitch's 124 bytes: bits 0..127 here, the rest, once written,
//! in `high` (`pipeline/tunwide.rs` reads and writes bit ranges past 127).
//! State: boxed, allocated by the first write (none on the hot path). Cost: a table
//! with such a slot fills it per lookup and keeps the path cache off (as POF tables).

use super::*;
use crate::field::TUN_METADATA_FIELDS;

/// A packet's tunnel options: which are present, and each one's bytes.
#[derive(Clone)]
pub(super) struct TunMeta {
    pub(super) present: u64,
    /// Bits 0..127 of each option.
    pub(super) values: [u128; TUN_METADATA_FIELDS],
    /// Bits 128..1023 of each option (limbs 1..7 of a `tunwide::Wide`), once one was written.
    pub(super) high: Option<Box<[[u128; 7]; TUN_METADATA_FIELDS]>>,
    /// The stack entries (depth, value) a push of more than 128 bits made: `Ctx::stack`
    /// holds their low 128 bits (`pipeline/tunwide.rs`).
    pub(super) wide_stack: Vec<(usize, crate::tunwide::Wide)>,
}

impl TunMeta {
    pub(super) fn new() -> Box<TunMeta> {
        Box::new(TunMeta { present: 0, values: [0; TUN_METADATA_FIELDS], high: None, wide_stack: Vec::new() })
    }
}

impl Pipeline {
    /// The value a move, push or masked write reads (0 for a field never written).
    pub(super) fn tun_metadata_value(ctx: &Ctx, i: u8) -> u128 {
        ctx.tmeta.as_ref().map_or(0, |t| t.values[usize::from(i)])
    }

    /// Fill the table's tun_metadata class fields for a lookup (`pipeline/tunfold.rs`; out
    /// of line, and only once a packet has options: others pay one test).
    #[cold]
    #[inline(never)]
    pub(super) fn tun_metadata_slots(ctx: &mut Ctx, fold: &super::tunfold::TunFold) {
        if let Some(t) = ctx.tmeta.as_deref() {
            fold.fill(&mut ctx.base, t);
        }
    }

    /// Write bits 0..127 of the option, keeping the others (present from now on).
    pub(super) fn write_tun_metadata(ctx: &mut Ctx, i: u8, value: u128) {
        let t = ctx.tmeta.get_or_insert_with(TunMeta::new);
        t.values[usize::from(i)] = value;
        t.present |= 1 << i;
        ctx.dirty = true; // (as for tunnel_id: keeps the path cache from recording)
    }

    /// set_field of the whole option (its bits past 127 become 0).
    pub(super) fn set_tun_metadata(ctx: &mut Ctx, i: u8, value: u128) {
        Self::write_tun_metadata(ctx, i, value);
        if let Some(h) = ctx.tmeta.as_mut().and_then(|t| t.high.as_mut()) {
            h[usize::from(i)] = [0; 7];
        }
    }

    /// `delete_field:tun_metadataN` (its bytes stay).
    pub(super) fn delete_tun_metadata(ctx: &mut Ctx, i: u8) {
        if let Some(t) = ctx.tmeta.as_mut() {
            t.present &= !(1 << i);
            ctx.dirty = true;
        }
    }
}
