//! The connection-tracking fields of a packet-in's match, as Open vSwitch 3.1's
//! `flow_get_metadata` lists them (measured on one bridge: tests/endpoint/test_packet_in_ct_vs_ovs.py):
//! once a `ct(table=T)` tracked the packet, `eth_type` and `ct_state`; `ct_zone`, `ct_mark` and
//! `ct_label` when not 0; and, for a tracked packet that is not `+inv` whose original direction has
//! a protocol, that direction's addresses (IPv4 or IPv6, after `eth_type`), protocol and ports (the
//! ports even when 0). The encoder puts them in Open vSwitch's order.

use crate::conntrack::{CS_INVALID, CS_TRACKED};
use crate::field::{Field, Key, CT_WORD};

const ETH_TYPE_IP: u128 = 0x0800;
const ETH_TYPE_IPV6: u128 = 0x86dd;

/// The value of field `f` in the ct key words `ct` (`field::CT_WORD ..`).
fn ct_value(ct: &[u64; 8], f: Field) -> u128 {
    let slot = f.slot();
    let w = slot.word - CT_WORD;
    if slot.bits > 64 {
        (u128::from(ct[w]) << 64) | u128::from(ct[w + 1])
    } else {
        u128::from(ct[w] >> slot.shift) & crate::rule::ones(slot.bits)
    }
}

/// Append the ct fields a packet-in lists to `meta`; `key` is the packet's flow key (for its eth_type).
pub(super) fn push_ct_meta(ct: &[u64; 8], key: &Key, meta: &mut Vec<(Field, u128)>) {
    let state = ct_value(ct, Field::CtState) as u32;
    if state != 0 {
        let eth_type = u128::from(key[Field::EthType.slot().word] >> Field::EthType.slot().shift) & 0xffff;
        meta.push((Field::EthType, eth_type));
        meta.push((Field::CtState, u128::from(state)));
    }
    for f in [Field::CtZone, Field::CtMark, Field::CtLabel] {
        let v = ct_value(ct, f);
        if v != 0 {
            meta.push((f, v));
        }
    }
    let proto = ct_value(ct, Field::CtNwProto);
    if state & CS_TRACKED == 0 || state & CS_INVALID != 0 || proto == 0 {
        return;
    }
    let eth_type = meta.iter().find(|(f, _)| *f == Field::EthType).map_or(0, |(_, v)| *v);
    let addrs = match eth_type {
        ETH_TYPE_IP => [Field::CtNwSrc, Field::CtNwDst],
        ETH_TYPE_IPV6 => [Field::CtIpv6Src, Field::CtIpv6Dst],
        _ => return,
    };
    for f in addrs {
        meta.push((f, ct_value(ct, f)));
    }
    meta.push((Field::CtNwProto, proto));
    for f in [Field::CtTpSrc, Field::CtTpDst] {
        meta.push((f, ct_value(ct, f)));
    }
}
