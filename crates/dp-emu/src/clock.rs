//! The deterministic event clock: integer picoseconds, a binary heap ordered by
//! (time, sequence number), and a seeded random generator per source.
//! Two events at the same picosecond run in the order they were scheduled, so
//! the same inputs and seed always give the same run.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in picoseconds (u64 covers ~213 days).
pub type Ps = u64;
pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Time to move `bits` at `bits_per_s`, rounded up to a whole picosecond.
pub fn transfer_ps(bits: f64, bits_per_s: f64) -> Ps {
    if bits_per_s <= 0.0 || !bits_per_s.is_finite() {
        return 0;
    }
    let x = bits * 1e12 / bits_per_s;
    let t = to_ps(x); // truncation; then round up by hand (avoids a libm call)
    if (t as f64) < x {
        t + 1
    } else {
        t
    }
}

/// Picoseconds per byte at `bits_per_s` (precompute once, then use `bytes_ps`).
pub fn ps_per_byte(bits_per_s: f64) -> f64 {
    if bits_per_s <= 0.0 || !bits_per_s.is_finite() {
        0.0
    } else {
        8e12 / bits_per_s
    }
}

/// Time to move `bytes` at a precomputed `ps_per_byte`, rounded up.
#[inline]
pub fn bytes_ps(bytes: usize, ps_per_byte: f64) -> Ps {
    let x = bytes as f64 * ps_per_byte;
    let t = to_ps(x);
    if (t as f64) < x {
        t + 1
    } else {
        t
    }
}

/// Time for `cycles` on a core running at `hz` (already scaled by relative speed).
#[inline]
pub fn cycles_ps(cycles: f64, hz: f64) -> Ps {
    if cycles <= 0.0 || hz <= 0.0 {
        return 0;
    }
    to_ps(cycles * 1e12 / hz + 0.5)
}

/// Truncate a non-negative picosecond count held in an f64. Goes through i64
/// (one instruction on x86-64; f64 -> u64 is a branchy sequence); times stay
/// far below 2^63 ps (106 days).
#[inline(always)]
pub fn to_ps(x: f64) -> Ps {
    x as i64 as Ps
}

struct Entry<E> {
    at: Ps,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: invert so the earliest (then lowest seq) pops first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.cmp(&self.at).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// A discrete-event queue.
pub struct Scheduler<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Ps,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler { heap: BinaryHeap::with_capacity(1024), seq: 0, now: 0 }
    }
}

impl<E> Scheduler<E> {
    pub fn now(&self) -> Ps {
        self.now
    }
    /// Schedule `ev` at `at` (never earlier than now).
#[inline]
    pub fn at(&mut self, at: Ps, ev: E) {
        let at = at.max(self.now);
        self.seq += 1;
        self.heap.push(Entry { at, seq: self.seq, ev });
    }
    /// Time of the next event, if any.
#[inline]
    pub fn peek_time(&self) -> Option<Ps> {
        self.heap.peek().map(|e| e.at)
    }
    /// Pop the next event if it is due at or before `until`; advances the clock.
#[inline]
    pub fn pop_until(&mut self, until: Ps) -> Option<(Ps, E)> {
        if self.heap.peek()?.at > until {
            return None;
        }
        let e = self.heap.pop()?;
        self.now = e.at;
        Some((e.at, e.ev))
    }
    pub fn advance_to(&mut self, t: Ps) {
        self.now = self.now.max(t);
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// xoshiro256** seeded through splitmix64: small, fast, and reproducible.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }
    /// A generator for stream `stream` derived from a run seed.
    pub fn derive(seed: u64, stream: u64) -> Self {
        Rng::new(seed ^ stream.wrapping_mul(0xd605_bbb5_8c8a_bd35).rotate_left(17))
    }
    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }
    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
    /// Exponential with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }
    /// Uniform integer in [lo, hi].
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_pop_in_schedule_order() {
        let mut s = Scheduler::default();
        s.at(10, "b");
        s.at(5, "a");
        s.at(10, "c");
        let order: Vec<_> = std::iter::from_fn(|| s.pop_until(100)).map(|(_, e)| e).collect();
        assert_eq!(order, vec!["a", "b", "c"]);
    }

    #[test]
    fn pop_until_respects_horizon() {
        let mut s = Scheduler::default();
        s.at(10, 1);
        assert!(s.pop_until(9).is_none());
        assert_eq!(s.pop_until(10), Some((10, 1)));
    }

    #[test]
    fn rng_is_reproducible_and_streams_differ() {
        let a: Vec<u64> = (0..4).map({ let mut r = Rng::new(7); move |_| r.next_u64() }).collect();
        let b: Vec<u64> = (0..4).map({ let mut r = Rng::new(7); move |_| r.next_u64() }).collect();
        assert_eq!(a, b);
        assert_ne!(Rng::derive(7, 1).next_u64(), Rng::derive(7, 2).next_u64());
        let mut r = Rng::new(1);
        let mean: f64 = (0..20000).map(|_| r.exp(3.0)).sum::<f64>() / 20000.0;
        assert!((mean - 3.0).abs() < 0.1, "{mean}");
    }

    #[test]
    fn transfer_time_of_a_64_byte_frame_at_10g() {
        assert_eq!(transfer_ps(64.0 * 8.0, 10e9), 51_200);
    }
}
