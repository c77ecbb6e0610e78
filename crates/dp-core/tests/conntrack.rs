//! Connection tracking through the pipeline: ct, ct(table=...), ct_clear and the
//! ct_* matches (the OVS oracle in tests/dataplane/test_ct_dp_oracle.py checks
//! random rule sets and connection traces against Open vSwitch).

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::rule::CtAction;

const TRK: u128 = 0x20;
const NEW: u128 = 0x01;
const EST: u128 = 0x02;
const RPL: u128 = 0x08;
const INV: u128 = 0x10;

/// An IPv4 UDP (proto 17) or TCP (6, with `flags`) frame from a:sp to b:dp.
fn frame(proto: u8, a: u8, b: u8, sp: u16, dp: u16, flags: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    let l4 = if proto == 6 { 20 } else { 8 };
    f.extend_from_slice(&[0x45, 0, 0, 20 + l4, 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, a, 10, 0, 0, b]);
    dp_core::checksum::ipv4_header_fix(&mut f, 14, 20);
    f.extend_from_slice(&sp.to_be_bytes());
    f.extend_from_slice(&dp.to_be_bytes());
    if proto == 6 {
        f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        f.extend_from_slice(&[0, 8, 0, 0]);
    }
    f.resize(60, 0);
    f
}

fn ports(fates: &[Fate]) -> Vec<u32> {
    let mut v: Vec<u32> = fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect();
    v.sort();
    v
}

fn ct(commit: bool, table: Option<u8>) -> Action {
    Action::Ct(Box::new(CtAction { commit, table, ..Default::default() }))
}

/// A pipeline of `n_tables` tables with ports 1..=`n_ports`.
fn switch(n_tables: usize, n_ports: u32) -> Pipeline {
    let mut p = Pipeline::new(n_tables);
    for port in 1..=n_ports {
        p.add_port(port);
    }
    p
}

fn state(value: u128, mask: u128) -> FieldMatch {
    FieldMatch::masked(Field::CtState, value, mask)
}

/// Table 0 tracks IP in zone 0 and goes on in table 1, where the state picks the port:
/// new -> commit, port 2; established original -> 3; established reply -> 4; invalid -> 5.
fn tracker() -> Pipeline {
    let mut p = switch(3, 5);
    let ip = FieldMatch::exact(Field::EthType, 0x0800);
    p.add_rule(Rule::new(0, 1, vec![ip], Instructions::apply(vec![ct(false, Some(1))]))).unwrap();
    let rules = [
        (state(TRK | NEW, TRK | NEW | INV), vec![ct(true, None), Action::output(2)]),
        (state(TRK | EST, TRK | EST | RPL | INV), vec![Action::output(3)]),
        (state(TRK | EST | RPL, TRK | EST | RPL | INV), vec![Action::output(4)]),
        (state(TRK | INV, TRK | INV), vec![Action::output(5)]),
    ];
    for (i, (m, acts)) in rules.into_iter().enumerate() {
        p.add_rule(Rule::new(1, 10 + i as u16, vec![ip, m], Instructions::apply(acts))).unwrap();
    }
    p
}

#[test]
fn udp_is_new_until_the_reply_then_established_both_ways() {
    let mut p = tracker();
    let out = frame(17, 1, 2, 1000, 53, 0);
    let back = frame(17, 2, 1, 53, 1000, 0);
    assert_eq!(ports(&p.process(Packet::new(out.clone()), 1)), vec![2]);
    assert_eq!(ports(&p.process(Packet::new(out.clone()), 1)), vec![2]); // no reply yet: still new
    assert_eq!(ports(&p.process(Packet::new(back.clone()), 2)), vec![4]); // reply: +est+rpl
    assert_eq!(ports(&p.process(Packet::new(out), 1)), vec![3]);
    assert_eq!(ports(&p.process(Packet::new(back), 2)), vec![4]);
    assert_eq!(p.ct_stats(), (1, 0));
}

#[test]
fn tcp_handshake_and_what_cannot_open_a_connection() {
    let mut p = tracker();
    // a SYN+ACK with no connection is invalid; so is a segment with no flags
    assert_eq!(ports(&p.process(Packet::new(frame(6, 2, 1, 80, 5000, 0x12)), 2)), vec![5]);
    assert_eq!(ports(&p.process(Packet::new(frame(6, 1, 2, 5000, 80, 0x00)), 1)), vec![5]);
    assert_eq!(ports(&p.process(Packet::new(frame(6, 1, 2, 5000, 80, 0x02)), 1)), vec![2]); // SYN: new, committed
    assert_eq!(ports(&p.process(Packet::new(frame(6, 2, 1, 80, 5000, 0x12)), 2)), vec![4]); // SYN+ACK reply
    assert_eq!(ports(&p.process(Packet::new(frame(6, 1, 2, 5000, 80, 0x10)), 1)), vec![3]); // ACK
    assert_eq!(ports(&p.process(Packet::new(frame(6, 1, 2, 5000, 80, 0x03)), 1)), vec![5]); // SYN+FIN: invalid
}

#[test]
fn the_packet_itself_goes_on_untracked_and_ct_clear_untracks() {
    let mut p = switch(3, 4);
    let ip = FieldMatch::exact(Field::EthType, 0x0800);
    // table 0: track and fork into table 1, then go on to table 2 with the original
    p.add_rule(Rule::new(0, 1, vec![ip], Instructions { apply: vec![ct(false, Some(1))], goto: Some(2), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 1, vec![ip, state(TRK, TRK)], Instructions::apply(vec![Action::CtClear, Action::Output { port: OFPP_CONTROLLER, max_len: 0xffff }, Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(2, 2, vec![ip, state(0, TRK)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(2, 1, vec![ip], Instructions::apply(vec![Action::output(4)]))).unwrap();
    let fates = p.process(Packet::new(frame(17, 1, 2, 1, 2, 0)), 1);
    assert_eq!(ports(&fates), vec![2, 3]); // the copy in table 1 (tracked), the packet in table 2 (untracked)
    assert!(fates.iter().any(|f| matches!(f, Fate::Controller { table: 1, .. })));
}

#[test]
fn exec_sets_the_connections_mark_and_label_which_later_packets_match() {
    let mut p = switch(3, 4);
    let ip = FieldMatch::exact(Field::EthType, 0x0800);
    let commit = CtAction { commit: true, zone: 9, set_mark: Some((0x50, 0xf0)), set_label: Some((1 << 100, 1 << 100)), ..Default::default() };
    let track = CtAction { zone: 9, table: Some(1), ..Default::default() };
    p.add_rule(Rule::new(0, 1, vec![ip], Instructions::apply(vec![Action::Ct(Box::new(track))]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![ip], Instructions::apply(vec![Action::Ct(Box::new(commit)), Action::output(2)]))).unwrap();
    let marked = vec![ip, FieldMatch::masked(Field::CtMark, 0x50, 0xf0), FieldMatch::exact(Field::CtZone, 9), FieldMatch::masked(Field::CtLabel, 1 << 100, 1 << 100)];
    p.add_rule(Rule::new(1, 2, marked, Instructions::apply(vec![Action::output(3)]))).unwrap();
    let tuple = vec![ip, state(TRK, TRK | INV), FieldMatch::exact(Field::CtNwSrc, 0x0a00_0001), FieldMatch::exact(Field::CtTpDst, 53), FieldMatch::exact(Field::CtNwProto, 17)];
    let commit9 = CtAction { commit: true, zone: 9, ..Default::default() };
    p.add_rule(Rule::new(1, 3, tuple, Instructions::apply(vec![Action::Ct(Box::new(commit9)), Action::output(4)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(frame(17, 9, 2, 1, 7, 0)), 1)), vec![2]);
    assert_eq!(ports(&p.process(Packet::new(frame(17, 9, 2, 1, 7, 0)), 1)), vec![3]); // the mark, zone and label
    // the original tuple: a reply matches its connection's source, not its own
    assert_eq!(ports(&p.process(Packet::new(frame(17, 1, 2, 1, 53, 0)), 1)), vec![4]);
    assert_eq!(ports(&p.process(Packet::new(frame(17, 2, 1, 53, 1, 0)), 2)), vec![4]);
}

#[test]
fn a_full_table_commits_nothing_and_expired_connections_make_room() {
    let mut p = tracker();
    p.set_ct_limit(1);
    assert_eq!(ports(&p.process(Packet::new(frame(17, 1, 2, 1, 53, 0)), 1)), vec![2]);
    assert_eq!(ports(&p.process(Packet::new(frame(17, 1, 2, 2, 53, 0)), 1)), vec![2]); // new, but not kept
    assert_eq!(p.ct_stats(), (1, 1));
    assert_eq!(ports(&p.process(Packet::new(frame(17, 2, 1, 53, 2, 0)), 3)), vec![2]); // no connection: new
    assert_eq!(p.ct_stats(), (1, 2)); // (its commit found the table full too)
    p.set_now_ns(31_000_000_000); // UDP's first-packet timeout (30 s) has passed
    assert_eq!(ports(&p.process(Packet::new(frame(17, 1, 2, 3, 53, 0)), 1)), vec![2]);
    assert_eq!(p.ct_stats(), (1, 2)); // the old connection swept, the new one kept
    assert_eq!(ports(&p.process(Packet::new(frame(17, 2, 1, 53, 3, 0)), 2)), vec![4]);
}

#[test]
fn recirculating_into_the_same_table_stops_at_the_datapaths_depth() {
    let mut p = switch(1, 2);
    let ip = FieldMatch::exact(Field::EthType, 0x0800);
    p.add_rule(Rule::new(0, 1, vec![ip], Instructions::apply(vec![ct(false, Some(0)), Action::output(2)]))).unwrap();
    let fates = p.process(Packet::new(frame(17, 1, 2, 1, 2, 0)), 1);
    assert_eq!(ports(&fates).len(), 7); // the packet and six recirculated copies
    assert!(fates.iter().any(|f| matches!(f, Fate::Drop { reason: DropReason::RecircDepth })));
}


/// After a ct with nat the datapath caches no connection (Open vSwitch 3.1's
/// set_cached_conn): the next ct in the zone looks the translated packet up again and
/// checks the segment anew, so the ACK that opened the connection is +est there; after
/// a ct without nat the cached verdict (+new) stays.
#[test]
fn a_ct_after_a_ct_with_nat_tracks_the_packet_again() {
    use dp_core::ct_nat::{NatKind, NatSpec};
    let spec = NatSpec { kind: NatKind::Src, addrs: Some((0x0A00_0009, 0x0A00_0009)), ports: None };
    for (nat, want) in [(None, 2), (Some(spec), 3)] {
        let mut p = switch(2, 3);
        let ip = FieldMatch::exact(Field::EthType, 0x0800);
        let commit = Action::Ct(Box::new(CtAction { commit: true, nat, ..Default::default() }));
        p.add_rule(Rule::new(0, 1, vec![ip], Instructions::apply(vec![commit, ct(false, Some(1))]))).unwrap();
        p.add_rule(Rule::new(1, 1, vec![ip, state(TRK | NEW, TRK | NEW)], Instructions::apply(vec![Action::output(2)]))).unwrap();
        p.add_rule(Rule::new(1, 1, vec![ip, state(TRK | EST, TRK | EST | RPL)], Instructions::apply(vec![Action::output(3)]))).unwrap();
        let mut ack = frame(6, 1, 2, 5000, 80, 0x10);
        ack[42..46].copy_from_slice(&5001u32.to_be_bytes()); // (an acknowledgement number, as a pickup carries)
        assert_eq!(ports(&p.process(Packet::new(ack), 1)), vec![want], "nat {nat:?}");
    }
}
