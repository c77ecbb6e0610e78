//! The OpenFlow 1.3 + POF switch pipeline: N flow tables, groups, ports.
//!
//! `process(packet, in_port)` parses the frame, walks the tables from table 0
//! (lookup by packed key; a miss drops, a table-miss rule is an ordinary
//! priority-0 rule; as in OVS the action set still runs on a miss), runs each matched rule's instructions in OpenFlow order
//! (apply-actions, clear-actions, write-actions, write-metadata, goto-table)
//! and, when no goto follows, executes the action set in OpenFlow/OVS order
//! (pop, push, dec_ttl, set-field, then group, else output). Every copy of the
//! packet ends in an explicit `Fate` (output, controller, drop + reason).
//! Group buckets run on a copy of the packet and their actions are applied as
//! an action set, as Open vSwitch does; what the rules a bucket's resubmit finds
//! write into the action set or push onto the stack stays (`bucket_leaks`).
//! Open vSwitch's `resubmit(port,table)` (`Action::Resubmit`) runs as OVS 3.1
//! runs it, established case by case against OVS (tests/dataplane/
//! test_resubmit_oracle.py): a lookup in `table` with in_port = `port` for that
//! lookup only (the rule found sees the packet's own in_port); the rule found
//! runs its apply-actions, clear-actions and write-actions on the packet's one
//! action set (`Ctx::set`), its write-metadata, and its goto as one more such
//! lookup, and its counters and its table's count the packet; a miss does
//! nothing; a TTL exception ends only the rule found, `exit` everything. OVS's
//! limits (`MAX_RESUBMIT_DEPTH`, `MAX_RESUBMITS`): a lookup into the same or an
//! earlier table nests one level deeper, and a lookup (resubmit or goto, after
//! the first) made at depth 64 or after 4,096 others drops the packet whole,
//! frames already sent included. A resubmit written into the action set runs
//! last when neither group nor output is there, with table 0 as its own table.
//! A resubmitted rule's meter instruction is not run (meters need `&mut self`).
//! `output:TABLE` in an action list, an action set or a bucket (and an `output_reg` at
//! TABLE's number) is the same lookup in table 0 (Open vSwitch
//! runs it so; a PACKET_OUT's TABLE is the emulator's, which injects the frame).
//! In front of the tables sits a whole-pipeline exact-match cache
//! (`pathcache`): a packet whose key was seen before takes its recorded path
//! (the rule matched in each table) with one probe, and when that path is
//! "write metadata, goto, ..., output" the frame is output with no
//! instruction run at all. Table, rule and port counters are kept exactly as
//! by the full walk.
//! State: rules (slab of ids), per-table classifiers with flow caches, the
//! path cache, groups, ports, named counters. Cost: parse + key + one
//! path-cache probe on a hit; per table one cached lookup otherwise; re-parse
//! only after an action changed the frame.

use crate::actions::{self, MplsResult, TtlResult};
use crate::classifier::{Classifier, RuleId};
use crate::field::{fast_base_key, fill_base_key, pof_slot, read_bits, Field, Key, POF_SLOTS};
use crate::parse::{parse_into, Headers, ParseError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub use crate::fate::*;
pub use crate::rule::*;
use crate::actionset::ActionSet;
use crate::meter::{MeterTable, Verdict};

mod clone;
mod recirc;
mod trunc;
mod controller_ids;
mod controller_meter;
mod nsh;
mod encap;
mod decap;
mod conj;
mod ctset;
mod actset;
mod bucket_ct;
mod bucket_nat;
mod fastpath;
mod flowmod;
mod learning;
mod normal;
mod packet_out;
mod packet_out_table;
pub use learning::{Removed, RemovedReason};
mod timeouts;
mod tunmeta;
mod tunwide;
mod tunfold;
mod packet_in_ct;
pub use timeouts::Timeouts;
mod pathcache;
pub use fastpath::Missed;
use fastpath::{Paths, Probe, Recorder};
use pathcache::{End, Path, PathCache};

#[derive(Debug, Clone, Copy, Default)]
struct PortCounters {
    rx_packets: u64,
    rx_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
}

#[derive(Default)]
struct Table {
    cls: Classifier,
    /// POF field per key slot, with the number of rules using it.
    pof: Vec<Option<(Field, u32)>>,
    /// Its tun_metadata matches, folded into the slots `pof` marks `tunfold::FOLD_SLOT`.
    fold: tunfold::TunFold,
    lookups: u64,
    matched: u64,
    missed: u64,
    /// The table's conjunctive flows (`conj.rs`), kept out of `cls`: while
    /// there are any, lookups take `conj_lookup`.
    conj: Vec<RuleId>,
}

/// The shape of a rule's instructions, kept dense (one small record per
/// rule id) so a matched rule of the two commonest shapes costs one cache
/// line for its whole behaviour. (Its counters live apart, in `stats`: the
/// fast path touches only those.)
#[derive(Clone, Copy, Default)]
struct Hot {
    fast: Fast,
    /// Its apply-actions resubmit: something may run after its last output.
    resubmits: bool,
}

impl Hot {
    fn of(ins: &Instructions) -> Hot {
        let lookup = |a: &Action| matches!(a, Action::Resubmit { .. } | Action::Output { port: OFPP_TABLE, .. });
        Hot { fast: Fast::of(ins), resubmits: ins.apply.iter().any(lookup) }
    }
}
#[derive(Clone, Copy, Default)]
enum Fast {
    /// Only apply-actions `[output:port]` to an ordinary port.
    Output(u32),
    /// Only (write_metadata and) goto_table.
    Goto { table: u8, metadata: Option<(u64, u64)> },
    /// Only apply-actions `[push_vlan:tpid, set_field:vid->vlan_vid,
    /// output:port, pop_vlan]`: the frame leaves with one more outer tag
    /// (TCI = vid); the closing pop touches nothing that leaves (a tagged
    /// hand-off to the next switch).
    TagOutput { tpid: u16, vid: u16, port: u32 },
    /// Only apply-actions `[pop_vlan, output:port]`: the frame leaves without
    /// its outer tag (the matching delivery).
    PopOutput(u32),
    /// Only apply-actions `[set_field:mark->pkt_mark, output:port]`: the frame
    /// leaves unchanged with this packet mark. OneSwitch's PCIe hand-off.
    MarkOutput { mark: u32, port: u32 },
    /// Anything else: run the instructions.
    #[default]
    General,
}

impl Fast {
    fn of(ins: &Instructions) -> Fast {
        let plain = !ins.clear && ins.write.is_empty() && ins.meter.is_none();
        match (&ins.apply[..], ins.goto) {
            ([Action::Output { port, .. }], None) if plain && ins.write_metadata.is_none() && *port < OFPP_IN_PORT => Fast::Output(*port),
            ([], Some(table)) if plain => Fast::Goto { table, metadata: ins.write_metadata },
            (
                [Action::PushVlan { ethertype }, Action::SetField { field: crate::field::Field::VlanVid, value }, Action::Output { port, .. }, Action::PopVlan],
                None,
            ) if plain && ins.write_metadata.is_none() && *port < OFPP_IN_PORT => {
                Fast::TagOutput { tpid: *ethertype, vid: (*value as u16) & 0x0fff, port: *port }
            }
            ([Action::PopVlan, Action::Output { port, .. }], None) if plain && ins.write_metadata.is_none() && *port < OFPP_IN_PORT => {
                Fast::PopOutput(*port)
            }
            ([Action::SetField { field: crate::field::Field::PktMark, value }, Action::Output { port, .. }], None)
                if plain && ins.write_metadata.is_none() && *port < OFPP_IN_PORT =>
            {
                Fast::MarkOutput { mark: *value as u32, port: *port }
            }
            // The same with the packet's own mark saved and restored around it
            // (nothing runs after the restore here, so it leaves no trace).
            (
                [Action::StackPush(save), Action::SetField { field: crate::field::Field::PktMark, value }, Action::Output { port, .. }, Action::StackPop(restore)],
                None,
            ) if plain && ins.write_metadata.is_none() && *port < OFPP_IN_PORT && save == restore && *save == MARK_WHOLE => {
                Fast::MarkOutput { mark: *value as u32, port: *port }
            }
            _ => Fast::General,
        }
    }
}

/// The whole packet mark as a push/pop operand.
const MARK_WHOLE: Subfield = Subfield { field: Field::PktMark, ofs: 0, n_bits: 32 };

struct Stored {
    rule: Rule,
    value: Key,
    mask: Key,
}

/// Per-packet working state.
#[derive(Clone)]
struct Ctx {
    data: Vec<u8>,
    h: Headers,
    base: Key,
    dirty: bool,
    in_port: u32,
    metadata: u64,
    /// The packet mark (`pkt_mark`): arrives with the packet, set by set_field,
    /// leaves with every copy the packet sends.
    mark: u32,
    /// OpenFlow tunnel_id: 0 on arrival (no tunnel ports here), set by set_field.
    tunnel: u64,
    /// Open vSwitch's registers as eight 64-bit xregs (xreg i = reg 2i : reg 2i+1), 0 on arrival;
    /// `regs_set` once an action wrote one (until then the key's register words stay 0).
    regs: [u64; 8],
    regs_set: bool,
    /// Open vSwitch's per-packet stack (`push` / `pop`), empty on arrival.
    stack: Vec<u128>,
    /// Set when the packet must be dropped outright (no action set).
    abort: bool,
    /// Set by `exit`: nothing more runs, not even the action set (as in Open vSwitch 3.1).
    exited: bool,
    /// IPv6 ND target / SLL / TLL as Open vSwitch's flow holds them: parsed
    /// once, then changed only by set_field (a frame re-parse after other
    /// rewrites does not renew them, nor does a set_field on an option the
    /// frame lacks show in its bytes). None until the first lookup.
    nd: Option<[u128; 3]>,
    /// The NSH key words once a set_field wrote one (`pipeline::nsh`), else None.
    nsh: Option<[u64; crate::nsh::NSH_WORDS]>,
    /// The table the packet is in and the rule that matched last (for packet-ins).
    table: u8,
    rule: Option<RuleId>,
    /// One entry per `check_pkt_larger` run so far: the packet's state just before
    /// it, the action set then (filled in once its rule's apply-actions end) and the
    /// bit it wrote. Open vSwitch 3.1 translates the rest of the pipeline twice, as the
    /// two branches of its datapath's check_pkt_len (larger first, each ending in the
    /// action set; the first empties it, so the "not larger" branch starts with none),
    /// then, back where the check was, runs the action set of that moment again on
    /// the packet of that moment (innermost check first).
    cpl: Vec<(Ctx, Option<ActionSet>, bool)>,
    /// The action set write-actions fill (shared by resubmitted rules, as in Open vSwitch).
    set: ActionSet,
    /// Open vSwitch's translation depth (resubmits to the same or an earlier
    /// table nest) and its count of table lookups after the first (resubmits
    /// and gotos, hit or miss); past `MAX_RESUBMIT_DEPTH` / `MAX_RESUBMITS` the
    /// packet is dropped whole (`too_deep`).
    depth: u32,
    resubmits: u32,
    too_deep: bool,
    /// Counters of the lookups resubmits made (table, rule, bytes), added once
    /// the packet is done (they run where the pipeline is borrowed shared).
    nested: Vec<(u8, Option<RuleId>, u64)>,
    /// The ct_* key words (`field::CT_WORD ..`), 0 (untracked) on arrival; `ct_set`
    /// once a ct action or ct_clear ran (until then the key's ct words stay 0).
    ct: [u64; 8],
    ct_set: bool,
    /// The tunnel metadata key words (`field::TUN_WORD ..`), 0 on arrival; `tnl_set` once
    /// a set_field/load/move/pop wrote one (until then the key's words stay 0).
    tnl: [u64; crate::field::TUN_WORDS],
    tnl_set: bool,
    /// `actset_output` (`pipeline::actset`): OFPP_UNSET on arrival.
    actset: u32,
    /// `tun_metadata0..63` once one was written (`pipeline/tunmeta.rs`), else None.
    tmeta: Option<Box<tunmeta::TunMeta>>,
    /// Set by a `ct(table=T)` in an apply list: (its index in the list run, T), and the
    /// copy that goes on in table T (the caller runs it, then the rest of the list).
    fork: Option<(usize, u8, Box<Ctx>)>,
    /// Set while a lookup made from inside a rule (resubmit) or a clone runs: its
    /// `ct(table=T)` recirculates the copy at once, in place (`pipeline/recirc.rs`).
    in_place: bool,
    /// Open vSwitch's `ctx->conntracked`: set in a copy a `ct(table=T)` recirculated,
    /// cleared by every ct; a `ct_clear` without it does nothing (`pipeline/recirc.rs`).
    conntracked: bool,
    /// Set by a group in an apply list or action set whose bucket may end in
    /// `ct(table=T)`: (its index in the list run, the group); the caller runs the group
    /// (`pipeline/bucket_ct.rs`), then the rest of the list.
    group_fork: Option<(usize, u32)>,
    /// Recirculations so far (Open vSwitch's datapath stops at `MAX_RECIRC_DEPTH`).
    recirc: u8,
    /// An `exit` that Open vSwitch keeps past the checks (see `Action::Exit`).
    no_rerun: bool,
    /// The frame's length as Open vSwitch's datapath last had it (`pipeline/trunc.rs`):
    /// set by every output that sends (a cell: outputs borrow the context shared).
    committed: std::cell::Cell<usize>,
    /// The packet is a copy Open vSwitch's datapath made (`dp_packet_clone`: a recirculation
    /// that is not the last datapath action, a datapath clone), whose buffer has no room
    /// past the frame: the FTP ALG rewrites no message in it (`ct_alg_ftp_nat.rs`).
    no_room: bool,
    /// Nothing runs after the list about to run (Open vSwitch's `is_last_action`): a
    /// clone that ends it is translated inline, committing nothing first (`pipeline/clone.rs`).
    /// Each `run_list` takes it (false inside), so only the lists given it see it.
    tail: bool,
    /// What the last ct action left in Open vSwitch's datapath metadata (its cached
    /// connection, when `conn`: a later ct in the same zone reuses the verdict; its
    /// ct_state and zone, kept with or without a connection and hidden from the rules
    /// after a ct without recirculation, tell NAT a packet already translated); None
    /// after ct_clear.
    ct_md: Option<crate::conntrack::CtMeta>,
    /// A first `decap()` popped the Ethernet header in Open vSwitch's flow (`pipeline/decap.rs`):
    /// the packet is NSH until the second pops it; `decap_failed`: a decap failed Open vSwitch's
    /// whole translation (with `too_deep`, which stops everything; nothing of the packet is sent).
    decap_eth: bool,
    decap_failed: bool,
    /// The translations buckets' `ct` with `nat` left in Open vSwitch's datapath but not in
    /// its flow (`pipeline/bucket_nat.rs`), and those this packet's own cts made.
    bucket_nat: std::cell::RefCell<Vec<bucket_nat::Rewrite>>,
    nat_rewrites: Vec<bucket_nat::Rewrite>,
}

impl Ctx {
    /// The working state of a packet that enters from `in_port` with `mark` (a frame's
    /// arrival in `process_full`, a PACKET_OUT's in `packet_out.rs`).
    #[inline]
    fn entering(data: Vec<u8>, mark: u32, in_port: u32) -> Ctx {
        Ctx {
            data,
            h: Headers::default(),
            base: [0; crate::field::KEY_WORDS],
            dirty: true,
            in_port,
            metadata: 0,
            mark,
            tunnel: 0,
            regs: [0; 8],
            regs_set: false,
            stack: Vec::new(),
            abort: false,
            exited: false,
            nd: None,
            table: 0,
            rule: None,
            set: ActionSet::default(),
            depth: 0,
            resubmits: 0,
            too_deep: false,
            nested: Vec::new(),
            cpl: Vec::new(),
            ct: [0; 8],
            ct_set: false,
            nsh: None,
            tnl: [0; crate::field::TUN_WORDS],
            tnl_set: false,
            actset: crate::field::OFPP_UNSET,
            tmeta: None,
            fork: None,
            group_fork: None,
            recirc: 0,
            no_rerun: false,
            committed: std::cell::Cell::new(0),
            tail: false,
            ct_md: None,
            decap_eth: false,
            decap_failed: false,
            in_place: false,
            conntracked: false,
            no_room: false,
            bucket_nat: std::cell::RefCell::new(Vec::new()),
            nat_rewrites: Vec::new(),
        }
    }
}

/// Open vSwitch 3.1's limits on resubmit (`ofproto-dpif-xlate.c`: MAX_DEPTH,
/// MAX_RESUBMITS = MAX_DEPTH * MAX_DEPTH).
pub const MAX_RESUBMIT_DEPTH: u32 = 64;
pub const MAX_RESUBMITS: u32 = MAX_RESUBMIT_DEPTH * MAX_RESUBMIT_DEPTH;

/// Open vSwitch's userspace datapath: a packet recirculated more often is dropped.
const MAX_RECIRC_DEPTH: u8 = 6;

const MAX_GROUP_DEPTH: u32 = 16;
/// Groups a liveness question may pass through (Open vSwitch: 128 links).
const MAX_LIVENESS_DEPTH: usize = 128;
/// Buckets one liveness question may look at.
const MAX_LIVENESS_STEPS: u32 = 4096;

/// One liveness question's walk: the watch groups on the way, buckets looked at.
#[derive(Default)]
struct Liveness {
    path: Vec<u32>,
    steps: u32,
}
/// Ports below this have their counters in a directly indexed array.
const PORT_DIRECT: u32 = 4096;

pub struct Pipeline {
    tables: Vec<Table>,
    rules: Vec<Option<Stored>>,
    hot: Vec<Hot>,
    /// Per rule id: packets and bytes matched (16 bytes a rule).
    stats: Vec<RuleStats>,
    free_ids: Vec<RuleId>,
    /// (table, priority, canonical match) -> rule, for OpenFlow "identical rule" checks.
    strict: HashMap<(u8, u16, Vec<(Field, u128, u128)>), RuleId>,
    groups: HashMap<u32, Group>,
    ports: BTreeMap<u32, PortCounters>,
    /// Ports that exist but are not live (link or admin down): fast-failover
    /// and select buckets watching them are skipped, as OVS does.
    ports_down: BTreeSet<u32>,
    port_list: Vec<u32>,
    /// Counters of ports < PORT_DIRECT, indexed directly (None: no such port).
    port_direct: Vec<Option<PortCounters>>,
    drops: BTreeMap<&'static str, u64>,
    controller: BTreeMap<&'static str, u64>,
    /// Drop frames with an impossible or cut-short IP/L4 header (default true);
    /// when false they are matched on the fields that parsed, as Open vSwitch
    /// does, which a protocol-oblivious (POF) pipeline needs. Runts (< 14
    /// bytes) are always dropped.
    pub drop_malformed: bool,
    /// Send packet-ins for every controller id (`controller(id=…)`, `dec_ttl(ids)`), each
    /// carrying its id, as a switch with a connection per id does (the emulator backend's
    /// switches: `pipeline/controller_ids.rs`); false (default): for id 0 only, one connection.
    pub every_controller_id: bool,
    /// Per-packet trace (on demand): the flag is checked on the hot path.
    trace_on: AtomicBool,
    trace: Mutex<Vec<String>>,
    paths: Paths,
    /// OpenFlow meters (`meter.rs`) and the modelled time they run on (ns).
    meters: MeterTable,
    now_ns: u64,
    /// The connection tracker of `ct` actions (behind a lock: actions run with `&self`).
    conntrack: Mutex<crate::conntrack::Conntrack>,
    /// Learned flows' timers and flags, delete_learned counts (`learning.rs`).
    learning: learning::Learning,
    /// NORMAL's MAC table and the no-flood ports (`normal.rs`).
    normal: normal::Normal,
}

impl Pipeline {
    pub fn new(n_tables: usize) -> Self {
        Pipeline {
            tables: (0..n_tables.clamp(1, 255)).map(|_| Table { pof: vec![None; POF_SLOTS], ..Default::default() }).collect(),
            rules: Vec::new(),
            hot: Vec::new(),
            stats: Vec::new(),
            free_ids: Vec::new(),
            strict: HashMap::new(),
            groups: HashMap::new(),
            ports: BTreeMap::new(),
            ports_down: BTreeSet::new(),
            port_list: Vec::new(),
            port_direct: Vec::new(),
            drops: BTreeMap::new(),
            controller: BTreeMap::new(),
            drop_malformed: true,
            every_controller_id: false,
            trace_on: AtomicBool::new(false),
            trace: Mutex::new(Vec::new()),
            meters: MeterTable::default(),
            now_ns: 0,
            conntrack: Mutex::new(crate::conntrack::Conntrack::default()),
            learning: Default::default(),
            normal: Default::default(),
            paths: Paths { cache: PathCache::default(), gate: crate::cachegate::Gate::new(pathcache::MAX_ENTRIES), enabled: true, gen: 1, union: [0; crate::field::KEY_WORDS], stale: false, any_pof: false, memo: Vec::new() },
        }
    }

    pub fn n_tables(&self) -> usize {
        self.tables.len()
    }

    // ------------------------------------------------------------ ports
    pub fn add_port(&mut self, port: u32) {
        self.invalidate_paths();
        self.ports.entry(port).or_default();
        self.port_list = self.ports.keys().copied().collect();
        if port < PORT_DIRECT {
            if self.port_direct.len() <= port as usize {
                self.port_direct.resize(port as usize + 1, None);
            }
            self.port_direct[port as usize].get_or_insert_with(PortCounters::default);
        }
    }
    pub fn remove_port(&mut self, port: u32) {
        self.invalidate_paths();
        self.ports.remove(&port);
        self.ports_down.remove(&port);
        self.normal_port_removed(port);
        self.port_list = self.ports.keys().copied().collect();
        if let Some(slot) = self.port_direct.get_mut(port as usize) {
            *slot = None;
        }
    }
    pub fn ports(&self) -> &[u32] {
        &self.port_list
    }

    /// Mark a port live or not (its link or admin state). Only group liveness
    /// depends on it: a bucket watching a port that is down (or absent) is not
    /// live. Returns false if the port does not exist.
    pub fn set_port_live(&mut self, port: u32, live: bool) -> bool {
        if !self.has_port(port) {
            return false;
        }
        let changed = if live { self.ports_down.remove(&port) } else { self.ports_down.insert(port) };
        if changed {
            self.invalidate_paths();
            for t in &mut self.tables {
                t.cls.invalidate_cache();
            }
        }
        true
    }

    /// Whether `port` exists and is live.
    pub fn port_live(&self, port: u32) -> bool {
        self.has_port(port) && !self.ports_down.contains(&port)
    }

    #[inline]
    fn has_port(&self, port: u32) -> bool {
        if port < PORT_DIRECT {
            matches!(self.port_direct.get(port as usize), Some(Some(_)))
        } else {
            self.ports.contains_key(&port)
        }
    }

    #[inline]
    fn port_counters(&self, port: u32) -> Option<PortCounters> {
        if port < PORT_DIRECT {
            self.port_direct.get(port as usize).copied().flatten()
        } else {
            self.ports.get(&port).copied()
        }
    }

    #[inline]
    fn port_counters_mut(&mut self, port: u32) -> Option<&mut PortCounters> {
        if port < PORT_DIRECT {
            self.port_direct.get_mut(port as usize)?.as_mut()
        } else {
            self.ports.get_mut(&port)
        }
    }

    // ------------------------------------------------------------ groups
    /// Add or replace a group.
    pub fn add_group(&mut self, g: Group) -> Result<(), PipelineError> {
        validate_group(&g)?;
        self.groups.insert(g.id, g);
        self.invalidate_paths();
        for t in &mut self.tables {
            t.cls.invalidate_cache();
        }
        Ok(())
    }
    /// Remove a group and, as OpenFlow requires, every rule that uses it.
    pub fn remove_group(&mut self, id: u32) -> bool {
        let existed = self.groups.remove(&id).is_some();
        self.invalidate_paths();
        let users: Vec<RuleId> = self.rules().filter(|(_, r)| r.outputs_to(OFPP_ANY, id)).map(|(i, _)| i).collect();
        for u in users {
            self.remove_rule(u);
        }
        existed
    }
    pub fn group(&self, id: u32) -> Option<&Group> {
        self.groups.get(&id)
    }

    // ------------------------------------------------------------ counters
    /// All named counters: `port.N.rx_packets`, `table.N.lookups`, `drop.REASON` ...
    pub fn counters(&self) -> Vec<(String, u64)> {
        let mut v = Vec::new();
        for p in &self.port_list {
            let c = self.port_counters(*p).expect("listed port");
            v.push((format!("port.{p}.rx_packets"), c.rx_packets));
            v.push((format!("port.{p}.rx_bytes"), c.rx_bytes));
            v.push((format!("port.{p}.tx_packets"), c.tx_packets));
            v.push((format!("port.{p}.tx_bytes"), c.tx_bytes));
        }
        for (i, t) in self.tables.iter().enumerate() {
            v.push((format!("table.{i}.rules"), t.cls.len() as u64));
            v.push((format!("table.{i}.lookups"), t.lookups));
            v.push((format!("table.{i}.matched"), t.matched));
            v.push((format!("table.{i}.missed"), t.missed));
            let (hits, misses) = t.cls.cache_stats();
            v.push((format!("table.{i}.cache_hits"), hits));
            v.push((format!("table.{i}.cache_misses"), misses));
            v.push((format!("table.{i}.cache_bypassed"), t.cls.cache_bypassed()));
        }
        for (r, n) in &self.drops {
            v.push((format!("drop.{r}"), *n));
        }
        for (r, n) in &self.controller {
            v.push((format!("controller.{r}"), *n));
        }
        let alg = self.conntrack.lock().unwrap_or_else(|e| e.into_inner()).alg_stats;
        for (name, n) in [("expected", alg.expected), ("new_related", alg.new_related), ("related", alg.related), ("invalid", alg.invalid), ("ftp_rewritten", alg.ftp_rewritten), ("ftp_shifted", alg.ftp_shifted)] {
            v.push((format!("ct.alg.{name}"), n));
        }
        v.push(("path_cache.hits".into(), self.paths.cache.hits));
        v.push(("path_cache.misses".into(), self.paths.cache.misses));
        v.push(("path_cache.bypassed".into(), self.paths.gate.bypassed()));
        v
    }

    // ------------------------------------------------------------ packets
    /// Run one packet received on `in_port` through the pipeline.
    pub fn process(&mut self, pkt: Packet, in_port: u32) -> Vec<Fate> {
        let mut out = Vec::with_capacity(2);
        self.process_into(pkt, in_port, &mut out);
        out
    }

    /// `process` with a per-step trace of lookups and actions.
    pub fn trace(&mut self, pkt: Packet, in_port: u32) -> (Vec<Fate>, Vec<String>) {
        self.trace.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.trace_on.store(true, Ordering::Relaxed);
        let fates = self.process(pkt, in_port);
        self.trace_on.store(false, Ordering::Relaxed);
        let steps = std::mem::take(&mut *self.trace.lock().unwrap_or_else(|e| e.into_inner()));
        (fates, steps)
    }

    #[inline]
    fn tracing(&self) -> bool {
        self.trace_on.load(Ordering::Relaxed)
    }

    fn note(&self, f: impl FnOnce() -> String) {
        if self.tracing() {
            let t = &mut *self.trace.lock().unwrap_or_else(|e| e.into_inner());
            t.push(f());
        }
    }

    /// `process`, appending the fates to `out` (no allocation for the list).
    pub fn process_into(&mut self, pkt: Packet, in_port: u32, out: &mut Vec<Fate>) {
        self.learning_tick();
        if pkt.mark != 0 {
            return match self.forward_fast_marked(&pkt.data, pkt.mark, in_port) {
                Ok(port) => out.push(Fate::Output { port, packet: pkt }),
                Err(missed) => self.process_missed(pkt, in_port, out, missed),
            };
        }
        match self.forward_fast(&pkt.data, in_port) {
            Ok(port) => out.push(Fate::Output { port, packet: pkt }),
            Err(missed) => self.process_missed(pkt, in_port, out, missed),
        }
    }

    /// `process_into` for a packet `forward_fast` did not forward.
    pub fn process_missed(&mut self, pkt: Packet, in_port: u32, out: &mut Vec<Fate>, missed: Missed) {
        self.process_full(pkt.data, pkt.mark, in_port, out, missed.0);
    }

    /// Parse, walk the tables (behind the path cache) and count the fates.
    fn process_full(&mut self, data: Vec<u8>, mark: u32, in_port: u32, out: &mut Vec<Fate>, probe: Probe) {
        let start = out.len();
        if let Some(c) = self.port_counters_mut(in_port) {
            c.rx_packets += 1;
            c.rx_bytes += data.len() as u64;
        }
        let mut ctx = Ctx::entering(data, mark, in_port);
        ctx.committed.set(ctx.data.len());
        if let Err(reason) = self.refresh(&mut ctx) {
            self.note(|| format!("parse: {reason}"));
            out.push(Fate::Drop { reason: DropReason::Malformed(reason) });
        } else if self.paths.enabled && !matches!(probe, Probe::Bypass) && !self.tracing() {
            self.run_cached(&mut ctx, out, probe);
        } else {
            self.run_tables(&mut ctx, out, None, None);
        }
        self.settle_packet_in_meters(out, start);
        Self::drop_runts(out, start); // (output_trunc: pipeline/trunc.rs)
        if ctx.too_deep {
            out.truncate(start);
            out.push(Fate::Drop { reason: if ctx.decap_failed { DropReason::DecapFailed } else { DropReason::ResubmitLimit } });
        }
        for (table, found, bytes) in std::mem::take(&mut ctx.nested) {
            self.count_lookup(table, found, bytes);
        }
        self.install_learned();
        if out.len() == start {
            out.push(Fate::Drop { reason: DropReason::NoOutput });
        }
        for f in &out[start..] {
            match f {
                Fate::Output { port, packet } => {
                    if let Some(c) = self.port_counters_mut(*port) {
                        c.tx_packets += 1;
                        c.tx_bytes += packet.data.len() as u64;
                    }
                }
                Fate::Controller { reason, .. } => *self.controller.entry(reason.name()).or_default() += 1,
                Fate::Drop { reason } => *self.drops.entry(reason.name()).or_default() += 1,
            }
        }
    }

    /// Parse the frame at ingress; Err names why it is unusable.
    fn refresh(&self, ctx: &mut Ctx) -> Result<(), &'static str> {
        ctx.dirty = false;
        match parse_into(&ctx.data, &mut ctx.h) {
            Err(e @ ParseError::RuntFrame { .. }) => Err(e.name()),
            Err(e) if self.drop_malformed => Err(e.name()),
            Err(_) => {
                fill_base_key(&mut ctx.base, &ctx.h, ctx.in_port);
                Self::put_mark(ctx);
                Ok(())
            }
            Ok(()) => {
                if self.drop_malformed {
                    if let Some(layer) = ctx.h.truncated {
                        return Err(layer);
                    }
                }
                fill_base_key(&mut ctx.base, &ctx.h, ctx.in_port);
                Self::put_mark(ctx);
                Ok(())
            }
        }
    }

    /// The packet mark's key bits (`fill_base_key` leaves them 0).
    #[inline]
    fn put_mark(ctx: &mut Ctx) {
        let w = &mut ctx.base[crate::field::PKT_MARK_WORD];
        *w = (*w & 0xffff_ffff) | (u64::from(ctx.mark) << 32);
    }

    /// Re-parse after an action rewrote the frame. A rewritten frame is never
    /// dropped for its shape (a POF AddField may well make it unparseable as
    /// IP): it keeps the fields that still parse and matches on those, its
    /// in_port, metadata and POF fields.
    #[inline]
    fn reparse(ctx: &mut Ctx) {
        if ctx.dirty {
            ctx.dirty = false;
            let _ = parse_into(&ctx.data, &mut ctx.h);
            fill_base_key(&mut ctx.base, &ctx.h, ctx.in_port);
            Self::put_mark(ctx);
        }
    }

    /// Walk the tables: look the packet up in each (or, with `cached`, take
    /// the lookup results of a cached path), run the instructions, then the
    /// action set. `rec` records the lookups for the path cache.
    fn run_tables(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>, cached: Option<&Path>, rec: Option<&mut Recorder>) {
        self.run_tables_from(ctx, out, cached, rec, 0);
    }

    /// `run_tables` from `start` (a recirculated copy's table; its action set is `ctx.set`).
    fn run_tables_from(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>, cached: Option<&Path>, mut rec: Option<&mut Recorder>,
                       start: usize) {
        let mut table = start;
        let mut missed = None;
        let mut step = 0usize;
        let mut first = None; // (table, rule) of the first match: the action set's packet-ins name it
        loop {
            if let Some(r) = rec.as_deref_mut() {
                // A rewritten frame's key is not the ingress key: the path
                // after this point depends on more than the cache key.
                r.ok &= !ctx.dirty && ctx.recirc == 0; // (a decap's inner frame is not in the key either)
            }
            if table > 0 {
                // a goto: Open vSwitch counts it as a resubmit (and checks the limits first)
                if !Self::may_look_up(ctx) {
                    return;
                }
                ctx.resubmits += 1;
            }
            let found = match cached {
                // A path recorded for a packet that stopped early (TTL
                // expired) is a valid prefix: past it, look up for real.
                Some(path) if step < path.len() => {
                    let (t, rule) = path.step(step);
                    debug_assert_eq!(t as usize, table);
                    let t = &mut self.tables[table];
                    t.lookups += 1;
                    rule
                }
                _ => {
                    let found = self.lookup(ctx, table);
                    if let Some(r) = rec.as_deref_mut() {
                        r.ok &= r.path.push(table as u8, found);
                    }
                    found
                }
            };
            step += 1;
            ctx.table = table as u8;
            let t = &mut self.tables[table];
            let Some(id) = found else {
                // A miss ends the pipeline; like Open vSwitch, the action set
                // written so far is still executed.
                t.missed += 1;
                self.note(|| format!("table {table}: miss"));
                missed = Some(table as u8);
                break;
            };
            t.matched += 1;
            ctx.rule = Some(id);
            first.get_or_insert((ctx.table, ctx.rule));
            let s = &mut self.stats[id as usize];
            s.packets += 1;
            s.bytes += ctx.data.len() as u64;
            let fast = self.hot[id as usize].fast;
            if !self.tracing() {
                match fast {
                    Fast::Output(port) if ctx.set.is_empty() && ctx.cpl.is_empty() && port != ctx.in_port && self.has_port(port) => {
                        out.push(Fate::Output { port, packet: Packet::marked(Self::datapath_frame(ctx).unwrap_or_else(|| std::mem::take(&mut ctx.data)), ctx.mark) });
                        return;
                    }
                    Fast::Goto { table: g, metadata } => {
                        if let Some((v, m)) = metadata {
                            ctx.metadata = (ctx.metadata & !m) | (v & m);
                        }
                        table = g as usize;
                        continue;
                    }
                    _ => {}
                }
            }
            if self.tracing() {
                let r = &self.rules[id as usize].as_ref().unwrap().rule;
                let msg = format!("table {table}: rule #{id} priority {} cookie {:#x} matched", r.priority, r.cookie);
                self.note(|| msg);
            }
            if let Some(m) = self.rules[id as usize].as_ref().unwrap().rule.instructions.meter {
                self.settle_packet_in_meters(out, 0);
                if !self.run_meter(m, ctx, out) {
                    return;
                }
            }
            let ins = &self.rules[id as usize].as_ref().unwrap().rule.instructions;
            // Nothing runs after this apply list: its last output may take the frame.
            let last = ins.goto.is_none() && ins.write.is_empty() && (ins.clear || ctx.set.is_empty()) && !self.hot[id as usize].resubmits;
            let last = last && ctx.cpl.is_empty();
            ctx.tail = ins.goto.is_none() && ins.write.is_empty(); // (a last clone: pipeline/clone.rs)
            let ok = self.run_list_final(&ins.apply, ctx, out, last)
                || ((ctx.fork.is_some() || ctx.group_fork.is_some()) && self.run_forks(id, ctx, out));
            recirc::close_checks(ctx);
            if !ok {
                if ctx.abort || ctx.too_deep {
                    return;
                }
                // TTL exception: like Open vSwitch, the rest of this rule is
                // skipped but the action set written so far still runs.
                break;
            }
            let ins = &self.rules[id as usize].as_ref().unwrap().rule.instructions;
            Self::after_apply(ins, ctx);
            match ins.goto {
                Some(g) => table = g as usize,
                None => break,
            }
        }
        if ctx.exited {
            self.note(|| "exit: the action set does not run".into());
        } else {
            let list = ctx.set.to_list();
            ctx.set = ActionSet::default(); // (what a rule a written resubmit finds writes there never runs)
            if !list.is_empty() {
                self.note(|| format!("action set: {}", list.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")));
                if let Some((t, r)) = first {
                    // (Open vSwitch's gotos return before its action set runs: table and cookie are
                    // the first rule's again, as its packet-ins show: test_dec_ttl_ids_vs_ovs.py)
                    (ctx.table, ctx.rule) = (t, r);
                }
                self.run_list(&list, ctx, out, 0);
                self.run_set_fork(ctx, out);
            } else if let Some(table) = missed {
                out.push(Fate::Drop { reason: DropReason::TableMiss { table } });
            }
        }
        self.rerun_at_checks(ctx, out);
    }

    /// After a pipeline that ran `check_pkt_larger`: back at each check, innermost
    /// first, the action set of that moment runs again on the packet of that moment
    /// (Open vSwitch 3.1's translation of check_pkt_larger, see `Ctx::cpl`).
    fn rerun_at_checks(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        let checks = std::mem::take(&mut ctx.cpl);
        if ctx.no_rerun {
            self.note(|| "exit after check_pkt_larger: no action set runs again".into());
            return;
        }
        for (before, set, _) in checks.into_iter().rev() {
            if ctx.abort {
                return;
            }
            *ctx = before;
            let list = set.unwrap_or_default().to_list();
            if !list.is_empty() {
                self.note(|| format!("back at check_pkt_larger: action set {}", list.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")));
                self.run_list(&list, ctx, out, 0);
                self.run_set_fork(ctx, out);
            }
        }
    }

    /// Rule `id`'s apply list stopped at a `ct(table=T)` (`ctx.fork`): run the copy
    /// from table T with the action set so far (Open vSwitch recirculates it at once,
    /// before the rest of the list), then the rest of the list, again and again for
    /// each later `ct(table=...)`. True when the whole list ran.
    fn run_forks(&mut self, id: RuleId, ctx: &mut Ctx, out: &mut Vec<Fate>) -> bool {
        let apply = self.rules[id as usize].as_ref().unwrap().rule.instructions.apply.clone();
        let mut at = 0;
        loop {
            if let Some((i, gid)) = ctx.group_fork.take() {
                // (a group whose bucket recirculates, `pipeline/bucket_ct.rs`)
                self.run_group_recirculating(gid, ctx, out);
                at += i + 1;
                if self.run_list(&apply[at..], ctx, out, 0) {
                    return true;
                }
                continue;
            }
            let Some((i, table, mut copy)) = ctx.fork.take() else { break };
            if copy.recirc >= MAX_RECIRC_DEPTH {
                self.note(|| format!("  ct: recirculation deeper than {MAX_RECIRC_DEPTH}: copy dropped"));
                out.push(Fate::Drop { reason: DropReason::RecircDepth });
            } else {
                copy.recirc += 1;
                self.note(|| format!("  ct: the tracked copy goes on in table {table}"));
                let (saved_table, saved_rule) = (ctx.table, ctx.rule);
                self.run_tables_from(&mut copy, out, None, None, usize::from(table));
                ctx.nested.append(&mut copy.nested);
                ctx.table = saved_table;
                ctx.rule = saved_rule;
            }
            at += i + 1;
            if self.run_list(&apply[at..], ctx, out, 0) {
                return true;
            }
        }
        false
    }

    /// A `ct` action on the packet: the tracker's verdict in a copy's ct fields
    /// (returned), while the packet itself goes on untracked (as in Open vSwitch,
    /// whose ct_* fields exist only in the recirculated copy).
    fn run_ct(&self, c: &CtAction, ctx: &mut Ctx) -> [u64; 8] {
        let zone = match c.zone_src {
            Some(sf) => Self::read_subfield(ctx, &sf) as u16,
            None => c.zone,
        };
        Self::commit_bucket_nat(ctx);
        Self::reparse(ctx);
        let args = crate::conntrack::CtArgs { zone, commit: c.commit, force: c.force, set_mark: c.set_mark, set_label: c.set_label, nat: c.nat, cached: ctx.ct_md, alg: c.alg, no_room: ctx.no_room };
        let meta = self.conntrack.lock().unwrap_or_else(|e| e.into_inner()).execute(&ctx.h, &ctx.data, &args, self.now_ns);
        ctx.ct_md = Some(meta);
        self.note(|| format!("  ct: zone {zone} state {:#x} mark {:#x}", meta.state, meta.mark));
        if let Some((to, src_side)) = meta.rewrite {
            let before = ctx.data.clone();
            crate::ct_nat::rewrite(&mut ctx.data, &ctx.h, &to, src_side);
            if meta.inner {
                crate::ct_related::rewrite_inner(&mut ctx.data, &ctx.h, &to, src_side);
            }
            ctx.nat_rewrites.extend(bucket_nat::rewrites(&before, &ctx.data, ctx.in_port));
            ctx.dirty = true;
        }
        if let Some(e) = meta.ftp {
            crate::ct_alg_ftp_nat::apply(&mut ctx.data, &ctx.h, &e); // (the FTP ALG under a nat)
            ctx.dirty = true;
        }
        ct_words(&meta)
    }

    /// The connection tracker's size limit (Open vSwitch's `n_conn_limit`): a commit
    /// finding the table full (after dropping expired connections) commits nothing.
    pub fn set_ct_limit(&mut self, limit: usize) {
        self.conntrack.get_mut().unwrap_or_else(|e| e.into_inner()).limit = limit;
    }
    /// Connections tracked now (expired ones included until swept), commits refused for a full table.
    pub fn ct_stats(&self) -> (usize, u64) {
        let c = self.conntrack.lock().unwrap_or_else(|e| e.into_inner());
        (c.len(), c.full)
    }
    /// Forget every tracked connection.
    pub fn ct_flush(&mut self) {
        self.conntrack.get_mut().unwrap_or_else(|e| e.into_inner()).flush();
    }

    /// The meter instruction: false when the meter dropped the packet.
    /// An unknown meter (deleted under a cached rule) passes the packet.
    fn run_meter(&mut self, id: u32, ctx: &mut Ctx, out: &mut Vec<Fate>) -> bool {
        match self.meters.run(id, self.now_ns, ctx.data.len()) {
            Some(Verdict::Drop { band }) => {
                self.note(|| format!("  meter:{id} band {band}: drop"));
                out.push(Fate::Drop { reason: DropReason::Meter(id) });
                false
            }
            Some(Verdict::Remark { band, prec_level }) => {
                Self::reparse(ctx);
                if let Some(dscp) = ctx.h.ip_dscp {
                    let new = crate::meter::remark_dscp(dscp, prec_level);
                    self.note(|| format!("  meter:{id} band {band}: dscp {dscp} -> {new}"));
                    if new != dscp && actions::set_field(&mut ctx.data, &ctx.h, Field::IpDscp, u128::from(new)) {
                        ctx.dirty = true;
                    }
                }
                true
            }
            _ => true,
        }
    }

    // ------------------------------------------------------------ meters
    /// The modelled time (ns) meters refill their buckets by; the emulator
    /// sets it before each packet. Time never runs backwards for a meter.
    pub fn set_now_ns(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
    /// OFPMC_ADD / OFPMC_MODIFY at the current modelled time.
    pub fn add_meter(&mut self, cfg: crate::meter::MeterConfig) -> Result<(), crate::meter::MeterError> {
        self.meters.add(cfg, self.now_ns)
    }
    pub fn modify_meter(&mut self, cfg: crate::meter::MeterConfig) -> Result<(), crate::meter::MeterError> {
        self.meters.modify(cfg, self.now_ns)
    }
    /// OFPMC_DELETE: as OpenFlow requires, the rules that use the meter go too
    /// (`u32::MAX` = OFPM_ALL). True if a meter existed.
    pub fn remove_meter(&mut self, id: u32) -> bool {
        let existed = self.meters.remove(id);
        let users: Vec<RuleId> =
            self.rules().filter(|(_, r)| r.instructions.meter.is_some_and(|m| id == u32::MAX || m == id)).map(|(i, _)| i).collect();
        for u in users {
            self.remove_rule(u);
        }
        self.invalidate_paths();
        existed
    }
    pub fn meters(&self) -> &MeterTable {
        &self.meters
    }

    /// Look the packet up in `table` (counting the lookup): the table's key
    /// is the frame's key with the metadata and this table's POF slots filled
    /// in (in place: all of them, so no slot of a previous table lingers).
    #[inline]
    fn lookup(&mut self, ctx: &mut Ctx, table: usize) -> Option<RuleId> {
        let t = &mut self.tables[table];
        Self::lookup_key(ctx, &t.pof, &t.fold);
        t.lookups += 1;
        if !t.conj.is_empty() {
            return self.conj_lookup(&mut ctx.base, table);
        }
        t.cls.lookup_cached(&ctx.base).map(|(_, id)| id)
    }

    /// A rule's clear-actions, write-actions and write-metadata (after its apply-actions).
    #[inline]
    fn after_apply(ins: &Instructions, ctx: &mut Ctx) {
        if ins.clear {
            ctx.set = ActionSet::default();
            ctx.actset = crate::field::OFPP_UNSET;
        }
        if !ins.write.is_empty() {
            ctx.actset = actset::after_write(ctx.actset, ctx.set.has_group(), &ins.write);
        }
        ctx.set.write(&ins.write);
        if let Some((v, m)) = ins.write_metadata {
            ctx.metadata = (ctx.metadata & !m) | (v & m);
        }
    }

    /// The packet's key as a lookup in a table with these POF slots sees it.
    #[inline]
    fn lookup_key(ctx: &mut Ctx, pof: &[Option<(Field, u32)>], fold: &tunfold::TunFold) {
        Self::reparse(ctx);
        Self::fill_state(ctx);
        Self::nd_flow(ctx);
        for (i, e) in pof.iter().enumerate() {
            let v = match e {
                Some((Field::Pof { offset, length }, _)) => read_bits(&ctx.data, *offset, *length).0,
                _ => 0,
            };
            let s = pof_slot(i);
            ctx.base[s.word] = (v >> 64) as u64;
            ctx.base[s.word + 1] = v as u64;
        }
        if ctx.tmeta.is_some() {
            Self::tun_metadata_slots(ctx, fold); // (a tun_metadata slot reads 0 while none was written)
        }
    }

    /// The key words of the packet's pipeline state: metadata, tunnel_id, registers.
    #[inline]
    fn fill_state(ctx: &mut Ctx) {
        ctx.base[1] = ctx.metadata;
        ctx.base[crate::field::TUNNEL_WORD] = ctx.tunnel;
        if ctx.recirc > 0 {
            ctx.base[crate::field::RECIRC_BIT.0] |= 1 << crate::field::RECIRC_BIT.1;
        }
        if ctx.tnl_set {
            ctx.base[crate::field::TUN_WORD..crate::field::TUN_WORD + crate::field::TUN_WORDS].copy_from_slice(&ctx.tnl);
        }
        actset::put(ctx);
        if ctx.regs_set {
            ctx.base[crate::field::REG_WORD..crate::field::REG_WORD + 8].copy_from_slice(&ctx.regs);
        }
        if ctx.ct_set {
            ctx.base[crate::field::CT_WORD..crate::field::CT_WORD + 8].copy_from_slice(&ctx.ct);
        }
        if ctx.nsh.is_some() {
            Self::nsh_flow(ctx);
        }
    }

    /// The current value of a fixed field (a subfield operand): from the key,
    /// with the pipeline state and the ND fields as a lookup would see them.
    fn read_field(ctx: &mut Ctx, field: Field) -> u128 {
        Self::reparse(ctx);
        Self::fill_state(ctx);
        Self::nd_flow(ctx);
        if field == Field::ConjId {
            return 0; // (as in Open vSwitch: conj_id is set only for the conj_id search itself)
        }
        if let Field::TunMetadata(i) = field {
            return Self::tun_metadata_value(ctx, i);
        }
        let slot = field.slot();
        let v = if slot.bits > 64 {
            (u128::from(ctx.base[slot.word]) << 64) | u128::from(ctx.base[slot.word + 1])
        } else {
            u128::from(ctx.base[slot.word] >> slot.shift) & crate::rule::ones(slot.bits)
        };
        match field {
            Field::VlanVid => v & 0x0fff,
            Field::ArpOp => v & 0xff, // (Open vSwitch keeps the ARP opcode in 8 bits)
            _ => v,
        }
    }

    /// Write a whole tunnel metadata field (pipeline state, `field::TUN_WORD`).
    fn write_tunnel(ctx: &mut Ctx, field: Field, value: u128) {
        let slot = field.slot();
        let w = slot.word - crate::field::TUN_WORD;
        ctx.tnl_set = true;
        ctx.dirty = true; // (as for tunnel_id: keeps the path cache from recording)
        if slot.bits > 64 {
            ctx.tnl[w] = (value >> 64) as u64;
            ctx.tnl[w + 1] = value as u64;
        } else {
            let m = crate::rule::ones(slot.bits) as u64;
            ctx.tnl[w] = (ctx.tnl[w] & !(m << slot.shift)) | ((value as u64 & m) << slot.shift);
        }
    }

    /// Write a whole fixed field: pipeline state, or the frame (a field the frame
    /// lacks is left alone, as set_field does).
    fn write_field(ctx: &mut Ctx, field: Field, value: u128) {
        match field {
            Field::PktMark => {
                ctx.mark = value as u32;
                Self::put_mark(ctx);
            }
            Field::Metadata => ctx.metadata = value as u64,
            Field::TunnelId => ctx.tunnel = value as u64,
            Field::TunSrc | Field::TunDst | Field::TunIpv6Src | Field::TunIpv6Dst | Field::TunGbpId | Field::TunGbpFlags | Field::TunFlags => Self::write_tunnel(ctx, field, value),
            f if crate::nsh::is_nsh(f) => Self::write_nsh(ctx, f, value),
            Field::TunMetadata(i) => Self::write_tun_metadata(ctx, i, value),
            Field::Reg(_) | Field::XReg(_) | Field::XXReg(_) if !ctx.regs_set => {
                ctx.regs_set = true;
                return Self::write_field(ctx, field, value);
            }
            Field::Reg(i) => {
                let (w, shift) = (usize::from(i) / 2, if i % 2 == 0 { 32 } else { 0 });
                ctx.regs[w] = (ctx.regs[w] & !(0xffff_ffffu64 << shift)) | ((value as u64 & 0xffff_ffff) << shift);
            }
            Field::XReg(i) => ctx.regs[usize::from(i)] = value as u64,
            Field::XXReg(i) => {
                ctx.regs[2 * usize::from(i)] = (value >> 64) as u64;
                ctx.regs[2 * usize::from(i) + 1] = value as u64;
            }
            Field::NwTtl => {
                Self::reparse(ctx);
                if actions::set_nw_ttl(&mut ctx.data, &ctx.h, value as u8) {
                    ctx.dirty = true;
                }
                return;
            }
            Field::MplsTtl => {
                Self::reparse(ctx);
                if actions::set_mpls_ttl(&mut ctx.data, &ctx.h, value as u8) {
                    ctx.dirty = true;
                }
                return;
            }
            Field::ArpOp => {
                // (Open vSwitch keeps the opcode in 8 bits: a move or load of the high byte is lost)
                Self::reparse(ctx);
                if actions::set_field(&mut ctx.data, &ctx.h, field, value & 0xff) {
                    ctx.dirty = true;
                }
                return;
            }
            Field::VlanVid => {
                Self::reparse(ctx);
                if actions::set_field(&mut ctx.data, &ctx.h, field, value | u128::from(crate::field::OFPVID_PRESENT)) {
                    ctx.dirty = true;
                }
                return;
            }
            _ => {
                Self::reparse(ctx);
                Self::set_nd_flow(ctx, field, value);
                if actions::set_field(&mut ctx.data, &ctx.h, field, value) {
                    ctx.dirty = true;
                }
                return;
            }
        }
        ctx.dirty = true; // (pipeline state changed: keeps the path cache from recording this path)
    }

    /// The packet's length as Open vSwitch's datapath checks it (`check_pkt_larger`):
    /// the frame without the Ethernet padding that follows an IPv4 or IPv6 packet.
    fn datapath_len(ctx: &Ctx) -> usize {
        let ip = ctx.h.ipv4_src.is_some() || ctx.h.ipv6_src.is_some();
        if ip && ctx.h.l4_end > ctx.h.l3_offset && ctx.h.l4_end <= ctx.data.len() {
            ctx.h.l4_end
        } else {
            ctx.data.len()
        }
    }

    /// Replace the `sf` bits of its field with the low bits of `bits`.
    fn write_subfield(ctx: &mut Ctx, sf: Subfield, bits: u128) {
        if tunwide::is_wide(&sf) {
            return Self::write_wide_subfield(ctx, &sf, bits); // (tun_metadata bits past 127)
        }
        let old = Self::read_field(ctx, sf.field);
        let mask = sf.mask();
        Self::write_field(ctx, sf.field, (old & !mask) | ((bits << sf.ofs) & mask));
    }

    /// A set_field (or move, load, pop) on an ND field changes the flow's value (see
    /// `Ctx::nd`) of any ICMPv6 packet, as Open vSwitch's does, even when the frame is
    /// not an ND message whose bytes could take it (a later move or lookup reads it).
    fn set_nd_flow(ctx: &mut Ctx, field: Field, value: u128) {
        if let (Field::Ipv6NdTarget | Field::Ipv6NdSll | Field::Ipv6NdTll, Some(nd)) = (field, ctx.nd.as_mut()) {
            if ctx.h.ip_proto == Some(58) {
                nd[match field { Field::Ipv6NdTarget => 0, Field::Ipv6NdSll => 1, _ => 2 }] = value;
                ctx.dirty = true;
            }
        }
    }

    /// Keep the ND fields of the key as the flow holds them (see `Ctx::nd`).
    #[inline]
    fn nd_flow(ctx: &mut Ctx) {
        let h = &ctx.h;
        if h.ip_proto != Some(58) {
            return;
        }
        let mac = |m: Option<[u8; 6]>| m.map_or(0, |m| m.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x)));
        let nd = *ctx.nd.get_or_insert_with(|| [h.nd_target.map_or(0, u128::from_be_bytes), mac(h.nd_sll), mac(h.nd_tll)]);
        // (OVS's classifier does not re-check prerequisites: after a set_field on
        // icmpv6_code/type the flow still holds the ND fields parsed on arrival)
        if h.eth_type == crate::parse::ETH_TYPE_IPV6 {
            ctx.base[6] = (nd[0] >> 64) as u64;
            ctx.base[7] = nd[0] as u64;
            ctx.base[12] = (nd[1] as u64) << 16;
            ctx.base[13] = (nd[2] as u64) << 16;
        }
    }

    /// Execute an action list; false when processing of the rule must stop
    /// (invalid TTL; with `ctx.abort` the whole packet is dropped).
    /// `run_list` at depth 0; when `last`, a final plain output moves the
    /// frame into its fate instead of copying it.
    fn run_list_final(&self, actions: &[Action], ctx: &mut Ctx, out: &mut Vec<Fate>, last: bool) -> bool {
        if let (true, Some((Action::Output { port, .. }, init))) = (last, actions.split_last()) {
            let port = *port;
            if port < OFPP_IN_PORT && port != ctx.in_port && self.has_port(port) {
                ctx.tail = false; // (init's last action is not the list's)
                if !self.run_list(init, ctx, out, 0) {
                    return false;
                }
                if !ctx.set.is_empty() {
                    // (a group's bucket resubmit found a rule that wrote the action set, which runs later)
                    self.output(port, ctx, out);
                    return true;
                }
                if self.tracing() {
                    self.note(|| format!("  output:{port}"));
                }
                out.push(Fate::Output { port, packet: Packet::marked(Self::datapath_frame(ctx).unwrap_or_else(|| std::mem::take(&mut ctx.data)), ctx.mark) });
                return true;
            }
        }
        self.run_list(actions, ctx, out, 0)
    }

    fn run_list(&self, actions: &[Action], ctx: &mut Ctx, out: &mut Vec<Fate>, depth: u32) -> bool {
        let tail = std::mem::take(&mut ctx.tail);
        for a in actions {
            if self.tracing() && depth == 0 {
                let s = a.to_string();
                self.note(|| format!("  {s}"));
            }
            Self::reparse(ctx);
            match a {
                // (Open vSwitch: output:TABLE from a rule is a lookup in table 0, as resubmit(,0))
                Action::Output { port: OFPP_TABLE, .. } => {
                    if !self.table_action(ctx, out, ctx.in_port, 0) {
                        return false;
                    }
                }
                Action::Output { port, .. } => self.output(*port, ctx, out),
                Action::OutputTrunc { port, max_len } => self.output_trunc(*port, *max_len, ctx, out),
                Action::Group(g) => {
                    if depth == 0 && ctx.nested.is_empty() && self.group_recirculates(*g) {
                        ctx.group_fork = Some((actions.iter().position(|x| std::ptr::eq(x, a)).unwrap_or(0), *g));
                        return false;
                    }
                    // (a group commits nothing itself, its buckets' outputs do and their commits stay: run_group;
                    // measured, push_vlan,group:1 with no bucket, or none that sends, then output(port=2,max_len=20): 24)
                    self.run_group(*g, ctx, out, depth);
                }
                Action::PushVlan { ethertype } => {
                    actions::push_vlan(&mut ctx.data, &ctx.h, *ethertype);
                    ctx.dirty = true;
                }
                Action::PopVlan => {
                    if !ctx.h.vlans.is_empty() {
                        actions::pop_vlan(&mut ctx.data, &ctx.h);
                        ctx.dirty = true;
                    }
                }
                Action::SetField { field: Field::PktMark, value } => {
                    ctx.mark = *value as u32;
                    Self::put_mark(ctx);
                }
                Action::SetField { field: f @ (Field::Reg(_) | Field::XReg(_) | Field::XXReg(_) | Field::NwTtl | Field::MplsTtl), value } => {
                    Self::write_field(ctx, *f, *value);
                }
                Action::SetMasked { field, value, mask } => {
                    let old = Self::read_field(ctx, *field);
                    let old = if *field == Field::VlanVid { old | u128::from(crate::field::OFPVID_PRESENT) } else { old };
                    Self::write_field(ctx, *field, (old & !mask) | (value & mask));
                }
                Action::Move { src, dst } if tunwide::is_wide(src) || tunwide::is_wide(dst) => Self::move_wide(ctx, src, dst),
                Action::StackPush(sf) if ctx.tmeta.is_some() || tunwide::is_wide(sf) => Self::push_wide(ctx, sf),
                Action::StackPop(sf) if ctx.tmeta.is_some() => Self::pop_wide(ctx, sf),
                Action::SetTunMetadataWide(s) => Self::set_tun_metadata_wide(ctx, s),
                Action::Move { src, dst } => {
                    let bits = Self::read_field(ctx, src.field) >> src.ofs;
                    Self::write_subfield(ctx, *dst, bits & crate::rule::ones(src.n_bits));
                }
                Action::StackPush(sf) => {
                    let bits = (Self::read_field(ctx, sf.field) >> sf.ofs) & crate::rule::ones(sf.n_bits);
                    ctx.stack.push(bits);
                }
                Action::StackPop(sf) => {
                    if let Some(bits) = ctx.stack.pop() {
                        Self::write_subfield(ctx, *sf, bits);
                    }
                }
                Action::Note | Action::Conjunction { .. } => {}
                Action::CheckPktLarger { pkt_len, dst } => {
                    Self::reparse(ctx);
                    ctx.committed.set(ctx.data.len()); // (a commit, as for ct)
                    let mut before = ctx.clone();
                    before.cpl.clear();
                    let larger = Self::datapath_len(ctx) > usize::from(*pkt_len);
                    ctx.cpl.push((before, None, larger));
                    Self::write_subfield(ctx, *dst, u128::from(larger));
                    ctx.dirty = true; // (the bit depends on the length, not on the key: no cached path past it)
                }
                Action::OutputReg { src, .. } => {
                    let v = Self::read_subfield(ctx, src);
                    if let Ok(port) = u16::try_from(v) {
                        // (an OpenFlow 1.0 port number: 0xff00 and up are the reserved ports)
                        let port = if port >= 0xff00 { u32::from(port) | 0xffff_0000 } else { u32::from(port) };
                        // (Open vSwitch: at TABLE's number the lookup in table 0 output:TABLE makes)
                        if port == OFPP_TABLE {
                            if !self.table_action(ctx, out, ctx.in_port, 0) {
                                return false;
                            }
                            continue;
                        }
                        self.output(port, ctx, out);
                    }
                }
                Action::Resubmit { in_port, table } => {
                    let port = if *in_port == OFPP_IN_PORT { ctx.in_port } else { *in_port };
                    let table = if *table == 255 { ctx.table } else { *table };
                    ctx.tail = tail && Self::ends(actions, a); // (the rule it finds may end the translation)
                    let ok = self.table_action(ctx, out, port, table);
                    ctx.tail = false;
                    if !ok {
                        return false;
                    }
                }
                Action::CtClear if !ctx.conntracked => {} // (Open vSwitch 3.1: no ct state of this translation to clear)
                Action::CtClear => {
                    ctx.ct = [0; 8];
                    ctx.ct_md = None;
                    ctx.ct_set = true;
                    ctx.dirty = true; // (pipeline state changed: keeps the path cache from recording this path)
                }
                Action::Ct(c) => {
                    ctx.committed.set(ctx.data.len());
                    let words = self.run_ct(c, ctx);
                    ctx.conntracked = false;
                    ctx.ct = [0; 8];
                    ctx.ct_set = true;
                    ctx.dirty = true;
                    if let Some(table) = c.table {
                        let mut copy = Box::new(ctx.clone());
                        copy.ct = words;
                        copy.conntracked = true;
                        copy.fork = None;
                        // (a recirculation is a new translation in Open vSwitch: fresh resubmit
                        // limits; the copy's own check_pkt_larger reruns and nested counts)
                        copy.cpl = Vec::new();
                        copy.no_rerun = false;
                        copy.depth = 0;
                        copy.resubmits = 0;
                        copy.nested = Vec::new();
                        copy.bucket_nat.get_mut().clear(); // (its flow is parsed from the datapath's frame)
                        copy.actset = actset::of_set(&copy.set); // (Open vSwitch rebuilds it from the frozen set)
                        // (the datapath recirculates the packet itself only as its last action)
                        copy.no_room |= !(tail && Self::ends(actions, a) && ctx.set.is_empty());
                        if depth > 0 || ctx.in_place {
                            // (no caller here can fork: the copy runs now, `pipeline/recirc.rs`)
                            self.recirculate_here(copy, table, ctx, out);
                            continue;
                        }
                        let at = actions.iter().position(|x| std::ptr::eq(x, a)).unwrap_or(0);
                        ctx.fork = Some((at, table, copy));
                        return false;
                    }
                }
                Action::Learn(l) => self.run_learn(l, ctx),
                Action::FinTimeout { idle, hard } => self.run_fin_timeout(*idle, *hard, ctx),
                Action::Controller(c) => self.run_controller(c, ctx, out),
                Action::Clone(nested) => {
                    ctx.tail = tail && Self::ends(actions, a) && ctx.set.is_empty(); // (a last clone runs inline)
                    if !self.run_clone(nested, ctx, out, depth) {
                        return false;
                    }
                }
                Action::Multipath(m) => {
                    Self::write_subfield(ctx, m.dst, u128::from(m.link(&ctx.h)));
                    ctx.dirty = true; // (a value computed from the key: keeps the path cache from recording)
                }
                Action::Bundle(b) => {
                    let chosen = b.choose(&ctx.h, |port| crate::hashsel::reserved_member_live(port).unwrap_or_else(|| self.port_live(port)));
                    ctx.dirty = true; // (the choice also depends on port liveness)
                    match (b.dst, chosen) {
                        (Some(dst), port) => Self::write_subfield(ctx, dst, u128::from(port.map_or(crate::hashsel::NO_MEMBER, |p| p as u16))),
                        // (Open vSwitch: TABLE, the lookup in table 0 output:TABLE makes)
                        (None, Some(OFPP_TABLE)) => {
                            if !self.table_action(ctx, out, ctx.in_port, 0) {
                                return false;
                            }
                        }
                        (None, Some(OFPP_ANY)) => {} // (OpenFlow 1.0's NONE: always live, outputs nothing)
                        (None, Some(port)) => self.output(port, ctx, out),
                        (None, None) => {}
                    }
                }
                Action::Exit => {
                    ctx.exited = true;
                    // Open vSwitch keeps an `exit` its translation met in a check's "larger"
                    // branch for everything after the check, so no action set runs again: so
                    // when the innermost check was larger, or the exit follows it in the same
                    // rule (the other branch meets it too). (An exit in a later rule of the
                    // "not larger" branch is taken as one the larger branch does not meet.)
                    if let Some((before, _, larger)) = ctx.cpl.last() {
                        ctx.no_rerun |= *larger || before.table == ctx.table;
                    }
                    return false;
                }
                Action::SetField { field: Field::Metadata, value } => {
                    ctx.metadata = *value as u64;
                    ctx.dirty = true; // (as for tunnel_id below)
                }
                Action::SetField { field: Field::TunnelId, value } => {
                    ctx.tunnel = *value as u64;
                    ctx.dirty = true; // (keeps the path cache from recording: later lookups see it)
                }
                Action::SetField { field: field @ (Field::TunSrc | Field::TunDst | Field::TunIpv6Src | Field::TunIpv6Dst | Field::TunGbpId | Field::TunGbpFlags | Field::TunFlags), value } => {
                    Self::write_tunnel(ctx, *field, *value);
                    ctx.dirty = true; // (as for tunnel_id)
                }
                Action::SetField { field, value } if crate::nsh::is_nsh(*field) => Self::write_nsh(ctx, *field, *value),
                Action::SetField { field: Field::TunMetadata(i), value } => Self::set_tun_metadata(ctx, *i, *value),
                Action::DeleteField(Field::TunMetadata(i)) => Self::delete_tun_metadata(ctx, *i),
                Action::DeleteField(_) => {}
                Action::SetField { field, value } => {
                    Self::set_nd_flow(ctx, *field, *value);
                    if actions::set_field(&mut ctx.data, &ctx.h, *field, *value) {
                        ctx.dirty = true;
                    }
                }
                Action::PushMpls { ethertype } => match actions::push_mpls(&mut ctx.data, &ctx.h, *ethertype) {
                    MplsResult::Done => {
                        ctx.dirty = true;
                        ctx.nd = None;
                    }
                    MplsResult::NoOp => {}
                    MplsResult::TooManyLabels => {
                        out.push(Fate::Drop { reason: DropReason::TooManyMplsLabels });
                        ctx.abort = true;
                        return false;
                    }
                },
                Action::PopMpls { ethertype } => match actions::pop_mpls(&mut ctx.data, &ctx.h, *ethertype) {
                    MplsResult::Done => {
                        ctx.dirty = true;
                        ctx.nd = None; // (OVS re-parses the packet after popping the last label)
                    }
                    MplsResult::NoOp => {}
                    MplsResult::TooManyLabels => {
                        out.push(Fate::Drop { reason: DropReason::TooManyMplsLabels });
                        ctx.abort = true;
                        return false;
                    }
                },
                Action::SetMplsTtl(t) => {
                    // (as OVS: on a frame without MPLS the rest of this action list is skipped)
                    if !actions::set_mpls_ttl(&mut ctx.data, &ctx.h, *t) {
                        return false;
                    }
                    ctx.dirty = true;
                }
                Action::DecMplsTtl => match actions::dec_mpls_ttl(&mut ctx.data, &ctx.h) {
                    TtlResult::Decremented => ctx.dirty = true,
                    TtlResult::NotIp => return false,
                    TtlResult::Expired => {
                        self.note(|| "dec_mpls_ttl: TTL expired -> controller (invalid_ttl), stop".into());
                        out.push(self.packet_in(ControllerReason::InvalidTtl, ctx));
                        return false;
                    }
                },
                Action::EncapNsh => Self::encap_nsh(ctx),
                Action::EncapEthernet => {} // (pipeline::encap: put on with the NSH header)
                Action::Decap => {
                    if !Self::decap(ctx) {
                        return false; // (the whole translation failed: `Ctx::decap_failed`)
                    }
                }
                Action::DecNshTtl => match Self::dec_nsh_ttl(ctx) {
                    TtlResult::Decremented => {}
                    TtlResult::NotIp => return false, // (as Open vSwitch: not NSH, the list stops)
                    TtlResult::Expired => {
                        self.note(|| "dec_nsh_ttl: TTL 0 or 1 -> controller (invalid_ttl), stop".into());
                        out.push(self.packet_in(ControllerReason::InvalidTtl, ctx));
                        return false;
                    }
                },
                Action::SetNwTtl(t) => {
                    if actions::set_nw_ttl(&mut ctx.data, &ctx.h, *t) {
                        ctx.dirty = true;
                    }
                }
                Action::SetQueue(_) => {}
                Action::DecTtl => match actions::dec_ttl(&mut ctx.data, &ctx.h) {
                    TtlResult::Decremented => ctx.dirty = true,
                    TtlResult::NotIp => {}
                    TtlResult::Expired => {
                        self.note(|| "dec_ttl: TTL expired -> controller (invalid_ttl), stop".into());
                        out.push(self.packet_in(ControllerReason::InvalidTtl, ctx));
                        return false;
                    }
                },
                Action::DecTtlIds(ids) => match actions::dec_ttl(&mut ctx.data, &ctx.h) {
                    TtlResult::Decremented => ctx.dirty = true,
                    TtlResult::NotIp => {}
                    TtlResult::Expired => {
                        self.note(|| format!("dec_ttl(ids): TTL expired -> packet-ins to ids {ids:?} (invalid_ttl), stop"));
                        self.dec_ttl_packet_ins(ids, ctx, out);
                        return false;
                    }
                },
                Action::PofAddField { offset, length, value } => {
                    if actions::pof_add(&mut ctx.data, *offset, *length, *value) {
                        ctx.dirty = true;
                    }
                }
                Action::PofDelField { offset, length } => {
                    if actions::pof_del(&mut ctx.data, *offset, *length) {
                        ctx.dirty = true;
                    }
                }
            }
        }
        true
    }

    /// Open vSwitch's resource check before a resubmit or goto lookup: false
    /// (and the packet marked to be dropped whole) past its depth or count limit.
    fn may_look_up(ctx: &mut Ctx) -> bool {
        if ctx.depth >= MAX_RESUBMIT_DEPTH || ctx.resubmits >= MAX_RESUBMITS {
            ctx.too_deep = true;
            return false;
        }
        true
    }

    /// A lookup's table and rule counters.
    fn count_lookup(&mut self, table: u8, found: Option<RuleId>, bytes: u64) {
        let t = &mut self.tables[usize::from(table)];
        t.lookups += 1;
        match found {
            Some(id) => {
                t.matched += 1;
                let s = &mut self.stats[id as usize];
                s.packets += 1;
                s.bytes += bytes;
            }
            None => t.missed += 1,
        }
    }

    /// A lookup in `table` from inside a rule (resubmit, or a goto of a
    /// resubmitted rule) as Open vSwitch's `xlate_table_action` makes it:
    /// the limits checked; `in_port` seen by this lookup only; a miss does
    /// nothing (the packet goes on with the next action); the rule found runs
    /// its instructions — apply-actions, clear-actions and write-actions on
    /// the packet's one action set, write-metadata, and its goto as one more
    /// such lookup — and the caller's actions go on after it, the table and
    /// rule a packet-in names restored. A lookup in the same or an earlier
    /// table nests one level deeper. False when nothing more may run (limit,
    /// `exit`, a dropped packet).
    fn table_action(&self, ctx: &mut Ctx, out: &mut Vec<Fate>, in_port: u32, table: u8) -> bool {
        if !Self::may_look_up(ctx) {
            return false;
        }
        ctx.resubmits += 1;
        let (old_table, old_rule) = (ctx.table, ctx.rule);
        let deepens = u32::from(table <= old_table);
        let found = self.lookup_nested(ctx, table, in_port);
        self.note(|| format!("  resubmit table {table} in_port {in_port}: {}", found.map_or("miss".into(), |id| format!("rule #{id}"))));
        if let Some(id) = found {
            ctx.table = table;
            ctx.rule = Some(id);
            ctx.depth += deepens;
            let was_in_place = std::mem::replace(&mut ctx.in_place, true);
            self.run_nested_rule(id, ctx, out);
            ctx.in_place = was_in_place;
            ctx.depth -= deepens;
        }
        ctx.table = old_table;
        ctx.rule = old_rule;
        !(ctx.abort || ctx.exited || ctx.too_deep)
    }

    /// `lookup` with `in_port` in the key, counted later (`Ctx::nested`).
    fn lookup_nested(&self, ctx: &mut Ctx, table: u8, in_port: u32) -> Option<RuleId> {
        let Some(t) = self.tables.get(usize::from(table)) else { return None };
        Self::lookup_key(ctx, &t.pof, &t.fold);
        let word0 = ctx.base[0];
        ctx.base[0] = (word0 & 0xffff_ffff) | (u64::from(in_port) << 32);
        let found = if t.conj.is_empty() { t.cls.lookup(&ctx.base).map(|(_, id)| id) } else { self.conj_lookup(&mut ctx.base, usize::from(table)) };
        ctx.base[0] = word0;
        ctx.nested.push((table, found, ctx.data.len() as u64));
        // (the path cache must not record this packet: its path has lookups it does not replay)
        ctx.dirty = true;
        found
    }

    /// The instructions of a rule a resubmit found (see `table_action`). A
    /// TTL exception skips the rest of this rule only, as in Open vSwitch.
    /// (Its meter instruction, if any, is not run: meters change state the
    /// shared borrow here cannot.)
    fn run_nested_rule(&self, id: RuleId, ctx: &mut Ctx, out: &mut Vec<Fate>) {
        let ins = &self.rules[id as usize].as_ref().unwrap().rule.instructions;
        ctx.tail &= ins.goto.is_none() && ins.write.is_empty();
        if !self.run_list(&ins.apply, ctx, out, 0) {
            return;
        }
        Self::after_apply(ins, ctx);
        if let Some(g) = ins.goto {
            self.table_action(ctx, out, ctx.in_port, g);
        }
    }

    /// A copy of the packet for the controller, with its table and the cookie
    /// of the rule that matched last.
    fn packet_in(&self, reason: ControllerReason, ctx: &Ctx) -> Fate {
        let cookie = ctx.rule.and_then(|id| self.rules[id as usize].as_ref()).map_or(u64::MAX, |s| s.rule.cookie);
        let mut meta = Vec::new();
        for (f, v) in [(Field::TunnelId, u128::from(ctx.tunnel)), (Field::Metadata, u128::from(ctx.metadata))] {
            if v != 0 {
                meta.push((f, v));
            }
        }
        if ctx.tnl_set {
            // (as Open vSwitch's flow_get_metadata: each tunnel field that is not 0)
            for f in [Field::TunSrc, Field::TunDst, Field::TunIpv6Src, Field::TunIpv6Dst, Field::TunGbpId, Field::TunGbpFlags, Field::TunFlags] {
                let (slot, w) = (f.slot(), f.slot().word - crate::field::TUN_WORD);
                let v = if slot.bits > 64 {
                    (u128::from(ctx.tnl[w]) << 64) | u128::from(ctx.tnl[w + 1])
                } else {
                    u128::from(ctx.tnl[w] >> slot.shift) & crate::rule::ones(slot.bits)
                };
                if v != 0 {
                    meta.push((f, v));
                }
            }
        }
        for i in 0..crate::field::N_REGS as u8 {
            let v = (ctx.regs[usize::from(i) / 2] >> if i % 2 == 0 { 32 } else { 0 }) & 0xffff_ffff;
            if v != 0 {
                meta.push((Field::Reg(i), u128::from(v)));
            }
        }
        if ctx.mark != 0 {
            meta.push((Field::PktMark, u128::from(ctx.mark)));
        }
        packet_in_ct::push_ct_meta(&ctx.ct, &ctx.base, &mut meta);
        Fate::Controller { reason, controller_id: 0, table: ctx.table, cookie, packet: Packet::new(Self::datapath_frame(ctx).unwrap_or_else(|| ctx.data.clone())), meta, userdata: Vec::new(), pending: None }
    }

    fn output(&self, port: u32, ctx: &Ctx, out: &mut Vec<Fate>) {
        let from = out.len();
        self.output_uncommitted(port, ctx, out);
        // (LOCAL too: Open vSwitch's bridge always has it, and an output to it commits, measured after encap)
        if port == OFPP_LOCAL || out[from..].iter().any(|f| !matches!(f, Fate::Drop { .. })) {
            ctx.committed.set(ctx.data.len()); // (Open vSwitch commits its pending header changes here)
        }
    }

    fn output_uncommitted(&self, port: u32, ctx: &Ctx, out: &mut Vec<Fate>) {
        let frame = Self::datapath_frame(ctx); // (a bucket's nat left in the datapath: bucket_nat.rs)
        let pkt = || Packet::marked(frame.clone().unwrap_or_else(|| ctx.data.clone()), ctx.mark);
        match port {
            OFPP_IN_PORT => out.push(Fate::Output { port: ctx.in_port, packet: pkt() }),
            OFPP_FLOOD | OFPP_ALL => {
                for &p in &self.port_list {
                    if p != ctx.in_port {
                        out.push(Fate::Output { port: p, packet: pkt() });
                    }
                }
            }
            OFPP_CONTROLLER => out.push(self.packet_in(ControllerReason::Action, ctx)),
            OFPP_NORMAL => self.run_normal(ctx, out),
            OFPP_TABLE | OFPP_LOCAL | OFPP_ANY => out.push(Fate::Drop { reason: DropReason::UnsupportedPort(port) }),
            p if p == ctx.in_port => out.push(Fate::Drop { reason: DropReason::OutputToInPort }),
            p if self.has_port(p) => out.push(Fate::Output { port: p, packet: pkt() }),
            p => out.push(Fate::Drop { reason: DropReason::UnknownPort(p) }),
        }
    }

    /// The buckets group `gid` runs for this packet, each as the action set Open vSwitch
    /// runs it as (None, with the drop noted, when it runs none).
    fn bucket_lists(&self, gid: u32, ctx: &mut Ctx, out: &mut Vec<Fate>, depth: u32) -> Option<Vec<(usize, Vec<Action>)>> {
        if depth >= MAX_GROUP_DEPTH {
            out.push(Fate::Drop { reason: DropReason::GroupLoop(gid) });
            return None;
        }
        // (Open vSwitch's xlate_group_action checks the resubmit limits first, and runs each
        // bucket one translation level deeper: a lookup loop through a bucket nests twice)
        if !Self::may_look_up(ctx) {
            return None;
        }
        let Some(g) = self.groups.get(&gid) else {
            out.push(Fate::Drop { reason: DropReason::UnknownGroup(gid) });
            return None;
        };
        let chosen: Vec<usize> = match g.kind {
            GroupType::All => (0..g.buckets.len()).collect(),
            GroupType::Indirect => vec![0],
            GroupType::Select => self.select_live_bucket(g, &ctx.h).into_iter().collect(),
            GroupType::FastFailover => self.first_live_bucket(g, &mut Liveness::default()).into_iter().collect(),
        };
        if chosen.is_empty() {
            out.push(Fate::Drop { reason: DropReason::NoBucket(gid) });
            return None;
        }
        Some(chosen
            .into_iter()
            .map(|i| {
                let mut set = ActionSet::default();
                set.write(&g.buckets[i].actions);
                (i, set.to_list())
            })
            .collect())
    }

    fn run_group(&self, gid: u32, ctx: &mut Ctx, out: &mut Vec<Fate>, depth: u32) {
        let Some(lists) = self.bucket_lists(gid, ctx, out, depth) else { return };
        for (i, list) in lists {
            self.note(|| format!("  group {gid} bucket {i}: {}", list.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")));
            let mut copy = ctx.clone();
            copy.depth += 1;
            self.run_list(&list, &mut copy, out, depth + 1);
            // (Open vSwitch rolls the flow back after a bucket but not its datapath: the frame
            // as a bucket's output committed it is the one a later output_trunc cuts, measured:
            // `group:1(push_vlan,output:3),output(port=2,max_len=20)` sends 16 bytes; trunc.rs)
            ctx.committed.set(copy.committed.get());
            bucket_leaks(ctx, copy);
        }
    }
}

impl Pipeline {
    /// Open vSwitch's bucket liveness: a bucket that watches nothing is live; else it
    /// is live if its watch port is live or its watch group has a live bucket. A
    /// group already on the way to the question counts as not live there (a watch
    /// cycle): the answer is then the least fixed point, which is what OVS's
    /// depth-limited recursion computes, and the walk gives up (not live) after
    /// `MAX_LIVENESS_STEPS` buckets, so no group table makes it run away.
    fn bucket_live(&self, b: &Bucket, walk: &mut Liveness) -> bool {
        if b.watch_port == OFPP_ANY && b.watch_group == OFPG_ANY {
            return true;
        }
        if b.watch_port != OFPP_ANY && b.watch_port != OFPP_CONTROLLER && self.port_live(b.watch_port) {
            return true;
        }
        b.watch_group != OFPG_ANY && self.group_live(b.watch_group, walk)
    }

    fn group_live(&self, gid: u32, walk: &mut Liveness) -> bool {
        if walk.path.contains(&gid) || walk.path.len() >= MAX_LIVENESS_DEPTH {
            return false;
        }
        let Some(g) = self.groups.get(&gid) else { return false };
        walk.path.push(gid);
        let live = self.first_live_bucket(g, walk).is_some();
        walk.path.pop();
        live
    }

    fn first_live_bucket(&self, g: &Group, walk: &mut Liveness) -> Option<usize> {
        g.buckets.iter().position(|b| {
            walk.steps += 1;
            walk.steps <= MAX_LIVENESS_STEPS && self.bucket_live(b, walk)
        })
    }

    /// A select group's bucket among its live ones (all of them when none watches anything).
    fn select_live_bucket(&self, g: &Group, h: &Headers) -> Option<usize> {
        if g.buckets.iter().all(|b| b.watch_port == OFPP_ANY && b.watch_group == OFPG_ANY) {
            return select_bucket(g, h);
        }
        let live: Vec<usize> = (0..g.buckets.len()).filter(|&i| self.bucket_live(&g.buckets[i], &mut Liveness::default())).collect();
        let sub = Group { id: g.id, kind: g.kind, buckets: live.iter().map(|&i| g.buckets[i].clone()).collect() };
        select_bucket(&sub, h).map(|k| live[k])
    }
}

/// What a bucket leaves behind. Open vSwitch rolls the packet back after each
/// bucket but not its action set, its stack or its resubmit count, which the rules
/// a bucket's `resubmit` finds may change (measured against OVS 3.1: a found rule's
/// write-actions run at the pipeline's end, its push is popped after the group); a
/// limit hit there drops the packet whole; the lookups made are counted.
fn bucket_leaks(ctx: &mut Ctx, mut copy: Ctx) {
    bucket_nat::leak(ctx, &mut copy); // (a bucket's nat stays in the datapath, not in the flow)
    ctx.set = copy.set;
    ctx.stack = copy.stack;
    ctx.resubmits = copy.resubmits;
    ctx.too_deep |= copy.too_deep;
    if copy.nested.len() > ctx.nested.len() {
        ctx.dirty = true; // (a lookup ran: the path cache must not record this packet, as in `lookup_nested`)
    }
    ctx.nested = copy.nested;
    // (the datapath's ct metadata is the packet's, not the flow's: a bucket's ct or ct_clear
    // leaves its cached connection to the next bucket's ct and the rest of the list,
    // `pipeline/bucket_ct.rs`)
    ctx.ct_md = copy.ct_md;
}

/// Weighted choice of a select-group bucket by a hash of the flow's addresses and ports.
fn select_bucket(g: &Group, h: &Headers) -> Option<usize> {
    if g.buckets.is_empty() {
        return None;
    }
    let mut x: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |b: &[u8]| {
        for &c in b {
            x = (x ^ u64::from(c)).wrapping_mul(0x100_0000_01b3);
        }
    };
    feed(&h.eth_src);
    feed(&h.eth_dst);
    feed(&h.eth_type.to_be_bytes());
    if let (Some(s), Some(d)) = (h.ipv4_src, h.ipv4_dst) {
        feed(&s);
        feed(&d);
    }
    if let (Some(s), Some(d)) = (h.ipv6_src, h.ipv6_dst) {
        feed(&s);
        feed(&d);
    }
    feed(&[h.ip_proto.unwrap_or(0)]);
    feed(&h.l4_src.unwrap_or(0).to_be_bytes());
    feed(&h.l4_dst.unwrap_or(0).to_be_bytes());
    let total: u64 = g.buckets.iter().map(|b| u64::from(b.weight)).sum();
    if total == 0 {
        return Some((x % g.buckets.len() as u64) as usize);
    }
    let mut r = x % total;
    for (i, b) in g.buckets.iter().enumerate() {
        if r < u64::from(b.weight) {
            return Some(i);
        }
        r -= u64::from(b.weight);
    }
    None
}

/// The ct_* key words of a tracker verdict (`field::Field::Ct*` slots).
fn ct_words(m: &crate::conntrack::CtMeta) -> [u64; 8] {
    let mut w = [0u64; 8];
    w[0] = (u64::from(m.state) << 32) | u64::from(m.mark);
    if let Some(t) = m.orig {
        let (sp, dp) = match m.icmp {
            Some((ty, code)) => (u16::from(ty), u16::from(code)),
            None => (t.sport, t.dport),
        };
        w[1] = (u64::from(m.zone) << 48) | (u64::from(t.proto) << 32) | (u64::from(sp) << 16) | u64::from(dp);
        w[4] = (t.src >> 64) as u64;
        w[5] = t.src as u64;
        w[6] = (t.dst >> 64) as u64;
        w[7] = t.dst as u64;
    } else {
        w[1] = u64::from(m.zone) << 48;
    }
    w[2] = (m.label >> 64) as u64;
    w[3] = m.label as u64;
    w
}
