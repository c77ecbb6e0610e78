//! Classifier lookup speed on a ClassBench-style rule set, in pure Rust.
//!
//!   cargo bench -p dp-core --bench classbench -- DIR [ITER] [--batch-only]
//!
//! DIR holds `acl.rules` and `trace.csv` as written by
//! `../shared/bench/classbench_gen.py` (the dpdk-test-acl input). Rule i gets
//! priority N - i (first line highest, as rte_acl), loaded through
//! `dp_core::acl` (port ranges as ranges). Checks every packet
//! against the expected rule, then times batched lookups (no flow cache) and
//! cached lookups; prints lookups per second. Without DIR it prints usage.

use dp_core::acl::AclRule;
use dp_core::field::{put, Field, Key, KEY_WORDS};
use std::time::Instant;

fn ip(s: &str) -> u32 {
    s.split('.').fold(0u32, |a, x| (a << 8) | x.trim().parse::<u32>().unwrap())
}

fn prefix(s: &str) -> (u32, u32) {
    let (a, l) = s.split_once('/').unwrap();
    (ip(a), l.parse().unwrap())
}

#[allow(dead_code)]
fn set(k: &mut Key, m: &mut Key, f: Field, v: u128, mask: u128) {
    put(k, f.slot(), v & mask);
    put(m, f.slot(), mask);
}

fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: cargo bench -p dp-core --bench classbench -- DIR [ITER]  (DIR from classbench_gen.py)");
        return;
    };
    let iters: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let rules_txt = std::fs::read_to_string(format!("{dir}/acl.rules")).expect("acl.rules");
    let lines: Vec<&str> = rules_txt.lines().filter(|l| l.starts_with('@')).collect();
    let n = lines.len();
    let t0 = Instant::now();
    // the rules through dp_core::acl, as `tandem bench classifier` loads them
    // (port ranges held as ranges, one classifier rule per line)
    let range = |s: &str| -> (u16, u16) {
        let (lo, hi) = s.split_once(':').unwrap();
        (lo.trim().parse().unwrap(), hi.trim().parse().unwrap())
    };
    let acl: Vec<AclRule> = lines
        .iter()
        .map(|line| {
            let cols: Vec<&str> = line[1..].split('\t').collect();
            let (s, sl) = prefix(cols[0]);
            let (d, dl) = prefix(cols[1]);
            let (pv, pm) = cols[4].trim().split_once('/').unwrap();
            let hex = |x: &str| u8::from_str_radix(x.trim_start_matches("0x"), 16).unwrap();
            AclRule { src: s, src_len: sl as u8, dst: d, dst_len: dl as u8, sport: range(cols[2]), dport: range(cols[3]), proto: hex(pv) & hex(pm), proto_mask: hex(pm) }
        })
        .collect();
    let mut c = dp_core::acl::classifier(&acl).expect("at most 65,535 rules");
    c.cache_enabled = true;
    let load = t0.elapsed().as_secs_f64();
    let trace = std::fs::read_to_string(format!("{dir}/trace.csv")).expect("trace.csv");
    let mut keys = Vec::new();
    let mut want = Vec::new();
    for line in trace.lines().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        let mut k = [0u64; KEY_WORDS];
        let ones = [u64::MAX; KEY_WORDS];
        let mut m = ones;
        set(&mut k, &mut m, Field::EthType, 0x0800, 0xffff);
        set(&mut k, &mut m, Field::Ipv4Src, u128::from(ip(c[0])), 0xffff_ffff);
        set(&mut k, &mut m, Field::Ipv4Dst, u128::from(ip(c[1])), 0xffff_ffff);
        set(&mut k, &mut m, Field::TcpSrc, c[2].parse().unwrap(), 0xffff);
        set(&mut k, &mut m, Field::TcpDst, c[3].parse().unwrap(), 0xffff);
        set(&mut k, &mut m, Field::IpProto, c[4].parse().unwrap(), 0xff);
        keys.push(k);
        want.push(c[5].trim().parse::<i64>().unwrap());
    }
    let mut out = vec![None; keys.len()];
    let t_build = Instant::now();
    c.lookup_batch(&keys, &mut out);
    let first_pass = t_build.elapsed().as_secs_f64();
    let stats = c.tree_stats();
    let wrong = out.iter().zip(&want).filter(|(o, &w)| o.map_or(-1, |(_, id)| i64::from(id)) != w).count();
    let t = Instant::now();
    let c0 = cpu_secs();
    for _ in 0..iters {
        c.lookup_batch(&keys, &mut out);
    }
    let rate = (keys.len() * iters) as f64 / t.elapsed().as_secs_f64();
    let rate_cpu = (keys.len() * iters) as f64 / (cpu_secs() - c0);
    if std::env::args().any(|a| a == "--batch-only") {
        println!("{n} rules; {} packets, {wrong} wrong; batched, no cache: {:.2} M wall, {:.2} M per CPU-second", keys.len(), rate / 1e6, rate_cpu / 1e6);
        return;
    }
    // the scalar tree walk on the same rules, when the AVX-512 one ran
    let simd = c.uses_simd();
    let mut scalar_line = None;
    if simd {
        c.set_simd(false);
        c.lookup_batch(&keys, &mut out);
        let wrong_s = out.iter().zip(&want).filter(|(o, &w)| o.map_or(-1, |(_, id)| i64::from(id)) != w).count();
        let c0 = cpu_secs();
        for _ in 0..iters {
            c.lookup_batch(&keys, &mut out);
        }
        let rate_s = (keys.len() * iters) as f64 / (cpu_secs() - c0);
        scalar_line = Some(format!("lookups/s, batched, no cache, scalar tree walk: {:.2} M per CPU-second ({wrong_s} wrong); AVX-512 / scalar {:.2}", rate_s / 1e6, rate_cpu / rate_s));
        c.set_simd(true);
    }
    let t = Instant::now();
    let mut hits = 0usize;
    for _ in 0..iters {
        for k in &keys {
            hits += c.lookup_cached(k).is_some() as usize;
        }
    }
    let rate_c = (keys.len() * iters) as f64 / t.elapsed().as_secs_f64();
    // the same batched lookups with tuple space search only (no tree), for comparison
    c.set_tree_policy(None);
    let t = Instant::now();
    let c0 = cpu_secs();
    for _ in 0..iters {
        c.lookup_batch(&keys, &mut out);
    }
    let rate_tss = (keys.len() * iters) as f64 / t.elapsed().as_secs_f64();
    let rate_tss_cpu = (keys.len() * iters) as f64 / (cpu_secs() - c0);
    let wrong_tss = out.iter().zip(&want).filter(|(o, &w)| o.map_or(-1, |(_, id)| i64::from(id)) != w).count();
    println!("{n} rules ({} subtables) loaded in {load:.2} s; {} packets, {wrong} wrong", c.n_subtables(), keys.len());
    match stats {
        Some((size, dims, depth, rest)) => println!(
            "decision trees: {:.1} MB, {dims} dimensions, depth <= {depth}, {rest} subtables left to tuple space; first pass (incl. build) {first_pass:.3} s",
            size as f64 * 16.0 / 1e6
        ),
        None => println!("no decision tree (tuple space search only)"),
    }
    println!("lookups/s, batched, no cache ({} tree walk): {:.2} M wall, {:.2} M per CPU-second", if simd { "AVX-512" } else { "scalar" }, rate / 1e6, rate_cpu / 1e6);
    if let Some(l) = scalar_line {
        println!("{l}");
    }
    println!("lookups/s, exact-match cache: {:.2} M ({hits} hits)", rate_c / 1e6);
    println!("lookups/s, batched, tuple space search only: {:.2} M wall, {:.2} M per CPU-second ({wrong_tss} wrong)", rate_tss / 1e6, rate_tss_cpu / 1e6);
}
