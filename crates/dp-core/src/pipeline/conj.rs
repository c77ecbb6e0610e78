//! Conjunctive matching, as Open vSwitch's classifier runs it
//! (`lib/classifier.c`, `classifier_lookup__`; ovs-fields(7) "Conjunctive
//! Match Fields"). A table's conjunctive flows (`conjunction(id, k/n)`
//! actions) are never a lookup's answer: among the flows that match the
//! packet, the best ordinary ("hard") one is found; then, priority level by
//! level above it, the conjunctive ("soft") ones: when the soft flows of one
//! level cover every dimension 1..n of an id, the table is searched again
//! with `conj_id = id` (ignoring soft flows); a hit there is the answer, and
//! a level that completes nothing (or whose search finds nothing) gives way
//! to the next lower one. Open vSwitch sees only the highest-priority flow of
//! each distinct match: a lower flow with an identical match is "hidden"
//! behind it, surfacing only when a soft flow above it failed at its level,
//! and staying hidden from the `conj_id` search — copied here exactly.
//! State: each table's list of soft flows (`Table::conj`). Cost: a table
//! without soft flows pays one emptiness test per lookup; with S soft flows,
//! of which M match, a lookup costs the classifier's plus O(S x (M + 1)) key
//! comparisons (matching, and whether a flow is hidden), and an O(rules) scan
//! when a hidden flow must be surfaced; the path cache in front of the tables
//! answers repeated flows without a lookup.

use super::*;

impl Pipeline {
    /// Does rule `id` match `key` (word-wise `(key & mask) == value`)?
    fn rule_matches(&self, id: RuleId, key: &Key) -> bool {
        let s = self.rules[id as usize].as_ref().unwrap();
        key.iter().zip(s.mask.iter()).zip(s.value.iter()).all(|((k, m), v)| k & m == *v)
    }

    /// Is hard rule `id` hidden behind a soft flow of `table` with the same
    /// match and a higher priority?
    fn hidden(&self, table: usize, id: RuleId) -> bool {
        let s = self.rules[id as usize].as_ref().unwrap();
        self.tables[table].conj.iter().any(|&c| {
            let c = self.rules[c as usize].as_ref().unwrap();
            c.rule.priority > s.rule.priority && c.value == s.value && c.mask == s.mask
        })
    }

    /// The best hard rule of `table` that `key` meets as Open vSwitch's
    /// classifier does: the highest-priority match not hidden behind a soft flow.
    fn visible_hard(&self, table: usize, key: &Key) -> Option<(u16, RuleId)> {
        let found = self.tables[table].cls.lookup(key)?;
        if !self.hidden(table, found.1) {
            return Some(found);
        }
        let mut best: Option<(u16, RuleId)> = None;
        for (id, s) in self.rules.iter().enumerate() {
            let Some(s) = s else { continue };
            let id = id as RuleId;
            if s.rule.table as usize != table || s.rule.is_conjunctive() || best.is_some_and(|b| b.0 >= s.rule.priority) {
                continue;
            }
            if self.rule_matches(id, key) && !self.hidden(table, id) {
                best = Some((s.rule.priority, id));
            }
        }
        best
    }

    /// The next rule below `id` (by priority) with the very same match, if any.
    fn next_in_chain(&self, table: usize, id: RuleId) -> Option<RuleId> {
        let s = self.rules[id as usize].as_ref().unwrap();
        let mut best: Option<(u16, RuleId)> = None;
        for (j, o) in self.rules.iter().enumerate() {
            let Some(o) = o else { continue };
            if o.rule.table as usize == table
                && o.rule.priority < s.rule.priority
                && best.map_or(true, |b| o.rule.priority > b.0)
                && o.value == s.value
                && o.mask == s.mask
            {
                best = Some((o.rule.priority, j as RuleId));
            }
        }
        best.map(|b| b.1)
    }

    /// The lookup in a table with soft flows (`key` is the packet's key with
    /// `conj_id` 0, and is left so).
    pub(super) fn conj_lookup(&self, key: &mut Key, table: usize) -> Option<RuleId> {
        let mut hard = self.visible_hard(table, key);
        let hard_pri = |h: &Option<(u16, RuleId)>| h.map_or(-1i32, |h| i32::from(h.0));
        // the soft flows heading their chains (none hides them) that match
        let mut soft: Vec<Option<(u16, RuleId)>> = Vec::new();
        for &c in &self.tables[table].conj {
            if self.rule_matches(c, key) && !self.hidden_soft(table, c) {
                soft.push(Some((self.rules[c as usize].as_ref().unwrap().rule.priority, c)));
            }
        }
        loop {
            let floor = hard_pri(&hard);
            soft.retain(|s| s.is_some_and(|(p, _)| i32::from(p) > floor));
            if soft.is_empty() {
                break;
            }
            let top = soft.iter().map(|s| s.unwrap().0).max().unwrap();
            let at_top = soft.iter().filter(|s| s.unwrap().0 == top).count();
            // id -> clauses seen so far at this level (as OVS's hmap of conjunctive matches)
            let mut seen: Vec<(u32, u64)> = Vec::new();
            for i in 0..soft.len() {
                let (p, c) = soft[i].unwrap();
                if p != top {
                    continue;
                }
                let done = self.rules[c as usize].as_ref().unwrap().rule.conjunctions().find_map(|(id, k, n)| {
                    if usize::from(n) > at_top {
                        return None;
                    }
                    let e = match seen.iter().position(|e| e.0 == id) {
                        Some(e) => e,
                        None => {
                            seen.push((id, 0));
                            seen.len() - 1
                        }
                    };
                    seen[e].1 |= 1u64 << (k - 1);
                    (seen[e].1 == u64::MAX >> (64 - u32::from(n))).then_some(id)
                });
                if let Some(id) = done {
                    crate::field::put_conj_id(key, id);
                    let found = self.visible_hard(table, key);
                    crate::field::put_conj_id(key, 0);
                    self.note(|| format!("table {table}: conjunction {id} at priority {top}: conj_id lookup {}", if found.is_some() { "hit" } else { "missed" }));
                    if let Some((_, r)) = found {
                        return Some(r);
                    }
                }
            }
            // nothing at this level: the flows hidden behind its soft flows surface
            for i in 0..soft.len() {
                let (p, c) = soft[i].unwrap();
                if p != top {
                    continue;
                }
                soft[i] = match self.next_in_chain(table, c) {
                    Some(n) => {
                        let r = &self.rules[n as usize].as_ref().unwrap().rule;
                        if r.is_conjunctive() {
                            Some((r.priority, n))
                        } else {
                            if i32::from(r.priority) > hard_pri(&hard) {
                                hard = Some((r.priority, n));
                            }
                            None
                        }
                    }
                    None => None,
                };
            }
        }
        hard.map(|h| h.1)
    }

    /// Is soft flow `c` behind a higher-priority flow with the same match?
    /// (Only soft ones need looking at: a hard one above `c` either is the
    /// best hard rule's priority or below it, so `c` is dropped anyway, or is
    /// itself behind a soft flow, which then hides `c` too.)
    fn hidden_soft(&self, table: usize, c: RuleId) -> bool {
        let s = self.rules[c as usize].as_ref().unwrap();
        self.tables[table].conj.iter().any(|&o| {
            let o = self.rules[o as usize].as_ref().unwrap();
            o.rule.priority > s.rule.priority && o.value == s.value && o.mask == s.mask
        })
    }
}
