//! Ordinary rules' idle and hard timeouts (`Pipeline::flow_mod_timed`) in
//! modelled time: idle from the last hit, hard from install (restarted by a
//! modify), hard before idle when both are due, FLOW_REMOVED records only with
//! send_flow_rem, and timed rules are not learned flows. (Against Open vSwitch:
//! tests/endpoint/test_endpoint_timeouts.py.)

use dp_core::pipeline::*;
use dp_core::Field;

const SEC: u64 = 1_000_000_000;

fn frame(dst: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, 9, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn ports(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

/// eth_dst=02:00:00:00:00:<dst> -> output:<port>, at priority 10.
fn to(dst: u8, port: u32) -> Rule {
    let m = vec![FieldMatch { field: Field::EthDst, value: 0x0200_0000_0000 | u128::from(dst), mask: None }];
    Rule::new(0, 10, m, Instructions::apply(vec![Action::output(port)]))
}

fn timed(idle: u16, hard: u16) -> Timeouts {
    Timeouts { idle, hard, send_flow_rem: true }
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(1);
    for port in 1..=3 {
        p.add_port(port);
    }
    p
}

fn add(p: &mut Pipeline, r: Rule, t: Timeouts) -> u32 {
    p.flow_mod_timed(FlowModCommand::Add, r, OFPP_ANY, OFPG_ANY, false, t).unwrap()[0]
}

#[test]
fn an_idle_rule_kept_busy_stays_and_an_unused_one_idles_out() {
    let mut p = pipeline();
    add(&mut p, to(1, 1), timed(5, 0));
    add(&mut p, to(2, 2), timed(5, 0));
    for t in 0..=20 {
        p.set_now_ns(t * SEC);
        assert_eq!(ports(&p.process(Packet::new(frame(1)), 3)), vec![1], "t={t}");
    }
    assert_eq!(p.n_rules(), 1);
    let r = p.take_removed();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].reason, r[0].idle_timeout, r[0].hard_timeout), (RemovedReason::IdleTimeout, 5, 0));
    assert!((5 * SEC..=6 * SEC).contains(&r[0].duration_ns), "{}", r[0].duration_ns);
    assert_eq!(r[0].rule.matches[0].value, 0x0200_0000_0002);
    assert_eq!((r[0].stats.packets, r[0].stats.bytes), (0, 0));
    assert!(p.learned_flows().is_empty(), "a timed rule is no learned flow");
}

#[test]
fn a_hard_timeout_ends_a_busy_rule_with_its_counters() {
    let mut p = pipeline();
    let id = add(&mut p, to(1, 1), timed(3, 4));
    assert_eq!(p.rule_timeouts(id), Some(timed(3, 4)));
    for t in 0..4 {
        p.set_now_ns(t * SEC);
        assert_eq!(ports(&p.process(Packet::new(frame(1)), 3)), vec![1]);
    }
    p.set_now_ns(4 * SEC + 1);
    p.process(Packet::new(frame(1)), 3);
    let r = p.take_removed();
    assert_eq!(r.iter().map(|r| (r.id, r.reason, r.stats.packets, r.stats.bytes)).collect::<Vec<_>>(), vec![(id, RemovedReason::HardTimeout, 4, 240)]);
    assert_eq!(p.n_rules(), 0);
    assert_eq!(p.rule_timeouts(id), None);
}

#[test]
fn the_clock_alone_expires_a_rule_with_no_packet() {
    let mut p = pipeline();
    add(&mut p, to(1, 1), timed(0, 2));
    p.set_now_ns(SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 1);
    p.set_now_ns(2 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 0);
    assert_eq!(p.take_removed()[0].reason, RemovedReason::HardTimeout);
}

#[test]
fn a_modify_restarts_the_hard_timeout_and_keeps_the_timeouts() {
    let mut p = pipeline();
    let id = add(&mut p, to(1, 1), timed(0, 3));
    p.set_now_ns(2 * SEC);
    let ids = p.flow_mod_timed(FlowModCommand::ModifyStrict, to(1, 2), OFPP_ANY, OFPG_ANY, false, Timeouts::default()).unwrap();
    assert_eq!(ids, vec![id]);
    assert_eq!(p.rule_timeouts(id), Some(timed(0, 3)));
    p.set_now_ns(4 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 1, "3 s from the modify, not from the add");
    p.set_now_ns(5 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 0);
    assert_eq!(p.take_removed()[0].duration_ns, 5 * SEC, "duration counts from the add");
}

#[test]
fn an_add_over_a_timed_rule_replaces_its_timeouts_and_no_flag_means_no_record() {
    let mut p = pipeline();
    let id = add(&mut p, to(1, 1), timed(0, 1));
    assert_eq!(add(&mut p, to(1, 1), Timeouts::default()), id);
    assert_eq!(p.rule_timeouts(id), None);
    add(&mut p, to(2, 2), Timeouts { idle: 1, hard: 0, send_flow_rem: false });
    p.set_now_ns(3 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 1, "the untimed replacement stays, the unflagged idle rule goes");
    assert!(p.take_removed().is_empty());
}

#[test]
fn a_delete_is_reported_as_delete() {
    let mut p = pipeline();
    add(&mut p, to(1, 1), timed(10, 0));
    p.flow_mod(FlowModCommand::Delete, Rule::new(0, 0, vec![], Instructions::default()), OFPP_ANY, OFPG_ANY, false).unwrap();
    assert_eq!(p.take_removed().iter().map(|r| r.reason).collect::<Vec<_>>(), vec![RemovedReason::Delete]);
}

/// An Ethernet + IPv4 + TCP frame with these TCP flags.
fn tcp(flags: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x08, 0x00];
    f.extend([0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend([0x04, 0xd2, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x20, 0, 0, 0, 0, 0]);
    f.resize(60, 0);
    f
}

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const ACK: u8 = 0x10;

/// tcp -> fin_timeout(idle, hard), output:2.
fn fin_rule(idle: u16, hard: u16) -> Rule {
    let m = vec![FieldMatch { field: Field::EthType, value: 0x0800, mask: None }, FieldMatch { field: Field::IpProto, value: 6, mask: None }];
    Rule::new(0, 5, m, Instructions::apply(vec![Action::FinTimeout { idle, hard }, Action::output(2)]))
}

#[test]
fn a_fin_shrinks_the_rules_timeouts_and_other_packets_do_not() {
    let mut p = pipeline();
    let id = add(&mut p, fin_rule(5, 30), timed(10, 20));
    for flags in [SYN, ACK, SYN | ACK] {
        assert_eq!(ports(&p.process(Packet::new(tcp(flags)), 1)), vec![2]);
    }
    assert_eq!(p.rule_timeouts(id), Some(timed(10, 20)));
    p.process(Packet::new(tcp(FIN | ACK)), 1);
    assert_eq!(p.rule_timeouts(id), Some(timed(5, 20)), "idle 10 -> 5; hard 20 is shorter than 30");
    p.process(Packet::new(tcp(RST)), 1);
    assert_eq!(p.rule_timeouts(id), Some(timed(5, 20)), "min(current, new) again: no change");
}

#[test]
fn a_fin_gives_an_untimed_rule_its_timeouts_hard_counting_from_install() {
    let mut p = pipeline();
    let id = add(&mut p, fin_rule(0, 3), Timeouts { send_flow_rem: true, ..Timeouts::default() });
    p.set_now_ns(SEC);
    p.process(Packet::new(tcp(RST)), 1);
    assert_eq!(p.rule_timeouts(id), Some(timed(0, 3)));
    p.set_now_ns(3 * SEC - 1);
    p.expire_due();
    assert_eq!(p.n_rules(), 1);
    p.set_now_ns(3 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 0, "3 s from the install, not from the RST");
    let r = p.take_removed();
    assert_eq!((r[0].reason, r[0].hard_timeout, r[0].stats.packets), (RemovedReason::HardTimeout, 3, 1));
}

#[test]
fn an_idle_timeout_from_a_fin_counts_from_the_fin() {
    let mut p = pipeline();
    let id = add(&mut p, fin_rule(2, 0), Timeouts::default());
    p.set_now_ns(10 * SEC);
    p.process(Packet::new(tcp(FIN)), 1);
    assert_eq!(p.rule_timeouts(id), Some(Timeouts { idle: 2, hard: 0, send_flow_rem: false }));
    p.set_now_ns(11 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 1);
    p.set_now_ns(13 * SEC);
    p.expire_due();
    assert_eq!(p.n_rules(), 0);
    assert!(p.take_removed().is_empty(), "no send_flow_rem: no record");
}

#[test]
fn fin_timeout_with_no_timeouts_changes_nothing() {
    let mut p = pipeline();
    let id = add(&mut p, fin_rule(0, 0), Timeouts::default());
    p.process(Packet::new(tcp(FIN)), 1);
    assert_eq!(p.rule_timeouts(id), None);
    assert!(!p.has_timers());
}

#[test]
fn an_add_over_an_identical_rule_keeps_its_counters_as_open_vswitch_does() {
    // (Open vSwitch 3.1: an ADD whose table, priority and match are a rule's replaces it;
    // without OFPFF_RESET_COUNTS the counters go on, the duration restarts)
    let mut p = pipeline();
    add(&mut p, to(1, 1), Timeouts::default());
    p.process(Packet::new(frame(1)), 3);
    p.process(Packet::new(frame(1)), 3);
    p.set_now_ns(5 * SEC);
    let id = add(&mut p, to(1, 2), timed(0, 1));
    assert_eq!(p.rule_stats(id).map(|s| (s.packets, s.bytes)), Some((2, 120)));
    p.set_now_ns(6 * SEC);
    p.expire_due();
    let r = p.take_removed();
    assert_eq!((r[0].stats.packets, r[0].duration_ns), (2, SEC));
}

#[test]
fn timed_rules_lists_a_rules_shrunk_timeouts_and_an_untimed_rule_a_fin_gave_some() {
    let mut p = pipeline();
    let shrunk = add(&mut p, fin_rule(5, 0), timed(10, 20));
    let untimed = add(&mut p, to(7, 1), Timeouts::default());
    assert_eq!(p.timed_rules(), vec![(shrunk, timed(10, 20))], "an untimed rule is not listed");
    p.process(Packet::new(tcp(FIN)), 1);
    assert_eq!(p.timed_rules(), vec![(shrunk, timed(5, 20))]);
    let mut q = pipeline();
    let given = add(&mut q, fin_rule(0, 4), Timeouts::default());
    assert_eq!(q.timed_rules(), vec![]);
    q.process(Packet::new(tcp(RST)), 1);
    assert_eq!(q.timed_rules(), vec![(given, Timeouts { idle: 0, hard: 4, send_flow_rem: false })]);
    let _ = untimed;
}
