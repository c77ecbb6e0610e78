//! Lookups in table 0 from inside the pipeline, as Open vSwitch 3.1 runs them:
//! output_reg at TABLE's number, output:TABLE written into the action set and in a
//! group bucket (the OVS oracle, `tandem bench of13_oracle -- --items
//! write_output_table,bucket_output_table`, checks them byte for byte).

use dp_core::field::Field;
use dp_core::pipeline::*;

mod common;
use common::{switch, udp};

fn ports(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

/// Table 0: a packet with reg0 = 0 loads `reg0 = 0xfff9` and runs `actions`; one with
/// reg0 = 0xfff9 (found by a lookup in table 0 again) outputs to 3. Group 1 outputs to 2.
fn relook(actions: Vec<Action>, write: Vec<Action>) -> Pipeline {
    let mut p = switch(1);
    p.add_group(Group { id: 1, kind: GroupType::All, buckets: vec![Bucket::new(vec![Action::output(2)], 0)] }).unwrap();
    let mut first = vec![Action::SetField { field: Field::Reg(0), value: 0xfff9 }];
    first.extend(actions);
    p.add_rule(Rule::new(0, 10, vec![FieldMatch::exact(Field::Reg(0), 0)], Instructions { apply: first, write, ..Default::default() }))
        .unwrap();
    p.add_rule(Rule::new(0, 20, vec![FieldMatch::exact(Field::Reg(0), 0xfff9)], Instructions::apply(vec![Action::output(3)]))).unwrap();
    p
}

#[test]
fn output_reg_at_tables_number_looks_table_0_up() {
    let reg = Subfield { field: Field::Reg(0), ofs: 0, n_bits: 16 };
    let mut p = relook(vec![Action::OutputReg { src: reg, max_len: 0xffff }, Action::output(2)], vec![]);
    // (before: dropped as an unsupported port; Open vSwitch looks table 0 up, then goes on)
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![3, 2]);
}

#[test]
fn output_table_written_into_the_action_set_is_its_output_a_lookup_in_table_0() {
    // a later written output:TABLE replaces an earlier written output
    let mut p = relook(vec![], vec![Action::output(4), Action::output(OFPP_TABLE)]);
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![3]);
    // and a written group wins over it
    let mut q = relook(vec![], vec![Action::output(OFPP_TABLE), Action::Group(1)]);
    assert_eq!(ports(&q.process(Packet::new(udp(64)), 1)), vec![2]);
}

#[test]
fn output_table_in_a_bucket_looks_table_0_up_on_the_buckets_copy() {
    let mut p = switch(1);
    let g = Group { id: 1, kind: GroupType::All, buckets: vec![Bucket::new(vec![Action::SetField { field: Field::Reg(0), value: 0xfff9 }, Action::output(OFPP_TABLE)], 0)] };
    p.add_group(g).unwrap();
    p.add_rule(Rule::new(0, 10, vec![FieldMatch::exact(Field::Reg(0), 0)], Instructions::apply(vec![Action::Group(1), Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(0, 20, vec![FieldMatch::exact(Field::Reg(0), 0xfff9)], Instructions::apply(vec![Action::output(3)]))).unwrap();
    // the bucket's load is rolled back after it: the rule goes on with reg0 = 0
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![3, 2]);
}

#[test]
fn a_lookup_loop_through_a_bucket_nests_twice_per_round_as_in_open_vswitch() {
    // table 0: dec_ttl, output:2, group 1, whose bucket looks table 0 up again. With TTL 64,
    // Open vSwitch meets its depth limit (64) after 32 rounds (the bucket and the lookup each
    // nest one level) and drops the packet whole, before the TTL runs out
    let mut p = switch(1);
    p.add_group(Group { id: 1, kind: GroupType::Indirect, buckets: vec![Bucket::new(vec![Action::Resubmit { in_port: OFPP_IN_PORT, table: 0 }], 0)] })
        .unwrap();
    p.add_rule(Rule::new(0, 10, vec![], Instructions::apply(vec![Action::DecTtl, Action::output(2), Action::Group(1)]))).unwrap();
    assert_eq!(p.process(Packet::new(udp(64)), 1), vec![Fate::Drop { reason: DropReason::ResubmitLimit }]);
    // with TTL 20 the TTL runs out first: 19 frames, then the packet-in of the expired TTL
    let fates = p.process(Packet::new(udp(20)), 1);
    assert_eq!(ports(&fates).len(), 19);
}
