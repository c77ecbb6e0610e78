//! Match fields and the fixed-width packed header key.
//!
//! Every OpenFlow field the pipeline matches on has a fixed place (word, shift,
//! width) in a `Key` of `KEY_WORDS` u64 words; a rule's match becomes a
//! (value, mask) pair of keys, and a lookup is word-wise `(key & mask) == value`.
//! POF `<offset, length>` fields (OVS-POF-TC §III) have no fixed place: each
//! table assigns the distinct POF fields its rules use to one of `POF_SLOTS`
//! 128-bit slots at the end of the key and extracts them from the frame bytes.
//! Fields that no packet carries together share key bits, as in Open vSwitch's
//! flow: the IPv6 flow label sits in the IPv4 address word, the ND target in the
//! ARP address words, ND SLL/TLL in the ARP SHA/THA slots; the match
//! prerequisites keep a rule from naming two fields of one place.
//! `tunnel_id` is pipeline metadata (0 on arrival), not frame bytes.
//! State: none. Cost: `base_key` is a few dozen stores from parsed `Headers`.

use crate::parse::{Headers, ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC};
use crate::nsh::{ETH_TYPE_NSH, NSH_WORD, NSH_WORDS};

pub const KEY_WORDS: usize = 44;
/// The key word holding `tunnel_id` (set by actions, like metadata in word 1).
pub const TUNNEL_WORD: usize = 14;
pub const POF_SLOTS: usize = 3;
const POF_BASE: usize = KEY_WORDS - 2 * POF_SLOTS;
pub type Key = [u64; KEY_WORDS];
/// Key word holding `PktMark` (bits 32..64); like metadata it is filled from
/// the packet's state, not parsed from the frame. A word of its own: the IPv6 ND
/// target fills words 6 and 7, and a frame may carry both. Its low half holds
/// the TCP flags, the IP fragment bits and the IP and MPLS TTLs.
pub const PKT_MARK_WORD: usize = 15;
/// Open vSwitch's sixteen 32-bit registers, pipeline state like metadata: key
/// words `REG_WORD ..= REG_WORD + 7`, word `REG_WORD + i` = xreg i = reg 2i
/// (high half) : reg 2i+1 (low half); xxreg j spans words `REG_WORD + 2j` and `+ 1`.
pub const REG_WORD: usize = 16;
pub const N_REGS: usize = 16;
/// The key words whose low 16 bits hold `conj_id`'s high and low halves
/// (free there: ARP SHA/THA and the ND SLL/TLL take bits 16..64).
pub const CONJ_ID_WORDS: (usize, usize) = (12, 13);

/// Write `conj_id` into a key (both halves; 0 clears it).
#[inline]
pub fn put_conj_id(k: &mut Key, id: u32) {
    k[CONJ_ID_WORDS.0] = (k[CONJ_ID_WORDS.0] & !0xffff) | u64::from(id >> 16);
    k[CONJ_ID_WORDS.1] = (k[CONJ_ID_WORDS.1] & !0xffff) | u64::from(id & 0xffff);
}
/// Connection-tracking state (Open vSwitch's ct_* fields), pipeline state set by
/// a `ct` action: key words `CT_WORD ..= CT_WORD + 7` (state and mark; zone,
/// protocol and ports; label; the original tuple's source and destination address,
/// an IPv4 one in the low 32 bits of the IPv6 one's place).
pub const CT_WORD: usize = 24;
/// Tunnel metadata beside `tunnel_id` (Open vSwitch's tun_src/tun_dst, tun_ipv6_src/dst,
/// tun_gbp_id), pipeline state set by set_field, 0 on arrival (no tunnel ports): key words
/// `TUN_WORD ..= TUN_WORD + 5` (IPv4 source : destination; IPv6 source; IPv6 destination;
/// the group policy id in the low 16 bits of the last, its flags in the next 8, then the
/// one public tunnel flag, `tun_flags`' OAM bit).
pub const TUN_WORD: usize = 32;
pub const TUN_WORDS: usize = 6;
/// The key word whose high half holds `actset_output` (free beside the tunnel flags).
pub const ACTSET_WORD: usize = TUN_WORD + 5;
/// Open vSwitch's OFPP_UNSET (OpenFlow 1.1+ form): no output in the action set.
pub const OFPP_UNSET: u32 = 0xffff_fff7;
/// `tun_metadata0..63`: how many, and the bits of an option a match names (bits 0..127,
/// `pipeline/tunfold.rs`; actions read and write all of Open vSwitch's 124 bytes: `tunwide.rs`).
pub const TUN_METADATA_FIELDS: usize = 64;
pub const TUN_METADATA_BITS: u32 = 128;

/// The key bit (word, shift) of `RecircId`: free in word 5 (MPLS takes bits 0..24,
/// the transport ports 32..64), never set by the frame.
pub const RECIRC_BIT: (usize, u32) = (5, 24);

/// OXM field value for "a VLAN tag is present" in `vlan_vid`.
pub const OFPVID_PRESENT: u16 = 0x1000;

/// A matchable / settable field. `Pof` is a protocol-oblivious field of
/// `length` bits starting at bit `offset` of the frame (bit 0 = first bit of
/// the Ethernet destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    InPort,
    Metadata,
    EthDst,
    EthSrc,
    EthType,
    VlanVid,
    VlanPcp,
    IpDscp,
    IpEcn,
    IpProto,
    Ipv4Src,
    Ipv4Dst,
    Ipv6Src,
    Ipv6Dst,
    TcpSrc,
    TcpDst,
    UdpSrc,
    UdpDst,
    Icmpv4Type,
    Icmpv4Code,
    Icmpv6Type,
    Icmpv6Code,
    ArpOp,
    ArpSpa,
    ArpTpa,
    MplsLabel,
    /// Open vSwitch's packet mark (NXM_NX_PKT_MARK): per-packet metadata, not
    /// frame bytes. It leaves a switch with the frame (OneSwitch's PCIe flow id),
    /// so the next switch can match it; OpenFlow 1.3 rules cannot see it.
    PktMark,
    SctpSrc,
    SctpDst,
    ArpSha,
    ArpTha,
    Ipv6Flabel,
    Ipv6NdTarget,
    Ipv6NdSll,
    Ipv6NdTll,
    MplsTc,
    MplsBos,
    TunnelId,
    /// Register `reg0..reg15` (32 bits), and its 64-bit `xreg0..7` and 128-bit
    /// `xxreg0..3` views (pipeline state, 0 on arrival).
    Reg(u8),
    XReg(u8),
    XXReg(u8),
    /// The 12 TCP flag bits (read-only).
    TcpFlags,
    /// Open vSwitch's `ip_frag`: bit 0 a fragment, bit 1 not the first (read-only).
    IpFrag,
    /// IPv4 TTL / IPv6 hop limit.
    NwTtl,
    /// The outer MPLS label stack entry's TTL.
    MplsTtl,
    /// Open vSwitch's `conj_id` (32 bits, exact, read-only): 0 in every ordinary
    /// lookup; set only for the lookup a completed conjunctive match makes
    /// (`pipeline::conj`). Its halves sit in the free low 16 bits of words 12
    /// and 13 (`put_conj_id`), so `slot` names the high half only.
    ConjId,
    /// Connection tracking (read-only but for a ct action's exec list): the
    /// state bits, zone, mark, label, and the connection's original tuple.
    CtState,
    CtZone,
    CtMark,
    CtLabel,
    CtNwProto,
    CtNwSrc,
    CtNwDst,
    CtIpv6Src,
    CtIpv6Dst,
    CtTpSrc,
    CtTpDst,
    /// Open vSwitch's `recirc_id` as one bit: set in a copy a `ct(table=T)`
    /// recirculated (OVS gives it an id allocated at run time), 0 for a packet that
    /// came in on a port. The rule IR matches only `recirc_id=0` (value 0 here).
    RecircId,
    /// Tunnel metadata (pipeline state, `TUN_WORD`).
    TunSrc,
    TunDst,
    TunIpv6Src,
    TunIpv6Dst,
    TunGbpId,
    TunGbpFlags,
    /// The Network Service Header of a 0x894f frame (`crate::nsh`).
    NshFlags,
    NshTtl,
    NshMdtype,
    NshNp,
    NshSpi,
    NshSi,
    NshC1,
    NshC2,
    NshC3,
    NshC4,
    TunFlags,
    /// Open vSwitch's `actset_output` (read-only, exact): the output port the action
    /// set holds so far, `OFPP_UNSET` with none or with a group (`pipeline::actset`);
    /// pipeline state in the high half of key word `TUN_WORD + 5`.
    ActsetOutput,
    /// Open vSwitch's `tun_metadata0`..`63` (Geneve option data, pipeline state in
    /// `pipeline/tunmeta.rs`): no fixed key place; a table matching one numbers the masked
    /// values its rules match in fields of its POF slots (`pipeline/tunfold.rs`).
    TunMetadata(u8),
    Pof { offset: u32, length: u32 },
}

/// Where a fixed field lives in the key: `(word, shift, bits)`; 128-bit fields
/// occupy `word` (high half) and `word + 1` (low half).
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub word: usize,
    pub shift: u32,
    pub bits: u32,
}

const fn s(word: usize, shift: u32, bits: u32) -> Slot {
    Slot { word, shift, bits }
}

/// What a packet must carry for a field to exist (OpenFlow 1.3 §7.2.3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prereq {
    None,
    EthType(&'static [u16]),
    IpProto(u8, &'static [u16]),
    Vlan,
    /// IPv6 neighbour discovery: ICMPv6 with one of these types and code 0.
    Nd(&'static [u8]),
}

const IP_ANY: &[u16] = &[ETH_TYPE_IPV4, ETH_TYPE_IPV6];
const V4: &[u16] = &[ETH_TYPE_IPV4];
const V6: &[u16] = &[ETH_TYPE_IPV6];
const ARP: &[u16] = &[ETH_TYPE_ARP];
const NSH: &[u16] = &[ETH_TYPE_NSH];
const MPLS: &[u16] = &[ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC];
const ND_ANY: &[u8] = &[135, 136];
const ND_NS: &[u8] = &[135];
const ND_NA: &[u8] = &[136];

impl Field {
    /// Field by its OXM name as in the Python rule IR (`"ipv4_dst"` ...).
    pub fn from_name(name: &str) -> Option<Field> {
        use Field::*;
        Some(match name {
            "in_port" => InPort,
            "metadata" => Metadata,
            "eth_dst" => EthDst,
            "eth_src" => EthSrc,
            "eth_type" => EthType,
            "vlan_vid" => VlanVid,
            "vlan_pcp" => VlanPcp,
            "ip_dscp" => IpDscp,
            "ip_ecn" => IpEcn,
            "ip_proto" => IpProto,
            "ipv4_src" => Ipv4Src,
            "ipv4_dst" => Ipv4Dst,
            "ipv6_src" => Ipv6Src,
            "ipv6_dst" => Ipv6Dst,
            "tcp_src" => TcpSrc,
            "tcp_dst" => TcpDst,
            "udp_src" => UdpSrc,
            "udp_dst" => UdpDst,
            "icmpv4_type" => Icmpv4Type,
            "icmpv4_code" => Icmpv4Code,
            "icmpv6_type" => Icmpv6Type,
            "icmpv6_code" => Icmpv6Code,
            "arp_op" => ArpOp,
            "arp_spa" => ArpSpa,
            "arp_tpa" => ArpTpa,
            "mpls_label" => MplsLabel,
            "pkt_mark" => PktMark,
            "sctp_src" => SctpSrc,
            "sctp_dst" => SctpDst,
            "arp_sha" => ArpSha,
            "arp_tha" => ArpTha,
            "ipv6_flabel" => Ipv6Flabel,
            "ipv6_nd_target" => Ipv6NdTarget,
            "ipv6_nd_sll" => Ipv6NdSll,
            "ipv6_nd_tll" => Ipv6NdTll,
            "mpls_tc" => MplsTc,
            "mpls_bos" => MplsBos,
            "tunnel_id" => TunnelId,
            "tcp_flags" => TcpFlags,
            "ip_frag" => IpFrag,
            "nw_ttl" => NwTtl,
            "mpls_ttl" => MplsTtl,
            "conj_id" => ConjId,
            "ct_state" => CtState,
            "ct_zone" => CtZone,
            "ct_mark" => CtMark,
            "ct_label" => CtLabel,
            "ct_nw_proto" => CtNwProto,
            "ct_nw_src" => CtNwSrc,
            "ct_nw_dst" => CtNwDst,
            "ct_ipv6_src" => CtIpv6Src,
            "ct_ipv6_dst" => CtIpv6Dst,
            "ct_tp_src" => CtTpSrc,
            "ct_tp_dst" => CtTpDst,
            "recirc_id" => RecircId,
            "tun_src" => TunSrc,
            "tun_dst" => TunDst,
            "tun_ipv6_src" => TunIpv6Src,
            "tun_ipv6_dst" => TunIpv6Dst,
            "tun_gbp_id" => TunGbpId,
            "tun_gbp_flags" => TunGbpFlags,
            "nsh_flags" => NshFlags,
            "tun_flags" => TunFlags,
            "actset_output" => ActsetOutput,
            "nsh_ttl" => NshTtl,
            "nsh_mdtype" => NshMdtype,
            "nsh_np" => NshNp,
            "nsh_spi" => NshSpi,
            "nsh_si" => NshSi,
            "nsh_c1" => NshC1,
            "nsh_c2" => NshC2,
            "nsh_c3" => NshC3,
            "nsh_c4" => NshC4,
            _ => return Self::register_from_name(name).or_else(|| Self::tun_metadata_from_name(name)),
        })
    }

    /// `tun_metadata0` .. `tun_metadata63`.
    fn tun_metadata_from_name(name: &str) -> Option<Field> {
        let d = name.strip_prefix("tun_metadata")?;
        if d.is_empty() || (d.len() > 1 && d.starts_with('0')) || !d.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: usize = d.parse().ok()?;
        (n < TUN_METADATA_FIELDS).then(|| Field::TunMetadata(n as u8))
    }

    /// `reg0..reg15`, `xreg0..xreg7`, `xxreg0..xxreg3` (decimal, as the rule IR names them).
    fn register_from_name(name: &str) -> Option<Field> {
        let (kind, count, digits): (fn(u8) -> Field, usize, &str) = if let Some(d) = name.strip_prefix("xxreg") {
            (Field::XXReg, N_REGS / 4, d)
        } else if let Some(d) = name.strip_prefix("xreg") {
            (Field::XReg, N_REGS / 2, d)
        } else {
            (Field::Reg, N_REGS, name.strip_prefix("reg")?)
        };
        if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: usize = digits.parse().ok()?;
        (n < count).then(|| kind(n as u8))
    }

    pub fn name(&self) -> String {
        use Field::*;
        match self {
            Pof { offset, length } => format!("pof[{offset}:{length}]"),
            Reg(i) => format!("reg{i}"),
            XReg(i) => format!("xreg{i}"),
            XXReg(i) => format!("xxreg{i}"),
            TunMetadata(i) => format!("tun_metadata{i}"),
            f => {
                let n = match f {
                    InPort => "in_port",
                    Metadata => "metadata",
                    EthDst => "eth_dst",
                    EthSrc => "eth_src",
                    EthType => "eth_type",
                    VlanVid => "vlan_vid",
                    VlanPcp => "vlan_pcp",
                    IpDscp => "ip_dscp",
                    IpEcn => "ip_ecn",
                    IpProto => "ip_proto",
                    Ipv4Src => "ipv4_src",
                    Ipv4Dst => "ipv4_dst",
                    Ipv6Src => "ipv6_src",
                    Ipv6Dst => "ipv6_dst",
                    TcpSrc => "tcp_src",
                    TcpDst => "tcp_dst",
                    UdpSrc => "udp_src",
                    UdpDst => "udp_dst",
                    Icmpv4Type => "icmpv4_type",
                    Icmpv4Code => "icmpv4_code",
                    Icmpv6Type => "icmpv6_type",
                    Icmpv6Code => "icmpv6_code",
                    ArpOp => "arp_op",
                    ArpSpa => "arp_spa",
                    ArpTpa => "arp_tpa",
                    MplsLabel => "mpls_label",
                    PktMark => "pkt_mark",
                    SctpSrc => "sctp_src",
                    SctpDst => "sctp_dst",
                    ArpSha => "arp_sha",
                    ArpTha => "arp_tha",
                    Ipv6Flabel => "ipv6_flabel",
                    Ipv6NdTarget => "ipv6_nd_target",
                    Ipv6NdSll => "ipv6_nd_sll",
                    Ipv6NdTll => "ipv6_nd_tll",
                    MplsTc => "mpls_tc",
                    MplsBos => "mpls_bos",
                    TunnelId => "tunnel_id",
                    TcpFlags => "tcp_flags",
                    IpFrag => "ip_frag",
                    NwTtl => "nw_ttl",
                    MplsTtl => "mpls_ttl",
                    ConjId => "conj_id",
                    CtState => "ct_state",
                    CtZone => "ct_zone",
                    CtMark => "ct_mark",
                    CtLabel => "ct_label",
                    CtNwProto => "ct_nw_proto",
                    CtNwSrc => "ct_nw_src",
                    CtNwDst => "ct_nw_dst",
                    CtIpv6Src => "ct_ipv6_src",
                    CtIpv6Dst => "ct_ipv6_dst",
                    CtTpSrc => "ct_tp_src",
                    CtTpDst => "ct_tp_dst",
                    RecircId => "recirc_id",
                    TunSrc => "tun_src",
                    TunDst => "tun_dst",
                    TunIpv6Src => "tun_ipv6_src",
                    TunIpv6Dst => "tun_ipv6_dst",
                    TunGbpId => "tun_gbp_id",
                    TunGbpFlags => "tun_gbp_flags",
                    NshFlags => "nsh_flags",
                    TunFlags => "tun_flags",
                    ActsetOutput => "actset_output",
                    NshTtl => "nsh_ttl",
                    NshMdtype => "nsh_mdtype",
                    NshNp => "nsh_np",
                    NshSpi => "nsh_spi",
                    NshSi => "nsh_si",
                    NshC1 => "nsh_c1",
                    NshC2 => "nsh_c2",
                    NshC3 => "nsh_c3",
                    NshC4 => "nsh_c4",
                    Pof { .. } | Reg(_) | XReg(_) | XXReg(_) | TunMetadata(_) => unreachable!(),
                };
                n.to_string()
            }
        }
    }

    /// Width in bits.
    pub fn bits(&self) -> u32 {
        match self {
            Field::Pof { length, .. } => *length,
            Field::ConjId => 32,
            Field::TunMetadata(_) => TUN_METADATA_BITS,
            f => f.slot().bits,
        }
    }

    /// Key position of a fixed field (panics for `Pof`, which is per table).
    pub fn slot(&self) -> Slot {
        use Field::*;
        match self {
            VlanVid => s(0, 0, 13),
            VlanPcp => s(0, 13, 3),
            EthType => s(0, 16, 16),
            InPort => s(0, 32, 32),
            Metadata => s(1, 0, 64),
            IpEcn => s(2, 0, 2),
            IpDscp => s(2, 2, 6),
            IpProto => s(2, 8, 8),
            EthDst => s(2, 16, 48),
            ArpOp => s(3, 0, 16),
            EthSrc => s(3, 16, 48),
            Ipv4Dst => s(4, 0, 32),
            Ipv4Src => s(4, 32, 32),
            MplsLabel => s(5, 0, 20),
            MplsTc => s(5, 20, 3),
            MplsBos => s(5, 23, 1),
            TcpDst | UdpDst | SctpDst => s(5, 32, 16),
            TcpSrc | UdpSrc | SctpSrc => s(5, 48, 16),
            Ipv6Flabel => s(4, 0, 20),
            Ipv6NdTarget => s(6, 0, 128),
            ArpSha | Ipv6NdSll => s(12, 16, 48),
            ArpTha | Ipv6NdTll => s(13, 16, 48),
            TunnelId => s(TUNNEL_WORD, 0, 64),
            Icmpv4Code | Icmpv6Code => s(5, 32, 8),
            Icmpv4Type | Icmpv6Type => s(5, 48, 8),
            ArpTpa => s(6, 0, 32),
            ArpSpa => s(6, 32, 32),
            PktMark => s(PKT_MARK_WORD, 32, 32),
            TcpFlags => s(PKT_MARK_WORD, 0, 12),
            IpFrag => s(PKT_MARK_WORD, 12, 2),
            NwTtl => s(PKT_MARK_WORD, 16, 8),
            MplsTtl => s(PKT_MARK_WORD, 24, 8),
            ConjId => s(CONJ_ID_WORDS.0, 0, 16),
            Reg(i) => s(REG_WORD + usize::from(*i) / 2, if i % 2 == 0 { 32 } else { 0 }, 32),
            XReg(i) => s(REG_WORD + usize::from(*i), 0, 64),
            XXReg(i) => s(REG_WORD + 2 * usize::from(*i), 0, 128),
            Ipv6Src => s(8, 0, 128),
            Ipv6Dst => s(10, 0, 128),
            CtState => s(CT_WORD, 32, 32),
            CtMark => s(CT_WORD, 0, 32),
            CtZone => s(CT_WORD + 1, 48, 16),
            CtNwProto => s(CT_WORD + 1, 32, 8),
            CtTpSrc => s(CT_WORD + 1, 16, 16),
            CtTpDst => s(CT_WORD + 1, 0, 16),
            CtLabel => s(CT_WORD + 2, 0, 128),
            CtIpv6Src => s(CT_WORD + 4, 0, 128),
            CtNwSrc => s(CT_WORD + 5, 0, 32),
            CtIpv6Dst => s(CT_WORD + 6, 0, 128),
            CtNwDst => s(CT_WORD + 7, 0, 32),
            RecircId => s(RECIRC_BIT.0, RECIRC_BIT.1, 1),
            TunSrc => s(TUN_WORD, 32, 32),
            TunDst => s(TUN_WORD, 0, 32),
            TunIpv6Src => s(TUN_WORD + 1, 0, 128),
            TunIpv6Dst => s(TUN_WORD + 3, 0, 128),
            TunGbpId => s(TUN_WORD + 5, 0, 16),
            TunGbpFlags => s(TUN_WORD + 5, 16, 8),
            NshFlags => s(NSH_WORD, 56, 8),
            NshTtl => s(NSH_WORD, 48, 8),
            NshMdtype => s(NSH_WORD, 40, 8),
            NshNp => s(NSH_WORD, 32, 8),
            NshSpi => s(NSH_WORD, 8, 24),
            NshSi => s(NSH_WORD, 0, 8),
            NshC1 => s(NSH_WORD + 1, 32, 32),
            NshC2 => s(NSH_WORD + 1, 0, 32),
            NshC3 => s(NSH_WORD + 2, 32, 32),
            NshC4 => s(NSH_WORD + 2, 0, 32),
            TunFlags => s(TUN_WORD + 5, 24, 1),
            ActsetOutput => s(ACTSET_WORD, 32, 32),
            Pof { .. } => panic!("POF fields have per-table slots"),
            TunMetadata(_) => panic!("tun_metadata fields have per-table slots"),
        }
    }

    pub fn maskable(&self) -> bool {
        use Field::*;
        matches!(
            self,
            Metadata | PktMark | EthDst | EthSrc | VlanVid | VlanPcp | Ipv4Src | Ipv4Dst | Ipv6Src | Ipv6Dst | TcpSrc | TcpDst | UdpSrc | UdpDst | ArpSpa | ArpTpa
                | SctpSrc | SctpDst | ArpSha | ArpTha | Ipv6Flabel | Ipv6NdTarget | Ipv6NdSll | Ipv6NdTll | TunnelId | Pof { .. }
                | Reg(_) | XReg(_) | XXReg(_) | TcpFlags | IpFrag | CtState | CtMark | CtLabel | CtNwSrc | CtNwDst
                | CtIpv6Src | CtIpv6Dst | CtTpSrc | CtTpDst | TunSrc | TunDst | TunIpv6Src | TunIpv6Dst | TunGbpId | TunGbpFlags
                | NshFlags | NshC1 | NshC2 | NshC3 | NshC4
                | TunFlags | TunMetadata(_)
        )
    }

    pub fn prereq(&self) -> Prereq {
        use Field::*;
        match self {
            VlanPcp => Prereq::Vlan,
            IpDscp | IpEcn | IpProto => Prereq::EthType(IP_ANY),
            Ipv4Src | Ipv4Dst => Prereq::EthType(V4),
            Ipv6Src | Ipv6Dst => Prereq::EthType(V6),
            TcpSrc | TcpDst => Prereq::IpProto(6, IP_ANY),
            UdpSrc | UdpDst => Prereq::IpProto(17, IP_ANY),
            Icmpv4Type | Icmpv4Code => Prereq::IpProto(1, V4),
            Icmpv6Type | Icmpv6Code => Prereq::IpProto(58, V6),
            ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => Prereq::EthType(ARP),
            MplsLabel | MplsTc | MplsBos => Prereq::EthType(MPLS),
            SctpSrc | SctpDst => Prereq::IpProto(132, IP_ANY),
            Ipv6Flabel => Prereq::EthType(V6),
            Ipv6NdTarget => Prereq::Nd(ND_ANY),
            Ipv6NdSll => Prereq::Nd(ND_NS),
            Ipv6NdTll => Prereq::Nd(ND_NA),
            TcpFlags => Prereq::IpProto(6, IP_ANY),
            IpFrag | NwTtl => Prereq::EthType(IP_ANY),
            MplsTtl => Prereq::EthType(MPLS),
            CtNwSrc | CtNwDst => Prereq::EthType(V4),
            CtIpv6Src | CtIpv6Dst => Prereq::EthType(V6),
            f if crate::nsh::is_nsh(*f) => Prereq::EthType(NSH),
            _ => Prereq::None,
        }
    }

    /// True when the parsed packet carries this field (set-field on a field
    /// the packet lacks is a no-op, as in Open vSwitch).
    pub fn present_in(&self, h: &Headers) -> bool {
        match self.prereq() {
            Prereq::None => match self {
                Field::Pof { .. } => true,
                _ => true,
            },
            Prereq::Vlan => !h.vlans.is_empty(),
            Prereq::EthType(ts) => ts.contains(&h.eth_type) && self.layer_parsed(h),
            Prereq::IpProto(p, ts) => ts.contains(&h.eth_type) && h.ip_proto == Some(p) && h.l4_offset.is_some(),
            Prereq::Nd(types) => {
                h.eth_type == ETH_TYPE_IPV6 && h.ip_proto == Some(58) && h.l4_offset.is_some() && h.l4_dst == Some(0)
                    && h.l4_src.is_some_and(|t| types.contains(&(t as u8)))
            }
        }
    }

    fn layer_parsed(&self, h: &Headers) -> bool {
        use Field::*;
        match self {
            IpDscp | IpEcn | IpProto | IpFrag | NwTtl => h.ip_proto.is_some(),
            MplsTtl => h.mpls_label.is_some(),
            Ipv4Src | Ipv4Dst => h.ipv4_src.is_some(),
            Ipv6Src | Ipv6Dst => h.ipv6_src.is_some(),
            ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => h.arp_op.is_some(),
            MplsLabel | MplsTc | MplsBos => h.mpls_label.is_some(),
            Ipv6Flabel => h.ipv6_src.is_some(),
            _ => true,
        }
    }
}

/// Place `value`/`mask` (already width-checked) of a fixed field into key words.
pub fn put(key: &mut Key, slot: Slot, value: u128) {
    if slot.bits > 64 {
        key[slot.word] |= (value >> 64) as u64;
        key[slot.word + 1] |= value as u64;
    } else {
        key[slot.word] |= (value as u64) << slot.shift;
    }
}

/// Key words of POF slot `i`.
pub fn pof_slot(i: usize) -> Slot {
    Slot { word: POF_BASE + 2 * i, shift: 0, bits: 128 }
}

/// Read `length` (≤ 128) bits at bit `offset` of `frame`; bits past the end read as 0.
/// Returns (value, whole_field_present).
pub fn read_bits(frame: &[u8], offset: u32, length: u32) -> (u128, bool) {
    let present = (offset as usize + length as usize) <= frame.len() * 8;
    let first = (offset / 8) as usize;
    let lead = offset % 8;
    let nbytes = ((lead + length + 7) / 8) as usize;
    let byte = |i: usize| frame.get(i).copied().unwrap_or(0);
    let ones = if length >= 128 { u128::MAX } else { (1u128 << length) - 1 };
    if nbytes <= 16 {
        let mut acc: u128 = 0;
        for i in 0..nbytes {
            acc = (acc << 8) | u128::from(byte(first + i));
        }
        let tail = nbytes as u32 * 8 - lead - length;
        ((acc >> tail) & ones, present)
    } else {
        let mut acc: u128 = 0;
        for i in 0..length {
            let bit = offset + i;
            acc = (acc << 1) | u128::from((byte((bit / 8) as usize) >> (7 - bit % 8)) & 1);
        }
        (acc, present)
    }
}

/// Write `length` bits of `value` at bit `offset` of `frame` (bits past the end are ignored).
pub fn write_bits(frame: &mut [u8], offset: u32, length: u32, value: u128) {
    for i in 0..length {
        let bit = offset + i;
        let byte = (bit / 8) as usize;
        if byte >= frame.len() {
            break;
        }
        let v = (value >> (length - 1 - i)) & 1;
        let m = 0x80u8 >> (bit % 8);
        if v == 1 {
            frame[byte] |= m;
        } else {
            frame[byte] &= !m;
        }
    }
}

fn mac48(b: &[u8; 6]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

fn ip4(b: &[u8; 4]) -> u64 {
    u64::from(u32::from_be_bytes(*b))
}

/// The key of a parsed frame without metadata and POF slots.
pub fn base_key(h: &Headers, in_port: u32) -> Key {
    let mut k = [0u64; KEY_WORDS];
    fill_base_key(&mut k, h, in_port);
    k
}

/// `base_key` written in place (no 144-byte copy on the packet path).
pub fn fill_base_key(k: &mut Key, h: &Headers, in_port: u32) {
    *k = [0u64; KEY_WORDS];
    let (vid, pcp) = match h.vlans.first() {
        Some(t) => (u64::from(t.vid | OFPVID_PRESENT), u64::from(t.pcp)),
        None => (0, 0),
    };
    k[0] = (u64::from(in_port) << 32) | (u64::from(h.eth_type) << 16) | (pcp << 13) | vid;
    let mut w2 = mac48(&h.eth_dst) << 16;
    if let Some(p) = h.ip_proto {
        w2 |= (u64::from(p) << 8) | (u64::from(h.ip_dscp.unwrap_or(0)) << 2) | u64::from(h.ip_ecn.unwrap_or(0));
    }
    k[2] = w2;
    k[3] = (mac48(&h.eth_src) << 16) | u64::from(h.arp_op.unwrap_or(0));
    if let (Some(s), Some(d)) = (h.ipv4_src, h.ipv4_dst) {
        k[4] = (ip4(&s) << 32) | ip4(&d);
    }
    let mut w5 = u64::from(h.mpls_label.unwrap_or(0)) | (u64::from(h.mpls_tc.unwrap_or(0)) << 20) | (u64::from(h.mpls_bos.unwrap_or(0)) << 23);
    // (as Open vSwitch's default "normal" fragment handling: a fragment's ports,
    // ICMP type and code read as 0, even in the first fragment)
    if let (Some(a), Some(b), 0) = (h.l4_src, h.l4_dst, h.ip_frag) {
        w5 |= (u64::from(a) << 48) | (u64::from(b) << 32);
    }
    k[5] = w5;
    let mpls_ttl = if h.mpls_label.is_some() { h.mpls_lses[0] & 0xff } else { 0 };
    k[PKT_MARK_WORD] = u64::from(h.tcp_flags.unwrap_or(0))
        | (u64::from(h.ip_frag) << 12)
        | (u64::from(if h.ip_proto.is_some() { h.ip_ttl.unwrap_or(0) } else { 0 }) << 16)
        | (u64::from(mpls_ttl) << 24);
    if let (Some(s), Some(d)) = (h.arp_spa, h.arp_tpa) {
        k[6] = (ip4(&s) << 32) | ip4(&d);
    }
    if let Some(fl) = h.ipv6_flabel {
        k[4] = u64::from(fl);
    }
    if let Some(t) = h.nd_target {
        let t = u128::from_be_bytes(t);
        k[6] = (t >> 64) as u64;
        k[7] = t as u64;
    }
    // ARP SHA/THA, or ND SLL/TLL (never both in one frame)
    if let Some(a) = h.arp_sha.or(h.nd_sll) {
        k[12] = mac48(&a) << 16;
    }
    if let Some(a) = h.arp_tha.or(h.nd_tll) {
        k[13] = mac48(&a) << 16;
    }
    if let (Some(s), Some(d)) = (h.ipv6_src, h.ipv6_dst) {
        let s = u128::from_be_bytes(s);
        let d = u128::from_be_bytes(d);
        k[8] = (s >> 64) as u64;
        k[9] = s as u64;
        k[10] = (d >> 64) as u64;
        k[11] = d as u64;
    }
    if let Some(n) = h.nsh {
        k[NSH_WORD..NSH_WORD + NSH_WORDS].copy_from_slice(&n);
    }
}

/// The packet key straight from the frame bytes, without `Headers`, for the
/// common shapes only: Ethernet with up to two VLAN tags, then IPv4 (any
/// header length, first fragment or later) with TCP/UDP/ICMP or another
/// protocol, or a non-IP ethertype other than ARP, MPLS and IPv6. False for
/// anything else (and for every frame that is truncated or malformed), so
/// the caller parses in full. When true, `k` equals what `parse_into` +
/// `fill_base_key` give. Cost: a few dozen loads, no allocation.
#[inline]
pub fn fast_base_key(frame: &[u8], in_port: u32, k: &mut Key) -> bool {
    use crate::parse::{ETH_TYPE_QINQ, ETH_TYPE_VLAN};
    let n = frame.len();
    let Some(eth) = frame.get(..14) else { return false };
    let eth: &[u8; 14] = eth.try_into().expect("14 bytes");
    let be16 = |at: usize| u16::from_be_bytes([frame[at], frame[at + 1]]);
    let mut off = 12;
    let mut ethertype = u16::from_be_bytes([eth[12], eth[13]]);
    let mut tag = 0u64;
    let mut tags = 0;
    while ethertype == ETH_TYPE_VLAN || ethertype == ETH_TYPE_QINQ {
        if tags == 2 || n < off + 6 {
            return false;
        }
        if tags == 0 {
            let tci = u64::from(be16(off + 2));
            tag = ((tci >> 13) << 13) | (tci & 0x0fff) | u64::from(OFPVID_PRESENT);
        }
        tags += 1;
        off += 4;
        ethertype = be16(off);
    }
    off += 2;
    // A MAC shifted left by 16 is the top 48 bits of the 8 bytes at its start.
    let be64 = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    *k = [0u64; KEY_WORDS];
    k[0] = (u64::from(in_port) << 32) | (u64::from(ethertype) << 16) | tag;
    k[2] = be64(&eth[0..8]) & !0xffff;
    k[3] = be64(&eth[6..14]) & !0xffff;
    match ethertype {
        ETH_TYPE_IPV4 => {}
        ETH_TYPE_ARP | ETH_TYPE_IPV6 | ETH_TYPE_MPLS | ETH_TYPE_MPLS_MC | ETH_TYPE_NSH => return false,
        _ => return true,
    }
    let Some(ip) = frame.get(off..off + 20) else { return false };
    let ip: &[u8; 20] = ip.try_into().expect("20 bytes");
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[0] >> 4 != 4 || ihl < 20 || n < off + ihl {
        return false;
    }
    let proto = ip[9];
    k[2] |= (u64::from(proto) << 8) | u64::from(ip[1]);
    k[4] = be64(&ip[12..20]);
    k[PKT_MARK_WORD] = u64::from(ip[8]) << 16;
    let frag = u16::from_be_bytes([ip[6], ip[7]]);
    if frag & 0x1fff != 0 {
        // a later fragment: no L4 header
        k[PKT_MARK_WORD] |= u64::from(crate::parse::FRAG_ANY | crate::parse::FRAG_LATER) << 12;
        return true;
    }
    if frag & 0x2000 != 0 {
        return false; // a first fragment (rare): the full parse
    }
    let l4 = off + ihl;
    match proto {
        crate::parse::IP_PROTO_TCP | crate::parse::IP_PROTO_UDP | crate::parse::IP_PROTO_SCTP => {
            let Some(&[a, b, c, d]) = frame.get(l4..l4 + 4) else { return false };
            if proto == crate::parse::IP_PROTO_SCTP && n < l4 + 12 {
                return false;
            }
            k[5] = (u64::from(u16::from_be_bytes([a, b])) << 48) | (u64::from(u16::from_be_bytes([c, d])) << 32);
            if proto == crate::parse::IP_PROTO_TCP && n >= l4 + 20 {
                k[PKT_MARK_WORD] |= u64::from(u16::from_be_bytes([frame[l4 + 12], frame[l4 + 13]]) & 0x0fff);
            }
        }
        // (as the parser: ICMPv6's type/code are read after IPv4 too)
        crate::parse::IP_PROTO_ICMP | crate::parse::IP_PROTO_ICMPV6 => {
            if n < l4 + 2 {
                return false;
            }
            k[5] = (u64::from(frame[l4]) << 48) | (u64::from(frame[l4 + 1]) << 32);
        }
        _ => {}
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames of every shape the parser knows, cut at every length.
    #[test]
    fn fast_key_equals_the_full_parse_or_declines() {
        let mut rng = crate::rng::XorShift64(0x2545_f491_4f6c_dd1d);
        let mut rnd = move || rng.next();
        let mut accepted = 0;
        for _ in 0..20000 {
            let mut f: Vec<u8> = (0..12).map(|_| rnd() as u8).collect();
            for _ in 0..rnd() % 4 {
                f.extend_from_slice(&[[0x81, 0x88][(rnd() % 2) as usize], [0x00, 0xa8][(rnd() % 2) as usize]]);
                f.extend_from_slice(&(rnd() as u16).to_be_bytes());
            }
            let et: u16 = [0x0800, 0x0800, 0x0800, 0x0806, 0x86dd, 0x8847, 0x1234][(rnd() % 7) as usize];
            f.extend_from_slice(&et.to_be_bytes());
            let vihl = [0x45u8, 0x45, 0x46, 0x44, 0x55][(rnd() % 5) as usize];
            let frag = [0u16, 0, 0, 0x2000, 0x0010][(rnd() % 5) as usize];
            let proto = [6u8, 17, 1, 58, 47, 132][(rnd() % 6) as usize];
            f.extend_from_slice(&[vihl, rnd() as u8, 0, 40, 0, 0]);
            f.extend_from_slice(&frag.to_be_bytes());
            f.extend_from_slice(&[64, proto, 0, 0]);
            f.extend((0..40).map(|_| rnd() as u8));
            let cut = (rnd() as usize) % (f.len() + 1);
            f.truncate(cut.max(f.len() - (rnd() % 4) as usize * 20).min(f.len()));
            let port = (rnd() % 5) as u32;
            let mut fast = [7u64; KEY_WORDS];
            if fast_base_key(&f, port, &mut fast) {
                accepted += 1;
                let h = crate::parse::parse_frame(&f).expect("fast path accepted a malformed frame");
                assert_eq!(h.truncated, None, "{f:02x?}");
                let mut full = [0u64; KEY_WORDS];
                fill_base_key(&mut full, &h, port);
                assert_eq!(fast, full, "{f:02x?}");
            }
        }
        assert!(accepted > 2000, "{accepted}");
    }

    #[test]
    fn register_views_are_their_registers() {
        use Field::*;
        assert_eq!(Field::from_name("reg15"), Some(Reg(15)));
        assert_eq!(Field::from_name("xxreg3"), Some(XXReg(3)));
        for bad in ["reg16", "xreg8", "xxreg4", "reg01", "reg", "regx", "xreg-1"] {
            assert_eq!(Field::from_name(bad), None, "{bad}");
        }
        // xreg1 = reg2 (high) : reg3 (low); xxreg0 = reg0 .. reg3, reg0 most significant
        let mut k = [0u64; KEY_WORDS];
        put(&mut k, Reg(2).slot(), 0xaaaa_aaaa);
        put(&mut k, Reg(3).slot(), 0x5555_5555);
        let mut x = [0u64; KEY_WORDS];
        put(&mut x, XReg(1).slot(), 0xaaaa_aaaa_5555_5555);
        assert_eq!(k, x);
        let mut k = [0u64; KEY_WORDS];
        for i in 0..4 {
            put(&mut k, Reg(i).slot(), u128::from(i) + 1);
        }
        let mut x = [0u64; KEY_WORDS];
        put(&mut x, XXReg(0).slot(), (1u128 << 96) | (2u128 << 64) | (3u128 << 32) | 4);
        assert_eq!(k, x);
    }

    #[test]
    fn bits_roundtrip() {
        let mut f = vec![0u8; 40];
        for (off, len, v) in [(0u32, 48u32, 0x0123_4567_89abu128), (3, 5, 0x15), (208, 32, 0x0202_0203), (7, 128, u128::MAX - 5), (100, 1, 1)] {
            write_bits(&mut f, off, len, v);
            assert_eq!(read_bits(&f, off, len), (v, true), "offset {off} len {len}");
        }
        assert_eq!(read_bits(&f, 300, 32).1, false);
    }

    #[test]
    fn fields_do_not_overlap_within_a_word() {
        use Field::*;
        // One field per place: the others share a place with a field of another protocol
        // (SCTP/TCP/UDP ports, flow label/IPv4, ND target/ARP SPA+TPA, ND SLL/TLL with ARP SHA/THA).
        let mut all = vec![InPort, EthType, VlanVid, VlanPcp, Metadata, EthDst, IpProto, IpDscp, IpEcn, EthSrc, ArpOp, Ipv4Src, Ipv4Dst, MplsLabel, MplsTc, MplsBos, TcpSrc, TcpDst, ArpSpa, ArpTpa, Ipv6Src, Ipv6Dst, ArpSha, ArpTha, TunnelId];
        all.extend([PktMark, TcpFlags, IpFrag, NwTtl, MplsTtl]);
        all.extend((0..N_REGS as u8).map(Reg));
        let mut used = [0u64; KEY_WORDS];
        for f in all {
            let mut m = [0u64; KEY_WORDS];
            let ones = if f.bits() == 128 { u128::MAX } else { (1u128 << f.bits()) - 1 };
            put(&mut m, f.slot(), ones);
            for w in 0..KEY_WORDS {
                assert_eq!(used[w] & m[w], 0, "{f:?} overlaps in word {w}");
                used[w] |= m[w];
            }
        }
        assert!(used[POF_BASE..].iter().all(|w| *w == 0));
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    /// Fields that share bits on purpose: they never exist in one packet.
    fn aliases(a: Field, b: Field) -> bool {
        use Field::*;
        let l4 = |f: Field| matches!(f, TcpSrc | TcpDst | UdpSrc | UdpDst | SctpSrc | SctpDst | Icmpv4Type | Icmpv4Code | Icmpv6Type | Icmpv6Code);
        // fields of network protocols no frame carries together (IPv4, IPv6, ARP) may share bits
        let net = |f: Field| match f {
            Ipv4Src | Ipv4Dst => Some(4),
            Ipv6Flabel | Ipv6NdTarget | Ipv6NdSll | Ipv6NdTll => Some(6),
            ArpSpa | ArpTpa | ArpSha | ArpTha | ArpOp => Some(0),
            _ => None,
        };
        (l4(a) && l4(b)) || matches!((net(a), net(b)), (Some(x), Some(y)) if x != y)
            // (NSH sits in the IPv6 address words: a 0x894f frame has no IPv6 header)
            || crate::nsh::is_nsh(a) && matches!(b, Ipv6Src | Ipv6Dst) || crate::nsh::is_nsh(b) && matches!(a, Ipv6Src | Ipv6Dst)
    }

    fn bits(f: Field) -> Vec<(usize, u32)> {
        let s = f.slot();
        if s.bits > 64 {
            (0..64).flat_map(|b| [(s.word, b), (s.word + 1, b)]).collect()
        } else {
            (s.shift..s.shift + s.bits).map(|b| (s.word, b)).collect()
        }
    }

    #[test]
    fn fixed_fields_do_not_overlap_in_the_key() {
        let names = [
            "in_port", "metadata", "eth_dst", "eth_src", "eth_type", "vlan_vid", "vlan_pcp", "ip_dscp", "ip_ecn",
            "ip_proto", "ipv4_src", "ipv4_dst", "ipv6_src", "ipv6_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst",
            "icmpv4_type", "icmpv4_code", "icmpv6_type", "icmpv6_code", "arp_op", "arp_spa", "arp_tpa", "mpls_label",
            "pkt_mark", "tunnel_id", "ipv6_nd_target", "ipv6_nd_sll", "ipv6_nd_tll", "ipv6_flabel", "mpls_tc", "mpls_bos",
            "tcp_flags", "ip_frag", "nw_ttl", "mpls_ttl", "reg0", "reg1", "reg7", "reg14", "reg15",
            "recirc_id", "tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst", "tun_gbp_id", "tun_gbp_flags", "tun_flags", "ct_state", "ct_label",
            "actset_output",
            "nsh_flags", "nsh_ttl", "nsh_mdtype", "nsh_np", "nsh_spi", "nsh_si", "nsh_c1", "nsh_c2", "nsh_c3", "nsh_c4",
        ];
        let fields: Vec<Field> = names.iter().map(|n| Field::from_name(n).expect(n)).collect();
        for (i, &a) in fields.iter().enumerate() {
            let s = a.slot();
            assert!(s.word + usize::from(s.bits > 64) < POF_BASE, "{} runs into the POF slots", a.name());
            for &b in &fields[i + 1..] {
                if a.slot().word == b.slot().word && a.slot().shift == b.slot().shift && aliases(a, b) {
                    continue;
                }
                let (x, y) = (bits(a), bits(b));
                let clash = x.iter().find(|p| y.contains(p));
                assert!(clash.is_none() || aliases(a, b), "{} and {} share key bit {:?}", a.name(), b.name(), clash);
            }
        }
    }
}
