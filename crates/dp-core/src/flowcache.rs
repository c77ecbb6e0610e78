//! Exact-match flow cache in front of a classifier (like OVS's EMC).
//!
//! Keyed by the packet key under the union of all the table's masks (the only
//! bits a lookup result can depend on), it remembers the lookup result.
//! 4-way set associative with round-robin replacement; a set's four tags sit
//! together (one cache line for the four compares), the entries as
//! `[result, key words...]` apart. A tag carries the classifier's generation:
//! any rule change bumps the generation and so invalidates every entry at once. State: the slots. Cost: one hash + up to 4 tag compares.

use crate::field::Key;
use crate::flat::hash_words;

const WAYS: usize = 4;
const SETS: usize = 4096;
/// Entries the cache holds.
pub const CAPACITY: usize = SETS * WAYS;
const NO_RULE: u64 = u64::MAX;

#[repr(C)]
pub struct FlowCache {
    // hot first: tags, entries and an inline copy of the (few) masked words
    tags: Vec<u64>,
    slots: Vec<u64>,
    stride: usize,
    nw: usize,
    wi: [u8; 8],
    wmask: [u64; 8],
    words: Vec<u8>,
    mask: Key,
    tick: usize,
    pub hits: u64,
    pub misses: u64,
    /// Misses whose entry went into a free or stale way (see `cachegate`).
    pub fills: u64,
}

impl FlowCache {
    pub fn new() -> Self {
        FlowCache { tags: Vec::new(), slots: Vec::new(), stride: 1, nw: 0, wi: [0; 8], wmask: [0; 8], words: Vec::new(), mask: [0; crate::field::KEY_WORDS], tick: 0, hits: 0, misses: 0, fills: 0 }
    }

    /// Re-key the cache after the union mask changed (drops all entries).
    pub fn reshape(&mut self, mask: &Key, words: &[u8]) {
        if self.words != words || &self.mask != mask {
            self.words = words.to_vec();
            self.mask = *mask;
            self.stride = 1 + words.len();
            self.slots = Vec::new();
            self.tags = Vec::new();
            self.nw = if words.len() <= 8 { words.len() } else { usize::MAX };
            for (j, &w) in words.iter().enumerate().take(8) {
                self.wi[j] = w;
                self.wmask[j] = mask[w as usize];
            }
        }
    }

    #[inline(always)]
    fn tag(gen: u32, h: u64) -> u64 {
        (u64::from(gen) << 32) | (h & 0xffff_ffff)
    }

    /// `Some(result)` on a hit for generation `gen`.
    #[inline]
    pub fn get(&mut self, key: &Key, gen: u32) -> (Option<Option<(u16, u32)>>, u64) {
        let h = self.hash(key);
        if self.slots.is_empty() {
            self.misses += 1;
            return (None, h);
        }
        let tag = Self::tag(gen, h);
        let set = ((h >> 32) as usize) & (SETS - 1);
        for way in 0..WAYS {
            if self.tags[set * WAYS + way] == tag {
                let base = (set * WAYS + way) * self.stride;
                if self.same(base, key) {
                    self.hits += 1;
                    let r = self.slots[base];
                    return (Some(if r == NO_RULE { None } else { Some(((r >> 32) as u16, r as u32)) }), h);
                }
            }
        }
        self.misses += 1;
        (None, h)
    }

    #[inline(always)]
    fn hash(&self, key: &Key) -> u64 {
        if self.nw == usize::MAX {
            return hash_words(key, &self.mask, &self.words);
        }
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for j in 0..self.nw.min(8) {
            let w = (self.wi[j] as usize) % crate::field::KEY_WORDS;
            h = (h.rotate_left(23) ^ (key[w] & self.wmask[j])).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        crate::flat::mix(h)
    }

    #[inline(always)]
    fn same(&self, base: usize, key: &Key) -> bool {
        let stored = &self.slots[base + 1..base + self.stride];
        if self.nw == usize::MAX {
            return stored.iter().zip(&self.words).all(|(s, &w)| *s == key[w as usize] & self.mask[w as usize]);
        }
        let mut diff = 0u64;
        for (j, s) in stored.iter().enumerate().take(8) {
            let w = (self.wi[j] as usize) % crate::field::KEY_WORDS;
            diff |= *s ^ (key[w] & self.wmask[j]);
        }
        diff == 0
    }

    pub fn put(&mut self, key: &Key, gen: u32, h: u64, result: Option<(u16, u32)>) {
        if self.slots.is_empty() {
            self.slots = vec![0; SETS * WAYS * self.stride];
            self.tags = vec![0; SETS * WAYS];
        }
        let tag = Self::tag(gen, h);
        let set = ((h >> 32) as usize) & (SETS - 1);
        // Prefer a way holding a stale generation; else round robin.
        let mut way = (0..WAYS).find(|&w| (self.tags[set * WAYS + w] >> 32) as u32 != gen);
        if way.is_some() {
            self.fills += 1;
        } else {
            self.tick = self.tick.wrapping_add(1);
            way = Some(self.tick % WAYS);
        }
        let slot = set * WAYS + way.unwrap();
        let base = slot * self.stride;
        self.tags[slot] = tag;
        self.slots[base] = result.map_or(NO_RULE, |(p, id)| (u64::from(p) << 32) | u64::from(id));
        for (j, &w) in self.words.iter().enumerate() {
            self.slots[base + 1 + j] = key[w as usize] & self.mask[w as usize];
        }
    }
}

impl Default for FlowCache {
    fn default() -> Self {
        Self::new()
    }
}
