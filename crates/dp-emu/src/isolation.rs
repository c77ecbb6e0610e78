//! FairNIC tenant isolation in the emulator: who a tenant is (its traffic
//! sources, for per-tenant metrics) and the per-tenant token buckets that rate
//! limit a tenant's jobs in front of a shared accelerator (FairNIC §6.4.3).
//!
//! Ingress buffer: NIC memory holding a tenant's packets (or, without
//! isolation, everyone's) from their arrival at an NF of the device until
//! their core work there is done. A packet that does not fit is refused
//! (`ingress_buffer_full`). State: bytes held and a min-heap of (release time,
//! bytes). Cost: one heap push and pop per packet entering a buffered NF.
//!
//! Core partitions need no state here: the scenario builder gives each
//! tenant's NFs only the cores the tenant reserves (see `add_nf`'s `cores`).
//!
//! Token bucket: a generic cell-rate algorithm. A job needing `service` ps of
//! accelerator time costs `service × accel_rate / tenant_rate` ps of the
//! tenant's budget; the bucket holds up to `burst` ps of accelerator time.
//! A job arriving at `t` may start at `max(t, tat − tolerance)` where `tat`
//! is the budget's theoretical arrival time; then `tat = max(start, tat) +
//! cost`. Jobs waiting for budget (start in the future) are bounded by
//! `depth`; beyond that the job is refused (counted as
//! `accelerator_rate_limited`).
//! State per bucket: `tat`, the start times of waiting jobs, counters.
//! Cost: O(1) amortised per accelerator job of a rate-limited tenant; NFs
//! without a bucket pay one `Option` check.

use crate::clock::Ps;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A tenant: a name and the traffic sources whose packets it owns.
#[derive(Debug, Clone, Default)]
pub struct Tenant {
    pub name: String,
    pub sources: Vec<u32>,
}

/// Bytes of packets waiting in a device for their core work, bounded.
#[derive(Debug, Clone)]
pub struct IngressBuffer {
    pub name: String,
    pub capacity: u64,
    used: u64,
    held: BinaryHeap<Reverse<(Ps, u64)>>,
    pub refused: u64,
}

impl IngressBuffer {
    pub fn new(name: &str, capacity: u64) -> Self {
        IngressBuffer { name: name.to_string(), capacity, used: 0, held: BinaryHeap::new(), refused: 0 }
    }

    /// Whether `bytes` more fit at `now` (counts a refusal if not).
    pub fn fits(&mut self, now: Ps, bytes: u64) -> bool {
        while let Some(&Reverse((t, b))) = self.held.peek() {
            if t > now {
                break;
            }
            self.held.pop();
            self.used -= b;
        }
        let ok = self.used + bytes <= self.capacity;
        if !ok {
            self.refused += 1;
        }
        ok
    }

    /// Hold `bytes` until `release`.
    pub fn hold(&mut self, bytes: u64, release: Ps) {
        self.used += bytes;
        self.held.push(Reverse((release, bytes)));
    }
}

/// One tenant's token bucket in front of one accelerator.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    pub tenant: String,
    pub dev: u16,
    pub accel: usize,
    /// The tenant's rate in the accelerator's units (Gb/s of its throughput).
    pub gbps: f64,
    /// Budget ps spent per ps of accelerator time (accelerator rate / tenant rate).
    stretch: f64,
    /// How far ahead of its budget a job may start (the burst, in budget ps).
    tolerance: Ps,
    tat: Ps,
    waiting: VecDeque<Ps>,
    depth: usize,
    pub jobs: u64,
    /// Jobs that had to wait for budget.
    pub delayed: u64,
    pub refused: u64,
}

impl TokenBucket {
    /// `accel_gbps`: the accelerator's rate; `burst_ps`: accelerator time the
    /// tenant may use at once; `depth`: jobs that may wait for budget.
    pub fn new(tenant: &str, dev: u16, accel: usize, gbps: f64, accel_gbps: f64, burst_ps: Ps, depth: usize) -> Self {
        let stretch = accel_gbps / gbps;
        TokenBucket {
            tenant: tenant.to_string(),
            dev,
            accel,
            gbps,
            stretch,
            tolerance: (burst_ps as f64 * stretch) as Ps,
            tat: 0,
            waiting: VecDeque::new(),
            depth: depth.max(1),
            jobs: 0,
            delayed: 0,
            refused: 0,
        }
    }

    /// A job decided at `now`, ready at `ready`, needing `service` ps of
    /// accelerator time: when it may start, or None if too many jobs wait.
    pub fn release(&mut self, now: Ps, ready: Ps, service: Ps) -> Option<Ps> {
        while self.waiting.front().is_some_and(|&s| s <= now) {
            self.waiting.pop_front();
        }
        let start = ready.max(self.tat.saturating_sub(self.tolerance));
        if start > ready {
            if self.waiting.len() >= self.depth {
                self.refused += 1;
                return None;
            }
            self.waiting.push_back(start);
            self.delayed += 1;
        }
        self.tat = start.max(self.tat) + (service as f64 * self.stretch) as Ps;
        self.jobs += 1;
        Some(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_jobs_are_spaced_at_the_tenant_rate() {
        // Tenant gets a quarter of the accelerator: each 100 ps job costs 400 ps of budget.
        let mut b = TokenBucket::new("t", 0, 0, 2.5, 10.0, 200, 100);
        let starts: Vec<Ps> = (0..5).map(|_| b.release(0, 0, 100).unwrap()).collect();
        // The burst (200 ps of accelerator time = 2 jobs + the first) starts at once.
        assert_eq!(&starts[..3], &[0, 0, 0]);
        assert_eq!(starts[4] - starts[3], 400);
        assert_eq!(b.delayed, 2);
    }

    #[test]
    fn long_run_rate_matches_the_tenant_share() {
        let mut b = TokenBucket::new("t", 0, 0, 1.0, 4.0, 1_000, 1_000_000);
        let mut last = 0;
        for _ in 0..10_000 {
            last = b.release(0, 0, 50).unwrap();
        }
        // 10 000 jobs × 50 ps at a quarter share need ~2 000 000 ps.
        assert!((1_990_000..=2_000_000).contains(&last), "{last}");
    }

    #[test]
    fn refuses_when_too_many_jobs_wait_and_recovers_later() {
        let mut b = TokenBucket::new("t", 0, 0, 1.0, 2.0, 0, 2);
        assert_eq!(b.release(0, 0, 10), Some(0));
        assert_eq!(b.release(0, 0, 10), Some(20));
        assert_eq!(b.release(0, 0, 10), Some(40));
        assert_eq!(b.release(0, 0, 10), None);
        assert_eq!(b.refused, 1);
        // Once the waiting jobs have started there is room again.
        assert_eq!(b.release(40, 40, 10), Some(60));
    }

    #[test]
    fn ingress_buffer_refuses_what_does_not_fit_until_packets_leave() {
        let mut b = IngressBuffer::new("t", 1000);
        assert!(b.fits(0, 600));
        b.hold(600, 50);
        assert!(!b.fits(10, 600));
        assert!(b.fits(10, 400));
        b.hold(400, 80);
        assert!(!b.fits(49, 1));
        assert!(b.fits(50, 600)); // the first packet left at 50
        assert_eq!(b.refused, 2);
    }

    #[test]
    fn a_tenant_under_its_rate_never_waits() {
        let mut b = TokenBucket::new("t", 0, 0, 5.0, 10.0, 100, 10);
        for i in 0..100u64 {
            let t = i * 1_000;
            assert_eq!(b.release(t, t, 100), Some(t));
        }
        assert_eq!(b.delayed, 0);
    }
}
