//! dp-nf — network functions that run inside the emulator. One NF per file.
//!
//! Every NF implements [`NetworkFunction`]: it gets a real frame on one of its
//! ports, may rewrite it, and returns a fate (forward on a port, or drop with a
//! reason). What an NF *costs* is not decided here: the emulator charges the
//! NF's [`CostProfile`] on the cores (or accelerator) of the device the NF runs
//! on. State export/import lets the migration code move an NF between devices
//! without losing a byte of its state.

mod fixed_cost;
mod pass_through;
pub mod bench;
pub mod pkt;
pub mod samples;
pub mod state;

pub mod alert;
pub mod asset_monitor;
pub mod header_classifier;
pub mod l7fw;
pub mod logger;
pub mod maglev_lb;
pub mod monitor;
pub mod nat;
pub mod payload_analyzer;
pub mod secgw;

pub use fixed_cost::FixedCost;
pub use pass_through::PassThrough;
pub use state::{FlowFilter, FlowKey};

/// What one packet costs an NF on a given device: `cycles_per_packet +
/// cycles_per_byte * frame_len` core cycles, then, when `accelerator` names one
/// of the device's accelerators, one job on that accelerator.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CostProfile {
    pub cycles_per_packet: f64,
    pub cycles_per_byte: f64,
    pub accelerator: Option<String>,
}

impl CostProfile {
    pub fn cycles(&self, frame_len: usize) -> f64 {
        self.cycles_per_packet + self.cycles_per_byte * frame_len as f64
    }
}

/// The fate of one packet inside an NF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NfVerdict {
    /// Send the (possibly rewritten) frame out of this NF port.
    Forward { port: u8 },
    /// Drop the frame; the reason is counted by the emulator.
    Drop { reason: &'static str },
}

/// Why imported state was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError(pub String);

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StateError {}

/// The hosting interface between the emulator and an NF.
pub trait NetworkFunction: Send + Sync {
    /// Short type name (`"pass_through"`, `"fixed_cost"`, ...).
    fn kind(&self) -> &'static str;
    /// Number of ports (1: the frame goes back where it came from; 2: a bump in the wire).
    fn ports(&self) -> u8 {
        2
    }
    /// Process one frame that arrived on `in_port` at simulated time `now_ps`.
    fn process(&mut self, frame: &mut Vec<u8>, in_port: u8, now_ps: u64) -> NfVerdict;
    /// The NF's own default cost profile (the emulator may override it per device).
    fn default_cost(&self) -> CostProfile {
        CostProfile::default()
    }
    /// Serialize all state (per-flow and shared) to bytes.
    fn export_state(&self) -> Vec<u8>;
    /// Replace all state with what `export_state` produced on another instance.
    fn import_state(&mut self, state: &[u8]) -> Result<(), StateError>;
    /// Export only the flows `filter` matches, plus the shared (multi-flow)
    /// state when `shared` (OpenNF getPerflow / getMultiflow).
    fn export_flows(&self, _filter: &FlowFilter, _shared: bool) -> Vec<u8> {
        self.export_state()
    }
    /// Merge exported flows (and shared state, if the blob has it) into this
    /// NF; the flows in the blob overwrite same-key flows here. Returns the
    /// number of flows imported. A refused blob leaves the NF unchanged.
    fn import_flows(&mut self, state: &[u8]) -> Result<usize, StateError> {
        self.import_state(state).map(|_| 0)
    }
    /// Header fields read and written, and whether it drops or re-encapsulates.
    fn fields(&self) -> Fields {
        Fields::default()
    }
    /// Named counters: packets, verdicts, detections, errors by reason.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// Number of per-flow records held.
    fn flow_count(&self) -> usize {
        0
    }
    /// NF-specific control/query (`heavy_hitters`, `backends a,b`, `drain` ...).
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        Err(format!("{}: no command {cmd:?}", self.kind()))
    }
}

/// What an NF declares about the packets it touches (SmartChain's dependency
/// analyzer reads these instead of hand-written lists). Field names are the
/// rule IR's OXM names plus `payload`, `ip_ttl`, `ip_len`, `checksum`, `tunnel`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub reads: &'static [&'static str],
    pub writes: &'static [&'static str],
    pub drops: bool,
    pub reencapsulates: bool,
}

/// The port a frame leaves on when an NF just passes it along: the other port
/// of a two-port NF, the same port of a one-port NF.
pub fn other_port(ports: u8, in_port: u8) -> u8 {
    if ports >= 2 {
        1 - (in_port & 1)
    } else {
        0
    }
}

/// Per-port packet counters: the state both test NFs keep, in a fixed
/// 32-byte little-endian layout (rx0, rx1, tx0, tx1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub rx: [u64; 2],
    pub tx: [u64; 2],
}

impl PortCounters {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(32);
        for x in self.rx.iter().chain(self.tx.iter()) {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }

    pub fn from_bytes(b: &[u8]) -> Result<Self, StateError> {
        if b.len() != 32 {
            return Err(StateError(format!("port counters: expected 32 bytes of state, got {}", b.len())));
        }
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Ok(PortCounters { rx: [w(0), w(1)], tx: [w(2), w(3)] })
    }
}

/// Build an NF by type name, for the emulator's bindings. `cycles_per_packet`
/// and `cycles_per_byte` configure `fixed_cost`; `ports` is 1 or 2.
pub fn make_nf(kind: &str, ports: u8, cycles_per_packet: f64, cycles_per_byte: f64) -> Result<Box<dyn NetworkFunction>, String> {
    if !(1..=2).contains(&ports) {
        return Err(format!("NF ports must be 1 or 2, got {ports}"));
    }
    match kind {
        "pass_through" => Ok(Box::new(PassThrough::new(ports))),
        "fixed_cost" => Ok(Box::new(FixedCost::new(ports, cycles_per_packet, cycles_per_byte))),
        other => Err(format!("unknown NF kind {other:?}; known: {}", KINDS.join(", "))),
    }
}

/// Every NF kind `make_nf_config` builds.
pub const KINDS: &[&str] = &[
    "alert",
    "asset_monitor",
    "fixed_cost",
    "header_classifier",
    "l7fw",
    "logger",
    "maglev_lb",
    "monitor",
    "nat",
    "pass_through",
    "payload_analyzer",
    "secgw",
];

fn cfg<T: serde::de::DeserializeOwned>(kind: &str, json: &str) -> Result<T, String> {
    let s = if json.trim().is_empty() { "{}" } else { json };
    serde_json::from_str(s).map_err(|e| format!("{kind} config: {e}"))
}

/// Build any NF from its kind and a JSON configuration (the scenario's
/// `nf_types.*.config`, already validated on the Python side; errors here
/// still name the field). `fixed_cost` takes `cycles_per_packet` and
/// `cycles_per_byte`; the real NFs take their own config.
pub fn make_nf_config(kind: &str, ports: u8, json: &str) -> Result<Box<dyn NetworkFunction>, String> {
    if !(1..=2).contains(&ports) {
        return Err(format!("NF ports must be 1 or 2, got {ports}"));
    }
    Ok(match kind {
        "pass_through" | "fixed_cost" => {
            #[derive(serde::Deserialize, Default)]
            #[serde(deny_unknown_fields)]
            struct C {
                #[serde(default)]
                cycles_per_packet: f64,
                #[serde(default)]
                cycles_per_byte: f64,
            }
            let c: C = cfg(kind, json)?;
            return make_nf(kind, ports, c.cycles_per_packet, c.cycles_per_byte);
        }
        "secgw" => Box::new(secgw::SecGw::new(cfg(kind, json)?)?),
        "l7fw" => Box::new(l7fw::L7Fw::new(cfg(kind, json)?)?),
        "asset_monitor" => Box::new(asset_monitor::AssetMonitor::new(ports, cfg(kind, json)?)?),
        "nat" => Box::new(nat::Nat::new(cfg(kind, json)?)?),
        "maglev_lb" => Box::new(maglev_lb::MaglevLb::new(ports, cfg(kind, json)?)?),
        "monitor" => Box::new(monitor::Monitor::new(ports, cfg(kind, json)?)?),
        "logger" => Box::new(logger::Logger::new(ports, cfg(kind, json)?)?),
        "header_classifier" => Box::new(header_classifier::HeaderClassifier::new(ports, cfg(kind, json)?)?),
        "payload_analyzer" => Box::new(payload_analyzer::PayloadAnalyzer::new(ports, cfg(kind, json)?)?),
        "alert" => Box::new(alert::Alert::new(ports, cfg(kind, json)?)?),
        other => return Err(format!("unknown NF kind {other:?}; known: {}", KINDS.join(", "))),
    })
}
