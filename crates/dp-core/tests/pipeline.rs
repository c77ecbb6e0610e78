//! Pipeline semantics through the public Rust API (the OVS oracle in
//! tests/dataplane covers byte-exactness against Open vSwitch).

use dp_core::field::Field;
use dp_core::pipeline::*;

mod common;
use common::{switch, udp};

fn ports(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
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
fn dec_ttl_ids_expiry_sends_one_packet_in_per_id_0_and_stops() {
    for (ids, n, write) in [(vec![5u16], 0usize, false), (vec![0, 7, 0], 2, false), (vec![0], 1, true), (vec![], 0, true)] {
        let mut p = switch(1);
        let acts = vec![Action::output(3), Action::DecTtlIds(ids.clone().into()), Action::output(2)];
        let ins = if write {
            Instructions { write: vec![Action::DecTtlIds(ids.into()), Action::output(2)], ..Instructions::apply(vec![Action::output(3)]) }
        } else {
            Instructions::apply(acts)
        };
        p.add_rule(Rule::new(0, 1, vec![], ins)).unwrap();
        let fates = p.process(Packet::new(udp(1)), 1);
        assert_eq!(ports(&fates), vec![3], "n {n} write {write}");
        let pins = fates.iter().filter(|f| matches!(f, Fate::Controller { reason: ControllerReason::InvalidTtl, .. })).count();
        assert_eq!(pins, n, "n {n} write {write}");
        let fates = p.process(Packet::new(udp(9)), 1);
        assert_eq!(ports(&fates), vec![3, 2], "a live TTL is decremented and the packet goes on");
    }
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

fn ff(id: u32, buckets: Vec<(u32, u32, u32)>) -> Group {
    // (watch_port, watch_group, output port) per bucket
    let buckets = buckets.into_iter().map(|(wp, wg, out)| Bucket { watch_port: wp, watch_group: wg, ..Bucket::new(vec![Action::output(out)], 1) });
    Group { id, kind: GroupType::FastFailover, buckets: buckets.collect() }
}

#[test]
fn fast_failover_takes_the_first_live_bucket_as_ports_go_down_and_up() {
    let mut p = switch(1);
    p.add_group(ff(1, vec![(2, OFPG_ANY, 2), (3, OFPG_ANY, 3), (77, OFPG_ANY, 4)])).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Group(1)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2]); // cached path after this one
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2]);
    assert!(p.set_port_live(2, false));
    assert!(!p.port_live(2) && p.port_live(3));
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![3]);
    p.set_port_live(3, false);
    let fates = p.process(Packet::new(udp(64)), 1); // 77 does not exist: no live bucket
    assert!(matches!(fates[..], [Fate::Drop { reason: DropReason::NoBucket(1) }]), "{fates:?}");
    p.set_port_live(2, true);
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2]);
    assert!(!p.set_port_live(77, false)); // no such port
}

#[test]
fn a_bucket_watching_a_group_is_live_while_that_group_has_a_live_bucket() {
    let mut p = switch(1);
    p.add_group(ff(10, vec![(2, OFPG_ANY, 2)])).unwrap(); // live while port 2 is
    p.add_group(ff(11, vec![])).unwrap(); // no bucket: never live
    // 12: its own group (a cycle), then group 11, then group 10, then port 4
    p.add_group(ff(12, vec![(OFPP_ANY, 12, 1), (OFPP_ANY, 11, 2), (OFPP_ANY, 10, 3), (4, OFPG_ANY, 4)])).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Group(12)]))).unwrap();
    // the cycle's way out is group 10's live bucket, so bucket 0 is live (as in OVS)
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 2)), vec![1]);
    p.set_port_live(2, false);
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 2)), vec![1]); // via bucket 3's port 4
    p.set_port_live(4, false);
    let fates = p.process(Packet::new(udp(64)), 2);
    assert!(matches!(fates[..], [Fate::Drop { reason: DropReason::NoBucket(12) }]), "{fates:?}");
    p.add_group(ff(13, vec![(OFPP_ANY, 99, 1), (OFPP_CONTROLLER, OFPG_ANY, 2), (3, 11, 3)])).unwrap();
    p.add_rule(Rule::new(0, 2, vec![], Instructions::apply(vec![Action::Group(13)]))).unwrap();
    // an unknown group and CONTROLLER are not live; port 3 is (either watch suffices)
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![3]);
}

#[test]
fn a_select_group_picks_among_its_live_buckets() {
    let mut p = switch(1);
    let g = Group { id: 1, kind: GroupType::Select, buckets: (2..=4).map(|o| Bucket { watch_port: o, ..Bucket::new(vec![Action::output(o)], 1) }).collect() };
    p.add_group(g).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Group(1)]))).unwrap();
    p.set_port_live(2, false);
    p.set_port_live(3, false);
    for _ in 0..3 {
        assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![4]);
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

fn sub(field: Field, ofs: u32, n_bits: u32) -> Subfield {
    Subfield { field, ofs, n_bits }
}

#[test]
fn registers_are_pipeline_state_moved_loaded_and_matched_in_later_tables() {
    let mut p = switch(3);
    // table 0: reg1 = udp_dst (53), xreg0's low half is reg1; load 0x5 into reg2[4..7]; push reg1, clear it, pop it into reg3
    let apply = vec![
        Action::Move { src: sub(Field::UdpDst, 0, 16), dst: sub(Field::Reg(1), 0, 16) },
        Action::SetMasked { field: Field::Reg(2), value: 0x50, mask: 0xf0 },
        Action::StackPush(sub(Field::XReg(0), 0, 64)),
        Action::SetField { field: Field::Reg(1), value: 0 },
        Action::StackPop(sub(Field::XXReg(0), 0, 64)), // xxreg0 = reg0 : reg1 : reg2 : reg3, so bits 0..63 = reg2 : reg3
        Action::Note,
    ];
    p.add_rule(Rule::new(0, 1, vec![], Instructions { apply, goto: Some(1), ..Default::default() })).unwrap();
    // the pop wrote xreg0 (reg0 = 0, reg1 = 53) into reg2 : reg3, so reg2 is 0 again and reg3 = 53
    let m = vec![FieldMatch::exact(Field::Reg(3), 53), FieldMatch::exact(Field::Reg(2), 0), FieldMatch::exact(Field::Reg(1), 0)];
    p.add_rule(Rule::new(1, 5, m, Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![2]);
    // a packet arrives with every register 0
    let mut q = switch(1);
    q.add_rule(Rule::new(0, 5, vec![FieldMatch::exact(Field::XXReg(3), 0)], Instructions::apply(vec![Action::output(4)]))).unwrap();
    assert_eq!(ports(&q.process(Packet::new(udp(64)), 1)), vec![4]);
}

#[test]
fn a_move_into_the_frame_and_a_masked_load_rewrite_it_with_checksums() {
    let mut p = switch(1);
    let apply = vec![
        Action::SetMasked { field: Field::Ipv4Dst, value: 0x0000_0900, mask: 0x0000_ff00 },
        Action::Move { src: sub(Field::NwTtl, 0, 8), dst: sub(Field::UdpSrc, 0, 8) },
        Action::SetField { field: Field::NwTtl, value: 9 },
        Action::output(2),
    ];
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(apply))).unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    let Fate::Output { packet, .. } = &fates[0] else { panic!("{fates:?}") };
    let h = dp_core::parse_frame(&packet.data).unwrap();
    assert_eq!((h.ipv4_dst, h.ip_ttl, h.l4_src), (Some([10, 0, 9, 2]), Some(9), Some(0x0440)));
    assert_eq!(dp_core::checksum::fold(dp_core::checksum::sum(&packet.data[14..34], 0)), 0);
}

#[test]
fn exit_stops_the_pipeline_and_its_action_set_and_packet_ins_carry_the_state() {
    let mut p = switch(2);
    let ins = Instructions {
        apply: vec![Action::SetField { field: Field::Reg(15), value: 7 }, Action::SetField { field: Field::PktMark, value: 3 }, Action::output(OFPP_CONTROLLER)],
        write: vec![Action::output(3)],
        goto: Some(1),
        ..Default::default()
    };
    p.add_rule(Rule::new(0, 1, vec![], ins)).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(2), Action::Exit, Action::output(4)]))).unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    assert_eq!(ports(&fates), vec![2]); // not 4 (after exit), not 3 (the action set)
    let meta = fates.iter().find_map(|f| if let Fate::Controller { meta, .. } = f { Some(meta.clone()) } else { None }).unwrap();
    assert_eq!(meta, vec![(Field::Reg(15), 7), (Field::PktMark, 3)]);
}

#[test]
fn tcp_flags_ttl_and_fragments_match_as_open_vswitch_reads_them() {
    let mut tcp = udp(5);
    tcp[23] = 6; // protocol TCP, with a 20-byte header: SYN+ACK
    tcp[34..54].copy_from_slice(&[0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0x20, 0, 0, 0, 0, 0]);
    let mut p = switch(1);
    let ip = |f: Vec<FieldMatch>| [vec![FieldMatch::exact(Field::EthType, 0x800), FieldMatch::exact(Field::IpProto, 6)], f].concat();
    p.add_rule(Rule::new(0, 9, ip(vec![FieldMatch::masked(Field::TcpFlags, 0x12, 0x12), FieldMatch::exact(Field::NwTtl, 5)]), Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(0, 8, ip(vec![FieldMatch::masked(Field::IpFrag, 1, 1)]), Instructions::apply(vec![Action::output(3)]))).unwrap();
    p.add_rule(Rule::new(0, 7, ip(vec![FieldMatch::exact(Field::TcpDst, 0)]), Instructions::apply(vec![Action::output(4)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(tcp.clone()), 1)), vec![2]);
    let mut later = tcp.clone();
    later[20] = 0x20; // more fragments, offset 0xb9
    later[21] = 0xb9;
    assert_eq!(ports(&p.process(Packet::new(later), 1)), vec![3]);
    let mut first = tcp.clone();
    first[20] = 0x20; // a first fragment: its ports read 0, its TCP flags stay
    first[22] = 4; // (TTL 4: the first rule does not match)
    assert_eq!(ports(&p.process(Packet::new(first), 1)), vec![3]);
}

/// Open vSwitch's NXM_OF_VLAN_TCI with a partly masked priority: the PCP is matched masked.
#[test]
fn a_partly_masked_vlan_priority_matches_as_the_tci_mask_says() {
    let mut p = switch(1);
    let m = vec![FieldMatch::masked(Field::VlanVid, 0x1000, 0x1000), FieldMatch::masked(Field::VlanPcp, 2, 6)];
    p.add_rule(Rule::new(0, 5, m, Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    for (pcp, port) in [(2u16, 2), (3, 2), (4, 3), (0, 3), (6, 3)] {
        let mut f = udp(64);
        let tci = (pcp << 13) | 7;
        f.splice(12..12, [0x81, 0x00, (tci >> 8) as u8, tci as u8]);
        assert_eq!(ports(&p.process(Packet::new(f), 1)), vec![port], "pcp {pcp}");
    }
}

#[test]
fn a_resubmit_loop_drops_the_packet_whole_and_counts_every_lookup() {
    // table 0 outputs and resubmits into itself: at depth 64 Open vSwitch gives up and
    // drops the packet, the frames it had already sent included
    let mut p = switch(1);
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(2), Action::Resubmit { in_port: OFPP_IN_PORT, table: 255 }])))
        .unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    assert_eq!(fates, vec![Fate::Drop { reason: DropReason::ResubmitLimit }]);
    let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
    assert_eq!(c.get("drop.resubmit_limit"), Some(&1));
    // the first lookup and 64 nested ones matched the rule
    let (id, _) = p.rules().next().unwrap();
    assert_eq!(p.rule_stats(id).map(|s| s.packets), Some(u64::from(MAX_RESUBMIT_DEPTH) + 1));
}

#[test]
fn a_resubmit_looks_up_with_another_in_port_and_goes_on_after() {
    let mut p = switch(2);
    let to2 = vec![FieldMatch::exact(Field::InPort, 2)];
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Resubmit { in_port: 2, table: 1 }, Action::output(4)]))).unwrap();
    // found with in_port 2, it still sees the packet's own in_port (1) for IN_PORT
    p.add_rule(Rule::new(1, 1, to2, Instructions::apply(vec![Action::output(OFPP_IN_PORT)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(udp(64)), 1)), vec![1, 4]);
    // a register's port number: output:reg0[0..15] after a load of 3
    let mut q = switch(1);
    let reg = Subfield { field: Field::Reg(0), ofs: 0, n_bits: 16 };
    q.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::SetMasked { field: Field::Reg(0), value: 3, mask: 0xffff }, Action::OutputReg { src: reg, max_len: 0xffff }])))
        .unwrap();
    assert_eq!(ports(&q.process(Packet::new(udp(64)), 1)), vec![3]);
}
