//! Open vSwitch's `clone(actions)` (`Action::Clone`), as OVS 3.1's
//! `clone_xlate_actions` runs it: the nested actions run on a copy of the
//! packet and of its pipeline state (headers, mark, metadata, registers,
//! tunnel id, ct fields, the stack and the action set written so far); when
//! they end — also after a TTL exception among them — the copy's action set
//! runs (and is gone with the copy); then the packet goes on exactly as it
//! was before the clone. What the clone did outside the packet stays: frames
//! it sent, learned flows, conntrack entries, and Open vSwitch's translation
//! limits (its lookup count; an `exit` inside ends the whole pipeline, action
//! set included, as OVS keeps its exit flag past the clone), and, when the clone
//! holds no `ct` or `output_trunc` of its own (no datapath clone), the conntrack
//! metadata a `ct` or `ct_clear` inside left on the datapath's packet and the
//! translations a `ct` with `nat` inside made (`bucket_nat.rs`).
//! State: none. Cost: one copy of the packet's working state per clone.

use super::{Ctx, Fate, Pipeline};
use crate::actionset::ActionSet;
use crate::rule::Action;

impl Pipeline {
    /// Run `nested` as a clone (see the module doc); false when nothing more may
    /// run after it (`exit`, a packet dropped whole, a limit reached).
    pub(super) fn run_clone(&self, nested: &[Action], ctx: &mut Ctx, out: &mut Vec<Fate>, depth: u32) -> bool {
        // (Open vSwitch: a clone holding actions it cannot undo in its datapath — ct,
        // output_trunc — commits first and runs in a datapath clone, after which the frame
        // is as committed before it; else the clone's own commits stay in force)
        // (but a clone that ends the whole translation, `Ctx::tail`, is translated inline:
        // nothing is committed at its start; measured, `push_vlan,clone(output(port=2,max_len=20))`
        // sends 24 bytes, with any action after the clone 20)
        let last = std::mem::take(&mut ctx.tail);
        let reversible = !nested.iter().any(|a| matches!(a, Action::Ct(_) | Action::OutputTrunc { .. }));
        if !reversible && !last {
            ctx.committed.set(ctx.data.len());
        }
        let saved = ctx.clone();
        ctx.no_room |= !reversible && !last; // (a datapath clone's copy: `Ctx::no_room`)
        // (its own list ends the translation too, as does a datapath clone's, whose actions
        // are a list of their own: measured, `clone(output(port=3,max_len=64),push_vlan,
        // clone(output(port=4,max_len=24))),output:2` sends 28 bytes to 4; a check_pkt_larger
        // inside splits the list)
        ctx.tail = (last || !reversible) && !nested.iter().any(|a| matches!(a, Action::CheckPktLarger { .. }));
        ctx.in_place = true; // (a ct(table=T) inside recirculates its copy at once: `recirc.rs`)
        self.note(|| "  clone: the nested actions run on a copy".into());
        self.run_clone_body(nested, ctx, out, depth);
        let (exited, abort, too_deep, resubmits) = (ctx.exited, ctx.abort, ctx.too_deep, ctx.resubmits);
        let committed = ctx.committed.get();
        let (ct_md, conntracked) = (ctx.ct_md, ctx.conntracked);
        // (the copy's lookups, to count: its list began as the packet's and only grew)
        let nested_counts = std::mem::take(&mut ctx.nested);
        let mut inner = std::mem::replace(ctx, saved);
        ctx.exited = exited;
        ctx.abort = abort;
        ctx.too_deep = too_deep;
        ctx.resubmits = resubmits;
        ctx.nested = nested_counts;
        if reversible {
            ctx.committed.set(committed);
            // (no datapath clone: a ct or ct_clear a lookup inside ran on the packet itself,
            // whose conntrack metadata a later ct reuses; measured, tests/ct_forks.rs)
            ctx.ct_md = ct_md;
            // (nor does Open vSwitch give back its `conntracked`: after a ct inside, a ct_clear
            // does nothing, though the packet's ct fields are as before the clone)
            ctx.conntracked = conntracked;
            // (and a nat a bucket's or a looked-up rule's ct inside made stays in the datapath's packet,
            // measured: `clone(group:1),output:2` with a bucket ct(commit,nat(src=…)) sends the translation)
            super::bucket_nat::leak(ctx, &mut inner);
        }
        // (the key is rebuilt from the restored frame; the path cache does not record this packet)
        ctx.dirty = true;
        !(ctx.exited || ctx.abort || ctx.too_deep)
    }

    /// Is `a` the last action of `actions` (Open vSwitch's `ofpact_last`)?
    pub(super) fn ends(actions: &[Action], a: &Action) -> bool {
        actions.last().is_some_and(|l| std::ptr::eq(l, a))
    }

    /// The clone's actions, then its action set. At a `check_pkt_larger` of the clone's
    /// own list Open vSwitch 3.1 translates the rest of the clone twice, as the branches of
    /// its datapath's check_pkt_len, each ending in the clone's action set (the first
    /// empties it, so the "not larger" branch starts with none), then, back at the check,
    /// runs the clone's action set of that moment again on the copy of that moment, and
    /// the clone ends (measured: `clone(set_field:…->eth_src,check_pkt_larger(100)->reg0[0],
    /// resubmit(,2),output:2)` after a written `set_field:…->eth_dst,output:1` gives
    /// `set(eth_src),check_pkt_len(gt(…,set(eth_dst),1'),le(…)),set(eth_dst),1',…`).
    fn run_clone_body(&self, list: &[Action], ctx: &mut Ctx, out: &mut Vec<Fate>, depth: u32) {
        let check = list.iter().position(|a| matches!(a, Action::CheckPktLarger { .. }));
        let ok = self.run_list_in_place(&list[..check.unwrap_or(list.len())], ctx, out, depth);
        if let (true, Some(i)) = (ok, check) {
            self.run_list(&list[i..=i], ctx, out, depth); // (the check as a rule's list runs it, then taken back)
            let (before, _, larger) = ctx.cpl.pop().expect("the check just run");
            let set_then = ctx.set.clone();
            if !larger {
                ctx.set = ActionSet::default();
            }
            self.run_clone_body(&list[i + 1..], ctx, out, depth);
            if ctx.exited || ctx.abort || ctx.too_deep {
                return;
            }
            let (nested, resubmits) = (std::mem::take(&mut ctx.nested), ctx.resubmits);
            *ctx = before;
            (ctx.nested, ctx.resubmits) = (nested, resubmits);
            let list = set_then.to_list();
            if !list.is_empty() {
                self.note(|| "  clone: back at its check_pkt_larger, the action set of then again".into());
                self.run_list_in_place(&list, ctx, out, depth);
            }
            return;
        }
        if !(ctx.exited || ctx.abort || ctx.too_deep) {
            let list = std::mem::take(&mut ctx.set).to_list();
            if !list.is_empty() {
                self.note(|| format!("  clone: its action set {}", list.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")));
                self.run_list_in_place(&list, ctx, out, depth);
            }
        }
    }
}
