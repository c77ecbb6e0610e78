//! Run metrics as JSON: per-flow (per-source) throughput and latency
//! percentiles, drops by reason and by place, per-device cores used and
//! energy, PCIe Gb/s each way, Ethernet port rates, NF packet counts, and
//! (only when tenants are defined) the same per tenant.
//! Key order is fixed and floats print in Rust's shortest exact form, so equal
//! runs give byte-identical text.

use crate::clock::PS_PER_S;
use crate::emulator::Emulator;
use crate::histogram::Histogram;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A minimal JSON value with ordered objects.
#[derive(Debug, Clone)]
pub enum Json {
    Int(u64),
    Num(f64),
    Str(String),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn write(&self, out: &mut String) {
        match self {
            Json::Int(i) => write!(out, "{i}").unwrap(),
            Json::Num(x) if x.is_finite() => {
                if x.fract() == 0.0 && x.abs() < 1e15 {
                    write!(out, "{x:.1}").unwrap()
                } else {
                    write!(out, "{x}").unwrap()
                }
            }
            Json::Num(_) => out.push_str("null"),
            Json::Str(s) => {
                out.push('"');
                for c in s.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            Json::Obj(kv) => {
                out.push('{');
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    Json::Str(k.clone()).write(out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

fn obj(kv: Vec<(&str, Json)>) -> Json {
    Json::Obj(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

impl Emulator {
    /// Seconds covered by the metrics.
    pub fn elapsed_s(&self) -> f64 {
        self.ran_until.min(self.horizon) as f64 / PS_PER_S as f64
    }

    pub fn metrics(&self) -> Json {
        let secs = self.elapsed_s();
        let rate = |bytes: u64| gbps(bytes, secs);
        let mut flows = Vec::new();
        for (s, f) in self.sources.iter().zip(&self.flows) {
            let h = &f.latency_ns;
            flows.push((
                s.spec.name.clone(),
                obj(vec![
                    ("tx_packets", Json::Int(s.emitted)),
                    ("tx_bytes", Json::Int(s.emitted_bytes)),
                    ("offered_gbps", Json::Num(rate(s.emitted_bytes))),
                    ("rx_packets", Json::Int(f.rx_packets)),
                    ("rx_bytes", Json::Int(f.rx_bytes)),
                    ("throughput_gbps", Json::Num(rate(f.rx_bytes))),
                    ("throughput_mpps", Json::Num(if secs > 0.0 { f.rx_packets as f64 / secs / 1e6 } else { 0.0 })),
                    ("dropped", Json::Int(f.dropped)),
                    ("latency_ns", latency_json(h)),
                ]),
            ));
        }
        let mut by_reason: BTreeMap<&str, u64> = BTreeMap::new();
        let mut by_place: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
        for (&(place, reason), &n) in &self.drops {
            *by_reason.entry(reason).or_insert(0) += n;
            *by_place.entry(self.places[place as usize].as_str()).or_default().entry(reason).or_insert(0) += n;
        }
        let drops = Json::Obj(by_reason.iter().map(|(k, v)| (k.to_string(), Json::Int(*v))).collect());
        let drops_by_place = Json::Obj(
            by_place
                .iter()
                .map(|(p, m)| (p.to_string(), Json::Obj(m.iter().map(|(k, v)| (k.to_string(), Json::Int(*v))).collect())))
                .collect(),
        );
        let mut devices = Vec::new();
        for d in &self.devices {
            let busy_ps: u64 = d.cores.iter().map(|c| c.busy_ps).sum();
            let busy_s = busy_ps as f64 / PS_PER_S as f64;
            let ncores = d.cores.len() as f64;
            let util = if secs > 0.0 { busy_s / (ncores * secs) } else { 0.0 };
            let energy = d.spec.idle_watts * secs + (d.spec.busy_watts - d.spec.idle_watts) * util * secs;
            let accels = Json::Obj(
                d.accels
                    .iter()
                    .map(|(a, s)| {
                        let u = if secs > 0.0 { s.busy_ps as f64 / PS_PER_S as f64 / secs } else { 0.0 };
                        (a.name.clone(), obj(vec![("jobs", Json::Int(s.jobs)), ("utilization", Json::Num(u))]))
                    })
                    .collect(),
            );
            devices.push((
                d.spec.name.clone(),
                obj(vec![
                    ("cores", Json::Int(d.cores.len() as u64)),
                    ("cores_used", Json::Num(if secs > 0.0 { busy_s / secs } else { 0.0 })),
                    ("busy_core_s", Json::Num(busy_s)),
                    ("utilization", Json::Num(util)),
                    ("switch_packets", Json::Int(d.switch_packets)),
                    ("table_entries", Json::Int(d.switch.entries() as u64)),
                    ("table_capacity", Json::Int(d.spec.table_capacity as u64)),
                    ("energy_j", Json::Num(energy)),
                    ("accelerators", accels),
                ]),
            ));
        }
        let mut links = Vec::new();
        for l in &self.links {
            let a = &self.devices[l.spec.dev_a as usize].spec.name;
            let b = &self.devices[l.spec.dev_b as usize].spec.name;
            links.push((
                l.spec.name.clone(),
                obj(vec![
                    ("a", Json::Str(a.clone())),
                    ("b", Json::Str(b.clone())),
                    ("a_to_b_gbps", Json::Num(rate(l.bytes[0]))),
                    ("b_to_a_gbps", Json::Num(rate(l.bytes[1]))),
                    ("total_gbps", Json::Num(rate(l.bytes[0] + l.bytes[1]))),
                    ("a_to_b_packets", Json::Int(l.packets[0])),
                    ("b_to_a_packets", Json::Int(l.packets[1])),
                    ("dma_ring_misses", Json::Int(l.ring_misses)),
                ]),
            ));
        }
        let eths = self
            .eths
            .iter()
            .map(|e| {
                (
                    e.spec.name.clone(),
                    obj(vec![
                        ("device", Json::Str(self.devices[e.dev as usize].spec.name.clone())),
                        ("tx_packets", Json::Int(e.packets)),
                        ("tx_gbps", Json::Num(rate(e.bytes))),
                    ]),
                )
            })
            .collect();
        let nfs = self
            .nfs
            .iter()
            .map(|n| {
                (
                    n.name.clone(),
                    obj(vec![
                        ("kind", Json::Str(n.nf.kind().to_string())),
                        ("device", Json::Str(self.devices[n.dev as usize].spec.name.clone())),
                        ("packets", Json::Int(n.packets)),
                    ]),
                )
            })
            .collect();
        let sinks = self
            .sinks
            .iter()
            .map(|s| (s.name.clone(), obj(vec![("rx_packets", Json::Int(s.packets)), ("rx_gbps", Json::Num(rate(s.bytes)))])))
            .collect();
        let mut top = vec![
            ("duration_s", Json::Num(secs)),
            ("seed", Json::Int(self.seed)),
            ("events", Json::Int(self.events)),
            ("flows", Json::Obj(flows)),
        ];
        if !self.tenants.is_empty() {
            top.push(("tenants", self.tenant_metrics(secs)));
        }
        top.extend(vec![
            ("drops", drops),
            ("drops_by_place", drops_by_place),
            ("devices", Json::Obj(devices)),
            ("pcie", Json::Obj(links)),
            ("eth", Json::Obj(eths)),
            ("nfs", Json::Obj(nfs)),
            ("sinks", Json::Obj(sinks)),
        ]);
        obj(top)
    }

    /// Per tenant: its sources' packets, rates, merged latency, drops by reason
    /// and its accelerator token buckets.
    fn tenant_metrics(&self, secs: f64) -> Json {
        let rate = |bytes: u64| gbps(bytes, secs);
        let mut out = Vec::new();
        for t in &self.tenants {
            let (mut tx, mut tx_bytes, mut rx, mut rx_bytes, mut dropped) = (0, 0, 0, 0, 0);
            let mut lat = Histogram::default();
            let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
            for &s in &t.sources {
                let (src, f) = (&self.sources[s as usize], &self.flows[s as usize]);
                tx += src.emitted;
                tx_bytes += src.emitted_bytes;
                rx += f.rx_packets;
                rx_bytes += f.rx_bytes;
                dropped += f.dropped;
                lat.merge(&f.latency_ns);
                for &(r, n) in &f.drop_reasons {
                    *reasons.entry(r).or_insert(0) += n;
                }
            }
            let buckets = self
                .buckets
                .iter()
                .filter(|b| b.tenant == t.name)
                .map(|b| {
                    let d = &self.devices[b.dev as usize];
                    (
                        format!("{}.{}", d.spec.name, d.accels[b.accel].0.name),
                        obj(vec![
                            ("rate_gbps", Json::Num(b.gbps)),
                            ("jobs", Json::Int(b.jobs)),
                            ("delayed", Json::Int(b.delayed)),
                            ("refused", Json::Int(b.refused)),
                        ]),
                    )
                })
                .collect();
            out.push((
                t.name.clone(),
                obj(vec![
                    ("sources", Json::Str(t.sources.iter().map(|&s| self.sources[s as usize].spec.name.as_str()).collect::<Vec<_>>().join(","))),
                    ("tx_packets", Json::Int(tx)),
                    ("offered_gbps", Json::Num(rate(tx_bytes))),
                    ("rx_packets", Json::Int(rx)),
                    ("throughput_gbps", Json::Num(rate(rx_bytes))),
                    ("throughput_mpps", Json::Num(if secs > 0.0 { rx as f64 / secs / 1e6 } else { 0.0 })),
                    ("dropped", Json::Int(dropped)),
                    ("drops", Json::Obj(reasons.iter().map(|(k, v)| (k.to_string(), Json::Int(*v))).collect())),
                    ("latency_ns", latency_json(&lat)),
                    ("accelerators", Json::Obj(buckets)),
                ]),
            ));
        }
        Json::Obj(out)
    }

    pub fn metrics_json(&self) -> String {
        let mut s = String::new();
        self.metrics().write(&mut s);
        s
    }
}

/// Gb/s of `bytes` over `secs` (0 for an empty run).
fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e9
    } else {
        0.0
    }
}

/// A latency histogram as metrics.json shows it (ns).
fn latency_json(h: &Histogram) -> Json {
    obj(vec![
        ("p50", Json::Int(h.quantile(0.5))),
        ("p99", Json::Int(h.quantile(0.99))),
        ("p999", Json::Int(h.quantile(0.999))),
        ("mean", Json::Num(h.mean())),
        ("min", Json::Int(if h.total == 0 { 0 } else { h.min })),
        ("max", Json::Int(h.max)),
    ])
}
