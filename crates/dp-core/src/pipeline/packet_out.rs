//! A PACKET_OUT run on the switch itself: `actions` as one apply-actions list on a
//! frame from `in_port`, with this switch's groups, tables and connection tracker
//! (OneSwitch sends a PACKET_OUT that applies a group with `ct` in a bucket to the
//! host whole; on the emulator backend the host's pipeline runs it here). As Open
//! vSwitch 3.1 runs a PACKET_OUT's list: a group whose bucket's `ct(table=T)`
//! recirculates runs its copy into table T at once, before the rest of the list, and
//! what the bucket's ct did to the packet (a nat's rewrite, the cached connection)
//! goes on with it (`bucket_ct.rs`, `recirc.rs`). There is no action set and no
//! table lookup of its own; the copies' lookups count as the packet's.
//! State: none. Cost: the list and each recirculated copy's pipeline walk.

use super::{Ctx, DropReason, Fate, Pipeline};
use crate::rule::Action;
use crate::Packet;

impl Pipeline {
    /// Run a PACKET_OUT's `actions` on `pkt` from `in_port` (module doc).
    pub fn packet_out(&mut self, pkt: Packet, in_port: u32, actions: &[Action]) -> Vec<Fate> {
        self.learning_tick();
        let mut out = Vec::new();
        let mut ctx = Ctx::entering(pkt.data, pkt.mark, in_port);
        ctx.committed.set(ctx.data.len());
        if let Err(reason) = self.refresh(&mut ctx) {
            out.push(Fate::Drop {
                reason: DropReason::Malformed(reason),
            });
            return out;
        }
        self.run_top_list(actions, &mut ctx, &mut out);
        self.run_packet_out_set(&mut ctx, &mut out); // (what its output:TABLE wrote: packet_out_table.rs)
        self.settle_packet_in_meters(&mut out, 0);
        Self::drop_runts(&mut out, 0);
        if ctx.too_deep {
            out.clear();
            out.push(Fate::Drop {
                reason: if ctx.decap_failed {
                    DropReason::DecapFailed
                } else {
                    DropReason::ResubmitLimit
                },
            });
        }
        for (table, found, bytes) in std::mem::take(&mut ctx.nested) {
            self.count_lookup(table, found, bytes);
        }
        self.install_learned();
        if out.is_empty() {
            out.push(Fate::Drop {
                reason: DropReason::NoOutput,
            });
        }
        out
    }

    /// `actions` as a rule's own apply list runs (`run_forks`): a group whose bucket's
    /// `ct(table=T)` recirculates stops the list (`Ctx::group_fork`) and runs here, each
    /// bucket's copy walking the tables from T before the next bucket, then the rest (a
    /// `ct(table=T)` of the list itself forks its copy the same way).
    fn run_top_list(&mut self, actions: &[Action], ctx: &mut Ctx, out: &mut Vec<Fate>) {
        let mut at = 0;
        while at <= actions.len() && !self.run_list(&actions[at..], ctx, out, 0) {
            if let Some((i, gid)) = ctx.group_fork.take() {
                self.run_group_recirculating(gid, ctx, out);
                at += i + 1;
            } else if let Some(i) = ctx.fork.as_ref().map(|f| f.0) {
                self.run_set_fork(ctx, out); // (a ct(table=T) of the list itself: its copy from T, no action set)
                at += i + 1;
            } else {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::Pipeline;
    use crate::rule::{Action, Bucket, CtAction, FieldMatch, Group, GroupType, Instructions, Rule};
    use crate::{Fate, Field, Packet};

    fn udp(reply: bool) -> Vec<u8> {
        let mut f = vec![0u8; 42];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&[0, 28]);
        f[22] = 64;
        f[23] = 17;
        let (a, b, pa, pb) = if reply {
            (2, 1, [0, 0x35], [0x13, 0x88])
        } else {
            (1, 2, [0x13, 0x88], [0, 0x35])
        };
        f[26..30].copy_from_slice(&[10, 0, 0, a]);
        f[30..34].copy_from_slice(&[10, 0, 0, b]);
        f[34..36].copy_from_slice(&pa);
        f[36..38].copy_from_slice(&pb);
        f[38..40].copy_from_slice(&[0, 8]);
        f
    }

    fn ports(fates: &[Fate]) -> Vec<u32> {
        fates
            .iter()
            .filter_map(|f| {
                if let Fate::Output { port, .. } = f {
                    Some(*port)
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn a_buckets_ct_table_copy_runs_the_later_table_and_its_commit_makes_the_reply_established() {
        let mut p = Pipeline::new(2);
        for port in 1..=3 {
            p.add_port(port);
        }
        let ct = |commit, table| {
            Action::Ct(Box::new(CtAction {
                commit,
                table,
                ..Default::default()
            }))
        };
        p.add_group(Group {
            id: 1,
            kind: GroupType::All,
            buckets: vec![Bucket::new(vec![ct(true, Some(1))], 1)],
        })
        .unwrap();
        // table 1: +new to port 2, +est to port 3
        let state = |v| {
            vec![FieldMatch {
                field: Field::CtState,
                value: v,
                mask: Some(0x23),
            }]
        };
        let (new, est) = (state(0x21), state(0x22)); // (trk = 0x20, est = 0x02, new = 0x01)
        p.add_rule(Rule::new(1, 10, new, Instructions::apply(vec![Action::output(2)])))
            .unwrap();
        p.add_rule(Rule::new(1, 10, est, Instructions::apply(vec![Action::output(3)])))
            .unwrap();
        let acts = [Action::Group(1), Action::output(1)];
        assert_eq!(ports(&p.packet_out(Packet::new(udp(false)), 0xffff_fffd, &acts)), vec![2, 1]);
        assert_eq!(
            ports(&p.packet_out(Packet::new(udp(true)), 0xffff_fffd, &acts)),
            vec![3, 1],
            "the reply: +est"
        );
    }
}
