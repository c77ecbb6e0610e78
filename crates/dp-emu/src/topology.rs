//! Static descriptions of what the emulator is built from: devices (cores,
//! clock, relative speed, switch cost, power), accelerators, PCIe links and
//! Ethernet ports, plus `Target`, the address of any place a packet can go.
//! Plain data; the emulator owns the running state.

/// A place a packet can be delivered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Enters device `dev`'s switch on `port`.
    Switch { dev: u16, port: u32 },
    /// Enters NF instance `nf` on its port 0 or 1.
    Nf { nf: u32, port: u8 },
    /// Enters end `dir` of PCIe port pair `pair` on `link` and crosses to the other end.
    Pcie { link: u16, pair: u16, dir: u8 },
    /// Queued for transmission on Ethernet port `eth`, then received by the wire's sink.
    Eth { eth: u32 },
    /// Received by a sink (a VM or an external host): latency is recorded here.
    Sink { sink: u32 },
}

#[derive(Debug, Clone)]
pub struct DeviceSpec {
    pub name: String,
    pub cores: u32,
    pub ghz: f64,
    /// Work per cycle relative to the reference x86 core (1.0).
    pub speed: f64,
    /// Cores dedicated to switching (the first ones); 0 = switching shares all cores.
    pub switch_cores: u32,
    pub switch_cycles_per_packet: f64,
    pub switch_cycles_per_byte: f64,
    pub table_capacity: u32,
    pub idle_watts: f64,
    pub busy_watts: f64,
    /// Packets that may wait at one core (queued + in service).
    pub core_queue_depth: u32,
}

impl DeviceSpec {
    pub fn new(name: &str, cores: u32, ghz: f64) -> Self {
        DeviceSpec {
            name: name.to_string(),
            cores,
            ghz,
            speed: 1.0,
            switch_cores: 0,
            switch_cycles_per_packet: 0.0,
            switch_cycles_per_byte: 0.0,
            table_capacity: 1_000_000,
            idle_watts: 0.0,
            busy_watts: 0.0,
            core_queue_depth: 1024,
        }
    }
    /// Effective cycles per second of one core.
    pub fn hz(&self) -> f64 {
        self.ghz * 1e9 * self.speed
    }
}

#[derive(Debug, Clone)]
pub struct AccelSpec {
    pub name: String,
    pub gbps: f64,
    pub setup_ns: f64,
    pub queue_depth: u32,
}

#[derive(Debug, Clone)]
pub struct PcieSpec {
    pub name: String,
    pub dev_a: u16,
    pub dev_b: u16,
    /// Bandwidth per direction (or of the whole bus when `shared`).
    pub gbps: f64,
    /// Both directions share one bus of `gbps` (how UNO counts Gen2 x8's 32 Gb/s).
    pub shared: bool,
    /// One-way crossing latency (the sum of the link model's stages).
    pub latency_ns: f64,
    /// Fixed bus time per crossing (DMA descriptor / doorbell work).
    pub dma_ns: f64,
    /// Bytes added to each crossing (TLP headers, descriptors).
    pub overhead_bytes: u32,
    /// Packets that may wait per direction.
    pub queue_depth: u32,
    /// Core cycles per crossing charged to the sending device's switch cores
    /// (descriptor handling, doorbells); 0 = free.
    pub dma_cycles: f64,
    /// Per-pair, per-direction queues served in turn (see `pcie.rs`) instead of one FIFO.
    pub round_robin: bool,
    /// DMA ring contexts (one per pair and direction) the device keeps cached,
    /// least recently used evicted; 0 = unlimited (no misses).
    pub ring_contexts: u32,
    /// Extra bus time of a crossing whose ring context is not cached (context fetch).
    pub ring_miss_ns: f64,
    /// Device-level TLP/DMA model (see `pcie::TlpModel`): when set, a crossing's
    /// bus time comes from it and `gbps`, `dma_ns` and `overhead_bytes` are unused.
    pub tlp: Option<crate::pcie::TlpModel>,
}

impl PcieSpec {
    pub fn new(name: &str, dev_a: u16, dev_b: u16, gbps: f64) -> Self {
        PcieSpec {
            name: name.to_string(),
            dev_a,
            dev_b,
            gbps,
            shared: false,
            latency_ns: 0.0,
            dma_ns: 0.0,
            overhead_bytes: 0,
            queue_depth: 1024,
            dma_cycles: 0.0,
            round_robin: false,
            ring_contexts: 0,
            ring_miss_ns: 0.0,
            tlp: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct EthSpec {
    pub name: String,
    pub gbps: f64,
    pub queue_depth: u32,
    pub propagation_ns: f64,
}
