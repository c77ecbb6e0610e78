//! Open vSwitch's `clone(actions)` through the public Rust API (tests/dataplane/
//! test_clone_oracle.py checks the same cases against Open vSwitch itself).

use dp_core::field::Field;
use dp_core::pipeline::*;

mod common;
use common::{switch, udp};

fn outputs(fates: &[Fate]) -> Vec<(u32, Vec<u8>)> {
    fates.iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None }).collect()
}

#[test]
fn the_packet_leaves_a_clone_as_it_entered() {
    let mut p = switch(1);
    let nested = vec![Action::PushVlan { ethertype: 0x8100 }, Action::SetField { field: Field::EthDst, value: 0x0200_0000_00aa }, Action::output(2)];
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Clone(nested), Action::output(3)]))).unwrap();
    let out = outputs(&p.process(Packet::new(udp(64)), 1));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(&out[0].1[12..14], &[0x81, 0x00]);
    assert_eq!(&out[0].1[0..6], &[2, 0, 0, 0, 0, 0xaa]);
    assert_eq!(out[1].1, udp(64));
}

#[test]
fn the_copy_runs_the_action_set_written_so_far_and_the_packet_keeps_it() {
    let mut p = switch(2);
    let write = vec![Action::output(4)];
    p.add_rule(Rule::new(0, 1, vec![], Instructions { write, goto: Some(1), ..Default::default() })).unwrap();
    let clone = Action::Clone(vec![Action::SetField { field: Field::EthSrc, value: 0x0200_0000_00bb }, Action::output(2)]);
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![clone, Action::output(3)]))).unwrap();
    let out = outputs(&p.process(Packet::new(udp(64)), 1));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![2, 4, 3, 4]);
    assert_eq!(&out[1].1[6..12], &[2, 0, 0, 0, 0, 0xbb]); // the copy's action set, on the copy
    assert_eq!(out[3].1, udp(64));
}

#[test]
fn exit_inside_a_clone_ends_the_pipeline_and_a_ttl_exception_only_the_clone() {
    let mut p = switch(2);
    p.add_rule(Rule::new(0, 1, vec![], Instructions { write: vec![Action::output(4)], goto: Some(1), ..Default::default() })).unwrap();
    let ins = Instructions::apply(vec![Action::Clone(vec![Action::output(2), Action::Exit]), Action::output(3)]);
    p.add_rule(Rule::new(1, 2, vec![FieldMatch::exact(Field::InPort, 1)], ins)).unwrap();
    let ins = Instructions::apply(vec![Action::Clone(vec![Action::DecTtl, Action::output(2)]), Action::output(3)]);
    p.add_rule(Rule::new(1, 1, vec![], ins)).unwrap();
    assert_eq!(outputs(&p.process(Packet::new(udp(64)), 1)).iter().map(|o| o.0).collect::<Vec<_>>(), vec![2]);
    let fates = p.process(Packet::new(udp(1)), 2);
    assert_eq!(outputs(&fates).iter().map(|o| o.0).collect::<Vec<_>>(), vec![4, 3, 4]);
    assert!(fates.iter().any(|f| matches!(f, Fate::Controller { .. })));
}

#[test]
fn registers_stack_and_mark_are_the_copys_own() {
    let mut p = switch(2);
    let nested = vec![Action::SetField { field: Field::Reg(0), value: 7 }, Action::SetField { field: Field::PktMark, value: 9 },
                      Action::StackPop(Subfield { field: Field::Reg(1), ofs: 0, n_bits: 32 }), Action::Resubmit { in_port: OFPP_IN_PORT, table: 1 }];
    let apply = vec![Action::SetField { field: Field::Reg(0), value: 5 }, Action::StackPush(Subfield { field: Field::Reg(0), ofs: 0, n_bits: 32 }),
                     Action::Clone(nested), Action::Resubmit { in_port: OFPP_IN_PORT, table: 1 }];
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(apply))).unwrap();
    let copy = vec![FieldMatch::exact(Field::Reg(0), 7), FieldMatch::exact(Field::Reg(1), 5), FieldMatch::exact(Field::PktMark, 9)];
    p.add_rule(Rule::new(1, 2, copy, Instructions::apply(vec![Action::output(2)]))).unwrap();
    let orig = vec![FieldMatch::exact(Field::Reg(0), 5), FieldMatch::exact(Field::Reg(1), 0), FieldMatch::exact(Field::PktMark, 0)];
    p.add_rule(Rule::new(1, 1, orig, Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(outputs(&p.process(Packet::new(udp(64)), 1)).iter().map(|o| o.0).collect::<Vec<_>>(), vec![2, 3]);
}

#[test]
fn a_group_inside_a_clone_is_a_reference_and_outputs_count_for_filters() {
    let mut p = switch(1);
    let r = Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Clone(vec![Action::Group(9)])]));
    assert!(p.add_rule(r.clone()).is_err()); // no group 9
    let r = Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Clone(vec![Action::Clone(vec![Action::output(4)])])]));
    assert!(r.outputs_to(4, OFPG_ANY) && !r.outputs_to(3, OFPG_ANY));
}

#[test]
fn lookups_before_and_inside_a_clone_count_once_each() {
    // (the copy's lookups were once appended after the packet's own, which the copy
    // already held: each clone doubled the earlier counts, nested clones exponentially)
    let mut p = switch(3);
    let nested = vec![Action::Resubmit { in_port: OFPP_IN_PORT, table: 2 }];
    let apply = vec![Action::Resubmit { in_port: OFPP_IN_PORT, table: 1 }, Action::Clone(nested.clone()),
                     Action::Clone(vec![Action::Clone(nested)])];
    let top = p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(apply))).unwrap();
    let one = p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(2)]))).unwrap();
    let two = p.add_rule(Rule::new(2, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(outputs(&p.process(Packet::new(udp(64)), 1)).iter().map(|o| o.0).collect::<Vec<_>>(), vec![2, 3, 3]);
    assert_eq!(p.rule_stats(top).map(|s| s.packets), Some(1));
    assert_eq!(p.rule_stats(one).map(|s| s.packets), Some(1));
    assert_eq!(p.rule_stats(two).map(|s| s.packets), Some(2));
}

#[test]
fn a_delete_learned_learn_inside_a_clone_is_not_counted() {
    // (Open vSwitch 3.1 counts delete_learned in a rule's own list only: deleting the
    // rule whose clone learned leaves the flows it learned; tests/dataplane/test_clone_learn.py)
    use dp_core::learn::*;
    let mut p = switch(2);
    let out = LearnSpec { src: LearnSrc::Field(Subfield { field: Field::InPort, ofs: 0, n_bits: 16 }), dst: LearnDst::Output, n_bits: 16 };
    let learn = Learn { specs: vec![out], table: 1, priority: 5, idle_timeout: 0, hard_timeout: 0, fin_idle_timeout: 0, fin_hard_timeout: 0, cookie: 0x77, send_flow_rem: false,
                        delete_learned: true, limit: 0, result_dst: None };
    let id = p.add_rule(Rule::new(0, 9, vec![], Instructions::apply(vec![Action::Clone(vec![Action::Learn(Box::new(learn))])]))).unwrap();
    p.process(Packet::new(udp(64)), 3);
    assert_eq!(p.learned_flows().len(), 1);
    p.remove_rule(id);
    assert_eq!(p.learned_flows().len(), 1);
}
