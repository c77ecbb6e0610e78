//! NF migration inside the emulator (migration.rs): a running NF moves from the
//! host to the sNIC while traffic flows; nothing is lost or duplicated and the
//! state (the NF's packet counters) arrives with it.

use dp_emu::*;
use dp_nf::make_nf;

/// sNIC port 1 (traffic in) -> PCIe pair 0 -> host NF `S` (ports 3/4) -> host port 5 (sink).
/// `D` waits on the sNIC (ports 6/7); its output crosses PCIe pair 1 to host port 9 -> 5.
fn machine(pps: f64) -> (Emulator, u16, u32, u32) {
    let mut e = Emulator::new(3);
    let h = e.add_device(DeviceSpec::new("host", 4, 2.7)).unwrap();
    let n = e.add_device(DeviceSpec::new("snic", 8, 1.2)).unwrap();
    let mut ps = PcieSpec::new("pcie0", h, n, 32.0);
    ps.latency_ns = 13_000.0;
    let l = e.add_pcie_link(ps).unwrap();
    for (pair_host, pair_snic) in [(2, 2), (9, 8)] {
        let pair = e.add_pcie_pair(l).unwrap();
        e.connect(Target::Switch { dev: h, port: pair_host }, Target::Pcie { link: l, pair, dir: 0 }).unwrap();
        e.connect(Target::Switch { dev: n, port: pair_snic }, Target::Pcie { link: l, pair, dir: 1 }).unwrap();
    }
    let s = e.add_nf("S", h, make_nf("fixed_cost", 2, 400.0, 0.0).unwrap(), None, &[]).unwrap();
    let d = e.add_nf("D", n, make_nf("fixed_cost", 2, 400.0, 0.0).unwrap(), None, &[]).unwrap();
    e.connect(Target::Switch { dev: h, port: 3 }, Target::Nf { nf: s, port: 0 }).unwrap();
    e.connect(Target::Switch { dev: h, port: 4 }, Target::Nf { nf: s, port: 1 }).unwrap();
    e.connect(Target::Switch { dev: n, port: 6 }, Target::Nf { nf: d, port: 0 }).unwrap();
    e.connect(Target::Switch { dev: n, port: 7 }, Target::Nf { nf: d, port: 1 }).unwrap();
    let sink = e.add_sink("vm");
    e.wire(Target::Switch { dev: h, port: 5 }, Target::Sink { sink }).unwrap();
    e.set_port_map(n, &[(1, 2)]).unwrap();
    e.set_port_map(h, &[(2, 3), (4, 5), (9, 5)]).unwrap();
    let mut src = SourceSpec::new("wan", Arrival::Constant { pps });
    src.concurrent_flows = 64;
    src.stop = Some(PS_PER_S / 1000); // 1 ms of traffic, then everything lands
    e.add_source(src, Target::Switch { dev: n, port: 1 }).unwrap();
    (e, n, s, d)
}

fn field(json: &str, key: &str) -> u64 {
    json.split(&format!("\"{key}\":")).nth(1).unwrap().split([',', '}']).next().unwrap().parse::<f64>().unwrap() as u64
}

#[test]
fn host_to_snic_move_loses_nothing_and_carries_the_state() {
    let (mut e, n, s, d) = machine(2e6);
    let end = PS_PER_S / 1000; // 1 ms: 2,000 packets
    e.set_horizon(end * 2);
    e.run_until(end / 2).unwrap();
    let mig = e.begin_migration(s, d, MigrationCost::default()).unwrap();
    e.set_port_map(n, &[(1, 6), (7, 8)]).unwrap(); // the switch-over
    assert!(e.begin_migration(s, d, MigrationCost::default()).unwrap_err().contains("already migrating"));
    e.run_until(end).unwrap(); // pauses when the migration ends
    assert_eq!(e.take_migration_pauses(), vec![mig]);
    assert_eq!(e.migration_done(mig), Some(true));
    e.run_until(end * 2).unwrap();
    let m = e.metrics_json();
    let mut js = String::new();
    e.migration_json(mig).unwrap().write(&mut js);
    assert!(!m.contains("\"nf_retired\""), "{m}");
    assert!(!m.contains("\"migration_buffer_full\""), "{m}");
    assert!(field(&js, "buffered_packets") > 0, "{js}");
    assert_eq!((field(&js, "lost"), field(&js, "duplicated"), field(&js, "reordered")), (0, 0, 0), "{js}");
    assert_eq!(field(&js, "buffered_packets"), field(&js, "replayed_packets"));
    assert!(field(&js, "state_bytes") >= 32, "fixed_cost state: four u64 counters ({js})");
    let s_pkts = field(m.split("\"S\":").nth(1).unwrap(), "packets");
    let d_pkts = field(m.split("\"D\":").nth(1).unwrap(), "packets");
    let rx = field(m.split("\"vm\":").nth(1).unwrap(), "rx_packets");
    let tx = field(&m, "tx_packets");
    assert_eq!(tx, 2000);
    // every packet processed by exactly one instance and delivered once
    assert_eq!((s_pkts + d_pkts, rx), (tx, tx), "{m}");
    assert!(s_pkts > 900 && d_pkts > 900, "{m}");
    // D's imported counters continue S's: its rx0 counts every packet either instance took in
    let blob = e.nf_mut(d).unwrap().export_state();
    let rx0 = u64::from_le_bytes(blob[blob.len() - 32..blob.len() - 24].try_into().unwrap());
    assert_eq!(rx0, s_pkts + d_pkts, "state moved with the NF");
}


/// A move called off before the state moved (the caller switched the traffic
/// back): the source keeps its state and takes what the destination had
/// buffered and what still reaches it; nothing lost, every packet processed
/// once, by the source.
#[test]
fn an_aborted_move_hands_everything_back_to_the_source() {
    let (mut e, n, s, d) = machine(2e6);
    let end = PS_PER_S / 1000;
    e.set_horizon(end * 2);
    e.run_until(end / 2).unwrap();
    let mig = e.begin_migration(s, d, MigrationCost::default()).unwrap();
    e.set_port_map(n, &[(1, 6), (7, 8)]).unwrap(); // the switch-over ...
    e.run_until(end / 2 + 5_000_000).unwrap(); // 5 µs: packets reach D's buffer (the drain takes longer)
    e.set_port_map(n, &[(1, 2)]).unwrap(); // ... and back
    e.abort_migration(mig).unwrap();
    e.abort_migration(mig).unwrap(); // (again: nothing more happens)
    e.run_until(end * 2).unwrap();
    assert!(e.take_migration_pauses().is_empty());
    let m = e.metrics_json();
    let mut js = String::new();
    e.migration_json(mig).unwrap().write(&mut js);
    assert!(js.contains("\"aborted\""), "{js}");
    assert!(field(&js, "buffered_packets") > 0, "{js}");
    let s_pkts = field(m.split("\"S\":").nth(1).unwrap(), "packets");
    let d_pkts = field(m.split("\"D\":").nth(1).unwrap(), "packets");
    let rx = field(m.split("\"vm\":").nth(1).unwrap(), "rx_packets");
    assert_eq!((s_pkts, d_pkts, rx), (2000, 0, 2000), "{m}");
    // the source's own counters saw every packet: its state never left
    let blob = e.nf_mut(s).unwrap().export_state();
    let rx0 = u64::from_le_bytes(blob[blob.len() - 32..blob.len() - 24].try_into().unwrap());
    assert_eq!(rx0, 2000);
    // a finished move cannot be called off
    let (mut e2, n2, s2, d2) = machine(2e6);
    e2.set_horizon(end * 2);
    e2.run_until(end / 2).unwrap();
    let mig2 = e2.begin_migration(s2, d2, MigrationCost::default()).unwrap();
    e2.set_port_map(n2, &[(1, 6), (7, 8)]).unwrap();
    e2.run_until(end * 2).unwrap();
    assert!(e2.abort_migration(mig2).unwrap_err().contains("already ended"));
}
