//! L7FW — layer-7 firewall with nDPI-style application detection (UNO §4.3).
//!
//! Ports: bump in the wire (frame leaves on the other port; one-port NFs send
//! it back). Per flow (both directions share one record) it reassembles the
//! client's first bytes in TCP sequence order (small out-of-order stash) and
//! detects: HTTP request method + Host header, TLS ClientHello SNI (also when
//! the ClientHello spans several segments), DNS query name (UDP), and a
//! configurable signature set matched with the `aho-corasick` crate over the
//! inspected bytes. The detected name is matched against the application rules
//! (`hosts`: exact or `*.suffix`, optional `methods`, `protocols`, and
//! `signatures`); the first rule that matches gives the verdict: allow,
//! block, or rate_limit (per-application token bucket, packets/s). The verdict
//! is decided once per flow and cached; until then packets pass (counted as
//! `inspecting`). A flow that shows nothing after `inspect_packets` client
//! packets or `inspect_bytes` bytes gets the default action.
//! State, per flow (canonical 5-tuple): detection stage, client direction,
//! next expected client sequence number, buffered bytes and out-of-order
//! segments while inspecting, detected protocol/name/method, application and
//! verdict, last packet time and FIN/RST seen. Shared: the rate-limit token
//! buckets.
//! Expiry: a flow record idle for `flow_timeout_s` (default 120 s of simulated
//! time), or for `closed_timeout_s` (default 10 s) once an RST or both FINs were
//! seen, is removed by a sweep that runs at most every quarter of the shorter
//! timeout (counted as `expired`); a later packet of that 5-tuple starts a new
//! record.
//! Cost profile: decided flows cost one parse + one hash lookup; inspecting
//! packets add a copy of their payload and one automaton pass over the
//! buffer. Byte cost is only paid on a flow's first packets (DPI ratio sNIC/host 4
//! in UNO Table 3 is a scenario calibration, not this code's).
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset uno.l7fw (UNO §5.3 ratio 4).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports, payload; writes none;
//! drops (block, rate_limit).

use crate::pkt::{self, Counters, PROTO_TCP, PROTO_UDP, TCP_FIN, TCP_RST, TCP_SYN};
use crate::state::{FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use aho_corasick::AhoCorasick;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppRule {
    pub name: String,
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default)]
    pub methods: Vec<String>,
    #[serde(default)]
    pub protocols: Vec<String>,
    #[serde(default)]
    pub signatures: Vec<String>,
    #[serde(default = "allow")]
    pub action: String,
    #[serde(default)]
    pub rate_pps: f64,
    #[serde(default = "burst")]
    pub burst: f64,
}
fn allow() -> String {
    "allow".into()
}
fn burst() -> f64 {
    16.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L7FwConfig {
    #[serde(default)]
    pub apps: Vec<AppRule>,
    #[serde(default = "allow")]
    pub default_action: String,
    #[serde(default = "ib")]
    pub inspect_bytes: usize,
    #[serde(default = "ip")]
    pub inspect_packets: u32,
    #[serde(default = "two")]
    pub ports: u8,
    #[serde(default = "flow_timeout")]
    pub flow_timeout_s: f64,
    #[serde(default = "closed_timeout")]
    pub closed_timeout_s: f64,
}
fn flow_timeout() -> f64 {
    120.0
}
fn closed_timeout() -> f64 {
    10.0
}
fn ib() -> usize {
    4096
}
fn ip() -> u32 {
    12
}
fn two() -> u8 {
    2
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Allow,
    Block,
    RateLimit,
}

fn action(s: &str, at: &str) -> Result<Action, String> {
    match s {
        "allow" => Ok(Action::Allow),
        "block" => Ok(Action::Block),
        "rate_limit" => Ok(Action::RateLimit),
        x => Err(format!("{at}: {x:?} must be allow, block or rate_limit")),
    }
}

/// Application-layer protocol found on a flow.
pub const L7_NONE: u8 = 0;
pub const L7_HTTP: u8 = 1;
pub const L7_TLS: u8 = 2;
pub const L7_DNS: u8 = 3;
pub const L7_SIG: u8 = 4;
pub const L7_UNKNOWN: u8 = 5;
const L7_NAMES: [&str; 6] = ["none", "http", "tls", "dns", "signature", "unknown"];

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Flow {
    decided: bool,
    /// The canonical key's `src` end is the client.
    client_is_src: bool,
    seq_known: bool,
    next_seq: u32,
    pkts: u32,
    buf: Vec<u8>,
    ooo: Vec<(u32, Vec<u8>)>,
    pub l7: u8,
    pub name: String,
    pub method: String,
    /// Index into the app rules + 1; 0 = none matched (default action).
    app: u16,
    verdict: u8,
    /// Simulated time of the flow's last packet (ps).
    last_ps: u64,
    /// FIN from the client (1), FIN from the server (2), RST (4).
    closing: u8,
}

const CLIENT_FIN: u8 = 1;
const SERVER_FIN: u8 = 2;
const RST_SEEN: u8 = 4;

impl Flow {
    /// Note a packet at `now` with TCP `flags` (0 for UDP) in direction `from_client`.
    fn seen(&mut self, now: u64, flags: u8, from_client: bool) {
        self.last_ps = now;
        if flags & TCP_FIN != 0 {
            self.closing |= if from_client { CLIENT_FIN } else { SERVER_FIN };
        }
        if flags & TCP_RST != 0 {
            self.closing |= RST_SEEN;
        }
    }
    fn closed(&self) -> bool {
        self.closing & RST_SEEN != 0 || self.closing & (CLIENT_FIN | SERVER_FIN) == CLIENT_FIN | SERVER_FIN
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    tokens: f64,
    last_ps: u64,
}

const C: &[&str] = &[
    "packets",
    "inspecting",
    "allowed",
    "blocked",
    "rate_limited",
    "detected_http",
    "detected_tls",
    "detected_dns",
    "detected_signature",
    "undetected",
    "not_ipv4",
    "expired",
];
const PACKETS: usize = 0;
const INSPECTING: usize = 1;
const ALLOWED: usize = 2;
const BLOCKED: usize = 3;
const RATE_LIMITED: usize = 4;
const NOT_IPV4: usize = 10;
const EXPIRED: usize = 11;

pub struct L7Fw {
    ports: u8,
    apps: Vec<AppRule>,
    actions: Vec<Action>,
    default_action: Action,
    inspect_bytes: usize,
    inspect_packets: u32,
    /// Signature automaton; pattern i belongs to app `sig_app[i]`.
    sigs: Option<AhoCorasick>,
    sig_app: Vec<u16>,
    pub flows: FastMap<FlowKey, Flow>,
    buckets: Vec<Bucket>,
    pub counters: Counters,
    flow_timeout_ps: u64,
    closed_timeout_ps: u64,
    /// Simulated time of the next expiry sweep.
    next_sweep_ps: u64,
}

enum Found {
    Need,
    No,
    Name(String, String),
}

fn lower(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim().to_ascii_lowercase()
}

const METHODS: &[&str] = &["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE"];

/// HTTP/1.x request: method and Host.
fn http(b: &[u8]) -> Found {
    let sp = match b.iter().take(8).position(|&c| c == b' ') {
        Some(i) => i,
        None if b.len() < 8 && METHODS.iter().any(|m| m.as_bytes().starts_with(b)) => return Found::Need,
        None => return Found::No,
    };
    let m = &b[..sp];
    if !METHODS.iter().any(|x| x.as_bytes() == m) {
        return Found::No;
    }
    let method = String::from_utf8_lossy(m).into_owned();
    let mut start = match b.windows(2).position(|w| w == b"\r\n") {
        Some(i) => i + 2,
        None => return Found::Need,
    };
    loop {
        let Some(e) = b[start..].windows(2).position(|w| w == b"\r\n") else { return Found::Need };
        let line = &b[start..start + e];
        if line.is_empty() {
            return Found::Name(String::new(), method);
        }
        if line.len() >= 5 && line[..5].eq_ignore_ascii_case(b"host:") {
            let mut h = lower(&line[5..]);
            if let Some(i) = h.rfind(':') {
                if h[i + 1..].bytes().all(|c| c.is_ascii_digit()) && !h.starts_with('[') {
                    h.truncate(i);
                }
            }
            return Found::Name(h, method);
        }
        start += e + 2;
    }
}

/// TLS ClientHello SNI (first handshake message, possibly over several records).
fn tls_sni(b: &[u8]) -> Found {
    if b.is_empty() {
        return Found::Need;
    }
    if b[0] != 0x16 {
        return Found::No;
    }
    if b.len() >= 2 && b[1] != 3 {
        return Found::No;
    }
    // Concatenate handshake bytes from consecutive records.
    let mut hs = Vec::new();
    let mut o = 0;
    while o + 5 <= b.len() && b[o] == 0x16 {
        let l = pkt::be16(b, o + 3) as usize;
        let avail = (b.len() - o - 5).min(l);
        hs.extend_from_slice(&b[o + 5..o + 5 + avail]);
        if avail < l {
            break;
        }
        o += 5 + l;
    }
    if hs.len() < 4 {
        return Found::Need;
    }
    if hs[0] != 1 {
        return Found::No;
    }
    let hl = ((hs[1] as usize) << 16) | ((hs[2] as usize) << 8) | hs[3] as usize;
    if hs.len() < 4 + hl {
        return Found::Need;
    }
    let h = &hs[4..4 + hl];
    let mut p = 2 + 32;
    let get = |p: usize, n: usize| if p + n <= h.len() { Some(&h[p..p + n]) } else { None };
    let Some(s) = get(p, 1) else { return Found::No };
    p += 1 + s[0] as usize;
    let Some(s) = get(p, 2) else { return Found::No };
    p += 2 + pkt::be16(s, 0) as usize;
    let Some(s) = get(p, 1) else { return Found::No };
    p += 1 + s[0] as usize;
    let Some(s) = get(p, 2) else { return Found::Name(String::new(), String::new()) };
    let end = (p + 2 + pkt::be16(s, 0) as usize).min(h.len());
    p += 2;
    while p + 4 <= end {
        let t = pkt::be16(h, p);
        let l = pkt::be16(h, p + 2) as usize;
        let d = p + 4;
        if d + l > end {
            break;
        }
        if t == 0 && l >= 5 {
            let nl = pkt::be16(h, d + 3) as usize;
            if h[d + 2] == 0 && d + 5 + nl <= d + l {
                return Found::Name(lower(&h[d + 5..d + 5 + nl]), String::new());
            }
        }
        p = d + l;
    }
    Found::Name(String::new(), String::new())
}

/// DNS question name of a query or response.
fn dns_qname(b: &[u8]) -> Found {
    if b.len() < 12 + 5 || pkt::be16(b, 4) == 0 || b[2] & 0x78 != 0 {
        return Found::No;
    }
    let mut p = 12;
    let mut name = String::new();
    loop {
        let Some(&l) = b.get(p) else { return Found::No };
        if l == 0 {
            break;
        }
        if l & 0xc0 != 0 || p + 1 + l as usize > b.len() || name.len() > 253 {
            return Found::No;
        }
        if !name.is_empty() {
            name.push('.');
        }
        name.push_str(&lower(&b[p + 1..p + 1 + l as usize]));
        p += 1 + l as usize;
    }
    if p + 5 > b.len() {
        return Found::No;
    }
    Found::Name(name, String::new())
}

fn host_match(pat: &str, name: &str) -> bool {
    match pat.strip_prefix("*.") {
        Some(suf) => name == suf || (name.len() > suf.len() && name.ends_with(suf) && name.as_bytes()[name.len() - suf.len() - 1] == b'.'),
        None => pat == name,
    }
}

impl L7Fw {
    pub fn new(cfg: L7FwConfig) -> Result<Self, String> {
        let mut actions = Vec::new();
        let mut pats = Vec::new();
        let mut sig_app = Vec::new();
        for (i, a) in cfg.apps.iter().enumerate() {
            let act = action(&a.action, &format!("apps[{i}].action"))?;
            if act == Action::RateLimit && a.rate_pps <= 0.0 {
                return Err(format!("apps[{i}].rate_pps: rate_limit needs rate_pps > 0"));
            }
            for p in &a.protocols {
                if !["http", "tls", "dns"].contains(&p.as_str()) {
                    return Err(format!("apps[{i}].protocols: {p:?} must be http, tls or dns"));
                }
            }
            for (j, s) in a.signatures.iter().enumerate() {
                if s.is_empty() {
                    return Err(format!("apps[{i}].signatures[{j}]: empty signature"));
                }
                pats.push(s.clone());
                sig_app.push(i as u16 + 1);
            }
            actions.push(act);
        }
        if cfg.apps.len() > u16::MAX as usize - 1 {
            return Err("apps: too many".into());
        }
        let sigs = if pats.is_empty() { None } else { Some(AhoCorasick::new(&pats).map_err(|e| format!("apps signatures: {e}"))?) };
        let buckets = cfg.apps.iter().map(|a| Bucket { tokens: a.burst, last_ps: 0 }).collect();
        let timeout = |v: f64, at: &str| {
            if v.is_finite() && v > 0.0 && v <= 1e6 {
                Ok((v * 1e12) as u64)
            } else {
                Err(format!("{at}: must be > 0 and at most 1e6 seconds, not {v}"))
            }
        };
        let flow_timeout_ps = timeout(cfg.flow_timeout_s, "flow_timeout_s")?;
        let closed_timeout_ps = timeout(cfg.closed_timeout_s, "closed_timeout_s")?;
        Ok(L7Fw {
            ports: cfg.ports,
            actions,
            default_action: action(&cfg.default_action, "default_action")?,
            inspect_bytes: cfg.inspect_bytes.max(64),
            inspect_packets: cfg.inspect_packets.max(1),
            apps: cfg.apps,
            sigs,
            sig_app,
            flows: FastMap::default(),
            buckets,
            counters: Counters::new(C),
            flow_timeout_ps,
            closed_timeout_ps,
            next_sweep_ps: flow_timeout_ps.min(closed_timeout_ps) / 4,
        })
    }

    /// Remove the flow records that expired by `now` (see the header).
    fn sweep(&mut self, now: u64) {
        let (idle, closed) = (self.flow_timeout_ps, self.closed_timeout_ps);
        let before = self.flows.len();
        self.flows.retain(|_, f| now.saturating_sub(f.last_ps) <= if f.closed() { closed } else { idle });
        self.counters.v[EXPIRED] += (before - self.flows.len()) as u64;
        self.next_sweep_ps = now + idle.min(closed) / 4;
    }

    fn rule_for(&self, l7: u8, name: &str, method: &str) -> u16 {
        let proto = L7_NAMES[l7 as usize];
        for (i, a) in self.apps.iter().enumerate() {
            if !a.protocols.is_empty() && !a.protocols.iter().any(|p| p == proto) {
                continue;
            }
            if !a.methods.is_empty() && !a.methods.iter().any(|m| m.eq_ignore_ascii_case(method)) {
                continue;
            }
            let host_ok = if a.hosts.is_empty() { !a.methods.is_empty() } else { a.hosts.iter().any(|h| host_match(&h.to_ascii_lowercase(), name)) };
            if host_ok && l7 != L7_SIG {
                return i as u16 + 1;
            }
        }
        0
    }

    /// Try to decide the flow from its buffered client bytes.
    fn detect(&mut self, fl: &mut Flow, proto: u8, force: bool) {
        let mut found = None;
        if proto == PROTO_UDP {
            if let Found::Name(n, _) = dns_qname(&fl.buf) {
                found = Some((L7_DNS, n, String::new()));
            }
        } else {
            let mut need = false;
            match http(&fl.buf) {
                Found::Name(n, m) => found = Some((L7_HTTP, n, m)),
                Found::Need => need = true,
                Found::No => {}
            }
            if found.is_none() {
                match tls_sni(&fl.buf) {
                    Found::Name(n, _) => found = Some((L7_TLS, n, String::new())),
                    Found::Need => need = true,
                    Found::No => {}
                }
            }
            if need && !force && found.is_none() && self.sigs.is_none() {
                return;
            }
        }
        // Signatures: first match wins when no protocol name rule applies.
        let mut sig_rule = 0u16;
        if let Some(ac) = &self.sigs {
            if let Some(m) = ac.find(&fl.buf[..]) {
                sig_rule = self.sig_app[m.pattern().as_usize()];
            }
        }
        let (l7, name, method) = match found {
            Some(x) => x,
            None if sig_rule != 0 => (L7_SIG, self.apps[sig_rule as usize - 1].name.clone(), String::new()),
            None if force => (L7_UNKNOWN, String::new(), String::new()),
            None => return,
        };
        let mut app = self.rule_for(l7, &name, &method);
        if app == 0 {
            app = sig_rule;
        }
        fl.l7 = l7;
        fl.name = name;
        fl.method = method;
        fl.app = app;
        fl.verdict = match if app == 0 { self.default_action } else { self.actions[app as usize - 1] } {
            Action::Allow => 0,
            Action::Block => 1,
            Action::RateLimit => 2,
        };
        fl.decided = true;
        fl.buf = Vec::new();
        fl.ooo = Vec::new();
        self.counters.inc(match l7 {
            L7_HTTP => 5,
            L7_TLS => 6,
            L7_DNS => 7,
            L7_SIG => 8,
            _ => 9,
        });
    }

    fn add_bytes(fl: &mut Flow, seq: u32, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let off = seq.wrapping_sub(fl.next_seq) as i32;
        if off > 0 {
            if fl.ooo.len() < 8 && off < 65536 {
                fl.ooo.push((seq, data.to_vec()));
            }
            return;
        }
        let skip = (-off) as usize;
        if skip < data.len() {
            fl.buf.extend_from_slice(&data[skip..]);
            fl.next_seq = fl.next_seq.wrapping_add((data.len() - skip) as u32);
        }
        // drain the stash
        loop {
            let Some(i) = fl.ooo.iter().position(|(s, d)| {
                let o = s.wrapping_sub(fl.next_seq) as i32;
                o <= 0 && (-o) < d.len() as i32
            }) else {
                fl.ooo.retain(|(s, _)| (s.wrapping_sub(fl.next_seq) as i32) > 0);
                break;
            };
            let (s, d) = fl.ooo.swap_remove(i);
            let skip = fl.next_seq.wrapping_sub(s) as usize;
            fl.buf.extend_from_slice(&d[skip..]);
            fl.next_seq = fl.next_seq.wrapping_add((d.len() - skip) as u32);
        }
    }

    fn enforce(&mut self, app: u16, verdict: u8, now: u64, out: u8) -> NfVerdict {
        match verdict {
            0 => {
                self.counters.inc(ALLOWED);
                NfVerdict::Forward { port: out }
            }
            1 => {
                self.counters.inc(BLOCKED);
                NfVerdict::Drop { reason: "blocked" }
            }
            _ => {
                let i = app as usize - 1;
                let (rate, burst) = (self.apps[i].rate_pps, self.apps[i].burst);
                let b = &mut self.buckets[i];
                if now > b.last_ps {
                    b.tokens = (b.tokens + rate * (now - b.last_ps) as f64 * 1e-12).min(burst);
                    b.last_ps = now;
                }
                if b.tokens >= 1.0 {
                    b.tokens -= 1.0;
                    self.counters.inc(ALLOWED);
                    NfVerdict::Forward { port: out }
                } else {
                    self.counters.inc(RATE_LIMITED);
                    NfVerdict::Drop { reason: "rate_limited" }
                }
            }
        }
    }

    /// One line per flow: `src:sport-dst:dport/proto l7 name method app verdict`.
    pub fn detections(&self) -> String {
        let mut v: Vec<_> = self.flows.iter().collect();
        v.sort_by_key(|(k, _)| **k);
        let mut s = String::new();
        for (k, f) in v {
            let app = if f.app == 0 { "-" } else { &self.apps[f.app as usize - 1].name };
            let name = if f.name.is_empty() { "-" } else { &f.name };
            let method = if f.method.is_empty() { "-" } else { &f.method };
            let verdict = if !f.decided { "inspecting" } else { ["allow", "block", "rate_limit"][f.verdict as usize] };
            s.push_str(&format!(
                "{}:{}-{}:{}/{} {} {} {} {} {}\n",
                std::net::Ipv4Addr::from(k.src),
                k.sport,
                std::net::Ipv4Addr::from(k.dst),
                k.dport,
                k.proto,
                L7_NAMES[f.l7 as usize],
                name,
                method,
                app,
                verdict
            ));
        }
        s
    }
}

impl NetworkFunction for L7Fw {
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, now: u64) -> NfVerdict {
        self.counters.inc(PACKETS);
        if now >= self.next_sweep_ps {
            self.sweep(now);
        }
        let out = other_port(self.ports, in_port);
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(NOT_IPV4);
            return NfVerdict::Forward { port: out };
        };
        if p.fragment || (p.key.proto != PROTO_TCP && p.key.proto != PROTO_UDP) {
            return self.enforce(0, 0, now, out);
        }
        let ck = p.key.canonical();
        let flags = if p.key.proto == PROTO_TCP { p.tcp_flags } else { 0 };
        if let Some(fl) = self.flows.get_mut(&ck) {
            if fl.decided {
                fl.seen(now, flags, (ck == p.key) == fl.client_is_src);
                let (a, v) = (fl.app, fl.verdict);
                return self.enforce(a, v, now, out);
            }
        }
        let mut fl = self.flows.remove(&ck).unwrap_or_else(|| Flow { client_is_src: ck == p.key, ..Default::default() });
        let from_client = (ck == p.key) == fl.client_is_src;
        fl.seen(now, flags, from_client);
        if from_client {
            fl.pkts += 1;
            let data = p.payload(f);
            if p.key.proto == PROTO_TCP {
                if !fl.seq_known {
                    fl.seq_known = true;
                    fl.next_seq = if p.tcp_flags & TCP_SYN != 0 { p.tcp_seq.wrapping_add(1) } else { p.tcp_seq };
                }
                if p.tcp_flags & TCP_SYN == 0 {
                    Self::add_bytes(&mut fl, p.tcp_seq, data);
                }
            } else {
                fl.buf.extend_from_slice(data);
            }
            if !fl.buf.is_empty() || p.key.proto == PROTO_UDP {
                let force = fl.buf.len() >= self.inspect_bytes || fl.pkts >= self.inspect_packets || p.key.proto == PROTO_UDP;
                self.detect(&mut fl, p.key.proto, force);
            }
            if !fl.decided && fl.pkts >= self.inspect_packets {
                self.detect(&mut fl, p.key.proto, true);
            }
        }
        let decided = fl.decided;
        let (a, v) = (fl.app, fl.verdict);
        self.flows.insert(ck, fl);
        if decided {
            self.enforce(a, v, now, out)
        } else {
            self.counters.inc(INSPECTING);
            NfVerdict::Forward { port: out }
        }
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "payload"], writes: &[], drops: true, reencapsulates: false }
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        match cmd {
            "detections" => Ok(self.detections()),
            _ => Err(format!("l7fw: no command {cmd:?} (detections)")),
        }
    }
    crate::nf_methods!(flows);
}

impl Stateful for L7Fw {
    const KIND: &'static str = "l7fw";
    const VERSION: u16 = 2;
    type Flow = Flow;
    type Shared = Vec<Bucket>;
    crate::each_flow_of!(flows);
    fn write_flow(&self, w: &mut Writer, v: &Flow) {
        w.u8(v.decided as u8 | (v.client_is_src as u8) << 1 | (v.seq_known as u8) << 2 | v.closing << 3);
        w.u64(v.last_ps);
        w.u32(v.next_seq);
        w.var(v.pkts as u64);
        w.bytes(&v.buf);
        w.var(v.ooo.len() as u64);
        for (s, d) in &v.ooo {
            w.u32(*s);
            w.bytes(d);
        }
        w.u8(v.l7);
        w.str(&v.name);
        w.str(&v.method);
        w.str(if v.app == 0 { "" } else { &self.apps[v.app as usize - 1].name });
        w.u8(v.verdict);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<Flow, StateError> {
        let b = r.u8("flags")?;
        if b > 63 {
            return Err(r.err("bad flow flags"));
        }
        let last_ps = r.u64("last packet time")?;
        let next_seq = r.u32("next sequence")?;
        let pkts = r.var_max(u32::MAX as u64, "packets")? as u32;
        let buf = r.bytes("buffer")?.to_vec();
        let n = r.var_max(64, "segments")?;
        let mut ooo = Vec::new();
        for _ in 0..n {
            ooo.push((r.u32("segment seq")?, r.bytes("segment")?.to_vec()));
        }
        let l7 = r.u8("protocol")?;
        if l7 as usize >= L7_NAMES.len() {
            return Err(r.err(&format!("protocol code {l7} unknown")));
        }
        let name = r.string("name")?;
        let method = r.string("method")?;
        let app_name = r.string("app")?;
        let app = if app_name.is_empty() {
            0
        } else {
            match self.apps.iter().position(|a| a.name == app_name) {
                Some(i) => i as u16 + 1,
                None => return Err(r.err(&format!("application {app_name:?} is not configured on this L7FW"))),
            }
        };
        let verdict = r.u8("verdict")?;
        if verdict > 2 {
            return Err(r.err("bad verdict"));
        }
        Ok(Flow { decided: b & 1 != 0, client_is_src: b & 2 != 0, seq_known: b & 4 != 0, next_seq, pkts, buf, ooo, l7, name, method, app, verdict, last_ps, closing: b >> 3 })
    }
    fn write_shared(&self, w: &mut Writer) {
        w.var(self.buckets.len() as u64);
        for b in &self.buckets {
            w.u64(b.tokens.to_bits());
            w.u64(b.last_ps);
        }
    }
    fn read_shared(&self, r: &mut Reader) -> Result<Vec<Bucket>, StateError> {
        let n = r.var("buckets")? as usize;
        if n != self.buckets.len() {
            return Err(r.err(&format!("{n} rate-limit buckets, this L7FW has {} applications", self.buckets.len())));
        }
        (0..n).map(|_| Ok(Bucket { tokens: f64::from_bits(r.u64("tokens")?), last_ps: r.u64("bucket time")? })).collect()
    }
    fn install(&mut self, flows: Vec<(FlowKey, Flow)>, shared: Option<Vec<Bucket>>, replace: bool) {
        if replace {
            self.flows.clear();
        }
        self.flows.extend(flows);
        if let Some(b) = shared {
            self.buckets = b;
        }
    }
}

/// Test-only builders of application payloads (also used by the Rust bench).
pub mod payloads {
    pub fn http_get(host: &str, method: &str) -> Vec<u8> {
        format!("{method} /index.html HTTP/1.1\r\nUser-Agent: tandem\r\nHost: {host}\r\nAccept: */*\r\n\r\n").into_bytes()
    }
    pub fn tls_client_hello(sni: &str) -> Vec<u8> {
        let mut ext = Vec::new();
        let n = sni.as_bytes();
        ext.extend_from_slice(&[0, 0]);
        ext.extend_from_slice(&((n.len() + 5) as u16).to_be_bytes());
        ext.extend_from_slice(&((n.len() + 3) as u16).to_be_bytes());
        ext.push(0);
        ext.extend_from_slice(&(n.len() as u16).to_be_bytes());
        ext.extend_from_slice(n);
        // a padding-ish extension so the hello is realistically long
        ext.extend_from_slice(&[0, 21]);
        ext.extend_from_slice(&200u16.to_be_bytes());
        ext.extend_from_slice(&[0u8; 200]);
        let mut h = vec![3, 3];
        h.extend_from_slice(&[7u8; 32]);
        h.push(32);
        h.extend_from_slice(&[9u8; 32]);
        h.extend_from_slice(&4u16.to_be_bytes());
        h.extend_from_slice(&[0x13, 0x01, 0x13, 0x02]);
        h.extend_from_slice(&[1, 0]);
        h.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        h.extend_from_slice(&ext);
        let mut hs = vec![1];
        hs.extend_from_slice(&(h.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&h);
        let mut rec = vec![0x16, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }
    pub fn dns_query(name: &str, id: u16) -> Vec<u8> {
        let mut q = id.to_be_bytes().to_vec();
        q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        for l in name.split('.') {
            q.push(l.len() as u8);
            q.extend_from_slice(l.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        q
    }
}

#[cfg(test)]
mod tests {
    use super::payloads::*;
    use super::*;
    use crate::pkt::testpkt::{tcp, udp};
    use crate::pkt::{TCP_ACK, TCP_SYN};

    fn fw() -> L7Fw {
        let cfg: L7FwConfig = serde_json::from_str(
            r#"{"apps":[
              {"name":"video","hosts":["*.video.example"],"action":"rate_limit","rate_pps":2,"burst":2},
              {"name":"banned","hosts":["bad.example"],"action":"block"},
              {"name":"uploads","methods":["POST"],"protocols":["http"],"action":"block"},
              {"name":"torrent","signatures":["BitTorrent protocol"],"action":"block"}
            ]}"#,
        )
        .unwrap();
        L7Fw::new(cfg).unwrap()
    }

    fn conn(nf: &mut L7Fw, c: u32, sport: u16, dport: u16, segs: &[&[u8]], now: u64) -> Vec<NfVerdict> {
        let s = 0x0a000001 + c;
        let d = 0xc0a80001;
        let mut v = vec![nf.process(&mut tcp(s, d, sport, dport, TCP_SYN, 1000, b""), 0, now)];
        v.push(nf.process(&mut tcp(d, s, dport, sport, TCP_SYN | TCP_ACK, 5000, b""), 1, now));
        let mut seq = 1001;
        for sg in segs {
            v.push(nf.process(&mut tcp(s, d, sport, dport, TCP_ACK, seq, sg), 0, now));
            seq += sg.len() as u32;
        }
        v
    }

    #[test]
    fn detects_http_tls_dns_and_signatures() {
        let mut nf = fw();
        conn(&mut nf, 1, 40001, 80, &[&http_get("www.site.example:8080", "GET")], 0);
        let hello = tls_client_hello("cdn.video.example");
        let (a, b) = hello.split_at(60); // SNI lands in the second segment
        conn(&mut nf, 2, 40002, 443, &[a, b], 0);
        nf.process(&mut udp(0x0a000003, 0x08080808, 5353, 53, &dns_query("Mail.Example.org", 7)), 0, 0);
        let v = conn(&mut nf, 4, 40004, 6881, &[b"\x13BitTorrent protocol"], 0);
        assert_eq!(v.last(), Some(&NfVerdict::Drop { reason: "blocked" }));
        let v = conn(&mut nf, 5, 40005, 80, &[&http_get("up.example", "POST")], 0);
        assert_eq!(v.last(), Some(&NfVerdict::Drop { reason: "blocked" }));
        let d = nf.detections();
        assert!(d.contains("http www.site.example GET - allow"), "{d}");
        assert!(d.contains("tls cdn.video.example - video rate_limit"), "{d}");
        assert!(d.contains("dns mail.example.org - - allow"), "{d}");
        assert!(d.contains("signature torrent - torrent block"), "{d}");
        assert!(d.contains("http up.example POST uploads block"), "{d}");
        assert_eq!(nf.counters.get("detected_tls"), 1);
    }

    #[test]
    fn out_of_order_segments_and_rate_limit() {
        let mut nf = fw();
        let hello = tls_client_hello("a.video.example");
        let s = 0x0a000009;
        let d = 0xc0a80001;
        nf.process(&mut tcp(s, d, 999, 443, TCP_SYN, 1, b""), 0, 0);
        nf.process(&mut tcp(s, d, 999, 443, TCP_ACK, 2 + 100, &hello[100..]), 0, 0);
        assert_eq!(nf.counters.get("detected_tls"), 0);
        nf.process(&mut tcp(s, d, 999, 443, TCP_ACK, 2, &hello[..100]), 0, 0);
        assert_eq!(nf.counters.get("detected_tls"), 1);
        // burst 2 then limited; 1 s later refilled by 2
        let mut fates = vec![];
        for _ in 0..4 {
            fates.push(nf.process(&mut tcp(s, d, 999, 443, TCP_ACK, 9999, b"x"), 0, 10));
        }
        assert_eq!(fates.iter().filter(|f| matches!(f, NfVerdict::Forward { .. })).count(), 1);
        assert!(matches!(nf.process(&mut tcp(s, d, 999, 443, TCP_ACK, 9999, b"x"), 0, 1_000_000_000_010), NfVerdict::Forward { .. }));
    }

    #[test]
    fn idle_and_closed_flows_expire() {
        use crate::pkt::{TCP_FIN, TCP_RST};
        let s_ = 1_000_000_000_000u64; // 1 s in ps
        let mut nf = fw(); // flow timeout 120 s, closed 10 s: sweeps every 2.5 s
        conn(&mut nf, 1, 40001, 80, &[&http_get("a.example", "GET")], 0);
        conn(&mut nf, 2, 40002, 80, &[&http_get("b.example", "GET")], 0);
        conn(&mut nf, 3, 40003, 80, &[&http_get("c.example", "GET")], 0);
        let (c, d) = (0x0a000001, 0xc0a80001);
        // flow 2 closes with FIN both ways at 1 s, flow 3 is reset at 1 s
        nf.process(&mut tcp(c + 2, d, 40002, 80, TCP_FIN | TCP_ACK, 9, b""), 0, s_);
        nf.process(&mut tcp(d, c + 2, 80, 40002, TCP_FIN | TCP_ACK, 9, b""), 1, s_);
        nf.process(&mut tcp(c + 3, d, 40003, 80, TCP_RST, 9, b""), 0, s_);
        // flow 1 stays busy
        for t in [5, 50, 100, 125] {
            nf.process(&mut tcp(c + 1, d, 40001, 80, TCP_ACK, 9, b"x"), 0, t * s_);
            if t == 5 {
                assert_eq!(nf.flows.len(), 3, "closed flows are kept for closed_timeout_s");
            }
            if t == 50 {
                assert_eq!(nf.flows.len(), 1, "closed flows expire after closed_timeout_s");
                assert_eq!(nf.counters.get("expired"), 2);
            }
        }
        assert_eq!(nf.flows.len(), 1, "a flow with traffic never expires");
        // another flow, then silence: idle for more than 120 s
        conn(&mut nf, 4, 40004, 80, &[&http_get("d.example", "GET")], 126 * s_);
        nf.process(&mut tcp(c + 1, d, 40001, 80, TCP_ACK, 9, b"x"), 0, 200 * s_);
        assert_eq!(nf.flows.len(), 2);
        nf.process(&mut tcp(c + 1, d, 40001, 80, TCP_ACK, 9, b"x"), 0, 247 * s_);
        assert_eq!(nf.flows.len(), 1, "flow 4 idle since 126 s");
        assert_eq!(nf.counters.get("expired"), 3);
        // state export keeps the time and the close flags
        let blob = nf.export_state();
        let mut other = fw();
        other.import_state(&blob).unwrap();
        assert_eq!(other.flows, nf.flows);
    }

    #[test]
    fn expiry_timeouts_are_checked() {
        for bad in ["0", "-1", "1e7"] {
            let cfg: L7FwConfig = serde_json::from_str(&format!(r#"{{"flow_timeout_s":{bad}}}"#)).unwrap();
            let e = L7Fw::new(cfg).err().unwrap();
            assert!(e.starts_with("flow_timeout_s: must be > 0"), "{e}");
        }
    }

    #[test]
    fn banned_host_blocked_from_detection_on() {
        let mut nf = fw();
        let v = conn(&mut nf, 7, 40007, 443, &[&tls_client_hello("bad.example"), b"more"], 0);
        assert_eq!(&v[2..], &[NfVerdict::Drop { reason: "blocked" }, NfVerdict::Drop { reason: "blocked" }]);
    }
}
