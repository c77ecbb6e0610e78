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
//! Layout: 4-way sets. A set's 16-byte header holds the generation of its
//! entries and a 16-bit tag per way (four headers to a cache line: the
//! largest cache's 512 KiB of headers stay in the CPU's L2); each entry
//! (masked key words, then the packed path) is contiguous and, when the
//! rules look at <= 4 key words, exactly one 64-byte line. A probe starts
//! reading its set's first two entries while the header loads, so a hit on
//! a cache larger than the CPU's caches waits about one memory access, not
//! two. A full set evicts the way the new key's hash picks (under flows
//! replayed in a cycle, round robin would evict every flow of an
//! overflowing set just before its turn). Any rule, group or port change
//! bumps the pipeline's generation, which invalidates every entry at once
//! (a set of an older generation counts as empty).
//! The cache starts small and grows while misses evict live entries, moving
//! its live entries over; the pipeline bypasses it while its hit rate is too
//! low to pay (a stream of new flows; `cachegate`).
//! State: headers and entries (allocated on first use: 4 KiB + 64 KiB,
//! growing 4x at a time to at most 512 KiB + 8 MiB, 131,072 entries: a
//! working set of 60,000 flows hits ~95 %). Cost: one hash over the union
//! words + one header read + up to 4 tag compares + one key compare.

use crate::field::{Key, KEY_WORDS};
use crate::flat::mix;

/// Most tables a cached path may visit.
pub const MAX_STEPS: usize = 4;
const WAYS: usize = 4;
/// Sets when the cache is first used, and at most: it starts at 64 KiB of
/// entries and grows 4x (moving its live entries over) each time live
/// entries were evicted as often as an eighth of its capacity, up to 8 MiB
/// of entries + 512 KiB of headers (131,072 entries).
const FIRST_SETS: usize = 256;
const MAX_SETS: usize = 32768;
/// Most entries the cache grows to.
pub const MAX_ENTRIES: usize = MAX_SETS * WAYS;
/// Ways whose entry a probe starts reading before its set's header.
const TOUCH_WAYS: usize = 2;
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

/// A set's header: the generation its entries belong to, and a 16-bit
/// tag per way (0: empty). 16 bytes, so the headers of the largest cache
/// (512 KiB) stay in the CPU's L2 and a hit usually reads one cold line,
/// its entry.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct Head {
    gen: u32,
    tags: [u16; WAYS],
}

pub struct PathCache {
    heads: Vec<Head>,
    /// Entries, the first at `slots[first]` (a 64-byte boundary, so a
    /// 64-byte entry is one cache line).
    slots: Vec<u64>,
    first: usize,
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
    pub hits: u64,
    pub misses: u64,
    /// Misses whose entry went into a free or stale way, or evicted a live
    /// one while the cache could still grow: the cold misses of a cache
    /// warming up (`cachegate` does not count them against it).
    pub fills: u64,
}

impl Default for PathCache {
    fn default() -> Self {
        PathCache { heads: Vec::new(), slots: Vec::new(), first: 0, nw: 0, words: [0; KEY_WORDS], wmask: [0; KEY_WORDS], stride: PATH_WORDS, sets: FIRST_SETS, evictions: 0, hits: 0, misses: 0, fills: 0 }
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
            self.heads = Vec::new();
            self.slots = Vec::new();
        }
    }

    /// The fixed layout's four masked key words.
    #[inline(always)]
    fn gather(&self, key: &Key) -> [u64; FIXED_WORDS] {
        std::array::from_fn(|j| key[self.words[j] as usize] & self.wmask[j])
    }

    /// Hash of the masked key words, in order (an entry stores the same
    /// words, so growing rehashes entries without their keys).
    #[inline(always)]
    fn hash_masked(ws: &[u64]) -> u64 {
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for w in ws {
            h = (h.rotate_left(23) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        mix(h)
    }

    #[inline(always)]
    fn hash(&self, key: &Key) -> u64 {
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for j in 0..self.nw.min(KEY_WORDS) {
            h = (h.rotate_left(23) ^ (key[self.words[j] as usize] & self.wmask[j])).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        mix(h)
    }

    /// A way's tag: 16 hash bits apart from the set index's, never 0.
    #[inline(always)]
    fn tag(h: u64) -> u16 {
        (h as u16) | 1
    }

    #[inline(always)]
    fn set_of(&self, h: u64) -> usize {
        ((h >> 32) as usize) & (self.sets - 1)
    }

    /// The cached path of `key` under generation `gen`, and the key's hash (for `put`).
    #[inline]
    pub fn get(&mut self, key: &Key, gen: u32) -> (Option<Path>, u64) {
        let fixed = self.nw == FIXED_WORDS;
        let g = if fixed { self.gather(key) } else { [0; FIXED_WORDS] };
        let h = if fixed { Self::hash_masked(&g) } else { self.hash(key) };
        if self.heads.is_empty() {
            self.misses += 1;
            return (None, h);
        }
        let set = self.set_of(h);
        // Start reading the set's first entries while its header loads: when
        // the cache is larger than the CPU's caches both are misses, and
        // most hits are in the first ways (a set fills them in order).
        let at = self.first + set * WAYS * self.stride;
        for way in 0..TOUCH_WAYS {
            std::hint::black_box(self.slots[at + way * self.stride]);
        }
        let head = self.heads[set];
        if head.gen == gen {
            let tag = Self::tag(h);
            let nw = self.nw.min(KEY_WORDS);
            for (way, &t) in head.tags.iter().enumerate() {
                if t != tag {
                    continue;
                }
                let e = &self.slots[self.first + (set * WAYS + way) * self.stride..][..nw + PATH_WORDS];
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
        if self.heads.is_empty() {
            self.allocate();
        }
        let set = self.set_of(h);
        let way = match self.free_way(set, gen) {
            Some(w) => {
                self.fills += 1;
                w
            }
            None => {
                self.evictions += 1;
                if self.sets < MAX_SETS {
                    self.fills += 1;
                }
                if self.evictions >= self.sets * WAYS / 8 && self.sets < MAX_SETS {
                    // Too small for the flows seen: grow, keeping the live entries.
                    self.grow(gen);
                    return self.put(key, gen, h, path);
                }
                // The victim is chosen by the new key's hash: under flows
                // replayed in a cycle, a set holding one flow too many
                // keeps hitting for most of them (round robin would
                // evict each just before its turn).
                (h >> 16) as usize % WAYS
            }
        };
        self.heads[set].tags[way] = Self::tag(h);
        let nw = self.nw;
        let e = &mut self.slots[self.first + (set * WAYS + way) * self.stride..][..self.stride];
        for j in 0..nw {
            e[j] = key[self.words[j] as usize] & self.wmask[j];
        }
        path.pack(&mut e[nw..]);
    }

    /// An empty way of `set` for generation `gen` (a set of an older
    /// generation is emptied first).
    #[inline]
    fn free_way(&mut self, set: usize, gen: u32) -> Option<usize> {
        let head = &mut self.heads[set];
        if head.gen != gen {
            *head = Head { gen, ..Head::default() };
        }
        head.tags.iter().position(|&t| t == 0)
    }

    /// Empty headers and entries for `sets` sets.
    fn allocate(&mut self) {
        self.heads = vec![Head::default(); self.sets];
        let line = 64 / std::mem::size_of::<u64>();
        self.slots = vec![0; self.sets * WAYS * self.stride + line - 1];
        self.first = (self.slots.as_ptr() as usize / std::mem::size_of::<u64>()).wrapping_neg() % line;
    }

    /// 4x the sets; the entries of generation `gen` move to their new sets
    /// (rehashed from their stored key words), the rest are dropped.
    #[cold]
    fn grow(&mut self, gen: u32) {
        let (old_heads, old_slots, old_first, stride) = (std::mem::take(&mut self.heads), std::mem::take(&mut self.slots), self.first, self.stride);
        self.sets = (self.sets * 4).min(MAX_SETS);
        self.evictions = 0;
        self.allocate();
        let nw = self.nw.min(KEY_WORDS);
        for (old, head) in old_heads.iter().enumerate().filter(|(_, hd)| hd.gen == gen) {
            for (way, &t) in head.tags.iter().enumerate().filter(|(_, &t)| t != 0) {
                let e = &old_slots[old_first + (old * WAYS + way) * stride..][..stride];
                let set = self.set_of(Self::hash_masked(&e[..nw]));
                // 4x the sets: the entries of a new set all come from one old set
                if let Some(w) = self.free_way(set, gen) {
                    self.heads[set].tags[w] = t;
                    self.slots[self.first + (set * WAYS + w) * stride..][..stride].copy_from_slice(e);
                }
            }
        }
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

    /// Replay keys `0..n` (word 4) `rounds` times through `c`, inserting
    /// misses under generation 1; the hits of the last round.
    fn replay(c: &mut PathCache, n: u64, rounds: usize) -> u64 {
        let mut p = Path::default();
        p.push(0, Some(1));
        let mut k = [0u64; KEY_WORDS];
        let mut last = 0;
        for _ in 0..rounds {
            let before = c.hits;
            for i in 0..n {
                k[4] = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let (hit, h) = c.get(&k, 1);
                match hit {
                    Some(q) => assert_eq!(q, p),
                    None => c.put(&k, 1, h, &p),
                }
            }
            last = c.hits - before;
        }
        last
    }

    fn word4_cache() -> PathCache {
        let mut mask = [0u64; KEY_WORDS];
        mask[4] = u64::MAX;
        let mut c = PathCache::default();
        c.reshape(&mask);
        c
    }

    #[test]
    fn grows_to_hold_the_flows_and_no_further() {
        let mut c = word4_cache();
        let hits = replay(&mut c, 20_000, 4);
        assert!(c.sets > FIRST_SETS && c.sets * WAYS >= 20_000, "{} sets", c.sets);
        assert!(c.sets < MAX_SETS, "20,000 flows fit before the largest size");
        assert!(hits >= 19_500, "{hits} hits of 20,000");
    }

    #[test]
    fn growing_keeps_the_live_entries() {
        let mut c = word4_cache();
        // 3,000 flows overflow the first size (1,024 entries) within the
        // first round: the cache grows once, to 4,096 entries
        replay(&mut c, 3_000, 1);
        assert_eq!(c.sets, 4 * FIRST_SETS);
        // the entries that were live at the growth moved over and still
        // hit: 2,117 hits (dropping them instead leaves 1,298, the flows
        // after the growth)
        let hits = replay(&mut c, 3_000, 1);
        assert!(hits >= 2_000, "{hits} hits of 3,000 in the second round");
    }

    #[test]
    fn a_working_set_of_60000_flows_hits() {
        let mut c = word4_cache();
        let hits = replay(&mut c, 60_000, 10);
        assert_eq!(c.sets, MAX_SETS);
        // 60,000 flows in 32,768 four-way sets: ~4 % of the sets get a
        // fifth flow (56,745 hits)
        assert!(hits >= 56_000, "{hits} hits of 60,000 in the tenth round");
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
