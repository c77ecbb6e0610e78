//! NF state codec: the one versioned, compact binary every NF exports and
//! imports, whole or per flow (OpenNF-style per-flow move), plus shared
//! (multi-flow) state.
//!
//! Blob layout (little endian):
//! ```text
//! "TNFS" | kind: u8 len + bytes | version: u16 | flags: u8 (bit 0: shared present)
//!        | flows: varint n, then n × (flow key 13 B, NF-specific flow record)
//!        | shared: varint len + bytes (only with bit 0) | CRC-32C of all the above: u32
//! ```
//! Integers inside records are LEB128 varints unless fixed width is cheaper.
//! Import decodes the whole blob into fresh values first and only then hands
//! them to the NF, so a refused blob (bad magic, CRC, kind, version, truncated
//! record, trailing bytes) leaves the NF untouched.

use crate::StateError;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub const MAGIC: &[u8; 4] = b"TNFS";

/// A 5-tuple. For NFs whose state is keyed by something else (an SA, a host),
/// the NF documents how it maps its key onto these fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

impl FlowKey {
    pub fn new(src: u32, dst: u32, sport: u16, dport: u16, proto: u8) -> Self {
        FlowKey { src, dst, sport, dport, proto }
    }
    /// The key with source and destination swapped (the reply direction).
    pub fn reversed(&self) -> Self {
        FlowKey { src: self.dst, dst: self.src, sport: self.dport, dport: self.sport, proto: self.proto }
    }
    /// One key for both directions: the smaller (address, port) end first.
    pub fn canonical(&self) -> Self {
        if (self.src, self.sport) <= (self.dst, self.dport) {
            *self
        } else {
            self.reversed()
        }
    }
    /// A 64-bit mix of all fields (for sketches and consistent hashing).
    pub fn hash64(&self) -> u64 {
        let a = ((self.src as u64) << 32) | self.dst as u64;
        let b = ((self.sport as u64) << 24) | ((self.dport as u64) << 8) | self.proto as u64;
        mix64(a ^ mix64(b ^ 0x9e37_79b9_7f4a_7c15))
    }
}

/// SplitMix64 finaliser.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fast non-cryptographic hasher for flow tables (keys come from packets the
/// NF already trusts to be load; this is not a DoS-hardened table).
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(23) ^ i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Which flows a per-flow export takes: every given part must match
/// (prefixes for addresses; exact port and protocol). Empty = all flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowFilter {
    pub src: Option<(u32, u8)>,
    pub dst: Option<(u32, u8)>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    pub proto: Option<u8>,
    /// Also take the flow when the filter matches its reverse direction.
    pub either_direction: bool,
}

fn prefix_ok(p: Option<(u32, u8)>, a: u32) -> bool {
    match p {
        None => true,
        Some((_, 0)) => true,
        Some((net, len)) => {
            let m = if len >= 32 { u32::MAX } else { !(u32::MAX >> len) };
            (a & m) == (net & m)
        }
    }
}

impl FlowFilter {
    pub fn all() -> Self {
        FlowFilter::default()
    }
    /// Exactly this flow (either direction).
    pub fn exact(k: &FlowKey) -> Self {
        FlowFilter {
            src: Some((k.src, 32)),
            dst: Some((k.dst, 32)),
            sport: Some(k.sport),
            dport: Some(k.dport),
            proto: Some(k.proto),
            either_direction: true,
        }
    }
    fn one_way(&self, k: &FlowKey) -> bool {
        prefix_ok(self.src, k.src)
            && prefix_ok(self.dst, k.dst)
            && self.sport.is_none_or(|p| p == k.sport)
            && self.dport.is_none_or(|p| p == k.dport)
            && self.proto.is_none_or(|p| p == k.proto)
    }
    pub fn matches(&self, k: &FlowKey) -> bool {
        self.one_way(k) || (self.either_direction && self.one_way(&k.reversed()))
    }
    /// Parse `src=10.0.0.0/8,dst=1.2.3.4,sport=80,dport=443,proto=6,bidir`
    /// (any subset; empty string = all flows).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut f = FlowFilter::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part == "bidir" {
                f.either_direction = true;
                continue;
            }
            let (k, v) = part.split_once('=').ok_or_else(|| format!("flow filter: {part:?} is not key=value"))?;
            let num = |v: &str| v.parse::<u64>().map_err(|_| format!("flow filter: {k}={v:?} is not a number"));
            match k {
                "src" => f.src = Some(parse_prefix(v)?),
                "dst" => f.dst = Some(parse_prefix(v)?),
                "sport" => f.sport = Some(u16::try_from(num(v)?).map_err(|_| format!("flow filter: sport {v} > 65535"))?),
                "dport" => f.dport = Some(u16::try_from(num(v)?).map_err(|_| format!("flow filter: dport {v} > 65535"))?),
                "proto" => f.proto = Some(u8::try_from(num(v)?).map_err(|_| format!("flow filter: proto {v} > 255"))?),
                _ => return Err(format!("flow filter: unknown key {k:?} (src, dst, sport, dport, proto, bidir)")),
            }
        }
        Ok(f)
    }
}

/// `a.b.c.d` as a host-order u32.
pub fn parse_ipv4(s: &str) -> Result<u32, String> {
    let a: std::net::Ipv4Addr = s.trim().parse().map_err(|_| format!("{s:?} is not an IPv4 address"))?;
    Ok(u32::from(a))
}

/// `a.b.c.d/len` (or a bare address = /32).
pub fn parse_prefix(s: &str) -> Result<(u32, u8), String> {
    match s.split_once('/') {
        None => Ok((parse_ipv4(s)?, 32)),
        Some((a, l)) => {
            let len: u8 = l.parse().ok().filter(|&l| l <= 32).ok_or_else(|| format!("{s:?}: prefix length must be 0..32"))?;
            Ok((parse_ipv4(a)?, len))
        }
    }
}

// ------------------------------------------------------------------ codec

/// Append-only encoder.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes())
    }
    pub fn key(&mut self, k: &FlowKey) {
        self.u32(k.src);
        self.u32(k.dst);
        self.u16(k.sport);
        self.u16(k.dport);
        self.u8(k.proto);
    }
}

/// Decoder that names what it was reading when the blob ran out.
pub struct Reader<'a> {
    pub b: &'a [u8],
    pub pos: usize,
    pub ctx: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8], ctx: &'static str) -> Self {
        Reader { b, pos: 0, ctx }
    }
    pub fn err(&self, what: &str) -> StateError {
        StateError(format!("{} state: {} at byte {}", self.ctx, what, self.pos))
    }
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], StateError> {
        if self.b.len() - self.pos < n {
            return Err(self.err(&format!("truncated reading {what}")));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self, what: &str) -> Result<u8, StateError> {
        Ok(self.take(1, what)?[0])
    }
    pub fn u16(&mut self, what: &str) -> Result<u16, StateError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }
    pub fn u32(&mut self, what: &str) -> Result<u32, StateError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    pub fn u64(&mut self, what: &str) -> Result<u64, StateError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    pub fn var(&mut self, what: &str) -> Result<u64, StateError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8(what)?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(&format!("varint too long in {what}")))
    }
    /// A varint that must fit `max` (lengths, indexes).
    pub fn var_max(&mut self, max: u64, what: &str) -> Result<u64, StateError> {
        let v = self.var(what)?;
        if v > max {
            return Err(self.err(&format!("{what} = {v} exceeds {max}")));
        }
        Ok(v)
    }
    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8], StateError> {
        let n = self.var(what)? as usize;
        self.take(n, what)
    }
    pub fn string(&mut self, what: &str) -> Result<String, StateError> {
        let b = self.bytes(what)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.err(&format!("{what} is not UTF-8")))
    }
    pub fn bool(&mut self, what: &str) -> Result<bool, StateError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.err(&format!("{what}: {v} is not a boolean"))),
        }
    }
    pub fn key(&mut self) -> Result<FlowKey, StateError> {
        Ok(FlowKey {
            src: self.u32("flow key")?,
            dst: self.u32("flow key")?,
            sport: self.u16("flow key")?,
            dport: self.u16("flow key")?,
            proto: self.u8("flow key")?,
        })
    }
    pub fn done(&self) -> bool {
        self.pos == self.b.len()
    }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the SSE4.2
/// `crc32` instruction when the CPU has it (≈ 8 bytes per cycle), else a
/// slice-by-8 table. Both give the same value.
pub fn crc32(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the feature was just detected.
            return unsafe { crc32c_sse42(data) };
        }
    }
    crc32c_table(data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut c = !0u64;
    let mut chunks = data.chunks_exact(8);
    for ch in &mut chunks {
        c = _mm_crc32_u64(c, u64::from_le_bytes(ch.try_into().unwrap()));
    }
    let mut c = c as u32;
    for &b in chunks.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    !c
}

fn crc_tables() -> &'static [[u32; 256]; 8] {
    static T: std::sync::OnceLock<[[u32; 256]; 8]> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = [[0u32; 256]; 8];
        for i in 0..256 {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { 0x82F6_3B78 ^ (c >> 1) } else { c >> 1 };
            }
            t[0][i] = c;
        }
        for i in 0..256 {
            for k in 1..8 {
                t[k][i] = (t[k - 1][i] >> 8) ^ t[0][(t[k - 1][i] & 0xff) as usize];
            }
        }
        t
    })
}

/// Portable CRC-32C (slice-by-8).
pub fn crc32c_table(data: &[u8]) -> u32 {
    let t = crc_tables();
    let mut c = !0u32;
    let mut chunks = data.chunks_exact(8);
    for ch in &mut chunks {
        let lo = u32::from_le_bytes(ch[..4].try_into().unwrap()) ^ c;
        let hi = u32::from_le_bytes(ch[4..].try_into().unwrap());
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = t[0][((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// An NF whose state travels in the common blob. The NF says how one flow
/// record and its shared state are written and read; [`export`] and
/// [`import`] do the framing, filtering and all-or-nothing application.
pub trait Stateful {
    /// Kind name written into the blob (the NF's `kind()`).
    const KIND: &'static str;
    /// Format version of this NF's records; a blob of another version is refused.
    const VERSION: u16;
    type Flow;
    type Shared;
    /// Visit every per-flow record under its key.
    fn each_flow(&self, f: &mut dyn FnMut(&FlowKey, &Self::Flow));
    fn write_flow(&self, w: &mut Writer, v: &Self::Flow);
    fn read_flow(&self, r: &mut Reader) -> Result<Self::Flow, StateError>;
    fn write_shared(&self, w: &mut Writer);
    fn read_shared(&self, r: &mut Reader) -> Result<Self::Shared, StateError>;
    /// Apply decoded state. `replace`: drop all current flows first (a full
    /// import); otherwise merge (per-flow import: these flows overwrite).
    fn install(&mut self, flows: Vec<(FlowKey, Self::Flow)>, shared: Option<Self::Shared>, replace: bool);
}

/// Export the flows `filter` matches (and the shared state when `shared`).
pub fn export<S: Stateful>(s: &S, filter: &FlowFilter, shared: bool) -> Vec<u8> {
    let mut w = Writer::default();
    w.buf.extend_from_slice(MAGIC);
    w.u8(S::KIND.len() as u8);
    w.buf.extend_from_slice(S::KIND.as_bytes());
    w.u16(S::VERSION);
    w.u8(shared as u8);
    // Records are written in key order, so equal state gives equal bytes
    // whatever the hash tables' iteration order.
    let mut recs: Vec<(FlowKey, usize, usize)> = Vec::new();
    let mut body = Writer::default();
    let all = *filter == FlowFilter::all();
    s.each_flow(&mut |k, v| {
        if all || filter.matches(k) {
            let start = body.buf.len();
            s.write_flow(&mut body, v);
            recs.push((*k, start, body.buf.len()));
        }
    });
    recs.sort_unstable_by_key(|r| r.0);
    w.var(recs.len() as u64);
    w.buf.reserve(body.buf.len() + recs.len() * 13);
    for (k, a, b) in &recs {
        w.key(k);
        w.buf.extend_from_slice(&body.buf[*a..*b]);
    }
    if shared {
        let mut sh = Writer::default();
        s.write_shared(&mut sh);
        w.bytes(&sh.buf);
    }
    let c = crc32(&w.buf);
    w.u32(c);
    w.buf
}

/// What a blob says about itself, read without importing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobInfo {
    pub kind: String,
    pub version: u16,
    pub flows: u64,
    pub shared: bool,
}

/// Check magic and CRC and read the header.
pub fn header(blob: &[u8]) -> Result<(BlobInfo, usize), StateError> {
    if blob.len() < 4 + 1 + 2 + 1 + 1 + 4 || &blob[..4] != MAGIC {
        return Err(StateError("state blob: not a Tandem NF state blob (bad magic or too short)".into()));
    }
    let (body, tail) = blob.split_at(blob.len() - 4);
    let want = u32::from_le_bytes(tail.try_into().unwrap());
    let got = crc32(body);
    if want != got {
        return Err(StateError(format!("state blob: corrupt (CRC32 {got:08x}, blob says {want:08x})")));
    }
    let mut r = Reader::new(body, "blob");
    r.pos = 4;
    let kl = r.u8("kind length")? as usize;
    let kind = String::from_utf8(r.take(kl, "kind")?.to_vec()).map_err(|_| r.err("kind is not UTF-8"))?;
    let version = r.u16("version")?;
    let flags = r.u8("flags")?;
    if flags > 1 {
        return Err(r.err(&format!("unknown flags {flags:#x}")));
    }
    let flows = r.var("flow count")?;
    Ok((BlobInfo { kind, version, flows, shared: flags & 1 != 0 }, r.pos))
}

/// Recompute the CRC after editing a blob (for tests that forge headers).
pub fn reseal(blob: &mut Vec<u8>) {
    let n = blob.len() - 4;
    let c = crc32(&blob[..n]);
    blob[n..].copy_from_slice(&c.to_le_bytes());
}

/// Decode a blob completely, then install it. Returns the number of flows.
pub fn import<S: Stateful>(s: &mut S, blob: &[u8], replace: bool) -> Result<usize, StateError> {
    let (info, start) = header(blob)?;
    if info.kind != S::KIND {
        return Err(StateError(format!("state blob is for NF kind {:?}, this NF is {:?}", info.kind, S::KIND)));
    }
    if info.version != S::VERSION {
        return Err(StateError(format!(
            "{} state: blob has format version {}, this NF reads version {}",
            S::KIND,
            info.version,
            S::VERSION
        )));
    }
    let body = &blob[..blob.len() - 4];
    let mut r = Reader::new(body, S::KIND);
    r.pos = start;
    if info.flows > (body.len() / 13) as u64 {
        return Err(r.err(&format!("flow count {} cannot fit in the blob", info.flows)));
    }
    let mut flows = Vec::with_capacity(info.flows as usize);
    for _ in 0..info.flows {
        let k = r.key()?;
        let v = s.read_flow(&mut r)?;
        flows.push((k, v));
    }
    let shared = if info.shared {
        let sb = r.bytes("shared state")?;
        let mut sr = Reader::new(sb, S::KIND);
        let v = s.read_shared(&mut sr)?;
        if !sr.done() {
            return Err(sr.err("trailing bytes after shared state"));
        }
        Some(v)
    } else {
        None
    };
    if !r.done() {
        return Err(r.err("trailing bytes after the last record"));
    }
    let n = flows.len();
    s.install(flows, shared, replace);
    Ok(n)
}

/// Implements the four state methods of `NetworkFunction` through [`Stateful`].
#[macro_export]
macro_rules! state_methods {
    () => {
        fn export_state(&self) -> Vec<u8> {
            $crate::state::export(self, &$crate::state::FlowFilter::all(), true)
        }
        fn import_state(&mut self, blob: &[u8]) -> Result<(), $crate::StateError> {
            $crate::state::import(self, blob, true).map(|_| ())
        }
        fn export_flows(&self, filter: &$crate::state::FlowFilter, shared: bool) -> Vec<u8> {
            $crate::state::export(self, filter, shared)
        }
        fn import_flows(&mut self, blob: &[u8]) -> Result<usize, $crate::StateError> {
            $crate::state::import(self, blob, false)
        }
    };
}

/// The `NetworkFunction` methods the stateful NFs share, inside their
/// `impl NetworkFunction`: `kind` (their `Stateful::KIND`) and `ports` (their
/// `ports` field); with `$flows`, also `counters` (their `counters` list),
/// `flow_count` (the length of the per-flow map `$flows`) and the four state
/// methods (`state_methods!`).
#[macro_export]
macro_rules! nf_methods {
    () => {
        fn kind(&self) -> &'static str {
            <Self as $crate::state::Stateful>::KIND
        }
        fn ports(&self) -> u8 {
            self.ports
        }
    };
    ($flows:ident) => {
        $crate::nf_methods!();
        fn counters(&self) -> Vec<(String, u64)> {
            self.counters.list()
        }
        fn flow_count(&self) -> usize {
            self.$flows.len()
        }
        $crate::state_methods!();
    };
}

/// `Stateful::each_flow` of an NF whose per-flow records are the map `$flows` (key -> record).
#[macro_export]
macro_rules! each_flow_of {
    ($flows:ident) => {
        fn each_flow(&self, f: &mut dyn FnMut(&$crate::state::FlowKey, &Self::Flow)) {
            for (k, v) in &self.$flows {
                f(k, v)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_crc() {
        let mut w = Writer::default();
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            w.var(v);
        }
        let mut r = Reader::new(&w.buf, "t");
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(r.var("v").unwrap(), v);
        }
        assert!(r.done());
        assert!(r.var("x").unwrap_err().0.contains("truncated reading x"));
        assert_eq!(crc32(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_table(b"123456789"), 0xE306_9283);
        let long: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        assert_eq!(crc32(&long), crc32c_table(&long));
    }

    #[test]
    fn filters() {
        let k = FlowKey::new(0x0a000001, 0x0b000001, 1000, 80, 6);
        assert!(FlowFilter::parse("src=10.0.0.0/8,dport=80").unwrap().matches(&k));
        assert!(!FlowFilter::parse("src=10.0.0.0/8,dport=81").unwrap().matches(&k));
        assert!(FlowFilter::parse("dst=10.0.0.1,bidir").unwrap().matches(&k));
        assert!(!FlowFilter::parse("dst=10.0.0.1").unwrap().matches(&k));
        assert!(FlowFilter::exact(&k.reversed()).matches(&k));
        assert!(FlowFilter::parse("color=red").unwrap_err().contains("unknown key"));
        assert!(FlowFilter::parse("src=10.0.0.0/40").unwrap_err().contains("0..32"));
    }
}
