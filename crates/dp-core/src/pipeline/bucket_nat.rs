//! What a bucket's `ct` with `nat` leaves in the packet, as Open vSwitch 3.1 runs it
//! (measured on a dummy bridge, `tests/dataplane/test_bucket_nat_vs_ovs.py`): the
//! datapath rewrites the packet, but the translation's flow never sees the rewrite
//! and is rolled back after the bucket. So the rest of the list, the later buckets
//! and the copies a later `ct(table=T)` recirculates get the translated packet,
//! while lookups (resubmit) still match the untranslated fields. A later change
//! writes a field only where the flow differs from what the datapath was last
//! given (the bucket's flow before its ct): `group:1,set_field:A->ip_src,output:2`
//! with A the packet's own source sends the translated source to 2, any other A
//! sends A. A field the bucket itself changed before its ct is written back at the
//! next output.
//!
//! So a bucket's ct records each field its nat rewrote (`Rewrite`: the value before,
//! which is what the datapath was last given, and after); `bucket_leaks` hands the
//! bucket's to the packet (`Ctx::bucket_nat`), and every place Open vSwitch commits
//! (an output, a packet-in, a ct) takes a field's translated value where the
//! packet's own still equals the one before, and drops it for good where the packet
//! holds neither. A ct gives the tracker that frame and keeps it (lookups after that
//! ct see the translated fields, where Open vSwitch's flow does not). State: per
//! packet. Cost: none until such a bucket runs.

use super::{Ctx, Pipeline};
use crate::field::{base_key, Field};
use crate::parse::parse_frame;

/// A field a ct's nat rewrote: its value before (what the datapath was last given)
/// and after (what the datapath holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rewrite {
    field: Field,
    before: u128,
    after: u128,
}

/// The flow fields a nat rewrites.
const NAT_FIELDS: [Field; 8] = [
    Field::Ipv4Src,
    Field::Ipv4Dst,
    Field::Ipv6Src,
    Field::Ipv6Dst,
    Field::TcpSrc,
    Field::TcpDst,
    Field::UdpSrc,
    Field::UdpDst,
];

/// The nat fields `frame` has, with their values.
fn nat_values(frame: &[u8], in_port: u32) -> Vec<(Field, u128)> {
    let Ok(h) = parse_frame(frame) else { return Vec::new() };
    let key = base_key(&h, in_port);
    NAT_FIELDS.iter().filter(|f| f.present_in(&h)).map(|&f| (f, slot_value(&key, f))).collect()
}

fn slot_value(key: &crate::field::Key, f: Field) -> u128 {
    let slot = f.slot();
    if slot.bits > 64 {
        (u128::from(key[slot.word]) << 64) | u128::from(key[slot.word + 1])
    } else {
        u128::from(key[slot.word] >> slot.shift) & crate::rule::ones(slot.bits)
    }
}

/// The fields a nat changed from `before` to `after` (the same packet).
pub(super) fn rewrites(before: &[u8], after: &[u8], in_port: u32) -> Vec<Rewrite> {
    let was = nat_values(before, in_port);
    nat_values(after, in_port)
        .into_iter()
        .filter_map(|(field, a)| {
            let b = was.iter().find(|(f, _)| *f == field)?.1;
            (a != b).then_some(Rewrite { field, before: b, after: a })
        })
        .collect()
}

impl Pipeline {
    /// The frame Open vSwitch's datapath holds at a commit: the packet's, with each
    /// leaked translation (`Ctx::bucket_nat`) whose field still equals its value before;
    /// the others are dropped (the commit wrote the packet's value). None: the packet's own.
    pub(super) fn datapath_frame(ctx: &Ctx) -> Option<Vec<u8>> {
        let mut left = ctx.bucket_nat.borrow_mut();
        if left.is_empty() {
            return None;
        }
        let now = nat_values(&ctx.data, ctx.in_port);
        // (a ct gave the tracker the datapath's frame and kept it: the packet then holds the value
        // after, where Open vSwitch's flow still holds the one before, and a write of either changes nothing)
        left.retain(|r| now.iter().any(|&(f, v)| f == r.field && (v == r.before || v == r.after)));
        let stale: Vec<&Rewrite> = left.iter().filter(|r| now.contains(&(r.field, r.before))).collect();
        if stale.is_empty() {
            return None;
        }
        let mut frame = ctx.data.clone();
        let h = parse_frame(&frame).ok()?;
        for r in stale {
            crate::actions::set_field(&mut frame, &h, r.field, r.after);
        }
        Some(frame)
    }

    /// A ct commits: the packet becomes the datapath's frame (the translations stay: Open
    /// vSwitch's flow still holds the values before, which a bucket of the caller rolls back to).
    pub(super) fn commit_bucket_nat(ctx: &mut Ctx) {
        if let Some(frame) = Self::datapath_frame(ctx) {
            ctx.data = frame;
            ctx.dirty = true;
        }
    }
}

/// What a bucket's copy leaves: the leaked translations still standing after its
/// commits, and those its own ct's nat made.
pub(super) fn leak(ctx: &mut Ctx, copy: &mut Ctx) {
    let mut left = std::mem::take(copy.bucket_nat.get_mut());
    for r in copy.nat_rewrites.drain(ctx.nat_rewrites.len().min(copy.nat_rewrites.len())..) {
        // (a field an earlier bucket's nat left, translated again: the datapath was last given the first value)
        match left.iter_mut().find(|e| e.field == r.field && e.after == r.before) {
            Some(e) => e.after = r.after,
            None => left.push(r),
        }
    }
    *ctx.bucket_nat.get_mut() = left;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_a_nat_changed() {
        let mut a = vec![0u8; 42];
        a[12..14].copy_from_slice(&[0x08, 0x00]);
        a[14] = 0x45;
        a[16..18].copy_from_slice(&28u16.to_be_bytes());
        a[22] = 64;
        a[23] = 17;
        a[26..30].copy_from_slice(&[10, 0, 0, 1]);
        a[30..34].copy_from_slice(&[10, 0, 0, 2]);
        a[34..36].copy_from_slice(&1000u16.to_be_bytes());
        a[36..38].copy_from_slice(&53u16.to_be_bytes());
        a[38..40].copy_from_slice(&8u16.to_be_bytes());
        let mut b = a.clone();
        b[26..30].copy_from_slice(&[10, 9, 9, 9]);
        let r = rewrites(&a, &b, 1);
        assert_eq!(r, vec![Rewrite { field: Field::Ipv4Src, before: 0x0A00_0001, after: 0x0A09_0909 }]);
        assert!(rewrites(&a, &a, 1).is_empty());
    }
}
