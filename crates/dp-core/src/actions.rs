//! Packet rewrites behind OpenFlow / POF actions: push/pop VLAN, push/pop
//! MPLS, set-field with checksum updates (IPv4 header; TCP/UDP/ICMPv6 including
//! the pseudo-header when an address changes; SCTP's CRC32c), dec_ttl,
//! set_nw_ttl, set/dec MPLS TTL, and POF SetField / AddField / DelField at
//! arbitrary bit offsets.
//!
//! Every function takes the frame bytes and its parsed `Headers` (valid for
//! those bytes) and edits in place. Checksums are updated incrementally with
//! the same 16-bit operands Open vSwitch uses, so output bytes match OVS even
//! for frames whose incoming checksum was wrong. A set-field on a field the
//! frame does not carry is a no-op (as in OVS). State: none.
//! Cost: O(1) per rewrite, except VLAN push/pop and POF add/del (O(frame)).

use crate::checksum::{fold, ipv4_header_fix, sum, update128, update16, update32};
use crate::field::{read_bits, write_bits, Field, OFPVID_PRESENT};
use crate::parse::{Headers, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC, IP_PROTO_ICMP, IP_PROTO_ICMPV6, IP_PROTO_TCP, IP_PROTO_UDP, MAX_MPLS, MAX_VLANS};

#[inline]
fn rd16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}
#[inline]
fn wr16(f: &mut [u8], at: usize, v: u16) {
    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
fn rd32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(f[at..at + 4].try_into().unwrap())
}

/// Insert a VLAN tag with TPID `tpid` as the outermost tag, with VID 0 and
/// PCP 0 (a following set-field fills them), as Open vSwitch does. Like OVS,
/// which tracks at most `MAX_VLANS` tags, a frame that already carries that
/// many loses its innermost parsed tag.
pub fn push_vlan(frame: &mut Vec<u8>, h: &Headers, tpid: u16) {
    if h.vlans.len() >= MAX_VLANS {
        let inner = 12 + 4 * (MAX_VLANS - 1);
        frame.drain(inner..inner + 4);
    }
    let mut tag = [0u8; 4];
    tag[..2].copy_from_slice(&tpid.to_be_bytes());
    frame.splice(12..12, tag);
}

/// Remove the outermost VLAN tag; no-op on an untagged frame.
pub fn pop_vlan(frame: &mut Vec<u8>, h: &Headers) {
    if !h.vlans.is_empty() && frame.len() >= 16 {
        frame.drain(12..16);
    }
}

/// Outcome of `dec_ttl`.
#[derive(Debug, PartialEq, Eq)]
pub enum TtlResult {
    Decremented,
    NotIp,
    /// TTL / hop limit was 0 or 1: the packet must not be forwarded.
    Expired,
}

pub fn dec_ttl(frame: &mut [u8], h: &Headers) -> TtlResult {
    let off = h.l3_offset;
    match h.eth_type {
        ETH_TYPE_IPV4 if h.ip_ttl.is_some() => {
            let ttl = frame[off + 8];
            if ttl <= 1 {
                return TtlResult::Expired;
            }
            frame[off + 8] = ttl - 1;
            let c = update16(rd16(frame, off + 10), u16::from(ttl) << 8, u16::from(ttl - 1) << 8);
            wr16(frame, off + 10, c);
            TtlResult::Decremented
        }
        ETH_TYPE_IPV6 if h.ip_ttl.is_some() => {
            let hl = frame[off + 7];
            if hl <= 1 {
                return TtlResult::Expired;
            }
            frame[off + 7] = hl - 1;
            TtlResult::Decremented
        }
        _ => TtlResult::NotIp,
    }
}

/// `set_nw_ttl`: IPv4 TTL (header checksum updated) or IPv6 hop limit; no-op on other frames.
pub fn set_nw_ttl(frame: &mut [u8], h: &Headers, ttl: u8) -> bool {
    let off = h.l3_offset;
    match h.eth_type {
        ETH_TYPE_IPV4 if h.ip_ttl.is_some() => {
            let old = frame[off + 8];
            frame[off + 8] = ttl;
            let c = update16(rd16(frame, off + 10), u16::from(old) << 8, u16::from(ttl) << 8);
            wr16(frame, off + 10, c);
            true
        }
        ETH_TYPE_IPV6 if h.ip_ttl.is_some() => {
            frame[off + 7] = ttl;
            true
        }
        _ => false,
    }
}

fn is_mpls(h: &Headers) -> bool {
    matches!(h.eth_type, ETH_TYPE_MPLS | ETH_TYPE_MPLS_MC) && h.mpls_label.is_some()
}

/// Label stack entries Open vSwitch counts (`flow_count_mpls_labels`): up to
/// the bottom-of-stack entry, zero entries above it not counted.
pub fn mpls_count(h: &Headers) -> usize {
    if !is_mpls(h) {
        return 0;
    }
    let mut n = 0;
    for (i, &lse) in h.mpls_lses.iter().enumerate() {
        if lse & 0x100 != 0 {
            return i + 1;
        }
        if lse != 0 {
            n += 1;
        }
    }
    n
}

/// Outcome of push_mpls / pop_mpls.
#[derive(Debug, PartialEq, Eq)]
pub enum MplsResult {
    Done,
    /// Nothing to do (pop on a frame without MPLS).
    NoOp,
    /// More label stack entries than Open vSwitch tracks: the packet is dropped.
    TooManyLabels,
}

/// Push an MPLS label stack entry after the Ethernet header and VLAN tags,
/// as Open vSwitch does: on an MPLS frame a copy of the outer entry with BOS
/// clear; otherwise label 0 (2 for IPv6), TC from the low 3 DSCP bits of an
/// IP frame, TTL from the IP TTL (64 if none or 0), BOS set.
pub fn push_mpls(frame: &mut Vec<u8>, h: &Headers, ethertype: u16) -> MplsResult {
    let at = h.l3_offset;
    if at < 14 || at > frame.len() {
        return MplsResult::NoOp;
    }
    let lse = if is_mpls(h) {
        if mpls_count(h) >= MAX_MPLS {
            return MplsResult::TooManyLabels;
        }
        rd32(frame, at) & !0x100
    } else {
        let label: u32 = if h.eth_type == ETH_TYPE_IPV6 { 2 } else { 0 };
        let (tc, ttl) = match h.ip_ttl {
            Some(t) if matches!(h.eth_type, ETH_TYPE_IPV4 | ETH_TYPE_IPV6) => (u32::from(h.ip_dscp.unwrap_or(0)) & 7, if t == 0 { 64 } else { u32::from(t) }),
            _ => (0, 64),
        };
        (label << 12) | (tc << 9) | 0x100 | ttl
    };
    wr16(frame, at - 2, ethertype);
    frame.splice(at..at, lse.to_be_bytes());
    MplsResult::Done
}

/// Pop the outer MPLS entry and set the ethertype to `ethertype`; dropped
/// when the stack is deeper than Open vSwitch tracks.
pub fn pop_mpls(frame: &mut Vec<u8>, h: &Headers, ethertype: u16) -> MplsResult {
    let n = mpls_count(h);
    if n == 0 {
        return MplsResult::NoOp;
    }
    if n == MAX_MPLS && h.mpls_lses[MAX_MPLS - 1] & 0x100 == 0 {
        return MplsResult::TooManyLabels;
    }
    let at = h.l3_offset;
    wr16(frame, at - 2, ethertype);
    frame.drain(at..at + 4);
    MplsResult::Done
}

/// Set the TTL of the outer MPLS entry; false if the frame is not MPLS.
pub fn set_mpls_ttl(frame: &mut [u8], h: &Headers, ttl: u8) -> bool {
    if !is_mpls(h) {
        return false;
    }
    frame[h.l3_offset + 3] = ttl;
    true
}

/// Decrement the outer MPLS TTL (`NotIp` here means "not MPLS").
pub fn dec_mpls_ttl(frame: &mut [u8], h: &Headers) -> TtlResult {
    if !is_mpls(h) {
        return TtlResult::NotIp;
    }
    let at = h.l3_offset + 3;
    if frame[at] <= 1 {
        return TtlResult::Expired;
    }
    frame[at] -= 1;
    TtlResult::Decremented
}

/// CRC32c (Castagnoli) as SCTP uses it, returned as the 4 bytes it occupies in the header.
fn crc32c(data: &[u8]) -> [u8; 4] {
    let mut crc: u32 = 0xffff_ffff;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
        }
    }
    (!crc).to_le_bytes()
}

/// SCTP port rewrite: Open vSwitch updates the checksum by XOR with the CRC32c
/// of the segment before and after (so a wrong checksum stays wrong by the same bits).
fn set_sctp_port(frame: &mut [u8], h: &Headers, at: usize, port: u16) -> bool {
    let Some(l4) = h.l4_offset else { return false };
    let end = h.l4_end.min(frame.len());
    if end < l4 + 12 {
        return false;
    }
    let old_csum: [u8; 4] = frame[l4 + 8..l4 + 12].try_into().unwrap();
    frame[l4 + 8..l4 + 12].copy_from_slice(&[0; 4]);
    let before = crc32c(&frame[l4..end]);
    wr16(frame, at, port);
    let after = crc32c(&frame[l4..end]);
    for i in 0..4 {
        frame[l4 + 8 + i] = old_csum[i] ^ before[i] ^ after[i];
    }
    true
}

/// IPv6 ND target / SLL / TLL rewrite with the ICMPv6 checksum update, as
/// Open vSwitch's `packet_set_nd`: nothing happens unless the message holds
/// its 24-byte fixed part; link-layer addresses change only in
/// the first SLL/TLL option.
fn set_nd(frame: &mut [u8], h: &Headers, field: Field, value: u128) -> bool {
    let Some(l4) = h.l4_offset else { return false };
    let end = h.l4_end.min(frame.len());
    if end < l4 + 24 {
        return false;
    }
    if field == Field::Ipv6NdTarget {
        let old = u128::from_be_bytes(frame[l4 + 8..l4 + 24].try_into().unwrap());
        if old != value {
            frame[l4 + 8..l4 + 24].copy_from_slice(&value.to_be_bytes());
            let c = update128(rd16(frame, l4 + 2), old, value);
            wr16(frame, l4 + 2, c);
        }
        return true;
    }
    let want = if field == Field::Ipv6NdSll { 1u8 } else { 2 };
    let mut at = l4 + 24;
    while end.saturating_sub(at) >= 8 && frame[at + 1] != 0 {
        if matches!(frame[at], 1 | 2) && frame[at + 1] == 1 {
            if frame[at] == want {
                let new = ((value as u64) << 16).to_be_bytes();
                for i in 0..3 {
                    let (o, n) = (rd16(frame, at + 2 + 2 * i), u16::from_be_bytes([new[2 * i], new[2 * i + 1]]));
                    let c = update16(rd16(frame, l4 + 2), o, n);
                    wr16(frame, l4 + 2, c);
                }
                frame[at + 2..at + 8].copy_from_slice(&new[..6]);
            }
            break;
        }
        // (as OVS: step past this option, then count the next one's length)
        at += usize::from(frame[at + 1]) * 8;
        if at + 1 >= frame.len() {
            break;
        }
    }
    true
}

fn l4_size(frame: &[u8], h: &Headers) -> usize {
    h.l4_offset.map_or(0, |o| frame.len().saturating_sub(o))
}

/// Update the L4 checksum for an IP address change (pseudo-header); in a
/// non-first IPv4 fragment, the bytes where that checksum would be, as Open vSwitch does.
fn l4_addr_update(frame: &mut [u8], h: &Headers, upd: &dyn Fn(u16) -> u16) {
    let Some(l4) = h.l4_offset.or(h.frag_payload) else { return };
    let size = frame.len().saturating_sub(l4);
    match h.ip_proto {
        Some(IP_PROTO_TCP) if size >= 20 => {
            let c = upd(rd16(frame, l4 + 16));
            wr16(frame, l4 + 16, c);
        }
        Some(IP_PROTO_UDP) if size >= 8 => {
            let old = rd16(frame, l4 + 6);
            if old != 0 {
                let c = upd(old);
                wr16(frame, l4 + 6, if c == 0 { 0xffff } else { c });
            }
        }
        Some(IP_PROTO_ICMPV6) if size >= 4 && h.eth_type == ETH_TYPE_IPV6 => {
            let c = upd(rd16(frame, l4 + 2));
            wr16(frame, l4 + 2, c);
        }
        _ => {}
    }
}

/// Set a fixed (non-POF) field. Returns true if the frame changed.
pub fn set_field(frame: &mut [u8], h: &Headers, field: Field, value: u128) -> bool {
    if !field.present_in(h) {
        return false;
    }
    let l3 = h.l3_offset;
    let v = value as u64;
    match field {
        Field::EthDst => frame[0..6].copy_from_slice(&v.to_be_bytes()[2..]),
        Field::EthSrc => frame[6..12].copy_from_slice(&v.to_be_bytes()[2..]),
        Field::VlanVid => {
            let tci = rd16(frame, 14);
            wr16(frame, 14, (tci & 0xf000) | (v as u16 & 0x0fff & !OFPVID_PRESENT));
        }
        Field::VlanPcp => {
            let tci = rd16(frame, 14);
            wr16(frame, 14, (tci & 0x1fff) | ((v as u16 & 7) << 13));
        }
        Field::IpDscp | Field::IpEcn => {
            let (keep, new) = if field == Field::IpDscp { (0x03u8, (v as u8 & 0x3f) << 2) } else { (0xfcu8, v as u8 & 3) };
            if h.eth_type == ETH_TYPE_IPV4 {
                let old = frame[l3 + 1];
                let tos = (old & keep) | new;
                frame[l3 + 1] = tos;
                let c = update16(rd16(frame, l3 + 10), u16::from(old), u16::from(tos));
                wr16(frame, l3 + 10, c);
            } else {
                let w = rd16(frame, l3);
                let tc = ((w >> 4) & 0xff) as u8;
                let tc = (tc & keep) | new;
                wr16(frame, l3, (w & 0xf00f) | (u16::from(tc) << 4));
            }
        }
        Field::Ipv4Src | Field::Ipv4Dst => {
            let at = l3 + if field == Field::Ipv4Src { 12 } else { 16 };
            let old = rd32(frame, at);
            let new = v as u32;
            frame[at..at + 4].copy_from_slice(&new.to_be_bytes());
            let c = update32(rd16(frame, l3 + 10), old, new);
            wr16(frame, l3 + 10, c);
            l4_addr_update(frame, h, &|c| update32(c, old, new));
        }
        Field::Ipv6Src | Field::Ipv6Dst => {
            let at = l3 + if field == Field::Ipv6Src { 8 } else { 24 };
            let old = u128::from_be_bytes(frame[at..at + 16].try_into().unwrap());
            frame[at..at + 16].copy_from_slice(&value.to_be_bytes());
            l4_addr_update(frame, h, &|c| update128(c, old, value));
        }
        Field::TcpSrc | Field::TcpDst | Field::UdpSrc | Field::UdpDst => {
            let l4 = h.l4_offset.unwrap();
            let at = l4 + if matches!(field, Field::TcpSrc | Field::UdpSrc) { 0 } else { 2 };
            let size = l4_size(frame, h);
            let old = rd16(frame, at);
            let new = v as u16;
            if h.ip_proto == Some(IP_PROTO_TCP) {
                // as OVS's odp_set_tcp (dp_packet_get_tcp_payload): no write unless the data offset
                // is at least 5 words and within the segment (measured on OVS 3.1: offsets 0, 4, 15)
                let data_offset = if size < 20 { 0 } else { usize::from(frame[l4 + 12] >> 4) * 4 };
                if size < 20 || data_offset < 20 || data_offset > size {
                    return false;
                }
                wr16(frame, at, new);
                let c = update16(rd16(frame, l4 + 16), old, new);
                wr16(frame, l4 + 16, c);
            } else {
                if size < 8 {
                    return false;
                }
                wr16(frame, at, new);
                let cs = rd16(frame, l4 + 6);
                if cs != 0 {
                    let c = update16(cs, old, new);
                    wr16(frame, l4 + 6, if c == 0 { 0xffff } else { c });
                }
            }
        }
        Field::Icmpv4Type | Field::Icmpv4Code | Field::Icmpv6Type | Field::Icmpv6Code => {
            let l4 = h.l4_offset.unwrap();
            if l4_size(frame, h) < 8 && h.ip_proto == Some(IP_PROTO_ICMP) || l4_size(frame, h) < 4 {
                return false;
            }
            let old = rd16(frame, l4);
            let at = if matches!(field, Field::Icmpv4Type | Field::Icmpv6Type) { l4 } else { l4 + 1 };
            frame[at] = v as u8;
            let new = rd16(frame, l4);
            let c = update16(rd16(frame, l4 + 2), old, new);
            wr16(frame, l4 + 2, c);
        }
        Field::ArpOp => wr16(frame, l3 + 6, v as u16),
        Field::ArpSpa => frame[l3 + 14..l3 + 18].copy_from_slice(&(v as u32).to_be_bytes()),
        Field::ArpTpa => frame[l3 + 24..l3 + 28].copy_from_slice(&(v as u32).to_be_bytes()),
        Field::MplsLabel => {
            let w = rd32(frame, l3);
            let w = (w & 0xfff) | ((v as u32 & 0xfffff) << 12);
            frame[l3..l3 + 4].copy_from_slice(&w.to_be_bytes());
        }
        Field::MplsTc => {
            let w = rd32(frame, l3);
            let w = (w & !0xe00) | ((v as u32 & 7) << 9);
            frame[l3..l3 + 4].copy_from_slice(&w.to_be_bytes());
        }
        Field::MplsBos => return false,
        Field::SctpSrc | Field::SctpDst => {
            let at = h.l4_offset.unwrap() + if field == Field::SctpSrc { 0 } else { 2 };
            return set_sctp_port(frame, h, at, v as u16);
        }
        Field::ArpSha => frame[l3 + 8..l3 + 14].copy_from_slice(&v.to_be_bytes()[2..]),
        Field::ArpTha => frame[l3 + 18..l3 + 24].copy_from_slice(&v.to_be_bytes()[2..]),
        Field::Ipv6Flabel => {
            let w = rd32(frame, l3);
            let w = (w & !0xfffff) | (v as u32 & 0xfffff);
            frame[l3..l3 + 4].copy_from_slice(&w.to_be_bytes());
        }
        Field::Ipv6NdTarget | Field::Ipv6NdSll | Field::Ipv6NdTll => return set_nd(frame, h, field, value),
        Field::TunnelId => return false,
        Field::Pof { offset, length } => return pof_set(frame, h, offset, length, value),
        Field::NwTtl => return set_nw_ttl(frame, h, v as u8),
        Field::MplsTtl => return set_mpls_ttl(frame, h, v as u8),
        // pipeline state (the pipeline keeps it) and read-only fields
        Field::InPort | Field::Metadata | Field::PktMark | Field::EthType | Field::IpProto => return false,
        Field::Reg(_) | Field::XReg(_) | Field::XXReg(_) | Field::TcpFlags | Field::IpFrag | Field::ConjId => return false,
        // (connection-tracking state: set only by a ct action)
        Field::CtState | Field::CtZone | Field::CtMark | Field::CtLabel | Field::CtNwProto | Field::CtNwSrc | Field::CtNwDst
        | Field::CtIpv6Src | Field::CtIpv6Dst | Field::CtTpSrc | Field::CtTpDst => return false,
        Field::RecircId => return false, // (read-only)
        Field::TunSrc | Field::TunDst | Field::TunIpv6Src | Field::TunIpv6Dst | Field::TunGbpId | Field::TunGbpFlags | Field::TunFlags | Field::TunMetadata(_) => return false, // (pipeline state)
        Field::ActsetOutput => return false, // (read-only)
        Field::NshFlags | Field::NshTtl | Field::NshMdtype | Field::NshNp | Field::NshSpi | Field::NshSi | Field::NshC1 | Field::NshC2 | Field::NshC3
        | Field::NshC4 => return crate::nsh::set_frame(frame, h, field, value),
    }
    true
}

/// POF SetField: overwrite `length` bits at bit `offset`; then, like the TC
/// `csum` action OVS-POF-TC pairs with `pedit`, recompute the IPv4 header
/// checksum if the header was touched and the TCP/UDP checksum if the
/// pseudo-header or the segment was touched.
pub fn pof_set(frame: &mut [u8], h: &Headers, offset: u32, length: u32, value: u128) -> bool {
    if offset as usize + length as usize > frame.len() * 8 {
        return false;
    }
    write_bits(frame, offset, length, value);
    if h.eth_type == ETH_TYPE_IPV4 && h.ipv4_src.is_some() {
        let l3 = h.l3_offset;
        let ihl = usize::from(frame[l3] & 0x0f) * 4;
        let (a, b) = ((offset / 8) as usize, ((offset + length + 7) / 8) as usize);
        if a < l3 + ihl && b > l3 {
            ipv4_header_fix(frame, l3, ihl);
        }
        let touches_l4 = h.l4_offset.is_some_and(|l4| b > l4) || (a < l3 + 20 && b > l3 + 12);
        if touches_l4 {
            l4_full_fix(frame, h);
        }
    }
    true
}

/// Recompute the TCP/UDP checksum of an IPv4 packet over its whole segment.
fn l4_full_fix(frame: &mut [u8], h: &Headers) {
    let (Some(l4), Some(proto)) = (h.l4_offset, h.ip_proto) else { return };
    let l3 = h.l3_offset;
    let tot = usize::from(rd16(frame, l3 + 2));
    let end = (l3 + tot).min(frame.len());
    if end <= l4 {
        return;
    }
    let at = match proto {
        IP_PROTO_TCP if end - l4 >= 20 => l4 + 16,
        IP_PROTO_UDP if end - l4 >= 8 && rd16(frame, l4 + 6) != 0 => l4 + 6,
        _ => return,
    };
    wr16(frame, at, 0);
    let mut acc = sum(&frame[l3 + 12..l3 + 20], 0);
    acc += u32::from(proto) + (end - l4) as u32;
    let c = fold(sum(&frame[l4..end], acc));
    let c = if c == 0 && proto == IP_PROTO_UDP { 0xffff } else { c };
    wr16(frame, at, c);
}

/// POF AddField: insert `length` bits holding `value` at bit `offset`.
/// Returns false (frame unchanged) if `offset` is past the end of the frame.
pub fn pof_add(frame: &mut Vec<u8>, offset: u32, length: u32, value: u128) -> bool {
    let nbits = frame.len() * 8;
    if offset as usize > nbits {
        return false;
    }
    if offset % 8 == 0 && length % 8 == 0 {
        let at = (offset / 8) as usize;
        let bytes = value.to_be_bytes();
        let n = (length / 8) as usize;
        frame.splice(at..at, bytes[16 - n..].iter().copied());
        return true;
    }
    let total = nbits + length as usize;
    let mut out = vec![0u8; total.div_ceil(8)];
    for i in 0..total {
        let bit = if i < offset as usize {
            bit_at(frame, i)
        } else if i < (offset + length) as usize {
            ((value >> (length as usize - 1 - (i - offset as usize))) & 1) as u8
        } else {
            bit_at(frame, i - length as usize)
        };
        if bit != 0 {
            out[i / 8] |= 0x80 >> (i % 8);
        }
    }
    *frame = out;
    true
}

/// POF DelField: remove `length` bits at bit `offset` (clipped to the frame).
pub fn pof_del(frame: &mut Vec<u8>, offset: u32, length: u32) -> bool {
    let nbits = frame.len() * 8;
    if offset as usize >= nbits {
        return false;
    }
    let length = length.min((nbits - offset as usize) as u32);
    if offset % 8 == 0 && length % 8 == 0 {
        let at = (offset / 8) as usize;
        frame.drain(at..at + (length / 8) as usize);
        return true;
    }
    let total = nbits - length as usize;
    let mut out = vec![0u8; total.div_ceil(8)];
    for i in 0..total {
        let src = if i < offset as usize { i } else { i + length as usize };
        if bit_at(frame, src) != 0 {
            out[i / 8] |= 0x80 >> (i % 8);
        }
    }
    *frame = out;
    true
}

fn bit_at(frame: &[u8], i: usize) -> u8 {
    (frame[i / 8] >> (7 - i % 8)) & 1
}

/// Read a POF field of the frame (for traces and tests).
pub fn pof_get(frame: &[u8], offset: u32, length: u32) -> Option<u128> {
    let (v, present) = read_bits(frame, offset, length);
    present.then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{fold, sum};
    use crate::parse::parse_frame;

    fn tcp_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 44, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0, 0, 0, 0, 0]);
        f.extend_from_slice(b"abcd");
        ipv4_header_fix(&mut f, 14, 20);
        let h = parse_frame(&f).unwrap();
        l4_full_fix(&mut f, &h);
        f
    }

    fn valid(f: &[u8]) -> bool {
        let h = parse_frame(f).unwrap();
        let l3 = h.l3_offset;
        let ip_ok = fold(sum(&f[l3..l3 + 20], 0)) == 0;
        let l4 = h.l4_offset.unwrap();
        let mut acc = sum(&f[l3 + 12..l3 + 20], 0) + 6 + (f.len() - l4) as u32;
        acc = sum(&f[l4..], acc);
        ip_ok && fold(acc) == 0
    }

    #[test]
    fn set_fields_keep_checksums_valid() {
        let mut f = tcp_frame();
        assert!(valid(&f));
        for (field, v) in [(Field::Ipv4Src, 0xc0a8_0101u128), (Field::Ipv4Dst, 0x0808_0808), (Field::TcpDst, 443), (Field::TcpSrc, 9), (Field::IpDscp, 46)] {
            let h = parse_frame(&f).unwrap();
            assert!(set_field(&mut f, &h, field, v));
            assert!(valid(&f), "{field:?}");
        }
        let h = parse_frame(&f).unwrap();
        assert_eq!(h.ipv4_src, Some([192, 168, 1, 1]));
        assert_eq!(h.l4_dst, Some(443));
        assert_eq!(dec_ttl(&mut f, &h), TtlResult::Decremented);
        assert!(valid(&f));
        assert_eq!(parse_frame(&f).unwrap().ip_ttl, Some(63));
    }

    #[test]
    fn vlan_push_pop_roundtrip() {
        let f0 = tcp_frame();
        let mut f = f0.clone();
        let h = parse_frame(&f).unwrap();
        push_vlan(&mut f, &h, 0x8100);
        let h = parse_frame(&f).unwrap();
        assert_eq!(h.vlans.len(), 1);
        assert!(set_field(&mut f, &h, Field::VlanVid, 0x1000 | 42));
        let h = parse_frame(&f).unwrap();
        push_vlan(&mut f, &h, 0x88a8);
        let h = parse_frame(&f).unwrap();
        assert_eq!((h.vlans.as_slice()[0].vid, h.vlans.as_slice()[1].vid), (0, 42));
        assert_eq!(h.vlans.as_slice()[0].tpid, 0x88a8);
        // A third push keeps two tags (OVS tracks two): the innermost goes.
        let mut g = f.clone();
        push_vlan(&mut g, &h, 0x8100);
        let h3 = parse_frame(&g).unwrap();
        assert_eq!(g.len(), f.len());
        assert_eq!((h3.vlans.as_slice()[0].tpid, h3.vlans.as_slice()[1].tpid), (0x8100, 0x88a8));
        pop_vlan(&mut f, &h);
        let h = parse_frame(&f).unwrap();
        pop_vlan(&mut f, &h);
        assert_eq!(f, f0);
    }

    #[test]
    fn pof_add_del_roundtrip_and_checksum() {
        let f0 = tcp_frame();
        for (off, len) in [(112u32, 32u32), (3, 5), (100, 13)] {
            let mut f = f0.clone();
            assert!(pof_add(&mut f, off, len, 0x0a0a0908 & ((1u128 << len) - 1)));
            assert_eq!(pof_get(&f, off, len), Some(0x0a0a0908 & ((1u128 << len) - 1)));
            assert!(pof_del(&mut f, off, len));
            f.truncate(f0.len());
            assert_eq!(f, f0);
        }
        // SetField on the IPv4 destination (the paper's <240, 32> example) keeps checksums valid.
        let mut f = f0.clone();
        let h = parse_frame(&f).unwrap();
        assert!(pof_set(&mut f, &h, 240, 32, 0x0a020202));
        assert_eq!(parse_frame(&f).unwrap().ipv4_dst, Some([10, 2, 2, 2]));
        assert!(valid(&f));
    }

    fn sctp_v6_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        f.extend_from_slice(&[0x60, 0x01, 0x23, 0x45, 0, 16, 132, 64]);
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        let mut sctp = vec![0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4];
        let c = crc32c(&sctp);
        sctp[8..12].copy_from_slice(&c);
        f.extend_from_slice(&sctp);
        f.extend_from_slice(&[0; 6]); // Ethernet padding: not part of the SCTP packet
        f
    }

    #[test]
    fn sctp_port_rewrite_keeps_crc32c_valid_and_flow_label_is_set() {
        let mut f = sctp_v6_frame();
        let h = parse_frame(&f).unwrap();
        assert_eq!((h.l4_src, h.l4_dst, h.ipv6_flabel), (Some(1234), Some(80), Some(0x12345)));
        assert!(set_field(&mut f, &h, Field::SctpDst, 443));
        assert!(set_field(&mut f, &h, Field::Ipv6Flabel, 0xabcde));
        let h = parse_frame(&f).unwrap();
        assert_eq!((h.l4_dst, h.ipv6_flabel), (Some(443), Some(0xabcde)));
        let l4 = h.l4_offset.unwrap();
        let mut seg = f[l4..l4 + 16].to_vec();
        let stored: [u8; 4] = seg[8..12].try_into().unwrap();
        seg[8..12].copy_from_slice(&[0; 4]);
        assert_eq!(crc32c(&seg), stored);
    }

    #[test]
    fn mpls_push_copies_ip_ttl_and_dscp_then_pop_restores() {
        let f0 = tcp_frame();
        let mut f = f0.clone();
        let h = parse_frame(&f).unwrap();
        assert!(set_field(&mut f, &h, Field::IpDscp, 13));
        let before = f.clone();
        let h = parse_frame(&f).unwrap();
        assert_eq!(push_mpls(&mut f, &h, 0x8847), MplsResult::Done);
        let h = parse_frame(&f).unwrap();
        // label 0 (IPv4 explicit null), TC = DSCP & 7, BOS, TTL from IP
        assert_eq!((h.eth_type, h.mpls_label, h.mpls_tc, h.mpls_bos, h.mpls_lses[0] & 0xff), (0x8847, Some(0), Some(5), Some(1), 64));
        assert_eq!(dec_mpls_ttl(&mut f, &h), TtlResult::Decremented);
        assert!(set_mpls_ttl(&mut f, &h, 1));
        let h = parse_frame(&f).unwrap();
        assert_eq!(dec_mpls_ttl(&mut f, &h), TtlResult::Expired);
        assert_eq!(push_mpls(&mut f, &h, 0x8847), MplsResult::Done);
        let h = parse_frame(&f).unwrap();
        assert_eq!((mpls_count(&h), h.mpls_bos), (2, Some(0)));
        assert_eq!(pop_mpls(&mut f, &h, 0x8847), MplsResult::Done);
        let h = parse_frame(&f).unwrap();
        assert_eq!(pop_mpls(&mut f, &h, 0x0800), MplsResult::Done);
        let h = parse_frame(&f).unwrap();
        assert_eq!(h.eth_type, 0x0800);
        assert_eq!(f, before);
        assert_eq!(pop_mpls(&mut f, &h, 0x0800), MplsResult::NoOp);
        assert!(set_nw_ttl(&mut f, &h, 9));
        assert_eq!(parse_frame(&f).unwrap().ip_ttl, Some(9));
        assert!(valid(&f));
    }
}
