//! End-to-end checks of FairNIC isolation in the emulator: accelerator token
//! buckets and DRR Ethernet ports, with per-tenant metrics.

use dp_emu::*;
use dp_nf::{make_nf, CostProfile};

/// A number after `"key":` inside tenant `tenant`'s metrics object.
fn tenant_num(m: &str, tenant: &str, key: &str) -> f64 {
    let t = m.split("\"tenants\":").nth(1).expect("tenants block");
    let t = t.split(&format!("\"{tenant}\":")).nth(1).expect("tenant");
    let v = t.split(&format!("\"{key}\":")).nth(1).expect("key");
    v.split([',', '}']).next().unwrap().parse().unwrap()
}

/// Two tenants, each a source -> NF on its own cores -> wire; both NFs use one
/// 10 Gb/s accelerator. Tenant b sends 1500 B frames at 20 Gb/s, a 256 B at 2 Gb/s.
fn shared_accelerator(buckets: bool) -> String {
    let mut e = Emulator::new(1);
    let n = e.add_device(DeviceSpec::new("snic", 16, 1.2)).unwrap();
    e.add_accelerator(n, AccelSpec { name: "zip".into(), gbps: 10.0, setup_ns: 0.0, queue_depth: 1024 }).unwrap();
    let mut nfs = Vec::new();
    for (i, cores) in [(0u32, 0..8usize), (1, 8..16)] {
        let cost = CostProfile { cycles_per_packet: 600.0, cycles_per_byte: 0.0, accelerator: Some("zip".into()) };
        let nf = make_nf("fixed_cost", 2, 600.0, 0.0).unwrap();
        let f = e.add_nf(&format!("nf{i}"), n, nf, Some(cost), &cores.collect::<Vec<_>>()).unwrap();
        let (inp, out) = (10 * i + 1, 10 * i + 2);
        e.connect(Target::Switch { dev: n, port: inp + 100 }, Target::Nf { nf: f, port: 0 }).unwrap();
        e.connect(Target::Switch { dev: n, port: out + 100 }, Target::Nf { nf: f, port: 1 }).unwrap();
        e.add_eth_port(n, out, EthSpec { name: format!("out{i}"), gbps: 40.0, queue_depth: 1024, propagation_ns: 0.0 }).unwrap();
        nfs.push((f, inp, out));
    }
    let pairs: Vec<(u32, u32)> = nfs.iter().flat_map(|&(_, i, o)| [(i, i + 100), (o + 100, o)]).collect();
    e.set_port_map(n, &pairs).unwrap();
    for (i, (size, gbps)) in [(256u32, 2.0), (1500, 20.0)].into_iter().enumerate() {
        let mut s = SourceSpec::new(if i == 0 { "a" } else { "b" }, Arrival::Constant { pps: gbps * 1e9 / (size as f64 * 8.0) });
        s.sizes = SizeDist::Fixed(size);
        s.concurrent_flows = 100;
        e.add_source(s, Target::Switch { dev: n, port: nfs[i].1 }).unwrap();
    }
    e.add_tenant("a", &[0]).unwrap();
    e.add_tenant("b", &[1]).unwrap();
    if buckets {
        for (i, t) in ["a", "b"].iter().enumerate() {
            let b = e.add_token_bucket(n, "zip", t, 5.0, 10_000.0, 1024).unwrap();
            e.set_nf_bucket(nfs[i].0, b).unwrap();
        }
    }
    let end = PS_PER_S / 100;
    e.set_horizon(end);
    e.run_until(end).unwrap();
    e.metrics_json()
}

#[test]
fn token_buckets_keep_a_flooding_tenant_off_a_benign_one() {
    let shared = shared_accelerator(false);
    let limited = shared_accelerator(true);
    let a = |m: &str| tenant_num(m, "a", "throughput_gbps");
    let b = |m: &str| tenant_num(m, "b", "throughput_gbps");
    assert!(a(&shared) < 1.0, "{shared}");
    assert!((a(&limited) - 2.0).abs() < 0.05, "{limited}");
    assert!(b(&limited) > 4.5 && b(&limited) < 5.3, "{limited}");
    assert!(limited.contains("\"accelerator_rate_limited\":"));
    assert_eq!(shared_accelerator(true), limited, "same seed, same metrics");
}

/// Two sources into one 10 GbE port shared by DRR classes of weights 1 and 3.
fn drr_port(weights: Option<[f64; 2]>) -> String {
    let mut e = Emulator::new(1);
    let n = e.add_device(DeviceSpec::new("snic", 4, 1.2)).unwrap();
    let eth = e.add_eth_port(n, 3, EthSpec { name: "out".into(), gbps: 10.0, queue_depth: 512, propagation_ns: 0.0 }).unwrap();
    e.set_port_map(n, &[(1, 3), (2, 3)]).unwrap();
    for (i, name) in ["a", "b"].iter().enumerate() {
        let mut s = SourceSpec::new(name, Arrival::Poisson { pps: 1e6 });
        s.sizes = SizeDist::Fixed(1500);
        s.concurrent_flows = 10;
        e.add_source(s, Target::Switch { dev: n, port: i as u32 + 1 }).unwrap();
        e.add_tenant(name, &[i as u32]).unwrap();
    }
    if let Some([wa, wb]) = weights {
        e.set_eth_drr(eth, &[(wa, vec![0]), (wb, vec![1])], 1600.0).unwrap();
    }
    let end = PS_PER_S / 100;
    e.set_horizon(end);
    e.run_until(end).unwrap();
    e.metrics_json()
}

#[test]
fn drr_splits_a_congested_port_by_weight() {
    // Each source offers 12 Gb/s (Poisson) into a 10 GbE port: a FIFO splits it evenly.
    let fifo = drr_port(None);
    let drr = drr_port(Some([1.0, 3.0]));
    let (fa, fb) = (tenant_num(&fifo, "a", "throughput_gbps"), tenant_num(&fifo, "b", "throughput_gbps"));
    assert!((fa / fb - 1.0).abs() < 0.05, "{fifo}");
    let (da, db) = (tenant_num(&drr, "a", "throughput_gbps"), tenant_num(&drr, "b", "throughput_gbps"));
    assert!((db / da - 3.0).abs() < 0.1, "{drr}");
    // Work conserving: the line stays full either way.
    assert!(((da + db) - (fa + fb)).abs() < 0.05, "{fifo}\n{drr}");
}
