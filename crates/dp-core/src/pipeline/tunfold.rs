//! A table's matches on `tun_metadataN` folded into its POF key slots: each distinct
//! (option, mask) pair the table's rules match (a "class") gets a field of a slot just wide
//! enough to number its distinct masked values 1..n; a lookup puts in each field the number
//! of the packet's masked option (0: the option is absent, or no rule of the class matches
//! that value). So a table matches any bits 0..127 of any number of options, exactly (a
//! rule's field equals the packet's only where the masked option equals the rule's value),
//! while the classes' fields fit the slots no POF field takes (3 x 128 bits).
//! The classes are laid out in (option, mask) order, each field `bits(n)` wide for its n
//! values numbered 1..n, so the layout is a function of the table's rules (the endpoint's
//! check, `endpoint_tun_metadata.py`, lays them out alike).
//! State: per table, the classes, their value numbers and the layout of their fields; a
//! layout change (a field widens or narrows, a class comes or goes before others) or a
//! renumbering (a value gone: the last one takes its number) re-keys the table's rules. Cost: a lookup in a table with classes,
//! on a packet with options, pays one hash lookup per class; others pay nothing.

use super::*;
use std::collections::HashMap;

/// The `Table::pof` entry of a slot holding class fields.
pub(super) const FOLD_SLOT: Field = Field::TunMetadata(u8::MAX);

#[derive(Default, Clone)]
pub(super) struct TunFold {
    classes: Vec<Class>,
}

#[derive(Clone)]
struct Class {
    opt: u8,
    mask: Option<u128>,
    /// masked value -> (number, rules using it)
    ids: HashMap<u128, (u32, u32)>,
    /// The values' number (1..=next).
    next: u32,
    rules: u32,
    /// The field: slot, shift, width.
    at: (usize, u32, u32),
}

impl Class {
    fn width(&self) -> u32 {
        32 - self.next.leading_zeros()
    }
}

fn tun_matches(m: &[FieldMatch]) -> impl Iterator<Item = (u8, &FieldMatch)> {
    m.iter().filter_map(|fm| match fm.field {
        Field::TunMetadata(i) => Some((i, fm)),
        _ => None,
    })
}

impl TunFold {
    fn find(&self, opt: u8, mask: Option<u128>) -> Option<usize> {
        self.classes.iter().position(|c| c.opt == opt && c.mask == mask)
    }

    /// Place the classes' fields, in order, in the `open` slots; false if they do not fit.
    fn lay_out(&mut self, open: &[usize]) -> bool {
        self.classes.sort_by_key(|c| (c.opt, c.mask));
        let (mut k, mut shift) = (0, 0);
        for c in &mut self.classes {
            let w = c.width();
            if shift + w > 128 {
                k += 1;
                shift = 0;
            }
            let Some(&slot) = open.get(k) else { return false };
            c.at = (slot, shift, w);
            shift += w;
        }
        true
    }

    /// Put the class numbers of the packet's options into the key's slots.
    pub(super) fn fill(&self, base: &mut Key, tm: &tunmeta::TunMeta) {
        for c in &self.classes {
            if tm.present >> c.opt & 1 == 1 {
                let masked = tm.values[usize::from(c.opt)] & c.mask.unwrap_or(u128::MAX);
                if let Some(&(id, _)) = c.ids.get(&masked) {
                    put_field(base, c.at, u128::from(id));
                }
            }
        }
    }
}

fn put_field(key: &mut Key, (slot, shift, _): (usize, u32, u32), v: u128) {
    let s = crate::field::pof_slot(slot);
    let v = v << shift;
    key[s.word] |= (v >> 64) as u64;
    key[s.word + 1] |= v as u64;
}

impl Pipeline {
    /// Number the rule's tun_metadata matches in table `t` and lay the classes out again
    /// (re-keying the table's rules if an existing field moved or widened); or fail
    /// changing nothing when the fields would not fit the slots POF fields leave.
    pub(super) fn fold_add(&mut self, t: usize, m: &[FieldMatch]) -> Result<(), PipelineError> {
        if tun_matches(m).next().is_none() {
            return Ok(());
        }
        let mut f = self.tables[t].fold.clone();
        for (i, fm) in tun_matches(m) {
            let p = f.find(i, fm.mask).unwrap_or_else(|| {
                f.classes.push(Class { opt: i, mask: fm.mask, ids: HashMap::new(), next: 0, rules: 0, at: (0, 0, 0) });
                f.classes.len() - 1
            });
            let c = &mut f.classes[p];
            c.rules += 1;
            let e = c.ids.entry(fm.value & fm.full_mask()).or_insert_with(|| {
                c.next += 1;
                (c.next, 0)
            });
            e.1 += 1;
        }
        self.install_fold(t, f, false).map_err(|()| PipelineError::TooManyPofFields { table: t as u8 })
    }

    /// A removed rule's tun_metadata matches: numbers and classes no rule uses are freed.
    pub(super) fn fold_remove(&mut self, t: usize, m: &[FieldMatch]) {
        if tun_matches(m).next().is_none() {
            return;
        }
        let mut f = self.tables[t].fold.clone();
        let mut renumbered = false;
        for (i, fm) in tun_matches(m) {
            let Some(p) = f.find(i, fm.mask) else { continue };
            let c = &mut f.classes[p];
            let key = fm.value & fm.full_mask();
            if let Some(e) = c.ids.get_mut(&key) {
                e.1 -= 1;
                if e.1 == 0 {
                    let id = e.0;
                    c.ids.remove(&key);
                    if let Some(last) = c.ids.values_mut().find(|e| e.0 == c.next) {
                        last.0 = id; // (the numbers stay 1..n)
                        renumbered = true;
                    }
                    c.next -= 1;
                }
            }
            c.rules -= 1;
            if c.rules == 0 {
                f.classes.remove(p);
            }
        }
        self.install_fold(t, f, renumbered).expect("fewer fields fit");
    }

    /// Lay `f` out in the table's slots POF fields leave, mark them, and re-key the
    /// table's rules if a field of a class they match changed.
    fn install_fold(&mut self, t: usize, mut f: TunFold, renumbered: bool) -> Result<(), ()> {
        let table = &mut self.tables[t];
        let open: Vec<usize> = (0..table.pof.len()).filter(|&s| matches!(table.pof[s], None | Some((FOLD_SLOT, _)))).collect();
        if !f.lay_out(&open) {
            return Err(());
        }
        let moved = table.fold.classes.iter().any(|o| f.find(o.opt, o.mask).map_or(true, |p| f.classes[p].at != o.at));
        for &s in &open {
            let used = f.classes.iter().any(|c| c.at.0 == s);
            table.pof[s] = used.then_some((FOLD_SLOT, 1));
        }
        table.fold = f;
        if moved || renumbered {
            self.rekey(t);
        }
        Ok(())
    }

    /// The rule's class numbers in its key.
    pub(super) fn fold_key(&self, t: usize, m: &[FieldMatch], value: &mut Key, mask: &mut Key) {
        let fold = &self.tables[t].fold;
        for (i, fm) in tun_matches(m) {
            let c = &fold.classes[fold.find(i, fm.mask).expect("numbered by fold_add")];
            put_field(value, c.at, u128::from(c.ids[&(fm.value & fm.full_mask())].0));
            put_field(mask, c.at, crate::rule::ones(c.at.2));
        }
    }

    /// Key every installed rule of table `t` again (after its fold's layout changed).
    fn rekey(&mut self, t: usize) {
        let ids: Vec<usize> = (0..self.rules.len()).filter(|&i| self.rules[i].as_ref().is_some_and(|s| usize::from(s.rule.table) == t)).collect();
        for i in ids {
            let (value, mask) = self.rule_key(t, &self.rules[i].as_ref().expect("listed").rule.matches);
            let s = self.rules[i].as_mut().expect("listed");
            if !s.rule.is_conjunctive() {
                self.tables[t].cls.remove(i as RuleId, s.rule.priority, &s.value, &s.mask);
                self.tables[t].cls.insert(i as RuleId, s.rule.priority, &value, &mask);
            }
            (s.value, s.mask) = (value, mask);
        }
        self.tables[t].cls.invalidate_cache();
    }

    /// A rule's (value, mask) in table `t`: its fields, POF fields in their slots, its
    /// tun_metadata matches as class numbers.
    pub(super) fn rule_key(&self, t: usize, m: &[FieldMatch]) -> (Key, Key) {
        let pof = &self.tables[t].pof;
        let slot_of = |f: Field| pof.iter().position(|e| matches!(e, Some((g, _)) if *g == f)).unwrap();
        let (mut value, mut mask) = crate::rule::match_key(m, &slot_of);
        self.fold_key(t, m, &mut value, &mut mask);
        (value, mask)
    }
}
