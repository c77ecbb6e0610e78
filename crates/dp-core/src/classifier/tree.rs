//! Decision tree over key ranges (HyperSplit-style below a root cut): the
//! classifier's fast path for a table that has stopped changing.
//!
//! Each rule becomes one integer range per dimension (`dims.rs`). The root is
//! a direct-indexed table of cells: the top bits of dimensions on which every
//! rule of the tree is at least that specific (so each rule lands in exactly
//! one cell, no copies), e.g. 8 bits of IPv4 source and 8 of destination.
//! Below a cell, a binary tree: an inner node compares one dimension with a
//! threshold (a rule boundary inside the node's region, chosen to balance the
//! rules sent left and right); rules after the first one that covers a region
//! are shadowed there and dropped. A leaf names one check record: the best
//! rule covering the whole region, the single candidate left, or the record
//! that matches every key with score 0 ("no rule"); the key's values are
//! checked against the record's ranges (one 32-byte record for up to four
//! check dimensions: cheaper than the blocks that would separate a rule's
//! edges, and the same code for every leaf) and give the rule's score or 0.
//! Binary nodes are stored three levels to a 64-byte block with u32
//! thresholds and implicit child positions. When fully resolving would exceed
//! the node budget, the tree is rebuilt with list leaves (up to `LIST_LEAF`
//! candidates, all checked); if that too is over budget the subtables stay
//! with tuple space search. Dimensions on which all rules agree are checked
//! once, up front (`guard`), and left out of the records. Scores (`fast.rs`)
//! order rules as the classifier does: higher priority, then lower `rank`
//! (subtable position), as tuple space search resolves ties.
//! State: cells (+ best score per cell), blocks, check records and scores.
//! Cost: build O(nodes x rules-per-node x dims log); lookup = one cell, a few
//! blocks (7 comparisons each, no dependent loads inside), one check.

use super::dims::{Dim, MAX_DIMS};
use crate::field::{Key, KEY_WORDS};

/// Most index bits of the root cut (cells table of 4 + 4 bytes each).
const CUT_BITS: u32 = 16;
/// Rule copies (rule x cells it is listed in) the root cut may make, per rule.
const CUT_COPIES: usize = 16;
/// A cell holding a leaf code rather than a block index.
const CELL_LEAF: u32 = 1 << 31;
/// Candidates up to which a region becomes a list leaf even in the fully
/// resolved build: checking one rule's ranges (one cache line) is cheaper
/// than the blocks that would separate its edges.
const SMALL_LIST: usize = 1;
/// Leaf size of the fallback (list-leaf) build.
const LIST_LEAF: usize = 8;
/// Parts of a root cut computed without a loop.
const FAST_CUT: usize = 4;
/// Dimension slot that always reads 0: leaves use it to loop on themselves.
const ZERO: usize = MAX_DIMS;
const LIST_BIT: u64 = 1 << 63;

/// Three levels of the binary tree in one cache line: slot p's children are
/// slots 2p+1 / 2p+2 (value below / at or above `thr[p]` on dimension
/// `dims[p]`), and slots 7..15 are the block's eight exits. Exit e is a leaf
/// when bit e of `leaf_mask` is set (its 24-bit leaf code is
/// `leaves[3e..3e+3]`), else a block (`child_base + block exits before e`):
/// a block's child blocks are consecutive, so no per-exit pointers are stored.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block {
    thr: [u32; 7],
    child_base: u32,
    dims: [u8; 7],
    leaf_mask: u8,
    leaves: [u8; 24],
}

const _: () = assert!(std::mem::size_of::<Block>() == 64);

/// Leaf code (24 bits): a check record (`1 + order`: the rule of that
/// order, whose ranges are checked; 0: the record that matches every key
/// with score 0, "no rule"), or `LIST_CODE | i`: the candidates
/// `lists[list_leaves[i]]`, checked best first.
const LIST_CODE: u32 = 1 << 23;
/// Most rules a tree holds (leaf codes must fit).
const MAX_TREE_RULES: usize = (LIST_CODE - 2) as usize;
const EMPTY_BLOCK: Block = Block { thr: [1; 7], child_base: 0, dims: [ZERO as u8; 7], leaf_mask: 0, leaves: [0; 24] };

/// `EXIT[m]`: the exit of a block whose slot p compared "at or above" iff
/// bit p of `m` is set.
const EXIT: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut m = 0;
    while m < 128 {
        let mut i = 0;
        let mut level = 0;
        while level < 3 {
            i = 2 * i + 1 + ((m >> i) & 1);
            level += 1;
        }
        t[m] = (i - 7) as u8;
        m += 1;
    }
    t
};

/// `RANK[mask][e]`: set bits of `mask` below bit `e`.
const RANK: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let mut e = 0;
        while e < 8 {
            t[m][e] = (m & ((1 << e) - 1)).count_ones() as u8;
            e += 1;
        }
        m += 1;
    }
    t
};

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Node {
    /// Inner node: go to `child + 1` when the value is >= `thr`. Leaf: its
    /// answer (1 + rule order, 1 + u32::MAX for none, or a list), never
    /// reached by the always-zero value of dimension `ZERO`.
    thr: u64,
    child: u32,
    dim: u32,
}

/// A rule as the tree sees it.
pub(super) struct TreeRule {
    /// Its place in the classifier's order over every tree (higher is
    /// better, 0 is "no rule"; `fast.rs` maps it back to the rule).
    pub score: u32,
    pub value: Key,
    pub mask: Key,
    /// (dimension, lo, hi): ranges that replace what value/mask allow on
    /// those dimensions (a rule with port ranges is one tree rule).
    pub ranges: Vec<(usize, u64, u64)>,
}

/// Per-key dimension values (slot `ZERO` stays 0); dimensions are at most
/// 32 bits wide (`dims.rs`).
pub(super) type Vals = [u32; MAX_DIMS + 1];

pub(super) struct Tree {
    dims: Vec<Dim>,
    guard_words: Vec<(u8, u64, u64)>,
    /// Binary nodes while building (cleared once compiled).
    nodes: Vec<Node>,
    /// The lookup form: three binary levels per 64-byte block.
    blocks: Vec<Block>,
    /// Root cut: (dimension, shift, bits) whose top bits, concatenated,
    /// index `cells`; each cell is a block index or `CELL_LEAF | leaf code`.
    cut: Vec<(u8, u8, u8)>,
    /// The cut for lookups, when it has at most `FAST_CUT` parts: per part
    /// (dimension, shift, mask, position in the cell index), unused parts
    /// reading the always-zero dimension; no loop, no dependency chain.
    fast_cut: Option<[(u8, u8, u32, u8); FAST_CUT]>,
    cells: Vec<u32>,
    /// Per cell, the best score of its rules (lookups holding a better
    /// answer skip the cell).
    cell_max: Vec<u32>,
    /// List leaves: `list_len` record indices each (padded with record 0,
    /// whose score 0 never wins).
    leaf_lists: Vec<u32>,
    list_len: usize,
    /// Rules held (by order, best first).
    n_rules: usize,
    /// Ranges of every rule by order, `dims.len()` per rule (building).
    ranges: Vec<(u64, u64)>,
    /// The dimensions check records hold: those the guard does not fix.
    cdims: Vec<u8>,
    /// Check records, `rec_len` u32 each (8: 32 bytes for up to 4 check
    /// dimensions, else a multiple of 16, whole cache lines): the (lo, hi)
    /// range of each check dimension. Record 0 matches every key ("no
    /// rule"), record `1 + order` is that rule's.
    checks: Vec<Line>,
    rec_len: usize,
    /// Score by record (0 for record 0).
    scores: Vec<u32>,
    /// The AVX-512 check: per lane of a record, the dimension whose value
    /// it faces (lanes past the check dimensions: the always-zero one).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    dup_idx: [u32; 16],
    /// Rule orders of list leaves (building).
    lists: Vec<u32>,
    pub max_depth: u32,
    max_score: u32,
}

/// One cache line of check records.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

impl Tree {
    /// Build over `rules` (any order) with dimensions `dims`; None when the
    /// tree would exceed `budget` nodes even with list leaves.
    pub fn build(mut rules: Vec<TreeRule>, dims: &[Dim], budget: usize) -> Option<Tree> {
        rules.sort_by(|a, b| b.score.cmp(&a.score));
        let all: Vec<Vec<(u64, u64)>> = rules
            .iter()
            .map(|r| {
                let mut v: Vec<(u64, u64)> = dims.iter().map(|d| d.range(&r.value, &r.mask)).collect();
                for &(d, lo, hi) in &r.ranges {
                    v[d] = (lo, hi);
                }
                v
            })
            .collect();
        // dimensions where all rules agree on a prefix-aligned range become
        // the guard (checked once; the tree's region starts as that common
        // range, so never splits them); a common range that is not a
        // prefix (a range rule's) is split by the tree like any other
        let mut guard = [(0u64, 0u64); KEY_WORDS];
        let mut start: Vec<(u64, u64)> = dims.iter().map(|d| (0, d.mask)).collect();
        for (j, d) in dims.iter().enumerate() {
            let first = all.first().map(|r| r[j]);
            let aligned = |(lo, hi): (u64, u64)| lo & (hi - lo) == 0 && (hi - lo + 1).is_power_of_two();
            if let Some((lo, hi)) = first.filter(|&f| aligned(f) && all.iter().all(|r| r[j] == f)) {
                let m = d.mask & !(lo ^ hi);
                guard[d.word as usize].0 |= m << d.shift;
                guard[d.word as usize].1 |= lo << d.shift;
                start[j] = (lo, hi);
            }
        }
        let guard_words = (0..KEY_WORDS).filter(|&w| guard[w].0 != 0).map(|w| (w as u8, guard[w].0, guard[w].1)).collect();
        if rules.len() > MAX_TREE_RULES {
            return None;
        }
        // a key that passes the guard is inside every rule's range on the
        // dimensions the guard fixes: records hold the others only
        let cdims: Vec<u8> = (0..dims.len()).filter(|&d| start[d] == (0, dims[d].mask)).map(|d| d as u8).collect();
        let rec_len = if cdims.len() <= 4 { 8 } else { (2 * cdims.len()).div_ceil(16) * 16 };
        let mut dup_idx = [ZERO as u32; 16];
        for (i, &d) in cdims.iter().take(8).enumerate() {
            dup_idx[2 * i] = u32::from(d);
            dup_idx[2 * i + 1] = u32::from(d);
        }
        let n_recs = rules.len() + 1;
        let mut scores = vec![0; n_recs];
        let mut checks = vec![Line([0; 16]); (n_recs * rec_len).div_ceil(16)];
        let flat = |checks: &mut Vec<Line>, at: usize, v: u32| checks[at / 16].0[at % 16] = v;
        for (r, rule) in std::iter::once(None).chain(all.iter().zip(&rules).map(Some)).enumerate() {
            for (i, &d) in cdims.iter().enumerate() {
                let (lo, hi) = rule.map_or((0, u64::from(u32::MAX)), |(v, _)| v[usize::from(d)]);
                flat(&mut checks, r * rec_len + 2 * i, lo as u32);
                flat(&mut checks, r * rec_len + 2 * i + 1, hi as u32);
            }
            scores[r] = rule.map_or(0, |(_, x)| x.score);
        }
        let ranges: Vec<(u64, u64)> = all.into_iter().flatten().collect();
        let mut t = Tree { dims: dims.to_vec(), guard_words, nodes: Vec::new(), blocks: Vec::new(), cut: Vec::new(), fast_cut: None, cells: Vec::new(), cell_max: Vec::new(), leaf_lists: Vec::new(), list_len: 1, n_rules: rules.len(), cdims, checks, rec_len, scores, dup_idx, ranges, lists: Vec::new(), max_depth: 0, max_score: rules.first().map_or(0, |r| r.score) };
        t.choose_cut(&start);
        let cells = t.bucket();
        if t.grow_cells(&start, &cells, None, budget) || t.grow_cells(&start, &cells, Some(LIST_LEAF), budget) {
            Some(t)
        } else {
            None
        }
    }

    /// Pick the root cut: first the top bits of dimensions on which every
    /// rule of the tree is at least that specific (each rule lands in one
    /// cell), one bit at a time round the dimensions; then, while rule copies
    /// stay under `CUT_COPIES` per rule, more bits where they add the fewest
    /// copies (a rule less specific than the cut is listed in every cell it
    /// covers; cells with the same rules share one subtree). Up to
    /// `CUT_BITS` and about 8 cells per rule.
    fn choose_cut(&mut self, start: &[(u64, u64)]) {
        let n = self.n_rules;
        let nd = self.dims.len();
        let width = |d: usize| self.dims[d].mask.count_ones();
        let cuttable = |d: usize| start[d].0 != start[d].1 && start[d] == (0, self.dims[d].mask);
        // prefix length of each rule on each dimension
        let len: Vec<Vec<u32>> = (0..n)
            .map(|o| {
                (0..nd)
                    .map(|d| {
                        // top bits on which the rule's range is one value (its
                        // prefix length when the range is a prefix)
                        let (lo, hi) = self.range(o as u32, d);
                        width(d) - (64 - (lo ^ hi).leading_zeros())
                    })
                    .collect()
            })
            .collect();
        let mut room: Vec<u32> = (0..nd).map(|d| if cuttable(d) { len.iter().map(|l| l[d]).min().unwrap_or(0) } else { 0 }).collect();
        let limit = CUT_BITS.min(usize::BITS - n.leading_zeros() + 3);
        let mut bits = vec![0u32; nd];
        let mut total = 0;
        while total < limit && room.iter().any(|&r| r > 0) {
            for d in 0..nd {
                if room[d] > 0 && total < limit {
                    room[d] -= 1;
                    bits[d] += 1;
                    total += 1;
                }
            }
        }
        let copies = |bits: &[u32]| -> usize { len.iter().map(|l| 1usize << (0..nd).map(|d| bits[d].saturating_sub(l[d])).sum::<u32>().min(40)).sum() };
        while total < limit {
            let best = (0..nd)
                .filter(|&d| cuttable(d) && bits[d] < width(d))
                .map(|d| {
                    let mut b = bits.clone();
                    b[d] += 1;
                    (copies(&b), d)
                })
                .min();
            match best {
                Some((c, d)) if c <= CUT_COPIES * n.max(1) => {
                    bits[d] += 1;
                    total += 1;
                }
                _ => break,
            }
        }
        self.cut = (0..nd).filter(|&d| bits[d] > 0).map(|d| (d as u8, (width(d) - bits[d]) as u8, bits[d] as u8)).collect();
        self.fast_cut = (self.cut.len() <= FAST_CUT).then(|| {
            let mut f = [(ZERO as u8, 0u8, 0u32, 0u8); FAST_CUT];
            let mut pos = 0u8;
            for (i, &(d, shift, b)) in self.cut.iter().enumerate().rev() {
                f[i] = (d, shift, (1u32 << b) - 1, pos);
                pos += b;
            }
            f
        });
    }

    /// Cell index of a key with values `vals`.
    #[inline(always)]
    fn cell(&self, vals: &Vals) -> usize {
        if let Some(f) = &self.fast_cut {
            let mut c = 0usize;
            for &(d, shift, mask, pos) in f {
                // SAFETY: d < dims.len() or ZERO, both < vals.len()
                let v = unsafe { *vals.get_unchecked(d as usize) };
                c |= (((v >> shift) & mask) as usize) << pos;
            }
            return c;
        }
        let mut c = 0usize;
        for &(d, shift, bits) in &self.cut {
            // SAFETY: cut dimensions are < dims.len() <= MAX_DIMS < vals.len()
            let v = unsafe { *vals.get_unchecked(d as usize) };
            c = (c << bits) | ((v >> shift) & ((1u32 << bits) - 1)) as usize;
        }
        c
    }

    /// Rule orders per cell (best first): each rule in every cell its
    /// ranges reach.
    fn bucket(&self) -> Vec<Vec<u32>> {
        let total: u32 = self.cut.iter().map(|c| u32::from(c.2)).sum();
        let mut cells = vec![Vec::new(); 1 << total];
        for o in 0..self.n_rules as u32 {
            // the cell indices the rule covers: the product of its per-dimension spans
            let mut idx = vec![0usize];
            for &(d, shift, bits) in &self.cut {
                let (lo, hi) = self.range(o, d as usize);
                let (a, b) = ((lo >> shift) as usize, (hi >> shift) as usize);
                idx = idx.iter().flat_map(|&c| (a..=b).map(move |v| (c << bits) | v)).collect();
            }
            for c in idx {
                cells[c].push(o);
            }
        }
        cells
    }

    /// Grow and compile every cell's tree; false if over the node budget.
    fn grow_cells(&mut self, start: &[(u64, u64)], cells: &[Vec<u32>], list: Option<usize>, budget: usize) -> bool {
        self.nodes.clear();
        self.lists.clear();
        self.blocks.clear();
        self.leaf_lists.clear();
        self.list_len = list.unwrap_or(SMALL_LIST);
        self.cells.clear();
        self.cell_max = cells.iter().map(|r| r.first().map_or(0, |&o| self.scores[o as usize + 1])).collect();
        self.max_depth = 0;
        let mut roots = Vec::with_capacity(cells.len());
        // cells with the same rules, each covering the whole cell on the cut
        // dimensions, share one subtree (it never splits those dimensions);
        // a rule that covers only part of a cell (a range that is not a
        // prefix) makes the cell's subtree its own
        let mut shared: std::collections::HashMap<&[u32], usize> = std::collections::HashMap::new();
        for (c, rules) in cells.iter().enumerate() {
            if rules.is_empty() {
                roots.push(None);
                continue;
            }
            let mut region = start.to_vec();
            let mut rest = c;
            for &(d, shift, bits) in self.cut.iter().rev() {
                let v = (rest & ((1 << bits) - 1)) as u64;
                rest >>= bits;
                let span = 1u64 << shift;
                region[d as usize] = (v * span, v * span + span - 1);
            }
            let whole = rules.iter().all(|&o| {
                self.cut.iter().all(|&(d, _, _)| {
                    let ((a, b), (lo, hi)) = (self.range(o, d as usize), region[d as usize]);
                    a <= lo && hi <= b
                })
            });
            if whole {
                if let Some(&first) = shared.get(rules.as_slice()) {
                    roots.push(roots[first]);
                    continue;
                }
                shared.insert(rules.as_slice(), c);
            }
            match self.grow(region, rules.clone(), budget) {
                Some(root) => roots.push(Some(root)),
                None => return false,
            }
        }
        let mut compiled: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        for root in roots {
            if let Some(&e) = root.and_then(|b| compiled.get(&b)) {
                self.cells.push(e);
                continue;
            }
            let entry = match root {
                None => CELL_LEAF,
                Some(b) if self.nodes[b as usize].dim as usize == ZERO => {
                    let thr = self.nodes[b as usize].thr;
                    CELL_LEAF | self.leaf_code(thr)
                }
                Some(b) => {
                    let at = self.blocks.len() as u32;
                    self.blocks.push(EMPTY_BLOCK);
                    self.compile(at, b);
                    at
                }
            };
            if let Some(b) = root {
                compiled.insert(b, entry);
            }
            self.cells.push(entry);
        }
        self.nodes = Vec::new();
        true
    }

    fn range(&self, ord: u32, d: usize) -> (u64, u64) {
        self.ranges[ord as usize * self.dims.len() + d]
    }

    fn covers(&self, ord: u32, region: &[(u64, u64)]) -> bool {
        region.iter().enumerate().all(|(d, &(lo, hi))| {
            let (a, b) = self.range(ord, d);
            a <= lo && hi <= b
        })
    }

    fn set_leaf(&mut self, at: u32, thr: u64) {
        self.nodes[at as usize] = Node { thr, child: at, dim: ZERO as u32 };
    }

    /// Grow the binary tree of one region (`list`: stop at that many
    /// candidates); its root, or None if the node budget ran out.
    fn grow(&mut self, region: Vec<(u64, u64)>, rules: Vec<u32>, budget: usize) -> Option<u32> {
        let nd = self.dims.len();
        let root = self.nodes.len() as u32;
        self.nodes.push(Node { thr: 0, child: 0, dim: 0 });
        let mut stack: Vec<(u32, u32, Vec<(u64, u64)>, Vec<u32>)> = vec![(root, 0, region, rules)];
        while let Some((at, depth, region, mut rules)) = stack.pop() {
            self.max_depth = self.max_depth.max(depth);
            if let Some(k) = rules.iter().position(|&r| self.covers(r, &region)) {
                rules.truncate(k + 1);
            }
            if rules.is_empty() {
                self.set_leaf(at, 1 + u64::from(u32::MAX));
                continue;
            }
            if self.covers(rules[0], &region) {
                self.set_leaf(at, 1 + u64::from(rules[0]));
                continue;
            }
            if rules.len() <= self.list_len {
                let start = self.lists.len() as u64;
                self.lists.extend_from_slice(&rules);
                self.set_leaf(at, LIST_BIT | (start << 8) | rules.len() as u64);
                continue;
            }
            if self.nodes.len() + 2 > budget {
                return None;
            }
            let (d, t) = self.split(&region, &rules, nd);
            let left: Vec<u32> = rules.iter().copied().filter(|&r| self.range(r, d).0 < t).collect();
            let right: Vec<u32> = rules.iter().copied().filter(|&r| self.range(r, d).1 >= t).collect();
            let child = self.nodes.len() as u32;
            self.nodes.push(Node { thr: 0, child: 0, dim: 0 });
            self.nodes.push(Node { thr: 0, child: 0, dim: 0 });
            self.nodes[at as usize] = Node { thr: t, child, dim: d as u32 };
            let mut lr = region.clone();
            lr[d].1 = t - 1;
            let mut rr = region;
            rr[d].0 = t;
            stack.push((child + 1, depth + 1, rr, right));
            stack.push((child, depth + 1, lr, left));
        }
        Some(root)
    }

    /// The (dimension, threshold) that best balances the rules sent left
    /// (range starts below the threshold) and right (ends at or above it).
    fn split(&self, region: &[(u64, u64)], rules: &[u32], nd: usize) -> (usize, u64) {
        let mut best = (usize::MAX, usize::MAX, 0usize, 0u64);
        let n = rules.len();
        let mut starts = Vec::with_capacity(n);
        let mut ends = Vec::with_capacity(n);
        for d in 0..nd {
            let (rlo, rhi) = region[d];
            if rlo == rhi {
                continue;
            }
            starts.clear();
            ends.clear();
            for &r in rules {
                let (a, b) = self.range(r, d);
                starts.push(a.max(rlo));
                ends.push(b.min(rhi));
            }
            starts.sort_unstable();
            ends.sort_unstable();
            // candidate thresholds: a range start above rlo, one past a range end below rhi
            let mut cands: Vec<u64> = starts.iter().copied().filter(|&s| s > rlo).chain(ends.iter().filter(|&&e| e < rhi).map(|&e| e + 1)).collect();
            cands.sort_unstable();
            cands.dedup();
            for &t in &cands {
                // left: ranges starting below t; right: ranges ending at or above t
                let l = starts.partition_point(|&s| s < t);
                let r = n - ends.partition_point(|&e| e < t);
                if (l.max(r), l + r) < (best.0, best.1) {
                    best = (l.max(r), l + r, d, t);
                }
            }
        }
        debug_assert!(best.0 != usize::MAX, "a region not covered by its best rule has a rule boundary inside");
        (best.2, best.3)
    }

    /// Whether this tree's guard is the same as `other`'s.
    pub fn guard_words_eq(&self, other: &Tree) -> bool {
        self.guard_words == other.guard_words
    }

    /// Whether `key` passes the guard (else no tree rule can match).
    #[inline(always)]
    pub fn guard(&self, key: &Key) -> bool {
        self.guard_words.iter().all(|&(w, m, v)| key[w as usize] & m == v)
    }

    /// Write the binary subtree at `b` as block `at` and its descendants. A
    /// binary leaf met above the third level stands in for its whole
    /// subtree: its slot compares the always-zero value with 1 (goes left)
    /// and both its children repeat it.
    fn compile(&mut self, at: u32, b: u32) {
        let mut blk = EMPTY_BLOCK;
        let mut slot = [b; 15];
        for p in 0..7 {
            let n = self.nodes[slot[p] as usize];
            if n.dim as usize == ZERO {
                slot[2 * p + 1] = slot[p];
                slot[2 * p + 2] = slot[p];
            } else {
                blk.thr[p] = n.thr as u32;
                blk.dims[p] = n.dim as u8;
                slot[2 * p + 1] = n.child;
                slot[2 * p + 2] = n.child + 1;
            }
        }
        let mut inner = Vec::new();
        let mut codes = [0u32; 8];
        for e in 0..8 {
            let n = self.nodes[slot[7 + e] as usize];
            if n.dim as usize == ZERO {
                blk.leaf_mask |= 1 << e;
                codes[e] = self.leaf_code(n.thr);
            } else {
                inner.push(slot[7 + e]);
            }
        }
        blk.child_base = self.blocks.len() as u32;
        for _ in &inner {
            self.blocks.push(EMPTY_BLOCK);
        }
        for (e, c) in codes.iter().enumerate() {
            blk.leaves[3 * e..3 * e + 3].copy_from_slice(&c.to_le_bytes()[..3]);
        }
        self.blocks[at as usize] = blk;
        for (k, &bn) in inner.iter().enumerate() {
            self.compile(blk.child_base + k as u32, bn);
        }
    }

    /// A binary leaf's answer as a leaf code.
    fn leaf_code(&mut self, thr: u64) -> u32 {
        let recs: Vec<u32> = if thr & LIST_BIT != 0 {
            let (start, len) = (((thr & !LIST_BIT) >> 8) as usize, (thr & 0xff) as usize);
            self.lists[start..start + len].iter().map(|&o| o + 1).collect()
        } else if thr - 1 >= u64::from(u32::MAX) {
            vec![0]
        } else {
            vec![thr as u32]
        };
        if recs.len() == 1 {
            return recs[0];
        }
        let idx = self.leaf_lists.len() / self.list_len;
        self.leaf_lists.extend_from_slice(&recs);
        self.leaf_lists.resize((idx + 1) * self.list_len, 0);
        LIST_CODE | idx as u32
    }

    /// Block `at`'s exit `e` as an entry: the child block, or `CELL_LEAF |
    /// leaf code`; computed without a branch.
    #[inline(always)]
    fn exit(b: &Block, e: usize) -> u32 {
        // SAFETY: e < 8; the leaf code of exit e is the 3 bytes at offset
        // 40 + 3e, read as the top 3 bytes of the u32 at 39 + 3e (< 61).
        let code = unsafe { std::ptr::read_unaligned((b as *const Block as *const u8).add(39 + 3 * e) as *const u32) } >> 8;
        let block = b.child_base + e as u32 - u32::from(RANK[b.leaf_mask as usize][e]);
        if (b.leaf_mask >> e) & 1 != 0 {
            CELL_LEAF | code
        } else {
            block
        }
    }

    /// Three binary levels of block `at`: the entry they lead to.
    #[inline(always)]
    pub fn step(&self, at: u32, vals: &Vals) -> u32 {
        debug_assert!((at as usize) < self.blocks.len());
        // SAFETY: `at` is a block index written by `compile`, every `dim`
        // entry is <= ZERO < vals.len().
        unsafe {
            let b = self.blocks.get_unchecked(at as usize);
            // all seven comparisons at once (no chain of dependent loads),
            // then the exit their outcomes lead to
            let mut m = 0usize;
            for p in 0..7 {
                m |= usize::from(*vals.get_unchecked(usize::from(*b.dims.get_unchecked(p))) >= *b.thr.get_unchecked(p)) << p;
            }
            Self::exit(b, usize::from(EXIT[m]))
        }
    }

    /// The score of the best tree rule for a key with values `vals` (0:
    /// none), walking from the key's cell; 0 also when the cell's rules
    /// cannot beat score `above`.
    #[inline(always)]
    pub fn walk(&self, vals: &Vals, above: u32) -> u32 {
        let c = self.cell(vals);
        // SAFETY: `cell` gives an index of this tree's cut
        unsafe {
            if above > self.cell_max_at(c) {
                return 0;
            }
            self.walk_from(self.entry_at(c), vals)
        }
    }

    /// The cell a key with values `vals` starts from.
    #[inline(always)]
    pub fn cell_of(&self, vals: &Vals) -> usize {
        self.cell(vals)
    }

    /// Start loading cell `c`'s entry.
    #[inline(always)]
    pub fn prefetch_cell_at(&self, c: usize) {
        super::lookup::prefetch(&self.cells[c]);
    }

    /// Cell `c`'s best score (0 when it holds no rule).
    ///
    /// # Safety
    /// `c` must be a cell index of this tree's cut (`cell_of`, or the same
    /// computation in vector form).
    #[inline(always)]
    pub unsafe fn cell_max_at(&self, c: usize) -> u32 {
        debug_assert!(c < self.cell_max.len());
        // SAFETY: the caller's
        unsafe { *self.cell_max.get_unchecked(c) }
    }

    /// Whether an entry is a leaf (else a block index).
    #[inline(always)]
    pub fn is_leaf(entry: u32) -> bool {
        entry & CELL_LEAF != 0
    }

    /// Cell `c`'s entry (a block index or `CELL_LEAF | leaf code`), for
    /// `walk_from`.
    ///
    /// # Safety
    /// As `cell_max_at`.
    #[inline(always)]
    pub unsafe fn entry_at(&self, c: usize) -> u32 {
        debug_assert!(c < self.cells.len());
        // SAFETY: the caller's
        unsafe { *self.cells.get_unchecked(c) }
    }

    /// `walk` from a cell entry.
    #[inline(always)]
    pub fn walk_from(&self, mut at: u32, vals: &Vals) -> u32 {
        while at & CELL_LEAF == 0 {
            at = self.step(at, vals);
        }
        self.leaf_score(at, vals)
    }

    /// The score of record `rec` if a key with values `vals` is in all its
    /// ranges, else 0.
    #[inline(always)]
    fn check(&self, rec: u32, vals: &Vals) -> u32 {
        debug_assert!((rec as usize) < self.scores.len());
        // SAFETY: `rec` is a record index from `compile` (<= n_rules), each
        // record holds `rec_len >= 2 cdims.len()` u32, and check dimensions
        // are < MAX_DIMS < vals.len().
        unsafe {
            let r = (self.checks.as_ptr() as *const u32).add(rec as usize * self.rec_len);
            let mut ok = true;
            for (i, &d) in self.cdims.iter().enumerate() {
                let v = *vals.get_unchecked(usize::from(d));
                ok &= (*r.add(2 * i) <= v) & (v <= *r.add(2 * i + 1));
            }
            // a conditional move: the outcome is as often a miss as a hit
            std::hint::select_unpredictable(ok, *self.scores.get_unchecked(rec as usize), 0)
        }
    }

    /// The score a leaf entry gives a key with values `vals`.
    #[inline(always)]
    pub fn leaf_score(&self, at: u32, vals: &Vals) -> u32 {
        let code = at & !CELL_LEAF;
        if code & LIST_CODE == 0 {
            return self.check(code, vals);
        }
        let at = (code & !LIST_CODE) as usize * self.list_len;
        self.leaf_lists[at..at + self.list_len].iter().map(|&r| self.check(r, vals)).max().unwrap_or(0)
    }

    /// Score of the tree's best rule.
    #[inline(always)]
    pub fn max_score(&self) -> u32 {
        self.max_score
    }
    /// Size of the lookup form (cells, blocks, leaf lists, check records
    /// and scores) in 16-byte units.
    pub fn n_nodes(&self) -> usize {
        let bytes = self.blocks.len() * std::mem::size_of::<Block>()
            + (self.cells.len() + self.cell_max.len() + self.leaf_lists.len() + self.scores.len()) * 4
            + self.checks.len() * std::mem::size_of::<Line>();
        bytes.div_ceil(16)
    }
    /// Rules the tree holds.
    pub fn n_rules(&self) -> usize {
        self.n_rules
    }
    pub fn n_dims(&self) -> usize {
        self.dims.len()
    }
}

/// The AVX-512 form of a walk (x86-64 with AVX-512F, detected at run time
/// by `fast.rs`): a key's dimension values sit in one 512-bit register
/// (`Vals` is 16 u32), so a block's seven comparisons are one permute (each
/// slot's dimension) and one masked unsigned compare against its
/// thresholds, and a candidate rule's range check is a permute (each value
/// twice, lanes 2i and 2i + 1 facing the record's lo and hi of check
/// dimension i) and two masked compares against its 32- or 64-byte record.
/// Same answers as the scalar walk, from the same tables.
#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    impl Tree {
        /// Whether this tree can be walked with AVX-512 (at most 8 check
        /// dimensions, so a record fills at most one 512-bit register).
        pub fn simd_ok(&self) -> bool {
            self.cdims.len() <= 8 && self.fast_cut.is_some()
        }

        /// The root cut as four lanes (dimension, shift, mask, position),
        /// unused parts reading the always-zero lane 15.
        pub fn cut_lanes(&self) -> Option<[[u32; 4]; FAST_CUT]> {
            let f = self.fast_cut?;
            Some(f.map(|(d, shift, mask, pos)| [u32::from(d), u32::from(shift), mask, u32::from(pos)]))
        }

        /// Three binary levels of block `at` for a key with values `v`: the
        /// entry they lead to.
        #[target_feature(enable = "avx512f")]
        #[inline]
        pub fn step_x(&self, at: u32, v: __m512i) -> u32 {
            debug_assert!((at as usize) < self.blocks.len());
            // SAFETY: `at` is a block index written by `compile`; a Block is
            // 64 bytes: thr[7], child_base, then dims[7] at byte 32.
            unsafe {
                let b = self.blocks.get_unchecked(at as usize);
                let p = b as *const Block as *const u8;
                let thr = _mm512_load_si512(p as *const _);
                let idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(p.add(32) as *const __m128i));
                let m = _mm512_mask_cmpge_epu32_mask(0x7f, _mm512_permutexvar_epi32(idx, v), thr) as usize;
                Self::exit(b, usize::from(*EXIT.get_unchecked(m)))
            }
        }

        /// `check` for a key with values `v`.
        #[target_feature(enable = "avx512f")]
        #[inline]
        fn check_x(&self, rec: u32, v: __m512i) -> u32 {
            debug_assert!((rec as usize) < self.scores.len() && self.cdims.len() <= 8);
            // SAFETY: `rec` <= n_rules; a record starts at a multiple of
            // its length (32 bytes, or whole lines), `simd_ok`.
            unsafe {
                let both = ((1u32 << (2 * self.cdims.len())) - 1) as u16;
                let dup = _mm512_permutexvar_epi32(_mm512_loadu_si512(self.dup_idx.as_ptr() as *const _), v);
                let p = (self.checks.as_ptr() as *const u32).add(rec as usize * self.rec_len);
                let r = if self.rec_len == 8 { _mm512_castsi256_si512(_mm256_load_si256(p as *const __m256i)) } else { _mm512_load_si512(p as *const _) };
                let lo = _mm512_mask_cmpge_epu32_mask(both & 0x5555, dup, r);
                let hi = _mm512_mask_cmple_epu32_mask(both & 0xaaaa, dup, r);
                // a conditional move: the outcome is as often a miss as a hit
                std::hint::select_unpredictable(lo | hi == both, *self.scores.get_unchecked(rec as usize), 0)
            }
        }

        /// The score a leaf entry gives a key with values `v`.
        #[target_feature(enable = "avx512f")]
        #[inline]
        pub fn leaf_score_x(&self, at: u32, v: __m512i) -> u32 {
            let code = at & !CELL_LEAF;
            if code & LIST_CODE == 0 {
                return self.check_x(code, v);
            }
            let at = (code & !LIST_CODE) as usize * self.list_len;
            let mut best = 0;
            for &r in &self.leaf_lists[at..at + self.list_len] {
                best = best.max(self.check_x(r, v));
            }
            best
        }
    }
}
