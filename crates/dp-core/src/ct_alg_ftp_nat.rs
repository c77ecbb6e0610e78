//! The FTP ALG under NAT, as Open vSwitch 3.1's userspace tracker runs it
//! (`lib/conntrack.c`: `handle_ftp_ctl`, `repl_ftp_v4_addr`, `repl_ftp_v6_addr`,
//! `conn_update_state_alg`), measured on a dummy-datapath bridge.
//!
//! A ct with a `nat` that meets an FTP control packet of a connection with the
//! `ftp` helper (`ct_alg.rs`) and a well-formed PORT / 227 (IPv4) or EPRT (IPv6)
//! message rewrites the address the message names to the translated one — the
//! client's reply-side address for PORT / EPRT (the source a source translation
//! gave it), the server's original-side address for 227 (the address a
//! destination translation hid) — in OVS's text (`inet_ntop`, commas for dots in
//! IPv4), moving the rest of the frame; an IPv6 passive reply (229) names no address
//! and is left as it is. The message may name either the untranslated or the
//! translated address (`ct_alg::ftp_ctl`). The IP length follows (the IPv4 header
//! checksum updated), and the size change is the connection's sequence skew: its
//! sum over the messages so far, with the direction of the last message that
//! changed it. From then on every FTP control packet under a ct with a `nat`
//! has its sequence number raised by the skew when it goes in that direction,
//! else its acknowledgement lowered by it (the sender of the rewritten message
//! and its peer each see one consistent stream); the message that changes the
//! skew is shifted by the skew before it. The TCP tracker sees the numbers in the
//! sender's own space (an acknowledgement is lowered before its window checks, a
//! sequence number raised after them). The TCP checksum of every FTP control
//! packet the ALG handles is computed anew. A malformed message (`+inv`) is left
//! as it is, and a ct without `nat` shifts and rewrites nothing.
//!
//! Open vSwitch skips the rewrite when the packet's buffer has less than 8 (IPv4)
//! or 45 (IPv6) octets of room past the frame ("Unsupported effective MTU"): a
//! port's receive buffer has room, a copy its datapath makes (`dp_packet_clone`)
//! has none — the copy a `ct(table=T)` recirculates when more datapath actions
//! follow, a datapath clone — and neither has a frame `netdev-dummy/receive` took
//! from bare hex (the OVS oracles add room). The pipeline says which
//! (`CtArgs::no_room`); without room the message stays, the skew too, and the
//! numbers are still shifted.
//! Pure.

use crate::parse::Headers;

/// INET6_ADDRSTRLEN: room for any address text.
const TEXT: usize = 46;

/// The text replacing a message's address: `len` octets at `at..at + old` of the TCP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splice {
    pub at: usize,
    pub old: usize,
    pub text: [u8; TEXT],
    pub len: usize,
}

/// What the FTP ALG does to the frame a ct just ran (after the ct's own translation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FtpEdit {
    /// Added to the sequence / acknowledgement number (mod 2^32).
    pub seq: i32,
    pub ack: i32,
    pub splice: Option<Splice>,
}

impl FtpEdit {
    /// OVS's `adj_seqnum`s: the connection's `skew`, made by a message in the
    /// `skew_reply` direction, shifts a packet in the `reply` direction (with a `nat` only).
    pub(crate) fn shift(nat: bool, skew: i32, skew_reply: bool, reply: bool) -> FtpEdit {
        match (nat && skew != 0, reply == skew_reply) {
            (false, _) => FtpEdit::default(),
            (true, true) => FtpEdit { seq: skew, ..Default::default() },
            (true, false) => FtpEdit { ack: skew.wrapping_neg(), ..Default::default() },
        }
    }

    /// The change in the frame's size.
    pub fn delta(&self) -> i32 {
        self.splice.map_or(0, |s| s.len as i32 - s.old as i32)
    }
}

/// OVS's `repl_ftp_v4_addr` / `repl_ftp_v6_addr`'s replacement text for `addr`.
pub(crate) fn address_text(addr: u128, v6: bool) -> ([u8; TEXT], usize) {
    let s = if v6 { inet_ntop6(addr) } else { std::net::Ipv4Addr::from(addr as u32).to_string().replace('.', ",") };
    let mut text = [0u8; TEXT];
    text[..s.len()].copy_from_slice(s.as_bytes());
    (text, s.len())
}

/// glibc's `inet_ntop(AF_INET6)`: the longest run of two or more zero groups (the first
/// of equals) as `::`, lowercase hex, an IPv4-compatible or -mapped address's last 32 bits dotted.
fn inet_ntop6(addr: u128) -> String {
    let w: Vec<u16> = (0..8).map(|i| (addr >> (112 - 16 * i)) as u16).collect();
    let (mut best, mut cur) = ((0usize, 0usize), (0usize, 0usize));
    for (i, &v) in w.iter().enumerate() {
        if v == 0 {
            cur = if cur.1 == 0 { (i, 1) } else { (cur.0, cur.1 + 1) };
            if cur.1 > best.1 {
                best = cur;
            }
        } else {
            cur = (0, 0);
        }
    }
    if best.1 < 2 {
        best = (usize::MAX, 0);
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if i == best.0 {
            out.push(':');
            i += best.1;
            if i == 8 {
                out.push(':');
            }
            continue;
        }
        if i != 0 {
            out.push(':');
        }
        if i == 6 && best.0 == 0 && (best.1 == 6 || (best.1 == 5 && w[5] == 0xffff)) {
            out += &std::net::Ipv4Addr::from(addr as u32).to_string();
            break;
        }
        out += &format!("{:x}", w[i]);
        i += 1;
    }
    out
}

/// Apply `e` to the TCP frame parsed as `h` (offsets as parsed; the addresses are read
/// from the frame, which a translation may have changed since): the numbers, the
/// message's address, the IP length and checksums; the TCP checksum computed anew.
pub fn apply(frame: &mut Vec<u8>, h: &Headers, e: &FtpEdit) {
    let Some(l4) = h.l4_offset.filter(|&o| o + 20 <= h.l4_end && h.l4_end <= frame.len()) else { return };
    for (at, by) in [(l4 + 4, e.seq), (l4 + 8, e.ack)] {
        let v = u32::from_be_bytes(frame[at..at + 4].try_into().expect("4 octets")).wrapping_add(by as u32);
        frame[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
    let mut end = h.l4_end;
    if let Some(s) = e.splice {
        let start = l4 + usize::from(frame[l4 + 12] >> 4) * 4 + s.at;
        frame.splice(start..start + s.old, s.text[..s.len].iter().copied());
        end = (end as isize + e.delta() as isize) as usize;
        let l3 = h.l3_offset;
        if h.ipv6_src.is_some() {
            let plen = u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]).wrapping_add(e.delta() as u16);
            frame[l3 + 4..l3 + 6].copy_from_slice(&plen.to_be_bytes());
        } else {
            let old = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]);
            let new = old.wrapping_add(e.delta() as u16);
            let csum = crate::checksum::update16(u16::from_be_bytes([frame[l3 + 10], frame[l3 + 11]]), old, new);
            frame[l3 + 2..l3 + 4].copy_from_slice(&new.to_be_bytes());
            frame[l3 + 10..l3 + 12].copy_from_slice(&csum.to_be_bytes());
        }
    }
    tcp_checksum(frame, h, l4, end);
}

/// The TCP checksum of the segment `l4..end`, pseudo-header included, written in place.
fn tcp_checksum(frame: &mut [u8], h: &Headers, l4: usize, end: usize) {
    let l3 = h.l3_offset;
    let len = (end - l4) as u32;
    frame[l4 + 16] = 0;
    frame[l4 + 17] = 0;
    let pseudo = if h.ipv6_src.is_some() {
        crate::checksum::sum(&frame[l3 + 8..l3 + 40], len + 6)
    } else {
        crate::checksum::sum(&frame[l3 + 12..l3 + 20], len + 6)
    };
    let c = crate::checksum::fold(crate::checksum::sum(&frame[l4..end], pseudo));
    frame[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_frame as parse;

    fn tcp4(src: [u8; 4], dst: [u8; 4], seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&[0x9c, 0x40, 0, 21]);
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&ack.to_be_bytes());
        f.extend_from_slice(&[0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        let tot = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&tot.to_be_bytes());
        crate::checksum::ipv4_header_fix(&mut f, 14, 20);
        let h = parse(&f).unwrap();
        let n = f.len();
        tcp_checksum(&mut f, &h, 34, n);
        f
    }

    #[test]
    fn addresses_as_inet_ntop_writes_them() {
        let t = |a: u128, v6| {
            let (text, n) = address_text(a, v6);
            String::from_utf8(text[..n].to_vec()).unwrap()
        };
        assert_eq!(t(0x0A00_0064, false), "10,0,0,100");
        assert_eq!(t(0x2001_0db8u128 << 96 | 0x100, true), "2001:db8::100");
        assert_eq!(t(0x2001_0db8_0000_0001_0000_0000_0000_0001, true), "2001:db8:0:1::1");
        assert_eq!(t(0x2001_0db8_0000_0000_0001_0000_0000_0001, true), "2001:db8::1:0:0:1");
        assert_eq!(t(0x2001_0db8_0001_0000_0001_0000_0001_0001, true), "2001:db8:1:0:1:0:1:1");
        assert_eq!(t(0xffff_0a00_0001, true), "::ffff:10.0.0.1");
        assert_eq!(t(1, true), "::1");
        assert_eq!(t(0, true), "::");
        assert_eq!(t(0xfe80u128 << 112, true), "fe80::");
        // (glibc, unlike Rust's Display, dots an IPv4-compatible address: Python's socket.inet_ntop)
        assert_eq!(t(0x0A00_0001, true), "::10.0.0.1");
        assert_eq!(t(0xffff_0000, true), "::255.255.0.0");
    }

    #[test]
    fn a_skew_shifts_the_sender_forward_and_its_peer_back() {
        assert_eq!(FtpEdit::shift(true, 2, false, false), FtpEdit { seq: 2, ..Default::default() });
        assert_eq!(FtpEdit::shift(true, 2, false, true), FtpEdit { ack: -2, ..Default::default() });
        assert_eq!(FtpEdit::shift(true, -6, true, false), FtpEdit { ack: 6, ..Default::default() });
        assert_eq!(FtpEdit::shift(false, 2, false, false), FtpEdit::default());
    }

    #[test]
    fn a_port_message_rewritten_as_ovs_did_it() {
        // measured: PORT 10,0,0,1,156,64 from 10.0.0.1 source-translated to 10.0.0.100
        let msg = b"PORT 10,0,0,1,156,64\r\n";
        let mut f = tcp4([10, 0, 0, 100], [10, 0, 0, 2], 1001, 5001, msg);
        f.extend_from_slice(&[0xab, 0xcd, 0xef, 0x01]); // (a trailer past the IP packet moves along)
        let h = parse(&f).unwrap();
        let (text, len) = address_text(0x0A00_0064, false);
        let e = FtpEdit { splice: Some(Splice { at: 5, old: 8, text, len }), ..Default::default() };
        apply(&mut f, &h, &e);
        let mut want = tcp4([10, 0, 0, 100], [10, 0, 0, 2], 1001, 5001, b"PORT 10,0,0,100,156,64\r\n");
        want.extend_from_slice(&[0xab, 0xcd, 0xef, 0x01]);
        assert_eq!(f, want);
        assert_eq!(&f[16..18], &[0, 64]); // (IP length 62 + 2)
        assert_eq!(&f[50..52], &[0x88, 0x32]); // (OVS's TCP checksum)
    }

    #[test]
    fn numbers_shift_and_the_checksum_follows() {
        // measured: the server's "200 OK" acknowledging 1023 leaves acknowledging 1021
        let mut f = tcp4([10, 0, 0, 2], [10, 0, 0, 1], 5001, 1023, b"200 OK\r\n");
        let h = parse(&f).unwrap();
        apply(&mut f, &h, &FtpEdit::shift(true, 2, false, true));
        assert_eq!(f, tcp4([10, 0, 0, 2], [10, 0, 0, 1], 5001, 1021, b"200 OK\r\n"));
    }
}
