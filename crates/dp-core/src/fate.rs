//! What the pipeline hands back: the packet type, explicit fates (output,
//! controller, drop) with their reasons, flow-mod commands and rule counters.
//! Plain data, no behaviour beyond names and messages.

/// A frame travelling through the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packet {
    pub data: Vec<u8>,
    /// The packet mark (`pkt_mark`): metadata that travels with the frame from
    /// switch to switch, never part of its bytes; 0 = none.
    pub mark: u32,
}

impl Packet {
    pub fn new(data: Vec<u8>) -> Self {
        Packet { data, mark: 0 }
    }
    pub fn marked(data: Vec<u8>, mark: u32) -> Self {
        Packet { data, mark }
    }
}
impl From<Vec<u8>> for Packet {
    fn from(data: Vec<u8>) -> Self {
        Packet::new(data)
    }
}
impl From<&[u8]> for Packet {
    fn from(data: &[u8]) -> Self {
        Packet::new(data.to_vec())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ControllerReason {
    /// An explicit output:CONTROLLER action.
    Action,
    /// dec_ttl found TTL 0 or 1 (OFPR_INVALID_TTL); the packet is not forwarded.
    InvalidTtl,
    /// Open vSwitch's `controller(reason=…)` with the other reasons it names.
    NoMatch,
    ActionSet,
    Group,
    PacketOut,
}

impl ControllerReason {
    /// The reason of OpenFlow's (and Open vSwitch's) number: 0 no_match … 5 packet_out.
    pub fn from_number(n: u8) -> Option<ControllerReason> {
        use ControllerReason::*;
        [NoMatch, Action, InvalidTtl, ActionSet, Group, PacketOut].get(usize::from(n)).copied()
    }
    /// The reason Open vSwitch 3.1 sends the packet-in of a `controller(reason=N)` with
    /// (measured on the wire): 0..5 as `from_number`, 6 (its explicit table miss) as
    /// `NoMatch`; 7 (its implicit miss) and 8..255 send none (None).
    pub fn of_action(n: u8) -> Option<ControllerReason> {
        if n == 6 {
            Some(ControllerReason::NoMatch)
        } else {
            ControllerReason::from_number(n)
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            ControllerReason::Action => "action",
            ControllerReason::InvalidTtl => "invalid_ttl",
            ControllerReason::NoMatch => "no_match",
            ControllerReason::ActionSet => "action_set",
            ControllerReason::Group => "group",
            ControllerReason::PacketOut => "packet_out",
        }
    }
}

/// A packet-in's meter, run when the pipeline settles it: `send` false for a reason
/// Open vSwitch sends nothing for (the meter still takes the packet's tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingMeter {
    pub meter: u32,
    pub send: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The frame could not be parsed (runt, bad IP header) or was truncated.
    Malformed(&'static str),
    TableMiss { table: u8 },
    /// The pipeline ended without any output for the packet.
    NoOutput,
    /// Output to the ingress port without OFPP_IN_PORT (OpenFlow forbids it).
    OutputToInPort,
    UnknownPort(u32),
    /// NORMAL, LOCAL, TABLE: not supported by this switch.
    UnsupportedPort(u32),
    UnknownGroup(u32),
    /// A group with no usable bucket.
    NoBucket(u32),
    /// Groups nested deeper than the limit.
    GroupLoop(u32),
    /// A meter's drop band applied (meter id).
    Meter(u32),
    /// push/pop MPLS on a stack deeper than the 3 entries Open vSwitch tracks.
    TooManyMplsLabels,
    /// Resubmits nested deeper, or more of them, than Open vSwitch allows
    /// (`MAX_RESUBMIT_DEPTH`, `MAX_RESUBMITS`): every output of the packet is dropped.
    ResubmitLimit,
    /// A `ct(table=...)` copy recirculated more often than Open vSwitch's datapath allows.
    RecircDepth,
    /// A `decap()` Open vSwitch cannot run (a VLAN-tagged Ethernet frame, a packet that is
    /// not NSH at the second): its whole translation fails, every output of the packet is dropped.
    DecapFailed,
}

impl DropReason {
    pub fn name(&self) -> &'static str {
        match self {
            DropReason::Malformed(_) => "malformed",
            DropReason::TableMiss { .. } => "table_miss",
            DropReason::NoOutput => "no_output",
            DropReason::OutputToInPort => "output_to_in_port",
            DropReason::UnknownPort(_) => "unknown_port",
            DropReason::UnsupportedPort(_) => "unsupported_port",
            DropReason::UnknownGroup(_) => "unknown_group",
            DropReason::NoBucket(_) => "no_bucket",
            DropReason::GroupLoop(_) => "group_loop",
            DropReason::Meter(_) => "meter",
            DropReason::TooManyMplsLabels => "too_many_mpls_labels",
            DropReason::ResubmitLimit => "resubmit_limit",
            DropReason::RecircDepth => "recirc_depth",
            DropReason::DecapFailed => "decap_failed",
        }
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DropReason::Malformed(what) => write!(f, "malformed frame: {what}"),
            DropReason::TableMiss { table } => write!(f, "table {table} miss"),
            DropReason::NoOutput => write!(f, "no output action"),
            DropReason::OutputToInPort => write!(f, "output to the ingress port without IN_PORT"),
            DropReason::UnknownPort(p) => write!(f, "output to unknown port {p}"),
            DropReason::UnsupportedPort(p) => write!(f, "output to unsupported reserved port {p:#x}"),
            DropReason::UnknownGroup(g) => write!(f, "group {g} does not exist"),
            DropReason::NoBucket(g) => write!(f, "group {g} has no live bucket"),
            DropReason::GroupLoop(g) => write!(f, "group {g} nested too deeply"),
            DropReason::Meter(m) => write!(f, "meter {m} drop band"),
            DropReason::TooManyMplsLabels => write!(f, "MPLS push/pop on more than 3 label stack entries"),
            DropReason::ResubmitLimit => write!(f, "resubmits nested or repeated past Open vSwitch's limits"),
            DropReason::RecircDepth => write!(f, "recirculated too often (ct(table=...))"),
            DropReason::DecapFailed => write!(f, "decap() failed Open vSwitch's translation"),
        }
    }
}

/// What happened to (one copy of) a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Output { port: u32, packet: Packet },
    /// A packet-in: `table` the packet was in, `cookie` of the rule whose
    /// action sent it (`u64::MAX` if no rule had matched, as in OVS), and the
    /// pipeline state Open vSwitch lists in a packet-in's match when not zero
    /// (`tunnel_id`, `metadata`, `reg0..15`, `pkt_mark`), in that order;
    /// `userdata` of Open vSwitch's `controller(userdata=…)` (empty otherwise);
    /// `controller_id`: the connections it goes to (`controller(id=…)`, `dec_ttl(ids)`; else 0).
    Controller {
        reason: ControllerReason,
        controller_id: u16,
        table: u8,
        cookie: u64,
        packet: Packet,
        meta: Vec<(crate::field::Field, u128)>,
        userdata: Vec<u8>,
        /// Inside the pipeline only: a `controller(meter_id=…)`'s packet-in still to pass
        /// its meter (`pipeline/controller_meter.rs`); None in every fate it returns.
        pending: Option<PendingMeter>,
    },
    Drop { reason: DropReason },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowModCommand {
    Add,
    Modify,
    ModifyStrict,
    Delete,
    DeleteStrict,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuleStats {
    pub packets: u64,
    pub bytes: u64,
}
