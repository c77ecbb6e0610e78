//! Log-linear latency histogram in the style of HdrHistogram: values below 128
//! are exact; above, each power of two is split into 64 sub-buckets, so any
//! recorded value is reported within 1/64 (1.6 %) of its true value. Fixed
//! memory (~4k counters for 64-bit values), O(1) record.

const SUB_BITS: u32 = 7; // 128 exact values, then 64 sub-buckets per octave
const HALF: u64 = 1 << (SUB_BITS - 1);

#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    pub total: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Vec::new(), total: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

fn index(v: u64) -> usize {
    if v < (1 << SUB_BITS) {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let e = msb - (SUB_BITS - 1);
    let m = v >> e; // in [64, 128)
    ((1 << SUB_BITS) + (e as u64 - 1) * HALF + (m - HALF)) as usize
}

/// The smallest and largest value that land in bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < (1 << SUB_BITS) {
        return (i, i);
    }
    let r = i - (1 << SUB_BITS);
    let e = r / HALF + 1;
    let m = r % HALF + HALF;
    (m << e, ((m + 1) << e) - 1)
}

impl Histogram {
#[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
        self.sum = self.sum.saturating_add(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Value at quantile `q` in [0, 1] (bucket midpoint, clamped to min/max); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        if rank >= self.total {
            return self.max;
        }
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds(i);
                return (lo + (hi - lo) / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    pub fn merge(&mut self, o: &Histogram) {
        if o.counts.len() > self.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
        self.sum = self.sum.saturating_add(o.sum);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_contiguously() {
        let mut prev_hi = None;
        for i in 0..3000 {
            let (lo, hi) = bounds(i);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "bucket {i}");
            }
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            prev_hi = Some(hi);
        }
    }

    #[test]
    fn quantiles_are_within_relative_error() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 50_000.0), (0.99, 99_000.0), (0.999, 99_900.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want < 0.016, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.quantile(1.0), 100_000);
    }
}
