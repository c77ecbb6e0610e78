//! Sample configurations and traffic for every NF kind: used by the seeded
//! round-trip tests, the `nf_bench` binary and the Python tests, so all of
//! them exercise the same, realistic setups.

use crate::l7fw::payloads;
use dp_core::checksum;

/// (kind, JSON config) for every real NF.
pub fn configs() -> Vec<(&'static str, String)> {
    let key = "000102030405060708090a0b0c0d0e0fdeadbeef";
    vec![
        (
            "secgw",
            format!(
                r#"{{"sas":[{{"spi":4097,"dir":"out","cipher":"aes128gcm","key":"{key}","local":"192.0.2.1","remote":"192.0.2.2","inner_dst":"10.0.0.0/8"}},
                   {{"spi":4098,"dir":"in","cipher":"aes128gcm","key":"{key}","local":"192.0.2.1","remote":"192.0.2.2"}}]}}"#
            ),
        ),
        (
            "l7fw",
            r#"{"apps":[{"name":"video","hosts":["*.video.example"],"action":"rate_limit","rate_pps":100000,"burst":50},
                        {"name":"banned","hosts":["bad.example"],"action":"block"},
                        {"name":"torrent","signatures":["BitTorrent protocol"],"action":"block"}]}"#
                .into(),
        ),
        ("asset_monitor", "{}".into()),
        ("nat", r#"{"external_ip":"203.0.113.1","port_min":1024,"port_max":65535,"timeout_s":30}"#.into()),
        ("maglev_lb", r#"{"vip":"10.0.0.100","backends":["10.1.0.1","10.1.0.2","10.1.0.3","10.1.0.4"],"table_size":65537}"#.into()),
        ("monitor", r#"{"depth":4,"width":2048,"heavy_bytes":2000,"max_candidates":4096}"#.into()),
        ("logger", r#"{"interval_ms":0.05}"#.into()),
        (
            "header_classifier",
            r#"{"rules":[{"dst":"10.0.0.0/24","dport":"80-443","proto":6,"port":1,"priority":5},{"src":"10.0.0.128/25","port":"drop"},{"proto":17,"port":0}],"default":1}"#.into(),
        ),
        ("payload_analyzer", r#"{"patterns":[{"name":"pw","string":"password="},{"name":"get","regex":"^GET /[a-z]+"},{"name":"evil","string":"EVIL","action":"drop"}]}"#.into()),
        ("alert", r#"{"rules":[{"name":"syn22","proto":6,"dport":22,"syn_only":true},{"name":"evil","payload":"EVIL"}],"rate_per_s":1000,"burst":5,"flow_holdoff_ms":0.01}"#.into()),
    ]
}

pub fn eth_ipv4(src: u32, dst: u32, proto: u8, l4: &[u8]) -> Vec<u8> {
    eth_ipv4_ttl(src, dst, proto, 64, l4)
}

/// `eth_ipv4` with the IPv4 TTL given.
pub fn eth_ipv4_ttl(src: u32, dst: u32, proto: u8, ttl: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    ip[8] = ttl;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src.to_be_bytes());
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = checksum::fold(checksum::sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(l4);
    f
}

pub fn tcp(src: u32, dst: u32, sport: u16, dport: u16, flags: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[12] = 5 << 4;
    h[13] = flags;
    h[14..16].copy_from_slice(&64240u16.to_be_bytes());
    h.extend_from_slice(payload);
    eth_ipv4(src, dst, 6, &h)
}

pub fn udp(src: u32, dst: u32, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 8];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(payload);
    eth_ipv4(src, dst, 17, &h)
}

/// A frame of exactly `len` bytes (≥ 60): UDP 10.0.x.y → 10.0.0.z.
pub fn udp_sized(flow: u32, len: usize) -> Vec<u8> {
    udp(0x0a00_0000 | (flow & 0xffff), 0x0a00_0001 + (flow % 7), 1024 + (flow % 50000) as u16, 53, &vec![0x5a; len.max(60) - 42])
}

/// A seeded, mixed trace of `flows` flows: TCP handshakes with HTTP/TLS/other
/// payloads, DNS, plain UDP, inbound packets for NAT/LB, all with timestamps
/// (ps). Each entry is (in_port, now_ps, frame).
pub fn mixed_trace(seed: u64, flows: u32, packets: usize) -> Vec<(u8, u64, Vec<u8>)> {
    let mut rng = dp_core::rng::XorShift64(seed | 1);
    let mut out = Vec::with_capacity(packets);
    let mut seqs = vec![1000u32; flows as usize];
    let mut t = 0u64;
    for _ in 0..packets {
        t += 1_000_000 + rng.below(5_000_000); // 1–6 µs apart
        let fl = rng.below(flows as u64) as u32;
        let client = 0x0a00_0000 | (fl & 0xff) + 2;
        let server = if fl % 5 == 0 { 0x0a00_0064 } else { 0x0a00_0000 | (0x100 + fl % 13) };
        let sport = 20000 + fl as u16;
        let kind = fl % 6;
        let reply = rng.chance(25);
        let f = match kind {
            0..=2 => {
                let dport = [80u16, 443, 22][kind as usize];
                let s = &mut seqs[fl as usize];
                let payload = if *s == 1000 {
                    *s += 1;
                    Vec::new()
                } else {
                    match kind {
                        0 => payloads::http_get(if fl % 4 == 0 { "bad.example" } else { "www.site.example" }, "GET"),
                        1 => payloads::tls_client_hello(&format!("h{}.video.example", fl % 3)),
                        _ => {
                            if rng.chance(10) {
                                b"EVIL password=x".to_vec()
                            } else {
                                vec![b'a'; rng.below(200) as usize]
                            }
                        }
                    }
                };
                let flags = if payload.is_empty() && *s == 1001 { 0x02 } else { 0x18 };
                let seq = *s;
                *s = s.wrapping_add(payload.len() as u32);
                if reply {
                    tcp(server, client, dport, sport, 0x12, 5000, b"SSH-2.0-x\r\n")
                } else {
                    tcp(client, server, sport, dport, flags, seq, &payload)
                }
            }
            3 => udp(client, 0x0808_0808, sport, 53, &payloads::dns_query(&format!("n{}.example.org", fl % 7), fl as u16)),
            4 => {
                if reply {
                    udp(0x0808_0808, 0xcb00_7101, 53, 1024 + (fl % 40) as u16, b"reply")
                } else {
                    udp(client, 0x0a00_0064, sport, 9000, &vec![0u8; rng.below(300) as usize])
                }
            }
            _ => udp(client, 0x0a00_0000 | 0x180, sport, 7, b"BitTorrent protocol ..."),
        };
        out.push((if reply { 1 } else { 0 }, t, f));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{FlowFilter, FlowKey};
    use crate::{make_nf_config, NetworkFunction, NfVerdict};

    fn run(nf: &mut dyn NetworkFunction, tr: &[(u8, u64, Vec<u8>)]) -> Vec<(NfVerdict, Vec<u8>)> {
        tr.iter()
            .map(|(p, t, f)| {
                let mut g = f.clone();
                let v = nf.process(&mut g, *p, *t);
                (v, g)
            })
            .collect()
    }

    fn esp_trace(seed: u64, n: usize) -> Vec<(u8, u64, Vec<u8>)> {
        // Encrypt with an outbound SA whose SPI is the SECGW's inbound one.
        let mut enc = make_nf_config(
            "secgw",
            2,
            r#"{"sas":[{"spi":4098,"dir":"out","cipher":"aes128gcm","key":"000102030405060708090a0b0c0d0e0fdeadbeef","local":"192.0.2.2","remote":"192.0.2.1"}]}"#,
        )
        .unwrap();
        let mut tr = mixed_trace(seed, 40, n);
        for (i, (p, _, f)) in tr.iter_mut().enumerate() {
            if i % 3 != 0 {
                enc.process(f, 0, 0);
                *p = 1;
            }
        }
        tr
    }

    /// Every NF: after export → import (full) the copy behaves exactly like
    /// the original on the following packets; after a per-flow export of the
    /// flows a filter picks (+ shared state), the copy behaves like the
    /// original on those flows' packets. Seeded, several seeds.
    #[test]
    fn export_import_gives_identical_behaviour() {
        for (kind, cfg) in configs() {
            for seed in 1..=4u64 {
                let tr = if kind == "secgw" { esp_trace(seed, 1200) } else { mixed_trace(seed, 60, 1200) };
                let (a_part, b_part) = tr.split_at(600);
                let mut a = make_nf_config(kind, 2, &cfg).unwrap();
                run(a.as_mut(), a_part);
                assert!(a.flow_count() > 0, "{kind}: no state after the first half");
                let blob = a.export_state();
                let mut b = make_nf_config(kind, 2, &cfg).unwrap();
                b.import_state(&blob).unwrap();
                assert_eq!(b.export_state(), blob, "{kind}: re-export differs");
                // per-flow: the flows of every other client address
                let filter = FlowFilter { src: Some((0x0a00_0000 | (seed as u32 * 2 % 16), 31)), either_direction: true, ..Default::default() };
                let pf = a.export_flows(&filter, true);
                let mut c = make_nf_config(kind, 2, &cfg).unwrap();
                let n = c.import_flows(&pf).unwrap();
                assert_eq!(n, c.flow_count(), "{kind}");
                let mut keys = std::collections::HashSet::new();
                for (_, _, f) in a_part {
                    if let Some(p) = crate::pkt::parse(f) {
                        keys.insert(p.key);
                    }
                }
                let sel: Vec<_> = b_part
                    .iter()
                    .filter(|(_, _, f)| crate::pkt::parse(f).is_some_and(|p| filter.matches(&p.key) && keys.contains(&p.key) && kind != "secgw"))
                    .cloned()
                    .collect();
                assert!(kind == "secgw" || !sel.is_empty(), "{kind}: no packets of moved flows");
                let ra = run(a.as_mut(), b_part);
                let rb = run(b.as_mut(), b_part);
                assert_eq!(ra, rb, "{kind} seed {seed}: full import changed behaviour");
                assert_eq!(a.export_state(), b.export_state(), "{kind}");
                // per-flow copy vs a full copy on the selected flows
                let mut a2 = make_nf_config(kind, 2, &cfg).unwrap();
                a2.import_state(&blob).unwrap();
                assert_eq!(run(a2.as_mut(), &sel), run(c.as_mut(), &sel), "{kind} seed {seed}: per-flow import changed behaviour");
                assert_eq!(a2.export_flows(&filter, false), c.export_flows(&filter, false), "{kind}");
            }
        }
    }

    #[test]
    fn refused_blobs_leave_every_nf_unchanged() {
        for (kind, cfg) in configs() {
            let mut a = make_nf_config(kind, 2, &cfg).unwrap();
            let tr = if kind == "secgw" { esp_trace(9, 300) } else { mixed_trace(9, 30, 300) };
            run(a.as_mut(), &tr);
            let blob = a.export_state();
            let before = a.export_state();
            let mut rng = dp_core::rng::XorShift64(77);
            // bit flips anywhere, truncation, wrong version, wrong kind
            for _ in 0..50 {
                let mut bad = blob.clone();
                let i = rng.below(bad.len() as u64) as usize;
                bad[i] ^= 1 << rng.below(8);
                let e = a.import_state(&bad).unwrap_err();
                assert!(e.0.contains("corrupt") || e.0.contains("magic"), "{kind}: {e}");
            }
            let e = a.import_state(&blob[..blob.len() / 2]).unwrap_err();
            assert!(!e.0.is_empty());
            let mut v = blob.clone();
            v[4 + 1 + kind.len()] ^= 0x40;
            crate::state::reseal(&mut v);
            assert!(a.import_state(&v).unwrap_err().0.contains("format version"), "{kind}");
            // a well-sealed blob whose records are cut short: decoding error, not a panic
            let mut cut = blob[..blob.len() - 4].to_vec();
            cut.truncate(cut.len().saturating_sub(3).max(4 + 1 + kind.len() + 4));
            cut.extend_from_slice(&[0; 4]);
            crate::state::reseal(&mut cut);
            assert!(a.import_state(&cut).is_err(), "{kind}");
            let other = if kind == "nat" { "monitor" } else { "nat" };
            let ocfg = configs().into_iter().find(|(k, _)| *k == other).unwrap().1;
            let o = make_nf_config(other, 2, &ocfg).unwrap();
            assert!(a.import_state(&o.export_state()).unwrap_err().0.contains("is for NF kind"), "{kind}");
            assert_eq!(a.export_state(), before, "{kind}: a refused import changed the NF");
            let _ = FlowKey::default();
        }
    }
}
