//! Quick emulation-speed probe: host switch -> PCIe -> sNIC switch -> 10 GbE, 64 B frames.
//!
//!   cargo run --release -p dp-emu --example speed -- [SIM_SECONDS] [--openflow]
//!
//! `--openflow` makes both switches dp-core OpenFlow pipelines with one
//! in_port -> output rule each (as `tandem bench emu_speed` does); the default
//! is fixed port maps.
use dp_core::pipeline::{Action, FieldMatch, Instructions, Rule};
use dp_core::Field;
use dp_emu::*;
use std::time::Instant;

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0.2);
    let mut e = Emulator::new(1);
    let h = e.add_device(DeviceSpec::new("host", 8, 2.7)).unwrap();
    let n = e.add_device(DeviceSpec::new("snic", 36, 1.2)).unwrap();
    let l = e.add_pcie_link(PcieSpec::new("pcie0", h, n, 32.0)).unwrap();
    let pair = e.add_pcie_pair(l).unwrap();
    e.connect(Target::Switch { dev: h, port: 2 }, Target::Pcie { link: l, pair, dir: 0 }).unwrap();
    e.connect(Target::Switch { dev: n, port: 1 }, Target::Pcie { link: l, pair, dir: 1 }).unwrap();
    e.add_eth_port(n, 2, EthSpec { name: "p0".into(), gbps: 10.0, queue_depth: 256, propagation_ns: 0.0 }).unwrap();
    if std::env::args().any(|a| a == "--openflow") {
        for dev in [h, n] {
            let mut sw = OpenFlowSwitch::new(1);
            sw.pipeline().add_port(1);
            sw.pipeline().add_port(2);
            let rule = Rule::new(0, 10, vec![FieldMatch::exact(Field::InPort, 1)], Instructions::apply(vec![Action::output(2)]));
            sw.pipeline().add_rule(rule).unwrap();
            e.set_switch(dev, Box::new(sw)).unwrap();
        }
    } else {
        e.set_port_map(h, &[(1, 2)]).unwrap();
        e.set_port_map(n, &[(1, 2)]).unwrap();
    }
    let mut s = SourceSpec::new("vm", Arrival::Constant { pps: 14.88e6 });
    s.concurrent_flows = 1024;
    e.add_source(s, Target::Switch { dev: h, port: 1 }).unwrap();
    let end = (secs * PS_PER_S as f64) as Ps;
    e.set_horizon(end);
    let t = Instant::now();
    e.run_until(end).unwrap();
    let wall = t.elapsed().as_secs_f64();
    let m = e.metrics_json();
    let rx: f64 = m.split("\"rx_packets\":").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
    println!("{rx} packets in {wall:.3} s wall = {:.2} Mpps simulated per wall-second", rx / wall / 1e6);
}
