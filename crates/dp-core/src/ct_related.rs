//! ICMP errors related to a tracked connection, as Open vSwitch 3.1's userspace
//! tracker handles them (`lib/conntrack.c`: `extract_l4_icmp`, `extract_l4_icmp6`,
//! `reverse_nat_packet`).
//!
//! An ICMP error (destination unreachable, source quench, redirect, time exceeded,
//! parameter problem; ICMPv6 1–4) carries the start of the packet it answers. The
//! tracker looks it up by that packet's tuple reversed (`inner_key`): found, the
//! error is `+rel` (`+rpl` in the reply direction), the connection neither updated
//! nor refreshed; not found, or an embedded packet OVS cannot read (a fragment, a
//! cut-short TCP or UDP header, a source that is not the error's destination), it
//! is `+inv`. With `nat`, the error's own address is translated as the connection's
//! packets are, and the embedded header to match (`rewrite_inner`: the side facing
//! the translated one), the ICMP checksum computed anew. Pure.

use crate::checksum::{fold, sum, update128, update16, update32};
use crate::conntrack::Tuple;
use crate::parse::{Headers, ETH_TYPE_IPV6};

/// Whether ICMP (`proto` 1) or ICMPv6 (58) type `ty` is an error about another packet.
pub fn is_error(proto: u8, ty: u8) -> bool {
    match proto {
        1 => matches!(ty, 3 | 4 | 5 | 11 | 12),
        58 => matches!(ty, 1..=4),
        _ => false,
    }
}

fn rd16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

fn wr16(d: &mut [u8], at: usize, v: u16) {
    d[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// The embedded packet of an ICMP error whose ICMP header starts at `l4` and whose IP
/// payload ends at `end`: (its IP header's offset, its L4 header's offset, protocol).
fn embedded(data: &[u8], l4: usize, end: usize, v6: bool) -> Option<(usize, usize, u8)> {
    let l3 = l4 + 8;
    if v6 {
        if end < l3 + 40 {
            return None;
        }
        let proto = data[l3 + 6];
        // (extension headers are not read: OVS would walk them; no trace carries them)
        return (!matches!(proto, 0 | 43 | 44 | 50 | 51 | 60)).then_some((l3, l3 + 40, proto));
    }
    if end < l3 + 20 {
        return None;
    }
    let ihl = usize::from(data[l3] & 0x0f) * 4;
    let frag = rd16(data, l3 + 6) & 0x3fff; // (MF or an offset)
    (ihl >= 20 && l3 + ihl <= end && frag == 0).then_some((l3, l3 + ihl, data[l3 + 9]))
}

/// The tuple OVS looks an ICMP error up by: the embedded packet's, reversed; None when
/// it cannot read one (the error is then `+inv`). `outer_dst`: the error's destination.
pub fn inner_key(data: &[u8], l4: usize, end: usize, v6: bool, outer_dst: u128) -> Option<Tuple> {
    let end = end.min(data.len());
    let (l3, il4, proto) = embedded(data, l4, end, v6)?;
    let (src, dst) = if v6 {
        let a = |at: usize| u128::from_be_bytes(data[at..at + 16].try_into().unwrap());
        (a(l3 + 8), a(l3 + 24))
    } else {
        let a = |at: usize| u128::from(u32::from_be_bytes(data[at..at + 4].try_into().unwrap()));
        (a(l3 + 12), a(l3 + 16))
    };
    if src != outer_dst {
        return None; // (OVS: the embedded packet's source must be the error's destination)
    }
    let size = end.saturating_sub(il4);
    let mut t = Tuple { src, dst, proto, v6, ..Default::default() };
    match proto {
        // (OVS reads 8 octets of the carried L4 header under IPv4, as RFC 792 promises,
        // a whole TCP header under IPv6: the ports, neither 0)
        6 | 17 => {
            if size < if v6 && proto == 6 { 20 } else { 8 } {
                return None;
            }
            (t.sport, t.dport) = (rd16(data, il4), rd16(data, il4 + 2));
            if t.sport == 0 || t.dport == 0 {
                return None;
            }
        }
        1 | 58 => {
            if (proto == 1) == v6 || size < 8 {
                return None;
            }
            let (ty, code) = (data[il4], data[il4 + 1]);
            let (req, rep) = if v6 { (128, 129) } else { (8, 0) };
            let other = match ty {
                t if t == req => rep,
                t if t == rep => req,
                _ => return None, // (an error about an error, or another type: no connection)
            };
            let id = rd16(data, il4 + 4);
            (t.sport, t.dport, t.types, t.code) = (id, id, (ty, other), code);
        }
        _ => {}
    }
    Some(t.reversed())
}

/// Whether the parsed packet is an ICMP error (a rewrite of one is a related one's).
pub fn is_error_packet(h: &Headers) -> bool {
    matches!((h.ip_proto, h.l4_src), (Some(p @ (1 | 58)), Some(ty)) if is_error(p, ty as u8))
}

/// Translate a related ICMP error's own address (`nat_packet` / `un_nat_packet`) to
/// `to`'s on the `src_side`. IPv4: the IP checksum (the ICMP checksum does not cover
/// it). IPv6: Open vSwitch 3.1 updates "the L4 checksum" of the *connection's*
/// protocol at the error's L4 header (`packet_set_ipv6_addr` with the connection's
/// `nw_proto`): for a TCP connection the two octets at 16, UDP at 6 (unless 0),
/// ICMPv6 the ICMPv6 checksum; done the same here, octet for octet.
pub fn rewrite_outer(frame: &mut [u8], h: &Headers, to: &Tuple, src_side: bool) {
    let addr = if src_side { to.src } else { to.dst };
    if h.eth_type != ETH_TYPE_IPV6 {
        let field = if src_side { crate::field::Field::Ipv4Src } else { crate::field::Field::Ipv4Dst };
        crate::actions::set_field(frame, h, field, addr);
        return;
    }
    let (Some(l4), at) = (h.l4_offset, h.l3_offset + if src_side { 8 } else { 24 }) else { return };
    let old = u128::from_be_bytes(frame[at..at + 16].try_into().unwrap());
    frame[at..at + 16].copy_from_slice(&addr.to_be_bytes());
    let size = h.l4_end.min(frame.len()).saturating_sub(l4);
    l4_addr(frame, l4, size, to.proto, true, &|c| update128(c, old, addr));
}

/// Translate an ICMP error's embedded header as Open vSwitch 3.1 does, in either
/// direction, after the error's own address (`rewrite_outer(to, src_side)`): the
/// embedded packet is one the error's destination sent, so its *other* side gets the
/// same address (and, for TCP / UDP, port), its IP and L4 checksums updated; then the
/// ICMP checksum is computed anew.
pub fn rewrite_inner(frame: &mut [u8], h: &Headers, to: &Tuple, src_side: bool) {
    let Some(l4) = h.l4_offset else { return };
    let end = h.l4_end.min(frame.len());
    let v6 = h.eth_type == ETH_TYPE_IPV6;
    let Some((l3, il4, proto)) = embedded(frame, l4, end, v6) else { return };
    let size = end.saturating_sub(il4);
    // the error's source rewritten: the embedded packet's destination; its destination: the source
    let addr = if src_side { to.src } else { to.dst };
    if v6 {
        let at = l3 + if src_side { 24 } else { 8 };
        let old = u128::from_be_bytes(frame[at..at + 16].try_into().unwrap());
        frame[at..at + 16].copy_from_slice(&addr.to_be_bytes());
        l4_addr(frame, il4, size, proto, true, &|c| update128(c, old, addr));
    } else {
        let at = l3 + if src_side { 16 } else { 12 };
        let old = u32::from_be_bytes(frame[at..at + 4].try_into().unwrap());
        let new = addr as u32;
        frame[at..at + 4].copy_from_slice(&new.to_be_bytes());
        let c = update32(rd16(frame, l3 + 10), old, new);
        wr16(frame, l3 + 10, c);
        l4_addr(frame, il4, size, proto, false, &|c| update32(c, old, new));
    }
    if matches!(proto, 6 | 17) && to.proto == proto {
        let (at, port) = if src_side { (il4 + 2, to.sport) } else { (il4, to.dport) };
        if at + 2 > end {
            return;
        }
        let old = rd16(frame, at);
        let csum_at = il4 + if proto == 6 { 16 } else { 6 };
        if old != port {
            frame[at..at + 2].copy_from_slice(&port.to_be_bytes());
            if proto == 6 {
                // (OVS updates the TCP checksum's place even past a header cut short: in
                // the frame's padding, or beyond it, where nothing shows)
                if csum_at + 2 <= frame.len() {
                    wr16(frame, csum_at, update16(rd16(frame, csum_at), old, port));
                }
            } else if let csum @ 1.. = rd16(frame, csum_at) {
                let c = update16(csum, old, port);
                wr16(frame, csum_at, if c == 0 { 0xffff } else { c });
            }
        }
    }
    wr16(frame, l4 + 2, 0);
    let c = if v6 {
        let pseudo = sum(&frame[h.l3_offset + 8..h.l3_offset + 40], 0) + 58 + (end - l4) as u32;
        fold(sum(&frame[l4..end], pseudo))
    } else {
        fold(sum(&frame[l4..end], 0))
    };
    wr16(frame, l4 + 2, c);
}

/// The embedded L4 checksum after an embedded address changed (`packet_set_ipv4_addr`,
/// `packet_update_csum128` on the embedded header: whole headers only).
fn l4_addr(frame: &mut [u8], il4: usize, size: usize, proto: u8, v6: bool, upd: &dyn Fn(u16) -> u16) {
    match proto {
        6 if size >= 20 => {
            let c = upd(rd16(frame, il4 + 16));
            wr16(frame, il4 + 16, c);
        }
        17 if size >= 8 => {
            let old = rd16(frame, il4 + 6);
            if old != 0 {
                let c = upd(old);
                wr16(frame, il4 + 6, if c == 0 { 0xffff } else { c });
            }
        }
        58 if v6 && size >= 4 => {
            let c = upd(rd16(frame, il4 + 2));
            wr16(frame, il4 + 2, c);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 ICMP port-unreachable from `dst` about a UDP packet `src:sp -> dst:dp`.
    fn unreachable(src: u32, dst: u32, sp: u16, dp: u16, udp_len: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[14 + 20] = 3;
        f[14 + 20 + 1] = 3;
        let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0];
        ip.extend_from_slice(&src.to_be_bytes());
        ip.extend_from_slice(&dst.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&sp.to_be_bytes());
        f.extend_from_slice(&dp.to_be_bytes());
        f.extend_from_slice(&udp_len.to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f
    }

    #[test]
    fn an_error_is_looked_up_by_its_packets_tuple_reversed() {
        let f = unreachable(1, 2, 30000, 53, 8);
        let t = inner_key(&f, 34, f.len(), false, 1).unwrap();
        assert_eq!((t.src, t.dst, t.sport, t.dport, t.proto), (2, 1, 53, 30000, 17));
    }

    #[test]
    fn an_error_ovs_cannot_read_has_no_key() {
        let f = unreachable(1, 2, 30000, 53, 8);
        assert_eq!(inner_key(&f, 34, f.len(), false, 9), None); // (not about a packet to the error's destination)
        let mut f = unreachable(1, 2, 30000, 53, 8);
        f[34 + 8 + 20 + 2] = 0;
        f[34 + 8 + 20 + 3] = 0;
        assert_eq!(inner_key(&f, 34, f.len(), false, 1), None); // (port 0)
        let f = unreachable(1, 2, 30000, 53, 8);
        assert_eq!(inner_key(&f[..f.len() - 1], 34, f.len() - 1, false, 1), None); // (less than 8 octets)
        assert!(is_error(1, 11) && is_error(58, 1) && !is_error(1, 8) && !is_error(58, 128));
    }
}
