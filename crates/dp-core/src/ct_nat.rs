//! Network address translation in the connection tracker, as Open vSwitch 3.1's
//! userspace datapath does it (`lib/conntrack.c`: `nat_get_unique_tuple`,
//! `nat_packet`, `un_nat_packet`): a connection committed by `ct(commit,nat(src|dst=…))`
//! gets a translated reply tuple, chosen once; every later `ct(nat)` of that
//! connection rewrites the packet — the original direction to the translated
//! addresses and ports, the reply direction back — and reports `+snat` / `+dnat`.
//!
//! A bare `nat` committing a new connection gives it, as OVS 3.1 does, the reply
//! tuple (source address 0, destination port 0 for TCP / UDP): no reply finds it.
//!
//! The choice (`unique_reply`): the address is the range's first one (no range:
//! the packet's own), the next one when all its ports are taken; the ports, for TCP / UDP / SCTP,
//! start at the range's (no range: the packet's own port, searched upward within
//! OVS's class of it: 1–511, 600–1023, 1024–65535) and go up (wrapping) until the
//! reply tuple is no connection's, at most 128 tries. Where Open vSwitch picks
//! from a wider range by a hash with a random basis, the pick here is the
//! range's first address and the port search above: the same kind of answer
//! (in range, one mapping per connection), not the same value. Pure.

use crate::actions::set_field;
use crate::conntrack::Tuple;
use crate::field::Field;
use crate::parse::Headers;

/// ct_state bits of a translated packet.
pub const CS_SRC_NAT: u32 = 0x40;
pub const CS_DST_NAT: u32 = 0x80;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NatKind {
    /// `nat` alone: apply a connection's translation, choose none.
    #[default]
    None,
    Src,
    Dst,
}

/// A `nat(...)` of a ct action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NatSpec {
    pub kind: NatKind,
    /// (first, last) address; IPv4 addresses in the low 32 bits.
    pub addrs: Option<(u128, u128)>,
    pub ports: Option<(u16, u16)>,
}

impl std::fmt::Display for NatSpec {
    /// `nat`, `nat(src=A[-B][:P[-Q]])` (an address above 32 bits as IPv6).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            NatKind::None => return write!(f, "nat"),
            NatKind::Src => "src",
            NatKind::Dst => "dst",
        };
        let addr = |a: u128| match u32::try_from(a) {
            Ok(v4) => std::net::Ipv4Addr::from(v4).to_string(),
            Err(_) => format!("[{}]", std::net::Ipv6Addr::from(a)),
        };
        write!(f, "nat({kind}")?;
        if let Some((lo, hi)) = self.addrs {
            write!(f, "={}", addr(lo))?;
            if hi != lo {
                write!(f, "-{}", addr(hi))?;
            }
            if let Some((p, q)) = self.ports {
                write!(f, ":{p}")?;
                if q != p {
                    write!(f, "-{q}")?;
                }
            }
        }
        write!(f, ")")
    }
}

/// The translated reply tuple of a new connection `key` under `spec`, or None
/// when every candidate is taken (`taken` says whether a tuple is a connection's).
pub fn unique_reply(key: &Tuple, spec: &NatSpec, taken: &dyn Fn(&Tuple) -> bool) -> Option<Tuple> {
    let spec = &NatSpec { addrs: spec.addrs.map(|(lo, hi)| (in_family(lo, key.v6), in_family(hi, key.v6))), ..*spec };
    let (first, last) = spec.addrs.unwrap_or((0, 0));
    // (OVS goes on to the range's next address when every port of one is taken)
    let tries = (last.saturating_sub(first)).min(MAX_ADDRESSES - 1);
    (0..=tries).find_map(|i| reply_at(key, spec, spec.addrs.map(|_| first + i), taken))
}

/// A range's address as a packet of the other family gets it (a group's bucket has no
/// match to refuse that with): Open vSwitch keeps it in a union of the IPv4 and the
/// IPv6 address, so an IPv6 packet gets the IPv4 address as its first 4 bytes, the
/// rest 0, and an IPv4 packet the first 4 bytes of the IPv6 address (measured).
fn in_family(addr: u128, v6: bool) -> u128 {
    match (v6, u32::try_from(addr)) {
        (true, Ok(_)) => addr << 96,
        (false, Err(_)) => addr >> 96,
        _ => addr,
    }
}

/// Addresses of a range tried in turn, at most.
const MAX_ADDRESSES: u128 = 1 << 16;

/// The reply tuple with translated address `addr` (None: the packet's own), its port
/// chosen as `unique_reply` says, or None when every port is taken.
fn reply_at(key: &Tuple, spec: &NatSpec, addr: Option<u128>, taken: &dyn Fn(&Tuple) -> bool) -> Option<Tuple> {
    let mut rev = key.reversed();
    match spec.kind {
        // (OVS 3.1 commits a bare `nat` as a translation to address 0 and, for TCP / UDP,
        // the original source port 0 in the reply tuple, which no reply then carries)
        NatKind::None => rev.src = 0,
        NatKind::Src => rev.dst = addr.unwrap_or(key.src),
        NatKind::Dst => rev.src = addr.unwrap_or(key.dst),
    }
    if !matches!(key.proto, 6 | 17 | 132) {
        return (!taken(&rev)).then_some(rev);
    }
    if let (NatKind::Dst, Some((lo, hi))) = (spec.kind, spec.ports) {
        if let Some(p) = first_free(&mut rev, lo, lo, hi, true, taken) {
            rev.sport = p;
            return Some(rev);
        }
        rev.sport = lo; // (OVS puts the first candidate back, then searches the other port)
    }
    let (cur, lo, hi) = match (spec.kind, spec.ports) {
        (NatKind::None, _) => (0, 0, 0),
        (NatKind::Src, Some((lo, hi))) => (lo, lo, hi),
        _ => match key.sport {
            p if p < 512 => (p, 1, 511),
            p if p < 1024 => (p, 600, 1023),
            p => (p, 1024, 65535),
        },
    };
    first_free(&mut rev, cur, lo, hi, false, taken).map(|p| {
        rev.dport = p;
        rev
    })
}

/// OVS's `nat_get_unique_l4`: from `cur` upward through lo..=hi (wrapping), at most
/// min(range, 128) tries, the first port whose reply tuple is free.
fn first_free(rev: &mut Tuple, cur: u16, lo: u16, hi: u16, src: bool, taken: &dyn Fn(&Tuple) -> bool) -> Option<u16> {
    let range = u32::from(hi) - u32::from(lo) + 1; // (lo 0: OVS's range of the one port 0)
    let mut p = cur;
    for _ in 0..range.min(128) {
        if src { rev.sport = p } else { rev.dport = p }
        if !taken(rev) {
            return Some(p);
        }
        p = if p >= hi { lo } else { p + 1 };
    }
    None
}

/// Rewrite the packet to the tuple `to`, as `nat_packet` / `un_nat_packet` do: the
/// translated side's address (`src`: the source side), and both TCP / UDP ports
/// where they differ (a destination translation may have moved the source port
/// too, to keep the reply tuple unique); checksums kept valid.
pub fn rewrite(frame: &mut [u8], h: &Headers, to: &Tuple, src: bool) {
    if crate::ct_related::is_error_packet(h) {
        return crate::ct_related::rewrite_outer(frame, h, to, src); // (an ICMP error related to the connection)
    }
    let addr = if src { to.src } else { to.dst };
    let field = match (to.v6, src) {
        (false, true) => Field::Ipv4Src,
        (false, false) => Field::Ipv4Dst,
        (true, true) => Field::Ipv6Src,
        (true, false) => Field::Ipv6Dst,
    };
    set_field(frame, h, field, addr);
    let (sf, df) = match h.ip_proto {
        Some(6) => (Field::TcpSrc, Field::TcpDst),
        Some(17) => (Field::UdpSrc, Field::UdpDst),
        _ => return,
    };
    for (f, now, port) in [(sf, h.l4_src, to.sport), (df, h.l4_dst, to.dport)] {
        if now.is_some_and(|p| p != port) {
            set_field(frame, h, f, u128::from(port));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: u128, sport: u16, dst: u128, dport: u16) -> Tuple {
        Tuple { src, dst, sport, dport, proto: 6, ..Default::default() }
    }

    #[test]
    fn snat_keeps_the_port_unless_taken() {
        let k = tcp(1, 20000, 2, 80);
        let spec = NatSpec { kind: NatKind::Src, addrs: Some((9, 9)), ports: None };
        let r = unique_reply(&k, &spec, &|_| false).unwrap();
        assert_eq!(r, tcp(2, 80, 9, 20000));
        let r = unique_reply(&k, &spec, &|t| t.dport == 20000).unwrap();
        assert_eq!(r.dport, 20001);
    }

    #[test]
    fn dnat_with_a_port_and_exhaustion() {
        let k = tcp(1, 20000, 2, 80);
        let spec = NatSpec { kind: NatKind::Dst, addrs: Some((7, 7)), ports: Some((8080, 8080)) };
        assert_eq!(unique_reply(&k, &spec, &|_| false).unwrap(), tcp(7, 8080, 1, 20000));
        let snat1 = NatSpec { kind: NatKind::Src, addrs: Some((9, 9)), ports: Some((5, 5)) };
        assert_eq!(unique_reply(&k, &snat1, &|_| true), None);
    }

    #[test]
    fn a_bare_nat_commits_a_reply_tuple_no_reply_carries() {
        let k = tcp(1, 20000, 2, 80);
        let spec = NatSpec::default();
        assert_eq!(unique_reply(&k, &spec, &|_| false).unwrap(), tcp(0, 80, 1, 0));
        assert_eq!(unique_reply(&k, &spec, &|_| true), None);
    }

    #[test]
    fn a_full_address_moves_on_to_the_next() {
        let k = tcp(1, 20000, 2, 80);
        let spec = NatSpec { kind: NatKind::Src, addrs: Some((9, 10)), ports: Some((5, 6)) };
        let r = unique_reply(&k, &spec, &|t| t.dst == 9).unwrap();
        assert_eq!((r.dst, r.dport), (10, 5));
    }

    #[test]
    fn shown_as_ovs_writes_it() {
        let s = NatSpec { kind: NatKind::Dst, addrs: Some((0x0A000001, 0x0A000009)), ports: Some((80, 90)) };
        assert_eq!(s.to_string(), "nat(dst=10.0.0.1-10.0.0.9:80-90)");
        assert_eq!(NatSpec::default().to_string(), "nat");
        let v6 = NatSpec { kind: NatKind::Src, addrs: Some((1 << 120, 1 << 120)), ports: None };
        assert_eq!(v6.to_string(), "nat(src=[100::])");
    }

    #[test]
    fn an_address_of_the_other_family_is_the_union_s_first_bytes() {
        let spec = NatSpec { kind: NatKind::Src, addrs: Some((0x0A09_0909, 0x0A09_0909)), ports: None };
        let k6 = Tuple { v6: true, ..tcp(1, 20000, 2, 80) };
        assert_eq!(unique_reply(&k6, &spec, &|_| false).unwrap().dst, 0x0A09_0909 << 96);
        let v6 = 0x2001_0DB8_u128 << 96 | 9;
        let spec = NatSpec { addrs: Some((v6, v6)), ..spec };
        assert_eq!(unique_reply(&tcp(1, 20000, 2, 80), &spec, &|_| false).unwrap().dst, 0x2001_0DB8);
    }

    #[test]
    fn low_ports_stay_in_their_class() {
        let k = tcp(1, 511, 2, 80);
        let spec = NatSpec { kind: NatKind::Src, addrs: None, ports: None };
        assert_eq!(unique_reply(&k, &spec, &|t| t.dport == 511).unwrap().dport, 1);
    }
}
