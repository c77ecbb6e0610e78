//! `ct(table=T)` where the rule's own list is not the one running: after a lookup, in a
//! clone, in a bucket of a group a looked-up rule applies. Open vSwitch 3.1 recirculates
//! the tracked copy there (measured on a dummy bridge, tests/dataplane/test_ct_forks_oracle.py):
//! the copy's outputs first, then the rest of the lists.

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::CtAction;

mod common;
use common::{switch, udp};

fn ct(table: u8) -> Action {
    Action::Ct(Box::new(CtAction { table: Some(table), ..Default::default() }))
}

fn resubmit(table: u8) -> Action {
    Action::Resubmit { in_port: OFPP_IN_PORT, table }
}

fn ports(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

fn counter(p: &Pipeline, name: &str) -> u64 {
    p.counters().into_iter().find(|(n, _)| n == name).map_or(0, |(_, v)| v)
}

#[test]
fn a_ct_a_resubmit_found_recirculates_its_copy_first() {
    let mut p = switch(3);
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![resubmit(1), Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![ct(2), Action::output(4)]))).unwrap();
    p.add_rule(Rule::new(2, 1, vec![], Instructions::apply(vec![Action::output(2)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2, 4, 3]);
    assert_eq!(counter(&p, "table.2.lookups"), 1);
    assert_eq!(counter(&p, "table.2.matched"), 1);
}

#[test]
fn the_copy_carries_registers_metadata_and_the_stack_of_that_moment() {
    let mut p = switch(4);
    let reg = |i: u8, v: u128| Action::SetField { field: Field::Reg(i), value: v };
    let r = |i: u8| Subfield { field: Field::Reg(i), ofs: 0, n_bits: 32 };
    let ins = Instructions { apply: vec![reg(0, 5)], write_metadata: Some((7, u64::MAX)), goto: Some(1), ..Default::default() };
    p.add_rule(Rule::new(0, 1, vec![], ins)).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![resubmit(2), Action::output(3)]))).unwrap();
    let apply = vec![reg(1, 7), Action::StackPush(r(1)), ct(3), reg(0, 9), Action::output(3)];
    p.add_rule(Rule::new(2, 1, vec![], Instructions::apply(apply))).unwrap();
    let m = vec![FieldMatch::exact(Field::Reg(0), 5), FieldMatch::exact(Field::Reg(1), 7), FieldMatch::exact(Field::Metadata, 7)];
    let eth_dst_low = Subfield { field: Field::EthDst, ofs: 0, n_bits: 8 };
    let apply = vec![Action::StackPop(r(2)), Action::Move { src: Subfield { field: Field::Reg(2), ofs: 0, n_bits: 8 }, dst: eth_dst_low }, Action::output(2)];
    p.add_rule(Rule::new(3, 2, m, Instructions::apply(apply))).unwrap();
    p.add_rule(Rule::new(3, 1, vec![], Instructions::apply(vec![Action::output(4)]))).unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    assert_eq!(ports(&fates), vec![2, 3, 3]);
    let Fate::Output { packet, .. } = &fates[0] else { panic!("{fates:?}") };
    assert_eq!(packet.data[5], 7);
}

#[test]
fn in_a_clone_and_in_a_bucket_after_a_lookup_the_copy_recirculates_too() {
    let mut p = switch(3);
    let buckets = vec![Bucket::new(vec![ct(2)], 1), Bucket::new(vec![Action::output(4)], 1)];
    p.add_group(Group { id: 1, kind: GroupType::All, buckets }).unwrap();
    let clone = Action::Clone(vec![resubmit(1), Action::output(2)]);
    p.add_rule(Rule::new(0, 2, vec![FieldMatch::exact(Field::InPort, 1)], Instructions::apply(vec![clone, Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![resubmit(1), Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(1, 2, vec![FieldMatch::exact(Field::InPort, 1)], Instructions::apply(vec![ct(2), Action::output(4)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::Group(1)]))).unwrap();
    p.add_rule(Rule::new(2, 1, vec![], Instructions::apply(vec![Action::output(2)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2, 4, 2, 3]);
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 3)), vec![2, 4]); // (3 is the in_port)
}

#[test]
fn recirculating_in_place_stops_at_the_datapath_depth() {
    let mut p = switch(2);
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![resubmit(1)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![ct(0), Action::output(2)]))).unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    assert_eq!(ports(&fates).len(), 7); // (the packet and six recirculations)
    assert!(fates.iter().any(|f| matches!(f, Fate::Drop { reason: DropReason::RecircDepth })));
}
