//! Whole-pipeline exact-match cache (a "microflow" cache, as OVS's EMC in
//! front of its tables): one hash probe replaces the per-table lookups.
//!
//! Key: the ingress packet key (in_port and every parsed header field) under
//! the union of the masks of all the pipeline's rules; metadata always starts
//! at 0, so it is not part of the key. Value: the `Path` the packet took —
//! the rule matched (or the miss) in each table it visited, and, when that
//! path only writes metadata, goes to the next table and ends in a plain
//! output, the output port itself (the frame then leaves unchanged and no
//! instruction needs to run). The pipeline only stores a path when every
//! lookup on it saw the ingress key (no action rewrote the frame before a
//! later lookup, no POF fields), so the same key always takes the same path.
//!
//! Layout: 4-way sets; a set's four tags (generation << 32 | 32 hash bits)
//! share one cache line, each entry (masked key words, then the packed path)
//! is contiguous — 64 bytes when the rules look at <= 4 key words — so a hit
//! reads two lines. Any rule, group or port change
//! bumps the pipeline's generation, which invalidates every entry at once.
//! The pipeline bypasses the cache while its hit rate is too low to pay
//! (many distinct flows; `cachegate`).
//! State: tags and entries (allocated on first use: 64 KiB, growing to at
//! most 2 MiB when live entries keep being evicted). Cost: one hash over the
//! union words + up to 4 tag compares + one key compare.

use crate::field::{Key, KEY_WORDS};
use crate::flat::mix;

/// Most tables a cached path may visit.
pub const MAX_STEPS: usize = 4;
const WAYS: usize = 4;
/// Sets when the cache is first used, and at most: it starts at 64 KiB of
/// entries and grows 4x (dropping its entries) each time live entries were
/// evicted as often as half its capacity, up to 2 MiB (32,768 entries).
const FIRST_SETS: usize = 256;
const MAX_SETS: usize = 8192;
/// Most entries the cache grows to.
pub const MAX_ENTRIES: usize = MAX_SETS * WAYS;
/// Packed "no rule" (table miss) step.
const MISS: u32 = u32::MAX;
/// Key words of the fixed entry layout (rule sets that look at <= 4 words).
const FIXED_WORDS: usize = 4;
/// Words of a packed path: rules (2 per word), then tables/len/end, then the port.
const PATH_WORDS: usize = 4;

/// How a cached path ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Every rule on the path only writes metadata and goes on; the last one
    /// outputs the unchanged frame to this (existing, non-ingress) port.
    Output(u32),
    /// As `Output`, but the last rule first pushes an outer tag (`tpid`, TCI `vid`).
    TagOutput { tpid: u16, vid: u16, port: u32 },
    /// As `Output`, but the last rule first pops the outer tag.
    PopOutput(u32),
    /// As `Output`, but the last rule first sets the packet mark (OneSwitch's
    /// flow-id hand-off onto a PCIe port).
    MarkOutput { mark: u32, port: u32 },
    /// Run the rules' instructions (the lookups are known).
    Replay,
}

/// The tables a packet visited and what matched in each (`None`: miss).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    tables: [u8; MAX_STEPS],
    rules: [u32; MAX_STEPS],
    len: u8,
    pub end: End,
}

impl Default for Path {
    fn default() -> Self {
        Path { tables: [0; MAX_STEPS], rules: [MISS; MAX_STEPS], len: 0, end: End::Replay }
    }
}

impl Path {
    /// Record the lookup result of one more table; false when the path is too long.
    pub fn push(&mut self, table: u8, rule: Option<u32>) -> bool {
        let i = self.len as usize;
        if i >= MAX_STEPS {
            return false;
        }
        self.tables[i] = table;
        self.rules[i] = rule.unwrap_or(MISS);
        self.len += 1;
        true
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// (table, matched rule) of step `i`.
    #[inline]
    pub fn step(&self, i: usize) -> (u8, Option<u32>) {
        let r = self.rules[i];
        (self.tables[i], if r == MISS { None } else { Some(r) })
    }

    fn pack(&self, w: &mut [u64]) {
        w[0] = u64::from(self.rules[0]) | (u64::from(self.rules[1]) << 32);
        w[1] = u64::from(self.rules[2]) | (u64::from(self.rules[3]) << 32);
        let (kind, port) = match self.end {
            End::Output(p) => (1u64, u64::from(p)),
            End::TagOutput { tpid, vid, port } => (2, u64::from(port) | (u64::from(vid) << 32) | (u64::from(tpid) << 48)),
            End::PopOutput(p) => (3, u64::from(p)),
            End::MarkOutput { mark, port } => (4, u64::from(port) | (u64::from(mark) << 32)),
            End::Replay => (0, 0),
        };
        w[2] = u64::from(u32::from_le_bytes(self.tables)) | (u64::from(self.len) << 32) | (kind << 40);
        w[3] = port;
    }

    #[inline(always)]
    fn unpack(w: &[u64]) -> Path {
        let w: &[u64; PATH_WORDS] = w[..PATH_WORDS].try_into().expect("path words");
        let end = match (w[2] >> 40) & 7 {
            1 => End::Output(w[3] as u32),
            2 => End::TagOutput { tpid: (w[3] >> 48) as u16, vid: (w[3] >> 32) as u16, port: w[3] as u32 },
            3 => End::PopOutput(w[3] as u32),
            4 => End::MarkOutput { mark: (w[3] >> 32) as u32, port: w[3] as u32 },
            _ => End::Replay,
        };
        Path {
            tables: (w[2] as u32).to_le_bytes(),
            rules: [w[0] as u32, (w[0] >> 32) as u32, w[1] as u32, (w[1] >> 32) as u32],
            len: (w[2] >> 32) as u8,
            end,
        }
    }
}

pub struct PathCache {
    tags: Vec<u64>,
    slots: Vec<u64>,
    /// The `nw` key words the rules look at, and their masks (inline, so a
    /// probe reads no other allocation).
    nw: usize,
    words: [u8; KEY_WORDS],
    wmask: [u64; KEY_WORDS],
    stride: usize,
    /// Sets in use (a power of two) once allocated.
    sets: usize,
    /// Live entries evicted since the last growth.
    evictions: usize,
    tick: usize,
    pub hits: u64,
    pub misses: u64,
}

impl Default for PathCache {
    fn default() -> Self {
        PathCache { tags: Vec::new(), slots: Vec::new(), nw: 0, words: [0; KEY_WORDS], wmask: [0; KEY_WORDS], stride: PATH_WORDS, sets: FIRST_SETS, evictions: 0, tick: 0, hits: 0, misses: 0 }
    }
}

impl PathCache {
    /// Re-key the cache on a new union mask (drops all entries when it changed).
    pub fn reshape(&mut self, mask: &Key) {
        let (mut words, mut wmask, mut nw) = ([0u8; KEY_WORDS], [0u64; KEY_WORDS], 0);
        for (w, &m) in mask.iter().enumerate() {
            if m != 0 {
                words[nw] = w as u8;
                wmask[nw] = m;
                nw += 1;
            }
        }
        // Up to four words take a fixed four-word, branch-free layout (unused
        // words: word 0 under mask 0), so an entry is exactly 64 bytes.
        nw = nw.max(FIXED_WORDS);
        if (nw, words, wmask) != (self.nw, self.words, self.wmask) {
            (self.nw, self.words, self.wmask) = (nw, words, wmask);
            self.stride = nw + PATH_WORDS;
            self.tags = Vec::new();
            self.slots = Vec::new();
        }
    }

    /// The fixed layout's four masked key words.
    #[inline(always)]
    fn gather(&self, key: &Key) -> [u64; FIXED_WORDS] {
        std::array::from_fn(|j| key[self.words[j] as usize] & self.wmask[j])
    }

    #[inline(always)]
    fn hash_fixed(g: &[u64; FIXED_WORDS]) -> u64 {
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for w in g {
            h = (h.rotate_left(23) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        mix(h)
    }

    #[inline(always)]
    fn hash(&self, key: &Key) -> u64 {
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        if self.nw == FIXED_WORDS {
            return Self::hash_fixed(&self.gather(key));
        }
        for j in 0..self.nw.min(KEY_WORDS) {
            h = (h.rotate_left(23) ^ (key[self.words[j] as usize] & self.wmask[j])).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        mix(h)
    }

    #[inline(always)]
    fn tag(gen: u32, h: u64) -> u64 {
        (u64::from(gen) << 32) | (h & 0xffff_ffff)
    }

    /// The cached path of `key` under generation `gen`, and the key's hash (for `put`).
    #[inline]
    pub fn get(&mut self, key: &Key, gen: u32) -> (Option<Path>, u64) {
        let fixed = self.nw == FIXED_WORDS;
        let g = if fixed { self.gather(key) } else { [0; FIXED_WORDS] };
        let h = if fixed { Self::hash_fixed(&g) } else { self.hash(key) };
        if self.tags.is_empty() {
            self.misses += 1;
            return (None, h);
        }
        let tag = Self::tag(gen, h);
        let set = ((h >> 32) as usize) & (self.sets - 1);
        let nw = self.nw.min(KEY_WORDS);
        let tags = &self.tags[set * WAYS..set * WAYS + WAYS];
        for (way, &t) in tags.iter().enumerate() {
            if t == tag {
                let e = &self.slots[(set * WAYS + way) * self.stride..][..nw + PATH_WORDS];
                let mut diff = 0u64;
                if fixed {
                    for j in 0..FIXED_WORDS {
                        diff |= e[j] ^ g[j];
                    }
                } else {
                    for j in 0..nw {
                        diff |= e[j] ^ (key[self.words[j] as usize] & self.wmask[j]);
                    }
                }
                if diff == 0 {
                    self.hits += 1;
                    return (Some(Path::unpack(&e[nw..])), h);
                }
            }
        }
        self.misses += 1;
        (None, h)
    }

    /// Remember `path` for `key` (hash `h` from `get`) under generation `gen`.
    pub fn put(&mut self, key: &Key, gen: u32, h: u64, path: &Path) {
        if self.tags.is_empty() {
            self.tags = vec![0; self.sets * WAYS];
            self.slots = vec![0; self.sets * WAYS * self.stride];
        }
        let set = ((h >> 32) as usize) & (self.sets - 1);
        // Prefer a way of a stale generation; else round robin.
        let way = match (0..WAYS).find(|&w| (self.tags[set * WAYS + w] >> 32) as u32 != gen) {
            Some(w) => w,
            None => {
                self.evictions += 1;
                if self.evictions >= self.sets * WAYS / 2 && self.sets < MAX_SETS {
                    // Too small for the flows seen: grow, start afresh.
                    self.sets = (self.sets * 4).min(MAX_SETS);
                    self.evictions = 0;
                    self.tags = Vec::new();
                    return self.put(key, gen, h, path);
                }
                self.tick = self.tick.wrapping_add(1);
                self.tick % WAYS
            }
        };
        let slot = set * WAYS + way;
        self.tags[slot] = Self::tag(gen, h);
        let nw = self.nw;
        let e = &mut self.slots[slot * self.stride..][..self.stride];
        for j in 0..nw {
            e[j] = key[self.words[j] as usize] & self.wmask[j];
        }
        path.pack(&mut e[nw..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_packs_and_unpacks() {
        let mut p = Path::default();
        assert!(p.push(0, Some(7)));
        assert!(p.push(2, None));
        p.end = End::Output(4096);
        let mut w = [0u64; PATH_WORDS];
        p.pack(&mut w);
        let q = Path::unpack(&w);
        assert_eq!(q, p);
        assert_eq!(q.step(0), (0, Some(7)));
        assert_eq!(q.step(1), (2, None));
        for t in 2..MAX_STEPS as u8 {
            assert!(p.push(t, Some(1)));
        }
        assert!(!p.push(9, Some(1)), "a fifth step does not fit");
    }

    #[test]
    fn grows_when_live_entries_are_evicted() {
        let mut mask = [0u64; KEY_WORDS];
        mask[4] = u64::MAX;
        let mut c = PathCache::default();
        c.reshape(&mask);
        let mut p = Path::default();
        p.push(0, Some(1));
        let mut k = [0u64; KEY_WORDS];
        for round in 0..3 {
            for i in 0..20_000u64 {
                k[4] = i;
                let (hit, h) = c.get(&k, 1);
                if hit.is_none() {
                    c.put(&k, 1, h, &p);
                }
            }
            if round == 0 {
                assert!(c.sets > FIRST_SETS, "grew from {FIRST_SETS} sets");
            }
        }
        assert_eq!(c.sets, MAX_SETS);
        let before = c.hits;
        for i in 0..20_000u64 {
            k[4] = i;
            c.get(&k, 1);
        }
        // 20,000 keys in 32,768 four-way slots: some sets overflow.
        assert!(c.hits - before > 18_000, "{} hits", c.hits - before);
    }

    #[test]
    fn hits_only_same_masked_key_and_generation() {
        let mut mask = [0u64; KEY_WORDS];
        mask[4] = 0xffff_ffff;
        let mut c = PathCache::default();
        c.reshape(&mask);
        let mut k = [0u64; KEY_WORDS];
        k[4] = 5;
        let mut p = Path::default();
        p.push(0, Some(3));
        let (none, h) = c.get(&k, 1);
        assert!(none.is_none());
        c.put(&k, 1, h, &p);
        k[5] = 99; // outside the mask: same entry
        assert_eq!(c.get(&k, 1).0, Some(p));
        assert_eq!(c.get(&k, 2).0, None, "new generation");
        k[4] = 6;
        assert_eq!(c.get(&k, 1).0, None, "other key");
    }
}
