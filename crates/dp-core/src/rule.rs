//! Flow rules, actions, instructions and groups as the pipeline stores them,
//! with validation (field widths, masks, OpenFlow 1.3 match prerequisites) and
//! the conversion of a rule's match into a packed (value, mask) key pair.
//! State: none. Cost: validation and conversion are O(fields) at install time.

use crate::field::{pof_slot, put, Field, Key, Prereq, KEY_WORDS, OFPVID_PRESENT};
use std::fmt;

pub const OFPP_IN_PORT: u32 = 0xffff_fff8;
pub const OFPP_TABLE: u32 = 0xffff_fff9;
pub const OFPP_NORMAL: u32 = 0xffff_fffa;
pub const OFPP_FLOOD: u32 = 0xffff_fffb;
pub const OFPP_ALL: u32 = 0xffff_fffc;
pub const OFPP_CONTROLLER: u32 = 0xffff_fffd;
pub const OFPP_LOCAL: u32 = 0xffff_fffe;
pub const OFPP_ANY: u32 = 0xffff_ffff;
pub const OFPG_ANY: u32 = 0xffff_ffff;

/// One field of a match: `(field & mask) == value`; `mask: None` is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldMatch {
    pub field: Field,
    pub value: u128,
    pub mask: Option<u128>,
}

impl FieldMatch {
    pub fn exact(field: Field, value: u128) -> Self {
        FieldMatch { field, value, mask: None }
    }
    pub fn masked(field: Field, value: u128, mask: u128) -> Self {
        FieldMatch { field, value, mask: Some(mask) }
    }
    /// The effective mask (all ones of the field's width when exact).
    pub fn full_mask(&self) -> u128 {
        self.mask.unwrap_or_else(|| ones(self.field.bits()))
    }
}

pub fn ones(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    /// Output to a port number or a reserved port (`OFPP_*`).
    Output { port: u32, max_len: u16 },
    PushVlan { ethertype: u16 },
    PopVlan,
    /// Set a fixed field, or (with `Field::Pof`) POF SetField.
    SetField { field: Field, value: u128 },
    DecTtl,
    /// Open vSwitch's `dec_nsh_ttl` (`pipeline::nsh`): the NSH TTL less 1; at 0 or 1 a
    /// packet-in (invalid_ttl) and the list stops; not an NSH packet: the list stops.
    DecNshTtl,
    /// Open vSwitch's `encap(nsh(md_type=1))` (`pipeline::encap`): the frame in an NSH
    /// MD type 1 header and an Ethernet header (addresses 0), as the IR's one form
    /// `encap(nsh…)`, NSH set_fields, `encap(ethernet)` leaves it.
    EncapNsh,
    /// Open vSwitch's `encap(ethernet)` closing that form: nothing more to do.
    EncapEthernet,
    /// Open vSwitch's `decap()` (`pipeline::decap`): the first of a pair pops the Ethernet
    /// header, the second the NSH header (next protocol Ethernet), and the packet goes on as
    /// the inner frame, as after Open vSwitch's recirculation.
    Decap,
    /// Open vSwitch's `dec_ttl(ids)`: dec_ttl whose expiry sends this many packet-ins
    /// (one per id 0 among its controller ids; the emulated switch's controller has id 0).
    DecTtlIds(Box<[u16]>),
    Group(u32),
    PofAddField { offset: u32, length: u32, value: u128 },
    PofDelField { offset: u32, length: u32 },
    PushMpls { ethertype: u16 },
    PopMpls { ethertype: u16 },
    SetMplsTtl(u8),
    DecMplsTtl,
    SetNwTtl(u8),
    /// Egress queue choice; the emulated ports have one queue, so frames are unchanged.
    SetQueue(u32),
    /// Set only the `mask` bits of a fixed field (Open vSwitch's masked set_field / `load`).
    SetMasked { field: Field, value: u128, mask: u128 },
    /// Copy `src`'s bits into `dst` (Open vSwitch's `move`).
    Move { src: Subfield, dst: Subfield },
    /// Push `src`'s bits onto the packet's stack / pop the top into `dst`
    /// (Open vSwitch's `push` / `pop`; a pop of an empty stack does nothing).
    StackPush(Subfield),
    StackPop(Subfield),
    /// Nothing (Open vSwitch's `note`).
    Note,
    /// Stop this rule and the pipeline, action set included (Open vSwitch 3.1's `exit`).
    Exit,
    /// Write 1 into the one-bit `dst` if the packet is longer than `pkt_len` bytes, else 0
    /// (Open vSwitch's `check_pkt_larger`; the length as its datapath counts it: the frame
    /// without the Ethernet padding after an IP packet).
    CheckPktLarger { pkt_len: u16, dst: Subfield },
    /// Open vSwitch's `conjunction(id, k/n)`: the rule is dimension `k` of the
    /// `n` (2..=64) of conjunctive match `id`; such a rule is never a lookup's
    /// answer itself (`pipeline::conj`), and has no other action but `note`.
    Conjunction { id: u32, k: u8, n: u8 },
    /// Open vSwitch's `resubmit(in_port,table)`: look the packet up in `table`
    /// (255: the table of the running rule) with `in_port` (`OFPP_IN_PORT`: its
    /// own) for that lookup only, and run the rule found there and then.
    Resubmit { in_port: u32, table: u8 },
    /// Open vSwitch's `output:FIELD[a..b]` (output_reg): output to the port whose
    /// OpenFlow 1.0 number `src` holds (0xff00.. the reserved ports; above 0xffff nothing).
    OutputReg { src: Subfield, max_len: u16 },
    /// Open vSwitch's `ct`: the connection tracker (`conntrack.rs`); with a table, a
    /// copy of the packet carrying the ct_* fields goes on in that table.
    Ct(Box<CtAction>),
    /// Open vSwitch's `ct_clear`: the packet becomes untracked.
    CtClear,
    /// Add (or refresh) a flow built from the packet (Open vSwitch's `learn`).
    Learn(Box<crate::learn::Learn>),
    /// Open vSwitch's `controller(reason=…,id=…,userdata=…)`: a packet-in with this
    /// reason and userdata, sent only if `controller_id` is 0 (the emulated switch's
    /// controller has id 0).
    Controller(Box<ControllerAction>),
    /// Open vSwitch's `clone(actions)`: run these on a copy of the packet and its
    /// pipeline state, then the copy's action set (`pipeline/clone.rs`).
    Clone(Vec<Action>),
    /// Open vSwitch's `multipath`: a link number from a flow hash into a subfield.
    Multipath(Box<crate::hashsel::Multipath>),
    /// Open vSwitch's `bundle` / `bundle_load`: a live member port by hash or order.
    Bundle(Box<crate::hashsel::Bundle>),
    /// Open vSwitch's `output(port=P,max_len=N)`: output the frame cut as OVS's datapath
    /// cuts it (`pipeline/trunc.rs`).
    OutputTrunc { port: u32, max_len: u32 },
    /// Open vSwitch's `fin_timeout(idle_timeout=I,hard_timeout=H)`: on a TCP FIN or RST
    /// the rule's own timeouts shrink to these (`pipeline/timeouts.rs`; 0: left as is).
    FinTimeout { idle: u16, hard: u16 },
    /// Open vSwitch's `delete_field:tun_metadataN`: the option is no longer present
    /// (its bytes stay, as OVS keeps them: `pipeline/tunmeta.rs`).
    DeleteField(Field),
    /// Open vSwitch's set_field / load on `tun_metadataN` bits past 127 (`tunwide.rs`).
    SetTunMetadataWide(Box<crate::tunwide::WideSet>),
}

/// The arguments of a `controller(…)` action (`max_len` is the endpoint's to apply, as for output:CONTROLLER).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ControllerAction {
    pub max_len: u16,
    pub controller_id: u16,
    /// None: a wire reason Open vSwitch sends no packet-in for (`ControllerReason::of_action`).
    pub reason: Option<crate::fate::ControllerReason>,
    pub userdata: Vec<u8>,
    /// `controller(meter_id=M)`: the packet-in passes meter M first (`pipeline/controller_meter.rs`).
    pub meter_id: Option<u32>,
}

/// The arguments of a `ct` action (the exec list's set_fields of ct_mark /
/// ct_label folded into one (value, mask) each).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CtAction {
    pub commit: bool,
    pub force: bool,
    pub zone: u16,
    /// The zone from 16 bits of a field instead (`zone=NXM_NX_REG0[0..15]`).
    pub zone_src: Option<Subfield>,
    pub table: Option<u8>,
    pub set_mark: Option<(u32, u32)>,
    pub set_label: Option<(u128, u128)>,
    /// `nat(...)` (`ct_nat.rs`).
    pub nat: Option<crate::ct_nat::NatSpec>,
    /// `alg=ftp|tftp` (`ct_alg.rs`).
    pub alg: Option<crate::ct_alg::Alg>,
}

/// Bits `ofs .. ofs + n_bits` of a field (bit 0 the least significant); a
/// `VlanVid` subfield is the 12-bit VID, as in Open vSwitch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subfield {
    pub field: Field,
    pub ofs: u32,
    pub n_bits: u32,
}

impl Subfield {
    /// Width of `field` as an operand (the VID for `VlanVid`).
    pub fn width(field: Field) -> u32 {
        if field == Field::VlanVid {
            12
        } else {
            field.bits()
        }
    }
    pub fn valid(&self) -> bool {
        !matches!(self.field, Field::Pof { .. }) && self.n_bits >= 1 && self.ofs + self.n_bits <= Self::width(self.field)
    }
    /// `valid`, or a move/push/pop operand on any bits of a `tun_metadataN` (Open vSwitch's
    /// 124 bytes: those past 127 are `pipeline/tunwide.rs`'s).
    pub fn valid_operand(&self) -> bool {
        self.valid() || matches!(self.field, Field::TunMetadata(_)) && self.n_bits >= 1 && self.ofs + self.n_bits <= crate::tunwide::WIDE_BITS
    }
    pub fn mask(&self) -> u128 {
        ones(self.n_bits) << self.ofs
    }
}

impl fmt::Display for Subfield {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}..{}]", self.field.name(), self.ofs, self.ofs + self.n_bits - 1)
    }
}

impl Action {
    pub fn output(port: u32) -> Action {
        Action::Output { port, max_len: 0xffff }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Output { port, .. } => match *port {
                OFPP_IN_PORT => write!(f, "output:IN_PORT"),
                OFPP_FLOOD => write!(f, "output:FLOOD"),
                OFPP_ALL => write!(f, "output:ALL"),
                OFPP_CONTROLLER => write!(f, "output:CONTROLLER"),
                p => write!(f, "output:{p}"),
            },
            Action::PushVlan { ethertype } => write!(f, "push_vlan:{ethertype:#06x}"),
            Action::PopVlan => write!(f, "pop_vlan"),
            Action::SetField { field, value } => write!(f, "set_field:{value:#x}->{}", field.name()),
            Action::DecTtl => write!(f, "dec_ttl"),
            Action::DecTtlIds(ids) => write!(f, "dec_ttl(ids: {ids:?})"),
            Action::Group(g) => write!(f, "group:{g}"),
            Action::PofAddField { offset, length, value } => write!(f, "add_field:<{offset},{length},{value:#x}>"),
            Action::PofDelField { offset, length } => write!(f, "del_field:<{offset},{length}>"),
            Action::PushMpls { ethertype } => write!(f, "push_mpls:{ethertype:#06x}"),
            Action::PopMpls { ethertype } => write!(f, "pop_mpls:{ethertype:#06x}"),
            Action::SetMplsTtl(t) => write!(f, "set_mpls_ttl:{t}"),
            Action::DecMplsTtl => write!(f, "dec_mpls_ttl"),
            Action::DecNshTtl => write!(f, "dec_nsh_ttl"),
            Action::EncapNsh => write!(f, "encap(nsh(md_type=1))"),
            Action::EncapEthernet => write!(f, "encap(ethernet)"),
            Action::Decap => write!(f, "decap()"),
            Action::SetNwTtl(t) => write!(f, "mod_nw_ttl:{t}"),
            Action::SetQueue(q) => write!(f, "set_queue:{q}"),
            Action::SetMasked { field, value, mask } => write!(f, "set_field:{value:#x}/{mask:#x}->{}", field.name()),
            Action::Move { src, dst } => write!(f, "move:{src}->{dst}"),
            Action::StackPush(sf) => write!(f, "push:{sf}"),
            Action::StackPop(sf) => write!(f, "pop:{sf}"),
            Action::Note => write!(f, "note"),
            Action::Exit => write!(f, "exit"),
            Action::CheckPktLarger { pkt_len, dst } => write!(f, "check_pkt_larger({pkt_len})->{dst}"),
            Action::Conjunction { id, k, n } => write!(f, "conjunction({id},{k}/{n})"),
            Action::OutputReg { src, .. } => write!(f, "output:{src}"),
            Action::Resubmit { in_port, table } => {
                let port = if *in_port == OFPP_IN_PORT { String::new() } else { in_port.to_string() };
                let table = if *table == 255 { String::new() } else { table.to_string() };
                write!(f, "resubmit({port},{table})")
            }
            Action::CtClear => write!(f, "ct_clear"),
            Action::Ct(c) => {
                let mut parts = Vec::new();
                if c.commit {
                    parts.push("commit".to_string());
                }
                if c.force {
                    parts.push("force".to_string());
                }
                if let Some(t) = c.table {
                    parts.push(format!("table={t}"));
                }
                match c.zone_src {
                    Some(sf) => parts.push(format!("zone={sf}")),
                    None => parts.push(format!("zone={}", c.zone)),
                }
                if let Some((v, m)) = c.set_mark {
                    parts.push(format!("mark={v:#x}/{m:#x}"));
                }
                if let Some((v, m)) = c.set_label {
                    parts.push(format!("label={v:#x}/{m:#x}"));
                }
                if let Some(n) = c.nat {
                    parts.push(n.to_string());
                }
                if let Some(alg) = c.alg {
                    parts.push(format!("alg={}", if alg == crate::ct_alg::Alg::Ftp { "ftp" } else { "tftp" }));
                }
                write!(f, "ct({})", parts.join(","))
            }
            Action::Learn(l) => write!(f, "learn(table={},priority={},cookie={:#x})", l.table, l.priority, l.cookie),
            Action::Controller(c) => {
                let reason = c.reason.map_or("none", |r| r.name());
                write!(f, "controller(reason={reason},id={},userdata={:02x?}", c.controller_id, c.userdata)?;
                c.meter_id.map_or(Ok(()), |m| write!(f, ",meter_id={m}"))?;
                write!(f, ")")
            }
            Action::Clone(nested) => write!(f, "clone({})", nested.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")),
            Action::Multipath(m) => write!(f, "{m}"),
            Action::Bundle(b) => write!(f, "{b}"),
            Action::OutputTrunc { port, max_len } => write!(f, "output(port={port},max_len={max_len})"),
            Action::FinTimeout { idle, hard } => write!(f, "fin_timeout(idle_timeout={idle},hard_timeout={hard})"),
            Action::DeleteField(field) => write!(f, "delete_field:{}", field.name()),
            Action::SetTunMetadataWide(s) => write!(f, "{s}"),
        }
    }
}

/// OpenFlow 1.3 instructions of one rule, executed in this order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Instructions {
    /// OFPIT_METER: run the packet through this meter first.
    pub meter: Option<u32>,
    pub apply: Vec<Action>,
    pub clear: bool,
    pub write: Vec<Action>,
    pub write_metadata: Option<(u64, u64)>,
    pub goto: Option<u8>,
}

impl Instructions {
    pub fn apply(actions: Vec<Action>) -> Self {
        Instructions { apply: actions, ..Default::default() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    pub table: u8,
    pub priority: u16,
    pub cookie: u64,
    pub matches: Vec<FieldMatch>,
    pub instructions: Instructions,
}

impl Rule {
    pub fn new(table: u8, priority: u16, matches: Vec<FieldMatch>, instructions: Instructions) -> Self {
        Rule { table, priority, cookie: 0, matches, instructions }
    }

    /// Is this a conjunctive flow (apply-actions of `conjunction`s and `note`s only)?
    pub fn is_conjunctive(&self) -> bool {
        self.instructions.apply.iter().any(|a| matches!(a, Action::Conjunction { .. }))
    }

    /// The `conjunction` actions of this rule, in order.
    pub fn conjunctions(&self) -> impl Iterator<Item = (u32, u8, u8)> + '_ {
        self.instructions.apply.iter().filter_map(|a| match a {
            Action::Conjunction { id, k, n } => Some((*id, *k, *n)),
            _ => None,
        })
    }

    /// Does this rule send packets to `port` / `group` (for delete filters)?
    pub fn outputs_to(&self, port: u32, group: u32) -> bool {
        let acts = flattened(self.instructions.apply.iter().chain(self.instructions.write.iter()));
        let mut port_ok = port == OFPP_ANY;
        let mut group_ok = group == OFPG_ANY;
        for a in acts {
            match a {
                Action::Output { port: p, .. } | Action::OutputTrunc { port: p, .. } if *p == port => port_ok = true,
                Action::Group(g) if *g == group => group_ok = true,
                _ => {}
            }
        }
        port_ok && group_ok
    }
}

/// The actions and, in place of each clone, the actions nested in it (as Open
/// vSwitch's `OFPACT_FOR_EACH_FLATTENED` walks them: for output and group filters,
/// group references; not learn cookies, which it counts in the rule's own list only).
pub fn flattened<'a>(acts: impl IntoIterator<Item = &'a Action>) -> Vec<&'a Action> {
    let mut out = Vec::new();
    for a in acts {
        match a {
            Action::Clone(nested) => out.extend(flattened(nested)),
            a => out.push(a),
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupType {
    All,
    Select,
    Indirect,
    FastFailover,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bucket {
    pub actions: Vec<Action>,
    pub weight: u16,
    /// Fast-failover / select liveness: the bucket is live while this port is
    /// (`OFPP_ANY`: not watched).
    pub watch_port: u32,
    /// ... or while this group has a live bucket (`OFPG_ANY`: not watched).
    pub watch_group: u32,
}

impl Bucket {
    /// A bucket that watches nothing (always live).
    pub fn new(actions: Vec<Action>, weight: u16) -> Self {
        Bucket { actions, weight, watch_port: OFPP_ANY, watch_group: OFPG_ANY }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Group {
    pub id: u32,
    pub kind: GroupType,
    pub buckets: Vec<Bucket>,
}

/// Why a rule, group or flow-mod was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineError {
    BadTable { table: u8, n_tables: usize },
    BadGoto { table: u8, goto: u8 },
    ValueTooWide { field: String, value: u128 },
    NotMaskable { field: String },
    ValueOutsideMask { field: String },
    DuplicateField { field: String },
    MissingPrereq { field: String, needs: String },
    TooManyPofFields { table: u8 },
    BadPofField { offset: u32, length: u32 },
    UnknownGroup(u32),
    UnknownMeter(u32),
    BadGroup { id: u32, reason: &'static str },
    BadConjunction(&'static str),
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PipelineError::*;
        match self {
            BadTable { table, n_tables } => write!(f, "table {table} does not exist (pipeline has {n_tables} tables)"),
            BadGoto { table, goto } => write!(f, "goto_table:{goto} in table {table} must point to a later, existing table"),
            ValueTooWide { field, value } => write!(f, "value {value:#x} does not fit field {field}"),
            NotMaskable { field } => write!(f, "field {field} cannot be masked"),
            ValueOutsideMask { field } => write!(f, "field {field}: value has bits outside its mask"),
            DuplicateField { field } => write!(f, "field {field} matched twice"),
            MissingPrereq { field, needs } => write!(f, "matching {field} needs {needs} in the same match (OpenFlow 1.3 prerequisites)"),
            TooManyPofFields { table } => write!(f, "table {table} would use more than {} distinct POF fields", crate::field::POF_SLOTS),
            BadPofField { offset, length } => write!(f, "POF field <{offset},{length}>: need 0 < length <= 128 bits"),
            UnknownGroup(g) => write!(f, "group {g} does not exist"),
            UnknownMeter(m) => write!(f, "meter {m} does not exist"),
            BadGroup { id, reason } => write!(f, "group {id}: {reason}"),
            BadConjunction(why) => write!(f, "conjunction: {why}"),
        }
    }
}

impl std::error::Error for PipelineError {}

fn exact_value(m: &[FieldMatch], f: Field) -> Option<u128> {
    m.iter().find(|x| x.field == f && x.mask.is_none()).map(|x| x.value)
}

/// Check widths, masks, duplicates and prerequisites of a match.
pub fn validate_match(m: &[FieldMatch]) -> Result<(), PipelineError> {
    for (i, fm) in m.iter().enumerate() {
        let name = fm.field.name();
        if let Field::Pof { offset, length } = fm.field {
            if length == 0 || length > 128 {
                return Err(PipelineError::BadPofField { offset, length });
            }
        }
        if m[..i].iter().any(|x| x.field == fm.field) {
            return Err(PipelineError::DuplicateField { field: name });
        }
        let full = ones(fm.field.bits());
        if fm.value & !full != 0 {
            return Err(PipelineError::ValueTooWide { field: name, value: fm.value });
        }
        if let Some(mask) = fm.mask {
            if mask & !full != 0 {
                return Err(PipelineError::ValueTooWide { field: name, value: mask });
            }
            if !fm.field.maskable() {
                return Err(PipelineError::NotMaskable { field: name });
            }
            if fm.value & !mask != 0 {
                return Err(PipelineError::ValueOutsideMask { field: name });
            }
        }
        let eth = exact_value(m, Field::EthType).map(|v| v as u16);
        let ok = match fm.field.prereq() {
            Prereq::None => true,
            // (a masked priority is Open vSwitch's whole-TCI match, which may leave the tag
            // bit unmatched: untagged frames, TCI 0, meet it with priority 0)
            Prereq::Vlan if fm.mask.is_some() => true,
            Prereq::Vlan => m.iter().any(|x| x.field == Field::VlanVid && x.value & u128::from(OFPVID_PRESENT) != 0 && x.full_mask() & u128::from(OFPVID_PRESENT) != 0),
            Prereq::EthType(ts) => eth.is_some_and(|e| ts.contains(&e)),
            Prereq::IpProto(p, ts) => eth.is_some_and(|e| ts.contains(&e)) && exact_value(m, Field::IpProto) == Some(u128::from(p)),
            Prereq::Nd(types) => {
                eth == Some(crate::parse::ETH_TYPE_IPV6)
                    && exact_value(m, Field::IpProto) == Some(58)
                    && exact_value(m, Field::Icmpv6Type).is_some_and(|t| types.contains(&(t as u8)))
                    && m.iter().find(|x| x.field == Field::Icmpv6Code).map_or(true, |x| x.value == 0)
            }
        };
        if !ok {
            let needs = match fm.field.prereq() {
                Prereq::Vlan => "vlan_vid with the OFPVID_PRESENT bit (0x1000) set".to_string(),
                Prereq::EthType(ts) => format!("eth_type={}", ts.iter().map(|t| format!("{t:#06x}")).collect::<Vec<_>>().join(" or ")),
                Prereq::IpProto(p, ts) => format!("ip_proto={p} and eth_type={}", ts.iter().map(|t| format!("{t:#06x}")).collect::<Vec<_>>().join(" or ")),
                Prereq::Nd(types) => format!("eth_type=0x86dd, ip_proto=58, icmpv6_type={} and icmpv6_code 0 or unmatched", types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or ")),
                Prereq::None => unreachable!(),
            };
            return Err(PipelineError::MissingPrereq { field: name, needs });
        }
    }
    Ok(())
}

/// Packed (value, mask) of a match; `pof_slot_of` gives the table's slot for a POF field.
pub fn match_key(m: &[FieldMatch], pof_slot_of: &dyn Fn(Field) -> usize) -> (Key, Key) {
    let mut value = [0u64; KEY_WORDS];
    let mut mask = [0u64; KEY_WORDS];
    for fm in m {
        if fm.field == Field::ConjId {
            crate::field::put_conj_id(&mut value, fm.value as u32);
            crate::field::put_conj_id(&mut mask, u32::MAX);
            continue;
        }
        let slot = match fm.field {
            Field::Pof { .. } => pof_slot(pof_slot_of(fm.field)),
            Field::TunMetadata(_) => continue, // (folded into the table's slots: pipeline/tunfold.rs)
            f => f.slot(),
        };
        put(&mut value, slot, fm.value & fm.full_mask());
        put(&mut mask, slot, fm.full_mask());
    }
    (value, mask)
}

/// Canonical form of a match (sorted, exact masks made explicit), for strict comparison.
pub fn canonical(m: &[FieldMatch]) -> Vec<(Field, u128, u128)> {
    let mut v: Vec<_> = m.iter().map(|x| (x.field, x.value & x.full_mask(), x.full_mask())).filter(|x| x.2 != 0).collect();
    v.sort();
    v
}

/// OpenFlow non-strict matching: is every packet matched by `rule` also matched by `filter`?
pub fn covered_by(rule: &[FieldMatch], filter: &[FieldMatch]) -> bool {
    filter.iter().all(|f| {
        let fmask = f.full_mask();
        if fmask == 0 {
            return true;
        }
        match rule.iter().find(|r| r.field == f.field) {
            Some(r) => fmask & !r.full_mask() == 0 && (r.value & fmask) == (f.value & fmask),
            None => false,
        }
    })
}

/// Open vSwitch's rules for `conjunction` actions: 2 <= n <= 64, 1 <= k <= n,
/// in apply-actions beside `note`s only, with no other instruction.
pub fn validate_conjunctions(ins: &Instructions) -> Result<(), PipelineError> {
    if ins.write.iter().any(|a| matches!(a, Action::Conjunction { .. })) {
        return Err(PipelineError::BadConjunction("not allowed in write-actions"));
    }
    let mut any = false;
    for a in &ins.apply {
        if let Action::Conjunction { k, n, .. } = *a {
            any = true;
            if !(2..=64).contains(&n) || k < 1 || k > n {
                return Err(PipelineError::BadConjunction("needs 2 <= n <= 64 clauses and 1 <= k <= n"));
            }
        }
    }
    if any && (ins.apply.iter().any(|a| !matches!(a, Action::Conjunction { .. } | Action::Note))
        || ins.meter.is_some() || ins.clear || !ins.write.is_empty() || ins.write_metadata.is_some() || ins.goto.is_some())
    {
        return Err(PipelineError::BadConjunction("only note may go with conjunction actions"));
    }
    Ok(())
}

pub fn validate_group(g: &Group) -> Result<(), PipelineError> {
    if g.buckets.iter().any(|b| b.actions.iter().any(|a| matches!(a, Action::Conjunction { .. }))) {
        return Err(PipelineError::BadGroup { id: g.id, reason: "a bucket cannot hold a conjunction action" });
    }
    if g.kind == GroupType::Indirect && g.buckets.len() != 1 {
        return Err(PipelineError::BadGroup { id: g.id, reason: "an indirect group needs exactly one bucket" });
    }
    // (a bucket's learn is taken and does nothing: a bucket runs as an action set, which
    // has no place for it, as in Open vSwitch 3.1; `ActionSet::write` leaves it out)
    Ok(())
}
