//! Loss-free, order-preserving NF migration (OpenNF `move`, UNO §3.3.2).
//!
//! What: move the running NF instance `src` to an already provisioned instance
//! `dst` (same kind and configuration, fresh state, wired to its switch ports
//! on the destination device) while traffic flows. The caller re-points the
//! switches at `dst` (OneSwitch remap) at the instant it calls
//! `begin_migration`; from then on the emulator
//! 1. buffers every packet that reaches `dst`, in arrival order (fate:
//!    `buffered`, later `replayed`);
//! 2. drains `src`: packets already on their way to `src` (every packet born
//!    at or before the start that is still anywhere in the machine, outside
//!    the buffer) finish there and leave the machine; the check polls every
//!    `poll` of simulated time;
//! 3. exports `src`'s whole state, charges the serialisation on `src`'s
//!    device, moves the bytes over the PCIe link(s) between the two devices
//!    (one bulk DMA job on each FIFO link direction, so packets crossing
//!    the same direction wait behind it; via the host between two sNICs),
//!    charges the deserialisation on `dst`'s device and imports the state
//!    (serialisation and deserialisation cost cycles per byte and per flow,
//!    spread over `lanes` cores: see `MigrationCost`);
//! 4. releases the buffer into `dst` in order (no queue-depth check: the
//!    packets were already admitted) and retires `src` (a packet reaching a
//!    retired NF is dropped as `nf_retired`, which the guarantees rule out);
//! 5. pauses the run (`run_until` returns early) so the caller can delete the
//!    old location's rules; `take_migration_pauses` says which migrations.
//!
//! Guarantees: nothing is dropped by the protocol (a full migration buffer
//! drops as `migration_buffer_full`, counted); each packet is processed by
//! exactly one instance; per flow, everything `src` emitted has left the
//! machine before `dst` emits anything, and `dst` processes in arrival order.
//! Added latency of a replayed packet: from its arrival at the buffer to the
//! end of its own processing at `dst`, minus its own service time (so it
//! includes the wait behind the released burst).
//! State per migration: phase times, the state blob size, buffer, counters,
//! wall time of export and import. Cost: the drain check scans the live
//! packets (slab and round-robin PCIe queues) once per poll while draining.

use crate::clock::{cycles_ps, Ps, PS_PER_NS};
use crate::emulator::{Emulator, Ev};
use crate::histogram::Histogram;
use crate::metrics::Json;
use crate::traffic::Packet;
use std::collections::VecDeque;
use std::time::Instant;

/// Modelled costs of one migration (all overridable by the caller). The
/// defaults are calibrated on our own state codec (`nf_bench_state l7fw`: about
/// 0.7 ms wall for export + import of 1,000 L7FW flows, 370 B each, on the
/// 2.7 GHz-class build machine), not on any paper figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MigrationCost {
    /// Core cycles per state byte and per flow to serialise on the source device.
    pub export_cycles_per_byte: f64,
    pub export_cycles_per_flow: f64,
    /// Core cycles per state byte and per flow to deserialise on the destination device.
    pub import_cycles_per_byte: f64,
    pub import_cycles_per_flow: f64,
    /// Cores that serialise (and deserialise) disjoint parts of the per-flow state
    /// at once; 1 = one core does it all. The time is charged, not reserved on cores.
    pub lanes: u32,
    /// Simulated time between two checks whether the source has drained.
    pub drain_poll_ns: f64,
    /// Bytes the destination's migration buffer holds.
    pub buffer_bytes: u64,
}

impl Default for MigrationCost {
    fn default() -> Self {
        MigrationCost {
            export_cycles_per_byte: 2.0,
            export_cycles_per_flow: 400.0,
            import_cycles_per_byte: 2.0,
            import_cycles_per_flow: 800.0,
            lanes: 8,
            drain_poll_ns: 1000.0,
            buffer_bytes: 256 << 20,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Draining,
    Transferring,
    Done,
    Failed,
}

pub(crate) struct Migration {
    pub src: u32,
    pub dst: u32,
    pub cost: MigrationCost,
    pub phase: Phase,
    pub start: Ps,
    pub drained: Ps,
    pub end: Ps,
    pub state_bytes: u64,
    pub flows: u64,
    pub transfer_ps: Ps,
    pub buffer: VecDeque<(Ps, u8, Packet)>,
    pub buffer_bytes: u64,
    pub buffered: u64,
    pub replayed: u64,
    pub buffer_peak: u64,
    pub buffer_dropped: u64,
    pub added_ns: Histogram,
    pub export_wall_ns: u64,
    pub import_wall_ns: u64,
    pub blob: Vec<u8>,
    pub error: Option<String>,
    /// The sinks' duplicate and reorder counts when this migration started.
    pub order_at_start: (u64, u64),
    /// Drops a migration could cause (`LOSS_REASONS`) when it started.
    pub lost_at_start: u64,
    /// Called off (`abort_migration`): the destination hands what reaches it to the source.
    pub aborted: bool,
}

/// Drop reasons that mean a packet fell between the old and the new location:
/// the migration's own, and a switch with no rule or no wire for it.
pub const LOSS_REASONS: &[&str] =
    &["nf_retired", "migration_buffer_full", "table_miss", "no_output", "output_port_unconnected", "nf_port_unconnected", "pcie_end_unconnected"];

impl Emulator {
    /// Start moving NF `src` to the provisioned NF `dst` now. The caller must
    /// switch the traffic over to `dst` at this same instant. Returns the
    /// migration's id.
    pub fn begin_migration(&mut self, src: u32, dst: u32, cost: MigrationCost) -> Result<u32, String> {
        let name = |e: &Emulator, i: u32| e.nfs.get(i as usize).map(|n| n.name.clone()).ok_or_else(|| format!("no NF #{i}"));
        let (sname, dname) = (name(self, src)?, name(self, dst)?);
        if src == dst {
            return Err(format!("NF {sname}: cannot migrate onto itself"));
        }
        for (i, n) in [(src, &sname), (dst, &dname)] {
            if self.nfs[i as usize].retired {
                return Err(format!("NF {n} is retired"));
            }
        }
        if let Some(m) = self.migrations.iter().find(|m| m.phase != Phase::Done && m.phase != Phase::Failed && [m.src, m.dst].iter().any(|x| *x == src || *x == dst)) {
            return Err(format!("NF {sname}: already migrating ({} -> {})", self.nfs[m.src as usize].name, self.nfs[m.dst as usize].name));
        }
        if self.nfs[src as usize].nf.kind() != self.nfs[dst as usize].nf.kind() {
            return Err(format!("NF {sname}: destination {dname} is of another kind"));
        }
        let c = [cost.export_cycles_per_byte, cost.export_cycles_per_flow, cost.import_cycles_per_byte, cost.import_cycles_per_flow];
        if cost.drain_poll_ns <= 0.0 || cost.lanes == 0 || c.iter().any(|x| *x < 0.0 || !x.is_finite()) {
            return Err("migration costs: drain poll and lanes must be positive and cycles not negative".into());
        }
        self.start();
        let now = self.sched.now();
        let id = self.migrations.len() as u32;
        self.migrations.push(Migration {
            src,
            dst,
            cost,
            phase: Phase::Draining,
            start: now,
            drained: 0,
            end: 0,
            state_bytes: 0,
            flows: 0,
            transfer_ps: 0,
            buffer: VecDeque::new(),
            buffer_bytes: 0,
            buffered: 0,
            replayed: 0,
            buffer_peak: 0,
            buffer_dropped: 0,
            added_ns: Histogram::default(),
            export_wall_ns: 0,
            import_wall_ns: 0,
            blob: Vec::new(),
            error: None,
            order_at_start: (self.order_dup, self.order_reordered),
            lost_at_start: self.loss_drops(),
            aborted: false,
        });
        self.order.get_or_insert_with(Default::default);
        self.nfs[dst as usize].mig_in = Some(id);
        self.sched.at(now, Ev::MigDrainCheck { mig: id });
        Ok(id)
    }

    /// Call off migration `mig` before it ended (the caller could not switch
    /// the traffic over and points it back at the source at this instant):
    /// the source keeps its state and goes on; what the destination buffered
    /// goes to the source now, in arrival order (no queue-depth check, as a
    /// release), and so does whatever still reaches the destination later
    /// (packets already on their way there). The migration ends `failed`
    /// with error "aborted" (also one that failed before its transfer, whose
    /// destination still buffers). Err once the state moved.
    pub fn abort_migration(&mut self, mig: u32) -> Result<(), String> {
        let m = self.migrations.get(mig as usize).ok_or_else(|| format!("no migration #{mig}"))?;
        if m.aborted {
            return Ok(());
        }
        if m.phase == Phase::Done || self.nfs[m.src as usize].retired {
            return Err(format!("migration #{mig} has already ended: the state moved"));
        }
        let now = self.sched.now();
        let m = &mut self.migrations[mig as usize];
        m.phase = Phase::Failed;
        m.aborted = true;
        m.error = Some("aborted".into());
        m.end = now;
        m.blob = Vec::new();
        m.buffer_bytes = 0;
        let (src, buffer) = (m.src, std::mem::take(&mut m.buffer));
        for (_, port, pkt) in buffer {
            self.mig_to_source(now, src, port, pkt);
        }
        Ok(())
    }

    fn mig_to_source(&mut self, now: Ps, src: u32, port: u8, pkt: Packet) {
        let fin = self.nf_admit_released(now, src, &pkt);
        self.nf_after_core(now, fin, src, port, pkt);
    }

    /// A packet reached an NF that is the destination of migration `mig`: hold it
    /// (or, once the migration was aborted, hand it to the source).
    pub(crate) fn mig_buffer(&mut self, now: Ps, mig: u32, port: u8, pkt: Packet) {
        let m = &mut self.migrations[mig as usize];
        if m.aborted {
            let src = m.src;
            return self.mig_to_source(now, src, port, pkt);
        }
        let len = pkt.frame.len() as u64;
        if m.buffer_bytes + len > m.cost.buffer_bytes {
            m.buffer_dropped += 1;
            let place = self.nfs[m.dst as usize].place;
            return self.drop_pkt(place, "migration_buffer_full", pkt);
        }
        m.buffer_bytes += len;
        m.buffered += 1;
        m.buffer.push_back((now, port, pkt));
        m.buffer_peak = m.buffer_peak.max(m.buffer.len() as u64);
    }

    /// Drops so far by any of `LOSS_REASONS`, anywhere.
    fn loss_drops(&self) -> u64 {
        self.drops.iter().filter(|((_, r), _)| LOSS_REASONS.contains(r)).map(|(_, n)| n).sum()
    }

    /// The oldest birth time among packets still in the machine (outside migration buffers).
    fn oldest_live(&self) -> Option<Ps> {
        let mut free = vec![false; self.slab.len()];
        for &s in &self.free_slots {
            free[s as usize] = true;
        }
        let slab = self.slab.iter().enumerate().filter(|(i, _)| !free[*i]).map(|(_, p)| p.born);
        let rr = self.links.iter().flat_map(|l| l.queues.iter().flatten()).map(|p| p.born);
        slab.chain(rr).min()
    }

    pub(crate) fn mig_drain_check(&mut self, now: Ps, mig: u32) {
        if self.migrations[mig as usize].phase != Phase::Draining {
            return; // aborted
        }
        let start = self.migrations[mig as usize].start;
        if self.oldest_live().is_some_and(|b| b <= start) {
            let poll = (self.migrations[mig as usize].cost.drain_poll_ns * PS_PER_NS as f64) as Ps;
            return self.sched.at(now + poll.max(1), Ev::MigDrainCheck { mig });
        }
        let (src, dst, cost) = {
            let m = &self.migrations[mig as usize];
            (m.src, m.dst, m.cost)
        };
        let t0 = Instant::now();
        let blob = self.nfs[src as usize].nf.export_state();
        let export_wall = t0.elapsed().as_nanos() as u64;
        let bytes = blob.len() as u64;
        let (sdev, ddev) = (self.nfs[src as usize].dev, self.nfs[dst as usize].dev);
        let flows = self.nfs[src as usize].nf.flow_count() as u64;
        let lanes = cost.lanes as f64;
        let ser_cycles = (cost.export_cycles_per_byte * bytes as f64 + cost.export_cycles_per_flow * flows as f64) / lanes;
        let ser = cycles_ps(ser_cycles, self.devices[sdev as usize].spec.hz());
        let mut t = now + ser;
        match self.state_path(sdev, ddev) {
            Ok(hops) => {
                for (link, dir) in hops {
                    t = self.bulk_transfer(now, t, link, dir, bytes as usize);
                }
            }
            Err(e) => {
                let m = &mut self.migrations[mig as usize];
                m.error = Some(e);
                m.phase = Phase::Failed;
                return;
            }
        }
        let transfer = t - now - ser;
        let de_cycles = (cost.import_cycles_per_byte * bytes as f64 + cost.import_cycles_per_flow * flows as f64) / lanes;
        t += cycles_ps(de_cycles, self.devices[ddev as usize].spec.hz());
        let m = &mut self.migrations[mig as usize];
        m.drained = now;
        m.state_bytes = bytes;
        m.flows = flows;
        m.transfer_ps = transfer;
        m.export_wall_ns = export_wall;
        m.blob = blob;
        m.phase = Phase::Transferring;
        self.sched.at(t, Ev::MigImported { mig });
    }

    /// PCIe hops (link, direction) from device `a` to device `b`: the link joining
    /// them, else two links through a device both share (the host).
    fn state_path(&self, a: u16, b: u16) -> Result<Vec<(u16, u8)>, String> {
        if a == b {
            return Ok(vec![]);
        }
        let hop = |x: u16, y: u16| {
            self.links.iter().position(|l| (l.spec.dev_a, l.spec.dev_b) == (x, y) || (l.spec.dev_a, l.spec.dev_b) == (y, x)).map(|i| {
                let dir = if self.links[i].spec.dev_a == x { 0 } else { 1 };
                (i as u16, dir)
            })
        };
        if let Some(h) = hop(a, b) {
            return Ok(vec![h]);
        }
        for mid in 0..self.devices.len() as u16 {
            if let (Some(h1), Some(h2)) = (hop(a, mid), hop(mid, b)) {
                return Ok(vec![h1, h2]);
            }
        }
        Err(format!("no PCIe path from {} to {} for the NF state", self.devices[a as usize].spec.name, self.devices[b as usize].spec.name))
    }

    /// Move `bytes` of state over `link` in direction `dir`, ready at `ready`;
    /// returns when they have arrived. On a FIFO link one bulk DMA job (4 KiB
    /// descriptors) occupies the direction's server; on a round-robin link the
    /// time is charged without taking turns with the packets.
    fn bulk_transfer(&mut self, now: Ps, ready: Ps, link: u16, dir: u8, bytes: usize) -> Ps {
        const CHUNK: usize = 4096;
        let horizon = self.horizon;
        let l = &mut self.links[link as usize];
        let d = dir as usize;
        let full = bytes / CHUNK;
        let rest = bytes % CHUNK;
        let mut service = full as Ps * l.service(CHUNK, d);
        if rest > 0 || bytes == 0 {
            service += l.service(rest, d);
        }
        let fin = if l.spec.round_robin {
            ready + service
        } else {
            let server = if l.spec.shared { 0 } else { d };
            l.dirs[server].admit_always(now, ready, service, horizon)
        };
        fin + l.latency(d)
    }

    pub(crate) fn mig_imported(&mut self, now: Ps, mig: u32) {
        if self.migrations[mig as usize].phase != Phase::Transferring {
            return; // aborted
        }
        let (src, dst) = {
            let m = &self.migrations[mig as usize];
            (m.src, m.dst)
        };
        let blob = std::mem::take(&mut self.migrations[mig as usize].blob);
        let t0 = Instant::now();
        let r = self.nfs[dst as usize].nf.import_state(&blob);
        let import_wall = t0.elapsed().as_nanos() as u64;
        self.migrations[mig as usize].import_wall_ns = import_wall;
        if let Err(e) = r {
            // The destination keeps buffering nothing more; its packets are replayed
            // without the state (counted), so the failure is visible, never silent.
            self.migrations[mig as usize].error = Some(format!("state import refused: {e}"));
        }
        self.nfs[src as usize].retired = true;
        self.nfs[dst as usize].mig_in = None;
        let buffer = std::mem::take(&mut self.migrations[mig as usize].buffer);
        for (arrived, port, pkt) in buffer {
            let m = &mut self.migrations[mig as usize];
            m.replayed += 1;
            let n = &self.nfs[dst as usize];
            let service = cycles_ps(n.cost.cycles(pkt.frame.len()), self.devices[n.dev as usize].spec.hz());
            let fin = self.nf_admit_released(now, dst, &pkt);
            let m = &mut self.migrations[mig as usize];
            m.added_ns.record(fin.saturating_sub(arrived).saturating_sub(service) / PS_PER_NS);
            self.nf_after_core(now, fin, dst, port, pkt);
        }
        let m = &mut self.migrations[mig as usize];
        m.buffer_bytes = 0;
        m.end = now;
        m.phase = if m.error.is_some() { Phase::Failed } else { Phase::Done };
        self.paused.push(mig);
    }

    /// Migrations whose run paused at their end since the last call (oldest first).
    pub fn take_migration_pauses(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.paused)
    }

    /// Whether migration `mig` has finished (successfully or not).
    pub fn migration_done(&self, mig: u32) -> Option<bool> {
        self.migrations.get(mig as usize).map(|m| matches!(m.phase, Phase::Done | Phase::Failed))
    }

    /// One migration as metrics JSON (times in simulated seconds, latencies in ns).
    pub fn migration_json(&self, mig: u32) -> Option<Json> {
        let m = self.migrations.get(mig as usize)?;
        let s = |p: Ps| Json::Num(p as f64 / crate::clock::PS_PER_S as f64);
        let phase = match m.phase {
            Phase::Draining => "draining",
            Phase::Transferring => "transferring",
            Phase::Done => "done",
            Phase::Failed => "failed",
        };
        let h = &m.added_ns;
        // Sink-side checks from this migration's start to the next one's (or now).
        // (and drops by `LOSS_REASONS` anywhere over the same span).
        let next = self.migrations.get(mig as usize + 1);
        let upto = next.map_or((self.order_dup, self.order_reordered), |n| n.order_at_start);
        let lost = next.map_or_else(|| self.loss_drops(), |n| n.lost_at_start) - m.lost_at_start;
        let mut kv = vec![
            ("nf".to_string(), Json::Str(self.nfs[m.src as usize].name.clone())),
            ("to_instance".to_string(), Json::Str(self.nfs[m.dst as usize].name.clone())),
            ("from".to_string(), Json::Str(self.devices[self.nfs[m.src as usize].dev as usize].spec.name.clone())),
            ("to".to_string(), Json::Str(self.devices[self.nfs[m.dst as usize].dev as usize].spec.name.clone())),
            ("phase".to_string(), Json::Str(phase.into())),
            ("start_s".to_string(), s(m.start)),
            ("drained_s".to_string(), s(m.drained)),
            ("end_s".to_string(), s(m.end)),
            ("state_bytes".to_string(), Json::Int(m.state_bytes)),
            ("state_flows".to_string(), Json::Int(m.flows)),
            ("transfer_s".to_string(), s(m.transfer_ps)),
            ("buffered_packets".to_string(), Json::Int(m.buffered)),
            ("replayed_packets".to_string(), Json::Int(m.replayed)),
            ("buffer_peak_packets".to_string(), Json::Int(m.buffer_peak)),
            ("buffer_dropped".to_string(), Json::Int(m.buffer_dropped)),
            (
                "added_latency_ns".to_string(),
                Json::Obj(vec![
                    ("p50".to_string(), Json::Int(h.quantile(0.5))),
                    ("p99".to_string(), Json::Int(h.quantile(0.99))),
                    ("max".to_string(), Json::Int(h.max)),
                    ("mean".to_string(), Json::Num(h.mean())),
                ]),
            ),
            ("lost".to_string(), Json::Int(lost)),
            ("duplicated".to_string(), Json::Int(upto.0 - m.order_at_start.0)),
            ("reordered".to_string(), Json::Int(upto.1 - m.order_at_start.1)),
            ("export_wall_ns".to_string(), Json::Int(m.export_wall_ns)),
            ("import_wall_ns".to_string(), Json::Int(m.import_wall_ns)),
        ];
        if let Some(e) = &m.error {
            kv.push(("error".to_string(), Json::Str(e.clone())));
        }
        Some(Json::Obj(kv))
    }

    pub fn migration_count(&self) -> usize {
        self.migrations.len()
    }
}
