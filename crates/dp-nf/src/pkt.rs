//! Light packet view for NFs: Ethernet II (one optional 802.1Q tag), IPv4,
//! TCP/UDP/ESP. One bounds-checked pass, no allocation; everything else is
//! "not IPv4" and NFs count it and pass it on. Also the checksum helpers NFs
//! use when they rewrite addresses and ports.

use crate::state::FlowKey;
use dp_core::checksum;

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ESP: u8 = 50;

/// Offsets and header fields of one IPv4 frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pkt {
    /// Start of the IPv4 header.
    pub l3: usize,
    /// Start of the L4 header (= l3 + IHL).
    pub l4: usize,
    /// Start of the L4 payload (TCP/UDP); = l4 for other protocols.
    pub payload: usize,
    /// End of the IP packet inside the frame (Ethernet padding excluded).
    pub end: usize,
    pub key: FlowKey,
    pub ttl: u8,
    pub tos: u8,
    /// Non-first fragment: no L4 header.
    pub fragment: bool,
    pub tcp_flags: u8,
    pub tcp_seq: u32,
    pub tcp_win: u16,
}

impl Pkt {
    pub fn payload<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        &frame[self.payload.min(self.end)..self.end]
    }
    pub fn is_tcp(&self) -> bool {
        self.key.proto == PROTO_TCP && !self.fragment
    }
    pub fn is_udp(&self) -> bool {
        self.key.proto == PROTO_UDP && !self.fragment
    }
}

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;

#[inline]
pub fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
#[inline]
pub fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Parse an Ethernet frame carrying IPv4. `None`: not IPv4 or truncated.
#[inline]
pub fn parse(f: &[u8]) -> Option<Pkt> {
    if f.len() < 14 + 20 {
        return None;
    }
    let mut l3 = 14;
    let mut et = be16(f, 12);
    if et == 0x8100 {
        if f.len() < 18 + 20 {
            return None;
        }
        et = be16(f, 16);
        l3 = 18;
    }
    if et != 0x0800 || f[l3] >> 4 != 4 {
        return None;
    }
    let ihl = ((f[l3] & 0x0f) as usize) * 4;
    let tot = be16(f, l3 + 2) as usize;
    if ihl < 20 || tot < ihl || l3 + tot > f.len() {
        return None;
    }
    let end = l3 + tot;
    let l4 = l3 + ihl;
    let frag = be16(f, l3 + 6);
    let mut p = Pkt {
        l3,
        l4,
        payload: l4,
        end,
        key: FlowKey { src: be32(f, l3 + 12), dst: be32(f, l3 + 16), sport: 0, dport: 0, proto: f[l3 + 9] },
        ttl: f[l3 + 8],
        tos: f[l3 + 1],
        fragment: frag & 0x1fff != 0,
        ..Default::default()
    };
    if p.fragment {
        return Some(p);
    }
    match p.key.proto {
        PROTO_TCP if end >= l4 + 20 => {
            let doff = ((f[l4 + 12] >> 4) as usize) * 4;
            p.key.sport = be16(f, l4);
            p.key.dport = be16(f, l4 + 2);
            p.tcp_seq = be32(f, l4 + 4);
            p.tcp_flags = f[l4 + 13];
            p.tcp_win = be16(f, l4 + 14);
            p.payload = (l4 + doff.max(20)).min(end);
        }
        PROTO_UDP if end >= l4 + 8 => {
            p.key.sport = be16(f, l4);
            p.key.dport = be16(f, l4 + 2);
            p.payload = l4 + 8;
        }
        _ => {}
    }
    Some(p)
}

/// Rewrite the IPv4 source or destination address and patch the IP and
/// TCP/UDP checksums incrementally (RFC 1624).
pub fn set_addr(f: &mut [u8], p: &Pkt, dst: bool, new: u32) {
    let o = p.l3 + if dst { 16 } else { 12 };
    let old = be32(f, o);
    f[o..o + 4].copy_from_slice(&new.to_be_bytes());
    let c = checksum::update32(be16(f, p.l3 + 10), old, new);
    f[p.l3 + 10..p.l3 + 12].copy_from_slice(&c.to_be_bytes());
    if let Some(co) = l4_csum_off(f, p) {
        let c = checksum::update32(be16(f, co), old, new);
        f[co..co + 2].copy_from_slice(&c.to_be_bytes());
    }
}

/// Rewrite the TCP/UDP source or destination port and patch the checksum.
pub fn set_port(f: &mut [u8], p: &Pkt, dst: bool, new: u16) {
    let o = p.l4 + if dst { 2 } else { 0 };
    let old = be16(f, o);
    f[o..o + 2].copy_from_slice(&new.to_be_bytes());
    if let Some(co) = l4_csum_off(f, p) {
        let c = checksum::update16(be16(f, co), old, new);
        f[co..co + 2].copy_from_slice(&c.to_be_bytes());
    }
}

fn l4_csum_off(f: &[u8], p: &Pkt) -> Option<usize> {
    if p.fragment {
        return None;
    }
    match p.key.proto {
        PROTO_TCP if p.end >= p.l4 + 20 => Some(p.l4 + 16),
        // UDP checksum 0 means "none": keep it 0.
        PROTO_UDP if p.end >= p.l4 + 8 && be16(f, p.l4 + 6) != 0 => Some(p.l4 + 6),
        _ => None,
    }
}

/// A named counter set: fixed names, one u64 each.
#[derive(Debug, Clone)]
pub struct Counters {
    names: &'static [&'static str],
    pub v: Vec<u64>,
}

impl Counters {
    pub fn new(names: &'static [&'static str]) -> Self {
        Counters { names, v: vec![0; names.len()] }
    }
    #[inline]
    pub fn inc(&mut self, i: usize) {
        self.v[i] += 1;
    }
    pub fn list(&self) -> Vec<(String, u64)> {
        self.names.iter().zip(&self.v).map(|(n, v)| (n.to_string(), *v)).collect()
    }
    pub fn get(&self, name: &str) -> u64 {
        self.names.iter().position(|n| *n == name).map(|i| self.v[i]).unwrap_or(0)
    }
}

#[cfg(test)]
pub mod testpkt {
    //! Frame builders for the NF unit tests: the same builders the shared samples use.
    pub use crate::samples::{eth_ipv4_ttl as ipv4, tcp, udp};
}
