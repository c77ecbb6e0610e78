//! Back-off for exact-match caches whose hit rate is too low to pay.
//!
//! A cache in front of a lookup costs a hash, a probe and (on a miss) an
//! insert per packet; with many distinct flows almost every probe misses
//! and the cache only slows lookups down (and evicts the tables' own data
//! from the CPU caches). While the cache is on, the gate looks at it every
//! `STEP` lookups and judges it once the lookups since its last judgment
//! hold `EVIDENCE` *warm* ones (or a whole window, twice the cache's
//! capacity, has passed): when fewer than `MIN_HIT_PERCENT` of the warm
//! lookups hit, the cache is bypassed for a while (no hash, no probe, no
//! insert), then switched on again for a short trial (`TRIAL` lookups:
//! entries stay valid while bypassed, so flows that came back hit at once);
//! each failed trial doubles the bypass, up to `MAX_BACKOFF` windows, and a
//! good one turns the cache back on. Warm lookups are those that did not
//! fill a free or stale entry (or, for a cache that grows, evict one before
//! it reached its largest size): a cold cache (first use, after a rule
//! change) misses once per flow before it can hit, and those misses say
//! nothing about whether it will pay; misses that evict a live entry do.
//! So a working set the cache can hold (e.g. 60,000 flows replayed in the
//! 131,072-entry path cache) keeps it on while it warms, and a stream of
//! new flows turns it off once the cache is about half full. The price:
//! after a rule change (every entry stale) the next trial fills until the
//! evidence is in — on 500,000 distinct ClassBench flows, invalidated every
//! million packets, ~74,000 probed misses per million packets, 0.91x the
//! pipeline with no cache.
//! The threshold is high because a miss costs more than the lookup it
//! fronts (hash, probe, insert, evicting the tables' data from the CPU
//! caches): on 60,000 distinct ClassBench flows a path cache hitting 28 %
//! made the pipeline 0.72x as fast as with no cache.
//! State: countdown, lookups and cache counters since the last judgment,
//! current back-off. Cost: one decrement and compare per lookup.

/// Below this hit rate (percent of the warm lookups judged) the cache is bypassed.
pub const MIN_HIT_PERCENT: u64 = 50;
/// Shortest window (lookups).
const MIN_WINDOW: u64 = 8192;
/// While on, the gate looks at the cache every `STEP` lookups and judges
/// once the lookups since its last judgment hold `EVIDENCE` warm ones (or
/// a whole window has passed).
const STEP: u64 = 8192;
const EVIDENCE: u64 = 4096;
/// Lookups of a trial after a bypass.
const TRIAL: u64 = 4096;
/// First bypass after a bad window, and the longest, in windows.
const FIRST_BACKOFF: u64 = 4;
const MAX_BACKOFF: u64 = 64;

#[derive(Clone, Debug)]
pub struct Gate {
    on: bool,
    left: u64,
    window: u64,
    /// Lookups of the current countdown.
    phase: u64,
    /// Lookups since the last judgment (on), and the counters then.
    since: u64,
    hits_at_start: u64,
    fills_at_start: u64,
    backoff: u64,
    /// Lookups of finished bypass phases.
    bypassed_done: u64,
}

impl Gate {
    /// A gate for a cache of `capacity` entries, starting on.
    pub fn new(capacity: usize) -> Self {
        let window = (2 * capacity as u64).max(MIN_WINDOW);
        Gate { on: true, left: STEP, window, phase: STEP, since: 0, hits_at_start: 0, fills_at_start: 0, backoff: FIRST_BACKOFF, bypassed_done: 0 }
    }

    /// Resize the window for a cache that now holds `capacity` entries.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.window = (2 * capacity as u64).max(MIN_WINDOW);
    }

    /// Whether this lookup should use the cache; `hits`, `fills`: the
    /// cache's counters so far of hits and of misses that filled a free or
    /// stale entry (the gate reads them at window ends).
    #[inline(always)]
    pub fn admit(&mut self, hits: u64, fills: u64) -> bool {
        // one subtract and a jump on its borrow: a phase ends when this
        // lookup finds none left
        let (left, ended) = self.left.overflowing_sub(1);
        self.left = left;
        if ended {
            self.turn(hits, fills);
        }
        self.on
    }

    /// Start over with the cache on and no history (the cache was switched
    /// back on); `hits`, `fills`: the cache's counters now.
    pub fn restart(&mut self, hits: u64, fills: u64) {
        self.bypassed_done = self.bypassed();
        (self.on, self.left, self.phase, self.since, self.backoff) = (true, STEP, STEP, 0, FIRST_BACKOFF);
        (self.hits_at_start, self.fills_at_start) = (hits, fills);
    }

    /// Lookups that bypassed the cache so far.
    pub fn bypassed(&self) -> u64 {
        self.bypassed_done + if self.on { 0 } else { self.phase - self.left }
    }

    /// Whether the cache is in use now (no lookup counted).
    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Start the next phase with this lookup (counted in it).
    #[cold]
    fn turn(&mut self, hits: u64, fills: u64) {
        let mut judged = true;
        if self.on {
            self.since += self.phase;
            let got = hits.saturating_sub(self.hits_at_start);
            let warm = self.since.saturating_sub(fills.saturating_sub(self.fills_at_start));
            if warm < EVIDENCE && self.since < self.window {
                // mostly cold misses so far: look again after another step
                judged = false;
                self.left = STEP;
            } else if got * 100 < warm * MIN_HIT_PERCENT {
                self.on = false;
                self.left = self.window * self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
            } else {
                self.backoff = FIRST_BACKOFF;
                self.left = STEP;
            }
        } else {
            self.bypassed_done += self.phase;
            self.on = true;
            self.left = TRIAL;
        }
        if judged {
            self.since = 0;
            self.hits_at_start = hits;
            self.fills_at_start = fills;
        }
        self.phase = self.left;
        self.left -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive the gate for `lookups` lookups with a cache whose admitted
    /// lookups hit every other time (`hit`) or never; `hits` is the cache's
    /// running hit counter. Returns the share of lookups admitted.
    fn admitted(g: &mut Gate, hits: &mut u64, lookups: u64, hit: bool) -> f64 {
        let mut n_admit = 0u64;
        for i in 0..lookups {
            if g.admit(*hits, 0) {
                n_admit += 1;
                if hit && i % 2 == 1 {
                    *hits += 1;
                }
            }
        }
        n_admit as f64 / lookups as f64
    }

    #[test]
    fn a_cache_that_hits_stays_on() {
        let (mut g, mut hits) = (Gate::new(1000), 0);
        assert_eq!(admitted(&mut g, &mut hits, 1_000_000, true), 1.0);
        assert_eq!(g.bypassed(), 0);
    }

    #[test]
    fn a_cache_that_misses_is_bypassed_almost_always() {
        let (mut g, mut hits) = (Gate::new(1000), 0);
        let share = admitted(&mut g, &mut hits, 10_000_000, false);
        assert!(share < 0.05, "admitted {share}");
        assert!(g.bypassed() > 9_000_000);
    }

    #[test]
    fn comes_back_when_the_traffic_turns_cacheable() {
        let (mut g, mut hits) = (Gate::new(1000), 0);
        admitted(&mut g, &mut hits, 5_000_000, false);
        assert!(!g.is_on());
        // the next trial sees hits and the gate stays on from then on
        admitted(&mut g, &mut hits, MIN_WINDOW * (MAX_BACKOFF + 2), true);
        assert!(g.is_on());
        let share = admitted(&mut g, &mut hits, 1_000_000, true);
        assert_eq!(share, 1.0);
    }

    #[test]
    fn cold_misses_keep_it_on_and_evicting_misses_turn_it_off() {
        let mut g = Gate::new(1000);
        // a cache warming up: every lookup misses and fills a free entry
        let mut fills = 0u64;
        for _ in 0..3 * g.window {
            assert!(g.admit(0, fills), "cold misses turned the cache off");
            fills += 1;
        }
        // full now: misses evict live entries and nothing hits
        let mut admitted = 0;
        for _ in 0..3 * g.window {
            admitted += u64::from(g.admit(0, fills));
        }
        assert!(!g.is_on());
        // judged as soon as a step brings enough warm lookups, not after a whole window
        assert!(admitted <= 2 * STEP, "{admitted} admitted");
    }

    #[test]
    fn switching_back_on_starts_afresh() {
        let (mut g, mut hits) = (Gate::new(1000), 0);
        admitted(&mut g, &mut hits, 5_000_000, false);
        assert!(!g.is_on());
        let bypassed = g.bypassed();
        g.restart(hits, 0);
        assert!(g.is_on());
        assert_eq!(g.bypassed(), bypassed, "the bypassed count is kept");
        assert_eq!(admitted(&mut g, &mut hits, 1_000_000, true), 1.0);
    }
}
