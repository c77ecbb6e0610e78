//! `controller(…)` with a wire reason above 5 and with `meter_id=M` in dp-core, as
//! Open vSwitch 3.1 runs them (measured on one bridge: reason 6 → `no_match`,
//! 7 and 8..255 → nothing; a pktps meter of rate 2 burst 3 lets 3 of 20 packet-ins
//! sent at once through, the packets themselves going on; a meter is resolved when the
//! rule is added or modified).

use dp_core::meter::{Band, BandKind, MeterConfig};
use dp_core::pipeline::*;
use dp_core::rule::ControllerAction;

fn frame() -> Vec<u8> {
    // IPv4 with DSCP AF11 (10), so a remark band has something to raise
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend([0x45, 10 << 2, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.resize(60, 0);
    f
}

fn ctl(reason: u8, meter_id: Option<u32>) -> Action {
    Action::Controller(Box::new(ControllerAction {
        max_len: 0xffff,
        controller_id: 0,
        reason: ControllerReason::of_action(reason),
        userdata: vec![],
        meter_id,
    }))
}

/// One rule applying `acts`, added after the `meters` (a meter is resolved when the rule is added).
fn pipeline(acts: Vec<Action>, meters: Vec<MeterConfig>) -> Pipeline {
    let mut p = Pipeline::new(1);
    for port in 1..=3 {
        p.add_port(port);
    }
    for m in meters {
        p.add_meter(m).unwrap();
    }
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(acts))).unwrap();
    p
}

fn pktps(id: u32, rate: u32, burst: u32, kind: BandKind) -> MeterConfig {
    MeterConfig { id, pktps: true, burst: true, stats: true, bands: vec![Band { kind, rate, burst_size: burst }] }
}

fn pins(fates: &[Fate]) -> Vec<ControllerReason> {
    fates.iter().filter_map(|f| if let Fate::Controller { reason, .. } = f { Some(*reason) } else { None }).collect()
}

fn outputs(fates: &[Fate]) -> usize {
    fates.iter().filter(|f| matches!(f, Fate::Output { .. })).count()
}

#[test]
fn reason_6_is_no_match_and_7_and_above_send_nothing() {
    assert_eq!(ControllerReason::of_action(6), Some(ControllerReason::NoMatch));
    assert_eq!(ControllerReason::of_action(5), Some(ControllerReason::PacketOut));
    for n in [7u8, 8, 200, 255] {
        assert_eq!(ControllerReason::of_action(n), None);
    }
    let mut p = pipeline(vec![ctl(6, None), ctl(7, None), ctl(8, None), ctl(255, None), Action::output(2)], vec![]);
    let fates = p.process(Packet::new(frame()), 1);
    assert_eq!(pins(&fates), vec![ControllerReason::NoMatch]);
    assert_eq!(outputs(&fates), 1);
}

#[test]
fn a_burst_of_packet_ins_is_cut_by_the_meter_and_the_packets_go_on() {
    let mut p = pipeline(vec![ctl(1, Some(1)), Action::output(2)], vec![pktps(1, 2, 3, BandKind::Drop)]);
    p.set_now_ns(0);
    let (mut sent, mut out) = (0, 0);
    for _ in 0..20 {
        let fates = p.process(Packet::new(frame()), 1);
        sent += pins(&fates).len();
        out += outputs(&fates);
        assert!(fates.iter().all(|f| !matches!(f, Fate::Controller { pending: Some(_), .. })));
    }
    assert_eq!((sent, out), (3, 20)); // (the burst's 3 tokens; no time passes)
    let c = p.meters().counters(1).unwrap();
    assert_eq!((c.packets_in, c.bands[0].0), (20, 17));
    p.set_now_ns(1_000_000_000); // one second: the rate refills 2 tokens
    let sent: usize = (0..5).map(|_| pins(&p.process(Packet::new(frame()), 1)).len()).sum();
    assert_eq!(sent, 2);
}

#[test]
fn a_missing_meter_passes_every_packet_in() {
    let mut p = pipeline(vec![ctl(1, Some(9))], vec![]);
    let sent: usize = (0..10).map(|_| pins(&p.process(Packet::new(frame()), 1)).len()).sum();
    assert_eq!(sent, 10);
}

#[test]
fn a_reason_that_sends_nothing_still_takes_its_tokens() {
    // reason 7 sends nothing, but its meter counts the packet: the next action's packet-in finds the bucket empty
    let mut p = pipeline(vec![ctl(7, Some(1)), ctl(1, Some(1))], vec![pktps(1, 1, 1, BandKind::Drop)]);
    let fates = p.process(Packet::new(frame()), 1);
    assert!(pins(&fates).is_empty(), "{fates:?}");
    assert_eq!(p.meters().counters(1).unwrap().packets_in, 2);
}

#[test]
fn packet_ins_and_a_later_meter_instruction_share_the_bucket_in_order() {
    // table 0: controller(meter_id=1), goto 1; table 1: meter:1, output:2. Bucket of 1 packet:
    // the packet-in takes it (it comes first), so the meter instruction drops the packet.
    let mut p = Pipeline::new(2);
    for port in 1..=3 {
        p.add_port(port);
    }
    p.add_meter(pktps(1, 1, 1, BandKind::Drop)).unwrap();
    let mut ins0 = Instructions::apply(vec![ctl(1, Some(1))]);
    ins0.goto = Some(1);
    p.add_rule(Rule::new(0, 1, vec![], ins0)).unwrap();
    let mut ins1 = Instructions::apply(vec![Action::output(2)]);
    ins1.meter = Some(1);
    p.add_rule(Rule::new(1, 1, vec![], ins1)).unwrap();
    let fates = p.process(Packet::new(frame()), 1);
    assert_eq!((pins(&fates).len(), outputs(&fates)), (1, 0), "{fates:?}");
}

#[test]
fn a_remark_band_remarks_the_packet_in_only() {
    let mut p = pipeline(vec![ctl(1, Some(1)), Action::output(2)], vec![pktps(1, 1, 1, BandKind::DscpRemark { prec_level: 1 })]);
    p.process(Packet::new(frame()), 1); // takes the one token
    let fates = p.process(Packet::new(frame()), 1);
    let dscp = |data: &[u8]| data[15] >> 2;
    for f in &fates {
        match f {
            Fate::Controller { packet, .. } => assert_eq!(dscp(&packet.data), 12), // AF11 -> AF12
            Fate::Output { packet, .. } => assert_eq!(dscp(&packet.data), 10),
            Fate::Drop { .. } => panic!("{fates:?}"),
        }
    }
    assert_eq!(pins(&fates).len(), 1);
}

#[test]
fn the_meter_is_resolved_when_the_rule_is_added_as_open_vswitch_does() {
    let send = |p: &mut Pipeline| (0..10).map(|_| pins(&p.process(Packet::new(frame()), 1)).len()).sum::<usize>();
    // a meter added after the rule meters nothing (Open vSwitch: packet_in_count 0)
    let mut p = pipeline(vec![ctl(1, Some(1)), Action::output(2)], vec![]);
    p.add_meter(pktps(1, 2, 3, BandKind::Drop)).unwrap();
    assert_eq!(send(&mut p), 10);
    assert_eq!(p.meters().counters(1).unwrap().packets_in, 0);
    // a modify resolves it anew
    p.modify(Rule::new(0, 1, vec![], Instructions::apply(vec![ctl(1, Some(1))])), true).unwrap();
    assert_eq!(send(&mut p), 3);
    // deleted after the rule: unmetered; added again: metered again (a full bucket)
    p.remove_meter(1);
    assert_eq!(send(&mut p), 10);
    p.add_meter(pktps(1, 2, 3, BandKind::Drop)).unwrap();
    assert_eq!(send(&mut p), 3);
}

// pometer: a PACKET_OUT's `controller(meter_id=M)` (the endpoint sends its packet-in, the
// switch holding M's budget runs the meter: `Pipeline::meter_packet_in`)
#[test]
fn a_packet_out_packet_in_spends_from_the_bucket_the_flows_use() {
    let mut p = pipeline(vec![], vec![pktps(1, 1, 2, BandKind::Drop)]);
    let mut ins = Instructions::apply(vec![Action::output(2)]);
    ins.meter = Some(1); // meter:1,output:2, above the pipeline's rule
    p.add_rule(Rule::new(0, 2, vec![], ins)).unwrap();
    let mut f = frame();
    assert!(p.meter_packet_in(1, &mut f));
    assert_eq!(outputs(&p.process(Packet::new(frame()), 1)), 1); // (the second token)
    assert_eq!(outputs(&p.process(Packet::new(frame()), 1)), 0);
    assert!(!p.meter_packet_in(1, &mut f));
    p.set_now_ns(1_000_000_000); // (one token refilled)
    assert!(p.meter_packet_in(1, &mut f));
    assert!(!p.meter_packet_in(1, &mut f));
    let c = p.meters().counters(1).unwrap();
    assert_eq!((c.packets_in, c.bands[0].0), (6, 3));
    assert!(p.meter_packet_in(9, &mut f)); // (no meter 9: passed, as Open vSwitch without it)
}

#[test]
fn a_packet_out_packet_in_is_remarked_by_a_dscp_band() {
    let mut p = pipeline(vec![], vec![pktps(1, 1, 1, BandKind::DscpRemark { prec_level: 1 })]);
    p.set_now_ns(0);
    let (mut first, mut second) = (frame(), frame());
    assert!(p.meter_packet_in(1, &mut first) && p.meter_packet_in(1, &mut second));
    assert_eq!(first, frame());
    assert_eq!(second[15] >> 2, 12); // AF11 -> AF12
}
