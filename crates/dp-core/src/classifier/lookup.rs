//! The classifier's lookup path: prefix filters, the priority-ordered walk
//! over surviving subtables with early termination, and the batched variant
//! that overlaps the memory accesses of 16 keys (summaries and first
//! candidate slots are prefetched before any key is walked). Both defer to
//! the decision tree (`fast.rs`) once it is built.
//! State: none of its own (reads `Classifier`). Cost: see `classifier.rs`.

use super::*;

#[inline(always)]
pub(super) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Classifier {
    /// Bit L set: some rule uses the length-L prefix of the packet's filter
    /// field `i` (bit 0 always: wildcard and non-prefix masks never prune).
    #[inline(always)]
    pub(super) fn field_hits(&self, i: usize, key: &Key) -> u64 {
        let v = FILTERS[i].get(key); // a 32-bit field
        let mut bits = 1u64;
        if !self.hi8[i].is_empty() {
            bits |= self.hi8[i][(v >> 24) as usize];
        }
        if !self.summary[i].is_empty() {
            let s = self.summary[i][(v >> 16) as usize];
            bits |= u64::from((s >> 17) & 0x7f) << 9;
            bits |= u64::from(s & 1) << 16;
            let mut longer = (s >> 1) & 0xffff;
            while longer != 0 {
                let l = 17 + longer.trailing_zeros();
                longer &= longer - 1;
                if self.prefixes[i][l as usize].contains(v >> (32 - l)) {
                    bits |= 1u64 << l;
                }
            }
        }
        bits
    }

    /// Highest-priority rule matching `key`, without the cache.
    pub fn lookup(&self, key: &Key) -> Option<(u16, RuleId)> {
        if let Some(f) = self.fast(1) {
            return self.lookup_fast(f, key);
        }
        let hits: [u64; FILTERS.len()] = std::array::from_fn(|i| self.field_hits(i, key));
        match self.passing(&hits) {
            Some(pass) => self.walk_sel(key, pass, &[]),
            None => self.walk(key, &hits, &[], 0),
        }
    }

    /// Bitset of the subtables that survive the prefix filters, in priority
    /// order (None when there are too many subtables for bitsets).
    #[inline(always)]
    fn passing(&self, hits: &[u64; FILTERS.len()]) -> Option<Sel> {
        if self.sel[0].is_empty() {
            return None;
        }
        let mut pass = [u64::MAX; SEL_WORDS];
        for (i, &h) in hits.iter().enumerate() {
            let mut any = [0u64; SEL_WORDS];
            let mut bits = h;
            while bits != 0 {
                let l = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let s = &self.sel[i][l];
                for w in 0..SEL_WORDS {
                    any[w] |= s[w];
                }
            }
            for w in 0..SEL_WORDS {
                pass[w] &= any[w];
            }
        }
        Some(pass)
    }

    /// Probe the subtables of `pass` in priority order, stopping when none
    /// left can beat the best match; `cands` are already-hashed first members.
    #[inline(always)]
    fn walk_sel(&self, key: &Key, mut pass: Sel, cands: &[(u32, u64)]) -> Option<(u16, RuleId)> {
        let mut best: Option<(u16, RuleId)> = None;
        let mut best_p: i32 = -1;
        for &(idx, h) in cands {
            if i32::from(self.meta[idx as usize].max_priority) <= best_p {
                return best;
            }
            pass[idx as usize / 64] &= !(1u64 << (idx % 64));
            let st = &self.subtables[idx as usize];
            if let Some((p, id)) = st.flat.find(key, &st.mask, h) {
                if i32::from(p) > best_p {
                    best = Some((p, id));
                    best_p = i32::from(p);
                }
            }
        }
        for w in 0..SEL_WORDS {
            while pass[w] != 0 {
                let idx = w * 64 + pass[w].trailing_zeros() as usize;
                pass[w] &= pass[w] - 1;
                if i32::from(self.meta[idx].max_priority) <= best_p {
                    return best;
                }
                let st = &self.subtables[idx];
                let h = st.flat.hash(key, &st.mask);
                if let Some((p, id)) = st.flat.find(key, &st.mask, h) {
                    if i32::from(p) > best_p {
                        best = Some((p, id));
                        best_p = i32::from(p);
                    }
                }
            }
        }
        best
    }

    /// Walk the subtables in priority order: first the precomputed
    /// candidates `cands` (subtable index, hash), then from meta index `from`.
    #[inline(always)]
    fn walk(&self, key: &Key, hits: &[u64; FILTERS.len()], cands: &[(u32, u64)], from: usize) -> Option<(u16, RuleId)> {
        let mut best: Option<(u16, RuleId)> = None;
        let mut best_p: i32 = -1;
        for &(idx, h) in cands {
            if i32::from(self.meta[idx as usize].max_priority) <= best_p {
                return best;
            }
            let st = &self.subtables[idx as usize];
            if let Some((p, id)) = st.flat.find(key, &st.mask, h) {
                if i32::from(p) > best_p {
                    best = Some((p, id));
                    best_p = i32::from(p);
                }
            }
        }
        for (idx, m) in self.meta.iter().enumerate().skip(from) {
            if i32::from(m.max_priority) <= best_p {
                break;
            }
            if (hits[0] >> m.bit[0]) & (hits[1] >> m.bit[1]) & 1 == 0 {
                continue;
            }
            let st = &self.subtables[idx];
            let h = st.flat.hash(key, &st.mask);
            if let Some((p, id)) = st.flat.find(key, &st.mask, h) {
                if i32::from(p) > best_p {
                    best = Some((p, id));
                    best_p = i32::from(p);
                }
            }
        }
        best
    }

    /// Look up a batch of keys with their memory accesses overlapped: first
    /// prefetch each key's filter summaries, then find each key's first
    /// `CANDS` candidate subtables and prefetch their slots, then walk.
    pub fn lookup_batch(&self, keys: &[Key], out: &mut [Option<(u16, RuleId)>]) {
        if let Some(f) = self.fast(keys.len()) {
            return self.lookup_batch_fast(f, keys, out);
        }
        const B: usize = 16;
        const CANDS: usize = 4;
        for (kc, oc) in keys.chunks(B).zip(out.chunks_mut(B)) {
            for k in kc {
                for i in 0..FILTERS.len() {
                    if !self.summary[i].is_empty() {
                        prefetch(&self.summary[i][(FILTERS[i].get(k) >> 16) as usize]);
                    }
                }
            }
            let mut hits = [[0u64; FILTERS.len()]; B];
            let mut cands = [[(0u32, 0u64); CANDS]; B];
            let mut ncand = [0usize; B];
            let mut resume = [0usize; B];
            let mut pass = [[0u64; SEL_WORDS]; B];
            let use_sel = !self.sel[0].is_empty();
            for (j, k) in kc.iter().enumerate() {
                hits[j] = std::array::from_fn(|i| self.field_hits(i, k));
                if use_sel {
                    pass[j] = self.passing(&hits[j]).unwrap();
                    let mut p = pass[j];
                    'w: for w in 0..SEL_WORDS {
                        while p[w] != 0 {
                            if ncand[j] == CANDS {
                                break 'w;
                            }
                            let idx = w * 64 + p[w].trailing_zeros() as usize;
                            p[w] &= p[w] - 1;
                            let st = &self.subtables[idx];
                            let h = st.flat.hash(k, &st.mask);
                            prefetch(st.flat.slot_ref(h));
                            cands[j][ncand[j]] = (idx as u32, h);
                            ncand[j] += 1;
                        }
                    }
                    continue;
                }
                let mut pos = self.meta.len();
                for (idx, m) in self.meta.iter().enumerate() {
                    if (hits[j][0] >> m.bit[0]) & (hits[j][1] >> m.bit[1]) & 1 == 0 {
                        continue;
                    }
                    if ncand[j] == CANDS {
                        pos = idx;
                        break;
                    }
                    let st = &self.subtables[idx];
                    let h = st.flat.hash(k, &st.mask);
                    prefetch(st.flat.slot_ref(h));
                    cands[j][ncand[j]] = (idx as u32, h);
                    ncand[j] += 1;
                }
                resume[j] = pos;
            }
            if use_sel {
                for (j, (k, o)) in kc.iter().zip(oc.iter_mut()).enumerate() {
                    *o = self.walk_sel(k, pass[j], &cands[j][..ncand[j]]);
                }
                continue;
            }
            for (j, (k, o)) in kc.iter().zip(oc.iter_mut()).enumerate() {
                *o = self.walk(k, &hits[j], &cands[j][..ncand[j]], resume[j]);
            }
        }
    }

}
