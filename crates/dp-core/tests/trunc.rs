//! Open vSwitch's `output(port=P,max_len=N)` through the public Rust API: the cut is
//! fixed on the frame as last committed (tests/dataplane/test_output_trunc_oracle.py
//! measures the same lengths on Open vSwitch).

use dp_core::pipeline::*;

mod common;
use common::{switch, udp};

fn lengths(p: &mut Pipeline, apply: Vec<Action>) -> Vec<(u32, usize)> {
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(apply))).unwrap();
    let fates = p.process(Packet::new(udp(64)), 1);
    fates.iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.len())) } else { None }).collect()
}

const PUSH: Action = Action::PushVlan { ethertype: 0x8100 };

fn trunc(port: u32, max_len: u32) -> Action {
    Action::OutputTrunc { port, max_len }
}

#[test]
fn a_pending_push_is_applied_after_the_cut_and_an_output_commits_it() {
    assert_eq!(lengths(&mut switch(1), vec![PUSH, trunc(2, 20)]), vec![(2, 24)]);
    assert_eq!(lengths(&mut switch(1), vec![PUSH, Action::output(3), trunc(2, 20)]), vec![(3, 64), (2, 20)]);
    assert_eq!(lengths(&mut switch(1), vec![trunc(2, 30), PUSH, trunc(3, 20), Action::output(4)]), vec![(2, 30), (3, 24), (4, 64)]);
}

#[test]
fn nothing_to_the_in_port_or_a_reserved_port_and_no_commit_there() {
    assert_eq!(lengths(&mut switch(1), vec![PUSH, Action::output(1), trunc(1, 20), trunc(OFPP_IN_PORT, 20), trunc(2, 20)]), vec![(2, 24)]);
    assert_eq!(lengths(&mut switch(1), vec![trunc(2, 2000), trunc(3, 10)]), vec![(2, 60), (3, 14)]);
}

#[test]
fn a_clone_keeps_its_commits_unless_it_holds_an_output_trunc() {
    let inner = Action::Clone(vec![PUSH, Action::output(3)]);
    assert_eq!(lengths(&mut switch(1), vec![inner, trunc(2, 20)]), vec![(3, 64), (2, 16)]);
    let inner = Action::Clone(vec![trunc(2, 20)]);
    assert_eq!(lengths(&mut switch(1), vec![PUSH, inner, Action::output(3)]), vec![(2, 20), (3, 64)]);
}
