//! The SFC decap pair split between apply-actions (`decap()`) and the action set
//! (`decap()`; python/tandem/rules/decap_set.py) against the frames Open vSwitch 3.1 sent
//! for it on a dummy bridge (ofproto/trace: `action set is: decap(),output:2`, datapath
//! `pop_eth,pop_nsh(),recirc(0x1)`, then the set's output sends the inner frame; a written
//! push_vlan tags the inner frame). The OVS oracle (`tandem bench of13_oracle --items
//! write:decap`) checks random rule sets.

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

fn sent(apply: Vec<Action>, write: Vec<Action>, vlan: bool) -> Vec<(u32, Vec<u8>)> {
    let mut p = switch(1);
    let m = vec![FieldMatch::exact(Field::EthType, 0x894f), FieldMatch::exact(Field::NshNp, 3)];
    p.add_rule(Rule::new(0, 9, m, Instructions { apply, write, ..Default::default() })).unwrap();
    let frame = hex(&format!("0a00000000020a0000000001{}894f{NSH}{UDP}", if vlan { "81000064" } else { "" }));
    p.process(Packet::new(frame), 1)
        .iter()
        .filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None })
        .collect()
}

/// The set's decap pops both headers; its output sends the inner frame (measured).
#[test]
fn the_written_decap_sends_the_inner_frame() {
    assert_eq!(sent(vec![Action::Decap], vec![Action::Decap, Action::output(2)], false), vec![(2, hex(UDP))]);
    // (an output of the outer frame before the apply-actions' decap leaves too: measured `2,pop_eth,…`)
    let got = sent(vec![Action::output(3), Action::Decap], vec![Action::Decap, Action::output(2)], false);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1], (2, hex(UDP)));
}

/// A written push_vlan runs after the set's decap, wherever it was written: it tags the inner frame (measured).
#[test]
fn a_written_push_vlan_tags_the_inner_frame() {
    let want = hex("0200000000020200000000018100000008004500001c0000000040110000c0a80001c0a800020035003500080000");
    for write in [
        vec![Action::Decap, Action::PushVlan { ethertype: 0x8100 }, Action::output(2)],
        vec![Action::PushVlan { ethertype: 0x8100 }, Action::Decap, Action::output(2)],
    ] {
        assert_eq!(sent(vec![Action::Decap], write, false), vec![(2, want.clone())]);
    }
}

/// A VLAN-tagged frame fails the apply-actions' decap: nothing is sent (measured).
#[test]
fn a_tagged_frame_sends_nothing() {
    assert_eq!(sent(vec![Action::Decap], vec![Action::Decap, Action::output(2)], true), vec![]);
}
