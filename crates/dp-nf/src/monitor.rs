//! Monitor — traffic measurement with a count-min sketch and a k-ary sketch
//! (Krishnamurthy et al., IMC'03), as SmartChain Table I's monitor; reports
//! heavy hitters.
//!
//! Ports: bump in the wire; every frame is forwarded unchanged.
//! Per packet the 5-tuple is hashed once; `depth` row indexes are derived from
//! it, and the frame's bytes are added to one counter per row in both sketches.
//! A flow whose count-min estimate reaches `heavy_bytes` becomes a heavy-hitter
//! candidate (at most `max_candidates`, smallest evicted). `command("heavy_hitters")`
//! lists candidates with their count-min and k-ary estimates (k-ary: per row
//! (T[h] − S/K)/(1 − 1/K), median over rows).
//! State, per flow: the candidate entries (flow → bytes at last update).
//! Shared: both sketches (depth × width u64 each) and the byte total.
//! Cost profile: one hash and 2 × depth counter updates per packet, no
//! per-byte work.
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset smartchain.monitor (SmartChain Table I).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports, ip_len; writes none;
//! never drops.

use crate::pkt::{self, Counters};
use crate::state::{mix64, FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorConfig {
    #[serde(default = "d")]
    pub depth: usize,
    #[serde(default = "w")]
    pub width: usize,
    #[serde(default = "hb")]
    pub heavy_bytes: u64,
    #[serde(default = "mc")]
    pub max_candidates: usize,
}
fn d() -> usize {
    4
}
fn w() -> usize {
    2048
}
fn hb() -> u64 {
    1_000_000
}
fn mc() -> usize {
    64
}

const C: &[&str] = &["packets", "bytes", "heavy_candidates_added", "not_ipv4"];
const SEEDS: [u64; 8] = [0x9e37_79b9_7f4a_7c15, 0xc2b2_ae3d_27d4_eb4f, 0x1656_67b1_9e37_79f9, 0xd6e8_feb8_6659_fd93, 0xa076_1d64_78bd_642f, 0xe703_7ed1_a0b4_28db, 0x8ebc_6af0_9c88_c6e3, 0x5899_65cc_7537_4cc3];

#[derive(Debug, Clone, PartialEq)]
pub struct Sketches {
    pub cm: Vec<u64>,
    pub kary: Vec<i64>,
    pub total: u64,
}

pub struct Monitor {
    ports: u8,
    cfg: MonitorConfig,
    pub sk: Sketches,
    pub candidates: FastMap<FlowKey, u64>,
    pub counters: Counters,
}

impl Monitor {
    pub fn new(ports: u8, cfg: MonitorConfig) -> Result<Self, String> {
        if !(1..=8).contains(&cfg.depth) {
            return Err(format!("depth: {} must be 1..8", cfg.depth));
        }
        if !cfg.width.is_power_of_two() || !(16..=1 << 22).contains(&cfg.width) {
            return Err(format!("width: {} must be a power of two in 16..4194304", cfg.width));
        }
        let n = cfg.depth * cfg.width;
        Ok(Monitor { ports, sk: Sketches { cm: vec![0; n], kary: vec![0; n], total: 0 }, cfg, candidates: FastMap::default(), counters: Counters::new(C) })
    }

    #[inline]
    fn idx(&self, h: u64, row: usize) -> usize {
        let x = mix64(h ^ SEEDS[row]);
        row * self.cfg.width + (x as usize & (self.cfg.width - 1))
    }

    pub fn cm_estimate(&self, k: &FlowKey) -> u64 {
        let h = k.hash64();
        (0..self.cfg.depth).map(|r| self.sk.cm[self.idx(h, r)]).min().unwrap_or(0)
    }

    pub fn kary_estimate(&self, k: &FlowKey) -> f64 {
        let h = k.hash64();
        let kk = self.cfg.width as f64;
        let s = self.sk.total as f64;
        let mut v: Vec<f64> = (0..self.cfg.depth).map(|r| (self.sk.kary[self.idx(h, r)] as f64 - s / kk) / (1.0 - 1.0 / kk)).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    pub fn heavy_hitters(&self) -> Vec<(FlowKey, u64, f64)> {
        let mut v: Vec<_> = self.candidates.keys().map(|k| (*k, self.cm_estimate(k), self.kary_estimate(k))).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

impl NetworkFunction for Monitor {
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, _now: u64) -> NfVerdict {
        self.counters.inc(0);
        let out = NfVerdict::Forward { port: other_port(self.ports, in_port) };
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(3);
            return out;
        };
        let bytes = (p.end - p.l3) as u64;
        self.counters.v[1] += bytes;
        let h = p.key.hash64();
        let mut est = u64::MAX;
        for r in 0..self.cfg.depth {
            let i = self.idx(h, r);
            self.sk.cm[i] += bytes;
            est = est.min(self.sk.cm[i]);
            self.sk.kary[i] += bytes as i64;
        }
        self.sk.total += bytes;
        if est >= self.cfg.heavy_bytes {
            if let Some(v) = self.candidates.get_mut(&p.key) {
                *v = est;
            } else {
                if self.candidates.len() >= self.cfg.max_candidates {
                    let (k, v) = self.candidates.iter().min_by_key(|(k, v)| (**v, **k)).map(|(k, v)| (*k, *v)).unwrap();
                    if v >= est {
                        return out;
                    }
                    self.candidates.remove(&k);
                }
                self.candidates.insert(p.key, est);
                self.counters.inc(2);
            }
        }
        out
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "ip_len"], writes: &[], drops: false, reencapsulates: false }
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        if cmd != "heavy_hitters" {
            return Err(format!("monitor: no command {cmd:?} (heavy_hitters)"));
        }
        Ok(self
            .heavy_hitters()
            .iter()
            .map(|(k, cm, ka)| format!("{}:{}-{}:{}/{} cm={} kary={:.0}\n", std::net::Ipv4Addr::from(k.src), k.sport, std::net::Ipv4Addr::from(k.dst), k.dport, k.proto, cm, ka))
            .collect())
    }
    crate::nf_methods!(candidates);
}

impl Stateful for Monitor {
    const KIND: &'static str = "monitor";
    const VERSION: u16 = 1;
    type Flow = u64;
    type Shared = Sketches;
    crate::each_flow_of!(candidates);
    fn write_flow(&self, w: &mut Writer, v: &u64) {
        w.var(*v);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<u64, StateError> {
        r.var("estimate")
    }
    fn write_shared(&self, w: &mut Writer) {
        w.var(self.cfg.depth as u64);
        w.var(self.cfg.width as u64);
        w.var(self.sk.total);
        for x in &self.sk.cm {
            w.var(*x);
        }
        for x in &self.sk.kary {
            w.var(*x as u64);
        }
    }
    fn read_shared(&self, r: &mut Reader) -> Result<Sketches, StateError> {
        let d = r.var("depth")? as usize;
        let wd = r.var("width")? as usize;
        if d != self.cfg.depth || wd != self.cfg.width {
            return Err(r.err(&format!("sketch is {d}x{wd}, this monitor has {}x{}", self.cfg.depth, self.cfg.width)));
        }
        let total = r.var("total")?;
        let cm = (0..d * wd).map(|_| r.var("count-min")).collect::<Result<Vec<_>, _>>()?;
        let kary = (0..d * wd).map(|_| r.var("k-ary").map(|x| x as i64)).collect::<Result<Vec<_>, _>>()?;
        Ok(Sketches { cm, kary, total })
    }
    fn install(&mut self, flows: Vec<(FlowKey, u64)>, shared: Option<Sketches>, replace: bool) {
        if replace {
            self.candidates.clear();
        }
        self.candidates.extend(flows);
        if let Some(s) = shared {
            self.sk = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::udp;

    #[test]
    fn finds_heavy_hitters() {
        let mut m = Monitor::new(2, MonitorConfig { depth: 4, width: 1024, heavy_bytes: 50_000, max_candidates: 8 }).unwrap();
        let mut rng = dp_core::rng::XorShift64(7);
        let mut truth = std::collections::HashMap::new();
        for i in 0..40_000u32 {
            let (s, len) = if i % 10 < 3 { (i % 3, 1000) } else { (100 + rng.below(5000) as u32, 64) };
            let mut f = udp(0x0a000000 + s, 0x0b000001, 1000, 2000, &vec![0; len]);
            let l = (f.len() - 14) as u64;
            *truth.entry(s).or_insert(0u64) += l;
            m.process(&mut f, 0, 0);
        }
        let hh = m.heavy_hitters();
        let top: Vec<u32> = hh.iter().take(3).map(|(k, _, _)| k.src - 0x0a000000).collect();
        let mut t = top.clone();
        t.sort();
        assert_eq!(t, vec![0, 1, 2], "{hh:?}");
        for (k, cm, ka) in hh.iter().take(3) {
            let real = truth[&(k.src - 0x0a000000)] as f64;
            assert!(*cm as f64 >= real && (*cm as f64) < real * 1.05);
            assert!((ka - real).abs() < real * 0.05, "{ka} vs {real}");
        }
    }
}
