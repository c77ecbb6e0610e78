//! The switch's clock and packet mark on the emulator's per-frame path: the
//! modelled time reaches the pipeline with each frame that needs it (meters),
//! and a mark set by one switch does not follow the packet through an NF.

use dp_core::meter::{Band, BandKind, MeterConfig};
use dp_core::pipeline::{Action, FieldMatch, Instructions, Rule};
use dp_core::Field;
use dp_emu::*;
use dp_nf::make_nf;

fn rx_of(metrics: &str, source: &str) -> u64 {
    let flow = metrics.split(&format!("\"{source}\":")).nth(1).expect("source in metrics");
    flow.split("\"rx_packets\":").nth(1).unwrap().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

fn openflow(ports: &[u32], rules: Vec<Rule>) -> OpenFlowSwitch {
    let mut sw = OpenFlowSwitch::new(1);
    for &p in ports {
        sw.pipeline().add_port(p);
    }
    for r in rules {
        sw.pipeline().add_rule(r).unwrap();
    }
    sw
}

/// A 1,000 packet/s meter (burst 10) on 10,000 packet/s for 0.5 s passes
/// 10 + 500 packets: the meter refills on each frame's modelled time. (Were
/// the clock not handed to the pipeline, it would stand at 0 and pass 10.)
#[test]
fn a_meter_runs_on_the_modelled_time_of_each_frame() {
    let mut e = Emulator::new(1);
    let h = e.add_device(DeviceSpec::new("host", 8, 2.7)).unwrap();
    e.add_eth_port(h, 2, EthSpec { name: "p0".into(), gbps: 10.0, queue_depth: 256, propagation_ns: 0.0 }).unwrap();
    let metered = Instructions { meter: Some(1), ..Instructions::apply(vec![Action::output(2)]) };
    let mut sw = openflow(&[1, 2], vec![]);
    let band = Band { kind: BandKind::Drop, rate: 1000, burst_size: 10 };
    sw.pipeline().add_meter(MeterConfig { id: 1, pktps: true, burst: true, stats: true, bands: vec![band] }).unwrap();
    sw.pipeline().add_rule(Rule::new(0, 10, vec![FieldMatch::exact(Field::InPort, 1)], metered)).unwrap();
    e.set_switch(h, Box::new(sw)).unwrap();
    let mut s = SourceSpec::new("vm", Arrival::Constant { pps: 10_000.0 });
    s.concurrent_flows = 4;
    e.add_source(s, Target::Switch { dev: h, port: 1 }).unwrap();
    let end = PS_PER_S / 2;
    e.set_horizon(end);
    e.run_until(end).unwrap();
    let rx = rx_of(&e.metrics_json(), "vm");
    assert!((505..=512).contains(&rx), "{rx} packets passed the meter, expected about 510");
}

/// The host switch marks every packet (pkt_mark 7) on its way to an NF; what
/// the NF sends back must arrive unmarked, as it would from a wire: a rule
/// that drops marked packets on the NF's return port must not see the mark.
#[test]
fn the_packet_mark_does_not_come_back_through_an_nf() {
    let mut e = Emulator::new(1);
    let h = e.add_device(DeviceSpec::new("host", 8, 2.7)).unwrap();
    let nf = e.add_nf("pt", h, make_nf("pass_through", 2, 0.0, 0.0).unwrap(), None, &[]).unwrap();
    e.connect(Target::Switch { dev: h, port: 2 }, Target::Nf { nf, port: 0 }).unwrap();
    e.connect(Target::Nf { nf, port: 1 }, Target::Switch { dev: h, port: 3 }).unwrap();
    e.add_eth_port(h, 4, EthSpec { name: "p0".into(), gbps: 10.0, queue_depth: 256, propagation_ns: 0.0 }).unwrap();
    let mark = Instructions::apply(vec![Action::SetField { field: Field::PktMark, value: 7 }, Action::output(2)]);
    let in_port = |p| FieldMatch::exact(Field::InPort, p);
    let rules = vec![
        Rule::new(0, 10, vec![in_port(1)], mark),
        Rule::new(0, 20, vec![in_port(3), FieldMatch::exact(Field::PktMark, 7)], Instructions::apply(vec![])),
        Rule::new(0, 10, vec![in_port(3)], Instructions::apply(vec![Action::output(4)])),
    ];
    e.set_switch(h, Box::new(openflow(&[1, 2, 3, 4], rules))).unwrap();
    let mut s = SourceSpec::new("vm", Arrival::Constant { pps: 100_000.0 });
    s.concurrent_flows = 8;
    e.add_source(s, Target::Switch { dev: h, port: 1 }).unwrap();
    let end = PS_PER_S / 100;
    e.set_horizon(end);
    e.run_until(end).unwrap();
    let rx = rx_of(&e.metrics_json(), "vm");
    assert!(rx >= 990, "only {rx} of about 1,000 packets came back unmarked");
}
