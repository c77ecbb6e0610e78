//! Bindings for dp-core: the frame parser and the OpenFlow/POF pipeline.
//!
//! Rules cross the boundary as plain tuples (see `tandem.dataplane.convert`):
//! a match field is `(name_or_(offset, length), value, mask_or_None)`, an action
//! is `("output", port)`, `("push_vlan", ethertype)`, `("pop_vlan",)`,
//! `("set_field", field, value)`, `("dec_ttl",)` / `("dec_ttl", [controller ids])`, `("group", id)`,
//! `("pof_add", offset, length, value)`, `("pof_del", offset, length)`,
//! `("push_mpls", ethertype)`, `("pop_mpls", ethertype)`, `("set_mpls_ttl", ttl)`,
//! `("dec_mpls_ttl",)`, `("dec_nsh_ttl",)`, `("encap_nsh",)`, `("encap_ethernet",)`, `("decap",)`, `("set_nw_ttl", ttl)`, `("set_queue", queue_id)`,
//! `("set_masked", field, value, mask)`, `("move", src, dst)`, `("push", sf)`,
//! `("pop", sf)`, `("note",)`, `("exit",)` or `("learn", specs, table, priority, idle_timeout,
//! hard_timeout, cookie, send_flow_rem, delete_learned, limit, result_dst)` (a spec
//! `(kind, src, value, dst, n_bits)`: kind match / load / output, src and dst subfields or
//! None), a subfield being `(field, offset, n_bits)`.
//! Conversions only: no data-plane logic lives here.

use dp_core::field::Field;
use dp_core::pipeline::{self as pl, Action, Bucket, Fate, FieldMatch, FlowModCommand, Group, GroupType, Instructions, Packet, Pipeline, Rule, Subfield};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::time::Instant;

fn mac(b: &[u8; 6]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

fn ipv4(b: &[u8; 4]) -> String {
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// Parse an Ethernet frame (bytes) and return its header fields as a dict.
/// Raises ValueError naming the layer when the frame cannot be parsed.
#[pyfunction]
fn parse_frame<'py>(py: Python<'py>, frame: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let h = dp_core::parse_frame(frame).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    d.set_item("eth_dst", mac(&h.eth_dst))?;
    d.set_item("eth_src", mac(&h.eth_src))?;
    d.set_item("eth_type", h.eth_type)?;
    let vlans: Vec<(u16, u8, u16)> = h.vlans.iter().map(|v| (v.tpid, v.pcp, v.vid)).collect();
    d.set_item("vlans", vlans)?;
    d.set_item("ipv4_src", h.ipv4_src.as_ref().map(ipv4))?;
    d.set_item("ipv4_dst", h.ipv4_dst.as_ref().map(ipv4))?;
    d.set_item("ipv6_src", h.ipv6_src.map(u128::from_be_bytes))?;
    d.set_item("ipv6_dst", h.ipv6_dst.map(u128::from_be_bytes))?;
    d.set_item("ip_proto", h.ip_proto)?;
    d.set_item("ip_dscp", h.ip_dscp)?;
    d.set_item("ip_ecn", h.ip_ecn)?;
    d.set_item("ip_ttl", h.ip_ttl)?;
    d.set_item("arp_op", h.arp_op)?;
    d.set_item("mpls_label", h.mpls_label)?;
    d.set_item("l4_src", h.l4_src)?;
    d.set_item("l4_dst", h.l4_dst)?;
    d.set_item("truncated", h.truncated)?;
    Ok(d)
}

pub(crate) fn field_of(obj: &Bound<'_, PyAny>) -> PyResult<Field> {
    if let Ok(name) = obj.extract::<String>() {
        return Field::from_name(&name).ok_or_else(|| PyValueError::new_err(format!("unknown field {name:?}")));
    }
    let (offset, length): (u32, u32) = obj.extract().map_err(|_| PyValueError::new_err("a field is a name or an (offset, length) POF pair"))?;
    Ok(Field::Pof { offset, length })
}

fn hash_fields_of(code: u16) -> PyResult<dp_core::ovs_hash::HashFields> {
    dp_core::ovs_hash::HashFields::from_code(code).ok_or_else(|| PyValueError::new_err(format!("unknown hash fields {code}")))
}

pub(crate) fn action_of(t: &Bound<'_, PyTuple>) -> PyResult<Action> {
    let kind: String = t.get_item(0)?.extract()?;
    let arg = |i: usize| t.get_item(i);
    Ok(match kind.as_str() {
        "output" => Action::Output { port: arg(1)?.extract()?, max_len: if t.len() > 2 { arg(2)?.extract()? } else { 0xffff } },
        "push_vlan" => Action::PushVlan { ethertype: arg(1)?.extract()? },
        "pop_vlan" => Action::PopVlan,
        "set_field" => Action::SetField { field: field_of(&arg(1)?)?, value: arg(2)?.extract()? },
        "dec_ttl" if t.len() > 1 => Action::DecTtlIds(arg(1)?.extract::<Vec<u16>>()?.into()),
        "dec_ttl" => Action::DecTtl,
        "group" => Action::Group(arg(1)?.extract()?),
        "pof_add" => Action::PofAddField { offset: arg(1)?.extract()?, length: arg(2)?.extract()?, value: arg(3)?.extract()? },
        "pof_del" => Action::PofDelField { offset: arg(1)?.extract()?, length: arg(2)?.extract()? },
        "push_mpls" => Action::PushMpls { ethertype: arg(1)?.extract()? },
        "pop_mpls" => Action::PopMpls { ethertype: arg(1)?.extract()? },
        "set_mpls_ttl" => Action::SetMplsTtl(arg(1)?.extract()?),
        "dec_mpls_ttl" => Action::DecMplsTtl,
        "dec_nsh_ttl" => Action::DecNshTtl,
        "encap_nsh" => Action::EncapNsh,
        "encap_ethernet" => Action::EncapEthernet,
        "decap" => Action::Decap,
        "set_nw_ttl" => Action::SetNwTtl(arg(1)?.extract()?),
        "set_queue" => Action::SetQueue(arg(1)?.extract()?),
        "set_masked" => Action::SetMasked { field: field_of(&arg(1)?)?, value: arg(2)?.extract()?, mask: arg(3)?.extract()? },
        "move" => Action::Move { src: operand_of(&arg(1)?)?, dst: operand_of(&arg(2)?)? },
        "push" => Action::StackPush(operand_of(&arg(1)?)?),
        "pop" => Action::StackPop(operand_of(&arg(1)?)?),
        "note" => Action::Note,
        "exit" => Action::Exit,
        "fin_timeout" => Action::FinTimeout { idle: arg(1)?.extract()?, hard: arg(2)?.extract()? },
        "delete_field" => Action::DeleteField(field_of(&arg(1)?)?),
        // ("set_tun_metadata_wide", N, value limbs, mask limbs): bits 128k.. in limb k (dp_core::tunwide)
        "set_tun_metadata_wide" => Action::SetTunMetadataWide(Box::new(dp_core::tunwide::WideSet { opt: arg(1)?.extract()?, value: arg(2)?.extract()?, mask: arg(3)?.extract()? })),
        "check_pkt_larger" => Action::CheckPktLarger { pkt_len: arg(1)?.extract()?, dst: narrow_operand_of(&arg(2)?)? },
        "conjunction" => Action::Conjunction { id: arg(1)?.extract()?, k: arg(2)?.extract()?, n: arg(3)?.extract()? },
        "output_reg" => Action::OutputReg { src: narrow_operand_of(&arg(1)?)?, max_len: arg(2)?.extract()? },
        "resubmit" => Action::Resubmit { in_port: arg(1)?.extract()?, table: arg(2)?.extract()? },
        "ct_clear" => Action::CtClear,
        // ("multipath", fields code, basis, algorithm code, n_links, arg, dst)
        "multipath" => Action::Multipath(Box::new(dp_core::hashsel::Multipath {
            fields: hash_fields_of(arg(1)?.extract()?)?,
            basis: arg(2)?.extract()?,
            algorithm: dp_core::ovs_hash::MultipathAlgorithm::from_code(arg(3)?.extract()?).ok_or_else(|| PyValueError::new_err("unknown multipath algorithm"))?,
            n_links: arg(4)?.extract()?,
            arg: arg(5)?.extract()?,
            dst: narrow_operand_of(&arg(6)?)?,
        })),
        // ("bundle", fields code, basis, hrw, members, dst or None)
        "bundle" => {
            let dst = arg(5)?;
            Action::Bundle(Box::new(dp_core::hashsel::Bundle {
                fields: hash_fields_of(arg(1)?.extract()?)?,
                basis: arg(2)?.extract()?,
                hrw: arg(3)?.extract()?,
                members: arg(4)?.extract()?,
                dst: if dst.is_none() { None } else { Some(narrow_operand_of(&dst)?) },
            }))
        }
        // ("ct", commit, force, zone, zone subfield or None, table or None, (mark, mask) or None, (label, mask) or None[, nat[, alg port or 0]])
        "ct" => {
            let zone_src = arg(4)?;
            Action::Ct(Box::new(dp_core::rule::CtAction {
                commit: arg(1)?.extract()?,
                force: arg(2)?.extract()?,
                zone: arg(3)?.extract()?,
                zone_src: if zone_src.is_none() { None } else { Some(narrow_operand_of(&zone_src)?) },
                table: arg(5)?.extract()?,
                set_mark: arg(6)?.extract()?,
                set_label: arg(7)?.extract()?,
                nat: if t.len() > 8 { nat_of(&arg(8)?)? } else { None },
                alg: if t.len() > 9 { dp_core::ct_alg::Alg::from_port(arg(9)?.extract()?) } else { None },
            }))
        }
        "learn" => Action::Learn(Box::new(learn_of(t)?)),
        // ("controller", max_len, controller id, reason number 0..255, userdata[, meter id or None])
        "controller" => Action::Controller(Box::new(dp_core::rule::ControllerAction {
            max_len: arg(1)?.extract()?,
            controller_id: arg(2)?.extract()?,
            reason: dp_core::ControllerReason::of_action(arg(3)?.extract()?),
            userdata: arg(4)?.extract()?,
            meter_id: if t.len() > 5 { arg(5)?.extract()? } else { None },
        })),
        "output_trunc" => Action::OutputTrunc { port: arg(1)?.extract()?, max_len: arg(2)?.extract()? },
        "clone" => Action::Clone(arg(1)?.extract::<Vec<Bound<'_, PyTuple>>>()?.iter().map(action_of).collect::<PyResult<_>>()?),
        other => return Err(PyValueError::new_err(format!("unknown action kind {other:?}"))),
    })
}

/// A group bucket from Python: (actions, weight, watch_port, watch_group).
pub(crate) type PyBucket<'py> = (Vec<Bound<'py, PyTuple>>, u16, u32, u32);

/// A group from its Python form (kind: all / select / indirect / fast_failover).
pub(crate) fn group_of(id: u32, kind: &str, buckets: Vec<PyBucket<'_>>) -> PyResult<Group> {
    let kind = match kind {
        "all" => GroupType::All,
        "select" => GroupType::Select,
        "indirect" => GroupType::Indirect,
        "fast_failover" => GroupType::FastFailover,
        k => return Err(PyValueError::new_err(format!("unknown group type {k:?}"))),
    };
    let buckets = buckets
        .into_iter()
        .map(|(a, weight, watch_port, watch_group)| Ok(Bucket { actions: actions_of(a)?, weight, watch_port, watch_group }))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Group { id, kind, buckets })
}

/// A subfield `(field name, offset, n_bits)`.
fn subfield_of(obj: &Bound<'_, PyAny>) -> PyResult<Subfield> {
    checked_subfield(obj, Subfield::valid)
}

fn checked_subfield(obj: &Bound<'_, PyAny>, fits: fn(&Subfield) -> bool) -> PyResult<Subfield> {
    let (name, ofs, n_bits): (Bound<'_, PyAny>, u32, u32) = obj.extract()?;
    let sf = Subfield { field: field_of(&name)?, ofs, n_bits };
    if !fits(&sf) {
        return Err(PyValueError::new_err(format!("subfield {sf} does not fit its field")));
    }
    Ok(sf)
}

/// A move, push or pop operand: a subfield, or any bits of a `tun_metadataN` (up to 992).
fn operand_of(obj: &Bound<'_, PyAny>) -> PyResult<Subfield> {
    checked_subfield(obj, Subfield::valid_operand)
}

/// An operand of output:FIELD, check_pkt_larger, multipath, bundle_load or ct's zone: a
/// subfield, or at most 128 bits anywhere in a `tun_metadataN` (dp-core `pipeline/tunwide.rs`).
fn narrow_operand_of(obj: &Bound<'_, PyAny>) -> PyResult<Subfield> {
    checked_subfield(obj, |sf| sf.valid() || sf.valid_operand() && sf.n_bits <= 128)
}

/// The `("learn", ...)` tuple (see the module doc).
fn learn_of(t: &Bound<'_, PyTuple>) -> PyResult<dp_core::learn::Learn> {
    use dp_core::learn::{Learn, LearnDst, LearnSpec, LearnSrc};
    let arg = |i: usize| t.get_item(i);
    let opt_sf = |o: Bound<'_, PyAny>| -> PyResult<Option<Subfield>> { if o.is_none() { Ok(None) } else { subfield_of(&o).map(Some) } };
    let mut specs = Vec::new();
    for spec in arg(1)?.extract::<Vec<Bound<'_, PyTuple>>>()? {
        let kind: String = spec.get_item(0)?.extract()?;
        let n_bits: u32 = spec.get_item(4)?.extract()?;
        let src = match opt_sf(spec.get_item(1)?)? {
            Some(sf) => LearnSrc::Field(sf),
            None => LearnSrc::Imm(spec.get_item(2)?.extract()?),
        };
        let dst = opt_sf(spec.get_item(3)?)?;
        let dst = match (kind.as_str(), dst) {
            ("match", Some(sf)) => LearnDst::Match(sf),
            ("load", Some(sf)) => LearnDst::Load(sf),
            ("output", None) => LearnDst::Output,
            _ => return Err(PyValueError::new_err(format!("learn: bad {kind} spec"))),
        };
        specs.push(LearnSpec { src, dst, n_bits });
    }
    Ok(Learn {
        specs,
        table: arg(2)?.extract()?,
        priority: arg(3)?.extract()?,
        idle_timeout: arg(4)?.extract()?,
        hard_timeout: arg(5)?.extract()?,
        cookie: arg(6)?.extract()?,
        send_flow_rem: arg(7)?.extract()?,
        delete_learned: arg(8)?.extract()?,
        limit: arg(9)?.extract()?,
        result_dst: opt_sf(arg(10)?)?,
        fin_idle_timeout: if t.len() > 11 { arg(11)?.extract()? } else { 0 },
        fin_hard_timeout: if t.len() > 12 { arg(12)?.extract()? } else { 0 },
    })
}

/// A learned flow's actions back as tuples (learned flows hold loads and outputs only).
fn learned_action_py<'py>(py: Python<'py>, a: &Action) -> PyResult<Bound<'py, PyTuple>> {
    match a {
        Action::SetMasked { field, value, mask } => PyTuple::new(py, [("set_masked").into_pyobject(py)?.into_any(), field.name().into_pyobject(py)?.into_any(), value.into_pyobject(py)?.into_any(), mask.into_pyobject(py)?.into_any()]),
        Action::Output { port, max_len } => PyTuple::new(py, [("output").into_pyobject(py)?.into_any(), port.into_pyobject(py)?.into_any(), max_len.into_pyobject(py)?.into_any()]),
        Action::FinTimeout { idle, hard } => PyTuple::new(py, [("fin_timeout").into_pyobject(py)?.into_any(), idle.into_pyobject(py)?.into_any(), hard.into_pyobject(py)?.into_any()]),
        other => Err(PyValueError::new_err(format!("a learned flow cannot hold {other}"))),
    }
}

/// A rule's match as `(name, value, mask_or_None)` tuples.
fn matches_py(r: &Rule) -> Vec<(String, u128, Option<u128>)> {
    r.matches.iter().map(|m| (m.field.name(), m.value, m.mask)).collect()
}

pub(crate) type MatchPy = Vec<(String, u128, Option<u128>)>;
/// (table, priority, cookie, idle_timeout, hard_timeout, send_flow_rem, matches, actions, packets, bytes)
pub(crate) type LearnedPy<'py> = (u8, u16, u64, u16, u16, bool, MatchPy, Vec<Bound<'py, PyTuple>>, u64, u64);
/// (table, priority, cookie, reason, duration_ns, idle_timeout, hard_timeout, packets, bytes, matches, rule id)
pub(crate) type RemovedPy = (u8, u16, u64, &'static str, u64, u16, u16, u64, u64, MatchPy, u32);

/// A pipeline's learned flows, in install order.
pub(crate) fn learned_flows_py<'py>(py: Python<'py>, p: &Pipeline) -> PyResult<Vec<LearnedPy<'py>>> {
    p.learned_flows()
        .into_iter()
        .map(|(id, r, idle, hard, sfr)| {
            let acts = r.instructions.apply.iter().map(|a| learned_action_py(py, a)).collect::<PyResult<Vec<_>>>()?;
            let st = p.rule_stats(id).unwrap_or_default();
            Ok((r.table, r.priority, r.cookie, idle, hard, sfr, matches_py(r), acts, st.packets, st.bytes))
        })
        .collect()
}

/// A pipeline's FLOW_REMOVED records of timed rules with send_flow_rem, oldest first.
pub(crate) fn take_removed_py(p: &mut Pipeline) -> Vec<RemovedPy> {
    p.take_removed()
        .into_iter()
        .map(|r| (r.rule.table, r.rule.priority, r.rule.cookie, r.reason.name(), r.duration_ns, r.idle_timeout, r.hard_timeout, r.stats.packets, r.stats.bytes, matches_py(&r.rule), r.id))
        .collect()
}

/// The frames of `Output` fates as (port, bytes).
pub(crate) fn normal_outputs(py: Python<'_>, fates: Vec<Fate>) -> Vec<(u32, Bound<'_, PyBytes>)> {
    fates.into_iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((port, PyBytes::new(py, &packet.data))) } else { None }).collect()
}

pub(crate) fn actions_of(list: Vec<Bound<'_, PyTuple>>) -> PyResult<Vec<Action>> {
    list.iter().map(action_of).collect()
}

pub(crate) fn matches_of(list: Vec<Bound<'_, PyTuple>>) -> PyResult<Vec<FieldMatch>> {
    list.iter()
        .map(|t| Ok(FieldMatch { field: field_of(&t.get_item(0)?)?, value: t.get_item(1)?.extract()?, mask: t.get_item(2)?.extract()? }))
        .collect()
}

/// One flow mod as Python passes it to `Pipeline.flow_mod` and
/// `Emulator.switch_flow_mod`: a dict with these keys (`tandem.dataplane.convert.
/// flow_mod_args` builds it). Matches are (field, value, mask) tuples, actions
/// the tuples of `actions_of`.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct FlowModArgs<'py> {
    command: String,
    table: u8,
    priority: u16,
    cookie: u64,
    matches: Vec<Bound<'py, PyTuple>>,
    apply: Vec<Bound<'py, PyTuple>>,
    clear: bool,
    write: Vec<Bound<'py, PyTuple>>,
    write_metadata: Option<(u64, u64)>,
    goto: Option<u8>,
    #[pyo3(default = 0xffff_ffff)]
    out_port: u32,
    #[pyo3(default = 0xffff_ffff)]
    out_group: u32,
    #[pyo3(default)]
    all_tables: bool,
    #[pyo3(default)]
    meter: Option<u32>,
    #[pyo3(default)]
    idle_timeout: u16,
    #[pyo3(default)]
    hard_timeout: u16,
    #[pyo3(default)]
    send_flow_rem: bool,
}

/// What a `FlowModArgs` asks for, in dp-core terms.
pub(crate) struct FlowModReq {
    pub cmd: FlowModCommand,
    pub rule: Rule,
    pub out_port: u32,
    pub out_group: u32,
    pub all_tables: bool,
    pub timeouts: pl::Timeouts,
}

impl FlowModArgs<'_> {
    pub(crate) fn into_req(self) -> PyResult<FlowModReq> {
        let cmd = match self.command.as_str() {
            "add" => FlowModCommand::Add,
            "modify" => FlowModCommand::Modify,
            "modify_strict" => FlowModCommand::ModifyStrict,
            "delete" => FlowModCommand::Delete,
            "delete_strict" => FlowModCommand::DeleteStrict,
            c => return Err(PyValueError::new_err(format!("unknown flow-mod command {c:?}"))),
        };
        let rule = Rule {
            table: self.table,
            priority: self.priority,
            cookie: self.cookie,
            matches: matches_of(self.matches)?,
            instructions: Instructions {
                meter: self.meter,
                apply: actions_of(self.apply)?,
                clear: self.clear,
                write: actions_of(self.write)?,
                write_metadata: self.write_metadata,
                goto: self.goto,
            },
        };
        let timeouts = pl::Timeouts { idle: self.idle_timeout, hard: self.hard_timeout, send_flow_rem: self.send_flow_rem };
        Ok(FlowModReq { cmd, rule, out_port: self.out_port, out_group: self.out_group, all_tables: self.all_tables, timeouts })
    }
}

/// A meter configuration from Python: bands are (kind, rate, burst_size, prec_level),
/// kind "drop" or "dscp_remark".
pub(crate) fn meter_config_of(id: u32, pktps: bool, burst: bool, stats: bool, bands: Vec<(String, u32, u32, u8)>) -> PyResult<dp_core::meter::MeterConfig> {
    use dp_core::meter::{Band, BandKind, MeterConfig};
    let bands = bands
        .into_iter()
        .map(|(kind, rate, burst_size, prec)| {
            let kind = match kind.as_str() {
                "drop" => BandKind::Drop,
                "dscp_remark" => BandKind::DscpRemark { prec_level: prec },
                k => return Err(PyValueError::new_err(format!("unknown meter band type {k:?}"))),
            };
            Ok(Band { kind, rate, burst_size })
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(MeterConfig { id, pktps, burst, stats, bands })
}

/// Apply a meter mod to a pipeline: command add / modify / delete.
pub(crate) fn meter_mod_on(p: &mut pl::Pipeline, command: &str, id: u32, pktps: bool, burst: bool, stats: bool, bands: Vec<(String, u32, u32, u8)>) -> PyResult<bool> {
    match command {
        "add" => p.add_meter(meter_config_of(id, pktps, burst, stats, bands)?).map(|_| true),
        "modify" => p.modify_meter(meter_config_of(id, pktps, burst, stats, bands)?).map(|_| true),
        "delete" => return Ok(p.remove_meter(id)),
        c => return Err(PyValueError::new_err(format!("unknown meter-mod command {c:?}"))),
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// (packets_in, bytes_in, [(band packets, band bytes)], since_ns) of meter `id`.
pub(crate) fn meter_stats_of(p: &pl::Pipeline, id: u32) -> Option<(u64, u64, Vec<(u64, u64)>, u64)> {
    p.meters().counters(id).map(|c| (c.packets_in, c.bytes_in, c.bands.clone(), c.since_ns))
}

/// CPU time this thread has run, in seconds (Linux schedstat), if available.
fn thread_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

fn err(e: pl::PipelineError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn fate_py<'py>(py: Python<'py>, f: &Fate) -> PyResult<Bound<'py, PyTuple>> {
    match f {
        Fate::Output { port, packet } => ("output", *port, PyBytes::new(py, &packet.data)).into_pyobject(py),
        Fate::Controller { reason, table, cookie, packet, meta, userdata, .. } => {
            let meta: Vec<(String, u128)> = meta.iter().map(|(f, v)| (f.name(), *v)).collect();
            ("controller", reason.name(), PyBytes::new(py, &packet.data), *table, *cookie, meta, PyBytes::new(py, userdata))
                .into_pyobject(py)
        }
        Fate::Drop { reason } => ("drop", reason.name(), reason.to_string()).into_pyobject(py),
    }
}

/// One OpenFlow 1.3 + POF switch pipeline (dp_core::Pipeline).
#[pyclass(name = "Pipeline", module = "tandem._dp")]
pub struct PyPipeline {
    inner: Pipeline,
}

#[pymethods]
impl PyPipeline {
    #[new]
    fn new(n_tables: usize) -> Self {
        PyPipeline { inner: Pipeline::new(n_tables) }
    }

    fn add_port(&mut self, port: u32) {
        self.inner.add_port(port);
    }

    fn ports(&self) -> Vec<u32> {
        self.inner.ports().to_vec()
    }

    #[getter]
    fn get_drop_malformed(&self) -> bool {
        self.inner.drop_malformed
    }
    #[setter]
    fn set_drop_malformed(&mut self, v: bool) {
        self.inner.drop_malformed = v;
    }

    fn set_cache_enabled(&mut self, on: bool) {
        self.inner.set_cache_enabled(on);
    }

    /// Flow-mod: `fm` is a `FlowModArgs` dict (command add / modify / modify_strict /
    /// delete / delete_strict). Returns the ids of the rules added, changed or removed.
    fn flow_mod(&mut self, fm: FlowModArgs<'_>) -> PyResult<Vec<u32>> {
        let r = fm.into_req()?;
        self.inner.flow_mod_timed(r.cmd, r.rule, r.out_port, r.out_group, r.all_tables, r.timeouts).map_err(err)
    }

    fn remove_rule(&mut self, id: u32) -> bool {
        self.inner.remove_rule(id).is_some()
    }

    /// The flows `learn` installed (`learned_flows_py`).
    fn learned_flows<'py>(&self, py: Python<'py>) -> PyResult<Vec<LearnedPy<'py>>> {
        learned_flows_py(py, &self.inner)
    }

    /// [(rule id, idle, hard)] of the timed rules that are no learned flows, with their
    /// timeouts now (`Pipeline::timed_rules`: a fin_timeout may have shrunk them).
    fn timed_rules(&self) -> Vec<(u32, u16, u16)> {
        self.inner.timed_rules().into_iter().map(|(id, t)| (id, t.idle, t.hard)).collect()
    }

    /// FLOW_REMOVED records of learned flows since the last call (`take_removed_py`).
    fn take_removed(&mut self) -> Vec<RemovedPy> {
        take_removed_py(&mut self.inner)
    }

    fn n_rules(&self) -> usize {
        self.inner.n_rules()
    }

    /// (packets, bytes) matched by rule `id`, or None.
    fn rule_stats(&self, id: u32) -> Option<(u64, u64)> {
        self.inner.rule_stats(id).map(|s| (s.packets, s.bytes))
    }

    /// kind: all / select / indirect / fast_failover; buckets: [(actions, weight, watch_port, watch_group)].
    fn add_group(&mut self, id: u32, kind: &str, buckets: Vec<PyBucket<'_>>) -> PyResult<()> {
        self.inner.add_group(group_of(id, kind, buckets)?).map_err(err)
    }

    /// Mark port `port` live or not (link/admin state: fast-failover liveness). False if no such port.
    fn set_port_live(&mut self, port: u32, live: bool) -> bool {
        self.inner.set_port_live(port, live)
    }

    /// OpenFlow METER_MOD: command add / modify / delete; bands
    /// [(kind, rate, burst_size, prec_level)]. Delete returns whether it existed.
    #[pyo3(signature = (command, id, pktps=false, burst=false, stats=false, bands=vec![]))]
    fn meter_mod(&mut self, command: &str, id: u32, pktps: bool, burst: bool, stats: bool, bands: Vec<(String, u32, u32, u8)>) -> PyResult<bool> {
        meter_mod_on(&mut self.inner, command, id, pktps, burst, stats, bands)
    }

    fn meter_stats(&self, id: u32) -> Option<(u64, u64, Vec<(u64, u64)>, u64)> {
        meter_stats_of(&self.inner, id)
    }

    fn meter_ids(&self) -> Vec<u32> {
        self.inner.meters().ids()
    }

    /// The modelled time (ns) meters run on, for the packets processed next.
    fn set_now_ns(&mut self, now_ns: u64) {
        self.inner.set_now_ns(now_ns)
    }

    /// Mark `port` no-flood (OFPPC_NO_FLOOD) or not: `output:NORMAL` floods past it.
    fn set_no_flood(&mut self, port: u32, no_flood: bool) {
        self.inner.set_no_flood(port, no_flood)
    }

    /// NORMAL's MAC aging time (s) and table size (Open vSwitch's `mac-aging-time`,
    /// `mac-table-size`, clamped as it clamps them).
    fn set_mac_table_config(&mut self, idle_time: u32, max_entries: usize) {
        self.inner.set_mac_table_config(idle_time, max_entries)
    }

    /// NORMAL's MAC table at the modelled time: [(port, vlan, mac, age_s)], least recently used first.
    fn mac_entries(&mut self) -> Vec<(u32, u16, u64, i64)> {
        self.inner.mac_entries().into_iter().map(|e| (e.port, e.vlan, e.mac, e.age)).collect()
    }

    /// Forget every learned MAC.
    fn flush_macs(&mut self) {
        self.inner.flush_macs()
    }

    /// A PACKET_OUT's `output:NORMAL` on this pipeline's MAC table: [(port, frame)].
    fn packet_out_normal<'py>(&mut self, py: Python<'py>, in_port: u32, frame: Vec<u8>) -> Vec<(u32, Bound<'py, PyBytes>)> {
        normal_outputs(py, self.inner.packet_out_normal(Packet::new(frame), in_port))
    }

    /// The connection tracker's size limit (commits beyond it are not kept).
    fn set_ct_limit(&mut self, limit: usize) {
        self.inner.set_ct_limit(limit)
    }

    /// (connections tracked, commits refused because the table was full).
    fn ct_stats(&self) -> (usize, u64) {
        self.inner.ct_stats()
    }

    fn remove_group(&mut self, id: u32) -> bool {
        self.inner.remove_group(id)
    }

    /// Fates of one frame: ("output", port, bytes) / ("controller", reason, bytes) / ("drop", reason, text).
    fn process<'py>(&mut self, py: Python<'py>, in_port: u32, frame: &[u8]) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let fates = self.inner.process(Packet::new(frame.to_vec()), in_port);
        fates.iter().map(|f| fate_py(py, f)).collect()
    }

    /// A PACKET_OUT run on this pipeline: `actions` (as `actions_of` takes them) on
    /// `frame` from `in_port`, with its groups, tables and tracker (dp_core's `packet_out`).
    fn packet_out<'py>(&mut self, py: Python<'py>, in_port: u32, actions: Vec<Bound<'py, PyTuple>>, frame: &[u8]) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let acts = actions_of(actions)?;
        let fates = self.inner.packet_out(Packet::new(frame.to_vec()), in_port, &acts);
        fates.iter().map(|f| fate_py(py, f)).collect()
    }

    /// (fates, trace lines) of one frame.
    fn trace<'py>(&mut self, py: Python<'py>, in_port: u32, frame: &[u8]) -> PyResult<(Vec<Bound<'py, PyTuple>>, Vec<String>)> {
        let (fates, lines) = self.inner.trace(Packet::new(frame.to_vec()), in_port);
        Ok((fates.iter().map(|f| fate_py(py, f)).collect::<PyResult<_>>()?, lines))
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.inner.counters()
    }

    /// Benchmark inside Rust: run `frames` (with `in_ports`) through the
    /// pipeline `rounds` times; returns (packets processed, outputs, wall
    /// seconds, CPU seconds of this thread or None).
    fn bench_process(&mut self, py: Python<'_>, in_ports: Vec<u32>, frames: Vec<Vec<u8>>, rounds: usize) -> (u64, u64, f64, Option<f64>) {
        let p = &mut self.inner;
        py.detach(|| {
            let mut out = Vec::with_capacity(8);
            let mut outputs = 0u64;
            let c0 = thread_cpu_secs();
            let t0 = Instant::now();
            for _ in 0..rounds {
                for (f, &port) in frames.iter().zip(&in_ports) {
                    out.clear();
                    p.process_into(Packet::new(f.clone()), port, &mut out);
                    outputs += out.iter().filter(|f| matches!(f, Fate::Output { .. })).count() as u64;
                }
            }
            let wall = t0.elapsed().as_secs_f64();
            let cpu = thread_cpu_secs().zip(c0).map(|(b, a)| b - a);
            ((rounds * frames.len()) as u64, outputs, wall, cpu)
        })
    }

    /// Benchmark the classifier of `table` alone: keys are built from `frames`
    /// before the clock starts (as dpdk-test-acl prepares its trace), then
    /// looked up `rounds` times (in batches without the cache, one by one
    /// through the flow cache). Returns (priority of the match or -1 per
    /// frame, wall seconds, CPU seconds of this thread or None).
    fn bench_lookup(&mut self, py: Python<'_>, table: u8, in_port: u32, frames: Vec<Vec<u8>>, rounds: usize, use_cache: bool) -> PyResult<(Vec<i32>, f64, Option<f64>)> {
        let keys: Vec<_> = frames
            .iter()
            .map(|f| dp_core::parse_frame(f).map(|h| dp_core::field::base_key(&h, in_port)))
            .collect::<Result<_, _>>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let p = &mut self.inner;
        Ok(py.detach(|| {
            let mut found = vec![None; keys.len()];
            let c0 = thread_cpu_secs();
            let t0 = Instant::now();
            for _ in 0..rounds {
                if use_cache {
                    for (k, r) in keys.iter().zip(found.iter_mut()) {
                        *r = p.classify(table, k, true);
                    }
                } else {
                    p.classify_batch(table, &keys, &mut found);
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            let cpu = thread_cpu_secs().zip(c0).map(|(b, a)| b - a);
            (found.iter().map(|r| r.map_or(-1, |(prio, _)| i32::from(prio))).collect(), secs, cpu)
        }))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_frame, m)?)?;
    m.add_class::<PyPipeline>()?;
    Ok(())
}

/// A ct's `nat`: None, or (kind 0 none / 1 src / 2 dst, (first, last address) or None, (first, last port) or None).
fn nat_of(o: &Bound<'_, PyAny>) -> PyResult<Option<dp_core::ct_nat::NatSpec>> {
    if o.is_none() {
        return Ok(None);
    }
    let (kind, addrs, ports): (u8, Option<(u128, u128)>, Option<(u16, u16)>) = o.extract()?;
    let kind = match kind {
        0 => dp_core::ct_nat::NatKind::None,
        1 => dp_core::ct_nat::NatKind::Src,
        2 => dp_core::ct_nat::NatKind::Dst,
        _ => return Err(PyValueError::new_err("nat kind is 0 (none), 1 (src) or 2 (dst)")),
    };
    Ok(Some(dp_core::ct_nat::NatSpec { kind, addrs, ports }))
}
