//! Packet classifier: OpenFlow 1.3 priority + mask semantics over packed keys.
//!
//! Tuple-space search: rules are grouped into subtables by mask; each subtable
//! is a hash map from masked key to the rules with that masked value (highest
//! priority first). Lookup visits subtables in descending order of their best
//! priority and stops as soon as no remaining subtable can beat the match in
//! hand. Before hashing, a subtable is skipped when one of its prefix-masked
//! "filter" fields (IPv4 source / destination) cannot match: per filter field
//! and prefix length we keep the set of prefixes rules use, so one cheap probe
//! per length rules out every subtable with that length (OVS's prefix tries,
//! done with hash sets).
//! Once a table has stopped changing (more lookups since the last change than
//! it has rules), lookups switch to a decision tree over key ranges
//! (`classifier/tree.rs`) built from the same rules; subtables whose masks do
//! not fit the tree's dimensions (`classifier/dims.rs`) stay in tuple space
//! search, and the answer is the better of the two. Any change drops the tree.
//! Batched lookups walk the trees tree by tree and level by level over
//! chunks of keys, with no branch on a key's data, and with AVX-512 where
//! the CPU has it (`set_simd(false)`: the scalar walk; the answers are the
//! same).
//! An exact-match flow cache (`flowcache.rs`) sits in front; any rule change
//! bumps a generation and so invalidates it; it is bypassed while its hit
//! rate is too low to pay (`cachegate.rs`).
//! Equal priorities: the rule of the subtable first in walk order wins (and
//! among identical matches, the one added first); the tree keeps that order.
//! Range rules (`insert_ranged`: value/mask plus integer ranges on some
//! fields, e.g. ClassBench port ranges) are one rule: tuple space search
//! holds each as the prefix pieces that cover its ranges (all answering the
//! same rule), the decision tree as one rule with the ranges themselves
//! (when each ranged field is one of its dimensions, else as the pieces).
//! Between a range rule and another rule of the same priority that overlap,
//! which one answers is not specified (as OpenFlow leaves it).
//! State: rules (id, priority, value, mask), the lazily built tree. Cost:
//! tuple space lookup = filter probes + one hash probe per surviving
//! subtable; tree lookup = per tree walked, one cell, a 64-byte block per
//! three levels and one 32-byte rule check; a cache hit is one hash + one
//! compare.

use crate::field::{Key, KEY_WORDS};
use crate::flat::{hash_words, mix, FlatIndex, FlatSet};
use crate::cachegate::Gate;
use crate::flowcache::FlowCache;

mod dims;
mod fast;
#[cfg(test)]
mod fast_tests;
mod lookup;
mod tree;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::hash::{BuildHasherDefault, Hasher};

pub type RuleId = u32;

/// An inclusive integer range `lo..=hi` on the `bits`-bit field at bit
/// `shift` of key word `word` (e.g. `FieldRange::of(Field::TcpDst, 1024, 65535)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRange {
    pub word: usize,
    pub shift: u32,
    pub bits: u32,
    pub lo: u64,
    pub hi: u64,
}

impl FieldRange {
    /// A range on a fixed field of at most 64 bits.
    pub fn of(field: crate::field::Field, lo: u64, hi: u64) -> Self {
        let s = field.slot();
        assert!(s.bits <= 32 && lo <= hi && hi < (1u64 << s.bits), "range {lo}..={hi} on {field:?}");
        FieldRange { word: s.word, shift: s.shift, bits: s.bits, lo, hi }
    }

    /// The fewest (value, mask) prefixes of this field that cover the range.
    fn prefixes(&self) -> Vec<(u64, u64)> {
        let full = (1u64 << self.bits) - 1;
        let (mut lo, hi) = (self.lo, self.hi);
        let mut out = Vec::new();
        loop {
            let mut size = if lo == 0 { 1u64 << self.bits } else { lo & lo.wrapping_neg() };
            while size > hi - lo + 1 {
                size >>= 1;
            }
            out.push((lo, full & !(size - 1)));
            if hi - lo + 1 == size {
                return out;
            }
            lo += size;
        }
    }
}

/// A rule added with `insert_ranged`, and the pieces tuple space search holds.
struct RangedRule {
    priority: u16,
    value: Key,
    mask: Key,
    ranges: Vec<FieldRange>,
    pieces: Vec<(Key, Key)>,
}

/// A cheap hasher for u64 keys (one multiply-xorshift round).
#[derive(Default)]
pub struct IdentityHasher(u64);
impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = mix(n);
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = mix(u64::from(n));
    }
}
type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

/// Hasher for keys that are already `hash_words` outputs.
#[derive(Default)]
pub struct PreHashed(u64);
impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("PreHashed only hashes u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
type HashIndex = HashMap<u64, u32, BuildHasherDefault<PreHashed>>;

/// Prefixes of one length used by rules: a bitmap for short lengths (one
/// cache line touched per probe), a counted hash set for long ones.
#[derive(Default)]
struct PrefixSet {
    counts: IdMap<u32>,
    bitmap: Vec<u64>,
    flat: FlatSet,
}

impl PrefixSet {
    fn new(len: u8) -> Self {
        let bitmap = if (1..=16).contains(&len) { vec![0u64; ((1usize << len) + 63) / 64] } else { Vec::new() };
        PrefixSet { counts: IdMap::default(), bitmap, flat: FlatSet::default() }
    }
    fn add(&mut self, v: u64) {
        *self.counts.entry(v).or_insert(0) += 1;
        if !self.bitmap.is_empty() {
            self.bitmap[(v / 64) as usize] |= 1 << (v % 64);
        } else {
            self.flat.insert(v);
        }
    }
    fn remove(&mut self, v: u64) {
        let c = self.counts.get_mut(&v).unwrap();
        *c -= 1;
        if *c == 0 {
            self.counts.remove(&v);
            if !self.bitmap.is_empty() {
                self.bitmap[(v / 64) as usize] &= !(1 << (v % 64));
            } else {
                self.flat.rebuild(self.counts.keys().copied());
            }
        }
    }
    #[inline(always)]
    fn contains(&self, v: u64) -> bool {
        if self.bitmap.is_empty() {
            self.flat.contains(v)
        } else {
            (self.bitmap[(v / 64) as usize] >> (v % 64)) & 1 != 0
        }
    }
    fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// What lookup needs of a subtable before touching it: kept in a dense array.
/// `bit[i]`: the prefix length of filter field `i` (0 when the field is
/// wildcarded or its mask is not a prefix, so it never prunes).
#[derive(Clone, Copy)]
struct SubMeta {
    max_priority: u16,
    bit: [u8; FILTERS.len()],
}

/// A field whose prefix masks are indexed for subtable pruning: `bits` bits at
/// `shift` of key word `word`.
#[derive(Clone, Copy)]
struct FilterField {
    word: usize,
    shift: u32,
    bits: u32,
}

const FILTERS: [FilterField; 2] = [
    FilterField { word: 4, shift: 32, bits: 32 }, // ipv4_src
    FilterField { word: 4, shift: 0, bits: 32 },  // ipv4_dst
];
const NO_PREFIX: u8 = 0xff;
const SEL_WORDS: usize = 4;
const SEL_BITS: usize = 64 * SEL_WORDS;
type Sel = [u64; SEL_WORDS];

impl FilterField {
    #[inline(always)]
    fn get(&self, key: &Key) -> u64 {
        (key[self.word] >> self.shift) & ((1u64 << self.bits) - 1)
    }
    /// Prefix length of this field's mask, `NO_PREFIX` if not a prefix; 0 if wildcarded.
    fn prefix_len(&self, mask: &Key) -> u8 {
        let m = self.get(mask);
        let ones = m.count_ones();
        let full = (1u64 << self.bits) - 1;
        let expect = if ones == 0 { 0 } else { (full << (self.bits - ones)) & full };
        if m == expect {
            ones as u8
        } else {
            NO_PREFIX
        }
    }
}

struct Entry {
    key: Key,
    /// rules[0], kept inline so a hit touches one entry only.
    top: (u16, RuleId),
    /// (priority, rule), highest priority first.
    rules: Vec<(u16, RuleId)>,
    next: u32,
}

const NIL: u32 = u32::MAX;

#[repr(C)]
struct Subtable {
    /// Lookup mirror of `entries`: masked key -> best rule (first: hot).
    flat: FlatIndex,
    mask: Key,
    words: Vec<u8>,
    map: HashIndex,
    entries: Vec<Entry>,
    free: Vec<u32>,
    priorities: BTreeMap<u16, u32>,
    max_priority: u16,
    n_rules: usize,
    prefix: [u8; FILTERS.len()],
}

impl Subtable {
    fn new(mask: Key) -> Self {
        let words: Vec<u8> = (0..KEY_WORDS).filter(|&w| mask[w] != 0).map(|w| w as u8).collect();
        let mut prefix = [NO_PREFIX; FILTERS.len()];
        for (i, f) in FILTERS.iter().enumerate() {
            prefix[i] = f.prefix_len(&mask);
        }
        Subtable { mask, flat: FlatIndex::new(words.clone(), &mask), words, map: HashIndex::default(), entries: Vec::new(), free: Vec::new(), priorities: BTreeMap::new(), max_priority: 0, n_rules: 0, prefix }
    }

    #[inline(always)]
    fn find(&self, key: &Key, h: u64) -> Option<u32> {
        let mut e = *self.map.get(&h)?;
        while e != NIL {
            let ent = &self.entries[e as usize];
            if self.words.iter().all(|&w| (key[w as usize] & self.mask[w as usize]) == ent.key[w as usize]) {
                return Some(e);
            }
            e = ent.next;
        }
        None
    }

    fn insert(&mut self, value: &Key, prio: u16, id: RuleId) {
        let h = hash_words(value, &self.mask, &self.words);
        match self.find(value, h) {
            Some(e) => {
                let ent = &mut self.entries[e as usize];
                let pos = ent.rules.iter().position(|&(p, _)| p < prio).unwrap_or(ent.rules.len());
                ent.rules.insert(pos, (prio, id));
                ent.top = ent.rules[0];
                let top = ent.top;
                self.flat.set(value, &self.mask, h, top);
            }
            None => {
                let mut key = [0u64; KEY_WORDS];
                for w in 0..KEY_WORDS {
                    key[w] = value[w] & self.mask[w];
                }
                let head = self.map.get(&h).copied().unwrap_or(NIL);
                let ent = Entry { key, top: (prio, id), rules: vec![(prio, id)], next: head };
                let idx = match self.free.pop() {
                    Some(i) => {
                        self.entries[i as usize] = ent;
                        i
                    }
                    None => {
                        self.entries.push(ent);
                        (self.entries.len() - 1) as u32
                    }
                };
                self.map.insert(h, idx);
                self.flat.set(value, &self.mask, h, (prio, id));
            }
        }
        *self.priorities.entry(prio).or_insert(0) += 1;
        self.max_priority = *self.priorities.keys().next_back().unwrap();
        self.n_rules += 1;
    }

    fn remove(&mut self, value: &Key, prio: u16, id: RuleId) -> bool {
        let h = hash_words(value, &self.mask, &self.words);
        let Some(e) = self.find(value, h) else { return false };
        let ent = &mut self.entries[e as usize];
        let Some(pos) = ent.rules.iter().position(|&(p, r)| p == prio && r == id) else { return false };
        ent.rules.remove(pos);
        if let Some(&t) = ent.rules.first() {
            ent.top = t;
            self.flat.set(value, &self.mask, h, t);
        }
        if self.entries[e as usize].rules.is_empty() {
            self.flat.remove(value, &self.mask, h);
            // unlink entry e from the chain of h
            let next = self.entries[e as usize].next;
            let head = self.map[&h];
            if head == e {
                if next == NIL {
                    self.map.remove(&h);
                } else {
                    self.map.insert(h, next);
                }
            } else {
                let mut cur = head;
                while self.entries[cur as usize].next != e {
                    cur = self.entries[cur as usize].next;
                }
                self.entries[cur as usize].next = next;
            }
            self.free.push(e);
        }
        let c = self.priorities.get_mut(&prio).unwrap();
        *c -= 1;
        if *c == 0 {
            self.priorities.remove(&prio);
        }
        self.max_priority = self.priorities.keys().next_back().copied().unwrap_or(0);
        self.n_rules -= 1;
        true
    }
}

/// One flow table's rules, searchable by packet key.
pub struct Classifier {
    subtables: Vec<Subtable>,
    meta: Vec<SubMeta>,
    by_mask: HashMap<Key, usize>,
    /// Per filter field, indexed by prefix length: the prefixes rules use.
    prefixes: [Vec<PrefixSet>; FILTERS.len()],
    /// Per filter field, per top-16-bit value: bit (L-16) set when some rule
    /// uses a length-L (>= 16) prefix under it, with reference counts.
    summary: [Vec<u32>; FILTERS.len()],
    /// Per filter field, per top-8-bit value: bit L set when the length-L
    /// (1..=8) prefix is used by some rule.
    hi8: [Vec<u64>; FILTERS.len()],
    summary_refs: HashMap<(usize, u8, u32), u32>,
    /// (length, shifted-out bits) pairs to probe, refreshed on change.
    probe_lens: [Vec<u8>; FILTERS.len()],
    union_mask: Key,
    union_words: Vec<u8>,
    /// Per filter field, per prefix length L: bitset of the subtables (by
    /// position in `meta`, i.e. in priority order) whose mask has that
    /// length. Empty when there are more than `SEL_BITS` subtables.
    sel: [Vec<Sel>; FILTERS.len()],
    gen: u32,
    cache: FlowCache,
    /// Bypasses the flow cache while its hit rate is too low to pay.
    gate: Gate,
    pub cache_enabled: bool,
    n_rules: usize,
    /// Range rules by id (their pieces are in the subtables).
    ranged: HashMap<RuleId, RangedRule>,
    /// The decision tree + tuple-space remainder, built on demand after a change.
    fast: OnceLock<Option<Box<fast::Fast>>>,
    /// Lookups since the last change (approximate: racy increments are fine).
    lookups_since_change: AtomicU64,
    /// Build the tree once lookups since the last change reach
    /// `n_rules * tree_after_per_rule + tree_after_min` (u64::MAX: never).
    tree_after: (u64, u64),
    /// Use the AVX-512 tree walk when the CPU has it (`set_simd`).
    simd: bool,
    /// Tests: node budget per tree instead of the default.
    #[cfg(test)]
    test_node_budget: Option<usize>,
}

impl Default for Classifier {
    fn default() -> Self {
        Self::new()
    }
}

impl Classifier {
    pub fn new() -> Self {
        Classifier {
            subtables: Vec::new(),
            meta: Vec::new(),
            by_mask: HashMap::new(),
            prefixes: std::array::from_fn(|_| (0..=64u8).map(PrefixSet::new).collect()),
            summary: std::array::from_fn(|_| Vec::new()),
            hi8: std::array::from_fn(|_| Vec::new()),
            summary_refs: HashMap::new(),
            probe_lens: Default::default(),
            union_mask: [0; KEY_WORDS],
            union_words: Vec::new(),
            sel: Default::default(),
            gen: 1,
            cache: FlowCache::new(),
            gate: Gate::new(crate::flowcache::CAPACITY),
            cache_enabled: true,
            n_rules: 0,
            ranged: HashMap::new(),
            fast: OnceLock::new(),
            lookups_since_change: AtomicU64::new(0),
            tree_after: (1, 64),
            simd: true,
            #[cfg(test)]
            test_node_budget: None,
        }
    }

    /// When to build the decision tree: after `per_rule * rules + min`
    /// lookups without a change; `None`: never (tuple space search only).
    pub fn set_tree_policy(&mut self, policy: Option<(u64, u64)>) {
        self.tree_after = policy.unwrap_or((u64::MAX, u64::MAX));
        self.fast = OnceLock::new();
    }

    /// Whether batched tree lookups may use AVX-512 when the CPU has it
    /// (default on; off: the scalar walk, same answers).
    pub fn set_simd(&mut self, on: bool) {
        self.simd = on;
        self.fast = OnceLock::new();
    }

    /// Whether the built fast path uses AVX-512 for batched lookups.
    pub fn uses_simd(&self) -> bool {
        self.fast.get().and_then(|f| f.as_deref()).is_some_and(|f| f.simd())
    }

    /// (size of the lookup structures in 16-byte units, dimensions, max
    /// depth, subtables left to tuple space search) of the decision trees,
    /// if built.
    pub fn tree_stats(&self) -> Option<(usize, usize, u32, usize)> {
        let f = self.fast.get()?.as_deref()?;
        Some(f.stats())
    }

    /// Rules held by the decision trees, if built (a range rule held
    /// natively counts once, whatever its pieces in tuple space).
    pub fn tree_rules(&self) -> Option<usize> {
        Some(self.fast.get()?.as_deref()?.n_rules())
    }

    pub fn len(&self) -> usize {
        self.n_rules
    }
    pub fn is_empty(&self) -> bool {
        self.n_rules == 0
    }
    pub fn n_subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Add rule `id`; `value` must already be masked by `mask`.
    pub fn insert(&mut self, id: RuleId, priority: u16, value: &Key, mask: &Key) {
        self.insert_entry(id, priority, value, mask);
        self.n_rules += 1;
        self.changed();
    }

    /// Add rule `id` matching `value`/`mask` and, on each of `ranges`'
    /// fields (which `mask` must leave wildcarded), a value in the range.
    /// Remove it with `remove_ranged`.
    pub fn insert_ranged(&mut self, id: RuleId, priority: u16, value: &Key, mask: &Key, ranges: &[FieldRange]) {
        let mut pieces = vec![(*value, *mask)];
        for r in ranges {
            let field = ((1u64 << r.bits) - 1) << r.shift;
            assert!(mask[r.word] & field == 0, "a ranged field is also in the mask");
            pieces = pieces
                .iter()
                .flat_map(|(v, m)| {
                    r.prefixes().into_iter().map(move |(pv, pm)| {
                        let (mut v, mut m) = (*v, *m);
                        v[r.word] |= pv << r.shift;
                        m[r.word] |= pm << r.shift;
                        (v, m)
                    })
                })
                .collect();
        }
        for (v, m) in &pieces {
            self.insert_entry(id, priority, v, m);
        }
        self.ranged.insert(id, RangedRule { priority, value: *value, mask: *mask, ranges: ranges.to_vec(), pieces });
        self.n_rules += 1;
        self.changed();
    }

    /// Remove range rule `id`. Returns false if there is none.
    pub fn remove_ranged(&mut self, id: RuleId) -> bool {
        let Some(r) = self.ranged.remove(&id) else { return false };
        for (v, m) in &r.pieces {
            let ok = self.remove_entry(id, r.priority, v, m);
            debug_assert!(ok, "a piece of range rule {id} is missing");
        }
        self.n_rules -= 1;
        self.changed();
        true
    }

    fn insert_entry(&mut self, id: RuleId, priority: u16, value: &Key, mask: &Key) {
        let idx = match self.by_mask.get(mask) {
            Some(&i) => i,
            None => {
                self.subtables.push(Subtable::new(*mask));
                self.by_mask.insert(*mask, self.subtables.len() - 1);
                self.subtables.len() - 1
            }
        };
        self.subtables[idx].insert(value, priority, id);
        let pl = self.subtables[idx].prefix;
        for (i, f) in FILTERS.iter().enumerate() {
            if pl[i] != NO_PREFIX && pl[i] > 0 {
                let v = f.get(value) >> (f.bits - u32::from(pl[i]));
                self.prefixes[i][pl[i] as usize].add(v);
                self.mark_prefix(i, pl[i], v, true);
            }
        }
    }

    /// Keep the per-packet prefix tables in step with prefix `v` of length `l`
    /// of filter field `i` having been added (`added`) or removed:
    /// `hi8[top 8 bits]` has bit L set for every length L <= 8 that hits
    /// exactly; `summary[top 16 bits]` has bits 17..=23 for lengths 9..=15
    /// (exact), bit 0 for /16 (exact) and bits 1..=16 for lengths 17..=32
    /// ("some rule under this /16", confirmed by the prefix set).
    fn mark_prefix(&mut self, i: usize, l: u8, v: u64, added: bool) {
        let present = self.prefixes[i][l as usize].counts.contains_key(&v);
        if l <= 8 {
            if self.hi8[i].is_empty() {
                self.hi8[i] = vec![0; 256];
            }
            let span = 8 - u32::from(l);
            for t in (v << span)..((v + 1) << span) {
                if present {
                    self.hi8[i][t as usize] |= 1 << l;
                } else {
                    self.hi8[i][t as usize] &= !(1 << l);
                }
            }
            return;
        }
        if self.summary[i].is_empty() {
            self.summary[i] = vec![0; 1 << 16];
        }
        if l < 16 {
            let span = 16 - u32::from(l);
            let bit = 1u32 << (17 + u32::from(l) - 9);
            for t in (v << span)..((v + 1) << span) {
                if present {
                    self.summary[i][t as usize] |= bit;
                } else {
                    self.summary[i][t as usize] &= !bit;
                }
            }
            return;
        }
        let hi = (v >> (l - 16)) as u32;
        let bit = 1u32 << (l - 16);
        let r = self.summary_refs.entry((i, l, hi)).or_insert(0);
        if added {
            *r += 1;
        } else {
            *r -= 1;
        }
        if *r == 0 {
            self.summary_refs.remove(&(i, l, hi));
            self.summary[i][hi as usize] &= !bit;
        } else {
            self.summary[i][hi as usize] |= bit;
        }
    }

    /// Remove rule `id` (same priority/value/mask as inserted). Returns false if absent.
    pub fn remove(&mut self, id: RuleId, priority: u16, value: &Key, mask: &Key) -> bool {
        if self.ranged.contains_key(&id) || !self.remove_entry(id, priority, value, mask) {
            return false;
        }
        self.n_rules -= 1;
        self.changed();
        true
    }

    fn remove_entry(&mut self, id: RuleId, priority: u16, value: &Key, mask: &Key) -> bool {
        let Some(&idx) = self.by_mask.get(mask) else { return false };
        if !self.subtables[idx].remove(value, priority, id) {
            return false;
        }
        let pl = self.subtables[idx].prefix;
        for (i, f) in FILTERS.iter().enumerate() {
            if pl[i] != NO_PREFIX && pl[i] > 0 {
                let v = f.get(value) >> (f.bits - u32::from(pl[i]));
                self.prefixes[i][pl[i] as usize].remove(v);
                self.mark_prefix(i, pl[i], v, false);
            }
        }
        if self.subtables[idx].n_rules == 0 {
            self.subtables.swap_remove(idx);
            self.by_mask.remove(mask);
            if idx < self.subtables.len() {
                let m = self.subtables[idx].mask;
                self.by_mask.insert(m, idx);
            }
        }
        true
    }

    fn changed(&mut self) {
        self.gen = self.gen.wrapping_add(1).max(1);
        self.fast = OnceLock::new();
        *self.lookups_since_change.get_mut() = 0;
        // Keep subtables ordered by best priority, best first.
        self.subtables.sort_by(|a, b| b.max_priority.cmp(&a.max_priority));
        for (i, st) in self.subtables.iter().enumerate() {
            self.by_mask.insert(st.mask, i);
        }
        self.meta = self
            .subtables
            .iter()
            .map(|st| SubMeta { max_priority: st.max_priority, bit: st.prefix.map(|l| if l == NO_PREFIX { 0 } else { l }) })
            .collect();
        for i in 0..FILTERS.len() {
            self.sel[i].clear();
            if self.meta.len() <= SEL_BITS {
                self.sel[i] = vec![[0u64; SEL_WORDS]; 65];
                for (idx, m) in self.meta.iter().enumerate() {
                    self.sel[i][m.bit[i] as usize][idx / 64] |= 1u64 << (idx % 64);
                }
            }
        }
        self.union_mask = [0; KEY_WORDS];
        for st in &self.subtables {
            for w in 0..KEY_WORDS {
                self.union_mask[w] |= st.mask[w];
            }
        }
        self.union_words = (0..KEY_WORDS).filter(|&w| self.union_mask[w] != 0).map(|w| w as u8).collect();
        self.cache.reshape(&self.union_mask, &self.union_words);
        for i in 0..FILTERS.len() {
            self.probe_lens[i] = (1..self.prefixes[i].len()).filter(|&l| !self.prefixes[i][l].is_empty()).map(|l| l as u8).collect();
        }
    }

    /// Drop every cached lookup result (done automatically on any change).
    pub fn invalidate_cache(&mut self) {
        self.gen = self.gen.wrapping_add(1).max(1);
    }

    /// `lookup` behind the exact-match flow cache (bypassed while its hit
    /// rate is low, see `cachegate`).
    #[inline]
    pub fn lookup_cached(&mut self, key: &Key) -> Option<(u16, RuleId)> {
        if !self.cache_enabled || !self.gate.admit(self.cache.hits, self.cache.fills) {
            return self.lookup(key);
        }
        self.lookup_through_cache(key)
    }

    /// `lookup_cached` once the cache is in use.
    #[inline(never)]
    fn lookup_through_cache(&mut self, key: &Key) -> Option<(u16, RuleId)> {
        let (hit, h) = self.cache.get(key, self.gen);
        if let Some(r) = hit {
            return r;
        }
        let r = self.lookup(key);
        self.cache.put(key, self.gen, h, r);
        r
    }

    /// Switch the flow cache on (its gate starts afresh) or off.
    pub fn set_cache_enabled(&mut self, on: bool) {
        if on {
            self.gate.restart(self.cache.hits, self.cache.fills);
        }
        self.cache_enabled = on;
    }

    /// (hits, misses) of the flow cache so far.
    pub fn cache_stats(&self) -> (u64, u64) {
        (self.cache.hits, self.cache.misses)
    }

    /// Lookups that bypassed the flow cache because its hit rate was low.
    pub fn cache_bypassed(&self) -> u64 {
        self.gate.bypassed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(w4: u64, w5: u64) -> Key {
        let mut k = [0u64; KEY_WORDS];
        k[4] = w4;
        k[5] = w5;
        k
    }

    /// Brute-force reference: highest priority, then lowest id among equals.
    fn brute(rules: &[(RuleId, u16, Key, Key)], key: &Key) -> Option<u16> {
        rules
            .iter()
            .filter(|(_, _, v, m)| (0..KEY_WORDS).all(|w| key[w] & m[w] == v[w]))
            .map(|r| r.1)
            .max()
    }

    #[test]
    fn priority_and_masks_match_brute_force_through_changes() {
        let mut s: u64 = 12345;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut c = Classifier::new();
        let mut rules = Vec::new();
        for id in 0..3000u32 {
            let sl = [0u32, 8, 16, 24, 32][(rnd() % 5) as usize];
            let dl = [0u32, 8, 16, 24, 32, 7, 12, 20][(rnd() % 8) as usize];
            let pm = |l: u32| if l == 0 { 0u64 } else { (0xffff_ffffu64 << (32 - l)) & 0xffff_ffff };
            let mut mask = k((pm(sl) << 32) | pm(dl), if rnd() % 2 == 0 { 0xffff << 32 } else { 0 });
            if rnd() % 7 == 0 {
                mask[4] |= 0x00ff_0000_0000_0000 ^ (mask[4] & 0x00ff_0000_0000_0000); // non-prefix mask
            }
            let v = k(rnd() & (0xff0f_0f0f_ff0f_0f0f), (rnd() % 4) << 32);
            let mut val = [0u64; KEY_WORDS];
            for w in 0..KEY_WORDS {
                val[w] = v[w] & mask[w];
            }
            // distinct priorities so the answer is unique
            let prio = (id as u16).wrapping_mul(7919) % 60000 + 1;
            rules.push((id, prio, val, mask));
            c.insert(id, prio, &val, &mask);
        }
        let check = |c: &mut Classifier, rules: &[(RuleId, u16, Key, Key)], rnd: &mut dyn FnMut() -> u64| {
            for _ in 0..3000 {
                let r = &rules[(rnd() % rules.len() as u64) as usize];
                let mut key = k(rnd() & 0xff0f_0f0f_ff0f_0f0f, (rnd() % 4) << 32);
                if rnd() % 2 == 0 {
                    for w in 0..KEY_WORDS {
                        key[w] = (key[w] & !r.3[w]) | r.2[w];
                    }
                }
                let want = brute(rules, &key);
                assert_eq!(c.lookup(&key).map(|x| x.0), want);
                let mut one = [None];
                c.lookup_batch(std::slice::from_ref(&key), &mut one);
                assert_eq!(one[0].map(|x| x.0), want);
                assert_eq!(c.lookup_cached(&key).map(|x| x.0), want);
                assert_eq!(c.lookup_cached(&key).map(|x| x.0), want);
            }
        };
        check(&mut c, &rules, &mut rnd);
        // remove half, re-check (cache must not serve stale answers)
        let mut kept = Vec::new();
        for r in rules.drain(..) {
            if r.0 % 2 == 0 {
                assert!(c.remove(r.0, r.1, &r.2, &r.3));
            } else {
                kept.push(r);
            }
        }
        assert_eq!(c.len(), kept.len());
        check(&mut c, &kept, &mut rnd);
    }
}
