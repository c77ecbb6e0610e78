//! A `ct(table=T)` that runs from an action set: Open vSwitch 3.1 takes `ct` in
//! write-actions and in group buckets (which run as action sets) as a final
//! action (only when the set has no group, output, resubmit or ct_clear), and
//! recirculates its tracked copy into table T after the set's other actions,
//! with an empty action set.

use super::{Ctx, DropReason, Fate, Pipeline, MAX_RECIRC_DEPTH};

impl Pipeline {
    /// The action set just run stopped at a `ct(table=T)` (`ctx.fork`): run the
    /// tracked copy from table T (dropped past `MAX_RECIRC_DEPTH` recirculations).
    pub(super) fn run_set_fork(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        if let Some((_, gid)) = ctx.group_fork.take() {
            // (the set's group, whose bucket may recirculate: `bucket_ct.rs`; nothing follows it)
            self.run_group_recirculating(gid, ctx, out);
            return;
        }
        let Some((_, table, mut copy)) = ctx.fork.take() else { return };
        if copy.recirc >= MAX_RECIRC_DEPTH {
            self.note(|| format!("  ct: recirculation deeper than {MAX_RECIRC_DEPTH}: copy dropped"));
            out.push(Fate::Drop { reason: DropReason::RecircDepth });
            return;
        }
        copy.recirc += 1;
        copy.actset = crate::field::OFPP_UNSET; // (its action set is empty)
        copy.no_room = ctx.no_room; // (a final action: the datapath recirculates the packet itself)
        self.note(|| format!("  ct (action set): the tracked copy goes on in table {table}"));
        self.run_tables_from(&mut copy, out, None, None, usize::from(table));
        ctx.nested.append(&mut copy.nested);
    }
}

#[cfg(test)]
mod tests {
    use crate::actionset::ActionSet;
    use crate::rule::{Action, CtAction};

    fn ct(table: u8) -> Action {
        Action::Ct(Box::new(CtAction { table: Some(table), ..Default::default() }))
    }

    /// Open vSwitch 3.1's final actions: group, then output, then resubmit, then
    /// ct_clear, then ct; only the first present runs.
    #[test]
    fn ct_and_ct_clear_are_the_last_final_actions() {
        let last = |written: &[Action]| {
            let mut set = ActionSet::default();
            set.write(written);
            set.to_list().last().cloned()
        };
        assert_eq!(last(&[ct(1)]), Some(ct(1)));
        assert_eq!(last(&[ct(1), ct(2)]), Some(ct(2)));
        assert_eq!(last(&[ct(1), Action::CtClear]), Some(Action::CtClear));
        assert_eq!(last(&[ct(1), Action::Resubmit { in_port: 0xFFFF_FFF8, table: 3 }]),
                   Some(Action::Resubmit { in_port: 0xFFFF_FFF8, table: 3 }));
        assert_eq!(last(&[Action::CtClear, Action::output(4)]), Some(Action::output(4)));
        assert!(!ActionSet::default().to_list().contains(&Action::CtClear));
    }
}
