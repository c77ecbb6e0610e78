//! Logger — periodic per-flow records (SmartChain Table I's logger).
//!
//! Ports: bump in the wire; every frame is forwarded unchanged.
//! Per flow it counts packets and bytes and keeps first/last-seen times. Every
//! `interval_ms` of packet time it appends one record per flow that saw
//! traffic since the previous report to an in-memory log (bounded by
//! `max_records`; overflow is counted, oldest kept). `command("drain")` hands
//! the records to the caller (the agent) and empties the log.
//! State, per flow: packets, bytes, first and last seen, packets at the last
//! report. Shared: the next report time and the record sequence number.
//! Records already in the log belong to the instance that produced them.
//! Cost profile: one parse and one hash update per packet; a report costs one
//! pass over the flow table every interval.
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset smartchain.logger (SmartChain Table I).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports, ip_len; writes none;
//! never drops.

use crate::pkt::{self, Counters};
use crate::state::{FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggerConfig {
    #[serde(default = "iv")]
    pub interval_ms: f64,
    #[serde(default = "mr")]
    pub max_records: usize,
}
fn iv() -> f64 {
    1000.0
}
fn mr() -> usize {
    100_000
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowRec {
    pub packets: u64,
    pub bytes: u64,
    pub first_ps: u64,
    pub last_ps: u64,
    pub reported: u64,
}

const C: &[&str] = &["packets", "reports", "records", "log_overflow", "not_ipv4"];

pub struct Logger {
    ports: u8,
    interval_ps: u64,
    max_records: usize,
    pub flows: FastMap<FlowKey, FlowRec>,
    next_report: u64,
    seq: u64,
    pub log: Vec<String>,
    pub counters: Counters,
}

impl Logger {
    pub fn new(ports: u8, c: LoggerConfig) -> Result<Self, String> {
        if !(c.interval_ms > 0.0) {
            return Err("interval_ms: must be > 0".into());
        }
        let interval_ps = (c.interval_ms * 1e9) as u64;
        Ok(Logger { ports, interval_ps, max_records: c.max_records, flows: FastMap::default(), next_report: interval_ps, seq: 0, log: vec![], counters: Counters::new(C) })
    }

    fn report(&mut self, now: u64) {
        self.counters.inc(1);
        let mut keys: Vec<FlowKey> = self.flows.iter().filter(|(_, r)| r.packets > r.reported).map(|(k, _)| *k).collect();
        keys.sort();
        for k in keys {
            let r = self.flows.get_mut(&k).unwrap();
            r.reported = r.packets;
            self.seq += 1;
            if self.log.len() >= self.max_records {
                self.counters.inc(3);
                continue;
            }
            self.log.push(format!(
                "{} t={} {}:{}-{}:{}/{} packets={} bytes={} first={} last={}",
                self.seq,
                now,
                std::net::Ipv4Addr::from(k.src),
                k.sport,
                std::net::Ipv4Addr::from(k.dst),
                k.dport,
                k.proto,
                r.packets,
                r.bytes,
                r.first_ps,
                r.last_ps
            ));
            self.counters.inc(2);
        }
    }
}

impl NetworkFunction for Logger {
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, now: u64) -> NfVerdict {
        self.counters.inc(0);
        let out = NfVerdict::Forward { port: other_port(self.ports, in_port) };
        if now >= self.next_report {
            self.report(now);
            self.next_report = (now / self.interval_ps + 1) * self.interval_ps;
        }
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(4);
            return out;
        };
        let r = self.flows.entry(p.key).or_insert(FlowRec { first_ps: now, ..Default::default() });
        r.packets += 1;
        r.bytes += (p.end - p.l3) as u64;
        r.last_ps = now;
        out
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "ip_len"], writes: &[], drops: false, reencapsulates: false }
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        match cmd {
            "drain" => Ok(std::mem::take(&mut self.log).into_iter().map(|l| l + "\n").collect()),
            _ => Err(format!("logger: no command {cmd:?} (drain)")),
        }
    }
    crate::nf_methods!(flows);
}

impl Stateful for Logger {
    const KIND: &'static str = "logger";
    const VERSION: u16 = 1;
    type Flow = FlowRec;
    type Shared = (u64, u64);
    crate::each_flow_of!(flows);
    fn write_flow(&self, w: &mut Writer, v: &FlowRec) {
        w.var(v.packets);
        w.var(v.bytes);
        w.var(v.first_ps);
        w.var(v.last_ps);
        w.var(v.reported);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<FlowRec, StateError> {
        Ok(FlowRec { packets: r.var("packets")?, bytes: r.var("bytes")?, first_ps: r.var("first")?, last_ps: r.var("last")?, reported: r.var("reported")? })
    }
    fn write_shared(&self, w: &mut Writer) {
        w.var(self.next_report);
        w.var(self.seq);
    }
    fn read_shared(&self, r: &mut Reader) -> Result<(u64, u64), StateError> {
        Ok((r.var("next report")?, r.var("sequence")?))
    }
    fn install(&mut self, flows: Vec<(FlowKey, FlowRec)>, shared: Option<(u64, u64)>, replace: bool) {
        if replace {
            self.flows.clear();
        }
        self.flows.extend(flows);
        if let Some((n, s)) = shared {
            self.next_report = n;
            self.seq = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::udp;

    #[test]
    fn periodic_records() {
        let mut l = Logger::new(2, LoggerConfig { interval_ms: 1.0, max_records: 100 }).unwrap();
        for t in 0..30u64 {
            let mut f = udp(0x0a000001 + (t % 3) as u32, 0x0b000001, 1, 2, b"abc");
            l.process(&mut f, 0, t * 100_000_000); // every 0.1 ms
        }
        let out = l.command("drain").unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 6, "{out}"); // reports at 1 ms and 2 ms, 3 flows each
        assert!(lines[0].contains("10.0.0.1:1-11.0.0.1:2/17 packets=4 bytes=124"), "{out}");
        assert!(l.command("drain").unwrap().is_empty());
    }
}
