//! Open vSwitch's `tun_flags` (NXM_NX_TUN_FLAGS: one public flag, OAM, bit 0) in dp-core:
//! 0 on arrival, written by set_field / load / move, matched in a later table, beside
//! `tun_gbp_flags` in the same key word without touching it, and in packet-ins when set.

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::{ControllerAction, Subfield};

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn switch(n_tables: usize) -> Pipeline {
    let mut p = Pipeline::new(n_tables);
    for port in 1..=4 {
        p.add_port(port);
    }
    p
}

fn outputs(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

fn table1_sorts_by_flags(p: &mut Pipeline) {
    let m = |flags, gbp| vec![FieldMatch::exact(Field::TunFlags, flags), FieldMatch::exact(Field::TunGbpFlags, gbp)];
    p.add_rule(Rule::new(1, 9, m(1, 0xff), Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(1, 8, m(0, 0xff), Instructions::apply(vec![Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(4)]))).unwrap();
}

#[test]
fn tun_flags_is_0_on_arrival_and_set_field_writes_it_for_a_later_table() {
    for (write, want) in [(vec![Action::SetField { field: Field::TunFlags, value: 1 }], 2), (vec![], 3)] {
        let mut p = switch(2);
        let mut acts = vec![Action::SetField { field: Field::TunGbpFlags, value: 0xff }];
        acts.extend(write);
        let zero = vec![FieldMatch::exact(Field::TunFlags, 0)];
        p.add_rule(Rule::new(0, 5, zero, Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
        table1_sorts_by_flags(&mut p);
        assert_eq!(outputs(&p.process(Packet::new(frame()), 1)), vec![want]);
    }
}

#[test]
fn a_load_and_a_move_write_the_one_bit_and_clearing_it_leaves_gbp_flags() {
    let mut p = switch(2);
    let mv = Action::Move { src: Subfield { field: Field::Reg(0), ofs: 3, n_bits: 1 }, dst: Subfield { field: Field::TunFlags, ofs: 0, n_bits: 1 } };
    let acts = vec![
        Action::SetField { field: Field::TunGbpFlags, value: 0xff },
        Action::SetMasked { field: Field::TunFlags, value: 1, mask: 1 },
        Action::SetField { field: Field::Reg(0), value: 0x8 },
        mv,
    ];
    p.add_rule(Rule::new(0, 5, vec![], Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
    table1_sorts_by_flags(&mut p);
    assert_eq!(outputs(&p.process(Packet::new(frame()), 1)), vec![2]);
    // clearing the bit again (reg0 bit 3 is 0 here) keeps tun_gbp_flags as written
    let mut q = switch(2);
    let mv0 = Action::Move { src: Subfield { field: Field::Reg(0), ofs: 3, n_bits: 1 }, dst: Subfield { field: Field::TunFlags, ofs: 0, n_bits: 1 } };
    let acts = vec![Action::SetField { field: Field::TunGbpFlags, value: 0xff }, Action::SetField { field: Field::TunFlags, value: 1 }, mv0];
    q.add_rule(Rule::new(0, 5, vec![], Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
    table1_sorts_by_flags(&mut q);
    assert_eq!(outputs(&q.process(Packet::new(frame()), 1)), vec![3]);
}

#[test]
fn a_packet_in_carries_tun_flags_once_set() {
    let mut p = switch(1);
    let ctl = Action::Controller(Box::new(ControllerAction { max_len: 0xffff, controller_id: 0, reason: Some(ControllerReason::Action), userdata: vec![], meter_id: None }));
    let acts = vec![Action::SetField { field: Field::TunFlags, value: 1 }, ctl];
    p.add_rule(Rule::new(0, 5, vec![], Instructions::apply(acts))).unwrap();
    let fates = p.process(Packet::new(frame()), 1);
    let meta = fates.iter().find_map(|f| if let Fate::Controller { meta, .. } = f { Some(meta.clone()) } else { None }).unwrap();
    assert_eq!(meta, vec![(Field::TunFlags, 1)]);
    assert_eq!(Field::from_name("tun_flags"), Some(Field::TunFlags));
    assert_eq!(Field::TunFlags.name(), "tun_flags");
}
