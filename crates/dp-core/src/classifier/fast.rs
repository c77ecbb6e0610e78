//! The classifier's fast path: decision trees (`tree.rs`) over the subtables
//! whose masks fit the key dimensions (`dims.rs`), tuple space search over
//! the rest, combined in the classifier's order (priority, then subtable
//! position). Rules are split EffiCuts-style into up to four trees by which
//! wide dimensions (e.g. IPv4 source / destination) they wildcard, so rules
//! wildcarding the source do not multiply with those wildcarding the
//! destination; trees are walked best first and skipped (whole, or per cell)
//! when they cannot beat the answer in hand.
//! Built on the first lookup once enough lookups have been made since the
//! last change (`Classifier::set_tree_policy`); `changed()` drops it.
//! On a CPU with AVX-512F (detected at run time; `Classifier::set_simd`
//! turns it off) batches of keys with at most 8 dimensions and 4 trees take
//! the AVX-512 walk (`tree.rs`, `x86`): values and every tree's cell in a few
//! vector instructions, a block's seven comparisons in one; same answers.
//! State: key dimensions, trees, remainder subtables (and the AVX-512
//! walk's lane tables). Cost: see `tree.rs`; a batch pipelines the best
//! tree's cell and first node / rule loads.

use super::dims::{segment, Dim, MAX_DIMS};
use super::tree::{Tree, TreeRule, Vals, NO_ENTRY};
use super::*;
use std::sync::atomic::Ordering;

/// Node budget per tree rule (and the floor / ceiling of the budget).
const NODES_PER_RULE: usize = 96;
const MIN_NODES: usize = 1 << 12;
const MAX_NODES: usize = 1 << 22;
/// Wide dimensions (more than 16 bits) that split the rules into trees.
const PARTITION_DIMS: usize = 2;

pub(super) struct Fast {
    /// The key dimensions all trees compare.
    dims: Vec<Dim>,
    /// First and last key word a lookup reads (dimensions and guards).
    first_word: usize,
    last_word: usize,
    /// Highest priority first.
    trees: Vec<Tree>,
    /// Subtables left to tuple space search, ascending (= priority order).
    remainder: Vec<u32>,
    /// The AVX-512 lookup's tables, when the CPU has AVX-512 and the trees
    /// fit it (`x86.rs` in `tree.rs`).
    #[cfg(target_arch = "x86_64")]
    x: Option<XCuts>,
}

/// Every tree's root cut as one 512-bit computation: lane 4t + i is part i
/// of tree t's cut (dimension, shift, mask, position in the cell index);
/// per tree, whether its guard is the first tree's (checked once).
#[cfg(target_arch = "x86_64")]
struct XCuts {
    dim: [u32; 16],
    shift: [u32; 16],
    mask: [u32; 16],
    pos: [u32; 16],
    same_guard: Vec<bool>,
    /// Value extraction: the key words from `word0` on as one 512-bit load;
    /// lane d takes word `vword[d]` of it, shifts right by `vshift[d]` and
    /// masks with `vmask[d]` (lanes from the last dimension on: mask 0).
    word0: usize,
    vword: [i64; 8],
    vshift: [i64; 8],
    vmask: [i64; 8],
}

/// Most trees the AVX-512 lookup handles (four cut lanes each).
#[cfg(target_arch = "x86_64")]
const X_TREES: usize = 4;

#[cfg(target_arch = "x86_64")]
fn x_cuts(trees: &[Tree], dims: &[Dim]) -> Option<XCuts> {
    if !(std::arch::is_x86_feature_detected!("avx512f") && trees.len() <= X_TREES && dims.len() <= 8 && trees.iter().all(|t| t.simd_ok())) {
        return None;
    }
    let word0 = dims.iter().map(|d| usize::from(d.word)).min()?.min(KEY_WORDS - 8);
    if dims.iter().any(|d| usize::from(d.word) >= word0 + 8) {
        return None;
    }
    let mut x = XCuts { dim: [MAX_DIMS as u32; 16], shift: [0; 16], mask: [0; 16], pos: [0; 16], same_guard: Vec::new(), word0, vword: [0; 8], vshift: [0; 8], vmask: [0; 8] };
    for (i, d) in dims.iter().enumerate() {
        (x.vword[i], x.vshift[i], x.vmask[i]) = ((usize::from(d.word) - word0) as i64, i64::from(d.shift), d.mask as i64);
    }
    for (t, tree) in trees.iter().enumerate() {
        for (i, [d, shift, mask, pos]) in tree.cut_lanes()?.into_iter().enumerate() {
            let lane = 4 * t + i;
            (x.dim[lane], x.shift[lane], x.mask[lane], x.pos[lane]) = (d, shift, mask, pos);
        }
        x.same_guard.push(tree.guard_words_eq(&trees[0]));
    }
    Some(x)
}

impl Fast {
    pub fn stats(&self) -> (usize, usize, u32, usize) {
        let nodes = self.trees.iter().map(|t| t.n_nodes()).sum();
        let dims = self.trees.iter().map(|t| t.n_dims()).max().unwrap_or(0);
        let depth = self.trees.iter().map(|t| t.max_depth).max().unwrap_or(0);
        (nodes, dims, depth, self.remainder.len())
    }
    pub fn simd(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return self.x.is_some();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }
    pub fn n_rules(&self) -> usize {
        self.trees.iter().map(|t| t.n_rules()).sum()
    }
    /// `key`'s value on every dimension (slot `MAX_DIMS` stays 0).
    #[inline(always)]
    fn values(&self, key: &Key, vals: &mut Vals) {
        for (d, dim) in self.dims.iter().enumerate() {
            // SAFETY: a dimension's word is < KEY_WORDS (from `segment`), and
            // d < dims.len() <= MAX_DIMS < vals.len().
            unsafe { *vals.get_unchecked_mut(d) = ((*key.get_unchecked(dim.word as usize) >> dim.shift) & dim.mask) as u32 };
        }
    }
}

/// The better of two answers (priority, id, subtable position) in the
/// classifier's order: higher priority, then earlier subtable.
#[inline(always)]
fn better(a: Option<(u16, RuleId, u32)>, b: Option<(u16, RuleId, u32)>) -> Option<(u16, RuleId, u32)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 > x.0 || (y.0 == x.0 && y.2 < x.2) { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Number of places where a mask switches between 0 and 1 (its "shape").
fn cuts(mask: &Key) -> u32 {
    mask.iter().map(|&m| ((m ^ (m << 1)) & !1).count_ones()).sum()
}

impl Classifier {
    /// The fast path, building it when due; `n`: lookups about to be made.
    #[inline(always)]
    pub(super) fn fast(&self, n: usize) -> Option<&Fast> {
        match self.fast.get() {
            Some(f) => f.as_deref(),
            None => self.fast_when_due(n),
        }
    }

    #[cold]
    fn fast_when_due(&self, n: usize) -> Option<&Fast> {
        let (per_rule, min) = self.tree_after;
        if per_rule == u64::MAX || self.n_rules == 0 {
            return None;
        }
        let seen = self.lookups_since_change.load(Ordering::Relaxed) + n as u64;
        self.lookups_since_change.store(seen, Ordering::Relaxed);
        if seen < per_rule.saturating_mul(self.n_rules as u64).saturating_add(min) {
            return None;
        }
        self.fast.get_or_init(|| self.build_fast()).as_deref()
    }

    /// Tree over as many subtables as fit `MAX_DIMS` dimensions (simplest
    /// masks first); None if there is no such tree within the node budget.
    fn build_fast(&self) -> Option<Box<Fast>> {
        let masks: Vec<Key> = self.subtables.iter().map(|st| st.mask).collect();
        let mut in_tree = vec![true; masks.len()];
        let mut dims = segment(&masks);
        if dims.len() > MAX_DIMS {
            let mut by_shape: Vec<usize> = (0..masks.len()).collect();
            by_shape.sort_by_key(|&i| cuts(&masks[i]));
            let mut chosen: Vec<Key> = Vec::new();
            in_tree = vec![false; masks.len()];
            for i in by_shape {
                chosen.push(masks[i]);
                let d = segment(&chosen);
                if d.len() <= MAX_DIMS {
                    in_tree[i] = true;
                    dims = d;
                } else {
                    chosen.pop();
                }
            }
        }
        // EffiCuts-style partition: one tree per combination of "wide"
        // (more than half the values) on the wide dimensions, so rules that
        // wildcard the source address do not multiply with those that
        // wildcard the destination. Wideness depends on the mask only, so a
        // subtable's rules all land in the same tree.
        let mut wide_dims: Vec<usize> = (0..dims.len()).filter(|&d| dims[d].mask.count_ones() > 16).collect();
        wide_dims.truncate(PARTITION_DIMS);
        let group_of = |mask: &Key| -> usize {
            wide_dims.iter().enumerate().map(|(b, &d)| usize::from(dims[d].get(mask).leading_zeros() > 64 - dims[d].mask.count_ones()) << b).sum()
        };
        let mut groups: Vec<Vec<TreeRule>> = (0..1 << wide_dims.len()).map(|_| Vec::new()).collect();
        let mut group_subtables: Vec<Vec<u32>> = vec![Vec::new(); groups.len()];
        // Range rules whose ranged fields are whole dimensions go in as one
        // tree rule each (rank: the first subtable holding one of their
        // pieces); the others as their pieces, like any rule.
        let mut native: HashMap<RuleId, usize> = HashMap::new();
        for (id, r) in &self.ranged {
            let dims_of: Option<Vec<usize>> = r.ranges.iter().map(|g| dims.iter().position(|d| d.word as usize == g.word && u32::from(d.shift) == g.shift && d.mask == (1u64 << g.bits) - 1)).collect();
            let Some(dims_of) = dims_of else { continue };
            let subs: Vec<usize> = r.pieces.iter().filter_map(|(_, m)| self.by_mask.get(m).copied()).collect();
            if subs.len() != r.pieces.len() || !subs.iter().all(|&i| in_tree[i]) {
                continue;
            }
            let rank = *subs.iter().min().expect("a range rule has pieces");
            let g = group_of(&r.mask);
            if subs.iter().any(|m| group_of(&self.subtables[*m].mask) != g) {
                continue;
            }
            native.insert(*id, g);
            let ranges = dims_of.iter().zip(&r.ranges).map(|(&d, g)| (d, g.lo, g.hi)).collect();
            groups[g].push(TreeRule { priority: r.priority, id: *id, rank: rank as u32, value: r.value, mask: r.mask, ranges });
        }
        for (idx, st) in self.subtables.iter().enumerate().filter(|&(i, _)| in_tree[i]) {
            let g = group_of(&st.mask);
            group_subtables[g].push(idx as u32);
            for ent in st.entries.iter().filter(|e| !e.rules.is_empty()) {
                if native.contains_key(&ent.top.1) {
                    continue;
                }
                groups[g].push(TreeRule { priority: ent.top.0, id: ent.top.1, rank: idx as u32, value: ent.key, mask: st.mask, ranges: Vec::new() });
            }
        }
        let mut trees = Vec::new();
        let mut left = MAX_NODES;
        for (g, rules) in groups.into_iter().enumerate() {
            if rules.is_empty() {
                continue;
            }
            let budget = (rules.len() * NODES_PER_RULE).clamp(MIN_NODES, left.max(MIN_NODES));
            #[cfg(test)]
            let budget = self.test_node_budget.unwrap_or(budget);
            match Tree::build(rules, &dims, budget) {
                Some(t) => {
                    left = left.saturating_sub(t.n_nodes());
                    trees.push(t);
                }
                None => {
                    for &i in &group_subtables[g] {
                        in_tree[i as usize] = false;
                    }
                }
            }
        }
        if trees.is_empty() {
            return None;
        }
        trees.sort_by_key(|t| std::cmp::Reverse(t.max_priority()));
        let remainder = (0..masks.len()).filter(|&i| !in_tree[i]).map(|i| i as u32).collect();
        let words = || dims.iter().map(|d| d.word as usize).chain(trees.iter().flat_map(|t| t.guard_words()));
        let (first_word, last_word) = (words().min().unwrap_or(0), words().max().unwrap_or(0));
        #[cfg(target_arch = "x86_64")]
        let x = if self.simd { x_cuts(&trees, &dims) } else { None };
        Some(Box::new(Fast {
            dims,
            first_word,
            last_word,
            trees,
            remainder,
            #[cfg(target_arch = "x86_64")]
            x,
        }))
    }

    /// One key through the fast path.
    #[inline(always)]
    pub(super) fn lookup_fast(&self, f: &Fast, key: &Key) -> Option<(u16, RuleId)> {
        let mut vals: Vals = [0; MAX_DIMS + 1];
        f.values(key, &mut vals);
        let mut best: Option<(u16, RuleId, u32)> = None;
        for t in &f.trees {
            if best.is_some_and(|b| b.0 > t.max_priority()) {
                break;
            }
            if t.guard(key) {
                best = better(best, t.walk(&vals, best.map_or(-1, |b| i32::from(b.0))));
            }
        }
        self.with_remainder(f, key, best)
    }

    /// A batch through the fast path, software-pipelined so that each key's
    /// memory accesses start ahead of use: at step i + 2A its values are
    /// extracted and the best tree's cell prefetched; at i + A that cell is
    /// read and what it points to (block or rule) prefetched; at i the walks
    /// run, best tree first, skipping trees and cells that cannot beat the
    /// answer in hand (the other trees are small and stay cached).
    pub(super) fn lookup_batch_fast(&self, f: &Fast, keys: &[Key], out: &mut [Option<(u16, RuleId)>]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(x) = &f.x {
            // SAFETY: `x` exists only when the CPU has AVX-512F
            return unsafe { self.lookup_batch_x(f, x, keys, out) };
        }
        const A: usize = 8;
        const R: usize = 2 * A;
        let (first, rest) = f.trees.split_first().expect("a fast path has a tree");
        let mut vals: [Vals; R] = [[0; MAX_DIMS + 1]; R];
        let mut cell = [0usize; R];
        let mut entry = [0u32; R];
        let n = keys.len();
        for i in 0..n + R {
            if i >= R {
                let j = i - R;
                let (v, key) = (&vals[j % R], &keys[j]);
                let mut best = first.walk_from(entry[j % R], v);
                for tree in rest {
                    let floor = best.map_or(-1, |b| i32::from(b.0));
                    if floor > i32::from(tree.max_priority()) {
                        break;
                    }
                    if tree.guard(key) {
                        best = better(best, tree.walk(v, floor));
                    }
                }
                out[j] = self.with_remainder(f, key, best);
            }
            if i >= A && i - A < n {
                let j = i - A;
                let e = if first.guard(&keys[j]) { first.entry_at(cell[j % R]) } else { NO_ENTRY };
                first.prefetch_entry(e);
                entry[j % R] = e;
            }
            if i < n {
                if let Some(k) = keys.get(i + R) {
                    super::lookup::prefetch(&k[f.first_word]);
                    super::lookup::prefetch(&k[f.last_word]);
                }
                f.values(&keys[i], &mut vals[i % R]);
                cell[i % R] = first.cell_of(&vals[i % R]);
                first.prefetch_cell_at(cell[i % R]);
            }
        }
    }

    /// `lookup_batch_fast` with AVX-512 (see `tree.rs`, `x86`): the same
    /// pipeline, but every tree's cell is computed at once when the key's
    /// values are extracted, and walks compare a block's seven thresholds
    /// (or a rule's ranges) in one or two instructions.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn lookup_batch_x(&self, f: &Fast, x: &XCuts, keys: &[Key], out: &mut [Option<(u16, RuleId)>]) {
        use super::tree::x86::Lanes;
        use std::arch::x86_64::*;
        const A: usize = 8;
        const R: usize = 2 * A;
        let trees = &f.trees[..];
        let first = &trees[0];
        let nd = f.dims.len();
        // SAFETY (loads): [u32; 16] arrays are 64 bytes
        let (cd, cs, cm, cp) = unsafe {
            (
                _mm512_loadu_si512(x.dim.as_ptr() as *const _),
                _mm512_loadu_si512(x.shift.as_ptr() as *const _),
                _mm512_loadu_si512(x.mask.as_ptr() as *const _),
                _mm512_loadu_si512(x.pos.as_ptr() as *const _),
            )
        };
        // SAFETY (loads): [i64; 8] arrays are 64 bytes
        let (vw, vs, vm) = unsafe {
            (
                _mm512_loadu_si512(x.vword.as_ptr() as *const _),
                _mm512_loadu_si512(x.vshift.as_ptr() as *const _),
                _mm512_loadu_si512(x.vmask.as_ptr() as *const _),
            )
        };
        let mut vals = [_mm512_setzero_si512(); R];
        let mut cells = [[0u32; 16]; R];
        let mut entry = [0u32; R];
        let mut pass = [false; R];
        let n = keys.len();
        for i in 0..n + R {
            if i >= R {
                let j = i - R;
                let s = j % R;
                let key = &keys[j];
                // SAFETY: AVX-512F (this function's precondition)
                let k = unsafe { Lanes::of(vals[s], nd) };
                let mut best = first.walk_from_x(entry[s], &k);
                for (t, tree) in trees.iter().enumerate().skip(1) {
                    let floor = best.map_or(-1, |b| i32::from(b.0));
                    if floor > i32::from(tree.max_priority()) {
                        break;
                    }
                    let g = if x.same_guard[t] { pass[s] } else { tree.guard(key) };
                    if g {
                        best = better(best, tree.walk_cell_x(cells[s][4 * t] as usize, &k, floor));
                    }
                }
                out[j] = self.with_remainder(f, key, best);
            }
            if i >= A && i - A < n {
                let j = i - A;
                let s = j % R;
                pass[s] = first.guard(&keys[j]);
                let e = if pass[s] { first.entry_at(cells[s][0] as usize) } else { NO_ENTRY };
                first.prefetch_entry(e);
                entry[s] = e;
            }
            if i < n {
                if let Some(k) = keys.get(i + R) {
                    super::lookup::prefetch(&k[f.first_word]);
                    super::lookup::prefetch(&k[f.last_word]);
                }
                let s = i % R;
                // the values: eight key words from word0, each dimension's
                // word picked, shifted, masked and narrowed to 32 bits; then
                // every tree's cell: lane 4t + part -> ((v >> shift) & mask)
                // << pos, OR-ed per tree
                // SAFETY: word0 + 8 <= KEY_WORDS (x_cuts); `cells[s]` is 16 u32
                unsafe {
                    let w = _mm512_loadu_si512(keys[i].as_ptr().add(x.word0) as *const _);
                    let w = _mm512_and_si512(_mm512_srlv_epi64(_mm512_permutexvar_epi64(vw, w), vs), vm);
                    let v = _mm512_zextsi256_si512(_mm512_cvtepi64_epi32(w));
                    vals[s] = v;
                    let c = _mm512_sllv_epi32(_mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(cd, v), cs), cm), cp);
                    let c = _mm512_or_si512(c, _mm512_shuffle_epi32::<0xb1>(c));
                    let c = _mm512_or_si512(c, _mm512_shuffle_epi32::<0x4e>(c));
                    _mm512_storeu_si512(cells[s].as_mut_ptr() as *mut _, c);
                }
                first.prefetch_cell_at(cells[s][0] as usize);
            }
        }
    }

    /// Combine the tree's answer `t` (priority, id, subtable position) with
    /// the remainder subtables, in the classifier's order.
    #[inline(always)]
    fn with_remainder(&self, f: &Fast, key: &Key, t: Option<(u16, RuleId, u32)>) -> Option<(u16, RuleId)> {
        if f.remainder.is_empty() {
            return t.map(|(p, id, _)| (p, id));
        }
        let hits: [u64; FILTERS.len()] = std::array::from_fn(|i| self.field_hits(i, key));
        let mut best = t;
        for &idx in &f.remainder {
            let m = &self.meta[idx as usize];
            if let Some((bp, _, br)) = best {
                if m.max_priority < bp || (m.max_priority == bp && idx > br) {
                    break;
                }
            }
            if (hits[0] >> m.bit[0]) & (hits[1] >> m.bit[1]) & 1 == 0 {
                continue;
            }
            let st = &self.subtables[idx as usize];
            let h = st.flat.hash(key, &st.mask);
            if let Some((p, id)) = st.flat.find(key, &st.mask, h) {
                best = better(best, Some((p, id, idx)));
            }
        }
        best.map(|(p, id, _)| (p, id))
    }
}
