//! The SFC encap pair split between apply-actions (`encap(nsh…)`, NSH set_fields) and the
//! action set (`encap(ethernet)`; python/tandem/rules/encap_set.py) against the frames
//! Open vSwitch 3.1 sent for it on a dummy bridge (ofproto/trace: `action set is:
//! encap(ethernet),set_field:0x56->nsh_spi,set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2`).
//! The OVS oracle (`tandem bench of13_oracle --items write:encap`) checks random rule sets.

#[allow(dead_code)] // (udp: not used here)
mod common;

use common::switch;
use dp_core::field::Field;
use dp_core::pipeline::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const UDP: &str = "02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000";

fn sent(apply: Vec<Action>, write: Vec<Action>) -> Vec<(u32, Vec<u8>)> {
    let mut p = switch(1);
    p.add_rule(Rule::new(0, 9, vec![], Instructions { apply, write, ..Default::default() })).unwrap();
    p.process(Packet::new(hex(UDP)), 1)
        .iter()
        .filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None })
        .collect()
}

/// The written set_fields run after the written encap(ethernet): on the new Ethernet
/// header and the NSH header the apply-actions pushed.
#[test]
fn written_set_fields_run_on_the_new_headers() {
    let write = vec![
        Action::EncapEthernet,
        Action::SetField { field: Field::NshSpi, value: 0x56 },
        Action::SetField { field: Field::EthDst, value: 0x0a0b_0c0d_0e0f },
        Action::output(2),
    ];
    let want = hex(&format!("0a0b0c0d0e0f000000000000894f0fc60103000056ff{}{UDP}", "0".repeat(32)));
    assert_eq!(sent(vec![Action::EncapNsh, Action::SetField { field: Field::NshSpi, value: 0x55 }], write), vec![(2, want)]);
}

/// A written push_vlan runs after the written encap(ethernet), wherever it was written.
#[test]
fn a_written_push_vlan_tags_the_new_frame() {
    let want = hex(&format!("00000000000000000000000081000000894f0fc60103000000ff{}{UDP}", "0".repeat(32)));
    for write in [
        vec![Action::EncapEthernet, Action::PushVlan { ethertype: 0x8100 }, Action::output(2)],
        vec![Action::PushVlan { ethertype: 0x8100 }, Action::EncapEthernet, Action::output(2)],
    ] {
        assert_eq!(sent(vec![Action::EncapNsh], write), vec![(2, want.clone())]);
    }
}
