//! Open vSwitch's `controller(reason=…,id=…,userdata=…)` in dp-core.

use dp_core::pipeline::*;
use dp_core::rule::ControllerAction;

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn ctl(controller_id: u16, reason: ControllerReason, userdata: &[u8]) -> Action {
    Action::Controller(Box::new(ControllerAction { max_len: 0xffff, controller_id, reason: Some(reason), userdata: userdata.to_vec(), meter_id: None }))
}

#[test]
fn controller_action_sends_its_reason_and_userdata_to_id_0_only() {
    let mut p = Pipeline::new(1);
    for port in 1..=2 {
        p.add_port(port);
    }
    let acts = vec![ctl(0, ControllerReason::Group, &[1, 2, 3]), ctl(5, ControllerReason::Action, &[9]), Action::output(2),
                    ctl(0, ControllerReason::NoMatch, &[])];
    p.add_rule(Rule { cookie: 0x77, ..Rule::new(0, 1, vec![], Instructions::apply(acts)) }).unwrap();
    let fates = p.process(Packet::new(frame()), 1);
    let pins: Vec<(ControllerReason, u64, Vec<u8>)> = fates
        .iter()
        .filter_map(|f| match f {
            Fate::Controller { reason, cookie, userdata, .. } => Some((*reason, *cookie, userdata.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(pins, vec![(ControllerReason::Group, 0x77, vec![1, 2, 3]), (ControllerReason::NoMatch, 0x77, vec![])]);
    assert!(fates.iter().any(|f| matches!(f, Fate::Output { port: 2, .. })));
    assert_eq!(ControllerReason::from_number(5), Some(ControllerReason::PacketOut));
    assert_eq!(ControllerReason::from_number(6), None);
}
