//! Bindings for dp-emu and dp-nf: `tandem._dp.Emulator`, a builder + runner
//! over `dp_emu::Emulator`. Places are addressed by tuples:
//! ("switch", dev, port), ("nf", nf, port), ("pcie", link, pair, end),
//! ("eth", eth), ("sink", sink). Metrics come back as a JSON string.

use dp_emu::{
    AccelSpec, Arrival, DeviceSpec, EspSpec, EspTunnel, InnerApp, InnerProto, EthSpec, FlowSizeDist, FrameTemplate, PcieSpec, SizeDist, SourceSpec, Target,
    PS_PER_NS,
};
use dp_nf::{make_nf, CostProfile};

/// An ESP tunnel as Python gives it: (SPI, key ‖ salt, outer src, outer dst, ESN, TTL).
type EspTunnelArg = (u32, Vec<u8>, u32, u32, bool, u8);
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::path::Path;

// ---- OpenFlow rules for device switches: the same tuple formats as core_api.rs
// (see tandem.dataplane.convert), converted by its functions.
use dp_emu::OpenFlowSwitch;
use crate::core_api::{group_of, FlowModArgs, PyBucket};

fn err(e: String) -> PyErr {
    PyValueError::new_err(e)
}

fn ns(x: f64) -> u64 {
    (x * PS_PER_NS as f64).round().max(0.0) as u64
}

fn target(t: &Bound<'_, PyTuple>) -> PyResult<Target> {
    let kind: String = t.get_item(0)?.extract()?;
    let a = |i: usize| -> PyResult<u64> { t.get_item(i)?.extract() };
    let want = |n: usize| -> PyResult<()> {
        if t.len() != n {
            Err(PyValueError::new_err(format!("place {kind:?} needs {} numbers, got {}", n - 1, t.len() - 1)))
        } else {
            Ok(())
        }
    };
    Ok(match kind.as_str() {
        "switch" => {
            want(3)?;
            Target::Switch { dev: a(1)? as u16, port: a(2)? as u32 }
        }
        "nf" => {
            want(3)?;
            Target::Nf { nf: a(1)? as u32, port: a(2)? as u8 }
        }
        "pcie" => {
            want(4)?;
            Target::Pcie { link: a(1)? as u16, pair: a(2)? as u16, dir: a(3)? as u8 }
        }
        "eth" => {
            want(2)?;
            Target::Eth { eth: a(1)? as u32 }
        }
        "sink" => {
            want(2)?;
            Target::Sink { sink: a(1)? as u32 }
        }
        other => return Err(PyValueError::new_err(format!("unknown place kind {other:?}; use switch, nf, pcie, eth or sink"))),
    })
}

fn mac(x: u64) -> [u8; 6] {
    let b = x.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The timed emulator: build devices, links, NFs and sources, then run.
#[pyclass(module = "tandem._dp", name = "Emulator")]
pub struct PyEmulator {
    inner: dp_emu::Emulator,
}

impl PyEmulator {
    fn openflow(&mut self, dev: u16) -> PyResult<&mut OpenFlowSwitch> {
        self.inner
            .switch_mut(dev)
            .and_then(|s| s.as_any_mut())
            .and_then(|a| a.downcast_mut::<OpenFlowSwitch>())
            .ok_or_else(|| err(format!("device #{dev} has no OpenFlow switch (call use_openflow first)")))
    }
}

#[pymethods]
impl PyEmulator {
    #[new]
    #[pyo3(signature = (seed = 1))]
    fn new(seed: u64) -> Self {
        PyEmulator { inner: dp_emu::Emulator::new(seed) }
    }

    #[pyo3(signature = (name, cores, ghz, speed = 1.0, switch_cores = 0, switch_cycles_per_packet = 0.0,
        switch_cycles_per_byte = 0.0, table_capacity = 1_000_000, idle_watts = 0.0, busy_watts = 0.0,
        core_queue_depth = 1024))]
    #[allow(clippy::too_many_arguments)]
    fn add_device(
        &mut self,
        name: &str,
        cores: u32,
        ghz: f64,
        speed: f64,
        switch_cores: u32,
        switch_cycles_per_packet: f64,
        switch_cycles_per_byte: f64,
        table_capacity: u32,
        idle_watts: f64,
        busy_watts: f64,
        core_queue_depth: u32,
    ) -> PyResult<u16> {
        let mut d = DeviceSpec::new(name, cores, ghz);
        d.speed = speed;
        d.switch_cores = switch_cores;
        d.switch_cycles_per_packet = switch_cycles_per_packet;
        d.switch_cycles_per_byte = switch_cycles_per_byte;
        d.table_capacity = table_capacity;
        d.idle_watts = idle_watts;
        d.busy_watts = busy_watts;
        d.core_queue_depth = core_queue_depth;
        self.inner.add_device(d).map_err(err)
    }

    #[pyo3(signature = (dev, name, gbps, setup_ns = 0.0, queue_depth = 1024))]
    fn add_accelerator(&mut self, dev: u16, name: &str, gbps: f64, setup_ns: f64, queue_depth: u32) -> PyResult<usize> {
        self.inner.add_accelerator(dev, AccelSpec { name: name.into(), gbps, setup_ns, queue_depth }).map_err(err)
    }

    #[pyo3(signature = (name, dev_a, dev_b, gbps, shared = false, latency_ns = 0.0, dma_ns = 0.0,
        overhead_bytes = 0, queue_depth = 1024, dma_cycles = 0.0, round_robin = false, ring_contexts = 0,
        ring_miss_ns = 0.0, tlp = None))]
    #[allow(clippy::too_many_arguments)]
    fn add_pcie_link(
        &mut self,
        name: &str,
        dev_a: u16,
        dev_b: u16,
        gbps: f64,
        shared: bool,
        latency_ns: f64,
        dma_ns: f64,
        overhead_bytes: u32,
        queue_depth: u32,
        dma_cycles: f64,
        round_robin: bool,
        ring_contexts: u32,
        ring_miss_ns: f64,
        tlp: Option<std::collections::BTreeMap<String, f64>>,
    ) -> PyResult<u16> {
        let mut p = PcieSpec::new(name, dev_a, dev_b, gbps);
        p.shared = shared;
        p.latency_ns = latency_ns;
        p.dma_ns = dma_ns;
        p.overhead_bytes = overhead_bytes;
        p.queue_depth = queue_depth;
        p.dma_cycles = dma_cycles;
        p.round_robin = round_robin;
        p.ring_contexts = ring_contexts;
        p.ring_miss_ns = ring_miss_ns;
        if let Some(over) = tlp {
            let t = tlp_model(&over).map_err(|e| err(format!("PCIe link {name}: {e}")))?;
            p.gbps = t.data_gbps();
            p.tlp = Some(t);
        }
        self.inner.add_pcie_link(p).map_err(err)
    }

    fn add_pcie_pair(&mut self, link: u16) -> PyResult<u16> {
        self.inner.add_pcie_pair(link).map_err(err)
    }

    #[pyo3(signature = (dev, port, name, gbps, queue_depth = 1024, propagation_ns = 0.0))]
    fn add_eth_port(&mut self, dev: u16, port: u32, name: &str, gbps: f64, queue_depth: u32, propagation_ns: f64) -> PyResult<u32> {
        self.inner.add_eth_port(dev, port, EthSpec { name: name.into(), gbps, queue_depth, propagation_ns }).map_err(err)
    }

    fn add_sink(&mut self, name: &str) -> u32 {
        self.inner.add_sink(name)
    }

    /// Attach an NF of `kind` to device `dev`; the cost given here is what it
    /// charges on that device's cores (and accelerator, if named).
    #[pyo3(signature = (name, dev, kind, ports = 2, cycles_per_packet = 0.0, cycles_per_byte = 0.0,
        accelerator = None, cores = None))]
    #[allow(clippy::too_many_arguments)]
    fn add_nf(
        &mut self,
        name: &str,
        dev: u16,
        kind: &str,
        ports: u8,
        cycles_per_packet: f64,
        cycles_per_byte: f64,
        accelerator: Option<String>,
        cores: Option<Vec<usize>>,
    ) -> PyResult<u32> {
        let nf = make_nf(kind, ports, cycles_per_packet, cycles_per_byte).map_err(|e| err(format!("NF {name}: {e}")))?;
        let cost = CostProfile { cycles_per_packet, cycles_per_byte, accelerator };
        self.inner.add_nf(name, dev, nf, Some(cost), &cores.unwrap_or_default()).map_err(err)
    }

    /// Like `add_nf`, but any NF kind of dp-nf with its JSON configuration
    /// (`tandem._dp.nf_kinds()`); the cost profile is still the scenario's.
    #[pyo3(signature = (name, dev, kind, config, ports, cycles_per_packet, cycles_per_byte, accelerator = None, cores = None))]
    #[allow(clippy::too_many_arguments)]
    fn add_nf_config(
        &mut self,
        name: &str,
        dev: u16,
        kind: &str,
        config: &str,
        ports: u8,
        cycles_per_packet: f64,
        cycles_per_byte: f64,
        accelerator: Option<String>,
        cores: Option<Vec<usize>>,
    ) -> PyResult<u32> {
        let nf = dp_nf::make_nf_config(kind, ports, config).map_err(|e| err(format!("NF {name}: {e}")))?;
        let cost = CostProfile { cycles_per_packet, cycles_per_byte, accelerator };
        self.inner.add_nf(name, dev, nf, Some(cost), &cores.unwrap_or_default()).map_err(err)
    }

    /// The NF's own named counters (packets, verdicts, detections, errors by reason).
    fn nf_counters(&mut self, nf: u32) -> PyResult<Vec<(String, u64)>> {
        let f = self.inner.nf_mut(nf).ok_or_else(|| PyIndexError::new_err(format!("no NF #{nf}")))?;
        Ok(f.counters())
    }

    /// Make Ethernet port `eth` a deficit-round-robin port: [(weight, [source index, ...]), ...]
    /// classes; other sources share a default class of weight 1.
    #[pyo3(signature = (eth, classes, quantum_bytes = 1600.0))]
    fn set_eth_drr(&mut self, eth: u32, classes: Vec<(f64, Vec<u32>)>, quantum_bytes: f64) -> PyResult<()> {
        self.inner.set_eth_drr(eth, &classes, quantum_bytes).map_err(err)
    }

    /// An ingress buffer of `capacity_bytes`; attach NFs with `set_nf_buffer`.
    fn add_ingress_buffer(&mut self, name: &str, capacity_bytes: u64) -> u32 {
        self.inner.add_ingress_buffer(name, capacity_bytes)
    }

    /// Packets arriving at NF `nf` wait in ingress buffer `buffer` until their core work is done.
    fn set_nf_buffer(&mut self, nf: u32, buffer: u32) -> PyResult<()> {
        self.inner.set_nf_buffer(nf, buffer).map_err(err)
    }

    /// A tenant owning the sources with these indices (reported per tenant in the metrics).
    fn add_tenant(&mut self, name: &str, sources: Vec<u32>) -> PyResult<u16> {
        self.inner.add_tenant(name, &sources).map_err(err)
    }

    /// A FairNIC token bucket: `tenant` may use accelerator `accel` of device `dev`
    /// at up to `gbps`, `burst_ns` of its time at once, `queue_depth` jobs waiting.
    #[pyo3(signature = (dev, accel, tenant, gbps, burst_ns = 10_000.0, queue_depth = 1024))]
    fn add_token_bucket(&mut self, dev: u16, accel: &str, tenant: &str, gbps: f64, burst_ns: f64, queue_depth: u32) -> PyResult<u32> {
        self.inner.add_token_bucket(dev, accel, tenant, gbps, burst_ns, queue_depth).map_err(err)
    }

    /// Gate NF `nf`'s accelerator jobs through token bucket `bucket`.
    fn set_nf_bucket(&mut self, nf: u32, bucket: u32) -> PyResult<()> {
        self.inner.set_nf_bucket(nf, bucket).map_err(err)
    }

    fn nf_export_state<'py>(&mut self, py: Python<'py>, nf: u32) -> PyResult<Bound<'py, PyBytes>> {
        let f = self.inner.nf_mut(nf).ok_or_else(|| PyIndexError::new_err(format!("no NF #{nf}")))?;
        Ok(PyBytes::new(py, &f.export_state()))
    }

    fn nf_import_state(&mut self, nf: u32, state: &[u8]) -> PyResult<()> {
        let f = self.inner.nf_mut(nf).ok_or_else(|| PyIndexError::new_err(format!("no NF #{nf}")))?;
        f.import_state(state).map_err(|e| err(e.0))
    }

    /// Join two places both ways (a sink or Ethernet port only receives).
    fn connect(&mut self, a: &Bound<'_, PyTuple>, b: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.inner.connect(target(a)?, target(b)?).map_err(err)
    }

    /// What leaves `src` goes to `dst` (one way).
    fn wire(&mut self, src: &Bound<'_, PyTuple>, dst: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.inner.wire(target(src)?, target(dst)?).map_err(err)
    }

    /// Make device `dev`'s switch a fixed port map: [(in_port, out_port), ...].
    fn set_port_map(&mut self, dev: u16, pairs: Vec<(u32, u32)>) -> PyResult<()> {
        self.inner.set_port_map(dev, &pairs).map_err(err)
    }

    /// Make device `dev`'s switch a port map with weighted branches:
    /// [(in_port, [(out_port, weight), ...]), ...]; a flow keeps its branch.
    fn set_port_branches(&mut self, dev: u16, entries: Vec<(u32, Vec<(u32, f64)>)>) -> PyResult<()> {
        self.inner.set_port_branches(dev, &entries).map_err(err)
    }

    /// Give device `dev` an OpenFlow 1.3 + POF switch with `n_tables` tables and these ports.
    /// every_controller_id: packet-ins for every controller id, each with its id (dp-core's
    /// `Pipeline::every_controller_id`); else for id 0 only.
    #[pyo3(signature = (dev, n_tables, ports, drop_malformed=true, every_controller_id=false))]
    fn use_openflow(&mut self, dev: u16, n_tables: usize, ports: Vec<u32>, drop_malformed: bool, every_controller_id: bool) -> PyResult<()> {
        let mut sw = OpenFlowSwitch::new(n_tables);
        sw.pipeline().drop_malformed = drop_malformed;
        sw.pipeline().every_controller_id = every_controller_id;
        for p in ports {
            sw.pipeline().add_port(p);
        }
        self.inner.set_switch(dev, Box::new(sw)).map_err(err)
    }

    /// Flow-mod on device `dev`'s OpenFlow switch (`fm` as for `tandem._dp.Pipeline.flow_mod`).
    fn switch_flow_mod(&mut self, dev: u16, fm: FlowModArgs<'_>) -> PyResult<Vec<u32>> {
        let r = fm.into_req()?;
        let now_ps = self.inner.now(); // (a timed rule's timers start now)
        let p = self.openflow(dev)?.pipeline();
        if now_ps / 1000 > p.now_ns() {
            p.set_now_ns(now_ps / 1000);
        }
        p.flow_mod_timed(r.cmd, r.rule, r.out_port, r.out_group, r.all_tables, r.timeouts).map_err(|e| err(e.to_string()))
    }

    /// kind: all / select / indirect / fast_failover; buckets: [(actions, weight, watch_port, watch_group)].
    fn switch_add_group(&mut self, dev: u16, id: u32, kind: &str, buckets: Vec<PyBucket<'_>>) -> PyResult<()> {
        let g = group_of(id, kind, buckets)?;
        self.openflow(dev)?.pipeline().add_group(g).map_err(|e| err(e.to_string()))
    }

    /// Mark port `port` of device `dev`'s switch live or not (its link/admin state,
    /// which fast-failover and select buckets watch). False if the switch has no such port.
    fn switch_set_port_live(&mut self, dev: u16, port: u32, live: bool) -> PyResult<bool> {
        Ok(self.openflow(dev)?.pipeline().set_port_live(port, live))
    }

    /// METER_MOD on device `dev`'s switch (as `tandem._dp.Pipeline.meter_mod`).
    #[pyo3(signature = (dev, command, id, pktps=false, burst=false, stats=false, bands=vec![]))]
    fn switch_meter_mod(&mut self, dev: u16, command: &str, id: u32, pktps: bool, burst: bool, stats: bool, bands: Vec<(String, u32, u32, u8)>) -> PyResult<bool> {
        let now_ps = self.inner.now(); // (a meter added or changed now starts at this instant)
        let sw = self.openflow(dev)?;
        sw.pipeline().set_now_ns(now_ps / 1000);
        crate::core_api::meter_mod_on(sw.pipeline(), command, id, pktps, burst, stats, bands)
    }

    /// A PACKET_OUT's `controller(meter_id=id)` packet-in of `frame` through meter `id` of
    /// device `dev`'s switch now (as `Pipeline.meter_packet_in`): the frame to send
    /// (remarked by a DSCP band), or None if a drop band dropped it.
    fn switch_meter_packet_in<'py>(&mut self, py: Python<'py>, dev: u16, id: u32, frame: Vec<u8>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let now_ps = self.inner.now();
        let p = self.openflow(dev)?.pipeline();
        if now_ps / 1000 > p.now_ns() {
            p.set_now_ns(now_ps / 1000);
        }
        let mut frame = frame;
        Ok(p.meter_packet_in(id, &mut frame).then(|| PyBytes::new(py, &frame)))
    }

    fn switch_meter_stats(&mut self, dev: u16, id: u32) -> PyResult<Option<(u64, u64, Vec<(u64, u64)>, u64)>> {
        Ok(crate::core_api::meter_stats_of(self.openflow(dev)?.pipeline(), id))
    }

    fn switch_remove_group(&mut self, dev: u16, id: u32) -> PyResult<bool> {
        Ok(self.openflow(dev)?.pipeline().remove_group(id))
    }

    /// (packets, bytes) matched by rule `id` of device `dev`'s switch, or None.
    fn switch_rule_stats(&mut self, dev: u16, id: u32) -> PyResult<Option<(u64, u64)>> {
        Ok(self.openflow(dev)?.pipeline().rule_stats(id).map(|s| (s.packets, s.bytes)))
    }

    /// [(rule id, idle, hard)] of device `dev`'s timed rules that are no learned flows, with
    /// their timeouts now (as `Pipeline.timed_rules`: a fin_timeout may have shrunk them).
    fn switch_rule_timeouts(&mut self, dev: u16) -> PyResult<Vec<(u32, u16, u16)>> {
        Ok(self.openflow(dev)?.pipeline().timed_rules().into_iter().map(|(id, t)| (id, t.idle, t.hard)).collect())
    }

    /// The flows `learn` installed on device `dev`'s switch (as `Pipeline.learned_flows`).
    fn switch_learned_flows<'py>(&mut self, py: Python<'py>, dev: u16) -> PyResult<Vec<crate::core_api::LearnedPy<'py>>> {
        crate::core_api::learned_flows_py(py, self.openflow(dev)?.pipeline())
    }

    /// FLOW_REMOVED records of device `dev`'s timed rules (as `Pipeline.take_removed`),
    /// after the timers due now are looked at (no packet need arrive).
    fn switch_take_removed(&mut self, dev: u16) -> PyResult<Vec<crate::core_api::RemovedPy>> {
        let now_ps = self.inner.now();
        let p = self.openflow(dev)?.pipeline();
        if now_ps / 1000 > p.now_ns() {
            p.set_now_ns(now_ps / 1000);
        }
        p.expire_due();
        Ok(crate::core_api::take_removed_py(p))
    }

    /// Named counters of device `dev`'s OpenFlow switch (per port, per table, drops).
    /// Mark port `port` of device `dev`'s switch no-flood or not (`output:NORMAL` floods past it).
    fn switch_set_no_flood(&mut self, dev: u16, port: u32, no_flood: bool) -> PyResult<()> {
        self.openflow(dev)?.pipeline().set_no_flood(port, no_flood);
        Ok(())
    }

    /// Device `dev`'s NORMAL MAC table now: [(port, vlan, mac, age_s)], least recently used first.
    fn switch_mac_entries(&mut self, dev: u16) -> PyResult<Vec<(u32, u16, u64, i64)>> {
        let now_ps = self.inner.now();
        let p = self.openflow(dev)?.pipeline();
        if now_ps / 1000 > p.now_ns() {
            p.set_now_ns(now_ps / 1000);
        }
        Ok(p.mac_entries().into_iter().map(|e| (e.port, e.vlan, e.mac, e.age)).collect())
    }

    /// A PACKET_OUT's `output:NORMAL` on device `dev`'s switch now (its MAC table): [(port, frame)].
    fn switch_packet_out_normal<'py>(&mut self, py: Python<'py>, dev: u16, in_port: u32, frame: Vec<u8>) -> PyResult<Vec<(u32, Bound<'py, PyBytes>)>> {
        let now_ps = self.inner.now();
        let p = self.openflow(dev)?.pipeline();
        if now_ps / 1000 > p.now_ns() {
            p.set_now_ns(now_ps / 1000);
        }
        Ok(crate::core_api::normal_outputs(py, p.packet_out_normal(dp_core::Packet::new(frame), in_port)))
    }

    /// A PACKET_OUT run on device `dev`'s switch now (its groups, tables and tracker):
    /// its fates, as `Pipeline.process` gives them (the caller sends the outputs).
    fn switch_packet_out<'py>(&mut self, py: Python<'py>, dev: u16, in_port: u32, actions: Vec<Bound<'py, PyTuple>>, frame: Vec<u8>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let acts = crate::core_api::actions_of(actions)?;
        let now_ps = self.inner.now();
        let p = self.openflow(dev)?.pipeline();
        if now_ps / 1000 > p.now_ns() {
            p.set_now_ns(now_ps / 1000);
        }
        p.packet_out(dp_core::Packet::new(frame), in_port, &acts).iter().map(|f| crate::core_api::fate_py(py, f)).collect()
    }

    fn switch_counters(&mut self, dev: u16) -> PyResult<Vec<(String, u64)>> {
        Ok(self.openflow(dev)?.pipeline().counters())
    }

    /// Deliver `frame` into a place at `at_ns` (not before now).
    fn inject(&mut self, into: &Bound<'_, PyTuple>, frame: Vec<u8>, at_ns: f64) -> PyResult<()> {
        let t = target(into)?;
        self.inner.inject(ns(at_ns), t, frame).map_err(err)
    }

    /// Device `dev`'s switch sends `frame` out of `port` at `at_ns` (no pipeline; captured like any output).
    fn inject_out(&mut self, dev: u16, port: u32, frame: Vec<u8>, at_ns: f64) -> PyResult<()> {
        self.inner.inject_output(ns(at_ns), dev, port, frame).map_err(err)
    }

    /// Packet-ins so far, oldest first: (device, in_port, reason, table, cookie, frame,
    /// [(field, value)] of the pipeline state the packet-in's match lists, controller(userdata=…)'s bytes,
    /// the controller id it goes to).
    #[allow(clippy::type_complexity)]
    fn take_controller<'py>(
        &mut self,
        py: Python<'py>,
    ) -> Vec<(u16, u32, &'static str, u8, u64, Bound<'py, PyBytes>, Vec<(String, u128)>, Bound<'py, PyBytes>, u16)> {
        self.inner
            .take_controller()
            .into_iter()
            .map(|e| (e.dev, e.in_port, e.reason, e.table, e.cookie, PyBytes::new(py, &e.frame), e.meta, PyBytes::new(py, &e.userdata), e.controller_id))
            .collect()
    }

    /// Add a traffic source entering at `into`.
    /// arrival: "constant" | "poisson" | "onoff" | "ramp" | "pcap"; sizes: [(bytes, weight)];
    /// flow_size: ("fixed", n) | ("exponential", mean) | ("pareto", mean, shape) | None (endless flows).
    /// ramp: [(ns after start, pps)] with ramp_linear (else steps).
    /// esp_tunnels: [(spi, key ‖ salt bytes, outer src, outer dst, esn, ttl)] and esp_apps:
    /// [("http" | "tls", host, weight)] send the flows as ESP tunnel traffic (dp_emu esp_gen.rs).
    #[pyo3(signature = (name, into, arrival = "constant", pps = 0.0, sizes = None, size_range = None,
        concurrent_flows = 1, flow_size = None, on_ns = 0.0, off_ns = 0.0, pcap = None, repeat = false,
        start_ns = 0.0, stop_ns = None, line_gbps = None, eth_src = None, eth_dst = None, ip_src = None,
        ip_dst = None, ip_proto = 17, src_port = 10000, dst_port = 80, vlan = None, ramp = None,
        ramp_linear = true, esp_tunnels = None, esp_apps = None))]
    #[allow(clippy::too_many_arguments)]
    fn add_source(
        &mut self,
        name: &str,
        into: &Bound<'_, PyTuple>,
        arrival: &str,
        pps: f64,
        sizes: Option<Vec<(u32, f64)>>,
        size_range: Option<(u32, u32)>,
        concurrent_flows: u32,
        flow_size: Option<&Bound<'_, PyTuple>>,
        on_ns: f64,
        off_ns: f64,
        pcap: Option<String>,
        repeat: bool,
        start_ns: f64,
        stop_ns: Option<f64>,
        line_gbps: Option<f64>,
        eth_src: Option<u64>,
        eth_dst: Option<u64>,
        ip_src: Option<u32>,
        ip_dst: Option<u32>,
        ip_proto: u8,
        src_port: u16,
        dst_port: u16,
        vlan: Option<u16>,
        ramp: Option<Vec<(f64, f64)>>,
        ramp_linear: bool,
        esp_tunnels: Option<Vec<EspTunnelArg>>,
        esp_apps: Option<Vec<(String, String, f64)>>,
    ) -> PyResult<u32> {
        let needs_rate = arrival != "pcap" && arrival != "ramp";
        if needs_rate && !(pps > 0.0 && pps.is_finite()) {
            return Err(err(format!("source {name}: pps must be positive, got {pps}")));
        }
        let arr = match arrival {
            "constant" => Arrival::Constant { pps },
            "poisson" => Arrival::Poisson { pps },
            "onoff" => {
                if on_ns <= 0.0 || off_ns < 0.0 {
                    return Err(err(format!("source {name}: onoff needs on_ns > 0 and off_ns >= 0")));
                }
                Arrival::OnOff { pps, on: ns(on_ns), off: ns(off_ns) }
            }
            "ramp" => {
                let points = ramp.ok_or_else(|| err(format!("source {name}: arrival 'ramp' needs ramp=[(ns, pps), ...]")))?;
                Arrival::Ramp { points: points.into_iter().map(|(t, r)| (ns(t), r)).collect(), linear: ramp_linear }
            }
            "pcap" => {
                let path = pcap.ok_or_else(|| err(format!("source {name}: arrival 'pcap' needs pcap=PATH")))?;
                let records = dp_emu::pcap::read_pcap(Path::new(&path)).map_err(|e| err(format!("source {name}: {e}")))?;
                if records.is_empty() {
                    return Err(err(format!("source {name}: {path}: the recording holds no frames")));
                }
                if repeat && dp_emu::traffic::replay_period(&records).is_none() {
                    return Err(err(format!("source {name}: {path}: cannot repeat a recording that spans no time (its frames share one timestamp)")));
                }
                Arrival::Replay { records, repeat }
            }
            other => return Err(err(format!("source {name}: unknown arrival {other:?}; use constant, poisson, onoff, ramp or pcap"))),
        };
        let mut s = SourceSpec::new(name, arr);
        s.sizes = match (sizes, size_range) {
            (Some(_), Some(_)) => return Err(err(format!("source {name}: give sizes or size_range, not both"))),
            (Some(v), None) if v.len() == 1 => SizeDist::Fixed(v[0].0),
            (Some(v), None) if v.is_empty() => return Err(err(format!("source {name}: sizes is empty"))),
            (Some(v), None) => SizeDist::Weighted(v),
            (None, Some((a, b))) if a <= b => SizeDist::Uniform(a, b),
            (None, Some((a, b))) => return Err(err(format!("source {name}: size_range ({a}, {b}) is reversed"))),
            (None, None) => SizeDist::Fixed(64),
        };
        s.concurrent_flows = concurrent_flows.max(1);
        s.flow_sizes = match flow_size {
            None => FlowSizeDist::Fixed(u64::MAX),
            Some(t) => {
                let kind: String = t.get_item(0)?.extract()?;
                let mean: f64 = t.get_item(1)?.extract()?;
                if !(mean >= 1.0 && mean.is_finite()) {
                    return Err(err(format!("source {name}: flow_size mean must be at least 1 packet, got {mean}")));
                }
                match (kind.as_str(), t.len()) {
                    ("fixed", 2) => FlowSizeDist::Fixed(t.get_item(1)?.extract()?),
                    ("exponential", 2) => FlowSizeDist::Exponential { mean },
                    ("pareto", 3) => {
                        let shape: f64 = t.get_item(2)?.extract()?;
                        if !(shape > 1.0 && shape.is_finite()) {
                            return Err(err(format!("source {name}: pareto shape must be > 1, got {shape}")));
                        }
                        FlowSizeDist::pareto(mean, shape)
                    }
                    _ => return Err(err(format!("source {name}: flow_size must be ('fixed', n), ('exponential', mean) or ('pareto', mean, shape)"))),
                }
            }
        };
        s.start = ns(start_ns);
        s.stop = stop_ns.map(ns);
        s.line_bps = line_gbps.map(|g| g * 1e9);
        let mut t = FrameTemplate::default();
        if let Some(m) = eth_src {
            t.eth_src = mac(m);
        }
        if let Some(m) = eth_dst {
            t.eth_dst = mac(m);
        }
        if let Some(a) = ip_src {
            t.ip_src = a;
        }
        if let Some(a) = ip_dst {
            t.ip_dst = a;
        }
        if ip_proto != 6 && ip_proto != 17 {
            return Err(err(format!("source {name}: ip_proto must be 6 (TCP) or 17 (UDP), got {ip_proto}")));
        }
        t.ip_proto = ip_proto;
        t.src_port_base = src_port;
        t.dst_port = dst_port;
        t.vlan = vlan;
        s.template = t;
        s.esp = match (esp_tunnels, esp_apps) {
            (None, None) => None,
            (Some(tunnels), Some(apps)) => {
                let tunnels = tunnels
                    .into_iter()
                    .map(|(spi, key, src, dst, esn, ttl)| EspTunnel { spi, key, src, dst, esn, ttl })
                    .collect();
                let apps = apps
                    .into_iter()
                    .map(|(proto, host, weight)| {
                        let proto = match proto.as_str() {
                            "http" => InnerProto::Http,
                            "tls" => InnerProto::Tls,
                            x => return Err(err(format!("source {name}: esp app protocol {x:?} must be http or tls"))),
                        };
                        Ok(InnerApp { proto, host, weight })
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                Some(EspSpec { tunnels, apps })
            }
            _ => return Err(err(format!("source {name}: give esp_tunnels and esp_apps together"))),
        };
        self.inner.add_source(s, target(into)?).map_err(err)
    }

    /// Record every frame device `dev`'s switch sends out of `port` (or, with
    /// `rx=True`, receives on it) into a pcap file, keeping `snaplen` bytes of each
    /// frame and at most `limit_bytes` of file (later frames are counted, not written).
    #[pyo3(signature = (dev, port, path, rx = false, snaplen = 65535, limit_bytes = None))]
    fn capture(&mut self, dev: u16, port: u32, path: &str, rx: bool, snaplen: u32, limit_bytes: Option<u64>) -> PyResult<()> {
        let p = Path::new(path);
        self.inner.capture_limited(dev, port, p, rx, snaplen, limit_bytes.unwrap_or(u64::MAX)).map_err(err)
    }

    /// Frames each capture left out because its file reached its limit: [(dev, port, rx, frames)].
    fn capture_skipped(&self) -> Vec<(u16, u32, bool, u64)> {
        self.inner.capture_skipped()
    }

    /// Metrics cover [0, horizon_ns].
    fn set_horizon(&mut self, horizon_ns: f64) {
        self.inner.set_horizon(ns(horizon_ns));
    }

    /// Run every event due up to `until_ns` (the GIL is released meanwhile).
    fn run_until(&mut self, py: Python<'_>, until_ns: f64) -> PyResult<()> {
        let until = ns(until_ns);
        let inner = &mut self.inner;
        py.detach(|| inner.run_until(until)).map_err(err)
    }

    /// Start moving NF `src` to the provisioned NF `dst` now (dp_emu migration.rs);
    /// the caller switches the traffic over at this instant. Returns the migration id.
    /// Keyword arguments override the `dp_emu::MigrationCost` defaults by field name.
    #[pyo3(signature = (src, dst, **cost))]
    fn begin_migration(&mut self, src: u32, dst: u32, cost: Option<std::collections::BTreeMap<String, f64>>) -> PyResult<u32> {
        let mut c = dp_emu::MigrationCost::default();
        for (k, v) in cost.unwrap_or_default() {
            match k.as_str() {
                "export_cycles_per_byte" => c.export_cycles_per_byte = v,
                "export_cycles_per_flow" => c.export_cycles_per_flow = v,
                "import_cycles_per_byte" => c.import_cycles_per_byte = v,
                "import_cycles_per_flow" => c.import_cycles_per_flow = v,
                "lanes" if v >= 1.0 && v.fract() == 0.0 && v <= u32::MAX as f64 => c.lanes = v as u32,
                "drain_poll_ns" => c.drain_poll_ns = v,
                "buffer_bytes" if v >= 0.0 && v.fract() == 0.0 => c.buffer_bytes = v as u64,
                "lanes" | "buffer_bytes" => return Err(err(format!("migration cost {k}: a whole number is needed, got {v}"))),
                _ => return Err(err(format!("unknown migration cost {k:?} (export_cycles_per_byte, export_cycles_per_flow, import_cycles_per_byte, import_cycles_per_flow, lanes, drain_poll_ns, buffer_bytes)"))),
            }
        }
        let cost = c;
        self.inner.begin_migration(src, dst, cost).map_err(err)
    }

    /// Migrations that ended (and paused the run) since the last call.
    fn take_migration_pauses(&mut self) -> Vec<u32> {
        self.inner.take_migration_pauses()
    }

    /// Whether migration `mig` has ended (None: no such migration).
    fn migration_done(&self, mig: u32) -> Option<bool> {
        self.inner.migration_done(mig)
    }

    /// Call off a migration that has not moved the state (dp_emu `abort_migration`):
    /// the source goes on and gets what the destination buffered.
    fn abort_migration(&mut self, mig: u32) -> PyResult<()> {
        self.inner.abort_migration(mig).map_err(err)
    }

    /// One migration's record as a JSON object string.
    fn migration_json(&self, mig: u32) -> PyResult<String> {
        let j = self.inner.migration_json(mig).ok_or_else(|| PyIndexError::new_err(format!("no migration #{mig}")))?;
        let mut s = String::new();
        j.write(&mut s);
        Ok(s)
    }

    /// Run an NF's control/query command (e.g. `detections` of an L7FW).
    fn nf_command(&mut self, nf: u32, cmd: &str) -> PyResult<String> {
        let f = self.inner.nf_mut(nf).ok_or_else(|| PyIndexError::new_err(format!("no NF #{nf}")))?;
        f.command(cmd).map_err(err)
    }

    /// Register port `port` on device `dev`'s OpenFlow switch.
    fn switch_add_port(&mut self, dev: u16, port: u32) -> PyResult<()> {
        self.openflow(dev)?.pipeline().add_port(port);
        Ok(())
    }

    /// Flush capture files.
    fn finish(&mut self) -> PyResult<()> {
        self.inner.finish().map_err(err)
    }

    #[getter]
    fn now_ns(&self) -> f64 {
        self.inner.now() as f64 / PS_PER_NS as f64
    }

    fn metrics_json(&self) -> String {
        self.inner.metrics_json()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEmulator>()?;
    Ok(())
}

/// `TlpModel::gen2_x8()` with the fields named in `over` replaced.
fn tlp_model(over: &std::collections::BTreeMap<String, f64>) -> Result<dp_emu::pcie::TlpModel, String> {
    let mut t = dp_emu::pcie::TlpModel::gen2_x8();
    for (k, &v) in over {
        let whole = || -> Result<u32, String> {
            if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
                Ok(v as u32)
            } else {
                Err(format!("TLP parameter {k} must be a whole number, got {v}"))
            }
        };
        match k.as_str() {
            "lane_gts" => t.lane_gts = v,
            "lanes" => t.lanes = whole()?,
            "encoding" => t.encoding = v,
            "mps" => t.mps = whole()?,
            "mrrs" => t.mrrs = whole()?,
            "rcb" => t.rcb = whole()?,
            "mem_tlp_overhead" => t.mem_tlp_overhead = whole()?,
            "cpl_overhead" => t.cpl_overhead = whole()?,
            "dllp_bytes" => t.dllp_bytes = whole()?,
            "tlps_per_dllp" => t.tlps_per_dllp = v,
            "descriptor" => t.descriptor = whole()?,
            "read_latency_ns" => t.read_latency_ns = v,
            "outstanding_reads" => t.outstanding_reads = whole()?,
            _ => return Err(format!("unknown TLP parameter {k:?}")),
        }
    }
    t.check()?;
    Ok(t)
}
