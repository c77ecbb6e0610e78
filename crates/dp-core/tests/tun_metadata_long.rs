//! `tun_metadataN` options mapped longer than 16 bytes (Open vSwitch maps up to 124) in
//! dp-core: set_field / load of bits past 127 (`Action::SetTunMetadataWide`), moves, pushes
//! and pops of any bit range, a whole set_field clearing the bits past 127, and matches on
//! bits 0..119 of such an option. What the table sees is shown by moving bits into eth_src
//! (the output frame) or by a match in table 1.

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::Subfield;
use dp_core::tunwide::{of_u128, WideSet};

const MD2: Field = Field::TunMetadata(2);
const MD3: Field = Field::TunMetadata(3);

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn sub(field: Field, ofs: u32, n_bits: u32) -> Subfield {
    Subfield { field, ofs, n_bits }
}

/// eth_src[0..31] after table 0 runs `acts` and then moves `shown` there.
fn shown(mut acts: Vec<Action>, shown: Subfield) -> u32 {
    let mut p = Pipeline::new(1);
    p.add_port(1);
    p.add_port(2);
    acts.push(Action::Move { src: shown, dst: sub(Field::EthSrc, 0, shown.n_bits) });
    acts.push(Action::output(1));
    p.add_rule(Rule::new(0, 5, vec![], Instructions::apply(acts))).unwrap();
    let fates = p.process(Packet::new(frame()), 2);
    let Some(Fate::Output { packet, .. }) = fates.first() else { panic!("no output: {fates:?}") };
    u32::from_be_bytes(packet.data[8..12].try_into().unwrap())
}

/// A set of `value` on bits `ofs..ofs+n` of option `opt`.
fn load(opt: u8, ofs: u32, n: u32, value: u128) -> Action {
    let mut s = WideSet { opt, value: [0; 8], mask: [0; 8] };
    dp_core::tunwide::put_bits(&mut s.value, ofs, n, &of_u128(value));
    dp_core::tunwide::put_bits(&mut s.mask, ofs, n, &of_u128(u128::MAX));
    Action::SetTunMetadataWide(Box::new(s))
}

#[test]
fn a_load_past_bit_127_reads_back_and_keeps_the_other_bits() {
    let acts = vec![load(3, 960, 32, 0xdead_beef), load(3, 976, 8, 0x11)];
    assert_eq!(shown(acts.clone(), sub(MD3, 960, 32)), 0xde11_beef);
    assert_eq!(shown(acts, sub(MD3, 0, 32)), 0); // (bits never written read 0)
}

#[test]
fn moves_cross_bit_127_and_between_options() {
    let acts = vec![
        load(3, 100, 64, 0x0102_0304_0506_0708),
        Action::Move { src: sub(MD3, 100, 64), dst: sub(MD2, 900, 64) },
        Action::Move { src: sub(MD2, 900, 400 - 300), dst: sub(MD3, 500, 100) }, // (a wide move: 100 bits)
    ];
    assert_eq!(shown(acts.clone(), sub(MD2, 900, 32)), 0x0506_0708);
    assert_eq!(shown(acts.clone(), sub(MD2, 932, 32)), 0x0102_0304);
    assert_eq!(shown(acts, sub(MD3, 532, 32)), 0x0102_0304);
    // an overlapping move reads its whole source first
    let acts = vec![load(2, 0, 64, 0x1111_2222_3333_4444), Action::Move { src: sub(MD2, 0, 960), dst: sub(MD2, 32, 960) }];
    assert_eq!(shown(acts.clone(), sub(MD2, 32, 32)), 0x3333_4444);
    assert_eq!(shown(acts, sub(MD2, 64, 32)), 0x1111_2222);
}

#[test]
fn a_whole_set_field_clears_the_bits_past_127() {
    let acts = vec![load(3, 900, 32, 0xffff_ffff), Action::SetField { field: MD3, value: 7 }];
    assert_eq!(shown(acts.clone(), sub(MD3, 900, 32)), 0);
    assert_eq!(shown(acts, sub(MD3, 0, 32)), 7);
    // a masked write of bits 120..127 keeps the bits past 127
    let acts = vec![load(3, 120, 16, 0xabcd), Action::SetMasked { field: MD3, value: 0x12 << 120, mask: 0xff << 120 }];
    assert_eq!(shown(acts, sub(MD3, 120, 16)), 0xab12);
}

#[test]
fn a_wide_push_is_one_stack_entry_whose_low_bits_a_narrow_pop_takes() {
    let acts = vec![
        load(3, 0, 128, 0x0a0b_0c0d << 96 | 0x0102_0304),
        load(3, 960, 32, 0xcafe_f00d),
        Action::StackPush(sub(Field::Reg(0), 0, 32)),
        Action::StackPush(sub(MD3, 0, 992)),
        Action::StackPop(sub(MD2, 0, 992)),
        Action::StackPop(sub(Field::Reg(1), 0, 32)),
    ];
    assert_eq!(shown(acts.clone(), sub(MD2, 960, 32)), 0xcafe_f00d);
    assert_eq!(shown(acts.clone(), sub(MD2, 96, 32)), 0x0a0b_0c0d);
    assert_eq!(shown(acts, sub(Field::Reg(1), 0, 32)), 0); // (reg0's entry, under the wide one)
    let acts = vec![load(3, 960, 32, 0xcafe_f00d), load(3, 0, 32, 0x55), Action::StackPush(sub(MD3, 0, 992)),
                    Action::StackPop(sub(Field::Reg(1), 0, 32)), Action::StackPush(sub(Field::Reg(1), 0, 32)),
                    Action::StackPop(sub(MD2, 0, 992))];
    assert_eq!(shown(acts.clone(), sub(MD2, 0, 32)), 0x55);
    assert_eq!(shown(acts, sub(MD2, 960, 32)), 0); // (the narrow push's entry has no wide bits)
}

#[test]
fn a_later_table_matches_bits_0_to_119_of_a_long_option() {
    let mut p = Pipeline::new(2);
    for port in 1..=4 {
        p.add_port(port);
    }
    let acts = vec![load(3, 960, 32, 0xffff_ffff), load(3, 0, 8, 0x5)];
    p.add_rule(Rule::new(0, 5, vec![], Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 9, vec![FieldMatch::masked(MD3, 0x5, 0xff)], Instructions::apply(vec![Action::output(1)]))).unwrap();
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(4)]))).unwrap();
    let fates = p.process(Packet::new(frame()), 3);
    assert!(matches!(fates.as_slice(), [Fate::Output { port: 1, .. }]), "{fates:?}");
}

#[test]
fn check_pkt_larger_and_output_reg_take_operands_past_bit_127() {
    // check_pkt_larger writes bit 990 (the frame is 60 bytes), keeping the bits around it
    let acts = vec![load(3, 960, 32, 0x1234_5678), Action::CheckPktLarger { pkt_len: 10, dst: sub(MD3, 990, 1) }];
    assert_eq!(shown(acts, sub(MD3, 960, 32)), 0x5234_5678);
    let acts = vec![load(3, 960, 32, 0xffff_ffff), Action::CheckPktLarger { pkt_len: 100, dst: sub(MD3, 961, 1) }];
    assert_eq!(shown(acts, sub(MD3, 960, 32)), 0xffff_fffd);
    // a subfield crossing bit 127 writes both parts
    let acts = vec![Action::CheckPktLarger { pkt_len: 10, dst: sub(MD2, 127, 1) }, Action::CheckPktLarger { pkt_len: 10, dst: sub(MD2, 128, 1) }];
    assert_eq!(shown(acts, sub(MD2, 112, 32)), 0x0001_8000);
    // output:FIELD of bits 900..915
    let mut p = Pipeline::new(1);
    p.add_port(1);
    p.add_port(2);
    let acts = vec![load(2, 900, 16, 1), Action::OutputReg { src: sub(MD2, 900, 16), max_len: 0xffff }];
    p.add_rule(Rule::new(0, 5, vec![], Instructions::apply(acts))).unwrap();
    let fates = p.process(Packet::new(frame()), 2);
    assert!(matches!(fates.as_slice(), [Fate::Output { port: 1, .. }]), "{fates:?}");
}
