//! Alert — raises rate-limited alert records for the agent (SmartChain Table I).
//!
//! Ports: bump in the wire; every frame is forwarded unchanged (alerting never
//! changes packet fate). Rules match on protocol, destination port, TCP flags
//! (`syn_only`: SYN without ACK), minimum IP length and/or a payload substring;
//! the first matching rule names the alert. Per flow at most one alert per
//! `flow_holdoff_ms`; overall a token bucket (`rate_per_s`, `burst`) limits
//! alerts; suppressed alerts are counted by reason. Records queue (bounded by
//! `queue`) until `command("drain")` hands them to the agent.
//! State, per flow: time of the flow's last alert. Shared: the token bucket.
//! Cost profile: one parse and a linear rule check per packet; a payload rule
//! adds a substring search.
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset smartchain.alert (SmartChain Table I).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports, tcp flags, ip_len,
//! payload; writes none; never drops.

use crate::pkt::{self, Counters, PROTO_TCP, TCP_ACK, TCP_SYN};
use crate::state::{FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertRule {
    pub name: String,
    pub proto: Option<u8>,
    pub dport: Option<u16>,
    #[serde(default)]
    pub syn_only: bool,
    pub min_len: Option<u16>,
    pub payload: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertConfig {
    pub rules: Vec<AlertRule>,
    #[serde(default = "rate")]
    pub rate_per_s: f64,
    #[serde(default = "burst")]
    pub burst: f64,
    #[serde(default = "hold")]
    pub flow_holdoff_ms: f64,
    #[serde(default = "queue")]
    pub queue: usize,
}
fn rate() -> f64 {
    100.0
}
fn burst() -> f64 {
    10.0
}
fn hold() -> f64 {
    1000.0
}
fn queue() -> usize {
    1024
}

const C: &[&str] = &["packets", "rule_matches", "alerts", "suppressed_holdoff", "suppressed_rate", "queue_full", "not_ipv4"];

pub struct Alert {
    ports: u8,
    cfg: AlertConfig,
    finders: Vec<Option<aho_corasick::AhoCorasick>>,
    holdoff_ps: u64,
    pub flows: FastMap<FlowKey, u64>,
    tokens: f64,
    last_ps: u64,
    pub queue: Vec<String>,
    pub counters: Counters,
}

impl Alert {
    pub fn new(ports: u8, cfg: AlertConfig) -> Result<Self, String> {
        if !(cfg.rate_per_s > 0.0) || !(cfg.burst >= 1.0) {
            return Err("rate_per_s must be > 0 and burst >= 1".into());
        }
        let mut finders = vec![];
        for (i, r) in cfg.rules.iter().enumerate() {
            finders.push(match &r.payload {
                Some(p) if p.is_empty() => return Err(format!("rules[{i}].payload: empty")),
                Some(p) => Some(aho_corasick::AhoCorasick::new([p]).map_err(|e| format!("rules[{i}].payload: {e}"))?),
                None => None,
            });
        }
        Ok(Alert { ports, holdoff_ps: (cfg.flow_holdoff_ms * 1e9) as u64, tokens: cfg.burst, cfg, finders, flows: FastMap::default(), last_ps: 0, queue: vec![], counters: Counters::new(C) })
    }
}

impl NetworkFunction for Alert {
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, now: u64) -> NfVerdict {
        self.counters.inc(0);
        let out = NfVerdict::Forward { port: other_port(self.ports, in_port) };
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(6);
            return out;
        };
        let len = (p.end - p.l3) as u16;
        let pl = p.payload(f);
        let hit = self.cfg.rules.iter().enumerate().find(|(i, r)| {
            r.proto.is_none_or(|x| x == p.key.proto)
                && r.dport.is_none_or(|x| x == p.key.dport)
                && (!r.syn_only || (p.key.proto == PROTO_TCP && p.tcp_flags & (TCP_SYN | TCP_ACK) == TCP_SYN))
                && r.min_len.is_none_or(|x| len >= x)
                && self.finders[*i].as_ref().is_none_or(|a| a.is_match(pl))
        });
        let Some((_, rule)) = hit else { return out };
        self.counters.inc(1);
        if let Some(&t) = self.flows.get(&p.key) {
            if now.saturating_sub(t) < self.holdoff_ps {
                self.counters.inc(3);
                return out;
            }
        }
        if now > self.last_ps {
            self.tokens = (self.tokens + self.cfg.rate_per_s * (now - self.last_ps) as f64 * 1e-12).min(self.cfg.burst);
            self.last_ps = now;
        }
        if self.tokens < 1.0 {
            self.counters.inc(4);
            return out;
        }
        self.tokens -= 1.0;
        self.flows.insert(p.key, now);
        if self.queue.len() >= self.cfg.queue {
            self.counters.inc(5);
            return out;
        }
        let k = p.key;
        self.queue.push(format!(
            "t={} alert={} {}:{}-{}:{}/{} len={}",
            now,
            rule.name,
            std::net::Ipv4Addr::from(k.src),
            k.sport,
            std::net::Ipv4Addr::from(k.dst),
            k.dport,
            k.proto,
            len
        ));
        self.counters.inc(2);
        out
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "ip_len", "payload"], writes: &[], drops: false, reencapsulates: false }
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        match cmd {
            "drain" => Ok(std::mem::take(&mut self.queue).into_iter().map(|l| l + "\n").collect()),
            _ => Err(format!("alert: no command {cmd:?} (drain)")),
        }
    }
    crate::nf_methods!(flows);
}

impl Stateful for Alert {
    const KIND: &'static str = "alert";
    const VERSION: u16 = 1;
    type Flow = u64;
    type Shared = (f64, u64);
    crate::each_flow_of!(flows);
    fn write_flow(&self, w: &mut Writer, v: &u64) {
        w.var(*v);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<u64, StateError> {
        r.var("last alert")
    }
    fn write_shared(&self, w: &mut Writer) {
        w.u64(self.tokens.to_bits());
        w.var(self.last_ps);
    }
    fn read_shared(&self, r: &mut Reader) -> Result<(f64, u64), StateError> {
        let t = f64::from_bits(r.u64("tokens")?);
        if !(0.0..=self.cfg.burst).contains(&t) {
            return Err(r.err(&format!("token count {t} outside 0..{}", self.cfg.burst)));
        }
        Ok((t, r.var("bucket time")?))
    }
    fn install(&mut self, flows: Vec<(FlowKey, u64)>, shared: Option<(f64, u64)>, replace: bool) {
        if replace {
            self.flows.clear();
        }
        self.flows.extend(flows);
        if let Some((t, l)) = shared {
            self.tokens = t;
            self.last_ps = l;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::tcp;

    #[test]
    fn holdoff_and_rate_limit() {
        let c: AlertConfig = serde_json::from_str(r#"{"rules":[{"name":"ssh-scan","proto":6,"dport":22,"syn_only":true}],"rate_per_s":1,"burst":3,"flow_holdoff_ms":1000}"#).unwrap();
        let mut a = Alert::new(2, c).unwrap();
        for i in 0..10u32 {
            a.process(&mut tcp(0x0a000000 + i, 1, 1000, 22, TCP_SYN, 0, b""), 0, 0);
        }
        a.process(&mut tcp(0x0a000000, 1, 1000, 22, TCP_SYN, 0, b""), 0, 1);
        a.process(&mut tcp(0x0a000000, 1, 1000, 80, TCP_SYN, 0, b""), 0, 1);
        assert_eq!(a.counters.get("alerts"), 3);
        assert_eq!(a.counters.get("suppressed_rate"), 7);
        assert_eq!(a.counters.get("suppressed_holdoff"), 1);
        let q = a.command("drain").unwrap();
        assert!(q.starts_with("t=0 alert=ssh-scan 10.0.0.0:1000-0.0.0.1:22/6 len=40"), "{q}");
    }
}
