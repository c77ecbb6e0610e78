//! `ct(table=T)` where no caller can fork the pipeline: in a rule a lookup found
//! (resubmit, `output:TABLE`, a goto after one), in a clone, in a group bucket, and in
//! a copy already recirculated here. Open vSwitch 3.1 recirculates the tracked copy
//! wherever its translation meets the `ct` (measured on a dummy bridge: table 0
//! `resubmit(,1),output:3`, table 1 `ct(table=2),output:4`, table 2 `output:2` gives
//! datapath actions `ct,recirc(1),4,3` and the copy outputs on 2): the datapath runs
//! the copy at once, from table T, with the registers, metadata and stack of that
//! moment and its own fresh translation limits; then the rest of the list, and of
//! the lists that made the lookup, goes on untracked. (A fork with a non-empty
//! action set stops Open vSwitch 3.1 itself: `ofproto-dpif-rid.c` asserts
//! `action_set_len <= ofpacts_len` and ovs-vswitchd aborts, at any depth; dp-core
//! gives the copy that action set.)
//!
//! The rule's own list at the top (and the action set) forks through `Ctx::fork`,
//! run by callers that hold the pipeline mutably (`run_forks`, `run_set_fork`);
//! here the copy walks the tables with the pipeline shared, as resubmits do: its
//! lookups are counted when the packet is done (`Ctx::nested`), its rules' meters
//! do not run. A copy past Open vSwitch's translation limits sends nothing.
//! Open vSwitch's translation also keeps `conntracked` (`Ctx::conntracked`): set in a
//! recirculated copy, cleared by every `ct`; a `ct_clear` runs only while it is set, and
//! a clone with no `ct` of its own does not give it back (measured: after
//! `clone(resubmit(,2))` whose rule ran `ct(table=1)`, `ct_clear,goto_table:2` still
//! matches `+trk` in table 2, datapath actions `ct,recirc(2),2,ct,recirc(2)`).
//! State: `Ctx::in_place`, `Ctx::conntracked`. Cost: one copy of the packet's working state and one
//! pipeline walk per such `ct`.

use super::{Ctx, DropReason, Fate, Pipeline, RuleId, MAX_RECIRC_DEPTH};
use crate::actionset::ActionSet;

impl Pipeline {
    /// Run the tracked `copy` of a `ct(table)` from `table` now (module doc); its
    /// lookups join `ctx`'s counts.
    pub(super) fn recirculate_here(&self, mut copy: Box<Ctx>, table: u8, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        if copy.recirc >= MAX_RECIRC_DEPTH {
            self.note(|| format!("  ct: recirculation deeper than {MAX_RECIRC_DEPTH}: copy dropped"));
            out.push(Fate::Drop { reason: DropReason::RecircDepth });
            return;
        }
        copy.recirc += 1;
        copy.in_place = true;
        self.note(|| format!("  ct: the tracked copy goes on in table {table} (recirculated here)"));
        let start = out.len();
        self.walk_here(&mut copy, out, table);
        if copy.too_deep {
            out.truncate(start);
            out.push(Fate::Drop { reason: DropReason::ResubmitLimit });
        }
        ctx.nested.append(&mut copy.nested);
    }

    /// `run_tables_from` with the pipeline shared (lookups as `lookup_nested` makes them).
    fn walk_here(&self, ctx: &mut Ctx, out: &mut Vec<Fate>, start: u8) {
        let mut table = start;
        let mut first: Option<(u8, Option<RuleId>)> = None;
        let mut missed = None;
        loop {
            if table > 0 {
                // (a lookup after table 0 counts as a resubmit, as in `run_tables_from`)
                if !Self::may_look_up(ctx) {
                    return;
                }
                ctx.resubmits += 1;
            }
            let found = self.lookup_nested(ctx, table, ctx.in_port);
            ctx.table = table;
            let Some(id) = found else {
                self.note(|| format!("table {table}: miss"));
                missed = Some(table);
                break;
            };
            ctx.rule = Some(id);
            first.get_or_insert((table, Some(id)));
            self.note(|| format!("table {table}: rule #{id} matched"));
            let ins = &self.rules[id as usize].as_ref().unwrap().rule.instructions;
            let ok = self.run_list_in_place(&ins.apply, ctx, out, 0);
            close_checks(ctx);
            if !ok {
                if ctx.abort || ctx.too_deep {
                    return;
                }
                break; // (a TTL exception or exit: the rest of this rule is skipped)
            }
            Self::after_apply(ins, ctx);
            match ins.goto {
                Some(g) => table = g,
                None => break,
            }
        }
        if !ctx.exited {
            let list = std::mem::take(&mut ctx.set).to_list();
            if !list.is_empty() {
                if let Some((t, r)) = first {
                    (ctx.table, ctx.rule) = (t, r);
                }
                self.run_list_in_place(&list, ctx, out, 0);
            } else if let Some(table) = missed {
                out.push(Fate::Drop { reason: DropReason::TableMiss { table } });
            }
        }
        self.rerun_here(ctx, out);
    }

    /// `rerun_at_checks` with the pipeline shared: back at each `check_pkt_larger`,
    /// innermost first, the action set of that moment runs again on the packet then.
    fn rerun_here(&self, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        let checks = std::mem::take(&mut ctx.cpl);
        if ctx.no_rerun {
            return;
        }
        for (before, set, _) in checks.into_iter().rev() {
            if ctx.abort {
                return;
            }
            let nested = std::mem::take(&mut ctx.nested);
            *ctx = before;
            ctx.nested = nested;
            let list = set.unwrap_or_default().to_list();
            if !list.is_empty() {
                self.run_list_in_place(&list, ctx, out, 0);
            }
        }
    }
}

/// A rule's apply-actions ended: each `check_pkt_larger` they ran keeps the action set
/// of now, and after a "not larger" one the rest starts with none (`Ctx::cpl`).
pub(super) fn close_checks(ctx: &mut Ctx) {
    for (_, s, larger) in ctx.cpl.iter_mut().filter(|(_, s, _)| s.is_none()) {
        *s = Some(ctx.set.clone());
        if !*larger {
            ctx.set = ActionSet::default();
        }
    }
}
