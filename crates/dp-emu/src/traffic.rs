//! Traffic sources. A source emits real Ethernet/IPv4/UDP (or TCP) frames into
//! one target (a switch port, an NF, ...) with an arrival process (constant,
//! Poisson, on/off, a rate schedule (ramp), or pcap replay with the recorded
//! gaps), a frame-size
//! distribution and a flow-size distribution (packets per flow; a fixed number
//! of flows are active at once and take turns). Each source has its own RNG
//! stream derived from the run seed. A source entering through an Ethernet
//! port is clamped to that port's line rate (preamble + IFG included), since a
//! wire cannot deliver faster; sources entering one port share its wire (the
//! emulator sends one frame at a time on it), so together they are clamped too. With an `EspSpec` a generated source sends its
//! flows as live ESP tunnel traffic instead (`esp_gen.rs`).

use crate::clock::{Ps, Rng, PS_PER_S};
use crate::esp_gen::{EspGen, EspSpec};
use crate::pcap::PcapRecord;

/// One packet in flight: its bytes plus bookkeeping the emulator needs.
#[derive(Debug, Clone)]
pub struct Packet {
    pub frame: Vec<u8>,
    /// When the source emitted it.
    pub born: Ps,
    /// Index of the emitting source.
    pub source: u32,
    /// Hash of the flow (used for RSS core selection).
    pub flow: u32,
    /// The packet mark a switch set (`pkt_mark`, OneSwitch's PCIe flow id):
    /// crosses switch-to-switch links with the frame, cleared when the packet
    /// leaves the switches (to an NF, a wire or a sink); 0 = none.
    pub mark: u32,
}

#[derive(Debug, Clone)]
pub enum Arrival {
    Constant { pps: f64 },
    Poisson { pps: f64 },
    /// Constant `pps` during `on`, silent during `off`, repeating.
    OnOff { pps: f64, on: Ps, off: Ps },
    /// The recorded frames at their recorded times (relative to the first).
    Replay { records: Vec<PcapRecord>, repeat: bool },
    /// A rate schedule: (time after the source's start, packets/s) points, the
    /// first at 0, times non-decreasing; between points the rate is held
    /// (`linear` false: steps) or interpolated (`linear` true; two points at one
    /// time make a jump). After the last point its rate holds. Packet k+1 leaves
    /// when the rate's integral since packet k reaches one packet.
    Ramp { points: Vec<(Ps, f64)>, linear: bool },
}

impl Arrival {
    /// Why this arrival process cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if let Arrival::Ramp { points, .. } = self {
            match points.first() {
                None => return Err("ramp: needs at least one (time, rate) point".into()),
                Some((t, _)) if *t != 0 => return Err("ramp: the first point must be at time 0".into()),
                _ => {}
            }
            for (i, w) in points.windows(2).enumerate() {
                if w[1].0 < w[0].0 {
                    return Err(format!("ramp: point {} is earlier than point {i}", i + 1));
                }
            }
            if let Some((i, (_, r))) = points.iter().enumerate().find(|(_, (_, r))| !(*r >= 0.0 && r.is_finite())) {
                return Err(format!("ramp: point {i} has rate {r}; rates must be finite and not negative"));
            }
        }
        Ok(())
    }
}

/// When the next packet of a rate schedule leaves: the time `t` (ps after the
/// start) after `from` at which the rate's integral since `from` reaches 1
/// packet; None if it never does (the rate stays 0).
pub fn ramp_next(points: &[(Ps, f64)], linear: bool, from: f64) -> Option<f64> {
    let mut need = 1.0;
    let mut t = from;
    for i in 0..points.len() {
        let (t0, r0) = (points[i].0 as f64, points[i].1 / PS_PER_S as f64);
        let Some(&(t1, r1)) = points.get(i + 1) else {
            return if r0 > 0.0 { Some(t.max(t0) + need / r0) } else { None };
        };
        let (t1, r1) = (t1 as f64, if linear { r1 / PS_PER_S as f64 } else { r0 });
        if t >= t1 {
            continue;
        }
        let a = t.max(t0);
        let rate = |x: f64| if t1 > t0 { r0 + (r1 - r0) * (x - t0) / (t1 - t0) } else { r0 };
        let (ra, re) = (rate(a), r1);
        let area = 0.5 * (ra + re) * (t1 - a);
        if area >= need {
            let k = (re - ra) / (t1 - a);
            // need = ra·x + k·x²/2, solved in the form that stays exact as k -> 0
            let x = 2.0 * need / (ra + (ra * ra + 2.0 * k * need).max(0.0).sqrt());
            return Some(a + x.min(t1 - a));
        }
        need -= area;
        t = t1;
    }
    None
}

#[derive(Debug, Clone)]
pub enum SizeDist {
    Fixed(u32),
    Uniform(u32, u32),
    /// (frame bytes, weight) pairs, e.g. IMIX.
    Weighted(Vec<(u32, f64)>),
}

impl SizeDist {
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(n) => *n as f64,
            SizeDist::Uniform(a, b) => (*a as f64 + *b as f64) / 2.0,
            SizeDist::Weighted(v) => {
                let w: f64 = v.iter().map(|x| x.1).sum();
                v.iter().map(|(s, x)| *s as f64 * x).sum::<f64>() / w.max(f64::MIN_POSITIVE)
            }
        }
    }
    fn sample(&self, rng: &mut Rng) -> u32 {
        match self {
            SizeDist::Fixed(n) => *n,
            SizeDist::Uniform(a, b) => rng.range(*a as u64, *b as u64) as u32,
            SizeDist::Weighted(v) => {
                let total: f64 = v.iter().map(|x| x.1).sum();
                let mut x = rng.unit() * total;
                for (s, w) in v {
                    if x <= *w {
                        return *s;
                    }
                    x -= w;
                }
                v.last().map(|x| x.0).unwrap_or(64)
            }
        }
    }
}

/// Packets per flow. Sizes are whole packets (at least 1) whose mean is the
/// configured `mean`: the exponential is drawn as its discrete twin (geometric
/// on 1, 2, ...), and the Pareto's scale is set so that the *rounded-up* sizes
/// average `mean` (build it with `FlowSizeDist::pareto`).
#[derive(Debug, Clone)]
pub enum FlowSizeDist {
    Fixed(u64),
    Exponential { mean: f64 },
    /// Heavy-tailed flow sizes: ceil(X) with X ~ Pareto(`scale`, `shape`), shape > 1.
    Pareto { mean: f64, shape: f64, scale: f64 },
}

impl FlowSizeDist {
    /// A Pareto flow-size distribution whose whole-packet sizes average `mean` (≥ 1).
    pub fn pareto(mean: f64, shape: f64) -> Self {
        let target = mean.max(1.0);
        let (mut lo, mut hi) = (0.0, target); // E[ceil X] ≥ E[X] > scale, so the scale is below the mean
        for _ in 0..64 {
            let mid = 0.5 * (lo + hi);
            if pareto_ceil_mean(mid, shape) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        FlowSizeDist::Pareto { mean, shape, scale: 0.5 * (lo + hi) }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            FlowSizeDist::Fixed(n) => (*n).max(1),
            FlowSizeDist::Exponential { mean } if *mean <= 1.0 => 1,
            FlowSizeDist::Exponential { mean } => {
                // ceil of an exponential with rate r is geometric with p = 1 - e^-r; mean 1/p = `mean`
                let continuous_mean = -1.0 / (1.0 - 1.0 / mean).ln();
                rng.exp(continuous_mean).ceil().max(1.0) as u64
            }
            FlowSizeDist::Pareto { shape, scale, .. } => (scale / rng.unit().powf(1.0 / shape)).ceil().max(1.0) as u64,
        }
    }
}

/// E[ceil X] for X ~ Pareto(scale, shape): the sum over k ≥ 0 of P(X > k), which
/// is 1 below the scale and (scale / k)^shape above; the far tail is integrated.
fn pareto_ceil_mean(scale: f64, shape: f64) -> f64 {
    const TERMS: u64 = 512;
    let k0 = scale.ceil().max(1.0) as u64; // first k with P(X > k) < 1 (k = 0 always counts 1)
    let mut sum = k0 as f64;
    for k in k0..k0 + TERMS {
        sum += (scale / k as f64).powf(shape);
    }
    let k1 = (k0 + TERMS) as f64 - 0.5; // midpoint rule for the rest: ∫ (scale/x)^shape dx from k1
    sum + scale.powf(shape) * k1.powf(1.0 - shape) / (shape - 1.0)
}

/// Header values of generated frames; flow `i` gets UDP/TCP source port
/// `src_port_base + i % 50000` and IPv4 source `ip_src + i / 50000`.
#[derive(Debug, Clone)]
pub struct FrameTemplate {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    pub vlan: Option<u16>,
    pub ip_src: u32,
    pub ip_dst: u32,
    pub ip_proto: u8,
    pub src_port_base: u16,
    pub dst_port: u16,
}

impl Default for FrameTemplate {
    fn default() -> Self {
        FrameTemplate {
            eth_dst: [0x02, 0, 0, 0, 0, 0x02],
            eth_src: [0x02, 0, 0, 0, 0, 0x01],
            vlan: None,
            ip_src: 0x0a00_0001,
            ip_dst: 0x0a00_0002,
            ip_proto: 17,
            src_port_base: 10000,
            dst_port: 80,
        }
    }
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in h.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

impl FrameTemplate {
    fn l4_offset(&self) -> usize {
        if self.vlan.is_some() { 38 } else { 34 }
    }

    /// Write a frame of `len` bytes (at least the headers) for flow `flow` into `buf`.
    pub fn build(&self, flow: u64, len: usize, buf: &mut Vec<u8>) {
        let l2 = if self.vlan.is_some() { 18 } else { 14 };
        let l4 = if self.ip_proto == 6 { 20 } else { 8 };
        let len = len.max(l2 + 20 + l4);
        buf.clear();
        buf.resize(len, 0);
        buf[0..6].copy_from_slice(&self.eth_dst);
        buf[6..12].copy_from_slice(&self.eth_src);
        let mut o = 12;
        if let Some(vid) = self.vlan {
            buf[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
            buf[14..16].copy_from_slice(&(vid & 0x0fff).to_be_bytes());
            o = 16;
        }
        buf[o..o + 2].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = o + 2;
        let ip_len = (len - ip) as u16;
        buf[ip] = 0x45;
        buf[ip + 2..ip + 4].copy_from_slice(&ip_len.to_be_bytes());
        buf[ip + 8] = 64;
        buf[ip + 9] = self.ip_proto;
        let src = self.ip_src.wrapping_add((flow / 50_000) as u32);
        buf[ip + 12..ip + 16].copy_from_slice(&src.to_be_bytes());
        buf[ip + 16..ip + 20].copy_from_slice(&self.ip_dst.to_be_bytes());
        let c = ipv4_checksum(&buf[ip..ip + 20]);
        buf[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        let t = ip + 20;
        let sport = self.src_port_base.wrapping_add((flow % 50_000) as u16);
        buf[t..t + 2].copy_from_slice(&sport.to_be_bytes());
        buf[t + 2..t + 4].copy_from_slice(&self.dst_port.to_be_bytes());
        if self.ip_proto == 6 {
            buf[t + 12] = 0x50;
            buf[t + 13] = 0x10; // ACK
        } else {
            buf[t + 4..t + 6].copy_from_slice(&((len - t) as u16).to_be_bytes());
        }
    }
}

#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub name: String,
    pub arrival: Arrival,
    pub sizes: SizeDist,
    pub flow_sizes: FlowSizeDist,
    pub concurrent_flows: u32,
    pub template: FrameTemplate,
    pub start: Ps,
    /// Stop emitting at this time (None: run to the end).
    pub stop: Option<Ps>,
    /// Wire rate the source cannot exceed (bits/s on the wire incl. 20 B of preamble + IFG).
    pub line_bps: Option<f64>,
    /// Send the flows as ESP tunnel traffic (generated sources only).
    pub esp: Option<EspSpec>,
}

impl SourceSpec {
    pub fn new(name: &str, arrival: Arrival) -> Self {
        SourceSpec {
            name: name.to_string(),
            arrival,
            sizes: SizeDist::Fixed(64),
            flow_sizes: FlowSizeDist::Fixed(u64::MAX),
            concurrent_flows: 1,
            template: FrameTemplate::default(),
            start: 0,
            stop: None,
            line_bps: None,
            esp: None,
        }
    }

    /// Why this source cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        self.arrival.check().map_err(|e| format!("source {}: {e}", self.name))?;
        if let Some(esp) = &self.esp {
            if matches!(self.arrival, Arrival::Replay { .. }) {
                return Err(format!("source {}: esp applies to generated traffic, not to a replay", self.name));
            }
            esp.check().map_err(|e| format!("source {}: {e}", self.name))?;
        }
        Ok(())
    }
}

/// 64 -> 32-bit hash mixer (splitmix64 finaliser).
pub fn mix32(x: u64) -> u32 {
    let mut z = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^= z >> 29;
    z = z.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (z >> 32) as u32
}

/// A running source: spec + RNG + where it is in its arrival process.
pub struct Source {
    pub spec: SourceSpec,
    pub index: u32,
    rng: Rng,
    next_at: Ps,
    wire_free: Ps,
    replay_pos: usize,
    replay_offset: Ps,
    slots: Vec<(u64, u64)>, // (flow id, packets left)
    /// Last built frame and its (length, flow / 50000): frames differing only in
    /// the L4 source port are copied from it and patched.
    cached: (usize, u64, Vec<u8>),
    slot: usize,
    next_flow: u64,
    pub emitted: u64,
    pub emitted_bytes: u64,
    /// Mean gap between packets (ps) for rate-based arrivals.
    gap_ps: f64,
    line_ps_per_byte: f64,
    /// Ramp: ideal time of the last packet (ps after the start).
    ramp_at: f64,
    esp: Option<EspGen>,
}

impl Source {
    pub fn new(spec: SourceSpec, index: u32, seed: u64) -> Self {
        let rng = Rng::derive(seed, index as u64 + 1);
        let start = spec.start;
        let pps = match &spec.arrival {
            Arrival::Constant { pps } | Arrival::Poisson { pps } | Arrival::OnOff { pps, .. } => *pps,
            Arrival::Replay { .. } | Arrival::Ramp { .. } => 1.0,
        };
        // `check` (called by the emulator's add_source) has refused what `EspGen` would
        let esp = spec.esp.clone().map(|e| EspGen::new(e, Rng::derive(seed, index as u64 + 1).next_u64()).expect("checked ESP spec"));
        let gap_ps = PS_PER_S as f64 / pps.max(1e-9);
        let line_ps_per_byte = spec.line_bps.map_or(0.0, crate::clock::ps_per_byte);
        Source {
            gap_ps,
            line_ps_per_byte,
            slots: Vec::new(),
            cached: (0, u64::MAX, Vec::new()),
            spec,
            index,
            rng,
            next_at: start,
            wire_free: 0,
            replay_pos: 0,
            replay_offset: start,
            slot: 0,
            next_flow: 0,
            emitted: 0,
            emitted_bytes: 0,
            ramp_at: 0.0,
            esp,
        }
    }

    /// Packets sent so far on each ESP tunnel (empty for other sources).
    pub fn esp_sequence_numbers(&self) -> Vec<u64> {
        self.esp.as_ref().map(|e| e.sequence_numbers()).unwrap_or_default()
    }

    /// When the first packet is due (None for an empty replay).
    pub fn first_time(&mut self) -> Option<Ps> {
        match &self.spec.arrival {
            Arrival::Replay { records, .. } => records.first().map(|r| self.spec.start + r.at),
            Arrival::Poisson { .. } => {
                let gap = self.rng.exp(self.gap_ps);
                self.next_at = self.spec.start + crate::clock::to_ps(gap);
                Some(self.next_at)
            }
            Arrival::Ramp { points, linear } => {
                // at the start when the rate is positive there, else when the first packet is due
                let t = if points[0].1 > 0.0 && (points.len() == 1 || points[1].0 > 0) { Some(0.0) } else { ramp_next(points, *linear, 0.0) }?;
                self.ramp_at = t;
                self.next_at = self.spec.start + t.round() as Ps;
                match self.spec.stop {
                    Some(stop) if self.next_at >= stop => None,
                    _ => Some(self.next_at),
                }
            }
            _ => Some(self.spec.start),
        }
    }

    /// The flow the next packet belongs to, and the slot that holds it.
    fn next_flow_slot(&mut self) -> (u64, usize) {
        let n = self.spec.concurrent_flows.max(1) as usize;
        if self.slots.len() < n {
            let size = self.spec.flow_sizes.sample(&mut self.rng);
            self.slots.push((self.next_flow, size));
            self.next_flow += 1;
        }
        let i = if self.slot < self.slots.len() { self.slot } else { 0 };
        self.slot = if self.slot + 1 >= n { 0 } else { self.slot + 1 };
        let (flow, left) = self.slots[i];
        if left <= 1 {
            let size = self.spec.flow_sizes.sample(&mut self.rng);
            self.slots[i] = (self.next_flow, size);
            self.next_flow += 1;
        } else {
            self.slots[i].1 = left - 1;
        }
        (flow, i)
    }

    /// Emit the packet due at `now` into `buf` and return (packet, next emission time).
    pub fn emit(&mut self, now: Ps, mut buf: Vec<u8>) -> (Packet, Option<Ps>) {
        let flow_hash;
        match &self.spec.arrival {
            Arrival::Replay { records, .. } => {
                let r = &records[self.replay_pos];
                buf.clear();
                buf.extend_from_slice(&r.frame);
                flow_hash = frame_flow_hash(&buf);
            }
            _ if self.esp.is_some() => {
                let (flow, slot) = self.next_flow_slot();
                let len = self.spec.sizes.sample(&mut self.rng) as usize;
                if let Some(g) = self.esp.as_mut() {
                    g.build(&self.spec.template, flow, slot, len, &mut self.rng, &mut buf);
                }
                // RSS on the inner flow: a gateway spreads a tunnel's flows over its cores
                flow_hash = mix32(((self.index as u64) << 40) ^ flow);
            }
            _ => {
                let (flow, _) = self.next_flow_slot();
                let len = self.spec.sizes.sample(&mut self.rng) as usize;
                let (clen, cblock, cframe) = &mut self.cached;
                if *clen == len && *cblock == flow / 50_000 {
                    buf.clear();
                    buf.extend_from_slice(cframe);
                    let t = self.spec.template.l4_offset();
                    let sport = self.spec.template.src_port_base.wrapping_add((flow % 50_000) as u16);
                    buf[t..t + 2].copy_from_slice(&sport.to_be_bytes());
                } else {
                    self.spec.template.build(flow, len, &mut buf);
                    *clen = len;
                    *cblock = flow / 50_000;
                    cframe.clear();
                    cframe.extend_from_slice(&buf);
                }
                flow_hash = mix32(((self.index as u64) << 40) ^ flow);
            }
        }
        self.emitted += 1;
        self.emitted_bytes += buf.len() as u64;
        if self.line_ps_per_byte > 0.0 {
            self.wire_free = now + crate::clock::bytes_ps(buf.len() + 20, self.line_ps_per_byte);
        }
        let next = self.schedule_next(now);
        let pkt = Packet { frame: buf, born: now, source: self.index, flow: flow_hash, mark: 0 };
        (pkt, next)
    }

    fn schedule_next(&mut self, now: Ps) -> Option<Ps> {
        let next = match &self.spec.arrival {
            Arrival::Constant { .. } => now.max(self.next_at) + crate::clock::to_ps(self.gap_ps),
            Arrival::Poisson { .. } => now.max(self.next_at) + crate::clock::to_ps(self.rng.exp(self.gap_ps)),
            Arrival::OnOff { on, off, .. } => {
                let mut t = now.max(self.next_at) + crate::clock::to_ps(self.gap_ps);
                let period = on + off;
                if period > 0 && *on > 0 {
                    let phase = (t - self.spec.start) % period;
                    if phase >= *on {
                        t += period - phase;
                    }
                }
                t
            }
            Arrival::Ramp { points, linear } => {
                // from the ideal time of this packet, unless the wire delayed it (not by rounding to 1 ps)
                let late = now.saturating_sub(self.spec.start) as f64;
                let from = if late > self.ramp_at + 1.0 { late } else { self.ramp_at };
                match ramp_next(points, *linear, from) {
                    Some(t) => {
                        self.ramp_at = t;
                        self.spec.start + t.round() as Ps
                    }
                    None => return None,
                }
            }
            Arrival::Replay { records, repeat } => {
                self.replay_pos += 1;
                if self.replay_pos >= records.len() {
                    match replay_period(records) {
                        Some(period) if *repeat => self.replay_offset += period,
                        _ => return None,
                    }
                    self.replay_pos = 0;
                }
                self.replay_offset + records[self.replay_pos].at
            }
        };
        self.next_at = next;
        let t = next.max(self.wire_free);
        match self.spec.stop {
            Some(stop) if t >= stop => None,
            _ => Some(t),
        }
    }
}

/// How long one pass of a repeated recording lasts: its span plus one mean gap,
/// so the loop keeps the recording's average rate. None when the recording
/// spans no time (fewer than two records, or all at one instant): it cannot loop.
pub fn replay_period(records: &[PcapRecord]) -> Option<Ps> {
    let span = records.last()?.at;
    if records.len() < 2 || span == 0 {
        return None;
    }
    Some(span + (span / (records.len() as u64 - 1)).max(1))
}

/// Flow hash of a real frame (IPv4 5-tuple when present, else MAC pair).
pub fn frame_flow_hash(frame: &[u8]) -> u32 {
    match dp_core::parse_frame(frame) {
        Ok(h) => {
            let mut k: u64 = 0;
            if let (Some(s), Some(d)) = (h.ipv4_src, h.ipv4_dst) {
                k = ((u32::from_be_bytes(s) as u64) << 32) | u32::from_be_bytes(d) as u64;
            } else {
                for b in h.eth_src.iter().chain(h.eth_dst.iter()) {
                    k = k.rotate_left(8) ^ *b as u64;
                }
            }
            k ^= (h.ip_proto.unwrap_or(0) as u64) << 3;
            k ^= ((h.l4_src.unwrap_or(0) as u64) << 16 | h.l4_dst.unwrap_or(0) as u64).rotate_left(23);
            mix32(k)
        }
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_frames_parse_with_the_flow_port() {
        let t = FrameTemplate::default();
        let mut b = Vec::new();
        t.build(7, 64, &mut b);
        assert_eq!(b.len(), 64);
        let h = dp_core::parse_frame(&b).unwrap();
        assert_eq!(h.l4_src, Some(10007));
        assert_eq!(h.ip_proto, Some(17));
        assert_eq!(h.truncated, None);
        assert_eq!(ipv4_checksum(&b[14..34]), 0);
    }

    #[test]
    fn constant_source_is_clamped_to_line_rate() {
        let mut s = SourceSpec::new("s", Arrival::Constant { pps: 100e6 });
        s.line_bps = Some(10e9);
        let mut src = Source::new(s, 0, 1);
        let t0 = src.first_time().unwrap();
        let (_, t1) = src.emit(t0, Vec::new());
        assert_eq!(t1.unwrap() - t0, 67_200); // (64 + 20) B at 10 Gb/s
    }

    fn ramp_times(points: Vec<(Ps, f64)>, linear: bool, until: Ps) -> Vec<Ps> {
        let mut s = SourceSpec::new("r", Arrival::Ramp { points, linear });
        s.start = 5_000;
        s.check().unwrap();
        let mut src = Source::new(s, 0, 1);
        let mut out = vec![];
        let mut t = src.first_time();
        while let Some(now) = t {
            if now >= until {
                break;
            }
            out.push(now);
            t = src.emit(now, Vec::new()).1;
        }
        out
    }

    #[test]
    fn ramp_follows_its_schedule() {
        let ms = PS_PER_S / 1000;
        // steps: 1e6 pps for 1 ms, then 4e6 pps
        let t = ramp_times(vec![(0, 1e6), (ms, 4e6)], false, 5_000 + 2 * ms);
        assert_eq!(t[0], 5_000);
        assert_eq!(t[1] - t[0], 1_000_000);
        assert_eq!(t.iter().filter(|&&x| x < 5_000 + ms).count(), 1000);
        assert_eq!(t.len(), 1000 + 4000);
        assert_eq!(t[t.len() - 1] - t[t.len() - 2], 250_000);
        // linear from 0 to 2e6 pps over 1 ms: 1,000 packets in that ms, then 2e6 pps
        let t = ramp_times(vec![(0, 0.0), (ms, 2e6)], true, 5_000 + 2 * ms);
        let first = t.iter().filter(|&&x| x <= 5_000 + ms).count();
        assert!((999..=1001).contains(&first), "{first}");
        assert!((t.len() as i64 - 3000).abs() <= 1, "{}", t.len());
        // packet k of a linear ramp r(t) = a·t leaves at sqrt(2k/a)
        let a: f64 = 2e6 / 1e-3; // pps per second
        let k: f64 = 500.0;
        let want = 5_000.0 + (2.0 * k / a).sqrt() * PS_PER_S as f64;
        assert!((t[499] as f64 - want).abs() < 2.0, "{} vs {want}", t[499]);
        // a rate of 0 at the end stops the source: packets at 0, 1 µs, ... and 1 ms (the
        // integral over [0, 1 ms] is 1,000 packets after the one at the start)
        let t = ramp_times(vec![(0, 1e6), (ms, 1e6), (ms, 0.0)], true, 5_000 + 10 * ms);
        assert_eq!(t.len(), 1001);
        assert_eq!(*t.last().unwrap(), 5_000 + ms);
    }

    #[test]
    fn bad_ramps_are_refused() {
        let bad = |points: Vec<(Ps, f64)>| SourceSpec::new("r", Arrival::Ramp { points, linear: true }).check().unwrap_err();
        assert!(bad(vec![]).contains("at least one"));
        assert!(bad(vec![(5, 1.0)]).contains("time 0"));
        assert!(bad(vec![(0, 1.0), (10, 1.0), (5, 1.0)]).contains("earlier"));
        assert!(bad(vec![(0, -1.0)]).contains("negative"));
    }

    #[test]
    fn flows_rotate_and_renew() {
        let mut s = SourceSpec::new("s", Arrival::Constant { pps: 1e6 });
        s.concurrent_flows = 2;
        s.flow_sizes = FlowSizeDist::Fixed(2);
        let mut src = Source::new(s, 0, 1);
        let mut t = src.first_time().unwrap();
        let mut ports = vec![];
        for _ in 0..6 {
            let (p, n) = src.emit(t, Vec::new());
            ports.push(dp_core::parse_frame(&p.frame).unwrap().l4_src.unwrap() - 10000);
            t = n.unwrap();
        }
        assert_eq!(ports, vec![0, 1, 0, 1, 2, 3]);
    }

    #[test]
    fn flow_sizes_average_the_configured_mean() {
        let mut rng = Rng::new(7);
        for (dist, tol) in [
            (FlowSizeDist::Fixed(20), 0.0),
            (FlowSizeDist::Exponential { mean: 20.0 }, 0.01),
            (FlowSizeDist::Exponential { mean: 1.5 }, 0.01),
            (FlowSizeDist::pareto(20.0, 2.5), 0.02),
            (FlowSizeDist::pareto(3.0, 3.0), 0.01),
        ] {
            let n = 400_000;
            let sizes: Vec<u64> = (0..n).map(|_| dist.sample(&mut rng)).collect();
            let mean = sizes.iter().sum::<u64>() as f64 / n as f64;
            let want = match &dist {
                FlowSizeDist::Fixed(k) => *k as f64,
                FlowSizeDist::Exponential { mean } | FlowSizeDist::Pareto { mean, .. } => *mean,
            };
            assert!((mean - want).abs() <= tol * want, "{dist:?}: mean {mean}");
            assert!(sizes.iter().all(|&k| k >= 1));
        }
    }

    #[test]
    fn pareto_scale_solves_the_rounded_mean() {
        for (mean, shape) in [(20.0, 1.5), (4.0, 1.2), (100.0, 2.0), (1.0, 2.0)] {
            let FlowSizeDist::Pareto { scale, .. } = FlowSizeDist::pareto(mean, shape) else { unreachable!() };
            // brute force: many more terms than the closed-form tail needs
            let k0 = scale.ceil().max(1.0) as u64;
            let direct = k0 as f64 + (k0..k0 + 2_000_000).map(|k| (scale / k as f64).powf(shape)).sum::<f64>();
            let tail = scale.powf(shape) * ((k0 + 2_000_000) as f64 - 0.5).powf(1.0 - shape) / (shape - 1.0);
            assert!((direct + tail - mean).abs() < 1e-6 * mean, "mean {mean} shape {shape}: {}", direct + tail);
        }
    }

    fn replay_times(repeat: bool, n: usize) -> Vec<Ps> {
        let records = [0, 10_000, 30_000].map(|at| PcapRecord { at, frame: vec![0; 60] }).to_vec();
        let mut spec = SourceSpec::new("r", Arrival::Replay { records, repeat });
        spec.start = 1_000;
        let mut src = Source::new(spec, 0, 1);
        let mut times = vec![];
        let mut t = src.first_time();
        while let Some(now) = t {
            times.push(now);
            if times.len() == n {
                break;
            }
            t = src.emit(now, Vec::new()).1;
        }
        times
    }

    #[test]
    fn replay_keeps_recorded_gaps_and_loops_at_the_mean_gap() {
        assert_eq!(replay_times(false, 10), vec![1_000, 11_000, 31_000]);
        // span 30 ns + mean gap 15 ns: one pass lasts 45 ns
        assert_eq!(replay_times(true, 7), vec![1_000, 11_000, 31_000, 46_000, 56_000, 76_000, 91_000]);
        assert_eq!(replay_period(&[PcapRecord { at: 0, frame: vec![] }]), None);
    }
}
