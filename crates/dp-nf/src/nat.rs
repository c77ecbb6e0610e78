//! NAT — source NAPT (one external address, a port range).
//!
//! Ports: port 0 inside, port 1 outside (a one-port NAT tells the directions
//! apart by the destination: packets to the external address are inbound).
//! Outbound TCP/UDP: the inside 5-tuple gets an external port from the range
//! (first free at or after a rotating cursor; an idle mapping older than
//! `timeout_s` is reclaimed when its port is needed), then source address and
//! port are rewritten with incremental checksum updates. Inbound: a packet to
//! external address:port of a live mapping has its destination rewritten back;
//! anything else is dropped (`no_mapping`). Other protocols pass outbound
//! unchanged (`passed_other`) and are dropped inbound.
//! State, per flow (inside 5-tuple): external port, last-used time. Shared:
//! the allocation cursor. The reverse table is rebuilt on import.
//! Cost profile: one parse, one or two hash lookups and a 4–6 word checksum
//! patch per packet; a new flow adds a port search.
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset none in the papers; give cycles per packet as an assumption.
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports; writes ipv4_src (out),
//! ipv4_dst (in), tcp_src/udp_src, tcp_dst/udp_dst, checksum; drops.

use crate::pkt::{self, Counters, PROTO_TCP, PROTO_UDP};
use crate::state::{self, FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatConfig {
    pub external_ip: String,
    #[serde(default = "pmin")]
    pub port_min: u16,
    #[serde(default = "pmax")]
    pub port_max: u16,
    #[serde(default = "tmo")]
    pub timeout_s: f64,
    #[serde(default = "two")]
    pub ports: u8,
}
fn pmin() -> u16 {
    1024
}
fn pmax() -> u16 {
    65535
}
fn tmo() -> f64 {
    300.0
}
fn two() -> u8 {
    2
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub ext_port: u16,
    pub last_ps: u64,
}

const C: &[&str] = &["packets", "outbound", "inbound", "mappings_new", "mappings_reclaimed", "no_mapping", "ports_exhausted", "passed_other", "not_ipv4"];

pub struct Nat {
    ports: u8,
    ext: u32,
    pmin: u16,
    pmax: u16,
    timeout_ps: u64,
    pub map: FastMap<FlowKey, Mapping>,
    rev: FastMap<(u8, u16), FlowKey>,
    cursor: u16,
    pub counters: Counters,
}

impl Nat {
    pub fn new(c: NatConfig) -> Result<Self, String> {
        let ext = state::parse_ipv4(&c.external_ip).map_err(|e| format!("external_ip: {e}"))?;
        if c.port_min == 0 || c.port_min > c.port_max {
            return Err(format!("port_min/port_max: need 1 <= port_min ({}) <= port_max ({})", c.port_min, c.port_max));
        }
        if !(c.timeout_s > 0.0) {
            return Err("timeout_s: must be > 0".into());
        }
        Ok(Nat {
            ports: c.ports,
            ext,
            pmin: c.port_min,
            pmax: c.port_max,
            timeout_ps: (c.timeout_s * 1e12) as u64,
            map: FastMap::default(),
            rev: FastMap::default(),
            cursor: c.port_min,
            counters: Counters::new(C),
        })
    }

    fn allocate(&mut self, k: FlowKey, now: u64) -> Option<u16> {
        let n = (self.pmax - self.pmin) as u32 + 1;
        for _ in 0..n {
            let port = self.cursor;
            self.cursor = if self.cursor >= self.pmax { self.pmin } else { self.cursor + 1 };
            match self.rev.get(&(k.proto, port)).copied() {
                None => return Some(port),
                Some(old) => {
                    let idle = self.map.get(&old).is_none_or(|m| now.saturating_sub(m.last_ps) > self.timeout_ps);
                    if idle {
                        self.map.remove(&old);
                        self.rev.remove(&(k.proto, port));
                        self.counters.inc(4);
                        return Some(port);
                    }
                }
            }
        }
        None
    }

    fn drop(&mut self, i: usize, reason: &'static str) -> NfVerdict {
        self.counters.inc(i);
        NfVerdict::Drop { reason }
    }
}

impl NetworkFunction for Nat {
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, now: u64) -> NfVerdict {
        self.counters.inc(0);
        let Some(p) = pkt::parse(f) else { return self.drop(8, "not_ipv4") };
        let inbound = if self.ports == 2 { in_port == 1 } else { p.key.dst == self.ext };
        let (to_in, to_out) = if self.ports == 2 { (0, 1) } else { (0, 0) };
        let l4 = (p.key.proto == PROTO_TCP || p.key.proto == PROTO_UDP) && !p.fragment && p.payload > p.l4;
        if !inbound {
            if !l4 {
                self.counters.inc(7);
                return NfVerdict::Forward { port: to_out };
            }
            let k = p.key;
            let port = match self.map.get_mut(&k) {
                Some(m) => {
                    m.last_ps = now;
                    m.ext_port
                }
                None => {
                    let Some(port) = self.allocate(k, now) else { return self.drop(6, "ports_exhausted") };
                    self.map.insert(k, Mapping { ext_port: port, last_ps: now });
                    self.rev.insert((k.proto, port), k);
                    self.counters.inc(3);
                    port
                }
            };
            pkt::set_addr(f, &p, false, self.ext);
            pkt::set_port(f, &p, false, port);
            self.counters.inc(1);
            NfVerdict::Forward { port: to_out }
        } else {
            if !l4 || p.key.dst != self.ext {
                return self.drop(5, "no_mapping");
            }
            let Some(ik) = self.rev.get(&(p.key.proto, p.key.dport)).copied() else { return self.drop(5, "no_mapping") };
            let m = self.map.get_mut(&ik).unwrap();
            if now.saturating_sub(m.last_ps) > self.timeout_ps {
                return self.drop(5, "no_mapping");
            }
            m.last_ps = now;
            pkt::set_addr(f, &p, true, ik.src);
            pkt::set_port(f, &p, true, ik.sport);
            self.counters.inc(2);
            NfVerdict::Forward { port: to_in }
        }
    }
    fn fields(&self) -> Fields {
        Fields {
            reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst"],
            writes: &["ipv4_src", "ipv4_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "checksum"],
            drops: true,
            reencapsulates: false,
        }
    }
    crate::nf_methods!(map);
}

impl Stateful for Nat {
    const KIND: &'static str = "nat";
    const VERSION: u16 = 1;
    type Flow = Mapping;
    type Shared = u16;
    crate::each_flow_of!(map);
    fn write_flow(&self, w: &mut Writer, v: &Mapping) {
        w.u16(v.ext_port);
        w.var(v.last_ps);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<Mapping, StateError> {
        let ext_port = r.u16("external port")?;
        if ext_port < self.pmin || ext_port > self.pmax {
            return Err(r.err(&format!("external port {ext_port} outside this NAT's range {}-{}", self.pmin, self.pmax)));
        }
        Ok(Mapping { ext_port, last_ps: r.var("last used")? })
    }
    fn write_shared(&self, w: &mut Writer) {
        w.u16(self.cursor);
    }
    fn read_shared(&self, r: &mut Reader) -> Result<u16, StateError> {
        let c = r.u16("cursor")?;
        if c < self.pmin || c > self.pmax {
            return Err(r.err("cursor outside the port range"));
        }
        Ok(c)
    }
    fn install(&mut self, flows: Vec<(FlowKey, Mapping)>, shared: Option<u16>, replace: bool) {
        if replace {
            self.map.clear();
            self.rev.clear();
        }
        for (k, m) in flows {
            if let Some(old) = self.rev.insert((k.proto, m.ext_port), k) {
                if old != k {
                    self.map.remove(&old);
                }
            }
            if let Some(prev) = self.map.insert(k, m) {
                if prev.ext_port != m.ext_port {
                    self.rev.remove(&(k.proto, prev.ext_port));
                }
            }
        }
        if let Some(c) = shared {
            self.cursor = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::{tcp, udp};

    #[test]
    fn translates_both_ways_and_expires() {
        let mut nat = Nat::new(NatConfig { external_ip: "203.0.113.1".into(), port_min: 2000, port_max: 2001, timeout_s: 1.0, ports: 2 }).unwrap();
        let mut f = tcp(0x0a000001, 0x08080808, 1111, 80, 0x02, 1, b"");
        assert_eq!(nat.process(&mut f, 0, 0), NfVerdict::Forward { port: 1 });
        let p = pkt::parse(&f).unwrap();
        assert_eq!((p.key.src, p.key.sport), (0xcb007101, 2000));
        // checksum still valid: recompute from scratch and compare
        let ip = &f[p.l3..p.l3 + 20];
        assert_eq!(dp_core::checksum::fold(dp_core::checksum::sum(ip, 0)), 0);
        let mut r = tcp(0x08080808, 0xcb007101, 80, 2000, 0x12, 1, b"");
        assert_eq!(nat.process(&mut r, 1, 1), NfVerdict::Forward { port: 0 });
        let q = pkt::parse(&r).unwrap();
        assert_eq!((q.key.dst, q.key.dport), (0x0a000001, 1111));
        let mut u = udp(0x0a000002, 0x08080808, 53, 53, b"q");
        nat.process(&mut u, 0, 2);
        let mut t2 = tcp(0x0a000003, 0x08080808, 3333, 80, 0x02, 1, b"");
        assert!(matches!(nat.process(&mut t2, 0, 3), NfVerdict::Forward { .. }));
        let mut t3 = tcp(0x0a000004, 0x08080808, 4444, 80, 0x02, 1, b"");
        assert_eq!(nat.process(&mut t3, 0, 4), NfVerdict::Drop { reason: "ports_exhausted" });
        // after the timeout the first mapping is reclaimed
        let mut t4 = tcp(0x0a000004, 0x08080808, 4444, 80, 0x02, 1, b"");
        assert!(matches!(nat.process(&mut t4, 0, 3_000_000_000_000), NfVerdict::Forward { .. }));
        let mut stray = tcp(0x08080808, 0xcb007101, 80, 2999, 0x12, 1, b"");
        assert_eq!(nat.process(&mut stray, 1, 5), NfVerdict::Drop { reason: "no_mapping" });
    }
}
