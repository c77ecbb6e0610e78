//! Connection tracking with Open vSwitch's userspace-datapath semantics
//! (`lib/conntrack*.c`), for the `ct` action: per zone, connections keyed by
//! their original-direction tuple, found from either direction.
//!
//! A packet's result (`CtMeta`): `+trk`, then `+inv` (no usable key, a
//! protocol state that refuses it), `+new` (no connection, or one that has
//! seen only this direction so far for UDP/ICMP/other protocols: OVS's
//! `CT_UPDATE_VALID_NEW`), else `+est` (and `+rpl` in the reply direction); the
//! zone, the connection's mark and label, and the original tuple (the
//! packet's own key while no connection holds it). `commit` creates the
//! connection (unless the table is full: `limit`, as OVS's `n_conn_limit`,
//! the packet then stays `+new`, uncommitted); `force` first ends a
//! connection found in the reply direction. The exec list's mark / label go
//! to the connection (and the packet) only with a connection.
//!
//! Protocols: TCP (OVS's pf-derived tracker with its sequence-window checks,
//! `conntrack_tcp.rs`: invalid flag combinations and segments outside the
//! window are `+inv`; a SYN+ACK cannot open a connection (any other valid
//! segment can: mid-stream pickup); a SYN once both ends have closed starts a
//! new one; a SYN from an end still opening is `+new` again (a retransmission)),
//! UDP and other IP protocols (OVS's "other" states FIRST, MULTIPLE, BIDIR),
//! ICMP / ICMPv6 echo (request opens, reply answers), ICMP errors about a
//! tracked connection's packet `+rel` (`ct_related.rs`; about no connection
//! `+inv`); other ICMP types are `+inv`.
//! Expiry: each connection expires at its state's timeout (OVS's defaults)
//! in modelled time, checked when looked up; the table is swept when full.
//! NAT (`nat` in the ct action): `ct_nat.rs` chooses a new connection's
//! translated reply tuple and rewrites packets; a packet translated in a zone
//! is looked up there by its reversed tuple; a translated connection that ends
//! leaves its un-NAT entry (`dangling`) until the next sweep, as OVS 3.1 does.
//! ALGs (`alg=ftp|tftp` in the ct action): `ct_alg.rs` reads a helper connection's
//! control packets and keeps the expected connections, which are `+rel` (and,
//! committed with a `nat`, translated as their parent: `ct_alg_nat.rs`).
//! State: the connection table. Cost: one hash lookup per ct action.

use crate::ct_alg::{Alg, Expectation, FtpCtl};
use crate::ct_nat::{NatKind, NatSpec, CS_DST_NAT, CS_SRC_NAT};
use crate::conntrack_tcp::{self, Segment, TcpConn, TcpUpdate};
use crate::parse::{Headers, ETH_TYPE_IPV4, ETH_TYPE_IPV6};
use std::collections::HashMap;

pub const CS_NEW: u32 = 0x01;
pub const CS_ESTABLISHED: u32 = 0x02;
pub const CS_RELATED: u32 = 0x04;
pub const CS_REPLY_DIR: u32 = 0x08;
pub const CS_INVALID: u32 = 0x10;
pub const CS_TRACKED: u32 = 0x20;

/// Open vSwitch's default `n_conn_limit`.
pub const DEFAULT_LIMIT: usize = 3_000_000;

const SEC: u64 = 1_000_000_000;

/// One direction's tuple; for ICMP the ports are (id, id) and `types` (this
/// direction's type, the other's): a request and a reply are not the same tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Tuple {
    pub src: u128,
    pub dst: u128,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub v6: bool,
    pub types: (u8, u8),
    pub code: u8,
}

impl Tuple {
    pub(crate) fn reversed(&self) -> Tuple {
        Tuple { src: self.dst, dst: self.src, sport: self.dport, dport: self.sport, types: (self.types.1, self.types.0), ..*self }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// UDP / other / ICMP: first packet, more in the same direction, both directions.
    First,
    Multiple,
    Bidir,
    /// TCP: its state is `Conn::tcp`'s.
    Tcp,
}

#[derive(Debug, Clone)]
struct Conn {
    key: Tuple,
    /// ICMP (type, code) of the original direction (the tuple's ports hold the id).
    icmp: (u8, u8),
    state: State,
    mark: u32,
    label: u128,
    expires: u64,
    tcp: TcpConn,
    /// The translation chosen at commit (`ct_nat.rs`) and the reply-direction
    /// tuple (translated: the one replies carry).
    nat: NatKind,
    rev: Tuple,
    /// Committed by a ct with a `nat` (a bare one too): Open vSwitch 3.1 then keeps a
    /// separate un-NAT entry under `rev`, which outlives the connection (`dangling`).
    un_nat: bool,
    /// When it was made (`Conntrack::made`): of two connections a tuple finds, one by its
    /// original and one by its reply tuple, OVS meets the later one first.
    made: u64,
    /// Committed with `alg=` (its helper); made from an ALG expectation (`+rel`): the
    /// parent's original tuple, which OVS reports as this connection's (ct_nw_src ...).
    alg: Option<Alg>,
    parent: Option<Tuple>,
    /// The FTP ALG's sequence skew under NAT and whether a reply made it (`ct_alg_ftp_nat.rs`).
    ftp_skew: (i32, bool),
}

impl Conn {
    /// A reply finds the connection through its separate un-NAT entry (OVS: the entry,
    /// not the connection, matches; the packet is a reply only after that), not directly:
    /// a translation that changed the tuple (a reply tuple hashed apart from the original one).
    fn reply_via_un_nat(&self) -> bool {
        self.un_nat && self.rev != self.key.reversed()
    }
}

impl Conn {
    /// A commit's `exec`: the connection's mark and label, masked (OVS's set_mark /
    /// set_label leave those of a connection an ALG expected as they are: its parent's).
    fn exec(&mut self, args: &CtArgs) {
        if self.parent.is_some() {
            return;
        }
        if let Some((v, m)) = args.set_mark {
            self.mark = (self.mark & !m) | (v & m);
        }
        if let Some((v, m)) = args.set_label {
            self.label = (self.label & !m) | (v & m);
        }
    }
}

/// What a `ct` action leaves in the packet's ct_* fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CtMeta {
    pub state: u32,
    pub zone: u16,
    pub mark: u32,
    pub label: u128,
    pub orig: Option<Tuple>,
    /// ICMP: the original direction's (type, code), which OVS reports as ct_tp_src/dst.
    pub icmp: Option<(u8, u8)>,
    /// NAT: the tuple the packet must now carry, and whether its source side
    /// (else its destination side) is the one rewritten (`ct_nat::rewrite`).
    pub rewrite: Option<(Tuple, bool)>,
    /// The rewrite is of an ICMP error related to the connection: the header it
    /// carries is translated too (`ct_related::rewrite_inner`).
    pub inner: bool,
    /// A connection holds the packet and the datapath caches it for the next ct
    /// (OVS's `md.conn`, `set_cached_conn`): never after a ct with `nat`, whose
    /// next ct in the zone looks the packet up again (by its reversed tuple).
    pub conn: bool,
    /// The connection holding the packet (its own original tuple: `orig` is the ALG
    /// parent's for a connection an ALG expected).
    pub conn_key: Option<Tuple>,
    /// The FTP ALG's rewrite of the packet, after the translation (`ct_alg_ftp_nat.rs`).
    pub ftp: Option<crate::ct_alg_ftp_nat::FtpEdit>,
}

/// The ct action's arguments, as the pipeline hands them over.
#[derive(Debug, Clone, Copy, Default)]
pub struct CtArgs {
    pub zone: u16,
    pub commit: bool,
    pub force: bool,
    pub set_mark: Option<(u32, u32)>,
    pub set_label: Option<(u128, u128)>,
    /// `nat(...)`: run the connection's translation (choose one at commit).
    pub nat: Option<NatSpec>,
    /// What the packet's last ct action left (None after ct_clear or before any ct):
    /// its ct_state and zone (OVS's `md.ct_state`, `md.ct_zone`), and whether it
    /// holds a cached connection (`CtMeta::conn`).
    pub cached: Option<CtMeta>,
    /// `alg=ftp|tftp` (`ct_alg.rs`).
    pub alg: Option<Alg>,
    /// The packet's buffer has no room past the frame: the FTP ALG rewrites no message
    /// (`ct_alg_ftp_nat.rs`).
    pub no_room: bool,
}

#[derive(Debug)]
pub struct Conntrack {
    conns: HashMap<(u16, Tuple), Conn>,
    /// Reply-direction tuple -> original one.
    replies: HashMap<(u16, Tuple), Tuple>,
    /// Un-NAT entries of connections that ended (forced, restarted or timed out) and
    /// were not yet swept, as OVS 3.1 keeps them until its cleanup: a packet with
    /// that tuple is `+inv` ("missing parent conn"), and no new translation takes it.
    dangling: HashMap<(u16, Tuple), Tuple>,
    pub limit: usize,
    pub full: u64,
    /// Connections made so far (each one's `Conn::made`).
    made: u64,
    /// ALG expectations, keyed by the expected connection's tuple with source port 0.
    expects: HashMap<(u16, Tuple), Expectation>,
    /// ALG verdicts so far (`Pipeline::counters`' `ct.alg.*`).
    pub alg_stats: AlgStats,
}

/// How often the ALGs expected a connection, met a new one they expected, met a
/// packet of one (committed), and found a control message malformed (+inv); how
/// often the FTP ALG under a nat changed a message's address text and shifted a
/// packet's sequence or acknowledgement number (`ct_alg_ftp_nat.rs`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AlgStats {
    pub expected: u64,
    pub new_related: u64,
    pub related: u64,
    pub invalid: u64,
    pub ftp_rewritten: u64,
    pub ftp_shifted: u64,
}

impl Default for Conntrack {
    fn default() -> Self {
        Conntrack { conns: HashMap::new(), replies: HashMap::new(), dangling: HashMap::new(), limit: DEFAULT_LIMIT, full: 0, made: 0, expects: HashMap::new(), alg_stats: AlgStats::default() }
    }
}

// OVS's default timeouts (lib/conntrack-tp.c / ct_dpif default policy).
fn timeout(proto: u8, state: State) -> u64 {
    SEC * match (proto, state) {
        (1 | 58, _) => 30,
        (17, State::Bidir) | (_, State::Bidir) => if proto == 17 { 30 } else { 60 },
        (17, _) => 30,
        _ => 30,
    }
}

fn echo_reply(t: u8, v6: bool) -> Option<u8> {
    match (t, v6) {
        (8, false) => Some(0),
        (128, true) => Some(129),
        _ => None,
    }
}

impl Conntrack {
    pub fn len(&self) -> usize {
        self.conns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The tuple of a packet, or None when it has none conntrack can use
    /// (not IP, a fragment, a cut-short header, an ICMP type other than echo).
    fn key(h: &Headers, data: &[u8]) -> Option<(Tuple, bool, (u8, u8), bool)> {
        let v6 = match h.eth_type {
            ETH_TYPE_IPV4 => false,
            ETH_TYPE_IPV6 => true,
            _ => return None,
        };
        let proto = h.ip_proto?;
        if h.ip_frag != 0 || h.truncated.is_some() {
            return None;
        }
        let (src, dst) = if v6 {
            (u128::from_be_bytes(h.ipv6_src?), u128::from_be_bytes(h.ipv6_dst?))
        } else {
            (u128::from(u32::from_be_bytes(h.ipv4_src?)), u128::from(u32::from_be_bytes(h.ipv4_dst?)))
        };
        let mut t = Tuple { src, dst, proto, v6, ..Default::default() };
        let mut icmp = (0, 0);
        match proto {
            6 | 17 | 132 => {
                t.sport = h.l4_src?;
                t.dport = h.l4_dst?;
            }
            1 | 58 => {
                if (proto == 1) == v6 {
                    return None;
                }
                let (ty, code) = (h.l4_src? as u8, h.l4_dst? as u8);
                let off = h.l4_offset?;
                if crate::ct_related::is_error(proto, ty) {
                    // (an ICMP error: looked up as related to the connection of the packet it carries)
                    let t = crate::ct_related::inner_key(data, off, h.l4_end, v6, dst)?;
                    return Some((t, false, (t.types.0, t.code), true));
                }
                let id = u16::from_be_bytes(data.get(off + 4..off + 6)?.try_into().ok()?);
                let request = echo_reply(ty, v6).is_some();
                let reply = (!v6 && ty == 0) || (v6 && ty == 129);
                if !(request || reply) {
                    return None;
                }
                t.sport = id;
                t.dport = id;
                let other = if request { echo_reply(ty, v6).unwrap_or(0) } else if v6 { 128 } else { 8 };
                t.types = (ty, other);
                t.code = code;
                icmp = (ty, code);
                return Some((t, reply, icmp, false));
            }
            _ => {}
        }
        Some((t, false, icmp, false))
    }

    /// Run one packet (the frame `data`, parsed as `h`) through the tracker at time `now` (ns).
    pub fn execute(&mut self, h: &Headers, data: &[u8], args: &CtArgs, now: u64) -> CtMeta {
        // (OVS: an ALG control packet never takes the cached connection's fast path)
        let alg_ctl = crate::ct_alg::ctl_type(h, args.alg);
        if alg_ctl.is_none() {
            if let Some(meta) = self.cached(args) {
                return meta;
            }
        }
        let zone = args.zone;
        let mut meta = CtMeta { state: CS_TRACKED, zone, ..Default::default() };
        let Some((key, icmp_reply, icmp, related)) = Self::key(h, data) else {
            meta.state |= CS_INVALID;
            return meta;
        };
        let mut seg = Segment::parse(h, data).unwrap_or_default();
        // (OVS: a packet already translated in this zone keeps its ct_state, found by its reversed tuple)
        let prior = args.cached.map_or((0, 0), |m| (m.state, m.zone));
        let natted = prior.1 == zone && prior.0 & (CS_SRC_NAT | CS_DST_NAT) != 0;
        if natted {
            meta.state |= prior.0;
        }
        // find the connection from either direction (an expired one is gone)
        let mut found: Option<(Tuple, bool)> = None;
        let look = if natted { key.reversed() } else { key };
        let as_orig = self.conns.get(&(zone, look));
        let as_reply = self.replies.get(&(zone, look)).and_then(|o| self.conns.get(&(zone, *o)));
        // (a tuple can be one connection's original and another's reply, e.g. a commit
        // without nat of a translated reply in its other zone: OVS's hash chain holds
        // both, the later one first)
        if let Some(c) = as_reply.filter(|r| as_orig.is_none_or(|o| r.made > o.made)) {
            found = Some((c.key, !natted));
        } else if let Some(c) = as_orig {
            found = Some((c.key, natted));
        } else if self.dangling.contains_key(&(zone, look)) {
            meta.state |= CS_INVALID;
            return meta;
        }
        if let Some((orig, _)) = found {
            if self.conns[&(zone, orig)].expires <= now {
                self.remove(zone, orig);
                found = None;
                if self.dangling.contains_key(&(zone, look)) {
                    meta.state |= CS_INVALID; // (a reply meeting the un-NAT entry an expired connection left)
                    return meta;
                }
            }
        }
        if let (Some((orig, true)), true) = (found, args.force && args.commit) {
            // force: a connection seen the other way round ends first, unless the packet
            // met its un-NAT entry (OVS tests force before it follows that entry to the
            // connection, so the packet goes on as a reply)
            if natted || !self.conns[&(zone, orig)].reply_via_un_nat() {
                self.remove(zone, orig);
                found = None;
            }
        }
        if related {
            return self.related(meta, key, icmp, found, args);
        }
        let conn_key;
        let mut reply_dir = false;
        if let Some((orig, reply)) = found {
            let mut created = false; // (OVS: create_new_conn, when a closed TCP connection starts again)
            reply_dir = reply;
            // (OVS's conn_update_state_alg: an FTP control packet with no message of interest is
            // shifted by the skew, its acknowledgement before the TCP checks, its sequence number after)
            let ftp_other = alg_ctl == Some(Alg::Ftp) && !crate::ct_alg::ftp_interest(crate::ct_alg::ftp_message(h, data), key.v6);
            let skew = self.conns[&(zone, orig)].ftp_skew;
            if ftp_other && reply != skew.1 {
                let e = crate::ct_alg_ftp_nat::FtpEdit::shift(args.nat.is_some(), skew.0, skew.1, reply);
                seg.ack = seg.ack.wrapping_add(e.ack as u32);
                self.alg_stats.ftp_shifted += u64::from(e.ack != 0);
                meta.ftp = Some(e);
            }
            match self.update(zone, orig, reply, key.proto, &seg, now) {
                Update::Valid => {
                    meta.state = (meta.state & !CS_NEW) | CS_ESTABLISHED | if reply { CS_REPLY_DIR } else { 0 };
                    meta.state |= self.alg_related(zone, orig);
                    conn_key = Some(orig);
                }
                Update::ValidNew => {
                    meta.state |= CS_NEW | self.alg_related(zone, orig);
                    conn_key = Some(orig);
                }
                Update::Invalid => {
                    meta.state = CS_TRACKED | CS_INVALID;
                    conn_key = Some(orig);
                }
                Update::New => {
                    self.remove(zone, orig);
                    created = true;
                    conn_key = self.not_found(&mut meta, key, icmp_reply, icmp, &seg, args, now);
                }
            }
            if ftp_other && reply == skew.1 && !created {
                let e = crate::ct_alg_ftp_nat::FtpEdit::shift(args.nat.is_some(), skew.0, skew.1, reply);
                self.alg_stats.ftp_shifted += u64::from(e.seq != 0);
                meta.ftp = Some(e);
            }
            if conn_key == Some(orig) && args.nat.is_some() && !created {
                self.handle_nat(&mut meta, zone, orig, reply);
            }
        } else {
            conn_key = self.not_found(&mut meta, key, icmp_reply, icmp, &seg, args, now);
        }
        match conn_key.and_then(|k| self.conns.get_mut(&(zone, k))) {
            Some(c) => {
                if args.commit {
                    // (OVS: set_mark and set_label whenever a connection holds the packet, +inv too)
                    c.exec(args);
                }
                meta.mark = c.mark;
                meta.label = c.label;
                meta.conn = args.nat.is_none(); // (OVS's set_cached_conn: no cached connection after nat)
                meta.orig = Some(c.parent.unwrap_or(c.key));
                meta.conn_key = Some(c.key);
                meta.icmp = (c.key.proto == 1 || c.key.proto == 58).then_some(c.icmp);
            }
            None => {
                // (an expected connection not committed reports its parent's tuple: not_found)
                meta.orig = meta.orig.or(Some(key));
                meta.icmp = (key.proto == 1 || key.proto == 58).then_some(icmp);
            }
        }
        if let (Some(ctl), Some(k)) = (alg_ctl, conn_key) {
            self.run_alg(&mut meta, ctl, zone, k, h, data, (reply_dir && conn_key == found.map(|f| f.0), args.nat.is_some(), !args.no_room));
        }
        meta
    }

    /// `CS_RELATED` for a connection made from an ALG expectation (every packet of it).
    fn alg_related(&mut self, zone: u16, orig: Tuple) -> u32 {
        if self.conns.get(&(zone, orig)).is_some_and(|c| c.parent.is_some()) {
            self.alg_stats.related += 1;
            CS_RELATED
        } else {
            0
        }
    }

    /// OVS's `handle_alg_ctl`: a control packet of a connection with a helper may
    /// expect a connection (`ct_alg.rs`); a malformed FTP one is `+inv`.
    /// `(reply, nat, room)`: the packet's direction (OVS's `ctx->reply`), whether the ct has a
    /// `nat`, which rewrites the message (given room in the buffer) and shifts the numbers
    /// (`ct_alg_ftp_nat.rs`).
    #[allow(clippy::too_many_arguments)]
    fn run_alg(&mut self, meta: &mut CtMeta, ctl: Alg, zone: u16, orig: Tuple, h: &Headers, data: &[u8], (reply, natting, room): (bool, bool, bool)) {
        let Some(c) = self.conns.get(&(zone, orig)).filter(|c| c.alg.is_some()) else { return };
        let msg = crate::ct_alg::ftp_message(h, data);
        let dport = match ctl {
            Alg::Tftp => c.key.sport,
            Alg::Ftp => match crate::ct_alg::ftp_ctl(msg, c.key.v6, [c.key.src, c.rev.dst], [c.rev.src, c.key.dst]) {
                FtpCtl::Other => return,
                FtpCtl::Invalid => {
                    meta.state |= CS_TRACKED | CS_INVALID;
                    self.alg_stats.invalid += 1;
                    return;
                }
                FtpCtl::Expect(port) => port,
            },
        };
        // (from the server for a packet in the original direction, from the client for a reply)
        let (src, dst) = if meta.state & CS_REPLY_DIR != 0 { (c.key.src, c.key.dst) } else { (c.rev.src, c.rev.dst) };
        let exp = Tuple { src, dst, sport: 0, dport, proto: c.key.proto, v6: c.key.v6, ..Default::default() };
        let nat = crate::ct_alg_nat::expected_nat(&c.key, &c.rev, c.nat, meta.state & CS_REPLY_DIR != 0);
        let e = Expectation { parent: c.key, mark: c.mark, label: c.label, nat };
        self.expects.entry((zone, exp)).or_insert(e);
        self.alg_stats.expected += 1;
        if ctl == Alg::Ftp {
            // (OVS's handle_ftp_ctl: the address rewritten under a nat, the numbers shifted by the
            // skew so far, which the size change then adds to, in this packet's direction)
            let c = self.conns.get_mut(&(zone, orig)).expect("helper connection");
            let mut edit = crate::ct_alg_ftp_nat::FtpEdit::shift(natting, c.ftp_skew.0, c.ftp_skew.1, reply);
            if let (true, Some((start, end, active))) = (natting && room, crate::ct_alg::ftp_address(msg, c.key.v6)) {
                let (text, len) = crate::ct_alg_ftp_nat::address_text(if active { c.rev.dst } else { c.key.dst }, c.key.v6);
                edit.splice = Some(crate::ct_alg_ftp_nat::Splice { at: start, old: end - start, text, len });
                self.alg_stats.ftp_rewritten += u64::from(msg[start..end] != text[..len]);
            }
            if edit.delta() != 0 {
                c.ftp_skew = (edit.delta().wrapping_add(c.ftp_skew.0), reply);
            }
            self.alg_stats.ftp_shifted += u64::from(edit.seq != 0 || edit.ack != 0);
            meta.ftp = Some(edit);
        }
    }

    /// An ICMP error related to the connection `found` (OVS's `conn_update_state` for
    /// `icmp_related`): `+rel` (`+rpl` in the reply direction), the connection neither
    /// updated nor refreshed, translated with a `nat`; without a connection `+inv`
    /// (a related packet never opens one, commit or not).
    fn related(&mut self, mut meta: CtMeta, key: Tuple, icmp: (u8, u8), found: Option<(Tuple, bool)>, args: &CtArgs) -> CtMeta {
        let zone = args.zone;
        let Some((orig, reply)) = found else {
            meta.state = CS_TRACKED | CS_INVALID;
            meta.orig = Some(key);
            meta.icmp = matches!(key.proto, 1 | 58).then_some(icmp);
            return meta;
        };
        meta.state |= CS_RELATED | if reply { CS_REPLY_DIR } else { 0 };
        if args.nat.is_some() {
            self.handle_nat(&mut meta, zone, orig, reply);
        }
        let c = self.conns.get_mut(&(zone, orig)).expect("found connection");
        if args.commit {
            c.exec(args);
        }
        meta.mark = c.mark;
        meta.label = c.label;
        meta.conn = args.nat.is_none();
        meta.orig = Some(c.parent.unwrap_or(c.key));
        meta.conn_key = Some(c.key);
        meta.icmp = matches!(c.key.proto, 1 | 58).then_some(c.icmp);
        meta
    }

    /// OVS's `process_one_fast`: a packet whose last ct action (in the same zone, no
    /// `force`, no `nat`) found or made a connection keeps that verdict (the connection
    /// is not updated again; a `nat` translates it if it is not yet, and the cache is
    /// dropped); the connection's mark and label are read anew (and set first by a
    /// commit's exec).
    fn cached(&mut self, args: &CtArgs) -> Option<CtMeta> {
        let mut meta = args.cached.filter(|m| m.conn && m.zone == args.zone && !args.force)?;
        meta.rewrite = None; // (the last ct's translation is done)
        meta.ftp = None;
        meta.inner = false;
        if let Some(c) = meta.conn_key.and_then(|k| self.conns.get_mut(&(args.zone, k))) {
            if args.commit {
                c.exec(args);
            }
            meta.mark = c.mark;
            meta.label = c.label;
        }
        if let (Some(_), Some(orig)) = (args.nat, meta.conn_key) {
            // (OVS's process_one_fast runs handle_nat: a packet not yet translated in this zone is)
            let reply = meta.state & CS_REPLY_DIR != 0;
            self.handle_nat(&mut meta, args.zone, orig, reply);
            meta.conn = false; // (OVS: md.conn = NULL after handle_nat)
        }
        Some(meta)
    }

    /// No connection: +inv if the packet cannot open one, else +new (created with commit).
    #[allow(clippy::too_many_arguments)]
    fn not_found(&mut self, meta: &mut CtMeta, key: Tuple, icmp_reply: bool, icmp: (u8, u8), seg: &Segment, args: &CtArgs, now: u64) -> Option<Tuple> {
        let valid_new = match key.proto {
            6 => conntrack_tcp::valid_new(seg.flags),
            1 | 58 => !icmp_reply,
            _ => true,
        };
        if !valid_new {
            meta.state = CS_TRACKED | CS_INVALID;
            return None;
        }
        // (OVS: a new connection an ALG expects is +rel, and takes the parent's mark and label)
        let exp = matches!(key.proto, 6 | 17)
            .then(|| self.expects.get(&(args.zone, Tuple { sport: 0, ..key })).copied())
            .flatten();
        meta.state = CS_TRACKED | CS_NEW | if exp.is_some() { CS_RELATED } else { 0 };
        if let Some(e) = exp {
            self.alg_stats.new_related += 1;
            // (OVS's write_ct_md without a connection: the parent's mark, label and tuple)
            (meta.mark, meta.label, meta.orig) = (e.mark, e.label, Some(e.parent));
        }
        if !args.commit {
            return None;
        }
        if self.conns.len() >= self.limit {
            self.sweep(now);
            if self.conns.len() >= self.limit {
                self.full += 1;
                return None;
            }
        }
        let (state, tcp, ttl) = match key.proto {
            6 => (State::Tcp, TcpConn::new(seg), conntrack_tcp::FIRST_PACKET),
            _ => (State::First, TcpConn::default(), timeout(key.proto, State::First)),
        };
        let zone = args.zone;
        let (nat, rev) = match args.nat {
            // (OVS: an expected connection takes its expectation's translation, not the nat's range)
            Some(_) if exp.is_some() => crate::ct_alg_nat::expected_reply(&key, exp.expect("expectation").nat),
            Some(spec) => {
                let taken = |t: &Tuple| {
                    let k = (zone, *t);
                    self.conns.contains_key(&k) || self.replies.contains_key(&k) || self.dangling.contains_key(&k)
                };
                match crate::ct_nat::unique_reply(&key, &spec, &taken) {
                    Some(rev) => (spec.kind, rev),
                    None => return None, // (OVS: tuple space exhausted, nothing committed)
                }
            }
            _ => (NatKind::None, key.reversed()), // (ICMP: the same id both ways)
        };
        self.replies.insert((zone, rev), key);
        let un_nat = args.nat.is_some();
        self.made += 1;
        let made = self.made;
        let (mark, label) = exp.map_or((0, 0), |e| (e.mark, e.label));
        let (alg, parent) = (args.alg, exp.map(|e| e.parent));
        self.conns.insert((zone, key), Conn { key, icmp, state, mark, label, expires: now + ttl, tcp, nat, rev, un_nat, made, alg, parent, ftp_skew: (0, false) });
        if nat != NatKind::None {
            self.handle_nat(meta, zone, key, false);
        }
        Some(key)
    }

    fn update(&mut self, zone: u16, orig: Tuple, reply: bool, proto: u8, seg: &Segment, now: u64) -> Update {
        let c = self.conns.get_mut(&(zone, orig)).expect("found connection");
        let res = match proto {
            6 => {
                let (res, ttl) = match c.tcp.update(seg, reply) {
                    TcpUpdate::Valid(ttl) => (Update::Valid, ttl),
                    TcpUpdate::ValidNew(ttl) => (Update::ValidNew, Some(ttl)),
                    TcpUpdate::Invalid => (Update::Invalid, None),
                    TcpUpdate::New => (Update::New, None),
                };
                if let Some(ttl) = ttl {
                    c.expires = now + ttl;
                }
                return res;
            }
            1 | 58 => {
                // ICMP: FIRST until the reply (each request before it is +new), then REPLY
                if reply {
                    c.state = State::Bidir;
                    Update::Valid
                } else if c.state == State::First {
                    Update::ValidNew
                } else {
                    Update::Valid
                }
            }
            _ => {
                // UDP and other protocols: +new until the first reply, then BIDIR (+est)
                if reply {
                    c.state = State::Bidir;
                    Update::Valid
                } else if c.state != State::Bidir {
                    c.state = State::Multiple;
                    Update::ValidNew
                } else {
                    Update::Valid
                }
            }
        };
        c.expires = now + timeout(proto, c.state);
        res
    }

    fn remove(&mut self, zone: u16, orig: Tuple) {
        if let Some(c) = self.conns.remove(&(zone, orig)) {
            if self.replies.get(&(zone, c.rev)) == Some(&c.key) {
                self.replies.remove(&(zone, c.rev)); // (unless a later connection's reply took it over)
            }
            if c.un_nat {
                self.dangling.insert((zone, c.rev), c.key);
            }
        }
    }

    /// OVS's `handle_nat`: a connection with a translation, met by a packet whose
    /// ct_state (so far) has no +snat/+dnat in this zone — an invalid update clears
    /// them — rewrites it: the original direction to the reply tuple's reverse, a
    /// reply back to the original tuple's reverse.
    fn handle_nat(&self, meta: &mut CtMeta, zone: u16, orig: Tuple, reply: bool) {
        let Some(c) = self.conns.get(&(zone, orig)) else { return };
        if c.nat == NatKind::None || meta.state & (CS_SRC_NAT | CS_DST_NAT) != 0 {
            return;
        }
        let snat = c.nat == NatKind::Src;
        let (to, src_side) = if reply { (c.key.reversed(), !snat) } else { (c.rev.reversed(), snat) };
        meta.state |= if src_side { CS_SRC_NAT } else { CS_DST_NAT };
        meta.rewrite = Some((to, src_side));
        meta.inner = meta.state & CS_RELATED != 0;
    }

    /// Drop every expired connection.
    pub fn sweep(&mut self, now: u64) {
        let gone: Vec<(u16, Tuple)> = self.conns.iter().filter(|(_, c)| c.expires <= now).map(|(k, _)| *k).collect();
        for (z, t) in gone {
            self.remove(z, t);
        }
        self.dangling.clear(); // (OVS's cleanup takes the un-NAT entries with their connections)
        let conns = &self.conns;
        self.expects.retain(|(z, _), e| conns.contains_key(&(*z, e.parent)));
    }

    /// Forget every connection (OVS: `ovs-appctl dpctl/flush-conntrack`).
    pub fn flush(&mut self) {
        self.conns.clear();
        self.replies.clear();
        self.dangling.clear();
        self.expects.clear();
    }
}

enum Update {
    Valid,
    ValidNew,
    Invalid,
    New,
}
