//! Open vSwitch 3.1's flow hashes and the choices built on them, bit for bit:
//! `flow_hash_fields()` (lib/flow.c) over the seven `NX_HASH_FIELDS_*` field sets,
//! the Jenkins (lib/jhash.c) and murmur-style (lib/hash.h, the portable build
//! without SSE 4.2) hashes under it, `multipath`'s four link algorithms
//! (lib/multipath.c) and `bundle`'s member choice (lib/bundle.c). Values were
//! checked against ovs-vswitchd 3.1 (`ofproto/trace`); the unit tests below hold
//! some of them.
//! State: none. Cost: a few dozen multiplications per hash; `hrw` loops over links.

use crate::parse::Headers;

/// `NX_HASH_FIELDS_*`: what a multipath or bundle hashes (wire numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashFields {
    EthSrc = 0,
    SymmetricL4 = 1,
    SymmetricL3L4 = 2,
    SymmetricL3L4Udp = 3,
    NwSrc = 4,
    NwDst = 5,
    SymmetricL3 = 6,
}

impl HashFields {
    pub fn from_code(code: u16) -> Option<Self> {
        use HashFields::*;
        [EthSrc, SymmetricL4, SymmetricL3L4, SymmetricL3L4Udp, NwSrc, NwDst, SymmetricL3].get(usize::from(code)).copied()
    }
    pub fn name(self) -> &'static str {
        use HashFields::*;
        match self {
            EthSrc => "eth_src",
            SymmetricL4 => "symmetric_l4",
            SymmetricL3L4 => "symmetric_l3l4",
            SymmetricL3L4Udp => "symmetric_l3l4+udp",
            NwSrc => "nw_src",
            NwDst => "nw_dst",
            SymmetricL3 => "symmetric_l3",
        }
    }
}

/// `NX_MP_ALG_*`: how multipath turns the hash into a link number (wire numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MultipathAlgorithm {
    ModuloN = 0,
    HashThreshold = 1,
    Hrw = 2,
    IterHash = 3,
}

impl MultipathAlgorithm {
    pub fn from_code(code: u16) -> Option<Self> {
        use MultipathAlgorithm::*;
        [ModuloN, HashThreshold, Hrw, IterHash].get(usize::from(code)).copied()
    }
    pub fn name(self) -> &'static str {
        match self {
            MultipathAlgorithm::ModuloN => "modulo_n",
            MultipathAlgorithm::HashThreshold => "hash_threshold",
            MultipathAlgorithm::Hrw => "hrw",
            MultipathAlgorithm::IterHash => "iter_hash",
        }
    }
}

const ETH_TYPE_IP: u16 = 0x0800;
const ETH_TYPE_IPV6: u16 = 0x86dd;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const IPPROTO_SCTP: u8 = 132;

fn mhash_add(hash: u32, data: u32) -> u32 {
    let data = data.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
    (hash ^ data).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

fn mhash_finish(mut hash: u32) -> u32 {
    hash ^= hash >> 16;
    hash = hash.wrapping_mul(0x85eb_ca6b);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(0xc2b2_ae35);
    hash ^ (hash >> 16)
}

fn hash_add64(hash: u32, x: u64) -> u32 {
    mhash_add(mhash_add(hash, x as u32), (x >> 32) as u32)
}

fn hash_finish(hash: u32, fin: u32) -> u32 {
    mhash_finish(hash ^ fin)
}

/// lib/hash.h's `hash_2words`.
pub fn hash_2words(x: u32, y: u32) -> u32 {
    hash_finish(mhash_add(mhash_add(x, 0), y), 8)
}

fn jhash_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn jhash_final(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(14));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(11));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(25));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(16));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(4));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(14));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(24));
}

/// lib/jhash.c's `jhash_bytes` (32-bit words read little-endian, as on x86).
pub fn jhash_bytes(p: &[u8], basis: u32) -> u32 {
    let word = |s: &[u8]| {
        let mut w = [0u8; 4];
        w[..s.len()].copy_from_slice(s);
        u32::from_le_bytes(w)
    };
    let init = 0xdead_beefu32.wrapping_add(p.len() as u32).wrapping_add(basis);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut rest = p;
    while rest.len() >= 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        jhash_mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if !rest.is_empty() {
        let mut tail = [0u8; 12];
        tail[..rest.len()].copy_from_slice(rest);
        a = a.wrapping_add(word(&tail[0..4]));
        b = b.wrapping_add(word(&tail[4..8]));
        c = c.wrapping_add(word(&tail[8..12]));
        jhash_final(&mut a, &mut b, &mut c);
    }
    c
}

fn xor<const N: usize>(a: [u8; N], b: [u8; N]) -> [u8; N] {
    let mut out = [0u8; N];
    for i in 0..N {
        out[i] = a[i] ^ b[i];
    }
    out
}

/// The VLAN ids of the (up to two) tags, XORed (OVS's `vlans[i].tci & VLAN_VID_MASK`).
fn vids(h: &Headers) -> u16 {
    h.vlans.iter().fold(0, |acc, t| acc ^ (t.vid & 0x0fff))
}

/// (source, destination) addresses as OVS's `struct flow` holds them for IP: 16 bytes,
/// an IPv4 address in the first four. None for a packet that is not IPv4 or IPv6.
fn addrs(h: &Headers) -> Option<([u8; 16], [u8; 16])> {
    let mut s = [0u8; 16];
    let mut d = [0u8; 16];
    match h.eth_type {
        ETH_TYPE_IP => {
            s[..4].copy_from_slice(&h.ipv4_src.unwrap_or_default());
            d[..4].copy_from_slice(&h.ipv4_dst.unwrap_or_default());
        }
        ETH_TYPE_IPV6 => {
            s = h.ipv6_src.unwrap_or_default();
            d = h.ipv6_dst.unwrap_or_default();
        }
        _ => return None,
    }
    Some((s, d))
}

fn ports_xor(h: &Headers) -> u16 {
    h.l4_src.unwrap_or(0) ^ h.l4_dst.unwrap_or(0)
}

fn symmetric_l4(h: &Headers, basis: u32) -> u32 {
    // struct { union { be32 ipv4; in6_addr ipv6 }; be16 eth_type, vlan_tci, tp_port;
    //          eth_addr; u8 ip_proto; } = 29 bytes + 3 of padding, zeroed
    let mut f = [0u8; 32];
    f[16..18].copy_from_slice(&h.eth_type.to_be_bytes());
    f[18..20].copy_from_slice(&vids(h).to_be_bytes());
    f[22..28].copy_from_slice(&xor(h.eth_src, h.eth_dst));
    if let Some((s, d)) = addrs(h) {
        let n = if h.eth_type == ETH_TYPE_IP { 4 } else { 16 };
        f[..n].copy_from_slice(&xor(s, d)[..n]);
        let proto = h.ip_proto.unwrap_or(0);
        f[28] = proto;
        if proto == IPPROTO_TCP || proto == IPPROTO_SCTP {
            f[20..22].copy_from_slice(&ports_xor(h).to_be_bytes());
        }
    }
    jhash_bytes(&f, basis)
}

fn symmetric_l2(h: &Headers, basis: u32) -> u32 {
    let mut w = [0u8; 12];
    w[0..2].copy_from_slice(&h.eth_type.to_be_bytes());
    w[2..4].copy_from_slice(&vids(h).to_be_bytes());
    w[4..10].copy_from_slice(&xor(h.eth_src, h.eth_dst));
    let mut hash = basis;
    for i in 0..3 {
        hash = mhash_add(hash, u32::from_le_bytes(w[4 * i..4 * i + 4].try_into().unwrap()));
    }
    hash_finish(hash, basis)
}

fn symmetric_l3l4(h: &Headers, basis: u32, udp: bool) -> u32 {
    let Some((s, d)) = addrs(h) else {
        return symmetric_l2(h, basis);
    };
    let x = xor(s, d);
    let mut hash = basis;
    if h.eth_type == ETH_TYPE_IP {
        hash = mhash_add(hash, u32::from_le_bytes(x[..4].try_into().unwrap()));
    } else {
        hash = hash_add64(hash, u64::from_le_bytes(x[..8].try_into().unwrap()));
        hash = hash_add64(hash, u64::from_le_bytes(x[8..].try_into().unwrap()));
    }
    let proto = h.ip_proto.unwrap_or(0);
    hash = mhash_add(hash, u32::from(proto));
    let ports = proto == IPPROTO_TCP || proto == IPPROTO_SCTP || (udp && proto == IPPROTO_UDP);
    if h.ip_frag == 0 && ports {
        hash = mhash_add(hash, u32::from(u16::from_le_bytes(ports_xor(h).to_be_bytes())));
    }
    hash_finish(hash, basis)
}

fn symmetric_l3(h: &Headers, basis: u32) -> u32 {
    let mut f = [0u8; 20]; // union { be32; in6_addr } + be16 eth_type, padded
    f[16..18].copy_from_slice(&h.eth_type.to_be_bytes());
    if let Some((s, d)) = addrs(h) {
        let n = if h.eth_type == ETH_TYPE_IP { 4 } else { 16 };
        f[..n].copy_from_slice(&xor(s, d)[..n]);
    }
    jhash_bytes(&f, basis)
}

fn one_addr(h: &Headers, src: bool, basis: u32) -> u32 {
    match h.eth_type {
        ETH_TYPE_IP => jhash_bytes(&(if src { h.ipv4_src } else { h.ipv4_dst }).unwrap_or_default(), basis),
        ETH_TYPE_IPV6 => jhash_bytes(&(if src { h.ipv6_src } else { h.ipv6_dst }).unwrap_or_default(), basis),
        _ => basis,
    }
}

/// lib/flow.c's `flow_hash_fields(flow, fields, basis)` for a parsed frame.
pub fn flow_hash_fields(h: &Headers, fields: HashFields, basis: u16) -> u32 {
    let basis = u32::from(basis);
    match fields {
        HashFields::EthSrc => jhash_bytes(&h.eth_src, basis),
        HashFields::SymmetricL4 => symmetric_l4(h, basis),
        HashFields::SymmetricL3L4 => symmetric_l3l4(h, basis, false),
        HashFields::SymmetricL3L4Udp => symmetric_l3l4(h, basis, true),
        HashFields::NwSrc => one_addr(h, true, basis),
        HashFields::NwDst => one_addr(h, false, basis),
        HashFields::SymmetricL3 => symmetric_l3(h, basis),
    }
}

fn round_up_pow2(x: u32) -> u32 {
    let mut x = x - 1;
    x |= x >> 1;
    x |= x >> 2;
    x |= x >> 4;
    x |= x >> 8;
    x + 1
}

fn iter_hash(hash: u32, n_links: u32, mut modulo: u32) -> u16 {
    if modulo < n_links || modulo / 2 > n_links {
        modulo = round_up_pow2(n_links);
    }
    let mut i = 0u32;
    loop {
        let link = (hash_2words(hash, i) % modulo) as u16;
        i += 1;
        if u32::from(link) < n_links {
            return link;
        }
    }
}

/// lib/multipath.c's `multipath_algorithm`: the link (0 .. n_links-1) for `hash`.
/// `n_links` is 1 ..= 65536.
pub fn multipath_link(hash: u32, algorithm: MultipathAlgorithm, n_links: u32, arg: u32) -> u16 {
    match algorithm {
        MultipathAlgorithm::ModuloN => (hash % n_links) as u16,
        MultipathAlgorithm::HashThreshold => {
            if n_links == 1 {
                0
            } else {
                (hash / (u32::MAX / n_links + 1)) as u16
            }
        }
        MultipathAlgorithm::Hrw if n_links <= 64 => {
            let (mut best, mut best_weight) = (0u16, hash_2words(hash, 0));
            for link in 1..n_links {
                let w = hash_2words(hash, link);
                if w > best_weight {
                    best = link as u16;
                    best_weight = w;
                }
            }
            best
        }
        MultipathAlgorithm::Hrw => iter_hash(hash, n_links, 0),
        MultipathAlgorithm::IterHash => iter_hash(hash, n_links, arg),
    }
}

/// lib/bundle.c's member choice: the index of the chosen member among `n` whose
/// liveness `enabled(i)` tells, or None when none is. `hrw`: the enabled member with
/// the largest `hash_2words(i, hash)` (the first on a tie); else active-backup: the
/// first enabled one.
pub fn bundle_member(hrw: bool, hash: u32, n: usize, enabled: impl Fn(usize) -> bool) -> Option<usize> {
    if !hrw {
        return (0..n).find(|&i| enabled(i));
    }
    let mut best: Option<(usize, u32)> = None;
    for i in 0..n {
        if enabled(i) {
            let w = hash_2words(i as u32, hash);
            if best.map_or(true, |(_, bw)| w > bw) {
                best = Some((i, w));
            }
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::HashFields::*;
    use super::*;
    use crate::parse::parse_frame;

    // Frames (hex) and, per frame, field set, basis and the hash ovs-vswitchd 3.1 computed
    // (`ofproto/trace` of the frame through `multipath(F,B,modulo_n,65536,0,reg0[0..15])`
    // and the same with `hash_threshold` into reg1: the low and high halves). LLDP, TCP,
    // UDP, ICMP, SCTP, a first IPv4 fragment, a VLAN tag, TCP and UDP over IPv6, ARP.
    const FRAMES: [&str; 20] = [
        "a54dca182530bb1d6d132cde88cc00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "d6237b2ed91e3f721fcb1971080045000028000100004006000094d6493c9d5c346017d9442f0000000000000000500203e800000000",
        "be31201e69fedaa0eee8b99908004500001c00010000401100007c2999fdafe593257f315c0a00080000",
        "3cd654af4dfad71427a0aeb308004500001c0001000040010000232f8af2211f9ee40800000000000000",
        "91c5b10becb5563bfc1e6f930800450000200001000040840000cbc8fe2955e5cd8e42387ec70000000000000000",
        "46dc8ed4b7c2764d2a5a4d760800450000280001200040060000f85d8690024ad6bd7777062d0000000000000000500203e800000000",
        "401be9c8cbccc935f6cd1f6181000a3208004500001c0001000040110000e15338ae1a34004d227b6ae300080000",
        "33ba0d246ac04c81b1baf23e86dd6000000000140640eef5f79f2b4934af87f5520b69b94b0d982e85bb55b672a872637acd7466fcb63b0ff9e40000000000000000500203e800000000",
        "0e0e8ff18463b0e4b2ba297086dd6000000000081140f064ac68f700f5b02b3dc666f45bdeaa2ccaedcd2b5157410e4dee4af2b34f43344d742500080000",
        "0a073447de636c0e806c957b080600010800060400010000000000000000000000000000000000000000",
        "a684d6431fb5ead7424d09e188cc00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "5d024c5848f23d1fa6f7361d08004500002800010000400600008d1532e70e20e2a67f3a61f20000000000000000500203e800000000",
        "668de7f47e8467e546d53ec808004500001c0001000040110000257bdb256c9b3e4fe25da1c800080000",
        "bb498146ef7030cbf953725208004500001c0001000040010000add764b6a32fbb090800000000000000",
        "adeae109c4a997203975352b0800450000200001000040840000145c8a42d884cf4c87f88b390000000000000000",
        "fda72d8e1d5dd92589082d85080045000028000120004006000022873ee805add5892ae071df0000000000000000500203e800000000",
        "167a385286195c679f9c69948100042208004500001c00010000401100008ab1098012070961e4315b1500080000",
        "f37de436ddfdc99d6e75af6586dd6000000000140640b11b42072482dc531c2bc3907c9617eb5e5089e40186baa8a57d119e6fb65d004789cf340000000000000000500203e800000000",
        "abc32af38e667f022e872d4986dd6000000000081140c90b999b772b4fc7a6fd4c914a16db4708752b0f1544b835c0e719097dfa8701cc8c155500080000",
        "e9232f21f2812687786976eb080600010800060400010000000000000000000000000000000000000000",
    ];
    const VECTORS: [(usize, HashFields, u16, u32); 140] = [
        (0, EthSrc, 65535, 0xfc56db45),
        (0, SymmetricL4, 65535, 0xd748b79a),
        (0, SymmetricL3L4, 0, 0x8478362a),
        (0, SymmetricL3L4Udp, 65535, 0x88000ec4),
        (0, NwSrc, 50, 0x00000032),
        (0, NwDst, 0, 0x00000000),
        (0, SymmetricL3, 1, 0x323e197a),
        (1, EthSrc, 0, 0xbcbe7c04),
        (1, SymmetricL4, 1, 0xae66b530),
        (1, SymmetricL3L4, 50, 0x462f2269),
        (1, SymmetricL3L4Udp, 50, 0x462f2269),
        (1, NwSrc, 50, 0x8bcd8777),
        (1, NwDst, 1, 0xfa856e17),
        (1, SymmetricL3, 0, 0x9be1591f),
        (2, EthSrc, 65535, 0xbd74bd4c),
        (2, SymmetricL4, 0, 0xaa15a503),
        (2, SymmetricL3L4, 65535, 0x89c4a7ae),
        (2, SymmetricL3L4Udp, 50, 0x97a0d047),
        (2, NwSrc, 0, 0x3e6428cd),
        (2, NwDst, 1, 0x4d9083e7),
        (2, SymmetricL3, 65535, 0x05c655ce),
        (3, EthSrc, 50, 0x7d97525b),
        (3, SymmetricL4, 50, 0x009adc3a),
        (3, SymmetricL3L4, 65535, 0x7945ce9d),
        (3, SymmetricL3L4Udp, 65535, 0x7945ce9d),
        (3, NwSrc, 65535, 0x8a5dbf53),
        (3, NwDst, 0, 0x7a2db76a),
        (3, SymmetricL3, 1, 0xf2f461c5),
        (4, EthSrc, 50, 0xda0958b0),
        (4, SymmetricL4, 0, 0x7707bb78),
        (4, SymmetricL3L4, 65535, 0x4c100029),
        (4, SymmetricL3L4Udp, 0, 0x2bbd385e),
        (4, NwSrc, 50, 0xcd54923e),
        (4, NwDst, 65535, 0xe19b250e),
        (4, SymmetricL3, 0, 0x0cd45573),
        (5, EthSrc, 65535, 0xee9a900d),
        (5, SymmetricL4, 50, 0xc136b1ef),
        (5, SymmetricL3L4, 65535, 0xea487a12),
        (5, SymmetricL3L4Udp, 1, 0x0ba08ee6),
        (5, NwSrc, 1, 0xb8e34629),
        (5, NwDst, 0, 0x25906040),
        (5, SymmetricL3, 0, 0x9843b8ca),
        (6, EthSrc, 1, 0xc1e9f63a),
        (6, SymmetricL4, 50, 0x69d8cc84),
        (6, SymmetricL3L4, 50, 0x3bff606c),
        (6, SymmetricL3L4Udp, 1, 0x4c88d7d9),
        (6, NwSrc, 50, 0x755b62b5),
        (6, NwDst, 0, 0x8df1fb4c),
        (6, SymmetricL3, 50, 0x70836798),
        (7, EthSrc, 1, 0x475ef6e8),
        (7, SymmetricL4, 65535, 0xa11e6341),
        (7, SymmetricL3L4, 65535, 0x08b40dff),
        (7, SymmetricL3L4Udp, 65535, 0x08b40dff),
        (7, NwSrc, 0, 0xca2f4878),
        (7, NwDst, 1, 0x9daa534c),
        (7, SymmetricL3, 0, 0xbb5af4f3),
        (8, EthSrc, 65535, 0xaebe9e1b),
        (8, SymmetricL4, 65535, 0x015b1e27),
        (8, SymmetricL3L4, 65535, 0xc47cf7f0),
        (8, SymmetricL3L4Udp, 50, 0x1b39275b),
        (8, NwSrc, 1, 0xcb1fde7b),
        (8, NwDst, 65535, 0x95ee2f32),
        (8, SymmetricL3, 50, 0xc3a231c7),
        (9, EthSrc, 65535, 0xd6278a66),
        (9, SymmetricL4, 50, 0xa80654ae),
        (9, SymmetricL3L4, 0, 0x27d079ea),
        (9, SymmetricL3L4Udp, 50, 0x92a47e92),
        (9, NwSrc, 0, 0x00000000),
        (9, NwDst, 50, 0x00000032),
        (9, SymmetricL3, 50, 0xd6c87f81),
        (10, EthSrc, 65535, 0x40d076dd),
        (10, SymmetricL4, 0, 0xd3da66be),
        (10, SymmetricL3L4, 1, 0x556d909b),
        (10, SymmetricL3L4Udp, 0, 0x3e96c097),
        (10, NwSrc, 50, 0x00000032),
        (10, NwDst, 50, 0x00000032),
        (10, SymmetricL3, 50, 0x874b7e3a),
        (11, EthSrc, 0, 0xeec5fbc5),
        (11, SymmetricL4, 65535, 0x51c0c60a),
        (11, SymmetricL3L4, 65535, 0x8b6f720b),
        (11, SymmetricL3L4Udp, 0, 0x3377c9e0),
        (11, NwSrc, 50, 0x2af5fd5a),
        (11, NwDst, 65535, 0x88376ccd),
        (11, SymmetricL3, 50, 0x18284fba),
        (12, EthSrc, 0, 0x91ff39f3),
        (12, SymmetricL4, 50, 0xd1e2253b),
        (12, SymmetricL3L4, 0, 0x750d7cc3),
        (12, SymmetricL3L4Udp, 0, 0x6c57e27d),
        (12, NwSrc, 50, 0x94586448),
        (12, NwDst, 1, 0x39c53b76),
        (12, SymmetricL3, 1, 0x68aae745),
        (13, EthSrc, 50, 0xb533e216),
        (13, SymmetricL4, 65535, 0x705c6bfc),
        (13, SymmetricL3L4, 50, 0x7000aaf0),
        (13, SymmetricL3L4Udp, 1, 0x4aed61ee),
        (13, NwSrc, 50, 0x021932cc),
        (13, NwDst, 65535, 0x38409e5d),
        (13, SymmetricL3, 0, 0xb5c15e1c),
        (14, EthSrc, 65535, 0x8808342b),
        (14, SymmetricL4, 1, 0xa78fe09f),
        (14, SymmetricL3L4, 0, 0xdd926703),
        (14, SymmetricL3L4Udp, 0, 0xdd926703),
        (14, NwSrc, 65535, 0xed3c3fd3),
        (14, NwDst, 65535, 0x9c718913),
        (14, SymmetricL3, 1, 0x49ca99f0),
        (15, EthSrc, 50, 0xfe515c0d),
        (15, SymmetricL4, 65535, 0xada22ca5),
        (15, SymmetricL3L4, 0, 0x466fc25c),
        (15, SymmetricL3L4Udp, 1, 0xe8e6a263),
        (15, NwSrc, 1, 0x72396442),
        (15, NwDst, 65535, 0xdc02fd1c),
        (15, SymmetricL3, 65535, 0x6857b492),
        (16, EthSrc, 50, 0x0d8aeae8),
        (16, SymmetricL4, 50, 0x7d1fe863),
        (16, SymmetricL3L4, 50, 0x264b942c),
        (16, SymmetricL3L4Udp, 50, 0xf4686ce1),
        (16, NwSrc, 50, 0xbee88f4f),
        (16, NwDst, 65535, 0x21b29351),
        (16, SymmetricL3, 1, 0xf41e6807),
        (17, EthSrc, 50, 0xa9d1a681),
        (17, SymmetricL4, 65535, 0xe1281c3c),
        (17, SymmetricL3L4, 65535, 0x18c95e46),
        (17, SymmetricL3L4Udp, 0, 0xc8137339),
        (17, NwSrc, 1, 0x83df045c),
        (17, NwDst, 1, 0x73a35069),
        (17, SymmetricL3, 0, 0xef8d64d8),
        (18, EthSrc, 1, 0xf4c879e8),
        (18, SymmetricL4, 65535, 0x9f873816),
        (18, SymmetricL3L4, 1, 0xe609f003),
        (18, SymmetricL3L4Udp, 65535, 0x38b94e6f),
        (18, NwSrc, 50, 0xce41f367),
        (18, NwDst, 65535, 0x5719d141),
        (18, SymmetricL3, 65535, 0x995540b8),
        (19, EthSrc, 1, 0x9d3c7ad4),
        (19, SymmetricL4, 1, 0xe18620b6),
        (19, SymmetricL3L4, 1, 0x57a3d991),
        (19, SymmetricL3L4Udp, 0, 0x4ad69f5f),
        (19, NwSrc, 1, 0x00000001),
        (19, NwDst, 50, 0x00000032),
        (19, SymmetricL3, 0, 0x82e2b052),
    ];
    // multipath(symmetric_l4,7,ALG,N,ARG,reg0[0..15]) on FRAMES[1], by ovs-vswitchd 3.1
    const MP: [(MultipathAlgorithm, u32, u32, u16); 36] = [
        (MultipathAlgorithm::ModuloN, 1, 0, 0),
        (MultipathAlgorithm::ModuloN, 2, 0, 0),
        (MultipathAlgorithm::ModuloN, 3, 5, 2),
        (MultipathAlgorithm::ModuloN, 7, 8, 1),
        (MultipathAlgorithm::ModuloN, 64, 0, 54),
        (MultipathAlgorithm::ModuloN, 65, 0, 22),
        (MultipathAlgorithm::ModuloN, 100, 128, 42),
        (MultipathAlgorithm::ModuloN, 1000, 2000, 542),
        (MultipathAlgorithm::ModuloN, 65536, 70000, 35638),
        (MultipathAlgorithm::HashThreshold, 1, 0, 0),
        (MultipathAlgorithm::HashThreshold, 2, 0, 0),
        (MultipathAlgorithm::HashThreshold, 3, 5, 0),
        (MultipathAlgorithm::HashThreshold, 7, 8, 0),
        (MultipathAlgorithm::HashThreshold, 64, 0, 1),
        (MultipathAlgorithm::HashThreshold, 65, 0, 1),
        (MultipathAlgorithm::HashThreshold, 100, 128, 2),
        (MultipathAlgorithm::HashThreshold, 1000, 2000, 21),
        (MultipathAlgorithm::HashThreshold, 65536, 70000, 1414),
        (MultipathAlgorithm::Hrw, 1, 0, 0),
        (MultipathAlgorithm::Hrw, 2, 0, 1),
        (MultipathAlgorithm::Hrw, 3, 5, 1),
        (MultipathAlgorithm::Hrw, 7, 8, 1),
        (MultipathAlgorithm::Hrw, 64, 0, 7),
        (MultipathAlgorithm::Hrw, 65, 0, 7),
        (MultipathAlgorithm::Hrw, 100, 128, 70),
        (MultipathAlgorithm::Hrw, 1000, 2000, 838),
        (MultipathAlgorithm::Hrw, 65536, 70000, 46918),
        (MultipathAlgorithm::IterHash, 1, 0, 0),
        (MultipathAlgorithm::IterHash, 2, 0, 0),
        (MultipathAlgorithm::IterHash, 3, 5, 0),
        (MultipathAlgorithm::IterHash, 7, 8, 6),
        (MultipathAlgorithm::IterHash, 64, 0, 6),
        (MultipathAlgorithm::IterHash, 65, 0, 7),
        (MultipathAlgorithm::IterHash, 100, 128, 70),
        (MultipathAlgorithm::IterHash, 1000, 2000, 470),
        (MultipathAlgorithm::IterHash, 65536, 70000, 30470),
    ];
    // bundle_load(symmetric_l4,7,hrw or active_backup,ofport,reg0[0..15],members:5,9,3,8,1,2)
    // on FRAMES[1] with ports 1..8 (9 does not exist), those listed admin-down: the port
    // ovs-vswitchd 3.1 loaded (0xffff: none)
    const BUNDLE: [(bool, &[u32], u32); 8] = [
        (true, &[], 8),
        (false, &[], 5),
        (true, &[3], 8),
        (false, &[3], 5),
        (true, &[3, 5, 8], 2),
        (false, &[3, 5, 8], 1),
        (true, &[1, 2, 3, 4, 5, 6, 7, 8], 65535),
        (false, &[1, 2, 3, 4, 5, 6, 7, 8], 65535),
    ];

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn flow_hashes_are_ovs_values() {
        for (i, &(frame, fields, basis, want)) in VECTORS.iter().enumerate() {
            let h = parse_frame(&unhex(FRAMES[frame])).unwrap();
            assert_eq!(flow_hash_fields(&h, fields, basis), want, "vector {i}: frame {frame} {} basis {basis}", fields.name());
        }
    }

    #[test]
    fn multipath_links_are_ovs_values() {
        let hash = flow_hash_fields(&parse_frame(&unhex(FRAMES[1])).unwrap(), SymmetricL4, 7);
        for &(alg, n, arg, want) in MP.iter() {
            assert_eq!(multipath_link(hash, alg, n, arg), want, "{} n_links {n} arg {arg}", alg.name());
        }
    }

    #[test]
    fn bundle_members_are_ovs_choices() {
        let hash = flow_hash_fields(&parse_frame(&unhex(FRAMES[1])).unwrap(), SymmetricL4, 7);
        let members = [5u32, 9, 3, 8, 1, 2];
        for &(hrw, down, want) in BUNDLE.iter() {
            let live = |i: usize| members[i] != 9 && !down.contains(&members[i]);
            let got = bundle_member(hrw, hash, members.len(), live).map_or(0xffff, |i| members[i]);
            assert_eq!(got, want, "hrw {hrw}, down {down:?}");
        }
    }
}
