//! Open vSwitch's `actset_output` match field: the output port the action set
//! holds so far, kept as OVS 3.1's `xlate_write_actions` keeps it. `OFPP_UNSET`
//! when a packet enters (a PACKET_OUT too); each write-actions list's outputs set
//! it in order until the list writes a group, which sets it to `OFPP_UNSET` and
//! keeps it there (later outputs change nothing) until a clear-actions, which sets
//! `OFPP_UNSET` again. It is flow state, not the set's: a bucket and a clone give
//! it back as it was before them (their action set changes stay, see
//! `bucket_leaks`), running the action set leaves it as it is, and a recirculated
//! copy starts with the value its frozen action set gives.
//! State: `Ctx::actset`. Cost: one store per lookup, a scan per write-actions.

use super::Ctx;
use crate::actionset::ActionSet;
use crate::field::{ACTSET_WORD, OFPP_UNSET};
use crate::rule::Action;

/// `actset_output` after a write-actions of `written` (`has_group`: the set held a group before).
pub(super) fn after_write(current: u32, has_group: bool, written: &[Action]) -> u32 {
    if has_group {
        return current;
    }
    let mut port = current;
    for a in written {
        match a {
            Action::Output { port: p, .. } => port = *p,
            Action::Group(_) => return OFPP_UNSET,
            _ => {}
        }
    }
    port
}

/// The value a set written from empty would give (a recirculated copy's).
pub(super) fn of_set(set: &ActionSet) -> u32 {
    if set.has_group() {
        OFPP_UNSET
    } else {
        set.output().unwrap_or(OFPP_UNSET)
    }
}

/// Put the packet's `actset_output` in its lookup key.
#[inline]
pub(super) fn put(ctx: &mut Ctx) {
    let w = &mut ctx.base[ACTSET_WORD];
    *w = (*w & 0xffff_ffff) | (u64::from(ctx.actset) << 32);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(port: u32) -> Action {
        Action::output(port)
    }

    /// As Open vSwitch 3.1: the last output written; a group sets UNSET and holds it.
    #[test]
    fn outputs_then_a_group_then_nothing_changes_it() {
        assert_eq!(after_write(OFPP_UNSET, false, &[out(2), out(3)]), 3);
        assert_eq!(after_write(3, false, &[Action::SetQueue(1)]), 3);
        assert_eq!(after_write(3, false, &[out(4), Action::Group(1), out(5)]), OFPP_UNSET);
        assert_eq!(after_write(OFPP_UNSET, true, &[out(6)]), OFPP_UNSET);
        assert_eq!(after_write(7, true, &[out(6)]), 7); // (a bucket gave the value back, the group stayed)
    }

    #[test]
    fn a_recirculated_copy_reads_its_set() {
        let mut set = ActionSet::default();
        assert_eq!(of_set(&set), OFPP_UNSET);
        set.write(&[out(2)]);
        assert_eq!(of_set(&set), 2);
        set.write(&[Action::Group(1), out(3)]);
        assert_eq!(of_set(&set), OFPP_UNSET);
    }
}
