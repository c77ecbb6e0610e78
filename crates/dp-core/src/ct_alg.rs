//! Open vSwitch 3.1's application-level gateways of the userspace tracker
//! (`ct(commit,alg=ftp|tftp)`: `lib/conntrack.c`, `conntrack-ftp.c`,
//! `conntrack-tftp.c`), as measured on a dummy-datapath bridge.
//!
//! A connection committed with an `alg` keeps it (its "helper"). Whether a
//! packet is an ALG control packet depends on the ct action and the packet's
//! ports only (`ctl_type`, OVS's `get_alg_ctl_type` with the packet's own ports
//! as the flow's: what an exact-match datapath flow passes); a control packet
//! of a connection with a helper runs it:
//! * FTP over IPv4: a message starting `PORT` (active: the address must be the
//!   client's, or its translated one) or `227` (passive: the server's, or the one
//!   the client sees) names an address and port `h1,h2,h3,h4,p1,p2`; over IPv6:
//!   `EPRT |2|addr|port|` (the client's address, or its translated one)
//!   or a message containing `EXTENDED PASSIVE` with `(|||port|)`. Letters in any
//!   case; only the first 127 octets of the payload count (OVS copies 128 with
//!   `strlcpy`), up to the first NUL. A malformed one, or one naming another
//!   address, adds `+inv` to the packet's state; other messages do nothing.
//! * TFTP: every control packet expects a connection to the client's port.
//!
//! The expectation (`Expectation`) is for a connection of the parent's protocol
//! from the other end of the packet's direction — the server for a message in
//! the original direction, the client for one in the reply direction — to the
//! named port, from any source port, in the parent's zone. A new connection it
//! matches is `+new+rel`; committed, it starts with the parent's mark and label
//! as they were when the expectation was made, and every later packet of it is
//! `+rel` too. Expectations are not used up; the first one for a tuple stays;
//! they go with their parent connection (`Conntrack::sweep`, `flush`).
//! An expected connection
//! committed with a `nat` takes its parent's translation (`ct_alg_nat.rs`); under
//! a ct with a `nat` the FTP messages' addresses are rewritten and the control
//! connection's sequence numbers shifted (`ct_alg_ftp_nat.rs`).

use crate::parse::Headers;

/// `ct(alg=…)`: the ALG's well-known port is its wire number (NXAST_CT's `alg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alg {
    Ftp,
    Tftp,
}

impl Alg {
    /// The wire number (21 or 69) -> the ALG; None for any other.
    pub fn from_port(port: u16) -> Option<Alg> {
        match port {
            21 => Some(Alg::Ftp),
            69 => Some(Alg::Tftp),
            _ => None,
        }
    }
}

/// OVS's `get_alg_ctl_type`: the helper this packet is a control packet for, if any.
/// `helper` is the running ct action's `alg`; the flow's ports are the packet's own.
pub(crate) fn ctl_type(h: &Headers, helper: Option<Alg>) -> Option<Alg> {
    let (proto, sport, dport) = (h.ip_proto?, h.l4_src?, h.l4_dst?);
    let (mut ftp_src, mut ftp_dst, mut tftp_dst) = (21, 21, 69);
    if dport != 0 {
        match helper {
            Some(Alg::Ftp) => ftp_dst = dport,
            Some(Alg::Tftp) => tftp_dst = dport,
            None => {}
        }
    } else if sport != 0 && helper == Some(Alg::Ftp) {
        ftp_src = sport;
    }
    match proto {
        17 if dport == tftp_dst => Some(Alg::Tftp),
        6 if sport == ftp_src || dport == ftp_dst => Some(Alg::Ftp),
        _ => None,
    }
}

/// What an FTP control packet asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FtpCtl {
    /// Not a PORT/227 (IPv4) or EPRT/EXTENDED PASSIVE (IPv6) message.
    Other,
    /// One of those, malformed or naming another address: `+inv`.
    Invalid,
    /// A data connection expected to this port.
    Expect(u16),
}

/// OVS's `get_ftp_ctl_msg`: the first `min(payload, 128) - 1` octets of the TCP
/// payload (the IP packet's, not the frame's padding), up to a NUL.
pub(crate) fn ftp_message<'a>(h: &Headers, data: &'a [u8]) -> &'a [u8] {
    let (Some(l4), Some(_)) = (h.l4_offset, h.tcp_flags) else { return &[] };
    let Some(&off) = data.get(l4 + 12) else { return &[] };
    let start = l4 + usize::from(off >> 4) * 4;
    let end = h.l4_end.min(data.len());
    if start >= end {
        return &[];
    }
    let msg = &data[start..start + (end - start).min(128) - 1];
    msg.iter().position(|&b| b == 0).map_or(msg, |n| &msg[..n])
}

fn starts_with_nocase(msg: &[u8], word: &[u8]) -> bool {
    msg.len() >= word.len() && msg[..word.len()].eq_ignore_ascii_case(word)
}

fn contains_nocase(msg: &[u8], word: &[u8]) -> bool {
    msg.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word))
}

/// OVS's `skip_non_digits`.
fn skip_non_digits(msg: &[u8], mut i: usize) -> usize {
    while i < msg.len() && !msg[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// OVS's `terminate_number_str` then `str_to_int`: up to `max + 1` digits from `i`
/// (None without one); returns (value, the index just past them).
fn number(msg: &[u8], i: usize, max: usize) -> Option<(u64, usize)> {
    let mut j = i;
    while j < msg.len() && msg[j].is_ascii_digit() && j - i <= max {
        j += 1;
    }
    if j == i {
        return None;
    }
    let v = msg[i..j].iter().fold(0u64, |v, d| v.saturating_mul(10).saturating_add(u64::from(d - b'0')));
    Some((v, j))
}

/// glibc's `inet_pton(AF_INET)`: four decimal parts of at most 255, no leading zero.
fn parse_v4(text: &[u8]) -> Option<u32> {
    let parts: Vec<&[u8]> = text.split(|&b| b == b'.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut addr = 0u32;
    for p in parts {
        if p.is_empty() || p.len() > 3 || !p.iter().all(u8::is_ascii_digit) || (p.len() > 1 && p[0] == b'0') {
            return None;
        }
        let v = p.iter().fold(0u32, |v, d| v * 10 + u32::from(d - b'0'));
        if v > 255 {
            return None;
        }
        addr = addr << 8 | v;
    }
    Some(addr)
}

/// OVS's `detect_ftp_ctl_type`: a PORT / 227 (IPv4) or EPRT / EXTENDED PASSIVE (IPv6) message.
pub(crate) fn ftp_interest(msg: &[u8], v6: bool) -> bool {
    if v6 {
        starts_with_nocase(msg, b"EPRT") || contains_nocase(msg, b"EXTENDED PASSIVE")
    } else {
        starts_with_nocase(msg, b"PORT") || starts_with_nocase(msg, b"227")
    }
}

/// An FTP control message of a connection whose client is `client` and server
/// `server`: each the address the tracker's tuples hold on the original side and
/// the one on the reply side (the same without a translation; OVS takes either).
pub(crate) fn ftp_ctl(msg: &[u8], v6: bool, client: [u128; 2], server: [u128; 2]) -> FtpCtl {
    if v6 {
        if starts_with_nocase(msg, b"EPRT") {
            return eprt(msg, client);
        }
        if contains_nocase(msg, b"EXTENDED PASSIVE") {
            let i = skip_non_digits(msg, msg.iter().position(|&b| b == b'(').unwrap_or(msg.len()));
            return match number(msg, i, 5) {
                Some((port, _)) if port <= 0xFFFF => FtpCtl::Expect(port as u16),
                _ => FtpCtl::Invalid,
            };
        }
        return FtpCtl::Other;
    }
    let active = starts_with_nocase(msg, b"PORT");
    if !active && !starts_with_nocase(msg, b"227") {
        return FtpCtl::Other;
    }
    let Some((start, end)) = v4_span(msg, active) else { return FtpCtl::Invalid };
    let text: Vec<u8> = msg[start..end].iter().map(|&b| if b == b',' { b'.' } else { b }).collect();
    let Some(addr) = parse_v4(&text) else { return FtpCtl::Invalid };
    let Some((hi, j)) = number(msg, end + 1, 3) else { return FtpCtl::Invalid };
    let Some((lo, _)) = number(msg, j + 1, usize::MAX - 1) else { return FtpCtl::Invalid };
    if hi > 255 || lo > 255 || !(if active { client } else { server }).contains(&u128::from(addr)) {
        return FtpCtl::Invalid;
    }
    FtpCtl::Expect((hi << 8 | lo) as u16)
}

/// Where the address `h1,h2,h3,h4` of a PORT (`active`) or 227 message is: from its
/// first digit to the fourth comma (None when malformed).
fn v4_span(msg: &[u8], active: bool) -> Option<(usize, usize)> {
    let skip = if active { 4 } else { 3 };
    let space = msg[skip..].iter().position(|&b| b == b' ')?;
    let start = skip_non_digits(msg, space + skip);
    if start >= msg.len() {
        return None;
    }
    // four commas (the address's three dots and the one before the port)
    let mut commas = 0;
    let mut i = start;
    while commas < 4 && i < msg.len() {
        commas += usize::from(msg[i] == b',');
        i += 1;
    }
    (commas == 4).then_some((start, i - 1))
}

/// Where the address of an `EPRT |2|address|port|` message is (None when malformed).
fn eprt_span(msg: &[u8]) -> Option<(usize, usize)> {
    let i = skip_non_digits(msg, 4);
    if msg.get(i) != Some(&b'2') || msg.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let start = (i + 2).min(msg.len());
    let mut end = start;
    while end < msg.len() && (msg[end].is_ascii_hexdigit() || msg[end] == b':' || msg[end] == b'.') {
        end += 1;
    }
    Some((start, end))
}

/// The address text an FTP message names, as (start, end) in the message, and whether it
/// is the client's (PORT / EPRT: active) or the server's (227); None for IPv6 passive
/// messages, which name no address, and for malformed ones.
pub(crate) fn ftp_address(msg: &[u8], v6: bool) -> Option<(usize, usize, bool)> {
    if v6 {
        return starts_with_nocase(msg, b"EPRT").then(|| eprt_span(msg)).flatten().map(|(a, b)| (a, b, true));
    }
    let active = starts_with_nocase(msg, b"PORT");
    v4_span(msg, active).map(|(a, b)| (a, b, active))
}

/// `EPRT |2|address|port|` (the delimiter any one character after the 2).
fn eprt(msg: &[u8], client: [u128; 2]) -> FtpCtl {
    let Some((start, end)) = eprt_span(msg) else { return FtpCtl::Invalid };
    let Some(addr) = std::str::from_utf8(&msg[start..end]).ok().and_then(|s| s.parse::<std::net::Ipv6Addr>().ok()) else {
        return FtpCtl::Invalid;
    };
    match number(msg, end + 1, 5) {
        Some((port, _)) if port <= 0xFFFF && client.contains(&u128::from(addr)) => FtpCtl::Expect(port as u16),
        _ => FtpCtl::Invalid,
    }
}

/// An expected connection: its parent (original tuple) and the mark and label the
/// parent had when the expectation was made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expectation {
    pub parent: crate::conntrack::Tuple,
    pub mark: u32,
    pub label: u128,
    /// The translation a connection it matches takes when committed with a `nat` (`ct_alg_nat.rs`).
    pub nat: crate::ct_alg_nat::ExpectedNat,
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: u128 = 0x0A00_0001;
    const S: u128 = 0x0A00_0002;

    #[test]
    fn ftp_v4_messages_as_ovs_reads_them() {
        assert_eq!(ftp_ctl(b"PORT 10,0,0,1,156,64\r", false, [C, C], [S, S]), FtpCtl::Expect(40000));
        assert_eq!(ftp_ctl(b"port 10,0,0,1,1,2\r", false, [C, C], [S, S]), FtpCtl::Expect(258));
        assert_eq!(ftp_ctl(b"227 Entering Passive Mode (10,0,0,2,117,48)\r", false, [C, C], [S, S]), FtpCtl::Expect(30000));
        // measured: another address, a port cut short or missing its last digit (the
        // last octet of the payload is not read) are +inv
        assert_eq!(ftp_ctl(b"PORT 10,0,0,9,156,64\r", false, [C, C], [S, S]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"PORT 10,0,0,1,156\r", false, [C, C], [S, S]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"port 10,0,0,1,1,", false, [C, C], [S, S]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"227 x (10,0,0,1,1,1)\r", false, [C, C], [S, S]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"EPRT |1|10.0.0.1|5003|\r", false, [C, C], [S, S]), FtpCtl::Other);
        assert_eq!(ftp_ctl(b"200 OK\r", false, [C, C], [S, S]), FtpCtl::Other);
    }

    #[test]
    fn ftp_v6_messages_as_ovs_reads_them() {
        let (c, s) = (0x2001_0db8u128 << 96 | 1, 0x2001_0db8u128 << 96 | 2);
        assert_eq!(ftp_ctl(b"EPRT |2|2001:db8::1|5000|\r", true, [c, c], [s, s]), FtpCtl::Expect(5000));
        assert_eq!(ftp_ctl(b"229 Entering Extended Passive Mode (|||6000|)\r", true, [c, c], [s, s]), FtpCtl::Expect(6000));
        assert_eq!(ftp_ctl(b"229 extended passive (|||6001|)\r", true, [c, c], [s, s]), FtpCtl::Expect(6001));
        assert_eq!(ftp_ctl(b"200 EXTENDED PASSIVE (|||6002|)\r", true, [c, c], [s, s]), FtpCtl::Expect(6002));
        assert_eq!(ftp_ctl(b"EPRT |2|2001:db8::9|5001|\r", true, [c, c], [s, s]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"EPRT |1|10.0.0.1|5002|\r", true, [c, c], [s, s]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"EPRT |2|2001:db8::1|70000|\r", true, [c, c], [s, s]), FtpCtl::Invalid);
        assert_eq!(ftp_ctl(b"PORT 10,0,0,1,156,64\r", true, [c, c], [s, s]), FtpCtl::Other);
    }
}
