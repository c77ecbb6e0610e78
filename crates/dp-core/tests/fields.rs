//! The Open vSwitch fields issue 15 added last: a whole-TCI match that leaves the
//! tag bit unmatched, and `recirc_id` (0 on arrival, set in a copy `ct(table=T)`
//! recirculates). The OVS oracle (`tandem bench of13_oracle`, `ct_oracle
//! --recirc-id`) checks them against Open vSwitch.

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::{CtAction, Subfield};

fn udp() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    dp_core::checksum::ipv4_header_fix(&mut f, 14, 20);
    f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

fn tagged(tci: u16) -> Vec<u8> {
    let mut f = udp();
    f.splice(12..12, [0x81, 0x00, (tci >> 8) as u8, tci as u8]);
    f
}

fn ports(fates: &[Fate]) -> Vec<u32> {
    let mut v: Vec<u32> = fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect();
    v.sort();
    v
}

fn switch(n_tables: usize) -> Pipeline {
    let mut p = Pipeline::new(n_tables);
    for port in 1..=4 {
        p.add_port(port);
    }
    p
}

/// `vlan_tci=0x0005/0x2fff`: PCP bit 0 clear and VID 5 under the mask, the tag bit not
/// matched, so an untagged frame (TCI 0) meets it only when the VID bits are 0 too.
#[test]
fn a_tci_match_without_the_tag_bit_meets_untagged_frames_as_tci_zero() {
    let mut p = switch(1);
    let m = vec![FieldMatch::masked(Field::VlanVid, 0, 0x0fff), FieldMatch::masked(Field::VlanPcp, 0, 7)];
    p.add_rule(Rule::new(0, 5, m, Instructions::apply(vec![Action::output(2)]))).unwrap();
    let m = vec![FieldMatch::masked(Field::VlanVid, 5, 0x0fff), FieldMatch::masked(Field::VlanPcp, 0, 1)];
    p.add_rule(Rule::new(0, 4, m, Instructions::apply(vec![Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(4)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp()), 1)), vec![2], "untagged: TCI 0");
    assert_eq!(ports(&p.process(Packet::new(tagged(0x1000)), 1)), vec![2], "VID 0, PCP 0");
    assert_eq!(ports(&p.process(Packet::new(tagged(0x2000)), 1)), vec![4], "PCP 1");
    assert_eq!(ports(&p.process(Packet::new(tagged(0x4005)), 1)), vec![3], "VID 5, PCP 2 (bit 0 clear)");
    assert_eq!(ports(&p.process(Packet::new(tagged(0x6005)), 1)), vec![4], "VID 5, PCP 3");
}

/// recirc_id=0 meets a packet in table 0 and after a goto, never the copy a
/// ct(table=1) recirculates into table 1.
#[test]
fn recirc_id_zero_meets_a_packet_but_not_its_recirculated_copy() {
    let mut p = switch(3);
    let ip = FieldMatch::exact(Field::EthType, 0x0800);
    let fresh = FieldMatch::exact(Field::RecircId, 0);
    let track = Action::Ct(Box::new(CtAction { table: Some(1), ..Default::default() }));
    p.add_rule(Rule::new(0, 9, vec![ip, fresh], Instructions { apply: vec![track], goto: Some(2), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 9, vec![ip, fresh], Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![ip], Instructions::apply(vec![Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(2, 9, vec![ip, fresh], Instructions::apply(vec![Action::output(4)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp()), 1)), vec![3, 4]);
}

/// Tunnel metadata is 0 on arrival; set_field, a masked load and a move write it, and
/// a later table matches what was written.
#[test]
fn tunnel_metadata_is_written_by_actions_and_matched_later() {
    let mut p = switch(3);
    let set = vec![
        Action::SetField { field: Field::TunSrc, value: 0x0a00_0001 },
        Action::SetField { field: Field::TunIpv6Dst, value: 5 },
        Action::SetMasked { field: Field::TunGbpId, value: 0x0700, mask: 0xff00 },
    ];
    let zero = FieldMatch::exact(Field::TunSrc, 0);
    p.add_rule(Rule::new(0, 9, vec![zero], Instructions { apply: set, goto: Some(1), ..Default::default() })).unwrap();
    let m = vec![
        FieldMatch::masked(Field::TunSrc, 0x0a00_0000, 0xff00_0000),
        FieldMatch::exact(Field::TunIpv6Dst, 5),
        FieldMatch::exact(Field::TunGbpId, 0x0700),
        FieldMatch::exact(Field::TunDst, 0),
    ];
    p.add_rule(Rule::new(1, 9, m, Instructions { goto: Some(2), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    let mv = Action::Move { src: Subfield { field: Field::TunIpv6Dst, ofs: 0, n_bits: 8 }, dst: Subfield { field: Field::Reg(0), ofs: 0, n_bits: 8 } };
    p.add_rule(Rule::new(2, 9, vec![], Instructions::apply(vec![mv, Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(2, 10, vec![FieldMatch::exact(Field::Reg(0), 5)], Instructions::apply(vec![Action::output(4)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp()), 1)), vec![2]);
}
