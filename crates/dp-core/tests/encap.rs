//! `encap(nsh(md_type=1))`, NSH set_fields, `encap(ethernet)` (the SFC ingress pattern,
//! the one encap form the rule IR lets through) against the frames Open vSwitch 3.1
//! sent for it on a dummy bridge. The OVS oracle (`tandem bench of13_oracle --items
//! encap`) checks random rule sets with it.

#[allow(dead_code)] // (udp: not used here)
mod common;

use common::switch;
use dp_core::field::Field;
use dp_core::pipeline::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const UDP: &str = "02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000";

fn outputs(fates: &[Fate]) -> Vec<(u32, Vec<u8>)> {
    fates.iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None }).collect()
}

fn set(field: Field, value: u128) -> Action {
    Action::SetField { field, value }
}

/// The frame Open vSwitch sent, and what the next table sees: an NSH-over-Ethernet
/// frame (no VLAN, addresses 0 but the one set, the written NSH fields).
#[test]
fn sfc_pattern_sends_the_frame_open_vswitch_sends() {
    let mut p = switch(2);
    let apply = vec![
        Action::EncapNsh,
        set(Field::NshSpi, 0x55),
        set(Field::NshSi, 7),
        set(Field::NshC1, 0x1234),
        Action::EncapEthernet,
        set(Field::EthDst, 0x0a0b_0c0d_0e0f),
        Action::output(2),
    ];
    p.add_rule(Rule::new(0, 9, vec![], Instructions { apply, goto: Some(1), ..Default::default() })).unwrap();
    let m = vec![FieldMatch::exact(Field::EthType, 0x894f), FieldMatch::exact(Field::NshSpi, 0x55), FieldMatch::exact(Field::NshTtl, 63),
                 FieldMatch::exact(Field::EthSrc, 0), FieldMatch::exact(Field::NshNp, 3)];
    p.add_rule(Rule::new(1, 9, m, Instructions::apply(vec![Action::output(3)]))).unwrap();
    let out = outputs(&p.process(Packet::new(hex(UDP)), 1));
    let want = hex(&format!("0a0b0c0d0e0f000000000000894f0fc601030000550700001234{}{UDP}", "0".repeat(24)));
    assert_eq!(out, vec![(2, want.clone()), (3, want)]);
}

/// A VLAN-tagged frame goes inside whole; the outer frame has no tag (a push_vlan after
/// it copies no VID), as Open vSwitch sent it.
#[test]
fn vlan_tags_go_inside() {
    let mut p = switch(1);
    let tagged = hex("0200000000020200000000018100006408004500001c0000000040110000c0a80001c0a800020035003500080000");
    let apply = vec![Action::EncapNsh, Action::EncapEthernet, Action::PushVlan { ethertype: 0x8100 }, Action::output(3)];
    p.add_rule(Rule::new(0, 9, vec![], Instructions::apply(apply))).unwrap();
    let out = outputs(&p.process(Packet::new(tagged.clone()), 1));
    let mut want = hex(&format!("00000000000000000000000081000000894f0fc60103000000ff{}", "0".repeat(32)));
    want.extend_from_slice(&tagged);
    assert_eq!(out, vec![(3, want)]);
}

/// `output(port=P,max_len=N)` after the pattern: Open vSwitch commits at `encap(nsh)` and
/// leaves the Ethernet header pending (measured: 34 and 38 bytes for a 42-byte frame).
#[test]
fn output_trunc_counts_the_ethernet_header_as_pending() {
    let mut p = switch(1);
    let trunc = Action::OutputTrunc { port: 2, max_len: 20 };
    let a = vec![Action::PushVlan { ethertype: 0x8100 }, Action::EncapNsh, Action::EncapEthernet, trunc.clone()];
    let b = vec![Action::EncapNsh, Action::EncapEthernet, Action::PushVlan { ethertype: 0x8100 }, trunc];
    p.add_rule(Rule::new(0, 9, vec![FieldMatch::exact(Field::InPort, 1)], Instructions::apply(a))).unwrap();
    p.add_rule(Rule::new(0, 9, vec![FieldMatch::exact(Field::InPort, 3)], Instructions::apply(b))).unwrap();
    for (port, want) in [(1, 34), (3, 38)] {
        let out = outputs(&p.process(Packet::new(hex(UDP)), port));
        assert_eq!(out.iter().map(|o| o.1.len()).collect::<Vec<_>>(), vec![want], "in_port {port}");
    }
}

/// An output to LOCAL commits in Open vSwitch (its bridge always has the port, though
/// dp-core's switch sends nothing there): measured, `encap(nsh),encap(ethernet),
/// output:LOCAL,push_vlan,output(port=2,max_len=54)` sends 58 bytes.
#[test]
fn output_to_local_commits() {
    let mut p = switch(1);
    let a = vec![Action::EncapNsh, Action::EncapEthernet, Action::output(OFPP_LOCAL), Action::PushVlan { ethertype: 0x8100 },
                 Action::OutputTrunc { port: 2, max_len: 54 }];
    p.add_rule(Rule::new(0, 9, vec![], Instructions::apply(a))).unwrap();
    let out = outputs(&p.process(Packet::new(hex(UDP)), 1));
    assert_eq!(out.iter().map(|o| o.1.len()).collect::<Vec<_>>(), vec![58]);
}
