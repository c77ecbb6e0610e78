//! Exact-match flow cache in front of a classifier (like OVS's EMC).
//!
//! Keyed by the packet key under the union of all the table's masks (the only
//! bits a lookup result can depend on), it remembers the lookup result.
//! 4-way set associative with round-robin replacement, slots packed as
//! `[tag, result, key words...]`, where the tag carries the classifier's
//! generation: any rule change bumps the generation and so invalidates every
//! entry at once. State: the slots. Cost: one hash + up to 4 tag compares.

use crate::field::Key;
use crate::flat::hash_words;

const WAYS: usize = 4;
const SETS: usize = 4096;
const NO_RULE: u64 = u64::MAX;

pub struct FlowCache {
    words: Vec<u8>,
    mask: Key,
    stride: usize,
    slots: Vec<u64>,
    tick: usize,
    pub hits: u64,
    pub misses: u64,
}

impl FlowCache {
    pub fn new() -> Self {
        FlowCache { words: Vec::new(), mask: [0; crate::field::KEY_WORDS], stride: 2, slots: Vec::new(), tick: 0, hits: 0, misses: 0 }
    }

    /// Re-key the cache after the union mask changed (drops all entries).
    pub fn reshape(&mut self, mask: &Key, words: &[u8]) {
        if self.words != words || &self.mask != mask {
            self.words = words.to_vec();
            self.mask = *mask;
            self.stride = 2 + words.len();
            self.slots = Vec::new();
        }
    }

    #[inline(always)]
    fn tag(gen: u32, h: u64) -> u64 {
        (u64::from(gen) << 32) | (h & 0xffff_ffff)
    }

    /// `Some(result)` on a hit for generation `gen`.
    #[inline]
    pub fn get(&mut self, key: &Key, gen: u32) -> (Option<Option<(u16, u32)>>, u64) {
        let h = hash_words(key, &self.mask, &self.words);
        if self.slots.is_empty() {
            self.misses += 1;
            return (None, h);
        }
        let tag = Self::tag(gen, h);
        let set = ((h >> 32) as usize) & (SETS - 1);
        for way in 0..WAYS {
            let base = (set * WAYS + way) * self.stride;
            if self.slots[base] == tag {
                let stored = &self.slots[base + 2..base + self.stride];
                if stored.iter().zip(&self.words).all(|(s, &w)| *s == key[w as usize] & self.mask[w as usize]) {
                    self.hits += 1;
                    let r = self.slots[base + 1];
                    return (Some(if r == NO_RULE { None } else { Some(((r >> 32) as u16, r as u32)) }), h);
                }
            }
        }
        self.misses += 1;
        (None, h)
    }

    pub fn put(&mut self, key: &Key, gen: u32, h: u64, result: Option<(u16, u32)>) {
        if self.slots.is_empty() {
            self.slots = vec![0; SETS * WAYS * self.stride];
        }
        let tag = Self::tag(gen, h);
        let set = ((h >> 32) as usize) & (SETS - 1);
        // Prefer a way holding a stale generation; else round robin.
        let mut way = (0..WAYS).find(|&w| (self.slots[(set * WAYS + w) * self.stride] >> 32) as u32 != gen);
        if way.is_none() {
            self.tick = self.tick.wrapping_add(1);
            way = Some(self.tick % WAYS);
        }
        let base = (set * WAYS + way.unwrap()) * self.stride;
        self.slots[base] = tag;
        self.slots[base + 1] = result.map_or(NO_RULE, |(p, id)| (u64::from(p) << 32) | u64::from(id));
        for (j, &w) in self.words.iter().enumerate() {
            self.slots[base + 2 + j] = key[w as usize] & self.mask[w as usize];
        }
    }
}

impl Default for FlowCache {
    fn default() -> Self {
        Self::new()
    }
}
