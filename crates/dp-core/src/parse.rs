//! Frame parser: Ethernet II, 802.1Q/802.1ad tags, IPv4, TCP, UDP, ICMP.
//!
//! Input: the raw bytes of one Ethernet frame (no FCS). Output: the header
//! fields OpenFlow 1.3 can match on, or a `ParseError` that names the layer and
//! the reason. A truncated inner header is not an error for the frame: the
//! fields found so far are returned and `truncated` names the layer cut short,
//! so the caller can count and drop it with an explicit reason.
//! Cost profile: one pass over at most the first ~60 bytes; no allocation.

pub const ETH_TYPE_IPV4: u16 = 0x0800;
pub const ETH_TYPE_VLAN: u16 = 0x8100;
pub const ETH_TYPE_QINQ: u16 = 0x88a8;
pub const IP_PROTO_ICMP: u8 = 1;
pub const IP_PROTO_TCP: u8 = 6;
pub const IP_PROTO_UDP: u8 = 17;

/// One VLAN tag as found on the wire (outermost first in `Headers::vlans`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    pub tpid: u16,
    pub pcp: u8,
    pub vid: u16,
}

/// Header fields of a parsed frame. Absent layers are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    /// Ethertype after all VLAN tags.
    pub eth_type: u16,
    pub vlans: Vec<VlanTag>,
    pub ipv4_src: Option<[u8; 4]>,
    pub ipv4_dst: Option<[u8; 4]>,
    pub ip_proto: Option<u8>,
    pub ip_dscp: Option<u8>,
    pub ip_ttl: Option<u8>,
    pub l4_src: Option<u16>,
    pub l4_dst: Option<u16>,
    /// Offset of the L3 header within the frame.
    pub l3_offset: usize,
    /// Offset of the L4 header within the frame, when there is one.
    pub l4_offset: Option<usize>,
    /// Name of the layer that was cut short, if any.
    pub truncated: Option<&'static str>,
}

/// Why a frame could not be parsed at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than an Ethernet header (14 bytes).
    RuntFrame { len: usize },
    /// An IPv4 header whose version or IHL is impossible.
    BadIpv4Header { offset: usize, reason: &'static str },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::RuntFrame { len } => write!(f, "runt frame: {len} bytes < 14-byte Ethernet header"),
            ParseError::BadIpv4Header { offset, reason } => write!(f, "bad IPv4 header at byte {offset}: {reason}"),
        }
    }
}

impl std::error::Error for ParseError {}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Parse one Ethernet frame into its OpenFlow-matchable header fields.
pub fn parse_frame(frame: &[u8]) -> Result<Headers, ParseError> {
    if frame.len() < 14 {
        return Err(ParseError::RuntFrame { len: frame.len() });
    }
    let mut h = Headers::default();
    h.eth_dst.copy_from_slice(&frame[0..6]);
    h.eth_src.copy_from_slice(&frame[6..12]);
    let mut off = 12;
    let mut ethertype = be16(frame, off);
    while ethertype == ETH_TYPE_VLAN || ethertype == ETH_TYPE_QINQ {
        if frame.len() < off + 6 {
            h.eth_type = ethertype;
            h.truncated = Some("vlan");
            h.l3_offset = frame.len();
            return Ok(h);
        }
        let tci = be16(frame, off + 2);
        h.vlans.push(VlanTag { tpid: ethertype, pcp: (tci >> 13) as u8, vid: tci & 0x0fff });
        off += 4;
        ethertype = be16(frame, off);
    }
    h.eth_type = ethertype;
    off += 2;
    h.l3_offset = off;
    if ethertype != ETH_TYPE_IPV4 {
        return Ok(h);
    }
    if frame.len() < off + 20 {
        h.truncated = Some("ipv4");
        return Ok(h);
    }
    let vihl = frame[off];
    if vihl >> 4 != 4 {
        return Err(ParseError::BadIpv4Header { offset: off, reason: "version is not 4" });
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    if ihl < 20 {
        return Err(ParseError::BadIpv4Header { offset: off, reason: "IHL below 5 words" });
    }
    h.ip_dscp = Some(frame[off + 1] >> 2);
    h.ip_ttl = Some(frame[off + 8]);
    let proto = frame[off + 9];
    h.ip_proto = Some(proto);
    h.ipv4_src = Some(frame[off + 12..off + 16].try_into().unwrap());
    h.ipv4_dst = Some(frame[off + 16..off + 20].try_into().unwrap());
    let frag_off = be16(frame, off + 6) & 0x1fff;
    let l4 = off + ihl;
    if frag_off != 0 {
        return Ok(h); // later fragments carry no L4 header
    }
    match proto {
        IP_PROTO_TCP | IP_PROTO_UDP | IP_PROTO_ICMP => {
            let need = if proto == IP_PROTO_ICMP { 2 } else { 4 };
            if frame.len() < l4 + need {
                h.truncated = Some(match proto {
                    IP_PROTO_TCP => "tcp",
                    IP_PROTO_UDP => "udp",
                    _ => "icmp",
                });
                return Ok(h);
            }
            h.l4_offset = Some(l4);
            if proto == IP_PROTO_ICMP {
                h.l4_src = Some(u16::from(frame[l4])); // type, as OpenFlow's icmpv4_type
                h.l4_dst = Some(u16::from(frame[l4 + 1])); // code
            } else {
                h.l4_src = Some(be16(frame, l4));
                h.l4_dst = Some(be16(frame, l4 + 2));
            }
        }
        _ => {}
    }
    Ok(h)
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
}
