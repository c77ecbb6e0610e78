//! `learn` through the pipeline's public API: learned flows forward the next
//! packet at once (flow and path caches see them), the learning packet does not
//! see its own flow, refresh vs replace, limit and result_dst, delete_learned,
//! timeouts in modelled time with FLOW_REMOVED records. (Byte-exactness and the
//! learned flows against Open vSwitch: tests/oneswitch/test_learn_oracle.py.)

use dp_core::field::Field;
use dp_core::learn::{Learn, LearnDst, LearnSpec, LearnSrc};
use dp_core::pipeline::*;

const SEC: u64 = 1_000_000_000;

fn frame(src: u8, dst: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn ports(fates: &[Fate]) -> Vec<u32> {
    fates.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

fn sf(field: Field, ofs: u32, n_bits: u32) -> Subfield {
    Subfield { field, ofs, n_bits }
}

/// MAC learning: table 1 learns eth_dst = eth_src -> output:in_port.
fn mac_learn(idle: u16, hard: u16, limit: u32, delete_learned: bool) -> Learn {
    Learn {
        specs: vec![
            LearnSpec { src: LearnSrc::Field(sf(Field::EthSrc, 0, 48)), dst: LearnDst::Match(sf(Field::EthDst, 0, 48)), n_bits: 48 },
            LearnSpec { src: LearnSrc::Field(sf(Field::InPort, 0, 16)), dst: LearnDst::Output, n_bits: 16 },
        ],
        table: 1,
        priority: 10,
        idle_timeout: idle,
        hard_timeout: hard,
        cookie: 0x77,
        send_flow_rem: true,
        delete_learned,
        limit,
        result_dst: (limit > 0).then_some(sf(Field::Reg(5), 0, 1)),
        fin_idle_timeout: 0,
        fin_hard_timeout: 0,
    }
}

/// Table 0 learns and goes to table 1, whose table-miss floods.
fn switch(learn: Learn) -> (Pipeline, u32) {
    let mut p = Pipeline::new(2);
    for port in 1..=4 {
        p.add_port(port);
    }
    let id = p.add_rule(Rule::new(0, 1, vec![], Instructions { apply: vec![Action::Learn(Box::new(learn))], goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(OFPP_FLOOD)]))).unwrap();
    (p, id)
}

#[test]
fn learned_flow_forwards_the_next_packet_not_the_learning_one() {
    let (mut p, _) = switch(mac_learn(0, 0, 0, false));
    // host 1 at port 1 talks to host 2 (unknown): flood
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![2, 3, 4]);
    // warm the caches for "to host 1" from port 3, before anything is learned about host 3
    assert_eq!(ports(&p.process(Packet::new(frame(3, 1)), 3)), vec![1]);
    assert_eq!(ports(&p.process(Packet::new(frame(3, 1)), 3)), vec![1]);
    // host 2 answers from port 2: learned host 1 at port 1, so no flood
    assert_eq!(ports(&p.process(Packet::new(frame(2, 1)), 2)), vec![1]);
    // host 1 to host 2: the flow learned a packet ago forwards at once (caches invalidated)
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![2]);
    assert_eq!(p.learned_flows().len(), 3);
    // host 1 moves to port 4: its flow is replaced, not added to
    p.process(Packet::new(frame(1, 9)), 4);
    assert_eq!(ports(&p.process(Packet::new(frame(2, 1)), 2)), vec![4]);
    assert_eq!(p.learned_flows().len(), 3);
}

#[test]
fn limit_refuses_and_result_dst_says_so_but_a_refresh_passes() {
    let (mut p, _) = switch(mac_learn(0, 0, 1, false));
    // table 1 reads reg5: 1 -> output 4, 0 -> output 3 (above the learned priority)
    p.add_rule(Rule::new(1, 20, vec![FieldMatch::masked(Field::Reg(5), 1, 1)], Instructions::apply(vec![Action::output(4)]))).unwrap();
    p.add_rule(Rule::new(1, 19, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![4]); // learned (1 rule with cookie 0x77 now)
    assert_eq!(ports(&p.process(Packet::new(frame(2, 1)), 2)), vec![3]); // refused: the limit counts every rule of the table with the cookie
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![4]); // identical flow: a refresh, not refused
    assert_eq!(p.learned_flows().len(), 1);
}

#[test]
fn limit_counts_a_flow_the_same_packet_learned_before() {
    // table 0: learn (no limit) eth_dst=eth_src -> in_port, then learn(limit=1) eth_src=eth_src into the
    // same table with the same cookie: Open vSwitch installs the first flow as it translates the packet, so
    // the second finds the table full (measured: `tandem bench learn_oracle -- --bucket-learn --dp`, seed 1)
    let mut second = mac_learn(0, 0, 1, false);
    second.priority = 11;
    second.specs = vec![LearnSpec { src: LearnSrc::Field(sf(Field::EthSrc, 0, 48)), dst: LearnDst::Match(sf(Field::EthSrc, 0, 48)), n_bits: 48 }];
    let mut p = Pipeline::new(2);
    for port in 1..=4 {
        p.add_port(port);
    }
    let learns = vec![Action::Learn(Box::new(mac_learn(0, 0, 0, false))), Action::Learn(Box::new(second))];
    p.add_rule(Rule::new(0, 1, vec![], Instructions { apply: learns, goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 20, vec![FieldMatch::masked(Field::Reg(5), 1, 1)], Instructions::apply(vec![Action::output(4)]))).unwrap();
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![3]); // refused: result_dst 0
    assert_eq!(p.learned_flows().len(), 1);
}

#[test]
fn delete_learned_goes_with_the_last_learning_rule() {
    let (mut p, id) = switch(mac_learn(0, 0, 0, true));
    let second = p
        .add_rule(Rule::new(0, 2, vec![FieldMatch::exact(Field::InPort, 4)], Instructions { apply: vec![Action::Learn(Box::new(mac_learn(0, 0, 0, true)))], goto: Some(1), ..Default::default() }))
        .unwrap();
    p.add_rule(Rule::new(0, 0, vec![], Instructions { goto: Some(1), ..Default::default() })).unwrap();
    p.process(Packet::new(frame(1, 2)), 1);
    p.process(Packet::new(frame(2, 1)), 2);
    assert_eq!(p.learned_flows().len(), 2);
    p.remove_rule(second);
    assert_eq!(p.learned_flows().len(), 2, "another rule still learns into (table 1, cookie 0x77)");
    p.remove_rule(id);
    assert_eq!(p.learned_flows().len(), 0);
    let removed = p.take_removed();
    assert_eq!(removed.len(), 2);
    assert!(removed.iter().all(|r| r.reason == RemovedReason::Delete));
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![2, 3, 4]);
}

#[test]
fn timeouts_run_in_modelled_time() {
    let (mut p, _) = switch(mac_learn(10, 30, 0, false));
    p.set_now_ns(0);
    p.process(Packet::new(frame(1, 2)), 1); // learns host 1 (idle 10 s, hard 30 s)
    for t in 1..=25 {
        // host 1 is sent to every second: idle never runs out
        p.set_now_ns(t * SEC);
        assert_eq!(ports(&p.process(Packet::new(frame(2, 1)), 2)), vec![1], "t={t}");
    }
    // host 2, learned at t=1 and never sent to (its packets re-learning it only
    // restart the hard timeout), idled out 10 s later (looked at within a second),
    // was learned again and idled out again
    let r = p.take_removed();
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|r| (r.reason, r.rule.matches[0].value) == (RemovedReason::IdleTimeout, 0x0200_0000_0002)));
    assert!((10 * SEC..=11 * SEC).contains(&r[0].duration_ns), "{}", r[0].duration_ns);
    p.set_now_ns(31 * SEC);
    assert_eq!(ports(&p.process(Packet::new(frame(2, 1)), 2)), vec![1, 3, 4], "hard timeout");
    let r: Vec<_> = p.take_removed().into_iter().filter(|r| r.rule.matches[0].value == 0x0200_0000_0001).collect();
    assert_eq!(r.iter().map(|r| r.reason).collect::<Vec<_>>(), vec![RemovedReason::HardTimeout]);
    assert_eq!(r[0].stats.packets, 25);
    // relearn host 1 at 40 s (its packet uses host 2's flow, learned at 31 s), then
    // host 3 alone: hosts 1 and 2 idle out at 50 s, not before
    p.set_now_ns(40 * SEC);
    assert_eq!(ports(&p.process(Packet::new(frame(1, 2)), 1)), vec![2]);
    p.set_now_ns(49 * SEC);
    p.process(Packet::new(frame(3, 3)), 3);
    assert_eq!(p.learned_flows().len(), 3);
    p.set_now_ns(51 * SEC);
    p.process(Packet::new(frame(3, 3)), 3);
    let left: Vec<u128> = p.learned_flows().iter().map(|f| f.1.matches[0].value).collect();
    assert_eq!(left, vec![0x0200_0000_0003]);
    let r = p.take_removed();
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|r| r.reason == RemovedReason::IdleTimeout));
}

#[test]
fn learn_in_a_group_bucket_does_nothing_as_in_open_vswitch() {
    // measured on OVS 3.1: bucket=learn(table=1,...),output:2 sends to 2 and learns nothing;
    // a bucket with a learn and no output sends nothing
    let mut p = Pipeline::new(2);
    let learn = || Action::Learn(Box::new(mac_learn(0, 0, 0, false)));
    let g = Group { id: 1, kind: GroupType::All, buckets: vec![Bucket::new(vec![learn(), Action::output(2)], 0), Bucket::new(vec![learn()], 0)] };
    for port in 1..=4 {
        p.add_port(port);
    }
    p.add_group(g).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::Group(1)]))).unwrap();
    let fates = p.process(Packet::new(frame(1, 3)), 1);
    assert_eq!(ports(&fates), vec![2]);
    assert!(p.learned_flows().is_empty());
}

/// An Ethernet + IPv4 + TCP frame from host `src` to host `dst` with these TCP flags.
fn tcp(src: u8, dst: u8, flags: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src, 0x08, 0x00];
    f.extend([0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, src, 10, 0, 0, dst]);
    f.extend([0x04, 0xd2, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x20, 0, 0, 0, 0, 0]);
    f.resize(60, 0);
    f
}

#[test]
fn fin_timeouts_give_the_learned_flow_a_fin_timeout_that_a_fin_runs() {
    let (mut p, _) = switch(Learn { fin_idle_timeout: 2, fin_hard_timeout: 20, ..mac_learn(10, 0, 0, false) });
    p.process(Packet::new(tcp(1, 2, 0x10)), 1); // ACK: learns "to host 1: output:1"
    let flows = p.learned_flows();
    let (_, rule, idle, hard, _) = flows[0];
    let out1 = Action::Output { port: 1, max_len: 0 };
    assert_eq!(rule.instructions.apply, vec![Action::FinTimeout { idle: 2, hard: 20 }, out1.clone()], "first, as in OVS");
    assert_eq!((idle, hard), (10, 0));
    assert_eq!(ports(&p.process(Packet::new(tcp(2, 1, 0x11)), 2)), vec![1]); // FIN|ACK through the learned flow
    let to_host1 = p.learned_flows().into_iter().find(|f| f.1.instructions.apply.contains(&out1)).unwrap();
    assert_eq!((to_host1.2, to_host1.3), (2, 20));
}
