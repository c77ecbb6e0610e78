//! A PACKET_OUT's `output:TABLE` as Open vSwitch 3.1 runs it: a resubmit into table 0
//! (`table_action`, from the PACKET_OUT's `in_port`) on the packet and its whole state
//! (registers, metadata, tunnel fields, mark, ct state, …) as the list made them so far;
//! what the tables do stays for the rest of the list, and the action set they write runs
//! once the list has ended (measured on one bridge: a rule's `write_actions(output:3)` with
//! `output:TABLE,push_vlan:0x8100` sends port 3 the tagged frame;
//! tests/endpoint/test_packet_out_table_vs_ovs.py). As after a flow's pipeline, an
//! `exit` (or a dropped packet) leaves the set unrun.
//! State: none. Cost: one walk of the written set, when the lookups wrote one.

use super::{Ctx, Fate, Pipeline};
use crate::actionset::ActionSet;

impl Pipeline {
    /// The action set the PACKET_OUT's lookups wrote, at the end of its list (module doc).
    pub(super) fn run_packet_out_set(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        if ctx.exited || ctx.abort || ctx.too_deep || ctx.set.is_empty() {
            return;
        }
        let list = ctx.set.to_list();
        ctx.set = ActionSet::default();
        self.note(|| format!("action set: {}", list.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")));
        self.run_list(&list, ctx, out, 0);
        self.run_set_fork(ctx, out);
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::Pipeline;
    use crate::rule::{Action, FieldMatch, Instructions, Rule, OFPP_TABLE};
    use crate::{Fate, Field, Packet};

    fn outputs(fates: &[Fate]) -> Vec<(u32, usize)> {
        fates
            .iter()
            .filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.len())) } else { None })
            .collect()
    }

    fn frame() -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f
    }

    fn pipeline(rules: Vec<Rule>) -> Pipeline {
        let mut p = Pipeline::new(2);
        for port in 1..=4 {
            p.add_port(port);
        }
        for r in rules {
            p.add_rule(r).unwrap();
        }
        p
    }

    #[test]
    fn the_written_set_runs_at_the_lists_end_after_its_later_changes() {
        let mut ins = Instructions::apply(vec![]);
        ins.write = vec![Action::output(3)];
        let mut p = pipeline(vec![Rule::new(0, 1, vec![], ins)]);
        let acts = [Action::output(OFPP_TABLE), Action::PushVlan { ethertype: 0x8100 }, Action::output(2)];
        assert_eq!(outputs(&p.packet_out(Packet::new(frame()), 1, &acts)), vec![(2, 64), (3, 64)]);
        let acts = [Action::output(OFPP_TABLE), Action::Exit];
        assert!(outputs(&p.packet_out(Packet::new(frame()), 1, &acts)).is_empty(), "exit: the set does not run");
    }

    #[test]
    fn the_lookup_sees_the_state_written_before_it_and_the_list_sees_the_tables() {
        let reg0 = |v| vec![FieldMatch { field: Field::Reg(0), value: v, mask: None }];
        let mut p = pipeline(vec![
            Rule::new(0, 2, reg0(5), Instructions::apply(vec![Action::PushVlan { ethertype: 0x8100 }, Action::output(3)])),
            Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(4)])),
        ]);
        let load = Action::SetField { field: Field::Reg(0), value: 5 };
        let acts = [load, Action::output(OFPP_TABLE), Action::output(2)];
        assert_eq!(outputs(&p.packet_out(Packet::new(frame()), 1, &acts)), vec![(3, 64), (2, 64)]);
        let acts = [Action::output(OFPP_TABLE), Action::output(2)];
        assert_eq!(outputs(&p.packet_out(Packet::new(frame()), 1, &acts)), vec![(4, 60), (2, 60)]);
    }
}
