//! `ct` in a group bucket, as Open vSwitch 3.1 runs it (measured on a dummy
//! bridge): a bucket runs as an action set, so its `ct` is a final action (only
//! when the bucket has no group, output or resubmit; `ct_clear` wins over it), run
//! after the bucket's set-fields on the bucket's copy of the packet; a
//! `ct(table=T)` there recirculates that copy into table T at once, before the next
//! bucket runs (the datapath recirculates at the bucket's `recirc` action), with
//! the pipeline state of the bucket's copy (its registers, mark, metadata; the
//! action set written so far). A `ct` without a table, or `ct_clear`, needs no
//! fork and runs where the bucket runs (`Pipeline::run_group`).
//!
//! A group whose bucket may end in `ct(table=T)`, called from a rule's own apply
//! list or from the action set, stops the list there (`Ctx::group_fork`), and the
//! caller, which may run tables, runs it here, then the rest of the list. After a
//! lookup made from inside a rule (resubmit), and in a clone (`run_list_in_place`),
//! the group runs where it is and its bucket's copy recirculates there and then
//! (`pipeline/recirc.rs`).
//! State: none. Cost: one recirculated pipeline per such bucket run.

use super::{bucket_leaks, Ctx, Fate, Pipeline};
use crate::rule::Action;

impl Pipeline {
    /// May group `gid` recirculate a bucket's copy (a bucket with `ct(table=T)`)?
    pub(super) fn group_recirculates(&self, gid: u32) -> bool {
        self.groups.get(&gid).is_some_and(|g| {
            g.buckets.iter().any(|b| b.actions.iter().any(|a| matches!(a, Action::Ct(c) if c.table.is_some())))
        })
    }

    /// `run_list` where no caller can run a recirculating group (a clone): a group that
    /// stops the list (`Ctx::group_fork`) runs as `run_group` runs it, its buckets' copies
    /// recirculated in place (`recirc.rs`), and the list goes on after it.
    pub(super) fn run_list_in_place(&self, actions: &[Action], ctx: &mut Ctx, out: &mut Vec<Fate>, depth: u32) -> bool {
        let mut at = 0;
        loop {
            let ok = self.run_list(&actions[at..], ctx, out, depth);
            match ctx.group_fork.take() {
                Some((i, gid)) if !ok => {
                    self.run_group(gid, ctx, out, depth);
                    ctx.committed.set(ctx.data.len()); // (Open vSwitch commits at a group)
                    at += i + 1;
                }
                _ => return ok,
            }
        }
    }

    /// Run group `gid` (from a rule's apply list or the action set) with each bucket's
    /// `ct(table=T)` recirculating its copy before the next bucket (module doc).
    pub(super) fn run_group_recirculating(&mut self, gid: u32, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        let Some(lists) = self.bucket_lists(gid, ctx, out, 0) else { return };
        for (i, list) in lists {
            self.note(|| format!("  group {gid} bucket {i}: {}", list.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")));
            let mut copy = ctx.clone();
            copy.depth += 1;
            let (init, ct) = match list.split_last() {
                Some((last @ Action::Ct(c), init)) if c.table.is_some() => (init, Some(last)),
                _ => (&list[..], None),
            };
            if self.run_list(init, &mut copy, out, 1) {
                if let Some(ct) = ct {
                    // (the ct as a rule's own list runs it: the tracked copy forks, `ctx.fork`)
                    self.run_list(std::slice::from_ref(ct), &mut copy, out, 0);
                    self.run_set_fork(&mut copy, out);
                }
            }
            bucket_leaks(ctx, copy);
        }
        ctx.committed.set(ctx.data.len()); // (Open vSwitch commits at a group)
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::Pipeline;
    use crate::rule::{Action, Bucket, CtAction, Group, GroupType};

    fn ct(table: Option<u8>) -> Action {
        Action::Ct(Box::new(CtAction { table, ..Default::default() }))
    }

    fn group(id: u32, buckets: Vec<Vec<Action>>) -> Group {
        Group { id, kind: GroupType::All, buckets: buckets.into_iter().map(|a| Bucket::new(a, 1)).collect() }
    }

    #[test]
    fn only_a_bucket_with_ct_into_a_table_recirculates() {
        let mut p = Pipeline::new(2);
        p.add_group(group(1, vec![vec![ct(None)], vec![Action::CtClear, Action::output(2)]])).unwrap();
        assert!(!p.group_recirculates(1));
        p.add_group(group(2, vec![vec![Action::output(2)], vec![ct(Some(1))]])).unwrap();
        assert!(p.group_recirculates(2));
        assert!(!p.group_recirculates(7)); // (no such group)
    }
}
