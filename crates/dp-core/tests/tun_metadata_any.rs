//! Open vSwitch's `set_field:ANY->tun_metadataN` in dp-core (a set_field/load whose mask
//! keeps no bit of the option; the endpoint hands it over as `SetMasked` with mask 0), as
//! an OVS 3.1 bridge runs it (measured with ofproto/trace on a dummy bridge): no bit
//! changes and the option is present from then on, so on a fresh packet
//! `tun_metadata0=0` meets it and a move out of it reads 0; after a write its value stays;
//! after a delete_field it is present again with the bytes it kept. An option's bits past
//! 127 (`pipeline/tunwide.rs`) stay as they were.

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::Subfield;

const MD0: Field = Field::TunMetadata(0);
const MD3: Field = Field::TunMetadata(3);

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn any(field: Field) -> Action {
    Action::SetMasked { field, value: 0, mask: 0 }
}

fn sub(field: Field, ofs: u32, n_bits: u32) -> Subfield {
    Subfield { field, ofs, n_bits }
}

/// Table 0 runs `acts` then goes to table 1: a match on `m` moves `shown` into eth_src[0..31]
/// and outputs to 1, else output 4. (the output port, eth_src[0..31] of the frame)
fn run(acts: Vec<Action>, m: Vec<FieldMatch>, shown: Subfield) -> (u32, u32) {
    let mut p = Pipeline::new(2);
    for port in 1..=4 {
        p.add_port(port);
    }
    p.add_rule(Rule::new(0, 5, vec![], Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
    let mv = Action::Move { src: shown, dst: sub(Field::EthSrc, 0, 32) };
    p.add_rule(Rule::new(1, 9, m, Instructions::apply(vec![mv, Action::output(1)]))).unwrap();
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(4)]))).unwrap();
    let fates = p.process(Packet::new(frame()), 3);
    let Some(Fate::Output { port, packet }) = fates.first() else { panic!("no output: {fates:?}") };
    (*port, u32::from_be_bytes(packet.data[8..12].try_into().unwrap()))
}

#[test]
fn any_on_a_fresh_packet_makes_the_option_present_at_zero() {
    assert_eq!(run(vec![any(MD0)], vec![FieldMatch::exact(MD0, 0)], sub(MD0, 0, 32)), (1, 0));
    assert_eq!(run(vec![], vec![FieldMatch::exact(MD0, 0)], sub(MD0, 0, 32)).0, 4); // (absent without it)
    assert_eq!(run(vec![any(MD0)], vec![FieldMatch::exact(MD3, 0)], sub(MD0, 0, 32)).0, 4); // (only that option)
}

#[test]
fn any_after_a_write_keeps_the_value() {
    let acts = vec![Action::SetField { field: MD0, value: 5 }, any(MD0)];
    assert_eq!(run(acts, vec![FieldMatch::exact(MD0, 5)], sub(MD0, 0, 32)), (1, 5));
}

#[test]
fn any_after_a_delete_field_makes_the_kept_bytes_present_again() {
    let acts = vec![Action::SetField { field: MD0, value: 5 }, Action::DeleteField(MD0), any(MD0)];
    assert_eq!(run(acts, vec![FieldMatch::exact(MD0, 5)], sub(MD0, 0, 32)), (1, 5));
    let acts = vec![Action::SetField { field: MD0, value: 5 }, Action::DeleteField(MD0)];
    assert_eq!(run(acts, vec![FieldMatch::exact(MD0, 5)], sub(MD0, 0, 32)).0, 4);
}

#[test]
fn any_keeps_an_options_bits_past_127() {
    let mv = Action::Move { src: sub(Field::Reg(0), 0, 32), dst: sub(MD3, 960, 32) };
    let acts = vec![Action::SetField { field: Field::Reg(0), value: 0xdead_beef }, mv, any(MD3)];
    assert_eq!(run(acts, vec![FieldMatch::masked(MD3, 0, 0)], sub(MD3, 960, 32)), (1, 0xdead_beef));
}

