//! The classifier's fast path: decision trees (`tree.rs`) over the subtables
//! whose masks fit the key dimensions (`dims.rs`), tuple space search over
//! the rest, combined in the classifier's order (priority, then subtable
//! position). Rules are split EffiCuts-style into up to four trees by which
//! wide dimensions (e.g. IPv4 source / destination) they wildcard, so rules
//! wildcarding the source do not multiply with those wildcarding the
//! destination. Every tree rule gets a score, its place in the classifier's
//! order over all trees (best = highest), so the answer of several trees is
//! the largest score, taken without a branch.
//! Built on the first lookup once enough lookups have been made since the
//! last change (`Classifier::set_tree_policy`); `changed()` drops it.
//! Batches go tree by tree over chunks of keys, level by level, with no
//! branch on a key's data (`batch`): a key skips a tree (or a cell) whose
//! best score its answer in hand beats. On a CPU with AVX-512F (detected at
//! run time; `Classifier::set_simd` turns it off) batches of keys with at
//! most 8 dimensions and 4 trees do it with vector values, cells, block
//! steps and rule checks (`tree.rs`, `x86`); same answers. Single lookups
//! walk the trees best first.
//! State: key dimensions, trees, remainder subtables, the rule of each
//! score (and the AVX-512 walk's lane tables). Cost: see `tree.rs`.

use super::dims::{segment, Dim, MAX_DIMS};
use super::tree::{Tree, TreeRule, Vals};
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
    /// Best score first.
    trees: Vec<Tree>,
    /// Per tree, whether its guard is the first tree's (checked once).
    same_guard: Vec<bool>,
    /// Subtables left to tuple space search, ascending (= priority order).
    remainder: Vec<u32>,
    /// (priority, id, subtable position) of the tree rule with each score
    /// (entry 0: "no rule", unused).
    answers: Vec<(u16, RuleId, u32)>,
    /// The AVX-512 lookup's tables, when the CPU has AVX-512 and the trees
    /// fit it (`x86.rs` in `tree.rs`).
    #[cfg(target_arch = "x86_64")]
    x: Option<XCuts>,
}

/// Every tree's root cut as one 512-bit computation: lane 4t + i is part i
/// of tree t's cut (dimension, shift, mask, position in the cell index).
#[cfg(target_arch = "x86_64")]
struct XCuts {
    dim: [u32; 16],
    shift: [u32; 16],
    mask: [u32; 16],
    pos: [u32; 16],
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
    let mut x = XCuts { dim: [MAX_DIMS as u32; 16], shift: [0; 16], mask: [0; 16], pos: [0; 16], word0, vword: [0; 8], vshift: [0; 8], vmask: [0; 8] };
    for (i, d) in dims.iter().enumerate() {
        (x.vword[i], x.vshift[i], x.vmask[i]) = ((usize::from(d.word) - word0) as i64, i64::from(d.shift), d.mask as i64);
    }
    for (t, tree) in trees.iter().enumerate() {
        for (i, [d, shift, mask, pos]) in tree.cut_lanes()?.into_iter().enumerate() {
            let lane = 4 * t + i;
            (x.dim[lane], x.shift[lane], x.mask[lane], x.pos[lane]) = (d, shift, mask, pos);
        }
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
        let n_groups = 1 << wide_dims.len();
        // (group, priority, id, rank, rule)
        let mut all: Vec<(usize, u16, RuleId, u32, TreeRule)> = Vec::new();
        let mut group_subtables: Vec<Vec<u32>> = vec![Vec::new(); n_groups];
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
            all.push((g, r.priority, *id, rank as u32, TreeRule { score: 0, value: r.value, mask: r.mask, ranges }));
        }
        for (idx, st) in self.subtables.iter().enumerate().filter(|&(i, _)| in_tree[i]) {
            let g = group_of(&st.mask);
            group_subtables[g].push(idx as u32);
            for ent in st.entries.iter().filter(|e| !e.rules.is_empty()) {
                if native.contains_key(&ent.top.1) {
                    continue;
                }
                all.push((g, ent.top.0, ent.top.1, idx as u32, TreeRule { score: 0, value: ent.key, mask: st.mask, ranges: Vec::new() }));
            }
        }
        // scores: the classifier's order over all trees (higher priority,
        // then earlier subtable), best = all.len(), so the best answer of
        // several trees is the largest score
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.3.cmp(&b.3)));
        let n_all = all.len() as u32;
        let mut answers = vec![(0u16, 0 as RuleId, 0u32); all.len() + 1];
        let mut groups: Vec<Vec<TreeRule>> = (0..n_groups).map(|_| Vec::new()).collect();
        for (i, (g, prio, id, rank, mut rule)) in all.into_iter().enumerate() {
            rule.score = n_all - i as u32;
            answers[rule.score as usize] = (prio, id, rank);
            groups[g].push(rule);
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
        trees.sort_by_key(|t| std::cmp::Reverse(t.max_score()));
        let remainder = (0..masks.len()).filter(|&i| !in_tree[i]).map(|i| i as u32).collect();
        let same_guard = trees.iter().map(|t| t.guard_words_eq(&trees[0])).collect();
        #[cfg(target_arch = "x86_64")]
        let x = if self.simd { x_cuts(&trees, &dims) } else { None };
        Some(Box::new(Fast {
            dims,
            trees,
            same_guard,
            remainder,
            answers,
            #[cfg(target_arch = "x86_64")]
            x,
        }))
    }

    /// One key through the fast path.
    #[inline(always)]
    pub(super) fn lookup_fast(&self, f: &Fast, key: &Key) -> Option<(u16, RuleId)> {
        let mut vals: Vals = [0; MAX_DIMS + 1];
        f.values(key, &mut vals);
        let mut best = 0;
        for t in &f.trees {
            if best > t.max_score() {
                break;
            }
            if t.guard(key) {
                best = best.max(t.walk(&vals, best));
            }
        }
        self.with_remainder(f, key, best)
    }

    /// A batch through the fast path, tree by tree over chunks of `CHUNK`
    /// keys, with no branch on any key's data: first every key's values and
    /// its cell in every tree; then, per tree, the keys that still need it
    /// (guard passed, and the cell's best rule beats the answer in hand) are
    /// gathered into a list and walked level by level: all their cell
    /// entries, then one block step for those still in a block (gathered
    /// again), and so on, then one rule check each. Each pass is a loop of
    /// independent walks, so their memory accesses overlap and no walk waits
    /// for another's outcome (a walk per key, with a branch at each level,
    /// costs a misprediction about every other level). The AVX-512 form
    /// (`lookup_batch_x`) does the same with vector values, cells, steps and
    /// checks.
    pub(super) fn lookup_batch_fast(&self, f: &Fast, keys: &[Key], out: &mut [Option<(u16, RuleId)>]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(x) = &f.x {
            // SAFETY: `x` exists only when the CPU has AVX-512F
            return unsafe { self.lookup_batch_x(f, x, keys, out) };
        }
        self.batch(
            f,
            keys,
            out,
            |key: &Key, vals: &mut Vals, cells: &mut [u32; 16]| {
                f.values(key, vals);
                for (t, tree) in f.trees.iter().enumerate() {
                    cells[4 * t] = tree.cell_of(vals) as u32;
                }
            },
            |tree: &Tree, at: u32, vals: &Vals| tree.step(at, vals),
            |tree: &Tree, at: u32, vals: &Vals| tree.leaf_score(at, vals),
        );
    }

    /// `lookup_batch_fast` with AVX-512 (see `tree.rs`, `x86`): values and
    /// every tree's cell in a few vector instructions, a block's seven
    /// comparisons in one, a rule's range check in two.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn lookup_batch_x(&self, f: &Fast, x: &XCuts, keys: &[Key], out: &mut [Option<(u16, RuleId)>]) {
        use std::arch::x86_64::*;
        // SAFETY (loads): [u32; 16] and [i64; 8] arrays are 64 bytes
        let (cd, cs, cm, cp, vw, vs, vm) = unsafe {
            (
                _mm512_loadu_si512(x.dim.as_ptr() as *const _),
                _mm512_loadu_si512(x.shift.as_ptr() as *const _),
                _mm512_loadu_si512(x.mask.as_ptr() as *const _),
                _mm512_loadu_si512(x.pos.as_ptr() as *const _),
                _mm512_loadu_si512(x.vword.as_ptr() as *const _),
                _mm512_loadu_si512(x.vshift.as_ptr() as *const _),
                _mm512_loadu_si512(x.vmask.as_ptr() as *const _),
            )
        };
        self.batch(
            f,
            keys,
            out,
            // the values: eight key words from word0, each dimension's word
            // picked, shifted, masked and narrowed to 32 bits; then every
            // tree's cell: lane 4t + part -> ((v >> shift) & mask) << pos,
            // OR-ed per tree
            |key: &Key, vals: &mut __m512i, cells: &mut [u32; 16]| {
                // SAFETY: word0 + 8 <= KEY_WORDS (x_cuts); `cells` is 16 u32
                unsafe {
                    let w = _mm512_loadu_si512(key.as_ptr().add(x.word0) as *const _);
                    let w = _mm512_and_si512(_mm512_srlv_epi64(_mm512_permutexvar_epi64(vw, w), vs), vm);
                    let v = _mm512_zextsi256_si512(_mm512_cvtepi64_epi32(w));
                    *vals = v;
                    let c = _mm512_sllv_epi32(_mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(cd, v), cs), cm), cp);
                    let c = _mm512_or_si512(c, _mm512_shuffle_epi32::<0xb1>(c));
                    let c = _mm512_or_si512(c, _mm512_shuffle_epi32::<0x4e>(c));
                    _mm512_storeu_si512(cells.as_mut_ptr() as *mut _, c);
                }
            },
            // (closures inherit this function's AVX-512F)
            |tree: &Tree, at: u32, v: &__m512i| tree.step_x(at, *v),
            |tree: &Tree, at: u32, v: &__m512i| tree.leaf_score_x(at, *v),
        );
    }

    /// The tree-major batch walk (see `lookup_batch_fast`): `prep` writes a
    /// key's values and, at index 4t, its cell in tree t; `step` takes one
    /// block step; `leaf` gives a leaf entry's score.
    #[inline(always)]
    fn batch<V: Copy>(
        &self,
        f: &Fast,
        keys: &[Key],
        out: &mut [Option<(u16, RuleId)>],
        prep: impl Fn(&Key, &mut V, &mut [u32; 16]),
        step: impl Fn(&Tree, u32, &V) -> u32,
        leaf: impl Fn(&Tree, u32, &V) -> u32,
    ) {
        use std::mem::MaybeUninit;
        // large enough that the passes' loop overhead and their exits'
        // mispredictions are spread over many keys (ClassBench 10k rules,
        // against 256: 32 keys 0.8x, 128 0.96x, 512..2048 within 3 %);
        // state ~36 KB
        const CHUNK: usize = 256;
        debug_assert!(f.trees.len() <= 4);
        // written for every key of a chunk before they are read
        let mut vals = [MaybeUninit::<V>::uninit(); CHUNK];
        let mut cells = [MaybeUninit::<[u32; 16]>::uninit(); CHUNK];
        let mut pass = [false; CHUNK];
        let mut best = [0u32; CHUNK];
        // per tree: the keys walking it (chunk positions), their entries,
        // and the positions in that list still in a block
        let mut list = [0u16; CHUNK];
        let mut entry = [0u32; CHUNK];
        let mut inner = [0u16; CHUNK];
        let first = &f.trees[0];
        for (kc, oc) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            for (j, key) in kc.iter().enumerate() {
                let (v, c) = (vals[j].as_mut_ptr(), cells[j].as_mut_ptr());
                // SAFETY: MaybeUninit<T> has T's layout; `prep` writes both
                unsafe { prep(key, &mut *v, &mut *c) };
                // SAFETY: just written
                first.prefetch_cell_at(unsafe { cells[j].assume_init_ref() }[0] as usize);
                pass[j] = first.guard(key);
                best[j] = 0;
            }
            // SAFETY (below): values and cells of the chunk's keys (j <
            // kc.len()) were written above
            for (t, tree) in f.trees.iter().enumerate() {
                let top = tree.max_score();
                let mut n = 0;
                for j in 0..kc.len() {
                    let c = unsafe { cells[j].assume_init_ref() }[4 * t] as usize;
                    let g = if f.same_guard[t] { pass[j] } else { tree.guard(&kc[j]) };
                    // every key passing its guard walks the first tree
                    // SAFETY: `c` is tree t's cell of this key (`prep`)
                    let beats = t == 0 || (best[j] <= top) & (best[j] <= unsafe { tree.cell_max_at(c) });
                    list[n] = j as u16;
                    n += usize::from(g & beats);
                }
                let mut m = 0;
                for q in 0..n {
                    let e = unsafe { tree.entry_at(cells[usize::from(list[q])].assume_init_ref()[4 * t] as usize) };
                    entry[q] = e;
                    inner[m] = q as u16;
                    m += usize::from(!Tree::is_leaf(e));
                }
                while m > 0 {
                    let mut next = 0;
                    for z in 0..m {
                        let q = usize::from(inner[z]);
                        let e = step(tree, entry[q], unsafe { vals[usize::from(list[q])].assume_init_ref() });
                        entry[q] = e;
                        inner[next] = q as u16;
                        next += usize::from(!Tree::is_leaf(e));
                    }
                    m = next;
                }
                for q in 0..n {
                    let j = usize::from(list[q]);
                    best[j] = best[j].max(leaf(tree, entry[q], unsafe { vals[j].assume_init_ref() }));
                }
            }
            for (j, o) in oc.iter_mut().enumerate() {
                *o = self.with_remainder(f, &kc[j], best[j]);
            }
        }
    }

    /// Combine the trees' answer (score `score`, 0 for none) with the
    /// remainder subtables, in the classifier's order.
    #[inline(always)]
    fn with_remainder(&self, f: &Fast, key: &Key, score: u32) -> Option<(u16, RuleId)> {
        debug_assert!((score as usize) < f.answers.len());
        // SAFETY: scores are 0..=answers.len() - 1 (`build_fast`)
        let t = (score != 0).then(|| unsafe { *f.answers.get_unchecked(score as usize) });
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
