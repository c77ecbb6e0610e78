//! A packet-in after `ct(table=T)` lists the tracker's state as Open vSwitch 3.1's does
//! (`pipeline/packet_in_ct.rs`; measured: tests/endpoint/test_packet_in_ct_vs_ovs.py).

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::CtAction;

mod common;
use common::{switch, udp};

fn packet_in_meta(frame: Vec<u8>) -> Vec<(Field, u128)> {
    let mut p = switch(2);
    let ct = CtAction { table: Some(1), zone: 7, ..Default::default() };
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Ct(Box::new(ct))]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(OFPP_CONTROLLER)]))).unwrap();
    let fates = p.process(Packet::new(frame), 1);
    let Some(Fate::Controller { meta, .. }) = fates.iter().find(|f| matches!(f, Fate::Controller { .. })) else {
        panic!("{fates:?}")
    };
    meta.clone()
}

#[test]
fn a_new_udp_packet_lists_eth_type_state_zone_and_the_original_tuple() {
    assert_eq!(packet_in_meta(udp(64)), vec![
        (Field::EthType, 0x0800), (Field::CtState, 0x21), (Field::CtZone, 7), (Field::CtNwSrc, 0x0a00_0001),
        (Field::CtNwDst, 0x0a00_0002), (Field::CtNwProto, 17), (Field::CtTpSrc, 1234), (Field::CtTpDst, 53),
    ]);
}

#[test]
fn an_invalid_packet_lists_eth_type_state_and_zone_but_no_tuple() {
    let mut frame = udp(64);
    frame[20] = 0x20; // (a first fragment: the tracker does not reassemble here, +inv)
    let meta = packet_in_meta(frame);
    assert_eq!(meta, vec![(Field::EthType, 0x0800), (Field::CtState, 0x30), (Field::CtZone, 7)]);
}
