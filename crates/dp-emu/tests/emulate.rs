//! End-to-end checks of the timed emulator on small topologies.

use dp_emu::*;
use dp_nf::{make_nf, CostProfile};

/// host(VM port 1, PCIe port 2) == PCIe == sNIC(PCIe port 1, Ethernet port 2).
fn host_to_wire(seed: u64, arrival: Arrival, snic_gbps: f64) -> Emulator {
    host_to_wire_with(seed, arrival, snic_gbps, 32.0, 1000.0)
}

fn host_to_wire_with(seed: u64, arrival: Arrival, snic_gbps: f64, pcie_gbps: f64, pcie_latency_ns: f64) -> Emulator {
    let mut e = Emulator::new(seed);
    let h = e.add_device(DeviceSpec::new("host", 8, 2.7)).unwrap();
    let n = e.add_device(DeviceSpec::new("snic", 36, 1.2)).unwrap();
    let mut ps = PcieSpec::new("pcie0", h, n, pcie_gbps);
    ps.latency_ns = pcie_latency_ns;
    let l = e.add_pcie_link(ps).unwrap();
    let pair = e.add_pcie_pair(l).unwrap();
    e.connect(Target::Switch { dev: h, port: 2 }, Target::Pcie { link: l, pair, dir: 0 }).unwrap();
    e.connect(Target::Switch { dev: n, port: 1 }, Target::Pcie { link: l, pair, dir: 1 }).unwrap();
    e.add_eth_port(n, 2, EthSpec { name: "snic.p0".into(), gbps: snic_gbps, queue_depth: 256, propagation_ns: 0.0 }).unwrap();
    e.set_port_map(h, &[(1, 2)]).unwrap();
    e.set_port_map(n, &[(1, 2)]).unwrap();
    let mut s = SourceSpec::new("vm", arrival);
    s.concurrent_flows = 16;
    e.add_source(s, Target::Switch { dev: h, port: 1 }).unwrap();
    e
}

fn run(e: &mut Emulator, ps: Ps) -> String {
    e.set_horizon(ps);
    e.run_until(ps).unwrap();
    e.metrics_json()
}

#[test]
fn same_seed_same_metrics_different_seed_different() {
    let a = run(&mut host_to_wire(1, Arrival::Poisson { pps: 5e6 }, 10.0), PS_PER_S / 1000);
    let b = run(&mut host_to_wire(1, Arrival::Poisson { pps: 5e6 }, 10.0), PS_PER_S / 1000);
    let c = run(&mut host_to_wire(2, Arrival::Poisson { pps: 5e6 }, 10.0), PS_PER_S / 1000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn overload_drops_at_the_ethernet_queue_and_caps_throughput() {
    let mut e = host_to_wire(1, Arrival::Constant { pps: 20e6 }, 10.0);
    let m = run(&mut e, PS_PER_S / 1000);
    assert!(m.contains("\"eth_tx_queue_full\":"), "{m}");
    // 10 GbE carries 14.88 Mpps of 64 B frames.
    let rx = m.split("\"rx_packets\":").nth(1).unwrap().split(',').next().unwrap().parse::<f64>().unwrap();
    let mpps = rx / 1e-3 / 1e6;
    assert!((mpps - 14.88).abs() < 0.05, "{mpps}");
}

/// Minimum latency (ns) of 64 B packets at 1000 pps: no queueing.
fn unloaded_min_ns(snic_gbps: f64, pcie_gbps: f64, pcie_latency_ns: f64) -> f64 {
    let mut e = host_to_wire_with(1, Arrival::Constant { pps: 1000.0 }, snic_gbps, pcie_gbps, pcie_latency_ns);
    let m = run(&mut e, PS_PER_S / 100);
    let lat = m.split("\"latency_ns\":").nth(1).unwrap();
    lat.split("\"min\":").nth(1).unwrap().split(|c| c == ',' || c == '}').next().unwrap().parse().unwrap()
}

#[test]
fn unloaded_latency_is_sum_of_stages() {
    // Stages of a 64 B packet: PCIe serialisation (64 B x 8 / Gb/s), the PCIe
    // crossing latency, and the 10 GbE transmission with its 20 B preamble + IFG
    // (84 B x 8 / Gb/s). Each is changed alone and must move the latency by
    // exactly its own share.
    let base = unloaded_min_ns(10.0, 32.0, 1000.0);
    let bus = |gbps: f64| 64.0 * 8.0 / gbps;
    let wire = |gbps: f64| 84.0 * 8.0 / gbps;
    assert!((base - (bus(32.0) + 1000.0 + wire(10.0))).abs() <= 1.0, "{base}");
    let slower_crossing = unloaded_min_ns(10.0, 32.0, 3000.0);
    assert!((slower_crossing - base - 2000.0).abs() <= 1.0, "{slower_crossing} vs {base}");
    let half_bus = unloaded_min_ns(10.0, 16.0, 1000.0);
    assert!((half_bus - base - (bus(16.0) - bus(32.0))).abs() <= 1.0, "{half_bus} vs {base}");
    let faster_wire = unloaded_min_ns(40.0, 32.0, 1000.0);
    assert!((base - faster_wire - (wire(10.0) - wire(40.0))).abs() <= 1.0, "{faster_wire} vs {base}");
}

#[test]
fn two_nfs_sharing_cores_follow_eq9() {
    // SmartChain eq. (9): chain capacity = t1*t2/(t1+t2) when both run on the same cores.
    let mut e = Emulator::new(3);
    let mut snic = DeviceSpec::new("snic", 4, 1.0);
    snic.core_queue_depth = 64;
    let n = e.add_device(snic).unwrap();
    // Capacities on 4 cores x 1 GHz at 1500 B frames: cycles/byte = 4e9 * 8 / cap_bps.
    let cap = |gbps: f64| CostProfile { cycles_per_packet: 0.0, cycles_per_byte: 4e9 * 8.0 / (gbps * 1e9), accelerator: None };
    let pa = e.add_nf("payload_analyzer", n, make_nf("pass_through", 2, 0.0, 0.0).unwrap(), Some(cap(5.0)), &[]).unwrap();
    let mon = e.add_nf("monitor", n, make_nf("pass_through", 2, 0.0, 0.0).unwrap(), Some(cap(3.2)), &[]).unwrap();
    e.add_eth_port(n, 2, EthSpec { name: "out".into(), gbps: 100.0, queue_depth: 64, propagation_ns: 0.0 }).unwrap();
    e.connect(Target::Switch { dev: n, port: 10 }, Target::Nf { nf: pa, port: 0 }).unwrap();
    e.connect(Target::Nf { nf: pa, port: 1 }, Target::Nf { nf: mon, port: 0 }).unwrap();
    e.connect(Target::Nf { nf: mon, port: 1 }, Target::Switch { dev: n, port: 11 }).unwrap();
    e.set_port_map(n, &[(1, 10), (11, 2)]).unwrap();
    let mut s = SourceSpec::new("in", Arrival::Poisson { pps: 4e9 / 8.0 / 1500.0 });
    s.sizes = SizeDist::Fixed(1500);
    s.concurrent_flows = 256;
    e.add_source(s, Target::Switch { dev: n, port: 1 }).unwrap();
    e.set_horizon(PS_PER_S / 50);
    e.run_until(PS_PER_S / 50).unwrap();
    let m = e.metrics_json();
    let g = m.split("\"throughput_gbps\":").nth(1).unwrap().split(',').next().unwrap().parse::<f64>().unwrap();
    let want = 5.0 * 3.2 / 8.2;
    assert!((g - want).abs() / want < 0.03, "chain {g} Gb/s vs eq. (9) {want}");
    assert!(m.contains("core_queue_full"), "{m}");
}

/// Packets the wire's sink received, from the metrics.
fn sink_rx_packets(m: &str) -> f64 {
    let sink = m.split("\"wire:snic.p0\":{\"rx_packets\":").nth(1).unwrap();
    sink.split(',').next().unwrap().parse().unwrap()
}

#[test]
fn sources_entering_one_port_share_its_line_rate() {
    // Two 10 Mpps sources of 64 B frames (6.72 Gb/s each on the wire) enter one
    // 10 GbE port: together they get its 14.88 Mpps, not 20; alone, one gets its 10.
    let two = |second: bool| {
        let mut e = host_to_wire_with(1, Arrival::Constant { pps: 1000.0 }, 40.0, 32.0, 1000.0);
        for name in ["a", "b"].iter().take(if second { 2 } else { 1 }) {
            let mut s = SourceSpec::new(name, Arrival::Constant { pps: 10e6 });
            s.line_bps = Some(10e9);
            e.add_source(s, Target::Switch { dev: 0, port: 1 }).unwrap();
        }
        sink_rx_packets(&run(&mut e, PS_PER_S / 1000)) / 1e-3 / 1e6
    };
    let alone = two(false);
    assert!((alone - 10.0 - 0.001).abs() < 0.02, "{alone}");
    let both = two(true);
    assert!((both - 0.001 - 14.88).abs() < 0.05, "{both}");
}
