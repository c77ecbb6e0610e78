//! XorShift64 (Marsaglia's 13/7/17 shifts): a tiny deterministic generator for
//! seeded tests, benchmarks and rule-set generators. Same seed, same sequence
//! on every platform. Not for statistics-grade sampling or anything secret;
//! a zero seed is a fixed point (always 0), so callers seed it non-zero.

/// The generator's state is its last output.
#[derive(Debug, Clone)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A value in `0..n` (`n` > 0; modulo bias is irrelevant at test sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::XorShift64;

    #[test]
    fn known_sequence_and_ranges() {
        let mut r = XorShift64(1);
        assert_eq!(r.next(), 1082269761);
        let mut r = XorShift64(42);
        assert!((0..1000).all(|_| r.below(7) < 7));
        let hits = (0..10_000).filter(|_| r.chance(30)).count();
        assert!((2700..3300).contains(&hits), "{hits}");
    }
}
