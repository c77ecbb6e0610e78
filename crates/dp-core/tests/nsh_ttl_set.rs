//! `dec_nsh_ttl` in the action set and in group buckets, as measured on Open vSwitch 3.1
//! (ofproto/trace and frames on a dummy bridge): the action set runs it after push_vlan,
//! push_mpls, dec_ttl and dec_mpls_ttl and before the set-fields (OVS's trace: "action set
//! is: dec_ttl,dec_mpls_ttl,dec_nsh_ttl,output:2"); at TTL 0 or 1 a packet-in with reason
//! invalid_ttl and nothing more of the set (or bucket); on a frame that is not NSH (also
//! after a push_mpls) the set stops without a packet-in. A bucket runs as an action set:
//! its dec_nsh_ttl stops that bucket only, and a bucket without an output does nothing.

use dp_core::field::Field;
use dp_core::pipeline::*;

/// An NSH MD type 1 frame (next protocol Ethernet) with NSH TTL `ttl`.
fn nsh(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x89, 0x4f];
    f.extend_from_slice(&[ttl >> 2, (ttl << 6) | 6, 1, 3, 0x00, 0x01, 0x00, 0xff]);
    for c in [0x11u32, 0x22, 0x33, 0x44] {
        f.extend_from_slice(&c.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

fn udp() -> Vec<u8> {
    let mut f = hex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000");
    f.resize(60, 0);
    f
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The NSH TTL of an output frame (untagged, or under `tags` VLAN tags).
fn ttl_of(frame: &[u8], tags: usize) -> u8 {
    let at = 14 + 4 * tags;
    assert_eq!(&frame[at - 2..at], &[0x89, 0x4f], "an NSH frame");
    ((frame[at] & 0x0f) << 2) | (frame[at + 1] >> 6)
}

fn outputs(fates: &[Fate]) -> Vec<(u32, Vec<u8>)> {
    fates.iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None }).collect()
}

fn invalid_ttl_packet_ins(fates: &[Fate]) -> usize {
    fates.iter().filter(|f| matches!(f, Fate::Controller { reason: ControllerReason::InvalidTtl, .. })).count()
}

fn switch(write: Vec<Action>, nsh_only: bool) -> Pipeline {
    let mut p = Pipeline::new(1);
    for port in 1..=4 {
        p.add_port(port);
    }
    let m = if nsh_only { vec![FieldMatch::exact(Field::EthType, 0x894f)] } else { vec![] };
    p.add_rule(Rule::new(0, 9, m, Instructions { write, ..Default::default() })).unwrap();
    p
}

#[test]
fn written_dec_nsh_ttl_decrements_before_the_set_fields() {
    for (write, want) in [
        (vec![Action::DecNshTtl, Action::output(2)], [1, 62]),
        // (the set's set_field runs after its dec_nsh_ttl, whichever was written first)
        (vec![Action::SetField { field: Field::NshTtl, value: 9 }, Action::DecNshTtl, Action::output(2)], [9, 9]),
        (vec![Action::DecNshTtl, Action::SetField { field: Field::NshTtl, value: 9 }, Action::output(2)], [9, 9]),
    ] {
        let mut p = switch(write.clone(), true);
        for (ttl, want) in [2, 63].into_iter().zip(want) {
            let out = outputs(&p.process(Packet::new(nsh(ttl)), 1));
            assert_eq!(out.len(), 1, "{write:?} ttl {ttl}");
            assert_eq!((out[0].0, ttl_of(&out[0].1, 0)), (2, want), "{write:?} ttl {ttl}");
        }
    }
}

#[test]
fn written_dec_nsh_ttl_at_ttl_0_or_1_sends_an_invalid_ttl_packet_in_and_no_output() {
    for write in [vec![Action::DecNshTtl, Action::output(2)], vec![Action::DecNshTtl, Action::output(OFPP_CONTROLLER)]] {
        let mut p = switch(write.clone(), true);
        for ttl in [0, 1] {
            let fates = p.process(Packet::new(nsh(ttl)), 1);
            assert!(outputs(&fates).is_empty(), "{write:?} ttl {ttl}");
            assert_eq!(invalid_ttl_packet_ins(&fates), 1, "{write:?} ttl {ttl}: {fates:?}");
            assert_eq!(fates.len(), 1, "{fates:?}");
        }
    }
}

#[test]
fn written_dec_nsh_ttl_runs_after_push_vlan_and_push_mpls() {
    let mut p = switch(vec![Action::DecNshTtl, Action::PushVlan { ethertype: 0x8100 }, Action::output(2)], true);
    let out = outputs(&p.process(Packet::new(nsh(63)), 1));
    assert_eq!(ttl_of(&out[0].1, 1), 62);
    // after the set's push_mpls the packet is not NSH: the set stops (OVS: "NSH decrement TTL exception")
    let mut p = switch(vec![Action::DecNshTtl, Action::PushMpls { ethertype: 0x8847 }, Action::output(2)], true);
    for ttl in [1, 63] {
        let fates = p.process(Packet::new(nsh(ttl)), 1);
        assert!(outputs(&fates).is_empty() && invalid_ttl_packet_ins(&fates) == 0, "ttl {ttl}: {fates:?}");
    }
}

#[test]
fn written_dec_nsh_ttl_on_a_frame_that_is_not_nsh_stops_the_set() {
    // (Open vSwitch takes dec_nsh_ttl in write_actions without an NSH match)
    let mut p = switch(vec![Action::DecNshTtl, Action::output(2)], false);
    let fates = p.process(Packet::new(udp()), 1);
    assert!(outputs(&fates).is_empty() && invalid_ttl_packet_ins(&fates) == 0, "{fates:?}");
    assert_eq!(ttl_of(&outputs(&p.process(Packet::new(nsh(5)), 1))[0].1, 0), 4);
}

#[test]
fn a_bucket_runs_dec_nsh_ttl_as_an_action_set() {
    let mut p = Pipeline::new(1);
    for port in 1..=4 {
        p.add_port(port);
    }
    let buckets = vec![
        Bucket::new(vec![Action::SetField { field: Field::NshTtl, value: 9 }, Action::DecNshTtl, Action::output(2)], 0),
        Bucket::new(vec![Action::output(3), Action::DecNshTtl], 0),
        Bucket::new(vec![Action::DecNshTtl], 0), // (no output: the bucket does nothing)
    ];
    p.add_group(Group { id: 1, kind: GroupType::All, buckets }).unwrap();
    p.add_rule(Rule::new(0, 9, vec![], Instructions::apply(vec![Action::Group(1)]))).unwrap();
    let got = |p: &mut Pipeline, f: Vec<u8>| {
        let fates = p.process(Packet::new(f), 1);
        let out: Vec<(u32, u8)> = outputs(&fates).iter().map(|(port, d)| (*port, ttl_of(d, 0))).collect();
        (out, invalid_ttl_packet_ins(&fates))
    };
    assert_eq!(got(&mut p, nsh(2)), (vec![(2, 9), (3, 1)], 0));
    assert_eq!(got(&mut p, nsh(63)), (vec![(2, 9), (3, 62)], 0));
    for ttl in [0, 1] {
        assert_eq!(got(&mut p, nsh(ttl)), (vec![], 2), "ttl {ttl}: one packet-in per bucket with an output");
    }
    // not NSH: each bucket with dec_nsh_ttl stops, the group goes on (measured: a bucket
    // `output:3` beside `dec_nsh_ttl,output:2` still sends to 3)
    p.add_group(Group { id: 1, kind: GroupType::All, buckets: vec![
        Bucket::new(vec![Action::DecNshTtl, Action::output(2)], 0),
        Bucket::new(vec![Action::output(3)], 0),
    ] }).unwrap();
    let out = outputs(&p.process(Packet::new(udp()), 1));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![3]);
}
