//! Cache-friendly open-addressing tables for the classifier's lookup path.
//!
//! `FlatIndex` maps a masked key (the few key words a subtable's mask uses)
//! to the best rule for that key; the key words sit in the same slot as the
//! answer, so a probe usually costs one cache line. `FlatSet` is a set of
//! u64 prefixes. Both use linear probing (the index at load <= 1/4, so a
//! failed probe, the common case, mostly reads one slot; the set at <= 1/2); the classifier keeps
//! the authoritative rule lists elsewhere and mirrors only what lookup needs.
//! State: the slots. Cost: O(1) expected per probe / insert / remove.

use crate::field::Key;

const EMPTY: u64 = u64::MAX;
const TOMB: u64 = u64::MAX - 1;

#[inline(always)]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x
}

/// Hash of `key & mask` over the words `words`.
#[inline(always)]
pub fn hash_words(key: &Key, mask: &Key, words: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &w in words {
        let w = (w as usize) % crate::field::KEY_WORDS;
        h = (h.rotate_left(23) ^ (key[w] & mask[w])).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    mix(h)
}

/// Words of the key a subtable's mask uses, with their masks, inline (the
/// lookup path touches only this struct and one slot).
const MAXW: usize = 8;

#[repr(C)]
pub struct FlatIndex {
    // hot: everything a lookup reads, first
    slots: Vec<u64>,
    cap_mask: usize,
    stride: usize,
    nw: usize,
    wi: [u8; MAXW],
    wmask: [u64; MAXW],
    // cold
    words: Vec<u8>,
    live: usize,
    tombs: usize,
}

impl FlatIndex {
    /// An index over the key words `words` (ascending) of mask `mask`.
    pub fn new(words: Vec<u8>, mask: &Key) -> Self {
        let stride = 1 + words.len();
        let mut wi = [0u8; MAXW];
        let mut wmask = [0u64; MAXW];
        let nw = if words.len() <= MAXW { words.len() } else { usize::MAX };
        for (j, &w) in words.iter().enumerate().take(MAXW) {
            wi[j] = w;
            wmask[j] = mask[w as usize];
        }
        FlatIndex { slots: vec![EMPTY; 8 * stride], cap_mask: 7, stride, nw, wi, wmask, words, live: 0, tombs: 0 }
    }

    /// Hash of `key` under this index's mask (same value as `hash_words`).
    #[inline(always)]
    pub fn hash(&self, key: &Key, mask: &Key) -> u64 {
        if self.nw == usize::MAX {
            return hash_words(key, mask, &self.words);
        }
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for j in 0..self.nw.min(MAXW) {
            let w = (self.wi[j] as usize) % crate::field::KEY_WORDS;
            h = (h.rotate_left(23) ^ (key[w] & self.wmask[j])).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        mix(h)
    }

    /// `get` using the inline masks only (falls back to `mask` for wide masks).
    #[inline(always)]
    pub fn find(&self, key: &Key, mask: &Key, h: u64) -> Option<(u16, u32)> {
        if self.nw == usize::MAX {
            return self.get(key, mask, h);
        }
        let mut i = (h as usize) & self.cap_mask;
        loop {
            let base = i * self.stride;
            let w0 = self.slots[base];
            if w0 == EMPTY {
                return None;
            }
            if w0 != TOMB {
                let stored = &self.slots[base + 1..base + 1 + self.nw.min(MAXW)];
                let mut diff = 0u64;
                for (j, s) in stored.iter().enumerate() {
                    let w = (self.wi[j] as usize) % crate::field::KEY_WORDS;
                    diff |= *s ^ (key[w] & self.wmask[j]);
                }
                if diff == 0 {
                    return Some(((w0 >> 32) as u16, w0 as u32));
                }
            }
            i = (i + 1) & self.cap_mask;
        }
    }

    #[inline(always)]
    fn same(&self, base: usize, key: &Key, mask: &Key) -> bool {
        let stored = &self.slots[base + 1..base + 1 + self.words.len()];
        let mut diff = 0u64;
        for (s, &w) in stored.iter().zip(self.words.iter()) {
            let w = (w as usize) % crate::field::KEY_WORDS;
            diff |= *s ^ (key[w] & mask[w]);
        }
        diff == 0
    }

    /// Address of the first slot a probe for hash `h` reads (for prefetching).
    #[inline(always)]
    pub fn slot_ref(&self, h: u64) -> &u64 {
        &self.slots[((h as usize) & self.cap_mask) * self.stride]
    }

    /// Best (priority, rule) stored for `key & mask`.
    #[inline(always)]
    pub fn get(&self, key: &Key, mask: &Key, h: u64) -> Option<(u16, u32)> {
        let mut i = (h as usize) & self.cap_mask;
        loop {
            let base = i * self.stride;
            let w0 = self.slots[base];
            if w0 == EMPTY {
                return None;
            }
            if w0 != TOMB && self.same(base, key, mask) {
                return Some(((w0 >> 32) as u16, w0 as u32));
            }
            i = (i + 1) & self.cap_mask;
        }
    }

    /// Insert or overwrite the answer for `key & mask`.
    pub fn set(&mut self, key: &Key, mask: &Key, h: u64, top: (u16, u32)) {
        if (self.live + self.tombs + 1) * 4 > self.cap_mask + 1 {
            self.grow();
        }
        let val = (u64::from(top.0) << 32) | u64::from(top.1);
        let mut i = (h as usize) & self.cap_mask;
        let mut first_free = None;
        loop {
            let base = i * self.stride;
            let w0 = self.slots[base];
            if w0 == EMPTY {
                break;
            }
            if w0 == TOMB {
                first_free.get_or_insert(base);
            } else if self.same(base, key, mask) {
                self.slots[base] = val;
                return;
            }
            i = (i + 1) & self.cap_mask;
        }
        let base = match first_free {
            Some(b) => {
                self.tombs -= 1;
                b
            }
            None => i * self.stride,
        };
        self.slots[base] = val;
        for (j, &w) in self.words.iter().enumerate() {
            self.slots[base + 1 + j] = key[w as usize] & mask[w as usize];
        }
        self.live += 1;
    }

    pub fn remove(&mut self, key: &Key, mask: &Key, h: u64) {
        let mut i = (h as usize) & self.cap_mask;
        loop {
            let base = i * self.stride;
            let w0 = self.slots[base];
            if w0 == EMPTY {
                return;
            }
            if w0 != TOMB && self.same(base, key, mask) {
                self.slots[base] = TOMB;
                self.live -= 1;
                self.tombs += 1;
                return;
            }
            i = (i + 1) & self.cap_mask;
        }
    }

    fn grow(&mut self) {
        let new_cap = if self.live * 8 > self.cap_mask + 1 { (self.cap_mask + 1) * 2 } else { self.cap_mask + 1 };
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; new_cap * self.stride]);
        self.cap_mask = new_cap - 1;
        self.live = 0;
        self.tombs = 0;
        let mut key = [0u64; crate::field::KEY_WORDS];
        let mut ones = [0u64; crate::field::KEY_WORDS];
        for &w in &self.words {
            ones[w as usize] = u64::MAX;
        }
        for s in old.chunks_exact(self.stride) {
            if s[0] != EMPTY && s[0] != TOMB {
                for (j, &w) in self.words.iter().enumerate() {
                    key[w as usize] = s[1 + j];
                }
                let h = hash_words(&key, &ones, &self.words);
                let words = self.words.clone();
                let _ = words;
                self.set(&key, &ones, h, ((s[0] >> 32) as u16, s[0] as u32));
            }
        }
    }
}

/// A set of u64 values (stored +1; 0 is empty), linear probing.
#[derive(Default)]
pub struct FlatSet {
    slots: Vec<u64>,
    len: usize,
}

impl FlatSet {
    #[inline(always)]
    pub fn contains(&self, v: u64) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let m = self.slots.len() - 1;
        let mut i = (mix(v) as usize) & m;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return false;
            }
            if s == v.wrapping_add(1) {
                return true;
            }
            i = (i + 1) & m;
        }
    }

    pub fn insert(&mut self, v: u64) {
        if (self.len + 1) * 2 > self.slots.len() {
            let vals: Vec<u64> = self.slots.iter().filter(|&&s| s != 0).map(|s| s - 1).collect();
            self.slots = vec![0; (self.slots.len() * 2).max(16)];
            self.len = 0;
            for x in vals {
                self.insert(x);
            }
        }
        let m = self.slots.len() - 1;
        let mut i = (mix(v) as usize) & m;
        while self.slots[i] != 0 {
            if self.slots[i] == v.wrapping_add(1) {
                return;
            }
            i = (i + 1) & m;
        }
        self.slots[i] = v.wrapping_add(1);
        self.len += 1;
    }

    /// Rebuild from scratch (after removals).
    pub fn rebuild(&mut self, vals: impl Iterator<Item = u64>) {
        self.slots.clear();
        self.len = 0;
        for v in vals {
            self.insert(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::KEY_WORDS;

    #[test]
    fn index_set_get_remove_and_grow() {
        let mut mask = [0u64; KEY_WORDS];
        mask[4] = 0xffff_0000_ffff_ff00;
        mask[5] = 0xffff << 32;
        let words = vec![4u8, 5];
        let mut ix = FlatIndex::new(words.clone(), &mask);
        let key = |i: u64| {
            let mut k = [0u64; KEY_WORDS];
            k[4] = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            k[5] = (i % 7) << 32;
            k
        };
        for i in 0..5000u64 {
            let k = key(i);
            ix.set(&k, &mask, hash_words(&k, &mask, &words), (i as u16, i as u32));
        }
        for i in (0..5000u64).step_by(2) {
            let k = key(i);
            ix.remove(&k, &mask, hash_words(&k, &mask, &words));
        }
        for i in 0..5000u64 {
            let k = key(i);
            let got = ix.get(&k, &mask, hash_words(&k, &mask, &words));
            assert_eq!(got, if i % 2 == 1 { Some((i as u16, i as u32)) } else { None });
            assert_eq!(ix.hash(&k, &mask), hash_words(&k, &mask, &words));
            assert_eq!(ix.find(&k, &mask, ix.hash(&k, &mask)), got);
        }
        let mut s = FlatSet::default();
        for v in [0u64, 5, u64::MAX - 3, 77] {
            s.insert(v);
        }
        assert!(s.contains(0) && s.contains(77) && !s.contains(6));
        s.rebuild([5u64].into_iter());
        assert!(s.contains(5) && !s.contains(77));
    }
}
