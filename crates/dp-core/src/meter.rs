//! OpenFlow 1.3 meters (spec §5.7): a table of meters, each a set of bands
//! with one token bucket per band, driven by the caller's clock (the
//! emulator's modelled time, in nanoseconds), never by the wall clock.
//!
//! Semantics (those of Open vSwitch's userspace datapath, in exact integer
//! arithmetic):
//! * a band of rate R (kb/s, or packets/s with `pktps`) has a bucket of
//!   capacity B = `burst_size` (kilobits or packets) when the meter has the
//!   `burst` flag and a non-zero burst size, else B = R (one second's worth);
//!   buckets start full;
//! * on each packet every band's bucket first gains R × (elapsed time) and is
//!   capped at B; the packet then takes its cost (its bits, or one packet)
//!   from every bucket that holds enough; a band whose bucket does not hold
//!   enough is *exceeded*;
//! * of the exceeded bands the one with the highest rate applies: `drop`
//!   drops the packet, `dscp_remark` raises the drop precedence of an AF
//!   DSCP (RFC 2597: class 1–4, precedence 1–3) by `prec_level`, capped at 3;
//!   other DSCPs are left alone;
//! * counters: packets/bytes into the meter, per band packets/bytes it
//!   applied to.
//!
//! Units inside: a kb/s bucket holds micro-bits (R kb/s adds exactly R
//! micro-bits per ns), a packets/s bucket nano-packets (R per ns), so no
//! rounding ever happens. State: the meters. Cost: O(bands) per packet.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BandKind {
    Drop,
    DscpRemark { prec_level: u8 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Band {
    pub kind: BandKind,
    pub rate: u32,
    pub burst_size: u32,
}

/// A meter's configuration (OFPT_METER_MOD body).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MeterConfig {
    pub id: u32,
    pub pktps: bool,
    pub burst: bool,
    pub stats: bool,
    pub bands: Vec<Band>,
}

/// What the meter decided for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Drop { band: usize },
    /// A dscp_remark band applied: raise the drop precedence by `prec_level` (`remark_dscp`).
    Remark { band: usize, prec_level: u8 },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MeterCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    /// Per band: (packets, bytes) the band applied to.
    pub bands: Vec<(u64, u64)>,
    /// Modelled time the meter was added (ns).
    pub since_ns: u64,
}

#[derive(Debug, Clone)]
struct BandState {
    tokens: u128,
    cap: u128,
    per_ns: u128,
}

#[derive(Debug, Clone)]
struct MeterState {
    cfg: MeterConfig,
    bands: Vec<BandState>,
    last_ns: u64,
    counters: MeterCounters,
}

const MICRO: u128 = 1_000_000;
const NANO: u128 = 1_000_000_000;

impl MeterState {
    fn new(cfg: MeterConfig, now_ns: u64) -> Self {
        let bands = cfg
            .bands
            .iter()
            .map(|b| {
                let burst = if cfg.burst && b.burst_size > 0 { b.burst_size } else { b.rate };
                // kb/s: bucket in micro-bits (1 kbit = 1e9 micro-bits); pkt/s: nano-packets
                let cap = u128::from(burst) * NANO;
                BandState { tokens: cap, cap, per_ns: u128::from(b.rate) }
            })
            .collect();
        let n = cfg.bands.len();
        MeterState { cfg, bands, last_ns: now_ns, counters: MeterCounters { bands: vec![(0, 0); n], since_ns: now_ns, ..Default::default() } }
    }

    fn run(&mut self, now_ns: u64, len: usize) -> Verdict {
        let dt = u128::from(now_ns.saturating_sub(self.last_ns));
        self.last_ns = self.last_ns.max(now_ns);
        let cost = if self.cfg.pktps { NANO } else { len as u128 * 8 * MICRO };
        self.counters.packets_in += 1;
        self.counters.bytes_in += len as u64;
        let mut hit: Option<usize> = None;
        for (i, b) in self.bands.iter_mut().enumerate() {
            b.tokens = (b.tokens + dt * b.per_ns).min(b.cap);
            if b.tokens >= cost {
                b.tokens -= cost;
            } else if hit.map_or(true, |h| self.cfg.bands[h].rate < self.cfg.bands[i].rate) {
                hit = Some(i);
            }
        }
        let Some(i) = hit else { return Verdict::Pass };
        let c = &mut self.counters.bands[i];
        c.0 += 1;
        c.1 += len as u64;
        match self.cfg.bands[i].kind {
            BandKind::Drop => Verdict::Drop { band: i },
            BandKind::DscpRemark { prec_level } => Verdict::Remark { band: i, prec_level },
        }
    }
}

/// A DSCP after a `dscp_remark` band of `prec_level`: AF codepoints (class
/// 1–4, drop precedence 1–3) get their precedence raised, capped at 3.
pub fn remark_dscp(dscp: u8, prec_level: u8) -> u8 {
    let class = dscp >> 3;
    let prec = (dscp >> 1) & 3;
    if !(1..=4).contains(&class) || prec == 0 || dscp & 1 != 0 {
        return dscp;
    }
    let new = (u16::from(prec) + u16::from(prec_level)).min(3) as u8;
    (class << 3) | (new << 1)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeterError {
    Exists(u32),
    Unknown(u32),
    InvalidId(u32),
    NoBands(u32),
    BadRate(u32),
}

impl std::fmt::Display for MeterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeterError::Exists(id) => write!(f, "meter {id} already exists"),
            MeterError::Unknown(id) => write!(f, "meter {id} does not exist"),
            MeterError::InvalidId(id) => write!(f, "meter id {id:#x} is not 1..0xffff0000 or slowpath (0xfffffffd)"),
            MeterError::NoBands(id) => write!(f, "meter {id} has no bands"),
            MeterError::BadRate(id) => write!(f, "meter {id} has a band of rate 0"),
        }
    }
}

pub const OFPM_MAX: u32 = 0xffff_0000;
/// OpenFlow's slowpath meter: Open vSwitch 3.1 runs it for `controller(meter_id=0xfffffffd)` only
/// (measured on one bridge), so here it is a meter like 1..OFPM_MAX.
pub const OFPM_SLOWPATH: u32 = 0xffff_fffd;

/// The meters of one switch (or of several switches sharing one budget).
#[derive(Debug, Clone, Default)]
pub struct MeterTable {
    meters: BTreeMap<u32, MeterState>,
}

impl MeterTable {
    fn check(cfg: &MeterConfig) -> Result<(), MeterError> {
        if cfg.id == 0 || (cfg.id > OFPM_MAX && cfg.id != OFPM_SLOWPATH) {
            return Err(MeterError::InvalidId(cfg.id));
        }
        if cfg.bands.is_empty() {
            return Err(MeterError::NoBands(cfg.id));
        }
        if cfg.bands.iter().any(|b| b.rate == 0) {
            return Err(MeterError::BadRate(cfg.id));
        }
        Ok(())
    }

    /// OFPMC_ADD: a new meter, buckets full, counters zero.
    pub fn add(&mut self, cfg: MeterConfig, now_ns: u64) -> Result<(), MeterError> {
        Self::check(&cfg)?;
        if self.meters.contains_key(&cfg.id) {
            return Err(MeterError::Exists(cfg.id));
        }
        self.meters.insert(cfg.id, MeterState::new(cfg, now_ns));
        Ok(())
    }

    /// OFPMC_MODIFY: new bands (buckets full again); the meter's in-counters stay.
    pub fn modify(&mut self, cfg: MeterConfig, now_ns: u64) -> Result<(), MeterError> {
        Self::check(&cfg)?;
        let Some(old) = self.meters.get(&cfg.id) else { return Err(MeterError::Unknown(cfg.id)) };
        let (pin, bin, since) = (old.counters.packets_in, old.counters.bytes_in, old.counters.since_ns);
        let mut st = MeterState::new(cfg, now_ns);
        st.counters.packets_in = pin;
        st.counters.bytes_in = bin;
        st.counters.since_ns = since;
        self.meters.insert(st.cfg.id, st);
        Ok(())
    }

    /// OFPMC_DELETE (`OFPM_ALL` = 0xffffffff deletes all); true if one existed.
    pub fn remove(&mut self, id: u32) -> bool {
        if id == u32::MAX {
            let any = !self.meters.is_empty();
            self.meters.clear();
            return any;
        }
        self.meters.remove(&id).is_some()
    }

    pub fn contains(&self, id: u32) -> bool {
        self.meters.contains_key(&id)
    }

    pub fn is_empty(&self) -> bool {
        self.meters.is_empty()
    }

    /// Run one packet of `len` bytes through meter `id` at time `now_ns`;
    /// None if there is no such meter.
    pub fn run(&mut self, id: u32, now_ns: u64, len: usize) -> Option<Verdict> {
        self.meters.get_mut(&id).map(|m| m.run(now_ns, len))
    }

    pub fn config(&self, id: u32) -> Option<&MeterConfig> {
        self.meters.get(&id).map(|m| &m.cfg)
    }

    pub fn counters(&self, id: u32) -> Option<&MeterCounters> {
        self.meters.get(&id).map(|m| &m.counters)
    }

    pub fn ids(&self) -> Vec<u32> {
        self.meters.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop_meter(rate_kbps: u32, burst_kbit: u32) -> MeterConfig {
        MeterConfig { id: 1, pktps: false, burst: true, stats: true, bands: vec![Band { kind: BandKind::Drop, rate: rate_kbps, burst_size: burst_kbit }] }
    }

    /// 10 Mb/s of 1250-byte packets for 10 s through a 1 Mb/s drop band with a
    /// 10 kbit burst: exactly rate × time + burst passes.
    #[test]
    fn drop_band_holds_rate() {
        let mut t = MeterTable::default();
        t.add(drop_meter(1000, 10), 0).unwrap();
        let gap_ns = 1_000_000u64; // 1250 B = 10 kbit every 1 ms = 10 Mb/s
        let (mut passed, mut n) = (0u64, 0u64);
        let mut now = 0;
        while now < 10_000_000_000 {
            if t.run(1, now, 1250) == Some(Verdict::Pass) {
                passed += 1250;
            }
            n += 1;
            now += gap_ns;
        }
        // 10 s × 1 Mb/s = 10 Mbit = 1,000,000 bytes, plus the 10 kbit bucket
        let expect = 10_000_000 / 8 + 10_000 / 8;
        assert!((passed as i64 - expect as i64).abs() <= 1250, "passed {passed} expected {expect}");
        let c = t.counters(1).unwrap();
        assert_eq!(c.packets_in, n);
        assert_eq!(c.bytes_in, n * 1250);
        assert_eq!(c.bands[0].1 + passed, n * 1250);
    }

    /// Ids 1..0xffff0000 and OpenFlow's slowpath meter; not 0, 0xffff0001, controller, OFPM_ALL.
    #[test]
    fn slowpath_is_a_meter_id_and_the_other_reserved_ids_are_not() {
        let mut t = MeterTable::default();
        for id in [OFPM_MAX, OFPM_SLOWPATH] {
            t.add(MeterConfig { id, ..drop_meter(8, 8) }, 0).unwrap();
            assert_eq!(t.run(id, 0, 1000), Some(Verdict::Pass));
            assert_eq!(t.run(id, 0, 1), Some(Verdict::Drop { band: 0 }));
        }
        for id in [0, OFPM_MAX + 1, 0xffff_fffe, u32::MAX] {
            assert_eq!(t.add(MeterConfig { id, ..drop_meter(8, 8) }, 0), Err(MeterError::InvalidId(id)));
        }
    }

    #[test]
    fn bucket_is_exact_and_starts_full() {
        let mut t = MeterTable::default();
        // 8 kb/s = 1 byte per ms; burst 8 kbit = 1000 bytes
        t.add(drop_meter(8, 8), 0).unwrap();
        assert_eq!(t.run(1, 0, 1000), Some(Verdict::Pass));
        assert_eq!(t.run(1, 0, 1), Some(Verdict::Drop { band: 0 }));
        assert_eq!(t.run(1, 99_999_999, 100), Some(Verdict::Drop { band: 0 })); // 99.99 bytes refilled
        assert_eq!(t.run(1, 100_000_000, 100), Some(Verdict::Pass)); // 100 bytes at 100 ms
        assert_eq!(t.run(1, 100_000_000, 1), Some(Verdict::Drop { band: 0 }));
        // capped at the burst: after a long pause only 1000 bytes pass
        assert_eq!(t.run(1, 100_000_000_000, 1000), Some(Verdict::Pass));
        assert_eq!(t.run(1, 100_000_000_000, 1), Some(Verdict::Drop { band: 0 }));
    }

    #[test]
    fn pktps_and_highest_exceeded_band_wins() {
        let mut t = MeterTable::default();
        let cfg = MeterConfig {
            id: 7,
            pktps: true,
            burst: true,
            stats: true,
            bands: vec![
                Band { kind: BandKind::DscpRemark { prec_level: 1 }, rate: 10, burst_size: 1 },
                Band { kind: BandKind::Drop, rate: 20, burst_size: 2 },
            ],
        };
        t.add(cfg, 0).unwrap();
        assert_eq!(t.run(7, 0, 64), Some(Verdict::Pass)); // both buckets have room
        assert_eq!(t.run(7, 0, 64), Some(Verdict::Remark { band: 0, prec_level: 1 })); // remark band empty
        assert_eq!(t.run(7, 0, 64), Some(Verdict::Drop { band: 1 })); // both exceeded: the higher rate drops
        assert_eq!(t.counters(7).unwrap().bands, vec![(1, 64), (1, 64)]);
        assert_eq!(t.run(9, 0, 64), None);
    }

    #[test]
    fn default_burst_is_one_second_and_modify_refills() {
        let mut t = MeterTable::default();
        let mut cfg = drop_meter(8, 0);
        cfg.burst = false;
        t.add(cfg.clone(), 0).unwrap();
        assert_eq!(t.run(1, 0, 1000), Some(Verdict::Pass)); // 8 kbit = 1000 bytes
        assert_eq!(t.run(1, 0, 1), Some(Verdict::Drop { band: 0 }));
        assert_eq!(t.add(cfg.clone(), 0), Err(MeterError::Exists(1)));
        t.modify(cfg, 0).unwrap();
        assert_eq!(t.run(1, 0, 1000), Some(Verdict::Pass));
        assert_eq!(t.counters(1).unwrap().packets_in, 3);
        assert!(t.remove(1) && !t.remove(1));
    }

    #[test]
    fn dscp_remark_raises_af_precedence_only() {
        assert_eq!(remark_dscp(10, 1), 12); // AF11 -> AF12
        assert_eq!(remark_dscp(12, 5), 14); // AF12 -> AF13 (capped)
        assert_eq!(remark_dscp(46, 1), 46); // EF untouched
        assert_eq!(remark_dscp(0, 1), 0); // best effort untouched
    }
}
