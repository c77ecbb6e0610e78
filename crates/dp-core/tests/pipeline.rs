//! Pipeline semantics through the public Rust API (the OVS oracle in
//! tests/dataplane covers byte-exactness against Open vSwitch).

use dp_core::field::Field;
use dp_core::pipeline::*;

fn udp(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    dp_core::checksum::ipv4_header_fix(&mut f, 14, 20);
    f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

fn ports(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

fn switch(n_tables: usize) -> Pipeline {
    let mut p = Pipeline::new(n_tables);
    for port in 1..=4 {
        p.add_port(port);
    }
    p
}

#[test]
fn action_set_runs_in_openflow_order_at_pipeline_end() {
    let mut p = switch(2);
    let write = vec![Action::output(3), Action::SetField { field: Field::EthDst, value: 0x0200_0000_00aa }, Action::PushVlan { ethertype: 0x8100 }];
    p.add_rule(Rule::new(0, 1, vec![], Instructions { write, goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(2)]))).unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    assert_eq!(ports(&fates), vec![2, 3]);
    let Fate::Output { packet, .. } = &fates[1] else { panic!() };
    assert_eq!(&packet.data[0..6], &[2, 0, 0, 0, 0, 0xaa]);
    assert_eq!(&packet.data[12..14], &[0x81, 0x00]); // pushed before set-field and output
}

#[test]
fn clear_actions_and_metadata_steer_the_next_table() {
    let mut p = switch(3);
    p.add_rule(Rule::new(0, 1, vec![], Instructions { write: vec![Action::output(4)], write_metadata: Some((0xab, 0xff)), goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 1, vec![FieldMatch::masked(Field::Metadata, 0xab, 0xff)], Instructions { clear: true, goto: Some(2), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(2, 1, vec![], Instructions::apply(vec![Action::output(2)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2]);
}

#[test]
fn counters_rule_stats_and_flow_mod_delete() {
    let mut p = switch(1);
    let id = p.add_rule(Rule::new(0, 5, vec![FieldMatch::exact(Field::EthType, 0x800)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    for _ in 0..3 {
        p.process(Packet::new(udp(64)), 1);
    }
    assert_eq!(p.rule_stats(id), Some(RuleStats { packets: 3, bytes: 180 }));
    let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
    assert_eq!((c["port.1.rx_packets"], c["port.2.tx_packets"], c["table.0.matched"]), (3, 3, 3));
    let gone = p.flow_mod(FlowModCommand::Delete, Rule::new(0, 0, vec![], Instructions::default()), OFPP_ANY, OFPG_ANY, false).unwrap();
    assert_eq!(gone, vec![id]);
    let fates = p.process(Packet::new(udp(64)), 1);
    assert_eq!(fates, vec![Fate::Drop { reason: DropReason::TableMiss { table: 0 } }]);
}

#[test]
fn dec_ttl_expiry_stops_processing() {
    let mut p = switch(1);
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(3), Action::DecTtl, Action::output(2)]))).unwrap();
    let fates = p.process(Packet::new(udp(1)), 1);
    assert_eq!(ports(&fates), vec![3]);
    assert!(matches!(fates[1], Fate::Controller { reason: ControllerReason::InvalidTtl, .. }));
}

#[test]
fn identical_add_replaces_and_prereqs_are_checked() {
    let mut p = switch(1);
    let m = vec![FieldMatch::exact(Field::EthType, 0x800)];
    let a = p.add_rule(Rule::new(0, 9, m.clone(), Instructions::apply(vec![Action::output(2)]))).unwrap();
    let b = p.add_rule(Rule::new(0, 9, m, Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(p.n_rules(), 1);
    assert_eq!(a, b);
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![3]);
    let err = p.add_rule(Rule::new(0, 1, vec![FieldMatch::exact(Field::UdpDst, 53)], Instructions::default())).unwrap_err();
    assert!(err.to_string().contains("ip_proto=17"), "{err}");
}

#[test]
fn packet_mark_arrives_is_matched_set_and_leaves_with_the_frame_unchanged() {
    let mut p = switch(2);
    // table 0: a marked arrival goes on to the delivery table; an unmarked one gets mark 7
    p.add_rule(Rule::new(0, 2, vec![FieldMatch::masked(Field::PktMark, 0x100, 0xf00)], Instructions { goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::SetField { field: Field::PktMark, value: 7 }, Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![FieldMatch::exact(Field::PktMark, 0x123)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    for _ in 0..3 {
        // (repeated: the second and third packets take the path cache, keyed with the mark)
        let fates = p.process(Packet::marked(udp(64), 0x123), 1);
        let [Fate::Output { port: 2, packet }] = &fates[..] else { panic!("{fates:?}") };
        assert_eq!((packet.mark, &packet.data), (0x123, &udp(64)));
        let fates = p.process(Packet::marked(udp(64), 0x124), 1); // table 1 misses
        assert!(matches!(&fates[..], [Fate::Drop { reason: DropReason::TableMiss { table: 1 } }]), "{fates:?}");
        let fates = p.process(Packet::new(udp(64)), 1);
        let [Fate::Output { port: 3, packet }] = &fates[..] else { panic!("{fates:?}") };
        assert_eq!((packet.mark, &packet.data), (7, &udp(64)));
    }
}

#[test]
fn the_in_port_fast_path_of_an_unmarked_frame_skips_flow_id_rules_and_takes_pkt_mark_0() {
    // OneSwitch's table 0: delivery rules match a flow id, copies for any in_port match pkt_mark=0
    let mut p = switch(1);
    p.drop_malformed = false;
    p.add_rule(Rule::new(0, 30, vec![FieldMatch::exact(Field::PktMark, 5)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(0, 20, vec![FieldMatch::exact(Field::InPort, 1), FieldMatch::exact(Field::PktMark, 0)],
                         Instructions::apply(vec![Action::output(4)]))).unwrap();
    p.add_rule(Rule::new(0, 10, vec![FieldMatch::exact(Field::InPort, 3)], Instructions::apply(vec![Action::output(1)]))).unwrap();
    for _ in 0..3 {
        assert_eq!(p.forward_port_only(&udp(64), 1), Some(4));
        assert_eq!(p.forward_port_only(&udp(64), 3), Some(1));
        assert_eq!(ports(&p.process(Packet::marked(udp(64), 5), 3)), vec![2]);
    }
}
