//! A bounded FIFO server: the building block for cores, accelerators, PCIe
//! directions and Ethernet transmitters. Jobs are admitted in time order; a job
//! starts when the server frees up and holds it for its service time. At most
//! `depth` jobs (queued + in service) may be present; beyond that the job is
//! refused and the caller counts a drop. Busy time is clipped to the run's
//! horizon so utilisation never exceeds 100 %.

use crate::clock::Ps;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct FifoServer {
    free_at: Ps,
    inflight: VecDeque<Ps>,
    depth: usize,
    /// Busy picoseconds inside [0, horizon].
    pub busy_ps: Ps,
    pub jobs: u64,
}

impl FifoServer {
    pub fn new(depth: usize) -> Self {
        FifoServer { free_at: 0, inflight: VecDeque::new(), depth: depth.max(1), busy_ps: 0, jobs: 0 }
    }

    /// Jobs present (queued or in service) at `now`.
#[inline]
    pub fn occupancy(&mut self, now: Ps) -> usize {
        while let Some(&f) = self.inflight.front() {
            if f <= now {
                self.inflight.pop_front();
            } else {
                break;
            }
        }
        self.inflight.len()
    }

    /// Admit a job arriving at `now` needing `service` ps. Returns its finish
    /// time, or None when the queue is full.
#[inline]
    pub fn admit(&mut self, now: Ps, service: Ps, horizon: Ps) -> Option<Ps> {
        self.admit_at(now, now, service, horizon)
    }

    /// Like `admit`, for a job decided at `now` that cannot start before `ready`
    /// (e.g. an accelerator job waiting for its core part).
#[inline]
    pub fn admit_at(&mut self, now: Ps, ready: Ps, service: Ps, horizon: Ps) -> Option<Ps> {
        if self.occupancy(now) >= self.depth {
            return None;
        }
        Some(self.reserve(ready, service, horizon))
    }

    /// Admit a job that is already being worked on (run to completion): no depth check.
    pub fn admit_always(&mut self, now: Ps, ready: Ps, service: Ps, horizon: Ps) -> Ps {
        self.occupancy(now);
        self.reserve(ready, service, horizon)
    }

#[inline]
    fn reserve(&mut self, ready: Ps, service: Ps, horizon: Ps) -> Ps {
        let start = ready.max(self.free_at);
        let fin = start + service;
        self.free_at = fin;
        if service > 0 {
            self.inflight.push_back(fin);
        }
        self.busy_ps += fin.min(horizon).saturating_sub(start.min(horizon));
        self.jobs += 1;
        fin
    }

    /// When the server would finish a job admitted now (without admitting it).
    pub fn free_at(&self) -> Ps {
        self.free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_in_fifo_order_and_drops_when_full() {
        let mut s = FifoServer::new(2);
        assert_eq!(s.admit(0, 10, 1000), Some(10));
        assert_eq!(s.admit(0, 10, 1000), Some(20));
        assert_eq!(s.admit(5, 10, 1000), None);
        assert_eq!(s.admit(10, 10, 1000), Some(30));
        assert_eq!(s.busy_ps, 30);
    }

    #[test]
    fn busy_time_is_clipped_to_horizon() {
        let mut s = FifoServer::new(10);
        s.admit(95, 10, 100);
        assert_eq!(s.busy_ps, 5);
    }
}
