//! Open vSwitch's `output(port=P,max_len=N)` (`Action::OutputTrunc`), as OVS 3.1
//! runs it (`xlate_output_trunc_action`, measured case by case against OVS in
//! tests/dataplane/test_output_trunc_oracle.py). OVS translates header changes
//! lazily: a VLAN or MPLS push or pop reaches its datapath only at the next
//! *commit* — an output that sends (to a port, FLOOD/ALL, the controller; a
//! group bucket's too, and it stays after the group, which commits nothing itself), `ct`, `check_pkt_larger`, the start of a clone holding `ct` or
//! `output_trunc` (unless the clone ends the translation: `pipeline/clone.rs`). The datapath's truncate action comes before the output's
//! commit and fixes the bytes to cut, `committed - max(N, 14)` (none when
//! that is not positive), from the frame as last committed; the output then
//! sends the current frame less those bytes. So `push_vlan` then
//! `output(port=1,max_len=20)` sends 24 bytes. To the packet's in_port, a port
//! that does not exist, or a reserved port (IN_PORT, FLOOD, ALL, CONTROLLER,
//! TABLE, NORMAL) it sends nothing and commits nothing.
//! A plain output to LOCAL commits too (Open vSwitch's bridge always has that port;
//! dp-core's switch sends nothing there; measured after `encap`, `pipeline::encap`).
//! `Ctx::committed` holds the frame's length at the last commit. A frame cut below
//! 14 bytes (the frame shrank since the commit) is not sent, nor the packet's later
//! frames to that port (`drop_runts`).
//! State: none. Cost: one output.

use super::{Ctx, Fate, Pipeline};
use crate::rule::*;

impl Pipeline {
    pub(super) fn output_trunc(&self, port: u32, max_len: u32, ctx: &Ctx, out: &mut Vec<Fate>) {
        if port >= OFPP_IN_PORT && port != OFPP_LOCAL || port == ctx.in_port || !self.ports().contains(&port) {
            self.note(|| format!("  output_trunc to port {port:#x}: nothing sent"));
            return;
        }
        let keep = usize::try_from(max_len.max(14)).unwrap_or(usize::MAX);
        let cut = ctx.committed.get().saturating_sub(keep);
        let from = out.len();
        self.output(port, ctx, out);
        for f in &mut out[from..] {
            if let Fate::Output { packet, .. } = f {
                let n = packet.data.len().saturating_sub(cut);
                packet.data.truncate(n);
            }
        }
    }

    /// A frame cut below an Ethernet header (after a pop that a clone's committed push
    /// leaves to the output) never leaves Open vSwitch 3.1, nor does any later frame of the
    /// same packet to that port (its datapath sends a port's frames as one batch, which
    /// stops at the short one); measured: `clone(push_vlan,output:3),output(port=2,max_len=17)`
    /// sends nothing to 2 (18: 14 bytes), `…,output(port=2,max_len=14),output:2` nothing either.
    pub(super) fn drop_runts(out: &mut Vec<Fate>, start: usize) {
        let runt = |f: &Fate| matches!(f, Fate::Output { packet, .. } if packet.data.len() < 14);
        if !out[start..].iter().any(runt) {
            return;
        }
        let mut dead = Vec::new();
        let mut i = start;
        while i < out.len() {
            let port = match &out[i] { Fate::Output { port, .. } => Some(*port), _ => None };
            if runt(&out[i]) {
                dead.extend(port);
            }
            if port.is_some_and(|p| dead.contains(&p)) {
                out.remove(i);
            } else {
                i += 1;
            }
        }
    }
}
