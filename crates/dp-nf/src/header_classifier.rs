//! Header classifier — 5-tuple rules to an output port (SmartChain Table I).
//!
//! Ports: 1 or 2. Rules (highest `priority` first, then listed order) match
//! source/destination prefixes, port ranges and the IP protocol; the first
//! match sends the frame to its `port` or drops it (`"drop"`). No match: the
//! `default`. The decision is cached per flow, so only a flow's first packet
//! walks the rule list.
//! State, per flow: the index of the rule that matched (0 = default) and the
//! flow's packet count. Shared: none (rules are configuration).
//! Cost profile: a cache hit costs one parse and one hash lookup; a miss adds
//! a linear rule scan (rules × ~5 compares).
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset smartchain.header_classifier (SmartChain Table I).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports; writes none; drops
//! (rules with `drop`).

use crate::pkt::{self, Counters};
use crate::state::{self, FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PortSpec {
    Num(u16),
    Range(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Out {
    Port(u8),
    Drop(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    #[serde(default)]
    pub priority: i32,
    pub src: Option<String>,
    pub dst: Option<String>,
    pub sport: Option<PortSpec>,
    pub dport: Option<PortSpec>,
    pub proto: Option<u8>,
    pub port: Out,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierConfig {
    pub rules: Vec<RuleConfig>,
    #[serde(default = "dflt")]
    pub default: Out,
}
fn dflt() -> Out {
    Out::Drop("drop".into())
}

#[derive(Debug, Clone, Copy)]
struct Rule {
    src: (u32, u32),
    dst: (u32, u32),
    sport: (u16, u16),
    dport: (u16, u16),
    proto: Option<u8>,
    out: Option<u8>,
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        !0u32 << (32 - len as u32)
    }
}

fn range(p: &Option<PortSpec>, at: &str) -> Result<(u16, u16), String> {
    match p {
        None => Ok((0, 65535)),
        Some(PortSpec::Num(n)) => Ok((*n, *n)),
        Some(PortSpec::Range(s)) => {
            let (a, b) = s.split_once('-').ok_or_else(|| format!("{at}: {s:?} is not a port or lo-hi range"))?;
            let a: u16 = a.trim().parse().map_err(|_| format!("{at}: {a:?} is not a port"))?;
            let b: u16 = b.trim().parse().map_err(|_| format!("{at}: {b:?} is not a port"))?;
            if a > b {
                return Err(format!("{at}: empty range {s:?}"));
            }
            Ok((a, b))
        }
    }
}

const C: &[&str] = &["packets", "cache_hits", "rule_scans", "to_port0", "to_port1", "dropped", "not_ipv4"];

pub struct HeaderClassifier {
    ports: u8,
    rules: Vec<Rule>,
    default: Option<u8>,
    pub flows: FastMap<FlowKey, (u32, u64)>,
    pub counters: Counters,
}

fn out(o: &Out, ports: u8, at: &str) -> Result<Option<u8>, String> {
    match o {
        Out::Port(p) if *p < ports => Ok(Some(*p)),
        Out::Port(p) => Err(format!("{at}: port {p} but the NF has {ports} port(s)")),
        Out::Drop(s) if s == "drop" => Ok(None),
        Out::Drop(s) => Err(format!("{at}: {s:?} must be a port number or \"drop\"")),
    }
}

impl HeaderClassifier {
    pub fn new(ports: u8, c: ClassifierConfig) -> Result<Self, String> {
        let mut idx: Vec<usize> = (0..c.rules.len()).collect();
        idx.sort_by_key(|&i| (-c.rules[i].priority, i));
        let mut rules = Vec::new();
        for i in idx {
            let r = &c.rules[i];
            let at = format!("rules[{i}]");
            let pf = |s: &Option<String>, f: &str| -> Result<(u32, u32), String> {
                match s {
                    None => Ok((0, 0)),
                    Some(s) => {
                        let (a, l) = state::parse_prefix(s).map_err(|e| format!("{at}.{f}: {e}"))?;
                        Ok((a & mask(l), mask(l)))
                    }
                }
            };
            rules.push(Rule {
                src: pf(&r.src, "src")?,
                dst: pf(&r.dst, "dst")?,
                sport: range(&r.sport, &format!("{at}.sport"))?,
                dport: range(&r.dport, &format!("{at}.dport"))?,
                proto: r.proto,
                out: out(&r.port, ports, &format!("{at}.port"))?,
            });
        }
        Ok(HeaderClassifier { ports, rules, default: out(&c.default, ports, "default")?, flows: FastMap::default(), counters: Counters::new(C) })
    }

    fn classify(&self, k: &FlowKey) -> u32 {
        for (i, r) in self.rules.iter().enumerate() {
            if k.src & r.src.1 == r.src.0
                && k.dst & r.dst.1 == r.dst.0
                && (r.sport.0..=r.sport.1).contains(&k.sport)
                && (r.dport.0..=r.dport.1).contains(&k.dport)
                && r.proto.is_none_or(|p| p == k.proto)
            {
                return i as u32 + 1;
            }
        }
        0
    }
}

impl NetworkFunction for HeaderClassifier {
    fn process(&mut self, f: &mut Vec<u8>, _in_port: u8, _now: u64) -> NfVerdict {
        self.counters.inc(0);
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(6);
            return NfVerdict::Drop { reason: "not_ipv4" };
        };
        let rule = match self.flows.get_mut(&p.key) {
            Some(e) => {
                e.1 += 1;
                self.counters.inc(1);
                e.0
            }
            None => {
                self.counters.inc(2);
                let r = self.classify(&p.key);
                self.flows.insert(p.key, (r, 1));
                r
            }
        };
        let o = if rule == 0 { self.default } else { self.rules[rule as usize - 1].out };
        match o {
            Some(port) => {
                self.counters.inc(3 + port as usize);
                NfVerdict::Forward { port }
            }
            None => {
                self.counters.inc(5);
                NfVerdict::Drop { reason: "classified_drop" }
            }
        }
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst"], writes: &[], drops: true, reencapsulates: false }
    }
    crate::nf_methods!(flows);
}

impl Stateful for HeaderClassifier {
    const KIND: &'static str = "header_classifier";
    const VERSION: u16 = 1;
    type Flow = (u32, u64);
    type Shared = ();
    crate::each_flow_of!(flows);
    fn write_flow(&self, w: &mut Writer, v: &(u32, u64)) {
        w.var(v.0 as u64);
        w.var(v.1);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<(u32, u64), StateError> {
        let i = r.var_max(self.rules.len() as u64, "rule index")? as u32;
        Ok((i, r.var("packets")?))
    }
    fn write_shared(&self, _w: &mut Writer) {}
    fn read_shared(&self, _r: &mut Reader) -> Result<(), StateError> {
        Ok(())
    }
    fn install(&mut self, flows: Vec<(FlowKey, (u32, u64))>, _s: Option<()>, replace: bool) {
        if replace {
            self.flows.clear();
        }
        self.flows.extend(flows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::{tcp, udp};

    #[test]
    fn priorities_ranges_default() {
        let c: ClassifierConfig = serde_json::from_str(
            r#"{"rules":[
                {"dst":"10.0.0.0/8","dport":"80-89","proto":6,"port":1,"priority":5},
                {"dst":"10.1.0.0/16","port":"drop","priority":10},
                {"src":"192.168.0.0/16","port":0}
            ],"default":"drop"}"#,
        )
        .unwrap();
        let mut hc = HeaderClassifier::new(2, c).unwrap();
        assert_eq!(hc.process(&mut tcp(1, 0x0a020304, 1, 85, 2, 0, b""), 0, 0), NfVerdict::Forward { port: 1 });
        assert_eq!(hc.process(&mut tcp(1, 0x0a010304, 1, 85, 2, 0, b""), 0, 0), NfVerdict::Drop { reason: "classified_drop" });
        assert_eq!(hc.process(&mut udp(0xc0a80101, 0x0a020304, 1, 85, b""), 0, 0), NfVerdict::Forward { port: 0 });
        assert_eq!(hc.process(&mut udp(1, 0x0a020304, 1, 85, b""), 0, 0), NfVerdict::Drop { reason: "classified_drop" });
        assert_eq!(hc.process(&mut tcp(1, 0x0a020304, 1, 85, 2, 0, b""), 0, 0), NfVerdict::Forward { port: 1 });
        assert_eq!(hc.counters.get("cache_hits"), 1);
        let bad: ClassifierConfig = serde_json::from_str(r#"{"rules":[{"port":3}]}"#).unwrap();
        assert!(HeaderClassifier::new(2, bad).err().unwrap().contains("rules[0].port: port 3"));
    }
}
