//! `decap(),decap()` (the SFC egress pair, the one decap form the rule IR lets through)
//! against what Open vSwitch 3.1 sent for it on a dummy bridge (tests/dataplane/
//! test_decap_vs_ovs.py measures the same cases). The OVS oracle (`tandem bench
//! of13_oracle --items decap`) checks random rule sets with it.

#[allow(dead_code)] // (udp: not used here)
mod common;

use common::switch;
use dp_core::field::Field;
use dp_core::pipeline::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const UDP: &str = "02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000";
/// NSH MD type 1 (TTL 63, next protocol 3, SPI 0x123, SI 5, c1 0x11) over Ethernet, UDP inside.
const NSH: &str = "0fc601030001230500000011000000000000000000000000";

fn nsh_frame(vlan: bool) -> Vec<u8> {
    hex(&format!("0a00000000020a0000000001{}894f{NSH}{UDP}", if vlan { "81000064" } else { "" }))
}

fn outputs(fates: &[Fate]) -> Vec<(u32, Vec<u8>)> {
    fates.iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None }).collect()
}

fn nsh_match() -> Vec<FieldMatch> {
    vec![FieldMatch::exact(Field::EthType, 0x894f), FieldMatch::exact(Field::NshNp, 3)]
}

/// The inner frame leaves; registers, metadata and the action set written before the
/// pair are kept, and a later table matches the inner frame (measured: port 2 twice, the
/// written output once).
#[test]
fn pair_sends_the_inner_frame_and_keeps_the_pipeline_state() {
    let mut p = switch(3);
    let t0 = Instructions { write: vec![Action::output(3)], write_metadata: Some((7, u64::MAX)), goto: Some(1), ..Default::default() };
    p.add_rule(Rule::new(0, 9, vec![], t0)).unwrap();
    let apply = vec![Action::Decap, Action::Decap, Action::SetField { field: Field::Reg(1), value: 9 }, Action::output(2)];
    let mut m1 = nsh_match();
    m1.push(FieldMatch::exact(Field::Metadata, 7));
    p.add_rule(Rule::new(1, 9, m1, Instructions { apply, goto: Some(2), ..Default::default() })).unwrap();
    let m2 = vec![FieldMatch::exact(Field::Reg(1), 9), FieldMatch::exact(Field::Metadata, 7), FieldMatch::exact(Field::EthType, 0x0800)];
    p.add_rule(Rule::new(2, 9, m2, Instructions::apply(vec![Action::output(2)]))).unwrap();
    let out = outputs(&p.process(Packet::new(nsh_frame(false)), 1));
    let udp = hex(UDP);
    assert_eq!(out, vec![(2, udp.clone()), (2, udp.clone()), (3, udp)]);
}

/// A VLAN tag at the first decap fails Open vSwitch's whole translation: not even the
/// output before it sends (measured: "cannot decap Ethernet if VLAN is present").
#[test]
fn vlan_tagged_frame_sends_nothing() {
    let mut p = switch(1);
    let apply = vec![Action::output(3), Action::Decap, Action::Decap, Action::output(2)];
    p.add_rule(Rule::new(0, 9, nsh_match(), Instructions::apply(apply))).unwrap();
    let fates = p.process(Packet::new(nsh_frame(true)), 1);
    assert_eq!(outputs(&fates), vec![]);
    assert!(fates.iter().any(|f| matches!(f, Fate::Drop { reason: DropReason::DecapFailed })));
}

/// A frame that is not NSH at the second decap fails the translation too (measured on a
/// UDP frame: "decap() does not support packet type (1,0x800)").
#[test]
fn non_nsh_frame_sends_nothing() {
    let mut p = switch(1);
    p.add_rule(Rule::new(0, 9, vec![], Instructions::apply(vec![Action::output(3), Action::Decap, Action::Decap, Action::output(2)]))).unwrap();
    assert_eq!(outputs(&p.process(Packet::new(hex(UDP)), 1)), vec![]);
}

/// A frame of NSH inside NSH: two pairs give the innermost frame (measured).
#[test]
fn two_pairs_unwrap_two_levels() {
    let mut p = switch(2);
    let g = Instructions { apply: vec![Action::Decap, Action::Decap], goto: Some(1), ..Default::default() };
    p.add_rule(Rule::new(0, 9, nsh_match(), g)).unwrap();
    p.add_rule(Rule::new(1, 9, nsh_match(), Instructions::apply(vec![Action::Decap, Action::Decap, Action::output(2)]))).unwrap();
    let inner = format!("0a00000000020a0000000001894f{}{UDP}", NSH.replace("000123", "000077"));
    let frame = hex(&format!("0a00000000020a0000000001894f{NSH}{inner}"));
    assert_eq!(outputs(&p.process(Packet::new(frame), 1)), vec![(2, hex(UDP))]);
}

/// The path cache must not replay a path past a decap: two frames with the same outer
/// headers but different inner frames take different rules in the next table.
#[test]
fn path_cache_does_not_replay_past_a_decap() {
    let mut p = switch(2);
    p.add_rule(Rule::new(0, 9, nsh_match(), Instructions { apply: vec![Action::Decap, Action::Decap, Action::output(4)], goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 9, vec![FieldMatch::exact(Field::EthType, 0x0800)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    let arp = "ffffffffffff0200000000010806000108000604000102000000000001c0a80001000000000000c0a80002";
    for _ in 0..3 {
        let a = outputs(&p.process(Packet::new(nsh_frame(false)), 1));
        assert_eq!(a.iter().map(|o| o.0).collect::<Vec<_>>(), vec![4, 2]);
        let b = outputs(&p.process(Packet::new(hex(&format!("0a00000000020a0000000001894f{NSH}{arp}"))), 1));
        assert_eq!(b.iter().map(|o| o.0).collect::<Vec<_>>(), vec![4, 3]);
    }
}
