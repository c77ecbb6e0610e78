//! Maglev load balancer — consistent hashing (Eisenbud et al., NSDI'16) with
//! per-flow affinity; SmartChain Table I's load balancer.
//!
//! Ports: bump in the wire. A TCP/UDP packet to the virtual IP gets its
//! destination rewritten to a backend (incremental checksum patch); a packet
//! from a backend that belongs to a known flow gets its source rewritten back
//! to the VIP. Other packets pass. The backend of a new flow is
//! `table[hash(5-tuple) mod M]`, where the lookup table of prime size M is
//! filled by Maglev's permutation round-robin; the choice is then kept in the
//! flow table, so a flow stays on its backend when the backend set changes
//! (only flows whose backend was removed move). `command("backends a,b,c")`
//! changes the set at run time.
//! State, per flow (client 5-tuple): backend address. Shared: the backend
//! list (the lookup table is rebuilt from it).
//! Cost profile: one parse, one hash, one or two table lookups and a checksum
//! patch per packet; a backend change costs O(M × backends).
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset smartchain.load_balancer (SmartChain Table I).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports; writes ipv4_dst
//! (to backends), ipv4_src (replies), checksum; never drops.

use crate::pkt::{self, Counters, PROTO_TCP, PROTO_UDP};
use crate::state::{self, mix64, FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LbConfig {
    pub vip: String,
    pub backends: Vec<String>,
    #[serde(default = "m")]
    pub table_size: u32,
}
fn m() -> u32 {
    65537
}

const C: &[&str] = &["packets", "to_backend", "from_backend", "flows_new", "flows_moved", "passed", "not_ipv4"];

pub struct MaglevLb {
    ports: u8,
    vip: u32,
    m: u32,
    pub backends: Vec<u32>,
    table: Vec<u16>,
    pub flows: FastMap<FlowKey, u32>,
    pub counters: Counters,
}

fn is_prime(n: u32) -> bool {
    n >= 2 && (2..).take_while(|d: &u32| (*d as u64) * (*d as u64) <= n as u64).all(|d| n % d != 0)
}

/// Maglev lookup table for `backends` (by address), size `m` (prime).
pub fn populate(backends: &[u32], m: u32) -> Vec<u16> {
    let n = backends.len();
    let mut table = vec![u16::MAX; m as usize];
    if n == 0 {
        return table;
    }
    let perm: Vec<(u64, u64)> = backends
        .iter()
        .map(|&b| {
            let h1 = mix64(b as u64 ^ 0x5151_5151);
            let h2 = mix64(b as u64 ^ 0xa3a3_a3a3_0000);
            (h1 % m as u64, h2 % (m as u64 - 1) + 1)
        })
        .collect();
    let mut next = vec![0u64; n];
    let mut filled = 0;
    'outer: loop {
        for i in 0..n {
            let (off, skip) = perm[i];
            let mut c = (off + next[i] * skip) % m as u64;
            while table[c as usize] != u16::MAX {
                next[i] += 1;
                c = (off + next[i] * skip) % m as u64;
            }
            table[c as usize] = i as u16;
            next[i] += 1;
            filled += 1;
            if filled == m {
                break 'outer;
            }
        }
    }
    table
}

impl MaglevLb {
    pub fn new(ports: u8, c: LbConfig) -> Result<Self, String> {
        let vip = state::parse_ipv4(&c.vip).map_err(|e| format!("vip: {e}"))?;
        if !is_prime(c.table_size) || c.table_size < 7 || c.table_size > 1_000_003 {
            return Err(format!("table_size: {} must be a prime in 7..1000003", c.table_size));
        }
        let mut lb = MaglevLb { ports, vip, m: c.table_size, backends: vec![], table: vec![], flows: FastMap::default(), counters: Counters::new(C) };
        let b = c.backends.iter().enumerate().map(|(i, s)| state::parse_ipv4(s).map_err(|e| format!("backends[{i}]: {e}"))).collect::<Result<Vec<_>, _>>()?;
        if b.is_empty() {
            return Err("backends: at least one backend is needed".into());
        }
        lb.set_backends(b)?;
        Ok(lb)
    }

    pub fn set_backends(&mut self, b: Vec<u32>) -> Result<(), String> {
        if b.len() >= u16::MAX as usize || b.len() as u32 > self.m {
            return Err(format!("backends: {} is more than the table holds", b.len()));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(d) = b.iter().find(|x| !seen.insert(**x)) {
            return Err(format!("backends: {} listed twice", std::net::Ipv4Addr::from(*d)));
        }
        self.table = populate(&b, self.m);
        self.backends = b;
        Ok(())
    }

    pub fn pick(&self, k: &FlowKey) -> Option<u32> {
        let i = self.table[(k.hash64() % self.m as u64) as usize];
        self.backends.get(i as usize).copied()
    }
}

impl NetworkFunction for MaglevLb {
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, _now: u64) -> NfVerdict {
        self.counters.inc(0);
        let out = NfVerdict::Forward { port: other_port(self.ports, in_port) };
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(6);
            return out;
        };
        if p.fragment || !(p.key.proto == PROTO_TCP || p.key.proto == PROTO_UDP) {
            self.counters.inc(5);
            return out;
        }
        if p.key.dst == self.vip {
            let be = match self.flows.get(&p.key) {
                Some(&b) if self.backends.contains(&b) => b,
                old => {
                    let Some(b) = self.pick(&p.key) else {
                        self.counters.inc(5);
                        return out;
                    };
                    self.counters.inc(if old.is_some() { 4 } else { 3 });
                    self.flows.insert(p.key, b);
                    b
                }
            };
            pkt::set_addr(f, &p, true, be);
            self.counters.inc(1);
        } else {
            let mut k = p.key.reversed();
            k.dst = self.vip;
            match self.flows.get(&k) {
                Some(&b) if b == p.key.src => {
                    pkt::set_addr(f, &p, false, self.vip);
                    self.counters.inc(2);
                }
                _ => self.counters.inc(5),
            }
        }
        out
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst"], writes: &["ipv4_dst", "ipv4_src", "checksum"], drops: false, reencapsulates: false }
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        let arg = cmd.strip_prefix("backends").ok_or_else(|| format!("maglev_lb: no command {cmd:?} (backends a,b,...)"))?;
        let b = arg.split(',').map(str::trim).filter(|s| !s.is_empty()).map(state::parse_ipv4).collect::<Result<Vec<_>, _>>()?;
        self.set_backends(b)?;
        Ok(format!("{} backends", self.backends.len()))
    }
    crate::nf_methods!(flows);
}

impl Stateful for MaglevLb {
    const KIND: &'static str = "maglev_lb";
    const VERSION: u16 = 1;
    type Flow = u32;
    type Shared = Vec<u32>;
    crate::each_flow_of!(flows);
    fn write_flow(&self, w: &mut Writer, v: &u32) {
        w.u32(*v);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<u32, StateError> {
        r.u32("backend")
    }
    fn write_shared(&self, w: &mut Writer) {
        w.var(self.backends.len() as u64);
        for b in &self.backends {
            w.u32(*b);
        }
    }
    fn read_shared(&self, r: &mut Reader) -> Result<Vec<u32>, StateError> {
        let n = r.var_max(self.m as u64, "backend count")?;
        let v: Vec<u32> = (0..n).map(|_| r.u32("backend")).collect::<Result<_, _>>()?;
        let mut s = std::collections::HashSet::new();
        if v.is_empty() || !v.iter().all(|x| s.insert(*x)) {
            return Err(r.err("backend list empty or with duplicates"));
        }
        Ok(v)
    }
    fn install(&mut self, flows: Vec<(FlowKey, u32)>, shared: Option<Vec<u32>>, replace: bool) {
        if replace {
            self.flows.clear();
        }
        self.flows.extend(flows);
        if let Some(b) = shared {
            if b != self.backends {
                let _ = self.set_backends(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::tcp;

    fn lb() -> MaglevLb {
        MaglevLb::new(2, LbConfig { vip: "10.9.9.9".into(), backends: (1..=5).map(|i| format!("10.1.0.{i}")).collect(), table_size: 65537 }).unwrap()
    }

    #[test]
    fn balanced_consistent_and_sticky() {
        let t = populate(&[1, 2, 3, 4, 5], 65537);
        let mut cnt = [0; 5];
        t.iter().for_each(|&i| cnt[i as usize] += 1);
        assert!(cnt.iter().all(|&c| (13000..=13215).contains(&c)), "{cnt:?}");
        // removing one backend moves only its share of table entries (minimal disruption)
        let t2 = populate(&[1, 2, 3, 5], 65537);
        let moved = t.iter().zip(&t2).filter(|(a, b)| *a != &3 && [1u32, 2, 3, 5][**b as usize] != [1u32, 2, 3, 4, 5][**a as usize]).count();
        assert!(moved < 65537 / 20, "moved {moved}");
        let mut nf = lb();
        let mut chosen = vec![];
        for i in 0..200u32 {
            let mut f = tcp(0x0a000000 + i, 0x0a090909, 1000 + i as u16, 80, 0x02, 1, b"");
            nf.process(&mut f, 0, 0);
            chosen.push(pkt::parse(&f).unwrap().key.dst);
        }
        nf.command("backends 10.1.0.1,10.1.0.2,10.1.0.3,10.1.0.5,10.1.0.6").unwrap();
        for i in 0..200u32 {
            let mut f = tcp(0x0a000000 + i, 0x0a090909, 1000 + i as u16, 80, 0x10, 2, b"");
            nf.process(&mut f, 0, 0);
            let d = pkt::parse(&f).unwrap().key.dst;
            if chosen[i as usize] != 0x0a010004 {
                assert_eq!(d, chosen[i as usize], "flow {i} kept its backend");
            } else {
                assert_ne!(d, 0x0a010004);
            }
        }
        // replies are rewritten back to the VIP
        let b = chosen[0];
        let mut r = tcp(b, 0x0a000000, 80, 1000, 0x12, 1, b"");
        nf.process(&mut r, 1, 0);
        assert_eq!(pkt::parse(&r).unwrap().key.src, 0x0a090909);
    }
}
