//! The emulator: devices with cores and a switch each, NF instances on device
//! cores/accelerators, PCIe links, Ethernet ports, traffic sources and sinks,
//! all driven by one deterministic event clock.
//!
//! Packet path: a source emits into a `Target`; each stage either handles the
//! packet at once (zero-cost switching, sinks) or reserves time on a bounded
//! FIFO server (switch cores, NF cores, accelerators, a PCIe direction, an
//! Ethernet transmitter) and schedules the next stage at the finish time (+
//! latency). A full queue drops the packet and counts the reason at the place.
//! Functional work (switch pipeline, NF code) runs on the real bytes when the
//! stage is entered; its timing is the reserved service interval.
//! State: servers' next-free times, per-source/sink/link/device counters.
//! Cost per packet of the simulator itself: one heap push/pop per timed stage.

use crate::clock::{cycles_ps, transfer_ps, Ps, Scheduler, PS_PER_NS};
use crate::drr::DrrPort;
use crate::histogram::Histogram;
use crate::isolation::{IngressBuffer, Tenant, TokenBucket};
use crate::pcap::PcapWriter;
use crate::server::FifoServer;
use crate::switch::{SwitchFate, SwitchLogic};
use crate::pcie::Pcie;
use crate::topology::{AccelSpec, DeviceSpec, EthSpec, Target};
use crate::traffic::{Packet, Source};
use dp_nf::{CostProfile, NetworkFunction, NfVerdict};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Events carry a packet by its slot in `Emulator::slab` (small heap entries).
pub(crate) type Slot = u32;

pub(crate) enum Ev {
    Arrive(Target, Slot),
    SwitchDone { dev: u16, port: u32, pkt: Slot },
    /// The sender's DMA preparation is done; the packet joins the link's queue.
    PcieReady { link: u16, pair: u16, dir: u8, pkt: Slot },
    /// The oldest packet on a FIFO PCIe server's wire arrives (see pcie.rs).
    PcieLand { link: u16, server: u8 },
    /// A frame leaves a switch port without passing the pipeline (packet-out).
    SwitchOutput { dev: u16, port: u32, pkt: Slot },
    /// A round-robin bus finished moving this packet.
    PcieDone { link: u16, pair: u16, dir: u8, pkt: Slot },
    /// A job held back by its tenant's token bucket may now enter NF `nf`'s accelerator.
    AccelStart { nf: u32, port: u8, pkt: Slot },
    /// A DRR Ethernet port's wire is free again (drr.rs).
    EthFree { eth: u32 },
    /// Has the source of migration `mig` drained (migration.rs)?
    MigDrainCheck { mig: u32 },
    /// Migration `mig`'s state has arrived at its destination.
    MigImported { mig: u32 },
}

pub(crate) struct Device {
    pub spec: DeviceSpec,
    pub cores: Vec<FifoServer>,
    pub accels: Vec<(AccelSpec, FifoServer)>,
    pub switch: Box<dyn SwitchLogic>,
    pub wiring: Vec<Option<Target>>,
    pub capture: Vec<Option<PcapWriter>>,
    /// Captures of what enters the switch, per port.
    pub capture_rx: Vec<Option<PcapWriter>>,
    pub switch_packets: u64,
    pub place: u32,
}

impl Device {
    pub(crate) fn switch_cores(&self) -> std::ops::Range<usize> {
        let n = self.cores.len();
        let k = (self.spec.switch_cores as usize).min(n);
        if k == 0 {
            0..n
        } else {
            0..k
        }
    }
    pub(crate) fn nf_cores(&self) -> Vec<usize> {
        let n = self.cores.len();
        let k = (self.spec.switch_cores as usize).min(n);
        if k < n {
            (k..n).collect()
        } else {
            (0..n).collect()
        }
    }
}

pub(crate) struct NfInst {
    pub name: String,
    pub dev: u16,
    pub nf: Box<dyn NetworkFunction>,
    pub cost: CostProfile,
    pub accel: Option<usize>,
    /// The tenant token bucket gating this NF's accelerator jobs (isolation.rs).
    pub bucket: Option<u32>,
    /// The ingress buffer holding this NF's arriving packets until its core work is done.
    pub buffer: Option<u32>,
    pub cores: Vec<usize>,
    pub out: [Option<Target>; 2],
    pub packets: u64,
    pub place: u32,
    /// Destination of this migration: arriving packets are buffered (migration.rs).
    pub mig_in: Option<u32>,
    /// Moved away: it processes nothing more.
    pub retired: bool,
}

pub(crate) struct Eth {
    pub spec: EthSpec,
    /// Wire time per byte and propagation, precomputed.
    pub ps_per_byte: f64,
    pub propagation_ps: Ps,
    pub dev: u16,
    pub tx: FifoServer,
    /// Per-tenant deficit round robin instead of the FIFO `tx` (drr.rs).
    pub drr: Option<Box<DrrPort>>,
    pub sink: u32,
    pub packets: u64,
    pub bytes: u64,
    pub place: u32,
}

#[derive(Default)]
pub(crate) struct Sink {
    pub name: String,
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Default, Clone)]
pub(crate) struct FlowStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub dropped: u64,
    /// Drops of this flow by reason (filled on the drop path only).
    pub drop_reasons: Vec<(&'static str, u64)>,
    pub latency_ns: Histogram,
}

impl FlowStats {
    pub(crate) fn count_drop(&mut self, reason: &'static str) {
        self.dropped += 1;
        match self.drop_reasons.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.drop_reasons.push((reason, 1)),
        }
    }
}

/// Where a packet stands when `nf_process` takes it up.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum NfStage {
    /// Just arrived at the NF: it queues for a core (bounded) and any ingress buffer.
    Arrived,
    /// Handed over by the previous NF on the same core: no queue-depth check.
    InCore,
    /// Its core and accelerator work is reserved up to `ready`: only the NF code runs.
    WorkDone,
}

/// The whole emulated machine plus its traffic.
pub struct Emulator {
    pub(crate) seed: u64,
    pub(crate) sched: Scheduler<Ev>,
    /// Next emission of each source, kept apart from the event heap (cheaper):
    /// at equal times, heap events run before source emissions.
    pub(crate) due: BinaryHeap<Reverse<(Ps, u32)>>,
    pub(crate) devices: Vec<Device>,
    pub(crate) nfs: Vec<NfInst>,
    pub(crate) links: Vec<Pcie>,
    pub(crate) eths: Vec<Eth>,
    pub(crate) sinks: Vec<Sink>,
    pub(crate) sources: Vec<Source>,
    pub(crate) source_targets: Vec<Target>,
    /// The ingress wire each source with a line rate sends on (index into
    /// `wires`): sources entering one port share its wire, so together they
    /// send at most its line rate.
    pub(crate) source_wire: Vec<Option<u32>>,
    /// Per ingress wire: its target, its ps per byte, and when it is free again.
    pub(crate) wires: Vec<(Target, f64, Ps)>,
    pub(crate) flows: Vec<FlowStats>,
    pub(crate) places: Vec<String>,
    /// Tenants (for per-tenant metrics) and their accelerator token buckets.
    pub(crate) tenants: Vec<Tenant>,
    pub(crate) buckets: Vec<TokenBucket>,
    pub(crate) buffers: Vec<IngressBuffer>,
    pub(crate) drops: BTreeMap<(u32, &'static str), u64>,
    pub(crate) horizon: Ps,
    pub(crate) ran_until: Ps,
    pub(crate) events: u64,
    pub(crate) started: bool,
    /// Frames the switches sent to the controller, oldest first.
    pub controller: Vec<PacketInEvent>,
    pub(crate) injected_source: Option<u32>,
    pub(crate) slab: Vec<Packet>,
    pub(crate) free_slots: Vec<Slot>,
    pub(crate) migrations: Vec<crate::migration::Migration>,
    /// Migrations that ended since the caller last looked; `run_until` returns early after one.
    pub(crate) paused: Vec<u32>,
    /// From the first migration on: per (source, flow) the birth time of the last
    /// packet a sink received, to count packets received twice or out of order.
    pub(crate) order: Option<std::collections::HashMap<(u32, u32), Ps>>,
    pub(crate) order_dup: u64,
    pub(crate) order_reordered: u64,
    pool: Vec<Vec<u8>>,
    fates: Vec<Vec<SwitchFate>>,
    io_error: Option<String>,
}

/// A frame a device's switch sent to the controller (OpenFlow packet-in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketInEvent {
    pub dev: u16,
    pub in_port: u32,
    /// "action" or "invalid_ttl".
    pub reason: &'static str,
    /// The table the packet was in and the cookie of the rule that sent it.
    pub table: u8,
    pub cookie: u64,
    pub frame: Vec<u8>,
    /// Pipeline state listed in the packet-in's match (metadata, registers, pkt_mark ...): (field, value).
    pub meta: Vec<(String, u128)>,
    /// `controller(userdata=…)`'s bytes (empty otherwise).
    pub userdata: Vec<u8>,
    /// The controller connections it goes to (`controller(id=…)`, `dec_ttl(ids)`; else 0).
    pub controller_id: u16,
}

/// Packet-ins waiting for `take_controller` beyond this are dropped.
const MAX_CONTROLLER_QUEUE: usize = 65_536;

pub(crate) fn rss(flow: u32, n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        ((flow as u64 * n as u64) >> 32) as usize
    }
}

impl Emulator {
    pub fn new(seed: u64) -> Self {
        Emulator {
            seed,
            sched: Scheduler::default(),
            due: BinaryHeap::new(),
            devices: Vec::new(),
            nfs: Vec::new(),
            links: Vec::new(),
            eths: Vec::new(),
            sinks: Vec::new(),
            sources: Vec::new(),
            source_targets: Vec::new(),
            source_wire: Vec::new(),
            wires: Vec::new(),
            flows: Vec::new(),
            places: Vec::new(),
            tenants: Vec::new(),
            buckets: Vec::new(),
            buffers: Vec::new(),
            drops: BTreeMap::new(),
            horizon: Ps::MAX,
            ran_until: 0,
            events: 0,
            started: false,
            controller: Vec::new(),
            injected_source: None,
            slab: Vec::new(),
            free_slots: Vec::new(),
            migrations: Vec::new(),
            paused: Vec::new(),
            order: None,
            order_dup: 0,
            order_reordered: 0,
            pool: Vec::new(),
            fates: Vec::new(),
            io_error: None,
        }
    }

    pub(crate) fn place(&mut self, name: String) -> u32 {
        self.places.push(name);
        (self.places.len() - 1) as u32
    }

    // ------------------------------------------------------------ running

    /// Metrics cover [0, horizon]: busy time is clipped and later receptions are not counted.
    pub fn set_horizon(&mut self, horizon: Ps) {
        self.horizon = horizon;
    }

    pub fn now(&self) -> Ps {
        self.sched.now()
    }

    pub(crate) fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        for i in 0..self.sources.len() {
            if let Some(t) = self.sources[i].first_time() {
                if self.sources[i].spec.stop.is_none_or(|s| t < s) {
                    self.due.push(Reverse((t, i as u32)));
                }
            }
        }
    }

    /// Process every event due at or before `until` (capped at the horizon).
    pub fn run_until(&mut self, until: Ps) -> Result<(), String> {
        self.start();
        let until = until.min(self.horizon);
        loop {
            let src_at = match self.due.peek() {
                Some(Reverse((t, _))) if *t <= until => *t,
                _ => Ps::MAX,
            };
            let ev_at = self.sched.peek_time().unwrap_or(Ps::MAX);
            if src_at == Ps::MAX && ev_at > until {
                break;
            }
            self.events += 1;
            if ev_at <= src_at {
                let (now, ev) = self.sched.pop_until(until).expect("peeked event");
                match ev {
                    Ev::Arrive(t, pkt) => {
                        let pkt = self.unstash(pkt);
                        self.deliver(now, t, pkt)
                    }
                    Ev::SwitchDone { dev, port, pkt } => {
                        let pkt = self.unstash(pkt);
                        self.switch_process(now, dev, port, pkt)
                    }
                    Ev::SwitchOutput { dev, port, pkt } => {
                        let pkt = self.unstash(pkt);
                        self.switch_output(now, dev, port, pkt)
                    }
                    Ev::PcieLand { link, server } => self.pcie_land(now, link, server),
                    Ev::PcieReady { link, pair, dir, pkt } => {
                        let pkt = self.unstash(pkt);
                        self.pcie_queue(now, link, pair, dir, pkt)
                    }
                    Ev::PcieDone { link, pair, dir, pkt } => {
                        let pkt = self.unstash(pkt);
                        self.pcie_done(now, link, pair, dir, pkt)
                    }
                    Ev::EthFree { eth } => self.drr_send_next(now, eth),
                    Ev::AccelStart { nf, port, pkt } => {
                        let pkt = self.unstash(pkt);
                        self.nf_accel(now, now, nf, port, pkt, false)
                    }
                    Ev::MigDrainCheck { mig } => self.mig_drain_check(now, mig),
                    Ev::MigImported { mig } => {
                        self.mig_imported(now, mig);
                        // Pause: the caller removes the old location's rules before going on.
                        if let Some(e) = self.io_error.take() {
                            return Err(e);
                        }
                        return Ok(());
                    }
                }
            } else {
                // Update the source's entry in place (one sift instead of pop + push).
                let (now, s, pkt) = {
                    let mut top = self.due.peek_mut().expect("peeked source");
                    let Reverse((now, s)) = *top;
                    let wire = self.source_wire[s as usize];
                    if let Some(w) = wire {
                        let free = self.wires[w as usize].2;
                        if free > now {
                            // another source on this port holds the wire: wait for it
                            let stop = self.sources[s as usize].spec.stop;
                            if free <= self.horizon && stop.is_none_or(|t| free < t) {
                                *top = Reverse((free, s));
                            } else {
                                std::collections::binary_heap::PeekMut::pop(top);
                            }
                            continue;
                        }
                    }
                    let buf = self.pool.pop().unwrap_or_default();
                    let (pkt, next) = self.sources[s as usize].emit(now, buf);
                    if let Some(w) = wire {
                        let (_, ps_per_byte, free) = &mut self.wires[w as usize];
                        *free = now + crate::clock::bytes_ps(pkt.frame.len() + 20, *ps_per_byte);
                    }
                    match next {
                        Some(t) if t <= self.horizon => *top = Reverse((t, s)),
                        _ => {
                            std::collections::binary_heap::PeekMut::pop(top);
                        }
                    }
                    (now, s, pkt)
                };
                self.sched.advance_to(now);
                let into = self.source_targets[s as usize];
                self.deliver(now, into, pkt);
            }
        }
        self.sched.advance_to(until);
        self.ran_until = self.ran_until.max(until);
        if let Some(e) = self.io_error.take() {
            return Err(e);
        }
        Ok(())
    }

    /// Flush capture files.
    pub fn finish(&mut self) -> Result<(), String> {
        for d in &mut self.devices {
            for w in d.capture.iter_mut().chain(d.capture_rx.iter_mut()).flatten() {
                w.flush().map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// Frames each capture left out at its size limit: (dev, port, rx, frames), only non-zero ones.
    pub fn capture_skipped(&self) -> Vec<(u16, u32, bool, u64)> {
        let mut out = Vec::new();
        for (i, d) in self.devices.iter().enumerate() {
            for (rx, caps) in [(false, &d.capture), (true, &d.capture_rx)] {
                for (port, w) in caps.iter().enumerate() {
                    if let Some(w) = w.as_ref().filter(|w| w.skipped > 0) {
                        out.push((i as u16, port as u32, rx, w.skipped));
                    }
                }
            }
        }
        out
    }

    /// Park a packet while an event refers to it.
    #[inline(always)]
    pub(crate) fn stash(&mut self, pkt: Packet) -> Slot {
        match self.free_slots.pop() {
            Some(i) => {
                self.slab[i as usize] = pkt;
                i
            }
            None => {
                self.slab.push(pkt);
                (self.slab.len() - 1) as Slot
            }
        }
    }

    #[inline]
    pub(crate) fn unstash(&mut self, i: Slot) -> Packet {
        self.free_slots.push(i);
        std::mem::replace(&mut self.slab[i as usize], Packet { frame: Vec::new(), born: 0, source: 0, flow: 0, mark: 0 })
    }

    pub(crate) fn drop_pkt(&mut self, place: u32, reason: &'static str, pkt: Packet) {
        *self.drops.entry((place, reason)).or_insert(0) += 1;
        self.flows[pkt.source as usize].count_drop(reason);
        self.recycle(pkt);
    }

    #[inline]
    fn recycle(&mut self, pkt: Packet) {
        if self.pool.len() < 4096 {
            self.pool.push(pkt.frame);
        }
    }

    #[inline]
    pub(crate) fn later(&mut self, now: Ps, at: Ps, t: Target, pkt: Packet) {
        if at <= now {
            self.deliver(now, t, pkt);
        } else {
            let slot = self.stash(pkt);
            self.sched.at(at, Ev::Arrive(t, slot));
        }
    }

    pub(crate) fn deliver_now(&mut self, now: Ps, t: Target, pkt: Packet) {
        self.deliver(now, t, pkt)
    }

    fn deliver(&mut self, now: Ps, t: Target, pkt: Packet) {
        match t {
            Target::Switch { dev, port } => {
                let d = &mut self.devices[dev as usize];
                if d.spec.switch_cycles_per_packet <= 0.0 && d.spec.switch_cycles_per_byte <= 0.0 {
                    return self.switch_process(now, dev, port, pkt);
                }
                let cycles = d.spec.switch_cycles_per_packet + d.spec.switch_cycles_per_byte * pkt.frame.len() as f64;
                let r = d.switch_cores();
                let core = r.start + rss(pkt.flow, r.len());
                let service = cycles_ps(cycles, d.spec.hz());
                match d.cores[core].admit(now, service, self.horizon) {
                    Some(fin) if fin > now => {
                        let pkt = self.stash(pkt);
                        self.sched.at(fin, Ev::SwitchDone { dev, port, pkt })
                    }
                    Some(_) => self.switch_process(now, dev, port, pkt),
                    None => {
                        let place = d.place;
                        self.drop_pkt(place, "switch_core_queue_full", pkt)
                    }
                }
            }
            Target::Nf { nf, port } => self.nf_process(now, now, nf, port, pkt, NfStage::Arrived),
            Target::Pcie { link, pair, dir } => self.pcie_enter(now, link, pair, dir & 1, pkt),
            Target::Eth { eth } => {
                let e = &mut self.eths[eth as usize];
                if e.drr.is_some() {
                    return self.drr_enqueue(now, eth, pkt);
                }
                let len = pkt.frame.len();
                let service = crate::clock::bytes_ps(len + 20, e.ps_per_byte);
                match e.tx.admit(now, service, self.horizon) {
                    Some(fin) => {
                        if fin <= self.horizon {
                            e.packets += 1;
                            e.bytes += len as u64;
                        }
                        let at = fin + e.propagation_ps;
                        let sink = e.sink;
                        self.receive(at, sink, pkt);
                    }
                    None => {
                        let place = e.place;
                        self.drop_pkt(place, "eth_tx_queue_full", pkt)
                    }
                }
            }
            Target::Sink { sink } => self.receive(now, sink, pkt),
        }
    }

    /// A sink receives `pkt` at `at` (which may lie ahead of the clock: nothing
    /// after a sink depends on it, so no event is needed).
    #[inline]
    pub(crate) fn receive(&mut self, at: Ps, sink: u32, pkt: Packet) {
        if at <= self.horizon {
            let s = &mut self.sinks[sink as usize];
            s.packets += 1;
            s.bytes += pkt.frame.len() as u64;
            let f = &mut self.flows[pkt.source as usize];
            f.rx_packets += 1;
            f.rx_bytes += pkt.frame.len() as u64;
            f.latency_ns.record((at - pkt.born) / PS_PER_NS);
            if let Some(order) = &mut self.order {
                let last = order.entry((pkt.source, pkt.flow)).or_insert(0);
                if pkt.born == *last && pkt.born != 0 {
                    self.order_dup += 1;
                } else if pkt.born < *last {
                    self.order_reordered += 1;
                }
                *last = (*last).max(pkt.born);
            }
        }
        self.recycle(pkt);
    }

    /// `dev`'s switch sends `pkt` out of `port`: capture it, then deliver it where the port is wired.
    #[inline]
    fn switch_output(&mut self, now: Ps, dev: u16, port: u32, pkt: Packet) {
        let d = &mut self.devices[dev as usize];
        if let Some(Some(w)) = d.capture.get_mut(port as usize) {
            if let Err(e) = w.write(now, &pkt.frame) {
                self.io_error.get_or_insert(e.to_string());
            }
        }
        match d.wiring.get(port as usize).copied().flatten() {
            // (a mark that leaves the switches is cleared where it could come
            // back, as the packet enters an NF: `nf_process`)
            Some(t) => self.deliver(now, t, pkt),
            None => {
                let place = d.place;
                self.drop_pkt(place, "output_port_unconnected", pkt)
            }
        }
    }

    fn switch_process(&mut self, now: Ps, dev: u16, port: u32, pkt: Packet) {
        let d = &mut self.devices[dev as usize];
        if let Some(Some(w)) = d.capture_rx.get_mut(port as usize) {
            if let Err(e) = w.write(now, &pkt.frame) {
                self.io_error.get_or_insert(e.to_string());
            }
        }
        if pkt.mark == 0 {
            if let Some(out) = d.switch.fixed_forward(&pkt.frame, port) {
                // Fast path: this input always leaves unchanged on one port.
                d.switch_packets += 1;
                return self.switch_output(now, dev, out, pkt);
            }
        }
        let mut fates = self.fates.pop().unwrap_or_default();
        let Packet { frame, born, source, flow, mark } = pkt;
        let d = &mut self.devices[dev as usize];
        d.switch_packets += 1;
        if mark != 0 {
            d.switch.process_marked(frame, mark, port, now, &mut fates);
        } else if let Some((out, frame)) = d.switch.forward(frame, port, now, &mut fates) {
            // One output and nothing else: no fate list to walk.
            self.fates.push(fates);
            return self.switch_output(now, dev, out, Packet { frame, born, source, flow, mark: 0 });
        }
        let place = d.place;
        for fate in fates.drain(..) {
            match fate {
                SwitchFate::Output { port: out, frame, mark } => {
                    self.switch_output(now, dev, out, Packet { frame, born, source, flow, mark })
                }
                SwitchFate::Controller { frame, reason, table, cookie, meta, userdata, controller_id } => {
                    if self.controller.len() < MAX_CONTROLLER_QUEUE {
                        self.controller.push(PacketInEvent { dev, in_port: port, reason, table, cookie, frame, meta, userdata, controller_id });
                        *self.drops.entry((place, "sent_to_controller")).or_insert(0) += 1;
                    } else {
                        let pkt = Packet { frame, born, source, flow, mark: 0 };
                        self.drop_pkt(place, "controller_queue_full", pkt);
                    }
                }
                SwitchFate::Drop { reason } => {
                    *self.drops.entry((place, reason)).or_insert(0) += 1;
                    self.flows[source as usize].count_drop(reason);
                }
            }
        }
        self.fates.push(fates);
    }

    /// Run NF `nf` on `pkt` (event time `now`; the work may not start before
    /// `ready`). `stage`: where the packet is (see `NfStage`). An NF handing the
    /// packet to the next NF on the same device continues at once on the same
    /// core (run to completion).
    fn nf_process(&mut self, now: Ps, ready: Ps, nf: u32, port: u8, mut pkt: Packet, stage: NfStage) {
        pkt.mark = 0; // the packet mark never leaves the switches
        let n = &mut self.nfs[nf as usize];
        let mut fin = ready;
        if stage != NfStage::WorkDone {
            if let Some(mig) = n.mig_in {
                return self.mig_buffer(now, mig, port, pkt);
            }
            if n.retired {
                let place = n.place;
                return self.drop_pkt(place, "nf_retired", pkt);
            }
            if stage == NfStage::Arrived && n.buffer.is_some() {
                return self.nf_process_buffered(now, ready, nf, port, pkt);
            }
            let d = &mut self.devices[n.dev as usize];
            let cycles = n.cost.cycles(pkt.frame.len());
            if cycles > 0.0 {
                let core = n.cores[rss(pkt.flow, n.cores.len())];
                let service = cycles_ps(cycles, d.spec.hz());
                let admitted = if stage == NfStage::InCore {
                    Some(d.cores[core].admit_always(now, ready, service, self.horizon))
                } else {
                    d.cores[core].admit_at(now, ready, service, self.horizon)
                };
                match admitted {
                    Some(f) => fin = f,
                    None => {
                        let place = n.place;
                        return self.drop_pkt(place, "core_queue_full", pkt);
                    }
                }
            }
            if n.accel.is_some() {
                return self.nf_accel(now, fin, nf, port, pkt, true);
            }
        }
        n.packets += 1;
        let (dev, place) = (n.dev, n.place);
        match n.nf.process(&mut pkt.frame, port, fin) {
            NfVerdict::Forward { port: out } => match n.out.get(out as usize).copied().flatten() {
                Some(Target::Nf { nf: next, port: next_port }) if self.nfs[next as usize].dev == dev => {
                    self.nf_process(now, fin, next, next_port, pkt, NfStage::InCore)
                }
                Some(t) => self.later(now, fin, t, pkt),
                None => self.drop_pkt(place, "nf_port_unconnected", pkt),
            },
            NfVerdict::Drop { reason } => self.drop_pkt(place, reason, pkt),
        }
    }

    /// A packet released from a migration buffer into NF `nf`: reserve its core
    /// work now without a queue-depth check (it was admitted when buffered);
    /// returns when that work is done.
    pub(crate) fn nf_admit_released(&mut self, now: Ps, nf: u32, pkt: &Packet) -> Ps {
        let n = &self.nfs[nf as usize];
        let d = &mut self.devices[n.dev as usize];
        let cycles = n.cost.cycles(pkt.frame.len());
        if cycles <= 0.0 {
            return now;
        }
        let core = n.cores[rss(pkt.flow, n.cores.len())];
        d.cores[core].admit_always(now, now, cycles_ps(cycles, d.spec.hz()), self.horizon)
    }

    /// Continue a released packet after its core work (`fin`): the accelerator, if any, then the NF code.
    pub(crate) fn nf_after_core(&mut self, now: Ps, fin: Ps, nf: u32, port: u8, pkt: Packet) {
        if self.nfs[nf as usize].accel.is_some() {
            return self.nf_accel(now, fin, nf, port, pkt, true);
        }
        self.nf_process(now, fin, nf, port, pkt, NfStage::WorkDone)
    }

    /// `nf_process` for a packet arriving at an NF with an ingress buffer: it
    /// must fit in the buffer, which holds it until its core work is done.
    #[inline(never)]
    fn nf_process_buffered(&mut self, now: Ps, ready: Ps, nf: u32, port: u8, pkt: Packet) {
        let n = &mut self.nfs[nf as usize];
        let d = &mut self.devices[n.dev as usize];
        let (b, len) = (n.buffer.expect("buffered NF") as usize, pkt.frame.len());
        if !self.buffers[b].fits(now, len as u64) {
            let place = n.place;
            return self.drop_pkt(place, "ingress_buffer_full", pkt);
        }
        let cycles = n.cost.cycles(len);
        let mut fin = ready;
        if cycles > 0.0 {
            let core = n.cores[rss(pkt.flow, n.cores.len())];
            match d.cores[core].admit_at(now, ready, cycles_ps(cycles, d.spec.hz()), self.horizon) {
                Some(f) => fin = f,
                None => {
                    let place = n.place;
                    return self.drop_pkt(place, "core_queue_full", pkt);
                }
            }
            self.buffers[b].hold(len as u64, fin);
        }
        if n.accel.is_some() {
            return self.nf_accel(now, fin, nf, port, pkt, true);
        }
        self.nf_process(now, fin, nf, port, pkt, NfStage::WorkDone)
    }

    /// NF `nf`'s accelerator part of `pkt`, ready at `ready`. With `gate`, a
    /// tenant token bucket (if any) may hold the job back until its budget allows.
    #[inline(never)]
    fn nf_accel(&mut self, now: Ps, ready: Ps, nf: u32, port: u8, pkt: Packet, gate: bool) {
        let n = &mut self.nfs[nf as usize];
        let d = &mut self.devices[n.dev as usize];
        let a = n.accel.expect("NF with an accelerator");
        let (spec, server) = &mut d.accels[a];
        let service = (spec.setup_ns * PS_PER_NS as f64) as Ps + transfer_ps((pkt.frame.len() * 8) as f64, spec.gbps * 1e9);
        if let (true, Some(b)) = (gate, n.bucket) {
            match self.buckets[b as usize].release(now, ready, service) {
                Some(start) if start > ready => {
                    let pkt = self.stash(pkt);
                    return self.sched.at(start, Ev::AccelStart { nf, port, pkt });
                }
                Some(_) => {}
                None => {
                    let place = n.place;
                    return self.drop_pkt(place, "accelerator_rate_limited", pkt);
                }
            }
        }
        match server.admit_at(now, ready, service, self.horizon) {
            Some(fin) => self.nf_process(now, fin, nf, port, pkt, NfStage::WorkDone),
            None => {
                let place = n.place;
                self.drop_pkt(place, "accelerator_queue_full", pkt)
            }
        }
    }
}
