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
//! Device-level model (`PcieSpec::tlp`, see `TlpModel`): instead of a byte
//! overhead and a fixed DMA time, a crossing's bus time is the sum of the
//! transaction-layer packets (TLPs) and data-link packets (DLLPs) the DMA
//! engine of device `a` exchanges to move one buffer and its descriptor,
//! at the link's data rate (lane rate x lanes x line-code efficiency).
//! Direction a->b is a DMA write by `a` into `b`'s memory; b->a is a DMA
//! read by `a` (read requests out, completions back). No constant of it is
//! fitted to a measured throughput.
//!
//! State: queues, next-free times, ring-context LRU, per-direction byte,
//! packet and ring-miss counters.

use crate::clock::{bytes_ps, cycles_ps, ps_per_byte, Ps, PS_PER_NS};
use crate::emulator::{rss, Emulator, Ev};
use crate::server::FifoServer;
use crate::topology::{PcieSpec, Target};
use crate::traffic::Packet;
use std::collections::VecDeque;

/// Device-level PCIe/DMA parameters of one link and the DMA engine on its
/// device `a`. `gen2_x8()` gives each field with its source; a scenario may
/// override any of them.
///
/// Per buffer of `len` bytes the engine moves (both directions of the link
/// counted, because the bus time is charged to one server per link when the
/// link is `shared`, as UNO counts Gen2 x8's 32 Gb/s for both directions):
/// - DMA write (a->b): ceil(len/MPS) memory-write TLPs carrying the data; the
///   descriptor fetch (one read request + one completion of `descriptor`
///   bytes) and the descriptor write-back (one memory write of `descriptor`
///   bytes).
/// - DMA read (b->a): ceil(len/MRRS) read requests; the completer answers in
///   completions of at most RCB bytes each; the same descriptor fetch and
///   write-back. The engine keeps at most `outstanding_reads` requests in
///   flight, each answered after `read_latency_ns`, so a read also needs
///   ceil(len/MRRS) x read_latency / outstanding_reads of bus time if that is
///   longer than its bytes, and its first byte arrives `read_latency_ns` later.
/// - DLLPs: one ACK/UpdateFC DLLP per `tlps_per_dllp` TLPs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TlpModel {
    /// Raw lane rate, GT/s. Gen2: 5.0 (PCIe Base Specification 2.0).
    pub lane_gts: f64,
    /// Lanes. x8 (UNO §2.3: "PCIe Gen2 x8 NIC card").
    pub lanes: u32,
    /// Line-code efficiency. Gen1/Gen2 use 8b/10b: 0.8 (PCIe Base Spec 2.0).
    pub encoding: f64,
    /// Max payload size of a TLP, bytes. 256: the common value on x86 servers
    /// (Neugebauer et al., SIGCOMM'18, §3).
    pub mps: u32,
    /// Max read request size, bytes. 512: the common default (ibid.).
    pub mrrs: u32,
    /// Read completion boundary, bytes: a root complex may split completions
    /// at every 64 B boundary (PCIe Base Spec: RCB of a root port is 64 or 128 B);
    /// we take 64 B, one cache line.
    pub rcb: u32,
    /// Bytes a memory read/write TLP adds to its payload with 64-bit addresses:
    /// 2 framing (STP/END, Gen1/2) + 2 sequence number + 16 header (4 DW) +
    /// 4 LCRC = 24 (PCIe Base Spec; the same accounting as Neugebauer et al. §3).
    pub mem_tlp_overhead: u32,
    /// Bytes a completion adds: 2 framing + 2 sequence + 12 header (3 DW) + 4 LCRC = 20.
    pub cpl_overhead: u32,
    /// Bytes of one DLLP on the wire: 6 + 2 framing = 8 (PCIe Base Spec).
    pub dllp_bytes: u32,
    /// TLPs acknowledged (and flow-control credits returned) per DLLP. The
    /// specification leaves ACK coalescing to the implementation; 4 is our assumption.
    pub tlps_per_dllp: f64,
    /// DMA descriptor size, bytes: 16 (Intel 82599 datasheet, advanced
    /// receive/transmit descriptors).
    pub descriptor: u32,
    /// Round trip of a DMA read from the device to host memory and back, ns:
    /// ~500 ns is the order Neugebauer et al. measure on Xeon E5 hosts (§6).
    pub read_latency_ns: f64,
    /// Non-posted requests the engine keeps in flight: 32, the limit of the
    /// 5-bit Tag field without Extended Tags (PCIe Base Spec).
    pub outstanding_reads: u32,
}

impl TlpModel {
    pub const fn gen2_x8() -> Self {
        TlpModel {
            lane_gts: 5.0,
            lanes: 8,
            encoding: 0.8,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            mem_tlp_overhead: 24,
            cpl_overhead: 20,
            dllp_bytes: 8,
            tlps_per_dllp: 4.0,
            descriptor: 16,
            read_latency_ns: 500.0,
            outstanding_reads: 32,
        }
    }

    /// Data rate of the link in one direction, Gb/s (Gen2 x8: 32).
    pub fn data_gbps(&self) -> f64 {
        self.lane_gts * self.lanes as f64 * self.encoding
    }

    /// Refuses parameters that make no sense (zero sizes, rates or limits).
    pub fn check(&self) -> Result<(), String> {
        let sizes = [("mps", self.mps), ("mrrs", self.mrrs), ("rcb", self.rcb), ("lanes", self.lanes),
            ("outstanding_reads", self.outstanding_reads)];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(format!("PCIe TLP model: {name} must be > 0"));
        }
        let rates = [("lane_gts", self.lane_gts), ("encoding", self.encoding), ("tlps_per_dllp", self.tlps_per_dllp)];
        if let Some((name, v)) = rates.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("PCIe TLP model: {name} must be > 0, got {v}"));
        }
        if self.encoding > 1.0 {
            return Err(format!("PCIe TLP model: encoding must be <= 1, got {}", self.encoding));
        }
        if !(self.read_latency_ns.is_finite() && self.read_latency_ns >= 0.0) {
            return Err(format!("PCIe TLP model: read_latency_ns must be >= 0, got {}", self.read_latency_ns));
        }
        Ok(())
    }

    /// (bus bytes, TLPs) of fetching one descriptor and writing it back.
    fn descriptor_cost(&self) -> (u64, u64) {
        let d = self.descriptor as u64;
        let fetch = self.mem_tlp_overhead as u64 + d + self.cpl_overhead as u64;
        let write_back = d + self.mem_tlp_overhead as u64;
        (fetch + write_back, 3)
    }

    fn with_dllps(&self, bytes: u64, tlps: u64) -> f64 {
        bytes as f64 + tlps as f64 / self.tlps_per_dllp * self.dllp_bytes as f64
    }

    /// Bus bytes (TLPs + DLLPs, both directions) of a DMA write of `len` bytes.
    pub fn write_bytes(&self, len: usize) -> f64 {
        let len = len as u64;
        let tlps = len.div_ceil(self.mps as u64).max(1);
        let (db, dt) = self.descriptor_cost();
        self.with_dllps(len + tlps * self.mem_tlp_overhead as u64 + db, tlps + dt)
    }

    /// Bus bytes (TLPs + DLLPs, both directions) of a DMA read of `len` bytes.
    pub fn read_bytes(&self, len: usize) -> f64 {
        let len = len as u64;
        let requests = len.div_ceil(self.mrrs as u64).max(1);
        let completions = len.div_ceil(self.rcb as u64).max(1);
        let (db, dt) = self.descriptor_cost();
        let bytes = requests * self.mem_tlp_overhead as u64 + len + completions * self.cpl_overhead as u64 + db;
        self.with_dllps(bytes, requests + completions + dt)
    }

    /// Bus time the outstanding-request limit imposes on a read of `len` bytes, ns.
    pub fn read_tag_ns(&self, len: usize) -> f64 {
        let requests = (len as u64).div_ceil(self.mrrs as u64).max(1) as f64;
        requests * self.read_latency_ns / self.outstanding_reads as f64
    }

    /// Bus time of one crossing, ps: `read` is the b->a direction.
    pub fn busy_ps(&self, len: usize, read: bool) -> Ps {
        let per_byte = ps_per_byte(self.data_gbps() * 1e9);
        if read {
            let wire = self.read_bytes(len) * per_byte;
            let tags = self.read_tag_ns(len) * PS_PER_NS as f64;
            wire.max(tags).ceil() as Ps
        } else {
            (self.write_bytes(len) * per_byte).ceil() as Ps
        }
    }
}

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

    /// Bus time of a crossing of `len` bytes in direction `dir` (1 = b->a).
    #[inline]
    pub(crate) fn service(&self, len: usize, dir: usize) -> Ps {
        match &self.spec.tlp {
            Some(t) => t.busy_ps(len, dir == 1),
            None => bytes_ps(len + self.spec.overhead_bytes as usize, self.ps_per_byte) + self.fixed_ps,
        }
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

    /// Time from the end of a crossing's bus service to its arrival; a DMA read
    /// (b->a under the TLP model) also waits one read round trip.
    #[inline]
    pub(crate) fn latency(&self, dir: usize) -> Ps {
        match &self.spec.tlp {
            Some(t) if dir == 1 => self.latency_ps + (t.read_latency_ns * PS_PER_NS as f64) as Ps,
            _ => self.latency_ps,
        }
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
        let service = l.service(pkt.frame.len(), d) + l.ring_penalty(ring);
        let server = if l.spec.shared { 0 } else { d };
        match l.dirs[server].admit(now, service, horizon) {
            Some(fin) => {
                l.ring_touch(ring);
                if fin <= horizon {
                    l.packets[d] += 1;
                    l.bytes[d] += pkt.frame.len() as u64;
                }
                let arrive = fin + l.latency(d);
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
                let service = l.service(pkt.frame.len(), qi % 2) + l.ring_penalty(qi as u32);
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
        let arrive = now + l.latency(dir as usize);
        self.pcie_arrive(now, arrive, link, pair, dir, pkt);
        if !self.links[link as usize].busy {
            self.pcie_start_next(now, link);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TlpModel;

    #[test]
    fn gen2_x8_moves_32_gbps_per_direction() {
        // 5 GT/s x 8 lanes x 8/10.
        assert_eq!(TlpModel::gen2_x8().data_gbps(), 32.0);
    }

    #[test]
    fn a_1500_byte_write_and_read_count_every_tlp_and_dllp() {
        let t = TlpModel::gen2_x8();
        // Write: 6 MWr of <= 256 B (6 x 24 B headers), descriptor fetch 24 + 16 + 20,
        // write-back 16 + 24; 9 TLPs -> 9/4 DLLPs of 8 B.
        assert_eq!(t.write_bytes(1500), (1500 + 6 * 24 + 60 + 40) as f64 + 9.0 / 4.0 * 8.0);
        // Read: 3 MRd of <= 512 B, 24 completions of <= 64 B; 3 + 24 + 3 TLPs.
        assert_eq!(t.read_bytes(1500), (3 * 24 + 1500 + 24 * 20 + 60 + 40) as f64 + 30.0 / 4.0 * 8.0);
        // Reads are longer than writes and both cost more than the bare payload.
        assert!(t.read_bytes(1500) > t.write_bytes(1500));
        assert!(t.write_bytes(64) > 64.0 + 24.0);
    }

    #[test]
    fn few_outstanding_reads_make_a_read_latency_bound() {
        let mut t = TlpModel::gen2_x8();
        let wire = t.busy_ps(1500, true);
        // 32 tags: 3 requests x 500 ns / 32 = 47 ns, far below the ~570 ns of bytes.
        assert!(t.read_tag_ns(1500) < 50.0);
        t.outstanding_reads = 1;
        assert_eq!(t.busy_ps(1500, true), 1_500_000); // 3 x 500 ns, one at a time
        assert!(t.busy_ps(1500, true) > wire);
        // Writes are posted: no tag limit.
        assert_eq!(t.busy_ps(1500, false), TlpModel::gen2_x8().busy_ps(1500, false));
    }

    #[test]
    fn nonsense_parameters_are_refused() {
        let mut t = TlpModel::gen2_x8();
        t.mps = 0;
        assert!(t.check().unwrap_err().contains("mps"));
        let mut t = TlpModel::gen2_x8();
        t.encoding = 1.5;
        assert!(t.check().unwrap_err().contains("encoding"));
    }
}
