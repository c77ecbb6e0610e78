//! Frame parser: Ethernet II, up to two 802.1Q/802.1ad tags, MPLS, ARP,
//! IPv4 (with options), IPv6 (with the extension headers needed to reach L4),
//! TCP, UDP, SCTP, ICMP and ICMPv6 (with IPv6 neighbour discovery target and
//! link-layer address options), reading what Open vSwitch's flow extractor reads.
//!
//! Input: the raw bytes of one Ethernet frame (no FCS). Output: the header
//! fields OpenFlow 1.3 can match on, or a `ParseError` that names the layer and
//! the reason. A truncated inner header is not an error for the frame: the
//! fields found so far are returned and `truncated` names the layer cut short,
//! so the caller can count and drop it with an explicit reason.
//! State: none. Cost: one pass over the first ~60–100 bytes; no allocation.

pub const ETH_TYPE_IPV4: u16 = 0x0800;
pub const ETH_TYPE_ARP: u16 = 0x0806;
pub const ETH_TYPE_VLAN: u16 = 0x8100;
pub const ETH_TYPE_QINQ: u16 = 0x88a8;
pub const ETH_TYPE_IPV6: u16 = 0x86dd;
pub const ETH_TYPE_MPLS: u16 = 0x8847;
pub const ETH_TYPE_MPLS_MC: u16 = 0x8848;
pub const IP_PROTO_ICMP: u8 = 1;
pub const IP_PROTO_TCP: u8 = 6;
pub const IP_PROTO_UDP: u8 = 17;
pub const IP_PROTO_ICMPV6: u8 = 58;
pub const IP_PROTO_SCTP: u8 = 132;
/// Most MPLS label stack entries tracked (as Open vSwitch: FLOW_MAX_MPLS_LABELS).
pub const MAX_MPLS: usize = 3;
/// Most VLAN tags parsed (as Open vSwitch: FLOW_MAX_VLAN_HEADERS).
pub const MAX_VLANS: usize = 2;

/// One VLAN tag as found on the wire (outermost first in `Headers::vlans`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VlanTag {
    pub tpid: u16,
    pub pcp: u8,
    pub vid: u16,
}

/// Up to `MAX_VLANS` tags, outermost first, without allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vlans {
    tags: [VlanTag; MAX_VLANS],
    len: u8,
}

impl Vlans {
    pub fn as_slice(&self) -> &[VlanTag] {
        &self.tags[..self.len as usize]
    }
    pub fn iter(&self) -> std::slice::Iter<'_, VlanTag> {
        self.as_slice().iter()
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn first(&self) -> Option<&VlanTag> {
        self.as_slice().first()
    }
    fn push(&mut self, t: VlanTag) {
        self.tags[self.len as usize] = t;
        self.len += 1;
    }
}

impl PartialEq<Vec<VlanTag>> for Vlans {
    fn eq(&self, other: &Vec<VlanTag>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// `Headers::ip_frag` bits (Open vSwitch's FLOW_NW_FRAG_ANY / FLOW_NW_FRAG_LATER).
pub const FRAG_ANY: u8 = 1;
pub const FRAG_LATER: u8 = 2;

/// Header fields of a parsed frame. Absent layers are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    /// Ethertype after the parsed VLAN tags.
    pub eth_type: u16,
    pub vlans: Vlans,
    pub mpls_label: Option<u32>,
    pub mpls_tc: Option<u8>,
    pub mpls_bos: Option<u8>,
    /// The first `MAX_MPLS` label stack entries (0 past the bottom) and how many were read.
    pub mpls_lses: [u32; MAX_MPLS],
    pub mpls_n: u8,
    pub ipv6_flabel: Option<u32>,
    pub arp_sha: Option<[u8; 6]>,
    pub arp_tha: Option<[u8; 6]>,
    /// IPv6 ND (ICMPv6 type 135/136, code 0): target address and link-layer options.
    pub nd_target: Option<[u8; 16]>,
    pub nd_sll: Option<[u8; 6]>,
    pub nd_tll: Option<[u8; 6]>,
    pub ipv4_src: Option<[u8; 4]>,
    pub ipv4_dst: Option<[u8; 4]>,
    pub ipv6_src: Option<[u8; 16]>,
    pub ipv6_dst: Option<[u8; 16]>,
    pub ip_proto: Option<u8>,
    pub ip_dscp: Option<u8>,
    pub ip_ecn: Option<u8>,
    pub ip_ttl: Option<u8>,
    /// True for a non-first IPv4/IPv6 fragment (no L4 header follows).
    pub ip_later_frag: bool,
    /// Open vSwitch's `ip_frag`: bit 0 set for any fragment, bit 1 for a non-first one.
    pub ip_frag: u8,
    /// The 12 flag bits of a TCP header (present when the whole 20-byte header is).
    pub tcp_flags: Option<u16>,
    /// Where a non-first IPv4 fragment's payload starts. It has no transport header,
    /// but Open vSwitch still fixes the "TCP/UDP checksum" bytes there when an
    /// address changes (its packet keeps an L4 offset for every IP packet).
    pub frag_payload: Option<usize>,
    pub arp_op: Option<u16>,
    pub arp_spa: Option<[u8; 4]>,
    pub arp_tpa: Option<[u8; 4]>,
    /// TCP/UDP ports, or ICMP/ICMPv6 type (src) and code (dst), as OpenFlow does.
    pub l4_src: Option<u16>,
    pub l4_dst: Option<u16>,
    /// Offset of the L3 header within the frame.
    pub l3_offset: usize,
    /// Offset of the L4 header within the frame, when there is one.
    pub l4_offset: Option<usize>,
    /// End of the IP payload (IP length, clipped to the frame): Ethernet padding excluded.
    pub l4_end: usize,
    /// Name of the layer that was cut short, if any.
    pub truncated: Option<&'static str>,
    /// The NSH key words of a 0x894f frame whose header Open vSwitch parses (`crate::nsh`).
    pub nsh: Option<[u64; crate::nsh::NSH_WORDS]>,
}

/// Why a frame could not be parsed at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than an Ethernet header (14 bytes).
    RuntFrame { len: usize },
    /// An IPv4 header whose version or IHL is impossible.
    BadIpv4Header { offset: usize, reason: &'static str },
    /// An IPv6 header whose version is not 6.
    BadIpv6Header { offset: usize, reason: &'static str },
}

impl ParseError {
    /// Short stable name, used as a drop-counter key.
    pub fn name(&self) -> &'static str {
        match self {
            ParseError::RuntFrame { .. } => "runt_frame",
            ParseError::BadIpv4Header { .. } => "bad_ipv4_header",
            ParseError::BadIpv6Header { .. } => "bad_ipv6_header",
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::RuntFrame { len } => write!(f, "runt frame: {len} bytes < 14-byte Ethernet header"),
            ParseError::BadIpv4Header { offset, reason } => write!(f, "bad IPv4 header at byte {offset}: {reason}"),
            ParseError::BadIpv6Header { offset, reason } => write!(f, "bad IPv6 header at byte {offset}: {reason}"),
        }
    }
}

impl std::error::Error for ParseError {}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Parse one Ethernet frame into its OpenFlow-matchable header fields.
pub fn parse_frame(frame: &[u8]) -> Result<Headers, ParseError> {
    let mut h = Headers::default();
    parse_into(frame, &mut h)?;
    Ok(h)
}

/// Like `parse_frame`, but fills a caller-owned `Headers` (reset first).
pub fn parse_into(frame: &[u8], h: &mut Headers) -> Result<(), ParseError> {
    *h = Headers::default();
    if frame.len() < 14 {
        return Err(ParseError::RuntFrame { len: frame.len() });
    }
    h.eth_dst.copy_from_slice(&frame[0..6]);
    h.eth_src.copy_from_slice(&frame[6..12]);
    let mut off = 12;
    let mut ethertype = be16(frame, off);
    while (ethertype == ETH_TYPE_VLAN || ethertype == ETH_TYPE_QINQ) && h.vlans.len() < MAX_VLANS {
        if frame.len() < off + 6 {
            h.eth_type = ethertype;
            h.truncated = Some("vlan");
            h.l3_offset = frame.len();
            return Ok(());
        }
        let tci = be16(frame, off + 2);
        h.vlans.push(VlanTag { tpid: ethertype, pcp: (tci >> 13) as u8, vid: tci & 0x0fff });
        off += 4;
        ethertype = be16(frame, off);
    }
    h.eth_type = ethertype;
    off += 2;
    h.l3_offset = off;
    match ethertype {
        ETH_TYPE_IPV4 => parse_ipv4(frame, off, h),
        ETH_TYPE_IPV6 => parse_ipv6(frame, off, h),
        ETH_TYPE_ARP => {
            parse_arp(frame, off, h);
            Ok(())
        }
        ETH_TYPE_MPLS | ETH_TYPE_MPLS_MC => {
            if frame.len() < off + 4 {
                h.truncated = Some("mpls");
            } else {
                let w = u32::from_be_bytes(frame[off..off + 4].try_into().unwrap());
                h.mpls_label = Some(w >> 12);
                h.mpls_tc = Some(((w >> 9) & 7) as u8);
                h.mpls_bos = Some(((w >> 8) & 1) as u8);
                // The stack down to the bottom entry, at most MAX_MPLS entries kept.
                let mut at = off;
                while frame.len() >= at + 4 && (h.mpls_n as usize) < MAX_MPLS {
                    let lse = u32::from_be_bytes(frame[at..at + 4].try_into().unwrap());
                    h.mpls_lses[h.mpls_n as usize] = lse;
                    h.mpls_n += 1;
                    at += 4;
                    if lse & 0x100 != 0 {
                        break;
                    }
                }
            }
            Ok(())
        }
        crate::nsh::ETH_TYPE_NSH => {
            h.nsh = crate::nsh::parse(&frame[off.min(frame.len())..]);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn parse_arp(frame: &[u8], off: usize, h: &mut Headers) {
    // Ethernet/IPv4 ARP only: htype 1, ptype 0x0800, hlen 6, plen 4.
    if frame.len() < off + 28 {
        h.truncated = Some("arp");
        return;
    }
    if be16(frame, off) != 1 || be16(frame, off + 2) != ETH_TYPE_IPV4 || frame[off + 4] != 6 || frame[off + 5] != 4 {
        return;
    }
    h.arp_op = Some(be16(frame, off + 6));
    h.arp_sha = Some(frame[off + 8..off + 14].try_into().unwrap());
    h.arp_tha = Some(frame[off + 18..off + 24].try_into().unwrap());
    h.arp_spa = Some(frame[off + 14..off + 18].try_into().unwrap());
    h.arp_tpa = Some(frame[off + 24..off + 28].try_into().unwrap());
}

fn parse_ipv4(frame: &[u8], off: usize, h: &mut Headers) -> Result<(), ParseError> {
    if frame.len() < off + 20 {
        h.truncated = Some("ipv4");
        return Ok(());
    }
    let vihl = frame[off];
    if vihl >> 4 != 4 {
        return Err(ParseError::BadIpv4Header { offset: off, reason: "version is not 4" });
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    if ihl < 20 {
        return Err(ParseError::BadIpv4Header { offset: off, reason: "IHL below 5 words" });
    }
    if frame.len() < off + ihl {
        h.truncated = Some("ipv4 options");
        return Ok(());
    }
    h.ip_dscp = Some(frame[off + 1] >> 2);
    h.ip_ecn = Some(frame[off + 1] & 3);
    h.ip_ttl = Some(frame[off + 8]);
    let proto = frame[off + 9];
    h.ip_proto = Some(proto);
    h.ipv4_src = Some(frame[off + 12..off + 16].try_into().unwrap());
    h.ipv4_dst = Some(frame[off + 16..off + 20].try_into().unwrap());
    h.l4_end = (off + usize::from(be16(frame, off + 2))).clamp(off + ihl, frame.len());
    let frag = be16(frame, off + 6);
    let frag_off = frag & 0x1fff;
    if frag & 0x3fff != 0 {
        h.ip_frag = FRAG_ANY | if frag_off != 0 { FRAG_LATER } else { 0 };
    }
    if frag_off != 0 {
        h.ip_later_frag = true;
        h.frag_payload = Some(off + ihl);
        return Ok(()); // later fragments carry no L4 header
    }
    parse_l4(frame, off + ihl, proto, h);
    Ok(())
}

fn parse_ipv6(frame: &[u8], off: usize, h: &mut Headers) -> Result<(), ParseError> {
    if frame.len() < off + 40 {
        h.truncated = Some("ipv6");
        return Ok(());
    }
    if frame[off] >> 4 != 6 {
        return Err(ParseError::BadIpv6Header { offset: off, reason: "version is not 6" });
    }
    let tc = ((be16(frame, off) >> 4) & 0xff) as u8;
    h.ipv6_flabel = Some(u32::from_be_bytes(frame[off..off + 4].try_into().unwrap()) & 0xfffff);
    h.l4_end = (off + 40 + usize::from(be16(frame, off + 4))).min(frame.len());
    h.ip_dscp = Some(tc >> 2);
    h.ip_ecn = Some(tc & 3);
    h.ip_ttl = Some(frame[off + 7]);
    h.ipv6_src = Some(frame[off + 8..off + 24].try_into().unwrap());
    h.ipv6_dst = Some(frame[off + 24..off + 40].try_into().unwrap());
    let mut next = frame[off + 6];
    let mut at = off + 40;
    // Walk extension headers: hop-by-hop 0, routing 43, fragment 44, dest opts 60, AH 51.
    for _ in 0..8 {
        match next {
            0 | 43 | 60 | 51 => {
                if frame.len() < at + 8 {
                    h.ip_proto = Some(next);
                    h.truncated = Some("ipv6 extension header");
                    return Ok(());
                }
                let len = if next == 51 { (usize::from(frame[at + 1]) + 2) * 4 } else { (usize::from(frame[at + 1]) + 1) * 8 };
                next = frame[at];
                at += len;
            }
            44 => {
                if frame.len() < at + 8 {
                    h.ip_proto = Some(next);
                    h.truncated = Some("ipv6 fragment header");
                    return Ok(());
                }
                let offlg = be16(frame, at + 2);
                let frag_off = offlg >> 3;
                next = frame[at];
                at += 8;
                // (as Open vSwitch: an atomic fragment, offset 0 and no more to come, is
                // not a fragment; a later one has protocol 44, its own header's)
                if offlg != 0 {
                    h.ip_frag = FRAG_ANY | if frag_off != 0 { FRAG_LATER } else { 0 };
                }
                if frag_off != 0 {
                    h.ip_proto = Some(44);
                    h.ip_later_frag = true;
                    return Ok(());
                }
            }
            _ => break,
        }
    }
    h.ip_proto = Some(next);
    parse_l4(frame, at, next, h);
    Ok(())
}

fn parse_l4(frame: &[u8], l4: usize, proto: u8, h: &mut Headers) {
    let (need, name) = match proto {
        IP_PROTO_TCP => (4, "tcp"),
        IP_PROTO_UDP => (4, "udp"),
        IP_PROTO_ICMP => (2, "icmp"),
        IP_PROTO_ICMPV6 => (2, "icmpv6"),
        IP_PROTO_SCTP => (12, "sctp"),
        _ => return,
    };
    if frame.len() < l4 + need {
        h.truncated = Some(name);
        return;
    }
    h.l4_offset = Some(l4);
    if need == 2 {
        h.l4_src = Some(u16::from(frame[l4])); // type, as OpenFlow's icmpv4_type
        h.l4_dst = Some(u16::from(frame[l4 + 1])); // code
        if proto == IP_PROTO_ICMPV6 && frame[l4 + 1] == 0 && matches!(frame[l4], 135 | 136) {
            parse_nd(frame, l4, h);
        }
    } else {
        h.l4_src = Some(be16(frame, l4));
        h.l4_dst = Some(be16(frame, l4 + 2));
        if proto == IP_PROTO_TCP && frame.len() >= l4 + 20 {
            h.tcp_flags = Some(be16(frame, l4 + 12) & 0x0fff);
        }
    }
}

/// IPv6 neighbour solicitation/advertisement after the 8-byte ICMPv6 header:
/// the target address, then source/target link-layer address options (a
/// repeated option voids all three, as in Open vSwitch's `parse_icmpv6`).
fn parse_nd(frame: &[u8], l4: usize, h: &mut Headers) {
    let end = h.l4_end.max(l4).min(frame.len());
    if end < l4 + 24 {
        return;
    }
    h.nd_target = Some(frame[l4 + 8..l4 + 24].try_into().unwrap());
    let mut at = l4 + 24;
    while end - at >= 8 {
        let len = usize::from(frame[at + 1]) * 8;
        if len == 0 || len > end - at {
            return;
        }
        if len == 8 && matches!(frame[at], 1 | 2) {
            let mac: [u8; 6] = frame[at + 2..at + 8].try_into().unwrap();
            let slot = if frame[at] == 1 { &mut h.nd_sll } else { &mut h.nd_tll };
            if slot.is_some_and(|m| m != [0; 6]) {
                h.nd_target = None;
                h.nd_sll = None;
                h.nd_tll = None;
                return;
            }
            *slot = Some(mac);
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_frame(vlan: Option<u16>) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        if let Some(v) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&((3u16 << 13) | v).to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&[0x45, 0xb8, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 8, 0, 0]);
        f
    }

    #[test]
    fn parses_udp_over_ipv4() {
        let h = parse_frame(&udp_frame(None)).unwrap();
        assert_eq!(h.eth_type, ETH_TYPE_IPV4);
        assert_eq!(h.ipv4_src, Some([10, 0, 0, 1]));
        assert_eq!(h.ipv4_dst, Some([10, 0, 0, 2]));
        assert_eq!(h.ip_proto, Some(IP_PROTO_UDP));
        assert_eq!(h.ip_dscp, Some(46));
        assert_eq!((h.l4_src, h.l4_dst), (Some(1234), Some(53)));
        assert_eq!(h.truncated, None);
    }

    #[test]
    fn parses_vlan_tag() {
        let h = parse_frame(&udp_frame(Some(100))).unwrap();
        assert_eq!(h.vlans, vec![VlanTag { tpid: 0x8100, pcp: 3, vid: 100 }]);
        assert_eq!(h.l3_offset, 18);
        assert_eq!(h.l4_dst, Some(53));
    }

    #[test]
    fn parses_qinq_and_stops_after_two_tags() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x20, 0x14, 0x81, 0x00, 0x00, 0x01, 0x08, 0x06]);
        let h = parse_frame(&f).unwrap();
        assert_eq!(h.vlans.len(), 2);
        assert_eq!(h.vlans.first().unwrap().tpid, ETH_TYPE_QINQ);
        assert_eq!(h.vlans.as_slice()[1], VlanTag { tpid: 0x8100, pcp: 1, vid: 20 });
        assert_eq!(h.eth_type, ETH_TYPE_VLAN);
    }

    #[test]
    fn parses_ipv6_with_extension_and_icmpv6() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x86, 0xdd]);
        let mut ip = vec![0x60, 0, 0, 0, 0, 16, 0, 64];
        ip.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[58, 0, 0, 0, 0, 0, 0, 0]); // hop-by-hop, next = ICMPv6
        f.extend_from_slice(&[128, 0, 0, 0, 0, 0, 0, 0]); // echo request
        let h = parse_frame(&f).unwrap();
        assert_eq!(h.ip_proto, Some(IP_PROTO_ICMPV6));
        assert_eq!(h.l4_src, Some(128));
        assert_eq!(h.l4_offset, Some(14 + 48));
        assert_eq!(h.ipv6_dst.unwrap()[15], 2);
        assert_eq!(h.ip_ttl, Some(64));
    }

    #[test]
    fn parses_arp_and_mpls() {
        let mut f = vec![0xffu8; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 9]);
        let h = parse_frame(&f).unwrap();
        assert_eq!((h.arp_op, h.arp_spa, h.arp_tpa), (Some(1), Some([10, 0, 0, 1]), Some([10, 0, 0, 9])));
        let mut m = vec![0u8; 12];
        m.extend_from_slice(&[0x88, 0x47, 0x00, 0x06, 0x45, 0x40]);
        let h = parse_frame(&m).unwrap();
        assert_eq!((h.mpls_label, h.mpls_tc, h.mpls_bos), (Some(100), Some(2), Some(1)));
        assert_eq!((h.mpls_n, h.mpls_lses[0]), (1, 0x0006_4540));
        let a = parse_frame(&f).unwrap();
        assert_eq!((a.arp_sha, a.arp_tha), (Some([2, 0, 0, 0, 0, 1]), Some([0; 6])));
    }

    fn nd_frame(icmp_type: u8, opts: &[(u8, [u8; 6])]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x86, 0xdd]);
        let plen = 24 + 8 * opts.len();
        f.extend_from_slice(&[0x60, 0, 0, 0, 0, plen as u8, 58, 255]);
        f.extend_from_slice(&[0; 32]);
        f.extend_from_slice(&[icmp_type, 0, 0, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
        for (t, mac) in opts {
            f.extend_from_slice(&[*t, 1]);
            f.extend_from_slice(mac);
        }
        f.extend_from_slice(&[1, 1, 9, 9, 9, 9, 9, 9]); // past the IPv6 payload: not an option
        f
    }

    #[test]
    fn parses_nd_target_and_link_layer_options() {
        let h = parse_frame(&nd_frame(135, &[(1, [2, 0, 0, 0, 0, 7])])).unwrap();
        assert_eq!(h.nd_target.unwrap()[15], 9);
        assert_eq!((h.nd_sll, h.nd_tll), (Some([2, 0, 0, 0, 0, 7]), None));
        let h = parse_frame(&nd_frame(136, &[(2, [2, 0, 0, 0, 0, 8])])).unwrap();
        assert_eq!(h.nd_tll, Some([2, 0, 0, 0, 0, 8]));
        // a repeated option voids the ND fields, as in Open vSwitch
        let h = parse_frame(&nd_frame(135, &[(1, [2, 0, 0, 0, 0, 7]), (1, [2, 0, 0, 0, 0, 6])])).unwrap();
        assert_eq!((h.nd_target, h.nd_sll, h.l4_src), (None, None, Some(135)));
        // not neighbour discovery: no ND fields
        assert_eq!(parse_frame(&nd_frame(128, &[])).unwrap().nd_target, None);
    }

    #[test]
    fn runt_and_truncated_frames_do_not_panic() {
        assert_eq!(parse_frame(&[0u8; 13]), Err(ParseError::RuntFrame { len: 13 }));
        let f = udp_frame(None);
        for cut in 14..f.len() {
            let h = parse_frame(&f[..cut]).unwrap();
            if cut < 34 {
                assert_eq!(h.truncated, Some("ipv4"));
            }
        }
        assert_eq!(parse_frame(&f[..36]).unwrap().truncated, Some("udp"));
    }

    #[test]
    fn rejects_impossible_ipv4() {
        let mut f = udp_frame(None);
        f[14] = 0x65;
        assert!(matches!(parse_frame(&f), Err(ParseError::BadIpv4Header { offset: 14, .. })));
    }

    /// Fuzz-ish property: random bytes (biased toward interesting ethertypes) never panic.
    #[test]
    fn random_bytes_never_panic() {
        let mut s: u64 = 0x9e3779b97f4a7c15;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let types = [0x0800u16, 0x86dd, 0x0806, 0x8100, 0x88a8, 0x8847, 0x1234];
        for _ in 0..20_000 {
            let len = (next() % 120) as usize;
            let mut f: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if len >= 14 {
                let t = types[(next() % types.len() as u64) as usize].to_be_bytes();
                f[12] = t[0];
                f[13] = t[1];
                if len > 14 && next() % 2 == 0 {
                    f[14] = if t == [0x86, 0xdd] { 0x60 } else { 0x45 };
                }
            }
            let _ = parse_frame(&f);
        }
    }
}
