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
//! are shadowed there and dropped. A leaf is either resolved (the best rule
//! covering the whole region, or none: no rule check) or, when a single
//! candidate is left, that rule's ranges are checked (one cache line holding
//! ranges and answer, cheaper than the nodes that would separate its edges).
//! Binary nodes are stored three levels to a 64-byte block with u32
//! thresholds and implicit child positions. When fully resolving would exceed
//! the node budget, the tree is rebuilt with list leaves (up to `LIST_LEAF`
//! candidates); if that too is over budget the subtables stay with tuple
//! space search. Dimensions on which all rules agree are checked once, up
//! front (`guard`). "Best" is the classifier's order: higher priority, then
//! lower `rank` (subtable position), as tuple space search resolves ties.
//! State: cells (+ best priority per cell), blocks, per-rule check records.
//! Cost: build O(nodes x rules-per-node x dims log); lookup = one cell, a few
//! blocks (7 comparisons each, no dependent loads inside), at most one check.

use super::dims::{Dim, MAX_DIMS};
use super::RuleId;
use crate::field::{Key, KEY_WORDS};

/// Most index bits of the root cut (cells table of 4 + 2 bytes each).
const CUT_BITS: u32 = 16;
/// Rule copies (rule x cells it is listed in) the root cut may make, per rule.
const CUT_COPIES: usize = 16;
/// A cell holding a leaf code rather than a block index.
const CELL_LEAF: u32 = 1 << 31;
/// An entry for keys that fail the guard: the leaf "no rule".
pub(super) const NO_ENTRY: u32 = CELL_LEAF;
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

impl Block {
    #[inline(always)]
    fn leaf(&self, e: usize) -> u32 {
        u32::from(self.leaves[3 * e]) | u32::from(self.leaves[3 * e + 1]) << 8 | u32::from(self.leaves[3 * e + 2]) << 16
    }
}

/// Leaf code (24 bits): 0 no rule; `1 + order` the rule; `ONE_CODE |
/// order` one candidate rule to check; `LIST_CODE | i` the candidates
/// `lists[list_leaves[i]]`.
const LIST_CODE: u32 = 1 << 23;
const ONE_CODE: u32 = 1 << 22;
/// Most rules a tree holds (leaf codes must fit).
const MAX_TREE_RULES: usize = (ONE_CODE - 2) as usize;
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
    pub priority: u16,
    pub id: RuleId,
    pub rank: u32,
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
    /// (start, length) in `lists` of each list leaf.
    list_leaves: Vec<(u32, u32)>,
    /// (priority, id, rank) by order (best first).
    answers: Vec<(u16, RuleId, u32)>,
    /// Ranges of every rule by order, `dims.len()` per rule (building).
    ranges: Vec<(u64, u64)>,
    /// Per rule, for checking list leaves: its ranges as u32 (lo, hi) pairs,
    /// then [priority, id] and [rank, 0]; `stride` pairs per rule (8, one
    /// cache line, up to 6 dimensions).
    checks: Vec<[u32; 2]>,
    stride: usize,
    /// Per cell, the best priority of its rules (lookups that already hold
    /// a better answer skip the cell).
    cell_max: Vec<u16>,
    lists: Vec<u32>,
    pub max_depth: u32,
    max_prio: u16,
}

impl Tree {
    /// Build over `rules` (any order) with dimensions `dims`; None when the
    /// tree would exceed `budget` nodes even with list leaves.
    pub fn build(mut rules: Vec<TreeRule>, dims: &[Dim], budget: usize) -> Option<Tree> {
        rules.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.rank.cmp(&b.rank)));
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
        let ranges: Vec<(u64, u64)> = all.into_iter().flatten().collect();
        let answers = rules.iter().map(|r| (r.priority, r.id, r.rank)).collect();
        let mut t = Tree { dims: dims.to_vec(), guard_words, nodes: Vec::new(), blocks: Vec::new(), cut: Vec::new(), fast_cut: None, cells: Vec::new(), list_leaves: Vec::new(), answers, checks: Vec::new(), stride: (dims.len() + 2).div_ceil(8) * 8, cell_max: Vec::new(), ranges, lists: Vec::new(), max_depth: 0, max_prio: rules.first().map_or(0, |r| r.priority) };
        if t.answers.len() > MAX_TREE_RULES {
            return None;
        }
        t.checks = vec![[0; 2]; t.answers.len() * t.stride];
        for o in 0..t.answers.len() {
            let rec = o * t.stride;
            for d in 0..dims.len() {
                let (lo, hi) = t.range(o as u32, d);
                t.checks[rec + d] = [lo as u32, hi as u32];
            }
            let (p, id, rank) = t.answers[o];
            t.checks[rec + dims.len()] = [u32::from(p), id];
            t.checks[rec + dims.len() + 1] = [rank, 0];
        }
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
        let n = self.answers.len();
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
        for o in 0..self.answers.len() as u32 {
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
        self.list_leaves.clear();
        self.cells.clear();
        self.cell_max = cells.iter().map(|r| r.first().map_or(0, |&o| self.answers[o as usize].0)).collect();
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
            match self.grow(region, rules.clone(), list, budget) {
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

    fn leaf(&mut self, at: u32, thr: u64) {
        self.nodes[at as usize] = Node { thr, child: at, dim: ZERO as u32 };
    }

    /// Grow the binary tree of one region (`list`: stop at that many
    /// candidates); its root, or None if the node budget ran out.
    fn grow(&mut self, region: Vec<(u64, u64)>, rules: Vec<u32>, list: Option<usize>, budget: usize) -> Option<u32> {
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
                self.leaf(at, 1 + u64::from(u32::MAX));
                continue;
            }
            if self.covers(rules[0], &region) {
                self.leaf(at, 1 + u64::from(rules[0]));
                continue;
            }
            if rules.len() <= list.unwrap_or(SMALL_LIST) {
                let start = self.lists.len() as u64;
                self.lists.extend_from_slice(&rules);
                self.leaf(at, LIST_BIT | (start << 8) | rules.len() as u64);
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

    /// Key words the guard reads.
    pub fn guard_words(&self) -> impl Iterator<Item = usize> + '_ {
        self.guard_words.iter().map(|g| g.0 as usize)
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
        if thr & LIST_BIT != 0 && thr & 0xff == 1 {
            return ONE_CODE | self.lists[((thr & !LIST_BIT) >> 8) as usize];
        }
        if thr & LIST_BIT != 0 {
            let start = ((thr & !LIST_BIT) >> 8) as u32;
            self.list_leaves.push((start, (thr & 0xff) as u32));
            return LIST_CODE | (self.list_leaves.len() - 1) as u32;
        }
        let ord = thr - 1;
        if ord >= u64::from(u32::MAX) {
            0
        } else {
            ord as u32 + 1
        }
    }

    /// Three binary levels of block `at`: Ok(next block) or Err(leaf code).
    #[inline(always)]
    fn step(&self, at: u32, vals: &Vals) -> Result<u32, u32> {
        debug_assert!((at as usize) < self.blocks.len());
        // SAFETY: `at` is a block index written by `compile`, every `dim`
        // entry is <= ZERO < vals.len(), and leaf indices come from `compile`.
        unsafe {
            let b = self.blocks.get_unchecked(at as usize);
            // all seven comparisons at once (no chain of dependent loads),
            // then the exit their outcomes lead to
            let mut m = 0usize;
            for p in 0..7 {
                m |= usize::from(*vals.get_unchecked(usize::from(*b.dims.get_unchecked(p))) >= *b.thr.get_unchecked(p)) << p;
            }
            let e = usize::from(EXIT[m]);
            if (b.leaf_mask >> e) & 1 != 0 {
                Err(b.leaf(e))
            } else {
                Ok(b.child_base + e as u32 - u32::from(RANK[b.leaf_mask as usize][e]))
            }
        }
    }

    /// The best tree rule for a key with values `vals`: (priority, id,
    /// rank); None also when the key's cell has nothing at or above `floor`.
    #[inline(always)]
    pub fn walk(&self, vals: &Vals, floor: i32) -> Option<(u16, RuleId, u32)> {
        let cell = self.cell(vals);
        debug_assert!(cell < self.cells.len() && cell < self.cell_max.len());
        // SAFETY: a cell index has the cut's total bits; both arrays have
        // 1 << that many entries.
        let (max, at) = unsafe { (*self.cell_max.get_unchecked(cell), *self.cells.get_unchecked(cell)) };
        if i32::from(max) < floor {
            return None;
        }
        self.walk_from(at, vals)
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

    /// Cell `c`'s entry (a block index or `CELL_LEAF | leaf code`), for
    /// `walk_from`.
    #[inline(always)]
    pub fn entry_at(&self, c: usize) -> u32 {
        self.cells[c]
    }

    /// Start loading what `walk_from(entry, ..)` reads first.
    #[inline(always)]
    pub fn prefetch_entry(&self, entry: u32) {
        if entry & CELL_LEAF != 0 {
            self.prefetch_answer(entry & !CELL_LEAF);
        } else {
            super::lookup::prefetch(&self.blocks[entry as usize]);
        }
    }

    /// `walk` from a cell entry (no floor).
    #[inline(always)]
    pub fn walk_from(&self, mut at: u32, vals: &Vals) -> Option<(u16, RuleId, u32)> {
        if at & CELL_LEAF != 0 {
            return self.answer(at & !CELL_LEAF, vals);
        }
        loop {
            match self.step(at, vals) {
                Ok(next) => at = next,
                Err(leaf) => return self.answer(leaf, vals),
            }
        }
    }


    /// Start loading what `answer` will read for leaf `code`.
    #[inline(always)]
    fn prefetch_answer(&self, code: u32) {
        if code & (LIST_CODE | ONE_CODE) == 0 {
            if code != 0 {
                super::lookup::prefetch(&self.answers[code as usize - 1]);
            }
        } else if code & LIST_CODE == 0 {
            super::lookup::prefetch(&self.checks[(code & !ONE_CODE) as usize * self.stride]);
        } else {
            let (start, _) = self.list_leaves[(code & !LIST_CODE) as usize];
            let ord = self.lists[start as usize] as usize;
            super::lookup::prefetch(&self.checks[ord * self.stride]);
        }
    }

    /// Rule `ord` if a key with values `vals` is in all its ranges.
    #[inline(always)]
    fn check(&self, ord: u32, vals: &Vals) -> Option<(u16, RuleId, u32)> {
        let nd = self.dims.len();
        debug_assert!((ord as usize + 1) * self.stride <= self.checks.len());
        // SAFETY: `ord` is a rule order from `compile` (< answers.len()), each
        // record holds `stride >= nd + 2` pairs, and nd <= MAX_DIMS < vals.len().
        unsafe {
            let rec = self.checks.as_ptr().add(ord as usize * self.stride);
            let mut ok = true;
            for d in 0..nd {
                let [lo, hi] = *rec.add(d);
                let v = *vals.get_unchecked(d);
                ok &= lo <= v && v <= hi;
            }
            let [p, id] = *rec.add(nd);
            ok.then(|| (p as u16, id, (*rec.add(nd + 1))[0]))
        }
    }

    #[inline(always)]
    fn answer(&self, code: u32, vals: &Vals) -> Option<(u16, RuleId, u32)> {
        if code & (LIST_CODE | ONE_CODE) == 0 {
            return (code != 0).then(|| self.answers[code as usize - 1]);
        }
        if code & LIST_CODE == 0 {
            return self.check(code & !ONE_CODE, vals);
        }
        let (start, len) = self.list_leaves[(code & !LIST_CODE) as usize];
        self.lists[start as usize..(start + len) as usize].iter().find_map(|&ord| self.check(ord, vals))
    }

    /// Priority of the tree's best rule.
    #[inline(always)]
    pub fn max_priority(&self) -> u16 {
        self.max_prio
    }
    /// Size of the lookup form in 16-byte units (binary-node equivalents).
    pub fn n_nodes(&self) -> usize {
        (self.blocks.len() * std::mem::size_of::<Block>() + self.cells.len() * 4) / 16
    }
    /// Rules the tree holds.
    pub fn n_rules(&self) -> usize {
        self.answers.len()
    }
    pub fn n_dims(&self) -> usize {
        self.dims.len()
    }
}

/// The AVX-512 form of a walk (x86-64 with AVX-512F/BW, detected at run
/// time by `fast.rs`): a key's dimension values sit in one 512-bit register
/// (`Vals` is 16 u32), so a block's seven comparisons are one permute (each
/// slot's dimension) and one masked unsigned compare against its
/// thresholds, and a candidate rule's range check is two masked compares
/// against its 64-byte check record (`dup` holds each value twice, lanes
/// 2d and 2d + 1, facing the record's lo and hi). Same answers as the
/// scalar walk, from the same tables.
#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    /// A key for the AVX-512 walk: its values, and each value twice.
    #[derive(Clone, Copy)]
    pub struct Lanes {
        pub v: __m512i,
        pub dup: __m512i,
        /// Lanes of the check record compared: lo lanes (even) and hi
        /// lanes (odd) of the tree's dimensions.
        pub lo_mask: u16,
        pub hi_mask: u16,
    }

    impl Lanes {
        /// From the values as a register (lane d = dimension d, lanes
        /// from `n_dims` on 0).
        ///
        /// # Safety
        /// The CPU must have AVX-512F.
        #[target_feature(enable = "avx512f")]
        #[inline]
        pub unsafe fn of(v: __m512i, n_dims: usize) -> Lanes {
            let dup = _mm512_permutexvar_epi32(_mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0), v);
            let both = ((1u32 << (2 * n_dims.min(8))) - 1) as u16;
            Lanes { v, dup, lo_mask: both & 0x5555, hi_mask: both & 0xaaaa }
        }
    }

    impl Tree {
        /// Whether this tree can be walked with `Lanes` (at most 8
        /// dimensions, so a rule's ranges fill at most 16 lanes).
        pub fn simd_ok(&self) -> bool {
            self.dims.len() <= 8 && self.fast_cut.is_some()
        }

        /// The root cut as four lanes (dimension, shift, mask, position),
        /// unused parts reading the always-zero lane 15.
        pub fn cut_lanes(&self) -> Option<[[u32; 4]; FAST_CUT]> {
            let f = self.fast_cut?;
            Some(f.map(|(d, shift, mask, pos)| [u32::from(d), u32::from(shift), mask, u32::from(pos)]))
        }

        #[target_feature(enable = "avx512f")]
        #[inline]
        fn step_x(&self, at: u32, k: &Lanes) -> Result<u32, u32> {
            debug_assert!((at as usize) < self.blocks.len());
            // SAFETY: `at` is a block index written by `compile`; a Block is
            // 64 bytes: thr[7], child_base, then dims[7] at byte 32.
            unsafe {
                let b = self.blocks.get_unchecked(at as usize);
                let p = b as *const Block as *const u8;
                let thr = _mm512_load_si512(p as *const _);
                let idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(p.add(32) as *const __m128i));
                let m = _mm512_mask_cmpge_epu32_mask(0x7f, _mm512_permutexvar_epi32(idx, k.v), thr) as usize;
                let e = usize::from(*EXIT.get_unchecked(m));
                if (b.leaf_mask >> e) & 1 != 0 {
                    Err(b.leaf(e))
                } else {
                    Ok(b.child_base + e as u32 - u32::from(RANK[b.leaf_mask as usize][e]))
                }
            }
        }

        #[target_feature(enable = "avx512f")]
        #[inline]
        fn check_x(&self, ord: u32, k: &Lanes) -> Option<(u16, RuleId, u32)> {
            debug_assert!((ord as usize + 1) * self.stride <= self.checks.len() && self.stride >= 8);
            // SAFETY: `ord` < answers.len(); each record is `stride >= 8`
            // pairs (16 u32) long.
            unsafe {
                let rec = self.checks.as_ptr().add(ord as usize * self.stride);
                let r = _mm512_loadu_si512(rec as *const _);
                let lo = _mm512_mask_cmpge_epu32_mask(k.lo_mask, k.dup, r);
                let hi = _mm512_mask_cmple_epu32_mask(k.hi_mask, k.dup, r);
                if lo | hi != k.lo_mask | k.hi_mask {
                    return None;
                }
                let nd = self.dims.len();
                let [p, id] = *rec.add(nd);
                Some((p as u16, id, (*rec.add(nd + 1))[0]))
            }
        }

        #[target_feature(enable = "avx512f")]
        #[inline]
        fn answer_x(&self, code: u32, k: &Lanes) -> Option<(u16, RuleId, u32)> {
            if code & (LIST_CODE | ONE_CODE) == 0 {
                // SAFETY: a plain leaf code is 0 or 1 + a rule order
                return (code != 0).then(|| unsafe { *self.answers.get_unchecked(code as usize - 1) });
            }
            if code & LIST_CODE == 0 {
                return self.check_x(code & !ONE_CODE, k);
            }
            let (start, len) = self.list_leaves[(code & !LIST_CODE) as usize];
            for &ord in &self.lists[start as usize..(start + len) as usize] {
                if let Some(a) = self.check_x(ord, k) {
                    return Some(a);
                }
            }
            None
        }

        /// `walk_from` with `Lanes`.
        #[target_feature(enable = "avx512f")]
        #[inline]
        pub fn walk_from_x(&self, mut at: u32, k: &Lanes) -> Option<(u16, RuleId, u32)> {
            if at & CELL_LEAF != 0 {
                return self.answer_x(at & !CELL_LEAF, k);
            }
            loop {
                match self.step_x(at, k) {
                    Ok(next) => at = next,
                    Err(leaf) => return self.answer_x(leaf, k),
                }
            }
        }

        /// `walk` from cell `c` with `Lanes`: None also when the cell has
        /// nothing at or above `floor`.
        #[target_feature(enable = "avx512f")]
        #[inline]
        pub fn walk_cell_x(&self, c: usize, k: &Lanes, floor: i32) -> Option<(u16, RuleId, u32)> {
            debug_assert!(c < self.cells.len() && c < self.cell_max.len());
            // SAFETY: `c` is a cell index computed from this tree's cut.
            let (max, at) = unsafe { (*self.cell_max.get_unchecked(c), *self.cells.get_unchecked(c)) };
            if i32::from(max) < floor {
                return None;
            }
            self.walk_from_x(at, k)
        }
    }
}
