//! PCIe links. A link joins two devices and carries any number of port pairs
//! (virtual port pairs or SR-IOV VFs). Each crossing costs bus time
//! ((bytes + overhead) / bandwidth + a fixed DMA time) and then the one-way
//! latency; optionally the sending device's switch cores spend DMA cycles
//! first. Two bus models:
//! - FIFO (default): one bounded FIFO per direction (or one for both when the
//!   bus is shared). Its arrivals come out in time order, so they wait in a
//!   per-server in-flight queue and only its head sits in the event heap.
//! - round robin: every (pair, direction) has its own bounded queue and the
//!   bus serves non-empty queues in turn, like per-VF DMA rings. A full ring
//!   drops only its own traffic, so a saturated bus sheds new arrivals instead
//!   of packets that already crossed it. One more event per crossing.
//!
//! Both models can charge DMA ring-context misses: the device caches the
//! contexts of `ring_contexts` rings (one ring per pair and direction, least
//! recently used evicted); a crossing on a ring whose context is not cached
//! pays `ring_miss_ns` more bus time. With more active rings than cached
//! contexts, round-robin service misses on every crossing, so the bus
//! delivers less than its nominal bandwidth as chains get longer (UNO §2.3
//! blames "CPUs and PCIe bus contention" for its 21 Gb/s aggregate at 3 NFs).
//!
//! State: queues, next-free times, ring-context LRU, per-direction byte,
//! packet and ring-miss counters.

use crate::clock::{bytes_ps, cycles_ps, ps_per_byte, Ps, PS_PER_NS};
use crate::emulator::{rss, Emulator, Ev};
use crate::server::FifoServer;
use crate::topology::{PcieSpec, Target};
use crate::traffic::Packet;
use std::collections::VecDeque;

pub(crate) struct Pcie {
    pub spec: PcieSpec,
    pub dirs: [FifoServer; 2],
    pub ends: Vec<[Option<Target>; 2]>,
    /// Round-robin mode: queue 2*pair + dir.
    pub queues: Vec<VecDeque<Packet>>,
    /// FIFO mode: packets on the wire per server, (arrival, where, slab slot), in time order.
    pub in_flight: [VecDeque<(Ps, Target, crate::emulator::Slot)>; 2],
    pub busy: bool,
    pub next_queue: usize,
    pub busy_ps: Ps,
    pub packets: [u64; 2],
    pub bytes: [u64; 2],
    pub place: u32,
    /// Cached ring contexts, least recently used first (empty when unlimited).
    ring_lru: Vec<u32>,
    pub ring_misses: u64,
    ps_per_byte: f64,
    fixed_ps: Ps,
    latency_ps: Ps,
    miss_ps: Ps,
}

impl Pcie {
    pub fn new(spec: PcieSpec, depth: usize, place: u32) -> Self {
        let (spec_gbps, spec_dma_ns, spec_latency_ns) = (spec.gbps, spec.dma_ns, spec.latency_ns);
        let miss_ps = (spec.ring_miss_ns * PS_PER_NS as f64) as Ps;
        Pcie {
            spec,
            dirs: [FifoServer::new(depth), FifoServer::new(depth)],
            ends: Vec::new(),
            queues: Vec::new(),
            in_flight: [VecDeque::new(), VecDeque::new()],
            busy: false,
            next_queue: 0,
            busy_ps: 0,
            packets: [0; 2],
            bytes: [0; 2],
            place,
            ps_per_byte: ps_per_byte(spec_gbps * 1e9),
            fixed_ps: (spec_dma_ns * PS_PER_NS as f64) as Ps,
            latency_ps: (spec_latency_ns * PS_PER_NS as f64) as Ps,
            ring_lru: Vec::new(),
            ring_misses: 0,
            miss_ps,
        }
    }

    #[inline]
    fn service(&self, len: usize) -> Ps {
        bytes_ps(len + self.spec.overhead_bytes as usize, self.ps_per_byte) + self.fixed_ps
    }

    /// Extra bus time for using `ring` now: 0 if its context is cached.
    #[inline]
    fn ring_penalty(&self, ring: u32) -> Ps {
        if self.spec.ring_contexts == 0 || self.ring_lru.contains(&ring) {
            0
        } else {
            self.miss_ps
        }
    }

    /// `ring` was served: it becomes the most recently used context.
    #[inline]
    fn ring_touch(&mut self, ring: u32) {
        let cap = self.spec.ring_contexts as usize;
        if cap == 0 {
            return;
        }
        if let Some(i) = self.ring_lru.iter().position(|&r| r == ring) {
            self.ring_lru.remove(i);
        } else {
            self.ring_misses += 1;
            if self.ring_lru.len() == cap {
                self.ring_lru.remove(0);
            }
        }
        self.ring_lru.push(ring);
    }

    #[inline]
    fn latency(&self) -> Ps {
        self.latency_ps
    }
}

impl Emulator {
    /// A packet enters end `dir` of `pair`: charge the sender's DMA cycles, then queue it.
    #[inline]
    pub(crate) fn pcie_enter(&mut self, now: Ps, link: u16, pair: u16, dir: u8, pkt: Packet) {
        let l = &self.links[link as usize];
        if l.spec.dma_cycles > 0.0 {
            let cycles = l.spec.dma_cycles;
            let sender = &mut self.devices[if dir == 0 { l.spec.dev_a } else { l.spec.dev_b } as usize];
            let r = sender.switch_cores();
            let core = r.start + rss(pkt.flow, r.len());
            match sender.cores[core].admit(now, cycles_ps(cycles, sender.spec.hz()), self.horizon) {
                Some(ready) if ready > now => {
                    let pkt = self.stash(pkt);
                    return self.sched.at(ready, Ev::PcieReady { link, pair, dir, pkt });
                }
                Some(_) => {}
                None => {
                    let place = sender.place;
                    return self.drop_pkt(place, "dma_core_queue_full", pkt);
                }
            }
        }
        self.pcie_queue(now, link, pair, dir, pkt)
    }

    pub(crate) fn pcie_queue(&mut self, now: Ps, link: u16, pair: u16, dir: u8, pkt: Packet) {
        let horizon = self.horizon;
        let l = &mut self.links[link as usize];
        let d = dir as usize;
        if l.spec.round_robin {
            let q = &mut l.queues[2 * pair as usize + d];
            if q.len() >= l.spec.queue_depth as usize {
                let place = l.place;
                return self.drop_pkt(place, "pcie_queue_full", pkt);
            }
            q.push_back(pkt);
            if !l.busy {
                self.pcie_start_next(now, link);
            }
            return;
        }
        let ring = 2 * pair as u32 + d as u32;
        let service = l.service(pkt.frame.len()) + l.ring_penalty(ring);
        let server = if l.spec.shared { 0 } else { d };
        match l.dirs[server].admit(now, service, horizon) {
            Some(fin) => {
                l.ring_touch(ring);
                if fin <= horizon {
                    l.packets[d] += 1;
                    l.bytes[d] += pkt.frame.len() as u64;
                }
                let arrive = fin + l.latency();
                match l.ends[pair as usize][1 - d] {
                    None => {
                        let place = l.place;
                        self.drop_pkt(place, "pcie_end_unconnected", pkt)
                    }
                    Some(next) if arrive <= now => self.deliver_now(now, next, pkt),
                    Some(next) => {
                        // Arrivals of one FIFO server are in time order: keep them in a
                        // per-server queue with one heap event for its head.
                        let slot = self.stash(pkt);
                        let l = &mut self.links[link as usize];
                        let q = &mut l.in_flight[server];
                        q.push_back((arrive, next, slot));
                        if q.len() == 1 {
                            self.sched.at(arrive, Ev::PcieLand { link, server: server as u8 });
                        }
                    }
                }
            }
            None => {
                let place = l.place;
                self.drop_pkt(place, "pcie_queue_full", pkt)
            }
        }
    }

    /// The head of a FIFO link's in-flight queue lands; schedule the next head.
    pub(crate) fn pcie_land(&mut self, now: Ps, link: u16, server: u8) {
        let l = &mut self.links[link as usize];
        let q = &mut l.in_flight[server as usize];
        let Some((_, next, slot)) = q.pop_front() else { return };
        if let Some(&(at, _, _)) = q.front() {
            self.sched.at(at, Ev::PcieLand { link, server });
        }
        let pkt = self.unstash(slot);
        self.deliver_now(now, next, pkt);
    }

    #[inline]
    fn pcie_arrive(&mut self, now: Ps, at: Ps, link: u16, pair: u16, dir: u8, pkt: Packet) {
        let l = &self.links[link as usize];
        match l.ends[pair as usize][1 - dir as usize] {
            Some(next) => self.later(now, at, next, pkt),
            None => {
                let place = l.place;
                self.drop_pkt(place, "pcie_end_unconnected", pkt)
            }
        }
    }

    /// Round robin: start moving the next queued packet, if any.
    fn pcie_start_next(&mut self, now: Ps, link: u16) {
        let l = &mut self.links[link as usize];
        let n = l.queues.len();
        for i in 0..n {
            let qi = (l.next_queue + i) % n;
            if let Some(pkt) = l.queues[qi].pop_front() {
                l.next_queue = (qi + 1) % n;
                let service = l.service(pkt.frame.len()) + l.ring_penalty(qi as u32);
                l.ring_touch(qi as u32);
                l.busy = true;
                let fin = now + service;
                l.busy_ps += fin.min(self.horizon).saturating_sub(now.min(self.horizon));
                let (pair, dir) = ((qi / 2) as u16, (qi % 2) as u8);
                let pkt = self.stash(pkt);
                self.sched.at(fin, Ev::PcieDone { link, pair, dir, pkt });
                return;
            }
        }
        l.busy = false;
    }

    pub(crate) fn pcie_done(&mut self, now: Ps, link: u16, pair: u16, dir: u8, pkt: Packet) {
        let l = &mut self.links[link as usize];
        if now <= self.horizon {
            l.packets[dir as usize] += 1;
            l.bytes[dir as usize] += pkt.frame.len() as u64;
        }
        l.busy = false;
        let arrive = now + l.latency();
        self.pcie_arrive(now, arrive, link, pair, dir, pkt);
        if !self.links[link as usize].busy {
            self.pcie_start_next(now, link);
        }
    }
}
