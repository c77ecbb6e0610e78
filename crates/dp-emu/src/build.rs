//! Building an emulator: devices, accelerators, switches (port maps or
//! OpenFlow), Ethernet ports, PCIe links and their port pairs, NFs, sinks,
//! sources, wiring between places, packet injection and pcap capture.
//! Every call validates its references and returns an error naming the part.

use crate::clock::{Ps, PS_PER_NS};
use crate::drr::DrrPort;
use crate::emulator::{Device, Emulator, Eth, Ev, FlowStats, NfInst, Sink};
use crate::isolation::{IngressBuffer, Tenant, TokenBucket};
use crate::pcap::PcapWriter;
use crate::pcie::Pcie;
use crate::server::FifoServer;
use crate::switch::{PortMapSwitch, SwitchLogic};
use crate::topology::{AccelSpec, DeviceSpec, EthSpec, PcieSpec, Target};
use crate::traffic::{Packet, Source, SourceSpec};
use dp_nf::{CostProfile, NetworkFunction};
use std::path::Path;

impl Emulator {
    // ------------------------------------------------------------ building

    pub fn add_device(&mut self, spec: DeviceSpec) -> Result<u16, String> {
        if spec.cores == 0 || spec.ghz <= 0.0 || spec.speed <= 0.0 {
            return Err(format!("device {}: cores, ghz and speed must be positive", spec.name));
        }
        if self.devices.iter().any(|d| d.spec.name == spec.name) {
            return Err(format!("device {} defined twice", spec.name));
        }
        let place = self.place(spec.name.clone());
        let cores = (0..spec.cores).map(|_| FifoServer::new(spec.core_queue_depth as usize)).collect();
        self.devices.push(Device {
            spec,
            cores,
            accels: Vec::new(),
            switch: Box::new(PortMapSwitch::default()),
            wiring: Vec::new(),
            capture: Vec::new(),
            capture_rx: Vec::new(),
            switch_packets: 0,
            place,
        });
        Ok((self.devices.len() - 1) as u16)
    }

    fn dev(&self, dev: u16) -> Result<&Device, String> {
        self.devices.get(dev as usize).ok_or_else(|| format!("no device #{dev}"))
    }

    pub fn device_index(&self, name: &str) -> Option<u16> {
        self.devices.iter().position(|d| d.spec.name == name).map(|i| i as u16)
    }

    pub fn add_accelerator(&mut self, dev: u16, spec: AccelSpec) -> Result<usize, String> {
        self.dev(dev)?;
        if spec.gbps <= 0.0 {
            return Err(format!("accelerator {}: gbps must be positive", spec.name));
        }
        let d = &mut self.devices[dev as usize];
        let depth = spec.queue_depth as usize;
        d.accels.push((spec, FifoServer::new(depth)));
        Ok(d.accels.len() - 1)
    }

    /// Replace a device's switch logic (e.g. with dp-core's OpenFlow pipeline).
    pub fn set_switch(&mut self, dev: u16, logic: Box<dyn SwitchLogic>) -> Result<(), String> {
        self.dev(dev)?;
        self.devices[dev as usize].switch = logic;
        Ok(())
    }

    /// Make `dev`'s switch a port map: frames entering `in_port` leave on `out_port`.
    pub fn set_port_map(&mut self, dev: u16, pairs: &[(u32, u32)]) -> Result<(), String> {
        let branches: Vec<(u32, Vec<(u32, f64)>)> = pairs.iter().map(|&(i, o)| (i, vec![(o, 1.0)])).collect();
        self.set_port_branches(dev, &branches)
    }

    /// Make `dev`'s switch a port map whose entries may split flows over weighted
    /// outputs (an entry without outputs drops what enters there).
    pub fn set_port_branches(&mut self, dev: u16, entries: &[(u32, Vec<(u32, f64)>)]) -> Result<(), String> {
        self.dev(dev)?;
        let mut pm = PortMapSwitch::default();
        for (i, outs) in entries {
            pm.set_branches(*i, outs);
        }
        self.devices[dev as usize].switch = Box::new(pm);
        Ok(())
    }

    pub fn switch_mut(&mut self, dev: u16) -> Option<&mut (dyn SwitchLogic + 'static)> {
        self.devices.get_mut(dev as usize).map(|d| d.switch.as_mut())
    }

    pub fn add_sink(&mut self, name: &str) -> u32 {
        self.sinks.push(Sink { name: name.to_string(), ..Default::default() });
        (self.sinks.len() - 1) as u32
    }

    /// An Ethernet port: switch port `port` of `dev` transmits onto a wire at
    /// `spec.gbps`; what it sends is received by a sink named after the port.
    pub fn add_eth_port(&mut self, dev: u16, port: u32, spec: EthSpec) -> Result<u32, String> {
        self.dev(dev)?;
        if spec.gbps <= 0.0 {
            return Err(format!("Ethernet port {}: gbps must be positive", spec.name));
        }
        let sink = self.add_sink(&format!("wire:{}", spec.name));
        let place = self.place(spec.name.clone());
        let depth = spec.queue_depth as usize;
        let (ppb, prop) = (crate::clock::ps_per_byte(spec.gbps * 1e9), (spec.propagation_ns * PS_PER_NS as f64) as Ps);
        self.eths.push(Eth { ps_per_byte: ppb, propagation_ps: prop, spec, dev, tx: FifoServer::new(depth), drr: None, sink, packets: 0, bytes: 0, place });
        let eth = (self.eths.len() - 1) as u32;
        self.wire(Target::Switch { dev, port }, Target::Eth { eth })?;
        Ok(eth)
    }

    pub fn add_pcie_link(&mut self, spec: PcieSpec) -> Result<u16, String> {
        self.dev(spec.dev_a)?;
        self.dev(spec.dev_b)?;
        if spec.gbps <= 0.0 {
            return Err(format!("PCIe link {}: gbps must be positive", spec.name));
        }
        if let Some(t) = &spec.tlp {
            t.check().map_err(|e| format!("PCIe link {}: {e}", spec.name))?;
        }
        let place = self.place(spec.name.clone());
        let depth = spec.queue_depth as usize;
        self.links.push(Pcie::new(spec, depth, place));
        Ok((self.links.len() - 1) as u16)
    }

    /// A port pair on a link (a virtual port pair or an SR-IOV VF). Wire its ends with `connect`.
    pub fn add_pcie_pair(&mut self, link: u16) -> Result<u16, String> {
        let l = self.links.get_mut(link as usize).ok_or_else(|| format!("no PCIe link #{link}"))?;
        l.ends.push([None, None]);
        l.queues.push(Default::default());
        l.queues.push(Default::default());
        Ok((l.ends.len() - 1) as u16)
    }

    /// Attach an NF to `dev`: it runs on `cores` (empty: the device's non-switch
    /// cores) and, when `cost.accelerator` is set, on that accelerator too.
    pub fn add_nf(&mut self, name: &str, dev: u16, nf: Box<dyn NetworkFunction>, cost: Option<CostProfile>, cores: &[usize]) -> Result<u32, String> {
        let d = self.dev(dev)?;
        let cost = cost.unwrap_or_else(|| nf.default_cost());
        let accel = match &cost.accelerator {
            None => None,
            Some(a) => Some(d.accels.iter().position(|(s, _)| &s.name == a).ok_or_else(|| {
                format!("NF {name}: device {} has no accelerator {a:?}", d.spec.name)
            })?),
        };
        let cores = if cores.is_empty() { d.nf_cores() } else { cores.to_vec() };
        if let Some(c) = cores.iter().find(|&&c| c >= d.cores.len()) {
            return Err(format!("NF {name}: core {c} does not exist on {} ({} cores)", d.spec.name, d.cores.len()));
        }
        let place = self.place(format!("nf:{name}"));
        self.nfs.push(NfInst { name: name.to_string(), dev, nf, cost, accel, bucket: None, buffer: None, cores, out: [None, None], packets: 0, place, mig_in: None, retired: false });
        Ok((self.nfs.len() - 1) as u32)
    }

    /// Make Ethernet port `eth` share its wire by deficit round robin: class i
    /// has weight `weights[i]` and holds the sources listed in `classes[i]`;
    /// other sources share a default class of weight 1. `quantum_bytes`: credit
    /// per turn at weight 1. Each class may queue the port's queue depth.
    pub fn set_eth_drr(&mut self, eth: u32, classes: &[(f64, Vec<u32>)], quantum_bytes: f64) -> Result<(), String> {
        let e = self.eths.get(eth as usize).ok_or_else(|| format!("no Ethernet port #{eth}"))?;
        let positive = |x: f64| x > 0.0 && x.is_finite();
        if !classes.iter().all(|(w, _)| positive(*w)) || !positive(quantum_bytes) {
            return Err(format!("Ethernet port {}: DRR weights and quantum must be positive", e.spec.name));
        }
        if classes.len() >= u16::MAX as usize {
            return Err(format!("Ethernet port {}: too many DRR classes", e.spec.name));
        }
        let default = classes.len() as u16;
        let mut class_of_source = vec![default; self.sources.len()];
        for (c, (_, sources)) in classes.iter().enumerate() {
            for &s in sources {
                let slot = class_of_source.get_mut(s as usize).ok_or_else(|| format!("DRR class {c}: no source #{s}"))?;
                *slot = c as u16;
            }
        }
        let weights: Vec<f64> = classes.iter().map(|(w, _)| *w).collect();
        let depth = e.spec.queue_depth as usize;
        self.eths[eth as usize].drr = Some(Box::new(DrrPort::new(&weights, class_of_source, quantum_bytes, depth)));
        Ok(())
    }

    /// An ingress buffer of `capacity` bytes (see isolation.rs); attach NFs with `set_nf_buffer`.
    pub fn add_ingress_buffer(&mut self, name: &str, capacity: u64) -> u32 {
        self.buffers.push(IngressBuffer::new(name, capacity));
        (self.buffers.len() - 1) as u32
    }

    /// Packets arriving at NF `nf` wait in ingress buffer `buffer` until their core work there is done.
    pub fn set_nf_buffer(&mut self, nf: u32, buffer: u32) -> Result<(), String> {
        if buffer as usize >= self.buffers.len() {
            return Err(format!("no ingress buffer #{buffer}"));
        }
        let n = self.nfs.get_mut(nf as usize).ok_or_else(|| format!("no NF #{nf}"))?;
        n.buffer = Some(buffer);
        Ok(())
    }

    /// A tenant owning traffic sources `sources` (reported per tenant in the metrics).
    pub fn add_tenant(&mut self, name: &str, sources: &[u32]) -> Result<u16, String> {
        if self.tenants.iter().any(|t| t.name == name) {
            return Err(format!("tenant {name} defined twice"));
        }
        if let Some(s) = sources.iter().find(|&&s| s as usize >= self.sources.len()) {
            return Err(format!("tenant {name}: no source #{s}"));
        }
        self.tenants.push(Tenant { name: name.to_string(), sources: sources.to_vec() });
        Ok((self.tenants.len() - 1) as u16)
    }

    /// A token bucket letting `tenant`'s jobs use accelerator `accel` of `dev`
    /// at up to `gbps` of its throughput, `burst_ns` of its time at once, with
    /// up to `depth` jobs waiting for budget (see isolation.rs).
    pub fn add_token_bucket(&mut self, dev: u16, accel: &str, tenant: &str, gbps: f64, burst_ns: f64, depth: u32) -> Result<u32, String> {
        let d = self.dev(dev)?;
        let a = d.accels.iter().position(|(s, _)| s.name == accel).ok_or_else(|| format!("device {} has no accelerator {accel:?}", d.spec.name))?;
        if gbps <= 0.0 || burst_ns < 0.0 {
            return Err(format!("token bucket of {tenant} on {accel}: rate must be positive and burst not negative"));
        }
        let accel_gbps = d.accels[a].0.gbps;
        let burst = (burst_ns * PS_PER_NS as f64) as Ps;
        self.buckets.push(TokenBucket::new(tenant, dev, a, gbps, accel_gbps, burst, depth as usize));
        Ok((self.buckets.len() - 1) as u32)
    }

    /// Gate NF `nf`'s accelerator jobs through token bucket `bucket` (same device and accelerator).
    pub fn set_nf_bucket(&mut self, nf: u32, bucket: u32) -> Result<(), String> {
        let b = self.buckets.get(bucket as usize).ok_or_else(|| format!("no token bucket #{bucket}"))?;
        let n = self.nfs.get_mut(nf as usize).ok_or_else(|| format!("no NF #{nf}"))?;
        if n.dev != b.dev || n.accel != Some(b.accel) {
            return Err(format!("NF {}: token bucket of {} is for another device or accelerator", n.name, b.tenant));
        }
        n.bucket = Some(bucket);
        Ok(())
    }

    pub fn nf_mut(&mut self, nf: u32) -> Option<&mut Box<dyn NetworkFunction>> {
        self.nfs.get_mut(nf as usize).map(|n| &mut n.nf)
    }

    /// What leaves `from` goes to `to` (one direction).
    pub fn wire(&mut self, from: Target, to: Target) -> Result<(), String> {
        self.check_target(to)?;
        match from {
            Target::Switch { dev, port } => {
                self.dev(dev)?;
                if port > 65_535 {
                    return Err(format!("switch port {port} too large for the emulator (max 65535)"));
                }
                let w = &mut self.devices[dev as usize].wiring;
                if w.len() <= port as usize {
                    w.resize(port as usize + 1, None);
                }
                w[port as usize] = Some(to);
            }
            Target::Nf { nf, port } => {
                let n = self.nfs.get_mut(nf as usize).ok_or_else(|| format!("no NF #{nf}"))?;
                if port > 1 {
                    return Err(format!("NF {}: port {port} (NFs have ports 0 and 1)", n.name));
                }
                n.out[port as usize] = Some(to);
            }
            Target::Pcie { link, pair, dir } => {
                let l = self.links.get_mut(link as usize).ok_or_else(|| format!("no PCIe link #{link}"))?;
                let e = l.ends.get_mut(pair as usize).ok_or_else(|| format!("PCIe link {}: no pair #{pair}", l.spec.name))?;
                e[(dir & 1) as usize] = Some(to);
            }
            Target::Eth { .. } | Target::Sink { .. } => return Err(format!("{from:?} cannot send packets")),
        }
        Ok(())
    }

    /// Join two places in both directions (a sink or Ethernet port only receives).
    pub fn connect(&mut self, a: Target, b: Target) -> Result<(), String> {
        self.wire(a, b)?;
        match b {
            Target::Eth { .. } | Target::Sink { .. } => Ok(()),
            _ => self.wire(b, a),
        }
    }

    fn check_target(&self, t: Target) -> Result<(), String> {
        let ok = match t {
            Target::Switch { dev, .. } => (dev as usize) < self.devices.len(),
            Target::Nf { nf, port } => (nf as usize) < self.nfs.len() && port <= 1,
            Target::Pcie { link, pair, .. } => self.links.get(link as usize).is_some_and(|l| (pair as usize) < l.ends.len()),
            Target::Eth { eth } => (eth as usize) < self.eths.len(),
            Target::Sink { sink } => (sink as usize) < self.sinks.len(),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("{t:?} does not exist"))
        }
    }

    pub fn add_source(&mut self, spec: SourceSpec, into: Target) -> Result<u32, String> {
        self.check_target(into)?;
        spec.check()?;
        if self.started {
            return Err("sources must be added before the run starts".into());
        }
        let idx = self.sources.len() as u32;
        let place = self.place(format!("source:{}", spec.name));
        let _ = place;
        let wire = spec.line_bps.map(|bps| self.ingress_wire(into, bps));
        self.sources.push(Source::new(spec, idx, self.seed));
        self.source_targets.push(into);
        self.source_wire.push(wire);
        self.flows.push(FlowStats::default());
        Ok(idx)
    }

    /// The ingress wire of `into` (made on first use): every source with a line
    /// rate entering `into` sends on it, one frame at a time. Sources entering one
    /// port with different line rates use the slowest.
    fn ingress_wire(&mut self, into: Target, line_bps: f64) -> u32 {
        let ps_per_byte = crate::clock::ps_per_byte(line_bps);
        if let Some(w) = self.wires.iter().position(|(t, _, _)| *t == into) {
            let slowest = &mut self.wires[w].1;
            *slowest = slowest.max(ps_per_byte);
            return w as u32;
        }
        self.wires.push((into, ps_per_byte, 0));
        (self.wires.len() - 1) as u32
    }

    /// Deliver `frame` to `into` at time `at` (not before now), e.g. a packet-out
    /// or a test packet. Injected frames are counted as the flow "injected".
    pub fn inject(&mut self, at: Ps, into: Target, frame: Vec<u8>) -> Result<(), String> {
        self.check_target(into)?;
        let (at, pkt) = self.injected(at, into, frame);
        let slot = self.stash(pkt);
        self.sched.at(at, Ev::Arrive(into, slot));
        Ok(())
    }

    /// `dev`'s switch sends `frame` out of `port` at `at` without running its
    /// pipeline (an OpenFlow packet-out whose actions were already applied).
    pub fn inject_output(&mut self, at: Ps, dev: u16, port: u32, frame: Vec<u8>) -> Result<(), String> {
        self.dev(dev)?;
        let (at, pkt) = self.injected(at, Target::Switch { dev, port }, frame);
        let pkt = self.stash(pkt);
        self.sched.at(at, Ev::SwitchOutput { dev, port, pkt });
        Ok(())
    }

    fn injected(&mut self, at: Ps, into: Target, frame: Vec<u8>) -> (Ps, Packet) {
        let source = match self.injected_source {
            Some(s) => s,
            None => {
                let idx = self.sources.len() as u32;
                let spec = SourceSpec::new("injected", crate::traffic::Arrival::Replay { records: vec![], repeat: false });
                self.sources.push(Source::new(spec, idx, self.seed));
                self.source_targets.push(into);
                self.source_wire.push(None);
                self.flows.push(FlowStats::default());
                self.injected_source = Some(idx);
                idx
            }
        };
        let at = at.max(self.sched.now());
        let flow = crate::traffic::frame_flow_hash(&frame);
        (at, Packet { frame, born: at, source, flow, mark: 0 })
    }

    /// Where frames leaving `dev`'s switch on `port` go.
    pub fn port_target(&self, dev: u16, port: u32) -> Option<Target> {
        self.devices.get(dev as usize)?.wiring.get(port as usize).copied().flatten()
    }

    /// Take (and clear) the packets sent to the controller so far.
    pub fn take_controller(&mut self) -> Vec<crate::emulator::PacketInEvent> {
        std::mem::take(&mut self.controller)
    }

    /// Capture every frame that `dev`'s switch sends out of `port` to a pcap file.
    pub fn capture(&mut self, dev: u16, port: u32, path: &Path) -> Result<(), String> {
        self.capture_into(dev, port, path, false)
    }

    /// Capture every frame that enters `dev`'s switch on `port` to a pcap file.
    pub fn capture_rx(&mut self, dev: u16, port: u32, path: &Path) -> Result<(), String> {
        self.capture_into(dev, port, path, true)
    }

    fn capture_into(&mut self, dev: u16, port: u32, path: &Path, rx: bool) -> Result<(), String> {
        self.capture_limited(dev, port, path, rx, 65535, u64::MAX)
    }

    /// Capture out of (or, with `rx`, into) `dev`'s `port`, keeping `snaplen` bytes of each
    /// frame and at most `limit` bytes of file (frames past it are counted, not written).
    pub fn capture_limited(&mut self, dev: u16, port: u32, path: &Path, rx: bool, snaplen: u32, limit: u64) -> Result<(), String> {
        self.dev(dev)?;
        let w = PcapWriter::create_limited(path, snaplen, limit).map_err(|e| format!("{}: {e}", path.display()))?;
        let d = &mut self.devices[dev as usize];
        let c = if rx { &mut d.capture_rx } else { &mut d.capture };
        if c.len() <= port as usize {
            c.resize_with(port as usize + 1, || None);
        }
        c[port as usize] = Some(w);
        Ok(())
    }
}
