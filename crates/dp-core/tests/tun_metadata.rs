//! Open vSwitch's `tun_metadata0..63` in dp-core, as an OVS 3.1 bridge runs them (measured
//! with ofproto/trace on a dummy bridge): absent on arrival, so even `tun_metadata0=0`
//! misses; present once written (set_field, a masked write, a move into it); matched
//! value/mask in a later table; `delete_field` makes it absent but keeps its bytes, which
//! a later masked write or a move out of it sees.

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::Subfield;

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn outputs(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

const MD0: Field = Field::TunMetadata(0);

/// Table 0 runs `acts` then goes to table 1, whose rules are (priority, match, output).
fn run(acts: Vec<Action>, table1: Vec<(u16, Vec<FieldMatch>, u32)>) -> Vec<u32> {
    let mut p = Pipeline::new(2);
    for port in 1..=4 {
        p.add_port(port);
    }
    p.add_rule(Rule::new(0, 5, vec![], Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
    for (prio, m, port) in table1 {
        p.add_rule(Rule::new(1, prio, m, Instructions::apply(vec![Action::output(port)]))).unwrap();
    }
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(4)]))).unwrap();
    outputs(&p.process(Packet::new(frame()), 3))
}

#[test]
fn an_absent_field_meets_no_match_not_even_zero() {
    assert_eq!(run(vec![], vec![(9, vec![FieldMatch::exact(MD0, 0)], 1), (8, vec![FieldMatch::masked(MD0, 0, 0)], 2)]), vec![4]);
    assert_eq!(run(vec![Action::SetField { field: MD0, value: 0 }], vec![(9, vec![FieldMatch::exact(MD0, 0)], 1)]), vec![1]);
}

#[test]
fn set_field_then_value_and_mask_matches_in_a_later_table() {
    let set = || vec![Action::SetField { field: MD0, value: 0x1234_5678 }];
    assert_eq!(run(set(), vec![(9, vec![FieldMatch::masked(MD0, 0x1200_0000, 0xff00_0000)], 1)]), vec![1]);
    assert_eq!(run(set(), vec![(9, vec![FieldMatch::masked(MD0, 0x1300_0000, 0xff00_0000)], 1)]), vec![4]);
    // another index is still absent; a 12-byte option holds 96 bits
    let md3 = Field::TunMetadata(3);
    let wide = 0x1122_3344_5566_7788_99aa_bbcc;
    assert_eq!(run(set(), vec![(9, vec![FieldMatch::masked(md3, 0, 0)], 1)]), vec![4]);
    assert_eq!(run(vec![Action::SetField { field: md3, value: wide }], vec![(9, vec![FieldMatch::exact(md3, wide)], 2)]), vec![2]);
}

#[test]
fn delete_field_hides_the_field_but_keeps_its_bytes() {
    let acts = |more: Vec<Action>| {
        let mut v = vec![Action::SetField { field: MD0, value: 0x1234_5678 }, Action::DeleteField(MD0)];
        v.extend(more);
        v
    };
    assert_eq!(run(acts(vec![]), vec![(9, vec![FieldMatch::exact(MD0, 0x1234_5678)], 1)]), vec![4]);
    // a masked write after the delete keeps the old bytes, and makes it present again
    let masked = Action::SetMasked { field: MD0, value: 0x05, mask: 0xff };
    assert_eq!(run(acts(vec![masked]), vec![(9, vec![FieldMatch::exact(MD0, 0x1234_5605)], 1)]), vec![1]);
    // a move out of the deleted field reads its bytes
    let mv = Action::Move { src: Subfield { field: MD0, ofs: 0, n_bits: 32 }, dst: Subfield { field: Field::Reg(0), ofs: 0, n_bits: 32 } };
    assert_eq!(run(acts(vec![mv]), vec![(9, vec![FieldMatch::exact(Field::Reg(0), 0x1234_5678)], 2)]), vec![2]);
}

#[test]
fn a_move_into_the_field_makes_it_present() {
    let mv = Action::Move { src: Subfield { field: Field::Reg(0), ofs: 0, n_bits: 8 }, dst: Subfield { field: MD0, ofs: 0, n_bits: 8 } };
    assert_eq!(run(vec![mv], vec![(9, vec![FieldMatch::exact(MD0, 0)], 1)]), vec![1]);
    assert_eq!(Field::from_name("tun_metadata63"), Some(Field::TunMetadata(63)));
    assert_eq!(Field::from_name("tun_metadata64"), None);
    assert_eq!(Field::TunMetadata(7).name(), "tun_metadata7");
}
