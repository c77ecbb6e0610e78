//! Controller ids of packet-ins: `dec_ttl(ids)` and `controller(id=…)` on a switch
//! with one connection (id 0) and on one with a connection per id (`every_controller_id`).

use dp_core::pipeline::*;
use dp_core::rule::ControllerAction;

fn udp(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

fn ctl(controller_id: u16) -> Action {
    Action::Controller(Box::new(ControllerAction { max_len: 0xffff, controller_id, reason: Some(ControllerReason::Action), userdata: vec![], meter_id: None }))
}

/// (reason, controller id) of each packet-in, in order.
fn pins(p: &mut Pipeline, ttl: u8) -> Vec<(ControllerReason, u16)> {
    p.process(Packet::new(udp(ttl)), 1)
        .iter()
        .filter_map(|f| match f {
            Fate::Controller { reason, controller_id, .. } => Some((*reason, *controller_id)),
            _ => None,
        })
        .collect()
}

fn switch(every: bool, acts: Vec<Action>) -> Pipeline {
    let mut p = Pipeline::new(1);
    p.add_port(1);
    p.add_port(2);
    p.every_controller_id = every;
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(acts))).unwrap();
    p
}

#[test]
fn dec_ttl_ids_send_one_packet_in_per_listed_id_in_order_each_with_its_id() {
    let acts = vec![ctl(3), Action::DecTtlIds(vec![7, 0, 7, 9].into()), ctl(4), Action::output(2)];
    let mut p = switch(true, acts.clone());
    use ControllerReason::InvalidTtl;
    assert_eq!(pins(&mut p, 1), vec![(ControllerReason::Action, 3), (InvalidTtl, 7), (InvalidTtl, 0), (InvalidTtl, 7), (InvalidTtl, 9)]);
    assert_eq!(pins(&mut p, 9), vec![(ControllerReason::Action, 3), (ControllerReason::Action, 4)], "a live TTL: no invalid_ttl, the list goes on");
    let mut one = switch(false, acts);
    assert_eq!(pins(&mut one, 1), vec![(InvalidTtl, 0)], "one connection, id 0: only id 0's packet-in");
}

#[test]
fn written_dec_ttl_ids_send_their_packet_ins_from_the_action_set_as_the_first_rule() {
    // (Open vSwitch's gotos return before the action set runs: its packet-ins name table 0 and the
    // first rule's cookie, measured in tests/endpoint/test_dec_ttl_ids_vs_ovs.py)
    let ins = Instructions { write: vec![Action::DecTtlIds(vec![2, 2].into()), Action::output(2)], goto: Some(1), ..Instructions::apply(vec![]) };
    let mut p = Pipeline::new(2);
    p.add_port(1);
    p.add_port(2);
    p.every_controller_id = true;
    p.add_rule(Rule { cookie: 0x33, ..Rule::new(0, 1, vec![], ins) }).unwrap();
    p.add_rule(Rule { cookie: 0x34, ..Rule::new(1, 1, vec![], Instructions::apply(vec![])) }).unwrap();
    let got: Vec<(ControllerReason, u16, u8, u64)> = p
        .process(Packet::new(udp(1)), 1)
        .iter()
        .filter_map(|f| match f {
            Fate::Controller { reason, controller_id, table, cookie, .. } => Some((*reason, *controller_id, *table, *cookie)),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![(ControllerReason::InvalidTtl, 2, 0, 0x33), (ControllerReason::InvalidTtl, 2, 0, 0x33)]);
}
