//! Key segmentation for the decision tree: which bit ranges of the packed key
//! the tree compares as integer "dimensions".
//!
//! A dimension is a run of bits of one key word. The runs are chosen from the
//! masks of the rules the tree holds so that every rule's mask, restricted to
//! a dimension, is a prefix (ones from the run's top bit down, then zeros); a
//! prefix-masked value is exactly an integer range, so a rule becomes one
//! range per dimension and the tree splits on thresholds. Start from the
//! finest runs (cut wherever some mask changes from 0 to 1 or back, so each
//! run is all-ones or all-zeros in every mask) and greedily merge a run into
//! the one above it while all masks stay prefixes; runs no mask uses are
//! dropped. IPv4 source and destination come out as two 32-bit dimensions, a
//! port as one 16-bit dimension, whatever field layout the key has. Runs
//! wider than 32 bits are cut into 32-bit pieces (a prefix mask is a prefix
//! on each piece), so the tree compares u32 values.
//! State: none. Cost: O(masks x key bits) per segmentation.

use crate::field::{Key, KEY_WORDS};

/// Most dimensions a tree compares (the per-key value array is this long).
pub(super) const MAX_DIMS: usize = 15;

/// Widest dimension (wider runs are cut into pieces).
pub(super) const MAX_BITS: u32 = 32;

/// `mask` bits starting at bit `shift` of key word `word`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dim {
    pub word: u8,
    pub shift: u8,
    pub mask: u64,
}

fn ones(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Dim {
    #[inline(always)]
    pub fn get(&self, key: &Key) -> u64 {
        (key[self.word as usize] >> self.shift) & self.mask
    }

    /// The integer range a rule `(value, mask)` allows on this dimension
    /// (valid when its mask here is a prefix, which segmentation ensures).
    pub fn range(&self, value: &Key, mask: &Key) -> (u64, u64) {
        let m = self.get(mask);
        let lo = self.get(value) & m;
        (lo, lo | (self.mask & !m))
    }
}

/// Whether `m` (over the low `bits` bits) is ones-then-zeros from the top.
fn is_prefix(m: u64, bits: u32) -> bool {
    let full = ones(bits);
    let n = m.count_ones();
    let expect = if n == 0 { 0 } else { (full << (bits - n)) & full };
    m == expect
}

/// Dimensions for the rules with masks `masks`: every mask is a prefix on
/// each returned dimension. Word by word, high bits first.
pub(super) fn segment(masks: &[Key]) -> Vec<Dim> {
    let mut dims = Vec::new();
    for w in 0..KEY_WORDS {
        // cut points: bit i where some mask differs between bits i and i - 1
        let mut cuts = 0u64;
        let mut used = 0u64;
        for m in masks {
            cuts |= (m[w] ^ (m[w] << 1)) & !1;
            used |= m[w];
        }
        if used == 0 {
            continue;
        }
        // runs from the top: [lo, hi) with hi descending
        let mut hi = 64u32;
        let mut cur: Option<(u32, u32)> = None; // (lo, hi) of the dimension being grown
        while hi > 0 {
            let below = cuts & ones(hi);
            let lo = if below == 0 { 0 } else { 63 - below.leading_zeros() };
            // run [lo, hi): merge into cur if every mask stays a prefix
            cur = Some(match cur {
                None => (lo, hi),
                Some((clo, chi)) => {
                    let merged_ok = masks.iter().all(|m| is_prefix((m[w] >> lo) & ones(chi - lo), chi - lo));
                    if merged_ok {
                        (lo, chi)
                    } else {
                        push_used(&mut dims, w, clo, chi, used);
                        (lo, hi)
                    }
                }
            });
            hi = lo;
        }
        if let Some((clo, chi)) = cur {
            push_used(&mut dims, w, clo, chi, used);
        }
    }
    dims
}

fn push_used(dims: &mut Vec<Dim>, w: usize, lo: u32, hi: u32, used: u64) {
    // keep [lo, hi) minus the low bits no mask uses (they would only widen values)
    // and cut into pieces of at most 32 bits from the top (a prefix stays a
    // prefix on each piece), so values and thresholds fit in u32
    let run = (used >> lo) & ones(hi - lo);
    if run == 0 {
        return;
    }
    let lo = lo + run.trailing_zeros();
    let mut top = hi;
    while top > lo {
        let bottom = top.saturating_sub(MAX_BITS).max(lo);
        dims.push(Dim { word: w as u8, shift: bottom as u8, mask: ones(top - bottom) });
        top = bottom;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_pair_and_port_become_separate_dimensions() {
        let mut a = [0u64; KEY_WORDS];
        a[4] = 0xff00_0000_ffff_0000; // src /8, dst /16
        a[5] = 0xffff << 32; // dst port
        let mut b = [0u64; KEY_WORDS];
        b[4] = 0xffff_ffff_0000_0000; // src /32, dst any
        let dims = segment(&[a, b]);
        let w4: Vec<_> = dims.iter().filter(|d| d.word == 4).map(|d| (d.shift, d.mask)).collect();
        // the destination's low 16 bits are wildcarded by every rule: trimmed
        assert_eq!(w4, vec![(32, 0xffff_ffff), (16, 0xffff)]);
        let w5: Vec<_> = dims.iter().filter(|d| d.word == 5).collect();
        assert_eq!(w5.len(), 1);
        assert_eq!((w5[0].shift, w5[0].mask), (32, 0xffff));
    }

    #[test]
    fn wide_runs_are_cut_into_32_bit_pieces() {
        let mut a = [0u64; KEY_WORDS];
        a[1] = u64::MAX << 8; // metadata /56
        let dims = segment(&[a]);
        let got: Vec<_> = dims.iter().map(|d| (d.word, d.shift, d.mask)).collect();
        assert_eq!(got, vec![(1, 32, 0xffff_ffff), (1, 8, 0xff_ffff)]);
    }

    #[test]
    fn every_mask_is_a_prefix_on_every_dimension() {
        let mut s = 99u64;
        for _ in 0..200 {
            let mut masks = Vec::new();
            for _ in 0..5 {
                let mut m = [0u64; KEY_WORDS];
                for w in [0usize, 4, 5] {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    m[w] = s & (s >> 17);
                }
                masks.push(m);
            }
            let dims = segment(&masks);
            for m in &masks {
                let mut covered = [0u64; KEY_WORDS];
                for d in &dims {
                    let bits = 64 - d.mask.leading_zeros();
                    assert!(is_prefix(d.get(m), bits), "{d:?} {m:?}");
                    covered[d.word as usize] |= d.mask << d.shift;
                }
                for w in 0..KEY_WORDS {
                    assert_eq!(m[w] & !covered[w], 0, "mask bits outside every dimension");
                }
            }
        }
    }
}
