//! Asset monitor — passive, PRADS-like host inventory (UNO §4.3 runs PRADS with
//! state import/export).
//!
//! Ports: bump in the wire; every frame is forwarded unchanged.
//! What it learns, per host (IPv4 address): first/last seen, OS hints from the
//! host's TCP SYNs (initial TTL rounded up to 32/64/128/255, window size,
//! TCP options in order, e.g. `M1460,S,T,N,W7`) with a small OS guess, the
//! server ports it answers on (SYN-ACK, or UDP from a port < 1024) and the
//! first bytes the server sends on each port (its banner, printable only).
//! State, per flow: one record per host; the key is the host address in
//! `src`, other fields 0 (a per-flow filter on `src` moves hosts). Shared: none.
//! Cost profile: one parse and one hash update per packet; SYNs add an option
//! walk; a service's first payload adds a copy of `banner_bytes`.
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset none in the papers; give cycles per packet as an assumption.
//! Fields: reads ipv4_src/dst, ip_ttl, ip_proto, tcp/udp ports, tcp flags and
//! options, payload; writes none; never drops.

use crate::pkt::{self, be16, Counters, PROTO_TCP, TCP_ACK, TCP_SYN};
use crate::state::{FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AssetConfig {
    #[serde(default = "bb")]
    pub banner_bytes: usize,
    #[serde(default = "ms")]
    pub max_services: usize,
}
fn bb() -> usize {
    48
}
fn ms() -> usize {
    32
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Service {
    pub proto: u8,
    pub port: u16,
    pub banner: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Host {
    pub first_ps: u64,
    pub last_ps: u64,
    pub ttl: u8,
    pub window: u16,
    pub options: String,
    pub os: String,
    pub services: Vec<Service>,
}

const C: &[&str] = &["packets", "hosts_new", "syn_fingerprints", "services_new", "banners", "not_ipv4"];

pub struct AssetMonitor {
    ports: u8,
    cfg: AssetConfig,
    pub hosts: FastMap<u32, Host>,
    pub counters: Counters,
}

fn tcp_options(o: &[u8]) -> String {
    let mut v = Vec::new();
    let mut i = 0;
    while i < o.len() {
        match o[i] {
            0 => break,
            1 => {
                v.push("N".to_string());
                i += 1;
                continue;
            }
            k => {
                let Some(&l) = o.get(i + 1) else { break };
                let l = l as usize;
                if l < 2 || i + l > o.len() {
                    break;
                }
                v.push(match k {
                    2 if l == 4 => format!("M{}", be16(o, i + 2)),
                    3 if l == 3 => format!("W{}", o[i + 2]),
                    4 => "S".into(),
                    8 => "T".into(),
                    _ => format!("?{k}"),
                });
                i += l;
            }
        }
    }
    v.join(",")
}

fn os_guess(ttl: u8, opts: &str) -> &'static str {
    match ttl {
        0..=64 if opts.starts_with('M') && opts.contains('S') && opts.contains('T') => "Linux",
        0..=64 if opts.contains('T') => "Unix-like (BSD/macOS)",
        0..=64 => "Unix-like",
        65..=128 => "Windows",
        _ => "network device",
    }
}

fn initial_ttl(t: u8) -> u8 {
    match t {
        0..=32 => 32,
        33..=64 => 64,
        65..=128 => 128,
        _ => 255,
    }
}

impl AssetMonitor {
    pub fn new(ports: u8, cfg: AssetConfig) -> Result<Self, String> {
        if cfg.banner_bytes > 1024 {
            return Err(format!("banner_bytes: {} exceeds 1024", cfg.banner_bytes));
        }
        Ok(AssetMonitor { ports, cfg, hosts: FastMap::default(), counters: Counters::new(C) })
    }

    fn host(&mut self, ip: u32, now: u64) -> &mut Host {
        let new = !self.hosts.contains_key(&ip);
        if new {
            self.counters.inc(1);
        }
        let h = self.hosts.entry(ip).or_insert_with(|| Host { first_ps: now, ..Default::default() });
        h.last_ps = now;
        h
    }

    pub fn report(&self) -> String {
        let mut v: Vec<_> = self.hosts.iter().collect();
        v.sort_by_key(|(k, _)| **k);
        let mut s = String::new();
        for (ip, h) in v {
            let sv: Vec<String> = h.services.iter().map(|x| format!("{}/{}[{}]", x.port, if x.proto == 6 { "tcp" } else { "udp" }, x.banner)).collect();
            s.push_str(&format!(
                "{} os={} ttl={} win={} opts={} services={} first={} last={}\n",
                std::net::Ipv4Addr::from(*ip),
                if h.os.is_empty() { "-" } else { &h.os },
                h.ttl,
                h.window,
                h.options,
                sv.join(" "),
                h.first_ps,
                h.last_ps
            ));
        }
        s
    }
}

impl NetworkFunction for AssetMonitor {
    crate::nf_methods!();
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, now: u64) -> NfVerdict {
        self.counters.inc(0);
        let out = NfVerdict::Forward { port: other_port(self.ports, in_port) };
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(5);
            return out;
        };
        let (bb, ms) = (self.cfg.banner_bytes, self.cfg.max_services);
        self.host(p.key.dst, now).last_ps = now;
        if p.fragment {
            self.host(p.key.src, now);
            return out;
        }
        let payload_len = p.end.saturating_sub(p.payload);
        let mut counts = [0usize; 3];
        {
            let h = self.host(p.key.src, now);
            if p.key.proto == PROTO_TCP && p.tcp_flags & (TCP_SYN | TCP_ACK) == TCP_SYN {
                h.ttl = initial_ttl(p.ttl);
                h.window = p.tcp_win;
                h.options = tcp_options(&f[p.l4 + 20..p.payload]);
                h.os = os_guess(p.ttl, &h.options).to_string();
                counts[0] += 1;
            }
            let server = (p.key.proto == PROTO_TCP && p.tcp_flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK) || (p.is_udp() && p.key.sport < 1024);
            if server && !h.services.iter().any(|s| s.proto == p.key.proto && s.port == p.key.sport) && h.services.len() < ms {
                h.services.push(Service { proto: p.key.proto, port: p.key.sport, banner: String::new() });
                counts[1] += 1;
            }
            if payload_len > 0 {
                if let Some(s) = h.services.iter_mut().find(|s| s.proto == p.key.proto && s.port == p.key.sport && s.banner.is_empty()) {
                    let b = &f[p.payload..p.payload + payload_len.min(bb)];
                    s.banner = b.iter().take_while(|&&c| c != b'\r' && c != b'\n').map(|&c| if (32..127).contains(&c) { c as char } else { '.' }).collect();
                    if s.banner.is_empty() {
                        s.banner = ".".into();
                    }
                    counts[2] += 1;
                }
            }
        }
        self.counters.v[2] += counts[0] as u64;
        self.counters.v[3] += counts[1] as u64;
        self.counters.v[4] += counts[2] as u64;
        out
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_ttl", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "payload"], writes: &[], drops: false, reencapsulates: false }
    }
    fn counters(&self) -> Vec<(String, u64)> {
        self.counters.list()
    }
    fn flow_count(&self) -> usize {
        self.hosts.len()
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        match cmd {
            "hosts" => Ok(self.report()),
            _ => Err(format!("asset_monitor: no command {cmd:?} (hosts)")),
        }
    }
    crate::state_methods!();
}

impl Stateful for AssetMonitor {
    const KIND: &'static str = "asset_monitor";
    const VERSION: u16 = 1;
    type Flow = Host;
    type Shared = ();
    fn each_flow(&self, f: &mut dyn FnMut(&FlowKey, &Host)) {
        for (ip, h) in &self.hosts {
            f(&FlowKey { src: *ip, ..Default::default() }, h)
        }
    }
    fn write_flow(&self, w: &mut Writer, h: &Host) {
        w.var(h.first_ps);
        w.var(h.last_ps);
        w.u8(h.ttl);
        w.u16(h.window);
        w.str(&h.options);
        w.str(&h.os);
        w.var(h.services.len() as u64);
        for s in &h.services {
            w.u8(s.proto);
            w.u16(s.port);
            w.str(&s.banner);
        }
    }
    fn read_flow(&self, r: &mut Reader) -> Result<Host, StateError> {
        let mut h = Host { first_ps: r.var("first seen")?, last_ps: r.var("last seen")?, ttl: r.u8("ttl")?, window: r.u16("window")?, ..Default::default() };
        h.options = r.string("options")?;
        h.os = r.string("os")?;
        let n = r.var_max(4096, "services")?;
        for _ in 0..n {
            h.services.push(Service { proto: r.u8("service proto")?, port: r.u16("service port")?, banner: r.string("banner")? });
        }
        Ok(h)
    }
    fn write_shared(&self, _w: &mut Writer) {}
    fn read_shared(&self, _r: &mut Reader) -> Result<(), StateError> {
        Ok(())
    }
    fn install(&mut self, flows: Vec<(FlowKey, Host)>, _s: Option<()>, replace: bool) {
        if replace {
            self.hosts.clear();
        }
        self.hosts.extend(flows.into_iter().map(|(k, h)| (k.src, h)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::{ipv4, tcp};

    #[test]
    fn fingerprints_services_banners() {
        let mut nf = AssetMonitor::new(2, AssetConfig { banner_bytes: 48, max_services: 8 }).unwrap();
        // SYN with options M1460,S,T,N,W7 from a Linux-ish client (TTL 64)
        let mut h = vec![0u8; 40];
        h[0..2].copy_from_slice(&5555u16.to_be_bytes());
        h[2..4].copy_from_slice(&22u16.to_be_bytes());
        h[12] = 10 << 4;
        h[13] = TCP_SYN;
        h[14..16].copy_from_slice(&64240u16.to_be_bytes());
        h[20..40].copy_from_slice(&[2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7]);
        nf.process(&mut ipv4(0x0a000001, 0x0a000002, 6, 63, &h), 0, 5);
        nf.process(&mut tcp(0x0a000002, 0x0a000001, 22, 5555, TCP_SYN | TCP_ACK, 1, b""), 1, 6);
        nf.process(&mut tcp(0x0a000002, 0x0a000001, 22, 5555, TCP_ACK, 2, b"SSH-2.0-OpenSSH_9.6\r\n"), 1, 7);
        let r = nf.report();
        assert!(r.contains("10.0.0.1 os=Linux ttl=64 win=64240 opts=M1460,S,T,N,W7"), "{r}");
        assert!(r.contains("10.0.0.2 os=- ttl=0 win=0 opts= services=22/tcp[SSH-2.0-OpenSSH_9.6] first=5 last=7"), "{r}");
    }
}
