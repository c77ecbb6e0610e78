//! Pipeline speed in pure Rust: parse + 2 tables x N mixed-wildcard rules + output.
//!
//!   cargo bench -p dp-core --bench pipeline -- [RULES] [FLOWS] [PACKETS]
//!
//! Same shape as `benches/pipeline_speed.py` (which drives the pipeline through
//! the Python binding): table 0 rules on IPv4 prefixes, protocol, ports and
//! in_port write metadata and go to table 1, whose rules on metadata, prefixes
//! and ports output. Prints packets per second with the caches (the
//! whole-pipeline path cache and the per-table flow caches) on and off.

use dp_core::field::Field;
use dp_core::pipeline::{Action, Fate, FieldMatch, Instructions, Packet, Pipeline, Rule};
use std::time::Instant;

use dp_core::rng::XorShift64 as Rng;

fn pm(l: u32) -> u128 {
    if l == 0 { 0 } else { u128::from(u32::MAX << (32 - l)) }
}

fn frame(src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 46, 0, 0, 0, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src.to_be_bytes());
    f.extend_from_slice(&dst.to_be_bytes());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.resize(60, 0);
    f
}

/// CPU seconds this thread has run (Linux schedstat), for a one-core figure on a shared machine.
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = *args.first().unwrap_or(&10_000);
    let flows = *args.get(1).unwrap_or(&10_000);
    let packets = *args.get(2).unwrap_or(&2_000_000);
    let mut r = Rng(0x1234_5678_9abc_def1);
    let mut p = Pipeline::new(2);
    for port in 1..=8 {
        p.add_port(port);
    }
    let mut hints = Vec::new();
    for i in 0..n {
        let (src, dst) = (r.next() as u32, r.next() as u32);
        let sl = [0, 8, 16, 24, 32][r.below(5) as usize];
        let dl = [8, 16, 24, 32][r.below(4) as usize];
        let proto: u8 = if r.below(2) == 0 { 6 } else { 17 };
        let dport = [22u16, 53, 80, 443, 8080, r.next() as u16][r.below(6) as usize];
        let in_port = 1 + r.below(8) as u32;
        let mut m = vec![FieldMatch::exact(Field::EthType, 0x800), FieldMatch::masked(Field::Ipv4Dst, u128::from(dst) & pm(dl), pm(dl))];
        if sl > 0 {
            m.push(FieldMatch::masked(Field::Ipv4Src, u128::from(src) & pm(sl), pm(sl)));
        }
        if r.below(10) < 7 {
            m.push(FieldMatch::exact(Field::IpProto, u128::from(proto)));
            if r.below(10) < 6 {
                m.push(FieldMatch::exact(if proto == 6 { Field::TcpDst } else { Field::UdpDst }, u128::from(dport)));
            }
        }
        if r.below(10) < 3 {
            m.push(FieldMatch::exact(Field::InPort, u128::from(in_port)));
        }
        let ins = Instructions { write_metadata: Some((1 + r.below(63), 0xff)), goto: Some(1), ..Default::default() };
        p.add_rule(Rule::new(0, 1 + (i * 6) as u16 % 65000, m, ins)).ok();
        hints.push((src, dst, proto, dport, in_port));
    }
    for i in 0..n {
        let mut m = vec![FieldMatch::masked(Field::Metadata, u128::from(1 + r.below(63)), 0xff)];
        if r.below(2) == 0 {
            let dl = [8, 16, 24][r.below(3) as usize];
            m.push(FieldMatch::exact(Field::EthType, 0x800));
            m.push(FieldMatch::masked(Field::Ipv4Dst, u128::from(r.next() as u32) & pm(dl), pm(dl)));
        }
        let ins = Instructions::apply(vec![Action::output(1 + r.below(8) as u32)]);
        p.add_rule(Rule::new(1, 1 + (i * 7) as u16 % 65000, m, ins)).ok();
    }
    p.add_rule(Rule::new(0, 0, vec![], Instructions { goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(8)]))).unwrap();
    let traffic: Vec<(u32, Vec<u8>)> = (0..flows)
        .map(|_| {
            let h = hints[r.below(hints.len() as u64) as usize];
            (h.4, frame(h.0, h.1, h.2, 1024 + r.below(60000) as u16, h.3))
        })
        .collect();
    let modes: &[bool] = if std::env::args().any(|a| a == "--cache-only") { &[true] } else { &[true, false] };
    for &cache in modes {
        p.set_cache_enabled(cache);
        let mut out = Vec::with_capacity(4);
        let mut outputs = 0usize;
        let t = Instant::now();
        let c0 = cpu_secs();
        let mut done = 0;
        while done < packets {
            for (port, f) in &traffic {
                out.clear();
                p.process_into(Packet::new(f.clone()), *port, &mut out);
                outputs += out.iter().filter(|f| matches!(f, Fate::Output { .. })).count();
            }
            done += traffic.len();
        }
        let rate = done as f64 / t.elapsed().as_secs_f64();
        let cpu_rate = done as f64 / (cpu_secs() - c0);
        println!("cache {}: {:.2} Mpps per CPU-second, {:.2} Mpps wall ({} outputs / {} packets)", if cache { "on " } else { "off" }, cpu_rate / 1e6, rate / 1e6, outputs, done);
    }
}
