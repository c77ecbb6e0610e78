//! Rule management of the pipeline: OpenFlow 1.3 flow-mod semantics (add
//! replaces an identical rule; modify / delete, strict or not, with out_port /
//! out_group filters), validation, POF key-slot assignment per table, rule
//! lookup by id and the classifier entry points used by benchmarks.
//! State: the pipeline's rule slab and tables. Cost: add/remove O(subtables).

use super::*;

impl Pipeline {
    /// OpenFlow ADD: install `rule`; a rule with the same table, priority and
    /// match is replaced (its id is reused) and its counters carried over, as
    /// Open vSwitch 3.1 does (no OFPFF_RESET_COUNTS).
    pub fn add_rule(&mut self, rule: Rule) -> Result<RuleId, PipelineError> {
        let rule = self.resolve_controller_meters(rule); // (controller_meter.rs)
        self.check_rule(&rule)?;
        let mut carried = RuleStats::default();
        if let Some(old) = self.find_strict(&rule) {
            carried = self.stats[old as usize];
            self.remove_rule_for(old, RemovedReason::Replaced);
        }
        let t = rule.table as usize;
        // Assign POF slots.
        let mut need = Vec::new();
        for fm in &rule.matches {
            if let Field::Pof { .. } = fm.field {
                need.push(fm.field);
            }
        }
        for f in &need {
            let pof = &mut self.tables[t].pof;
            if let Some(Some(e)) = pof.iter_mut().find(|e| matches!(e, Some((g, _)) if g == f)) {
                e.1 += 1;
            } else if let Some(slot) = pof.iter_mut().find(|e| e.is_none()) {
                *slot = Some((*f, 1));
            } else {
                // roll back the slots taken so far for this rule
                for g in &need {
                    if g == f {
                        break;
                    }
                    self.release_pof(t, *g);
                }
                return Err(PipelineError::TooManyPofFields { table: rule.table });
            }
        }
        if let Err(e) = self.fold_add(t, &rule.matches) {
            for g in &need {
                self.release_pof(t, *g);
            }
            return Err(e);
        }
        let (value, mask) = self.rule_key(t, &rule.matches);
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.rules.push(None);
                (self.rules.len() - 1) as RuleId
            }
        };
        if rule.is_conjunctive() {
            self.tables[t].conj.push(id);
            self.tables[t].cls.invalidate_cache();
        } else {
            self.tables[t].cls.insert(id, rule.priority, &value, &mask);
        }
        self.paths_rule_added(&mask);
        self.strict.insert((rule.table, rule.priority, canonical(&rule.matches)), id);
        if self.hot.len() <= id as usize {
            self.hot.resize(id as usize + 1, Hot::default());
            self.stats.resize(id as usize + 1, RuleStats::default());
        }
        self.hot[id as usize] = Hot::of(&rule.instructions);
        self.stats[id as usize] = carried;
        self.count_learn_cookies(&rule, true);
        self.rules[id as usize] = Some(Stored { rule, value, mask });
        self.flush_learned_cookies();
        Ok(id)
    }

    fn release_pof(&mut self, t: usize, f: Field) {
        for e in self.tables[t].pof.iter_mut() {
            if let Some((g, n)) = e {
                if *g == f {
                    *n -= 1;
                    if *n == 0 {
                        *e = None;
                    }
                    return;
                }
            }
        }
    }

    fn check_rule(&self, rule: &Rule) -> Result<(), PipelineError> {
        if rule.table as usize >= self.tables.len() {
            return Err(PipelineError::BadTable { table: rule.table, n_tables: self.tables.len() });
        }
        if let Some(g) = rule.instructions.goto {
            if g <= rule.table || g as usize >= self.tables.len() {
                return Err(PipelineError::BadGoto { table: rule.table, goto: g });
            }
        }
        validate_match(&rule.matches)?;
        validate_conjunctions(&rule.instructions)?;
        if let Some(m) = rule.instructions.meter {
            if !self.meters.contains(m) {
                return Err(PipelineError::UnknownMeter(m));
            }
        }
        for a in crate::rule::flattened(rule.instructions.apply.iter().chain(&rule.instructions.write)) {
            if let Action::Group(g) = a {
                if !self.groups.contains_key(g) {
                    return Err(PipelineError::UnknownGroup(*g));
                }
            }
        }
        Ok(())
    }

    pub(super) fn find_strict(&self, rule: &Rule) -> Option<RuleId> {
        self.strict.get(&(rule.table, rule.priority, canonical(&rule.matches))).copied()
    }

    /// Remove one rule by id (a delete); returns it if it existed.
    pub fn remove_rule(&mut self, id: RuleId) -> Option<Rule> {
        let r = self.remove_rule_for(id, RemovedReason::Delete);
        self.flush_learned_cookies();
        r
    }

    /// Remove one rule for `reason`, leaving delete_learned flushes to the caller.
    pub(super) fn remove_rule_for(&mut self, id: RuleId, reason: RemovedReason) -> Option<Rule> {
        let s = self.rules.get_mut(id as usize)?.take()?;
        self.learning_rule_gone(id, &s.rule, reason);
        let t = s.rule.table as usize;
        self.strict.remove(&(s.rule.table, s.rule.priority, canonical(&s.rule.matches)));
        if s.rule.is_conjunctive() {
            self.tables[t].conj.retain(|&c| c != id);
        } else {
            self.tables[t].cls.remove(id, s.rule.priority, &s.value, &s.mask);
        }
        for fm in &s.rule.matches {
            if let Field::Pof { .. } = fm.field {
                self.release_pof(t, fm.field);
            }
        }
        self.fold_remove(t, &s.rule.matches);
        self.free_ids.push(id);
        self.invalidate_paths();
        self.paths.stale = true;
        Some(s.rule)
    }

    /// OpenFlow 1.3 flow-mod. `rule` carries table, priority (strict forms),
    /// match and, for add/modify, the new instructions and cookie. Deletes
    /// honour `out_port` / `out_group` filters (`OFPP_ANY` / `OFPG_ANY`: none)
    /// and `all_tables`. Returns the ids added, changed or removed.
    pub fn flow_mod(&mut self, cmd: FlowModCommand, rule: Rule, out_port: u32, out_group: u32, all_tables: bool) -> Result<Vec<RuleId>, PipelineError> {
        if cmd == FlowModCommand::Add {
            return Ok(vec![self.add_rule(rule)?]);
        }
        let rule = self.resolve_controller_meters(rule); // (a modify resolves them anew: controller_meter.rs)
        let strict = matches!(cmd, FlowModCommand::ModifyStrict | FlowModCommand::DeleteStrict);
        let canon = canonical(&rule.matches);
        let chosen: Vec<RuleId> = self
            .rules
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let s = s.as_ref()?;
                let in_table = (all_tables && matches!(cmd, FlowModCommand::Delete | FlowModCommand::DeleteStrict)) || s.rule.table == rule.table;
                let m = if strict { s.rule.priority == rule.priority && canonical(&s.rule.matches) == canon } else { covered_by(&s.rule.matches, &rule.matches) };
                (in_table && m && s.rule.outputs_to(out_port, out_group)).then_some(i as RuleId)
            })
            .collect();
        match cmd {
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                for &id in &chosen {
                    self.remove_rule_for(id, RemovedReason::Delete);
                }
                self.flush_learned_cookies();
            }
            _ => {
                self.check_rule(&Rule { matches: Vec::new(), ..rule.clone() })?;
                for &id in &chosen {
                    let old = self.rules[id as usize].as_ref().unwrap().rule.clone();
                    self.count_learn_cookies(&old, false);
                    let s = self.rules[id as usize].as_mut().unwrap();
                    let was = s.rule.is_conjunctive();
                    s.rule.instructions = rule.instructions.clone();
                    let now = s.rule.is_conjunctive();
                    if was != now {
                        // a soft flow becomes an ordinary one or back: it changes sides
                        let (t, prio, value, mask) = (s.rule.table as usize, s.rule.priority, s.value, s.mask);
                        let tb = &mut self.tables[t];
                        if now {
                            tb.cls.remove(id, prio, &value, &mask);
                            tb.conj.push(id);
                        } else {
                            tb.conj.retain(|&c| c != id);
                            tb.cls.insert(id, prio, &value, &mask);
                        }
                    }
                    let s = self.rules[id as usize].as_mut().unwrap();
                    s.rule.cookie = rule.cookie;
                    self.hot[id as usize] = Hot::of(&rule.instructions);
                    let t = s.rule.table as usize;
                    self.tables[t].cls.invalidate_cache();
                    let new = self.rules[id as usize].as_ref().unwrap().rule.clone();
                    self.count_learn_cookies(&new, true);
                }
                self.flush_learned_cookies();
                self.invalidate_paths();
            }
        }
        Ok(chosen)
    }

    /// Non-strict or strict OpenFlow MODIFY of the instructions of matching rules.
    pub fn modify(&mut self, rule: Rule, strict: bool) -> Result<Vec<RuleId>, PipelineError> {
        let cmd = if strict { FlowModCommand::ModifyStrict } else { FlowModCommand::Modify };
        self.flow_mod(cmd, rule, OFPP_ANY, OFPG_ANY, false)
    }

    pub fn rule(&self, id: RuleId) -> Option<&Rule> {
        self.rules.get(id as usize)?.as_ref().map(|s| &s.rule)
    }
    pub fn rule_stats(&self, id: RuleId) -> Option<RuleStats> {
        self.rules.get(id as usize)?.as_ref().map(|_| self.stats[id as usize])
    }
    pub fn rules(&self) -> impl Iterator<Item = (RuleId, &Rule)> {
        self.rules.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i as RuleId, &s.rule)))
    }
    pub fn n_rules(&self) -> usize {
        self.tables.iter().map(|t| t.cls.len() + t.conj.len()).sum()
    }
    /// Look `key` up in `table` alone (for benchmarks): (priority, rule id).
    pub fn classify(&mut self, table: u8, key: &Key, use_cache: bool) -> Option<(u16, RuleId)> {
        let cls = &mut self.tables.get_mut(table as usize)?.cls;
        if use_cache {
            cls.lookup_cached(key)
        } else {
            cls.lookup(key)
        }
    }

    /// Look a batch of keys up in `table` (no cache; misses overlap).
    pub fn classify_batch(&self, table: u8, keys: &[Key], out: &mut [Option<(u16, RuleId)>]) {
        if let Some(t) = self.tables.get(table as usize) {
            t.cls.lookup_batch(keys, out);
        }
    }

    /// Switch the path cache and every table's flow cache on or off.
    pub fn set_cache_enabled(&mut self, on: bool) {
        self.paths.enabled = on;
        self.invalidate_paths();
        if on {
            self.paths.gate.restart(self.paths.cache.hits, self.paths.cache.fills);
        }
        for t in &mut self.tables {
            t.cls.set_cache_enabled(on);
        }
    }
}
