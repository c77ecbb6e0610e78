//! The TCP part of connection tracking, as Open vSwitch 3.1's userspace
//! tracker runs it (`lib/conntrack-tcp.c`, derived from pf): per direction
//! ("peer") the highest sequence number sent (`seqlo`), the highest the other
//! end may send (`seqhi`, its acknowledgement plus window), the largest
//! window and the window scale, and a pf state (CLOSED … TIME_WAIT).
//!
//! * A connection opens from any segment `valid_new` accepts (a SYN, or a
//!   segment with ACK or RST: picked up mid-stream, both window scales then
//!   unknown and taken as the largest, 14); never from a SYN+ACK.
//! * Each later segment (`update`) passes the window check — its last octet
//!   within `seqhi`, not more than one window behind `seqlo`, its
//!   acknowledgement within 67,035 (scaled) of what the other end sent, a
//!   RST exactly at `seqlo` (or one off) — and moves the state and windows
//!   (`Valid`); or, while the receiving end has not answered yet or either end
//!   has half-closed, it passes the looser check (one 67,035-octet window
//!   either way, no timeout refresh); else it is `Invalid` (`+inv`).
//! * A bare SYN from an end at SYN_SENT or before is `ValidNew` (`+new`: a
//!   retransmission); once both ends are at FIN_WAIT_2 or later it is `New`
//!   (the old connection ends and the SYN opens another).
//!
//! The timeouts are OVS's defaults: first packet 30 s, opening 30 s,
//! established 24 h, closing 15 min, FIN_WAIT 45 s, closed 30 s. Pure: no I/O,
//! no clock (the caller passes `now`).

use crate::parse::Headers;

const SEC: u64 = 1_000_000_000;

pub const FIN: u16 = 0x01;
pub const SYN: u16 = 0x02;
pub const RST: u16 = 0x04;
pub const PSH: u16 = 0x08;
pub const ACK: u16 = 0x10;
pub const URG: u16 = 0x20;

// pf's states, in their order (`enum ct_dpif_tcp_state`): the checks compare them.
const CLOSED: u8 = 0;
const SYN_SENT: u8 = 2;
const ESTABLISHED: u8 = 4;
const CLOSING: u8 = 7;
const FIN_WAIT_2: u8 = 9;
const TIME_WAIT: u8 = 10;

const MAX_WSCALE: u8 = 14;
const WSCALE_FLAG: u8 = 0x80;
const WSCALE_UNKNOWN: u8 = 0x40;
const WSCALE_MASK: u8 = 0x0f;
/// pf's `MAXACKWINDOW`: 0xffff plus a 1500-octet fudge factor.
const MAX_ACK_WINDOW: u32 = 0xffff + 1500;

/// The fields of a TCP segment the tracker reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Segment {
    pub flags: u16,
    pub seq: u32,
    pub ack: u32,
    pub win: u16,
    /// Payload octets (the IP payload after the TCP header; Ethernet padding excluded).
    pub len: u32,
    /// The window-scale option: `WSCALE_FLAG | shift` when present, else 0.
    pub wscale: u8,
}

impl Segment {
    /// The segment of a parsed TCP frame (None without a whole 20-byte header).
    pub fn parse(h: &Headers, data: &[u8]) -> Option<Segment> {
        let flags = h.tcp_flags?;
        let off = h.l4_offset?;
        let hdr = data.get(off..off + 20)?;
        let be32 = |i: usize| u32::from_be_bytes([hdr[i], hdr[i + 1], hdr[i + 2], hdr[i + 3]]);
        let hlen = usize::from(hdr[12] >> 4) * 4;
        let end = h.l4_end.min(data.len());
        let whole = hlen >= 20 && off + hlen <= end;
        let len = if whole { (end - off - hlen) as u32 } else { 0 };
        let wscale = if whole { wscale_option(&data[off + 20..off + hlen]) } else { 0 };
        Some(Segment { flags, seq: be32(4), ack: be32(8), win: u16::from_be_bytes([hdr[14], hdr[15]]), len, wscale })
    }
}

/// OVS's `tcp_get_wscale`: the window-scale option among `opts`, capped at 14.
fn wscale_option(opts: &[u8]) -> u8 {
    let mut wscale = 0;
    let mut i = 0;
    let mut left = opts.len() as i64;
    while left >= 3 {
        match opts[i] {
            0 => return wscale,
            1 => {
                i += 1;
                left -= 1;
            }
            kind => {
                if kind == 3 {
                    wscale = opts[i + 2].min(MAX_WSCALE) | WSCALE_FLAG;
                }
                let n = usize::from(opts[i + 1]).max(2);
                left -= n as i64;
                i += n;
            }
        }
    }
    wscale
}

/// OVS's `tcp_invalid_flags`.
pub fn invalid_flags(f: u16) -> bool {
    if f & SYN != 0 {
        if f & (RST | FIN) != 0 {
            return true;
        }
    } else if f & (ACK | RST) == 0 {
        return true;
    }
    f & ACK == 0 && f & (FIN | PSH | URG) != 0
}

/// OVS's `tcp_valid_new`: whether a segment with no connection may open one.
pub fn valid_new(f: u16) -> bool {
    !(invalid_flags(f) || (f & SYN != 0 && f & ACK != 0))
}

fn seq_geq(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peer {
    pub seqlo: u32,
    pub seqhi: u32,
    /// (OVS keeps it in 16 bits: a shifted value is cut to them.)
    pub max_win: u16,
    pub wscale: u8,
    pub state: u8,
}

/// One TCP connection's two peers: [original direction, reply direction].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpConn {
    pub peer: [Peer; 2],
}

/// What a segment does to its connection (OVS's `ct_update_res`), with the
/// connection's new timeout (ns from now) where OVS refreshes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpUpdate {
    Valid(Option<u64>),
    ValidNew(u64),
    Invalid,
    New,
}

/// The timeout of a connection that has just opened (OVS's `TCP_FIRST_PACKET`).
pub const FIRST_PACKET: u64 = 30 * SEC;

impl TcpConn {
    /// OVS's `tcp_new_conn`: the connection `s` opens (in the original direction).
    pub fn new(s: &Segment) -> TcpConn {
        let mut src = Peer { seqlo: s.seq, ..Default::default() };
        let mut dst = Peer::default();
        src.seqhi = s.seq.wrapping_add(s.len).wrapping_add(1);
        if s.flags & SYN != 0 {
            src.seqhi = src.seqhi.wrapping_add(1);
            src.wscale = s.wscale;
        } else {
            src.wscale = WSCALE_UNKNOWN;
            dst.wscale = WSCALE_UNKNOWN;
        }
        src.max_win = s.win.max(1);
        if src.wscale & WSCALE_MASK != 0 {
            let sws = src.wscale & WSCALE_MASK;
            src.max_win = u32::from(src.max_win).div_ceil(1 << sws) as u16;
        }
        if s.flags & FIN != 0 {
            src.seqhi = src.seqhi.wrapping_add(1);
        }
        dst.seqhi = 1;
        dst.max_win = 1;
        src.state = SYN_SENT;
        dst.state = CLOSED;
        TcpConn { peer: [src, dst] }
    }

    /// OVS's `tcp_conn_update`: segment `s`, sent in the reply direction if `reply`.
    pub fn update(&mut self, s: &Segment, reply: bool) -> TcpUpdate {
        let flags = s.flags;
        if invalid_flags(flags) {
            return TcpUpdate::Invalid;
        }
        let (si, di) = if reply { (1, 0) } else { (0, 1) };
        let [mut src, mut dst] = [self.peer[si], self.peer[di]];
        if flags & (SYN | ACK) == SYN {
            if dst.state >= FIN_WAIT_2 && src.state >= FIN_WAIT_2 {
                self.peer = [Peer { state: CLOSED, ..self.peer[0] }, Peer { state: CLOSED, ..self.peer[1] }];
                return TcpUpdate::New;
            } else if src.state <= SYN_SENT {
                self.peer[si].state = SYN_SENT;
                return TcpUpdate::ValidNew(FIRST_PACKET);
            }
        }
        let (mut sws, mut dws) = (0u8, 0u8);
        if src.wscale & WSCALE_FLAG != 0 && dst.wscale & WSCALE_FLAG != 0 && flags & SYN == 0 {
            sws = src.wscale & WSCALE_MASK;
            dws = dst.wscale & WSCALE_MASK;
        } else if src.wscale & WSCALE_UNKNOWN != 0 && dst.wscale & WSCALE_UNKNOWN != 0 && flags & SYN == 0 {
            sws = MAX_WSCALE;
            dws = MAX_WSCALE;
        }
        let mut win = s.win;
        let orig_seq = s.seq;
        let mut seq = s.seq;
        let mut ack = s.ack;
        let mut end = seq.wrapping_add(s.len);
        let mut check_ackskew = true;
        if flags & SYN != 0 {
            end = end.wrapping_add(1);
        }
        if flags & FIN != 0 {
            end = end.wrapping_add(1);
        }
        if src.state < SYN_SENT {
            // the first segment from this end
            if flags & SYN != 0 && dst.wscale & WSCALE_FLAG != 0 {
                src.wscale = s.wscale;
                if src.wscale & WSCALE_FLAG != 0 {
                    sws = src.wscale & WSCALE_MASK;
                    win = u32::from(win).div_ceil(1 << sws) as u16;
                    dws = dst.wscale & WSCALE_MASK;
                } else {
                    dst.max_win = ((u32::from(dst.max_win)) << (dst.wscale & WSCALE_MASK)) as u16;
                    dst.wscale = 0;
                }
            }
            src.seqlo = seq;
            src.state = SYN_SENT;
            let reach = end.wrapping_add((u32::from(dst.max_win) << dws).max(1));
            if src.seqhi == 1 || seq_geq(reach, src.seqhi) {
                src.seqhi = reach;
                check_ackskew = false; // (a connection picked up new or mid-stream: ack skew not checked)
            }
            if win > src.max_win {
                src.max_win = win;
            }
        }
        if flags & ACK == 0 || (ack == 0 && flags & (ACK | RST) == ACK | RST) {
            ack = dst.seqlo; // (no ACK, or a broken stack's RST with ack 0: passes the skew check)
        }
        if seq == end {
            // no data: the sequence number is not checked
            seq = src.seqlo;
            end = seq;
        }
        let ackskew: i64 = if check_ackskew { i64::from(dst.seqlo.wrapping_sub(ack) as i32) } else { 0 };
        let back = u32::from(dst.max_win) << dws;
        let in_window = seq_geq(src.seqhi, end)
            && seq_geq(seq, src.seqlo.wrapping_sub(back))
            && ackskew >= -i64::from(MAX_ACK_WINDOW)
            && ackskew <= i64::from(MAX_ACK_WINDOW) << sws
            && (flags & RST == 0 || orig_seq == src.seqlo || orig_seq == src.seqlo.wrapping_add(1) || orig_seq.wrapping_add(1) == src.seqlo);
        let loose = !in_window
            && (dst.state < SYN_SENT || dst.state >= FIN_WAIT_2 || src.state >= FIN_WAIT_2)
            && seq_geq(src.seqhi.wrapping_add(MAX_ACK_WINDOW), end)
            && seq_geq(seq, src.seqlo.wrapping_sub(MAX_ACK_WINDOW));
        if !in_window && !loose {
            // (what the first segment from an end set above stays: OVS writes it in place)
            self.peer[si] = src;
            self.peer[di] = dst;
            return TcpUpdate::Invalid;
        }
        if src.max_win < win {
            src.max_win = win;
        }
        if seq_gt(end, src.seqlo) {
            src.seqlo = end;
        }
        let scaled = u32::from(win) << sws;
        if seq_geq(ack.wrapping_add(scaled), dst.seqhi) {
            dst.seqhi = ack.wrapping_add(scaled.max(1));
        }
        let mut timeout = None;
        if in_window {
            if flags & SYN != 0 && src.state < SYN_SENT {
                src.state = SYN_SENT;
            }
            if flags & FIN != 0 && src.state < CLOSING {
                src.state = CLOSING;
            }
            if flags & ACK != 0 {
                if dst.state == SYN_SENT {
                    dst.state = ESTABLISHED;
                } else if dst.state == CLOSING {
                    dst.state = FIN_WAIT_2;
                }
            }
            if flags & RST != 0 {
                src.state = TIME_WAIT;
                dst.state = TIME_WAIT;
            }
            timeout = Some(SEC * if src.state >= FIN_WAIT_2 && dst.state >= FIN_WAIT_2 {
                30
            } else if src.state >= CLOSING && dst.state >= CLOSING {
                45
            } else if src.state < ESTABLISHED || dst.state < ESTABLISHED {
                30
            } else if src.state >= CLOSING || dst.state >= CLOSING {
                15 * 60
            } else {
                24 * 3600
            });
        } else {
            if flags & FIN != 0 && src.state < CLOSING {
                src.state = CLOSING;
            }
            if flags & RST != 0 {
                src.state = TIME_WAIT;
                dst.state = TIME_WAIT;
            }
        }
        self.peer[si] = src;
        self.peer[di] = dst;
        TcpUpdate::Valid(timeout)
    }
}

#[cfg(test)]
mod tests {
    //! One test per rule; the verdicts are those Open vSwitch 3.1 gives the same
    //! segments (tests/dataplane/test_ct_tcp_golden.py checks them against OVS).
    use super::*;

    const C0: u32 = 1000;
    const S0: u32 = 5000;

    fn seg(flags: u16, seq: u32, ack: u32, len: u32) -> Segment {
        Segment { flags, seq, ack, win: 65535, len, wscale: 0 }
    }

    /// A connection after SYN, SYN+ACK, ACK (client C0, server S0).
    fn handshake() -> TcpConn {
        let mut c = TcpConn::new(&seg(SYN, C0, 0, 0));
        assert_eq!(c.update(&seg(SYN | ACK, S0, C0 + 1, 0), true), TcpUpdate::Valid(Some(30 * SEC)));
        assert_eq!(c.update(&seg(ACK, C0 + 1, S0 + 1, 0), false), TcpUpdate::Valid(Some(24 * 3600 * SEC)));
        c
    }

    fn valid(u: TcpUpdate) -> bool {
        matches!(u, TcpUpdate::Valid(_))
    }

    #[test]
    fn flag_combinations_that_are_never_valid_and_what_may_open() {
        for f in [0, SYN | FIN, SYN | RST, FIN, PSH, URG, FIN | PSH] {
            assert!(invalid_flags(f), "{f:#x}");
            assert!(!valid_new(f));
        }
        assert!(valid_new(SYN) && valid_new(ACK) && valid_new(RST) && valid_new(FIN | ACK));
        assert!(!invalid_flags(SYN | ACK) && !valid_new(SYN | ACK)); // (a SYN+ACK opens nothing)
    }

    #[test]
    fn a_segment_counts_its_payload_to_the_ip_length_not_the_padding() {
        // IPv4, TCP with a 4-octet option (NOP, window scale 5), 3 payload octets, padded
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend_from_slice(&[0x45, 0, 0, 20 + 24 + 3, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x13, 0x88, 0, 80, 0, 0, 0x03, 0xe8, 0, 0, 0x13, 0x88, 0x60, 0x18, 0x01, 0x00, 0, 0, 0, 0]);
        f.extend_from_slice(&[1, 3, 3, 5, 0xaa, 0xbb, 0xcc]);
        f.resize(80, 0);
        let h = crate::parse::parse_frame(&f).unwrap();
        let s = Segment::parse(&h, &f).unwrap();
        assert_eq!(s, Segment { flags: PSH | ACK, seq: 1000, ack: 5000, win: 256, len: 3, wscale: WSCALE_FLAG | 5 });
    }

    #[test]
    fn the_window_scale_option_is_read_past_nops_and_capped() {
        assert_eq!(wscale_option(&[1, 3, 3, 7]), WSCALE_FLAG | 7);
        assert_eq!(wscale_option(&[3, 3, 20, 0]), WSCALE_FLAG | 14);
        assert_eq!(wscale_option(&[2, 4, 5, 0xb4, 0, 3, 3, 2]), 0); // MSS, then EOL ends the list
        assert_eq!(wscale_option(&[2, 4, 5, 0xb4, 1, 3, 3, 2]), WSCALE_FLAG | 2);
    }

    #[test]
    fn data_inside_the_window_is_established_outside_invalid() {
        let mut c = handshake();
        assert!(valid(c.update(&seg(PSH | ACK, C0 + 1, S0 + 1, 10), false)));
        assert!(valid(c.update(&seg(PSH | ACK, S0 + 1, C0 + 11, 5), true)));
        assert_eq!(c.update(&seg(PSH | ACK, C0 + 11 + 70000, S0 + 6, 10), false), TcpUpdate::Invalid); // past seqhi
        assert_eq!(c.update(&seg(PSH | ACK, (C0 + 11).wrapping_sub(70000), S0 + 6, 10), false), TcpUpdate::Invalid); // a window back
        assert!(valid(c.update(&seg(PSH | ACK, C0 + 11, S0 + 6, 10), false)));
    }

    #[test]
    fn acknowledging_more_than_a_window_ahead_is_invalid() {
        let mut c = TcpConn::new(&seg(SYN, C0, 0, 0));
        assert!(valid(c.update(&seg(SYN | ACK, S0, C0 + 1, 0), true)));
        assert_eq!(c.update(&seg(ACK, C0 + 1, S0 + 1 + 200_000, 0), false), TcpUpdate::Invalid);
        assert!(valid(c.update(&seg(ACK, C0 + 1, S0 + 1, 0), false)));
    }

    #[test]
    fn a_reset_must_sit_at_the_sequence_number_or_one_off() {
        let mut c = handshake();
        assert_eq!(c.update(&seg(RST | ACK, S0 + 9, C0 + 1, 0), true), TcpUpdate::Invalid);
        assert_eq!(c.update(&seg(RST | ACK, S0 + 1, C0 + 1, 0), true), TcpUpdate::Valid(Some(30 * SEC)));
        assert_eq!(c.peer.map(|p| p.state), [TIME_WAIT, TIME_WAIT]);
        assert_eq!(c.update(&seg(SYN, C0 + 50, 0, 0), false), TcpUpdate::New); // both closed: a new connection
    }

    #[test]
    fn a_reset_with_ack_zero_passes_the_skew_check() {
        let mut c = TcpConn::new(&seg(SYN, C0, 0, 0));
        assert!(valid(c.update(&seg(SYN | ACK, S0, C0 + 1, 0), true)));
        assert!(valid(c.update(&seg(RST | ACK, S0 + 1, 0, 0), true)));
    }

    #[test]
    fn a_syn_from_an_end_still_opening_is_new_again() {
        let mut c = TcpConn::new(&seg(SYN, C0, 0, 0));
        assert_eq!(c.update(&seg(SYN, C0, 0, 0), false), TcpUpdate::ValidNew(FIRST_PACKET));
        let mut c = handshake();
        assert!(valid(c.update(&seg(SYN, C0, 0, 0), false))); // established: just a segment
    }

    #[test]
    fn fin_both_ways_then_the_last_ack_closes() {
        let mut c = handshake();
        assert_eq!(c.update(&seg(FIN | ACK, C0 + 1, S0 + 1, 0), false), TcpUpdate::Valid(Some(15 * 60 * SEC)));
        assert_eq!(c.update(&seg(FIN | ACK, S0 + 1, C0 + 2, 0), true), TcpUpdate::Valid(Some(45 * SEC)));
        assert_eq!(c.update(&seg(ACK, C0 + 2, S0 + 2, 0), false), TcpUpdate::Valid(Some(30 * SEC)));
        assert_eq!(c.update(&seg(SYN, C0 + 100, 0, 0), false), TcpUpdate::New);
    }

    #[test]
    fn picked_up_mid_stream_the_loose_check_lets_data_through_but_not_far_ahead() {
        // opened by a data segment: the server has not spoken, so the looser check applies
        let mut c = TcpConn::new(&seg(PSH | ACK, C0 + 1, S0 + 1, 10));
        assert_eq!(c.peer[0].wscale, WSCALE_UNKNOWN);
        assert_eq!(c.update(&seg(PSH | ACK, C0 + 11, S0 + 1, 10), false), TcpUpdate::Valid(None)); // (no timeout refresh)
        assert_eq!(c.update(&seg(PSH | ACK, C0 + 1 + 100_000, S0 + 1, 10), false), TcpUpdate::Invalid);
        assert!(valid(c.update(&seg(ACK, S0 + 1, C0 + 21, 0), true))); // the server's first segment: no skew check
    }

    #[test]
    fn window_scaling_widens_the_window_only_when_both_syns_carry_it() {
        let ws = |flags, seq, ack, win, wscale| Segment { flags, seq, ack, win, len: 0, wscale };
        let mut both = TcpConn::new(&ws(SYN, C0, 0, 65535, WSCALE_FLAG | 7));
        assert!(valid(both.update(&ws(SYN | ACK, S0, C0 + 1, 65535, WSCALE_FLAG | 7), true)));
        let mut one = TcpConn::new(&ws(SYN, C0, 0, 65535, WSCALE_FLAG | 7));
        assert!(valid(one.update(&ws(SYN | ACK, S0, C0 + 1, 65535, 0), true)));
        for c in [&mut both, &mut one] {
            assert!(valid(c.update(&ws(ACK, C0 + 1, S0 + 1, 1000, 0), false)));
        }
        let far = Segment { len: 10, ..seg(PSH | ACK, S0 + 1 + 100_000, C0 + 1, 0) };
        assert!(valid(both.update(&far, true))); // 1000 << 7 octets ahead is inside
        assert_eq!(one.update(&far, true), TcpUpdate::Invalid);
    }
}
