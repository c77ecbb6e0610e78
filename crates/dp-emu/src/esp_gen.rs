//! Live ESP traffic: what the far end of IPsec tunnels sends to a SECGW.
//!
//! A generated source with an `EspSpec` builds, for each packet, a real inner
//! IPv4/TCP segment of one of its flows and encrypts it into an ESP tunnel-mode
//! frame (RFC 4303, AES-GCM per RFC 4106 with a 16-byte ICV), with the `ring`
//! crate the SECGW (dp-nf `secgw.rs`) decrypts with. Nothing is replayed from
//! a file, so the rate can follow any arrival process (a ramp included).
//!
//! Inner flows: flow `i` is a TCP connection from `ip_src + i / 50000` port
//! `src_port_base + i % 50000` to the template's `ip_dst`, port 80 (HTTP) or 443
//! (TLS). Its byte stream opens with an application greeting an L7 detector can
//! read: an HTTP `POST` with a `Host` header, or a TLS ClientHello with an SNI
//! extension; the rest of the stream is filler bytes (an upload). Each packet
//! carries the next bytes of its flow's stream with a matching TCP sequence
//! number (ACK|PSH, correct checksums), so the greeting may span packets. A new
//! flow picks its application by weight and its initial sequence number from
//! the source's RNG.
//! Tunnels: flow `i` rides tunnel `i % tunnels`. Each tunnel has its SA's SPI,
//! key and salt, outer addresses, and its own sequence counter (1, 2, ...;
//! 64-bit ESN: the high half goes into the AAD only; without ESN the counter
//! wraps after 2^32 − 1 as it would on a real sender). IV = the 64-bit sequence
//! number (as the SECGW's encrypt side does), outer IPv4: TTL from the tunnel,
//! DF clear, ID = low 16 bits of the sequence number.
//! Frame size: ESP pads its payload to 4 bytes, so a requested frame size of
//! `len` gives the largest ESP frame not above it (`EspSpec::frame_len`):
//! 66 bytes of headers, IV and ICV (70 with a VLAN tag) + 4·k.
//! State: per tunnel the sequence number, per active flow slot its flow id,
//! application, initial sequence number and bytes sent.
//! Cost: one AES-GCM seal per packet (≈ 1 cycle/byte on AES-NI hosts) and a
//! TCP checksum pass; wall time only (the emulated cost is the NFs').

use crate::clock::Rng;
use crate::traffic::FrameTemplate;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};

/// One tunnel: an inbound SA of the SECGW, seen from the sender.
#[derive(Debug, Clone)]
pub struct EspTunnel {
    pub spi: u32,
    /// Key material: the AES key (16 or 32 bytes) followed by the 4-byte salt (RFC 4106 §8.1).
    pub key: Vec<u8>,
    /// Outer source (the far tunnel end) and destination (the SECGW's address).
    pub src: u32,
    pub dst: u32,
    pub esn: bool,
    pub ttl: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InnerProto {
    Http,
    Tls,
}

/// An application a new inner flow may be: protocol, the name it carries, weight.
#[derive(Debug, Clone)]
pub struct InnerApp {
    pub proto: InnerProto,
    pub host: String,
    pub weight: f64,
}

#[derive(Debug, Clone)]
pub struct EspSpec {
    pub tunnels: Vec<EspTunnel>,
    pub apps: Vec<InnerApp>,
}

/// Inner IPv4 + TCP headers.
const INNER_HDRS: usize = 40;
/// The smallest frame an ESP source accepts (an inner segment with at least 2 payload bytes, no VLAN).
pub const ESP_MIN_FRAME: usize = 110;

impl EspSpec {
    /// Why this spec cannot be used, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.tunnels.is_empty() {
            return Err("esp: needs at least one tunnel".into());
        }
        for (i, t) in self.tunnels.iter().enumerate() {
            if t.key.len() != 20 && t.key.len() != 36 {
                return Err(format!("esp tunnel {i}: key material is {} bytes; AES-128-GCM needs 20, AES-256-GCM 36 (key + 4-byte salt)", t.key.len()));
            }
            if t.spi < 256 {
                return Err(format!("esp tunnel {i}: SPI {} is reserved (RFC 4303 §2.1: 1..255)", t.spi));
            }
            if t.ttl == 0 {
                return Err(format!("esp tunnel {i}: ttl must be at least 1"));
            }
        }
        if self.apps.is_empty() {
            return Err("esp: needs at least one inner application".into());
        }
        for (i, a) in self.apps.iter().enumerate() {
            if !(a.weight > 0.0 && a.weight.is_finite()) {
                return Err(format!("esp app {i}: weight must be positive, got {}", a.weight));
            }
            if a.host.is_empty() || a.host.len() > 253 || !a.host.bytes().all(|c| c.is_ascii_graphic()) {
                return Err(format!("esp app {i}: host {:?} must be 1..253 printable ASCII characters", a.host));
            }
        }
        Ok(())
    }

    /// The ESP frame length a requested frame length `len` becomes (`l2`: 14, or 18 with a VLAN tag).
    pub fn frame_len(len: usize, l2: usize) -> usize {
        let fixed = l2 + 20 + 16 + 16; // L2, outer IPv4, SPI/seq + IV, ICV
        let min = fixed + (INNER_HDRS + 2 + 2).next_multiple_of(4);
        if len <= min {
            return min;
        }
        fixed + (len - fixed) / 4 * 4
    }
}

/// Per flow slot: which flow it holds and how far its stream has got.
#[derive(Debug, Clone, Copy)]
struct FlowTx {
    id: u64,
    app: usize,
    isn: u32,
    sent: u64,
}

struct TunnelState {
    key: LessSafeKey,
    salt: [u8; 4],
    seq: u64,
}

/// The running generator of one source.
pub struct EspGen {
    spec: EspSpec,
    tunnels: Vec<TunnelState>,
    cum_weight: Vec<f64>,
    /// Each application's stream prefix (its greeting).
    greetings: Vec<Vec<u8>>,
    filler: Vec<u8>,
    slots: Vec<Option<FlowTx>>,
    inner: Vec<u8>,
}

const FILLER: usize = 1 << 16;

impl EspGen {
    pub fn new(spec: EspSpec, seed: u64) -> Result<Self, String> {
        spec.check()?;
        let tunnels = spec
            .tunnels
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (alg, klen) = if t.key.len() == 20 { (&AES_128_GCM, 16) } else { (&AES_256_GCM, 32) };
                let key = UnboundKey::new(alg, &t.key[..klen]).map_err(|_| format!("esp tunnel {i}: key rejected"))?;
                Ok(TunnelState { key: LessSafeKey::new(key), salt: t.key[klen..].try_into().unwrap(), seq: 0 })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let mut acc = 0.0;
        let cum_weight = spec
            .apps
            .iter()
            .map(|a| {
                acc += a.weight;
                acc
            })
            .collect();
        let mut rng = Rng::derive(seed, 0x657370); // "esp"
        let greetings = spec
            .apps
            .iter()
            .map(|a| match a.proto {
                InnerProto::Http => http_post(&a.host),
                InnerProto::Tls => tls_client_hello(&a.host, &mut rng),
            })
            .collect();
        let mut filler = Vec::with_capacity(FILLER);
        while filler.len() < FILLER {
            filler.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        Ok(EspGen { spec, tunnels, cum_weight, greetings, filler, slots: Vec::new(), inner: Vec::new() })
    }

    /// Packets sent so far on each tunnel (its last sequence number).
    pub fn sequence_numbers(&self) -> Vec<u64> {
        self.tunnels.iter().map(|t| t.seq).collect()
    }

    fn stream(&self, app: usize, from: u64, out: &mut Vec<u8>, n: usize) {
        let g = &self.greetings[app];
        let mut off = from as usize;
        let mut left = n;
        if off < g.len() {
            let k = left.min(g.len() - off);
            out.extend_from_slice(&g[off..off + k]);
            off += k;
            left -= k;
            if left == 0 {
                return;
            }
        }
        let mut f = (off - g.len()) % FILLER;
        while left > 0 {
            let k = left.min(FILLER - f);
            out.extend_from_slice(&self.filler[f..f + k]);
            left -= k;
            f = 0;
        }
    }

    /// Write the ESP frame of `len` bytes (rounded down by `EspSpec::frame_len`) for
    /// flow `flow` held in flow slot `slot` into `buf`.
    pub fn build(&mut self, t: &FrameTemplate, flow: u64, slot: usize, len: usize, rng: &mut Rng, buf: &mut Vec<u8>) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, None);
        }
        let fl = match self.slots[slot] {
            Some(f) if f.id == flow => f,
            _ => {
                let x = rng.unit() * self.cum_weight.last().copied().unwrap_or(1.0);
                let app = self.cum_weight.iter().position(|&c| x < c).unwrap_or(self.cum_weight.len() - 1);
                FlowTx { id: flow, app, isn: rng.next_u64() as u32, sent: 0 }
            }
        };
        let l2 = if t.vlan.is_some() { 18 } else { 14 };
        let len = EspSpec::frame_len(len, l2);
        let body = len - l2 - 20 - 16 - 16; // inner + pad (0) + pad length + next header
        let inner_len = body - 2;
        let payload = inner_len - INNER_HDRS;

        // inner IPv4 + TCP segment
        let mut inner = std::mem::take(&mut self.inner);
        inner.clear();
        inner.resize(INNER_HDRS, 0);
        let src = t.ip_src.wrapping_add((flow / 50_000) as u32);
        let sport = t.src_port_base.wrapping_add((flow % 50_000) as u16);
        let dport: u16 = match self.spec.apps[fl.app].proto {
            InnerProto::Http => 80,
            InnerProto::Tls => 443,
        };
        inner[0] = 0x45;
        inner[2..4].copy_from_slice(&(inner_len as u16).to_be_bytes());
        inner[4..6].copy_from_slice(&(fl.sent as u16).to_be_bytes());
        inner[6] = 0x40; // DF
        inner[8] = 64;
        inner[9] = 6;
        inner[12..16].copy_from_slice(&src.to_be_bytes());
        inner[16..20].copy_from_slice(&t.ip_dst.to_be_bytes());
        let c = dp_core::checksum::fold(dp_core::checksum::sum(&inner[..20], 0));
        inner[10..12].copy_from_slice(&c.to_be_bytes());
        inner[20..22].copy_from_slice(&sport.to_be_bytes());
        inner[22..24].copy_from_slice(&dport.to_be_bytes());
        inner[24..28].copy_from_slice(&fl.isn.wrapping_add(fl.sent as u32).to_be_bytes());
        inner[28..32].copy_from_slice(&0x1000_0001u32.to_be_bytes()); // the server's side never speaks
        inner[32] = 0x50;
        inner[33] = 0x18; // ACK|PSH
        inner[34..36].copy_from_slice(&64240u16.to_be_bytes());
        self.stream(fl.app, fl.sent, &mut inner, payload);
        let mut acc = dp_core::checksum::sum(&inner[12..20], 0);
        acc += 6 + (inner_len - 20) as u32;
        let c = dp_core::checksum::fold(dp_core::checksum::sum(&inner[20..], acc));
        inner[36..38].copy_from_slice(&c.to_be_bytes());
        self.slots[slot] = Some(FlowTx { sent: fl.sent + payload as u64, ..fl });

        // the tunnel's next sequence number
        let ti = (flow % self.tunnels.len() as u64) as usize;
        let tun = &self.spec.tunnels[ti];
        let ts = &mut self.tunnels[ti];
        ts.seq = if !tun.esn && ts.seq >= u32::MAX as u64 { 1 } else { ts.seq + 1 };
        let seq = ts.seq;

        // outer frame: L2, IPv4, ESP header + IV, then the sealed body and its tag
        buf.clear();
        buf.reserve(len);
        buf.extend_from_slice(&t.eth_dst);
        buf.extend_from_slice(&t.eth_src);
        if let Some(vid) = t.vlan {
            buf.extend_from_slice(&0x8100u16.to_be_bytes());
            buf.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
        }
        buf.extend_from_slice(&0x0800u16.to_be_bytes());
        let ip = buf.len();
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&((len - l2) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
        h[8] = tun.ttl;
        h[9] = 50;
        h[12..16].copy_from_slice(&tun.src.to_be_bytes());
        h[16..20].copy_from_slice(&tun.dst.to_be_bytes());
        let c = dp_core::checksum::fold(dp_core::checksum::sum(&h, 0));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        buf.extend_from_slice(&h);
        buf.extend_from_slice(&tun.spi.to_be_bytes());
        buf.extend_from_slice(&(seq as u32).to_be_bytes());
        buf.extend_from_slice(&seq.to_be_bytes());
        let ct = buf.len();
        buf.extend_from_slice(&inner);
        buf.extend_from_slice(&[0, 4]); // no padding (the body is 4-aligned), next header IPv4
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&ts.salt);
        nonce[4..].copy_from_slice(&seq.to_be_bytes());
        let mut aad = [0u8; 12];
        aad[..4].copy_from_slice(&tun.spi.to_be_bytes());
        let alen = if tun.esn {
            aad[4..8].copy_from_slice(&((seq >> 32) as u32).to_be_bytes());
            aad[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
            12
        } else {
            aad[4..8].copy_from_slice(&(seq as u32).to_be_bytes());
            8
        };
        let tag = ts
            .key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::from(&aad[..alen]), &mut buf[ct..])
            .expect("AES-GCM seal of a frame-sized buffer");
        buf.extend_from_slice(tag.as_ref());
        debug_assert_eq!(buf.len(), len);
        debug_assert_eq!(ip + 20 + 16 + body + 16, len);
        self.inner = inner;
    }
}

/// An HTTP upload's request head: an L7 detector finds method POST and the Host.
fn http_post(host: &str) -> Vec<u8> {
    format!("POST /sync HTTP/1.1\r\nHost: {host}\r\nUser-Agent: tandem-emu\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000000\r\n\r\n")
        .into_bytes()
}

/// A TLS 1.3-style ClientHello record carrying `sni` (server_name extension), as a browser opens with.
fn tls_client_hello(sni: &str, rng: &mut Rng) -> Vec<u8> {
    let name = sni.as_bytes();
    let n = name.len() as u16;
    let mut ext = Vec::new();
    ext.extend_from_slice(&0u16.to_be_bytes()); // server_name
    ext.extend_from_slice(&(n + 5).to_be_bytes());
    ext.extend_from_slice(&(n + 3).to_be_bytes());
    ext.push(0); // host_name
    ext.extend_from_slice(&n.to_be_bytes());
    ext.extend_from_slice(name);
    ext.extend_from_slice(&[0, 10, 0, 4, 0, 2, 0, 0x1d]); // supported_groups: x25519
    ext.extend_from_slice(&[0, 16, 0, 5, 0, 3, 2, b'h', b'2']); // ALPN h2
    let mut body = vec![3, 3];
    for _ in 0..4 {
        body.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    body.push(32);
    for _ in 0..4 {
        body.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    body.extend_from_slice(&[0, 6, 0x13, 1, 0x13, 2, 0x13, 3, 1, 0]);
    body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    body.extend_from_slice(&ext);
    let mut hs = vec![1];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(&body);
    let mut rec = vec![0x16, 3, 1];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::{Arrival, FlowSizeDist, Source, SourceSpec};
    use dp_nf::NfVerdict;

    const KEY1: &str = "000102030405060708090a0b0c0d0e0f01020304";
    const KEY2: &str = "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2fcafebabe";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn spec() -> EspSpec {
        let far = 0xc633_6409; // 198.51.100.9
        let gw = 0xc000_0201; // 192.0.2.1
        EspSpec {
            tunnels: vec![
                EspTunnel { spi: 4660, key: unhex(KEY1), src: far, dst: gw, esn: true, ttl: 64 },
                EspTunnel { spi: 4661, key: unhex(KEY2), src: far + 1, dst: gw, esn: false, ttl: 63 },
            ],
            apps: vec![
                InnerApp { proto: InnerProto::Http, host: "crm.example.com".into(), weight: 1.0 },
                InnerApp { proto: InnerProto::Tls, host: "video.example.net".into(), weight: 2.0 },
            ],
        }
    }

    fn secgw() -> Box<dyn dp_nf::NetworkFunction> {
        let cfg = format!(
            r#"{{"sas": [
            {{"spi": 4660, "dir": "in", "cipher": "aes128gcm", "key": "{KEY1}", "local": "192.0.2.1", "remote": "198.51.100.9", "replay_window": 128}},
            {{"spi": 4661, "dir": "in", "cipher": "aes256gcm", "key": "{KEY2}", "local": "192.0.2.1", "remote": "198.51.100.10", "esn": false}}]}}"#
        );
        dp_nf::make_nf_config("secgw", 2, &cfg).unwrap()
    }

    fn source(seed: u64, size: u32) -> Source {
        let mut s = SourceSpec::new("wan", Arrival::Constant { pps: 1e6 });
        s.sizes = crate::traffic::SizeDist::Uniform(size.min(1500), 1500);
        s.concurrent_flows = 40;
        s.flow_sizes = FlowSizeDist::Exponential { mean: 30.0 };
        s.esp = Some(spec());
        s.check().unwrap();
        Source::new(s, 0, seed)
    }

    fn frames(src: &mut Source, n: usize) -> Vec<Vec<u8>> {
        let mut t = src.first_time().unwrap();
        (0..n)
            .map(|_| {
                let (p, next) = src.emit(t, Vec::new());
                t = next.unwrap();
                p.frame
            })
            .collect()
    }

    #[test]
    fn the_secgw_decrypts_every_frame_and_the_l7fw_names_every_flow() {
        let mut src = source(5, 110);
        let fr = frames(&mut src, 20_000);
        let mut gw = secgw();
        let fw_cfg = r#"{"apps": [{"name": "crm", "hosts": ["*.example.com"]}, {"name": "video", "hosts": ["video.example.net"]}]}"#;
        let mut fw = dp_nf::make_nf_config("l7fw", 2, fw_cfg).unwrap();
        let mut inner_bytes = 0;
        for (i, f) in fr.iter().enumerate() {
            assert_eq!(f.len() % 4, 2, "frame {i}: ESP frames are 66 + 4k bytes");
            assert!(f.len() <= 1500 && f.len() >= ESP_MIN_FRAME);
            let mut g = f.clone();
            assert_eq!(gw.process(&mut g, 0, 0), NfVerdict::Forward { port: 1 }, "frame {i}");
            let h = dp_core::parse_frame(&g).unwrap();
            assert_eq!(h.ip_proto, Some(6));
            assert!(matches!(h.l4_dst, Some(80) | Some(443)));
            assert_eq!(dp_core::checksum::fold(dp_core::checksum::sum(&g[14..34], 0)), 0, "inner IPv4 checksum");
            inner_bytes += g.len();
            assert_eq!(fw.process(&mut g, 0, 0), NfVerdict::Forward { port: 1 });
        }
        let c: std::collections::HashMap<String, u64> = gw.counters().into_iter().collect();
        assert_eq!(c["decrypted"], 20_000);
        for r in ["auth_failed", "replayed", "too_old", "bad_padding", "bad_inner", "unknown_spi", "tunnel_mismatch"] {
            assert_eq!(c[r], 0, "{r}");
        }
        assert!(inner_bytes > 20_000 * 100);
        // every flow's greeting was found (flows still open at the end may not have sent all of it)
        let d: std::collections::HashMap<String, u64> = fw.counters().into_iter().collect();
        let (http, tls) = (d["detected_http"], d["detected_tls"]);
        assert!(http > 50 && tls > 2 * http / 2, "http {http} tls {tls}");
        assert_eq!(d.get("detected_unknown").copied().unwrap_or(0), 0);
        let seqs = src.esp_sequence_numbers();
        assert_eq!(seqs.iter().sum::<u64>(), 20_000);
        assert!(seqs.iter().all(|&s| s > 8_000), "{seqs:?}");
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_flows() {
        let a = frames(&mut source(9, 600), 500);
        let b = frames(&mut source(9, 600), 500);
        let c = frames(&mut source(10, 600), 500);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_tampered_or_replayed_frame_is_refused() {
        let fr = frames(&mut source(3, 300), 10);
        let mut gw = secgw();
        let mut bad = fr[0].clone();
        let n = bad.len();
        bad[n - 20] ^= 0x40;
        assert_eq!(gw.process(&mut bad, 0, 0), NfVerdict::Drop { reason: "auth_failed" });
        assert!(matches!(gw.process(&mut fr[0].clone(), 0, 0), NfVerdict::Forward { .. }));
        assert_eq!(gw.process(&mut fr[0].clone(), 0, 0), NfVerdict::Drop { reason: "replayed" });
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut s = spec();
        s.tunnels[0].key.pop();
        assert!(s.check().unwrap_err().contains("20"));
        let mut s = spec();
        s.tunnels[1].spi = 7;
        assert!(s.check().unwrap_err().contains("reserved"));
        let mut s = spec();
        s.apps[0].weight = 0.0;
        assert!(s.check().unwrap_err().contains("weight"));
        let mut s = spec();
        s.apps.clear();
        assert!(s.check().is_err());
    }

    #[test]
    fn frame_lengths_are_esp_aligned() {
        assert_eq!(EspSpec::frame_len(1280, 14), 1278);
        assert_eq!(EspSpec::frame_len(1278, 14), 1278);
        assert_eq!(EspSpec::frame_len(1282, 14), 1282);
        assert_eq!(EspSpec::frame_len(64, 14), ESP_MIN_FRAME);
        assert_eq!(EspSpec::frame_len(1500, 18) % 4, (18 + 20 + 16 + 16) % 4);
    }

    #[test]
    fn greetings_parse() {
        let h = http_post("a.example");
        assert!(h.starts_with(b"POST /sync HTTP/1.1\r\nHost: a.example\r\n"));
        let t = tls_client_hello("b.example", &mut Rng::new(1));
        assert_eq!(t[0], 0x16);
        assert_eq!(u16::from_be_bytes([t[3], t[4]]) as usize, t.len() - 5);
        assert!(t.windows(9).any(|w| w == b"b.example"));
    }
}
