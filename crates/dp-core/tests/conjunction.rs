//! Conjunctive matching (`conjunction(id, k/n)`, `conj_id`) as Open vSwitch's
//! classifier runs it: priorities against ordinary flows, several ids in one
//! flow, a failed `conj_id` search, flows hidden behind an identical match,
//! statistics, refusals, and the caches giving the walk's answers.

use dp_core::field::Field;
use dp_core::pipeline::*;

/// A UDP frame 10.0.0.<src> -> 10.0.0.<dst>, ports 1234 -> 53.
fn udp(src: u8, dst: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, src, 10, 0, 0, dst]);
    dp_core::checksum::ipv4_header_fix(&mut f, 14, 20);
    f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

fn switch(cache: bool) -> Pipeline {
    let mut p = Pipeline::new(2);
    for port in 1..=6 {
        p.add_port(port);
    }
    p.set_cache_enabled(cache);
    p
}

fn ip() -> FieldMatch {
    FieldMatch::exact(Field::EthType, 0x800)
}
fn src(last: u8) -> Vec<FieldMatch> {
    vec![ip(), FieldMatch::exact(Field::Ipv4Src, 0x0a00_0000 | u128::from(last))]
}
fn dst(last: u8) -> Vec<FieldMatch> {
    vec![ip(), FieldMatch::exact(Field::Ipv4Dst, 0x0a00_0000 | u128::from(last))]
}
fn conj(prio: u16, m: Vec<FieldMatch>, cs: &[(u32, u8, u8)]) -> Rule {
    Rule::new(0, prio, m, Instructions::apply(cs.iter().map(|&(id, k, n)| Action::Conjunction { id, k, n }).collect()))
}
fn out(prio: u16, m: Vec<FieldMatch>, port: u32) -> Rule {
    Rule::new(0, prio, m, Instructions::apply(vec![Action::output(port)]))
}
fn conj_id(id: u32) -> FieldMatch {
    FieldMatch::exact(Field::ConjId, u128::from(id))
}

fn port_of(p: &mut Pipeline, s: u8, d: u8) -> Option<u32> {
    p.process(Packet::new(udp(s, d)), 6).iter().find_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None })
}

/// ip_src in {1, 2} and ip_dst in {3, 4} -> port 1 (id 7); else the hard flow below.
fn two_dimensions(p: &mut Pipeline, hard_prio: u16) {
    for s in [1, 2] {
        p.add_rule(conj(10, src(s), &[(7, 1, 2)])).unwrap();
    }
    for d in [3, 4] {
        p.add_rule(conj(10, dst(d), &[(7, 2, 2)])).unwrap();
    }
    p.add_rule(out(5, vec![conj_id(7)], 1)).unwrap();
    p.add_rule(out(hard_prio, vec![ip()], 2)).unwrap();
}

#[test]
fn a_packet_meeting_every_dimension_takes_the_conj_id_flow() {
    for cache in [false, true] {
        let mut p = switch(cache);
        two_dimensions(&mut p, 1);
        for _ in 0..2 {
            assert_eq!(port_of(&mut p, 1, 3), Some(1));
            assert_eq!(port_of(&mut p, 2, 4), Some(1));
            assert_eq!(port_of(&mut p, 1, 5), Some(2), "one dimension only");
            assert_eq!(port_of(&mut p, 5, 3), Some(2));
        }
    }
}

#[test]
fn an_ordinary_flow_of_equal_or_higher_priority_wins_over_the_conjunction() {
    for hard in [10, 11] {
        let mut p = switch(true);
        two_dimensions(&mut p, hard);
        assert_eq!(port_of(&mut p, 1, 3), Some(2), "hard flow at priority {hard}");
    }
    // below the soft flows but above the conj_id flow (5): the second search
    // (conj_id=7) meets both and the ordinary flow outranks the conj_id flow
    let mut p = switch(true);
    two_dimensions(&mut p, 9);
    assert_eq!(port_of(&mut p, 1, 3), Some(2));
    // below the conj_id flow: the conj_id flow answers
    let mut p = switch(true);
    two_dimensions(&mut p, 4);
    assert_eq!(port_of(&mut p, 1, 3), Some(1));
}

#[test]
fn a_failed_conj_id_search_falls_through_to_lower_levels() {
    let mut p = switch(true);
    p.add_rule(conj(20, src(1), &[(1, 1, 2)])).unwrap();
    p.add_rule(conj(20, dst(3), &[(1, 2, 2)])).unwrap(); // no conj_id=1 flow, no hard flow: nothing
    assert_eq!(port_of(&mut p, 1, 3), None);
    p.add_rule(conj(10, src(1), &[(2, 1, 2)])).unwrap();
    p.add_rule(conj(10, dst(3), &[(2, 2, 2)])).unwrap();
    p.add_rule(out(1, vec![conj_id(2)], 4)).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(4), "the level below completes id 2");
    p.add_rule(out(1, vec![conj_id(1)], 5)).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(5), "id 1 at priority 20 now finds its flow");
}

#[test]
fn one_flow_may_serve_several_ids_and_dimensions_need_one_level() {
    let mut p = switch(true);
    p.add_rule(conj(10, src(1), &[(1, 1, 2), (2, 1, 2)])).unwrap();
    p.add_rule(conj(10, dst(3), &[(1, 2, 2)])).unwrap();
    p.add_rule(conj(10, dst(4), &[(2, 2, 2)])).unwrap();
    p.add_rule(out(1, vec![conj_id(1)], 1)).unwrap();
    p.add_rule(out(1, vec![conj_id(2)], 2)).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(1));
    assert_eq!(port_of(&mut p, 1, 4), Some(2));
    // a dimension at another priority is another conjunctive flow: never complete
    p.add_rule(conj(9, src(2), &[(3, 1, 2)])).unwrap();
    p.add_rule(conj(8, dst(4), &[(3, 2, 2)])).unwrap();
    p.add_rule(out(1, vec![conj_id(3)], 3)).unwrap();
    assert_eq!(port_of(&mut p, 2, 4), None);
    // three dimensions: all three must match
    let mut p = switch(true);
    p.add_rule(conj(10, src(1), &[(9, 1, 3)])).unwrap();
    p.add_rule(conj(10, dst(3), &[(9, 2, 3)])).unwrap();
    p.add_rule(conj(10, vec![ip(), FieldMatch::exact(Field::IpProto, 17)], &[(9, 3, 3)])).unwrap();
    p.add_rule(out(1, vec![conj_id(9)], 1)).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(1));
    assert_eq!(port_of(&mut p, 1, 4), None);
}

#[test]
fn a_flow_behind_an_identical_soft_match_is_hidden_from_the_conj_id_search() {
    // As Open vSwitch: `dst(3)` at priority 8 sits behind the soft flow with the same
    // match at 10, so the conj_id search does not see it and the lower flow answers;
    // when the level fails, the hidden flow surfaces.
    let mut p = switch(true);
    p.add_rule(conj(10, src(1), &[(1, 1, 2)])).unwrap();
    p.add_rule(conj(10, dst(3), &[(1, 2, 2)])).unwrap();
    p.add_rule(out(8, dst(3), 3)).unwrap();
    p.add_rule(out(1, vec![ip()], 2)).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(2), "conj_id search: the hidden flow is not seen");
    assert_eq!(port_of(&mut p, 5, 3), Some(3), "the level fails: the hidden flow surfaces");
    p.add_rule(out(9, vec![ip(), conj_id(1)], 1)).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(1));
}

#[test]
fn soft_flows_count_nothing_and_the_conj_id_flow_counts_the_packet() {
    let mut p = switch(true);
    let a = p.add_rule(conj(10, src(1), &[(7, 1, 2)])).unwrap();
    p.add_rule(conj(10, dst(3), &[(7, 2, 2)])).unwrap();
    let c = p.add_rule(out(5, vec![conj_id(7)], 1)).unwrap();
    for _ in 0..3 {
        port_of(&mut p, 1, 3);
    }
    assert_eq!(p.rule_stats(a).unwrap().packets, 0);
    assert_eq!(p.rule_stats(c).unwrap().packets, 3);
    assert_eq!(p.n_rules(), 3);
    // a soft flow modified into an ordinary one answers lookups from then on
    p.modify(out(10, src(1), 4), true).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(4));
    p.flow_mod(FlowModCommand::DeleteStrict, out(10, src(1), 0), OFPP_ANY, OFPG_ANY, false).unwrap();
    assert_eq!(p.n_rules(), 2);
    assert_eq!(port_of(&mut p, 1, 3), None);
}

#[test]
fn conjunction_actions_are_refused_beside_other_actions_as_open_vswitch_refuses_them() {
    let mut p = switch(true);
    let c = Action::Conjunction { id: 1, k: 1, n: 2 };
    let bad = [
        Instructions::apply(vec![c.clone(), Action::output(1)]),
        Instructions { apply: vec![c.clone()], goto: Some(1), ..Default::default() },
        Instructions { write: vec![c.clone()], ..Default::default() },
        Instructions::apply(vec![Action::Conjunction { id: 1, k: 1, n: 1 }]),
        Instructions::apply(vec![Action::Conjunction { id: 1, k: 3, n: 2 }]),
        Instructions::apply(vec![Action::Conjunction { id: 1, k: 1, n: 65 }]),
    ];
    for ins in bad {
        assert!(matches!(p.add_rule(Rule::new(0, 1, vec![], ins.clone())), Err(PipelineError::BadConjunction(_))), "{ins:?}");
    }
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![c, Action::Note]))).unwrap();
    assert!(p.add_rule(Rule::new(0, 1, vec![FieldMatch::masked(Field::ConjId, 1, 1)], Instructions::default())).is_err());
}

#[test]
fn conj_id_reads_0_in_actions_even_in_the_flow_its_search_found() {
    // as Open vSwitch 3.1: move:NXM_NX_CONJ_ID[]->NXM_NX_REG0[] in the conj_id flow copies 0
    let mut p = switch(true);
    p.add_rule(conj(10, src(1), &[(5, 1, 2)])).unwrap();
    p.add_rule(conj(10, dst(3), &[(5, 2, 2)])).unwrap();
    let mv = Action::Move { src: Subfield { field: Field::ConjId, ofs: 0, n_bits: 32 }, dst: Subfield { field: Field::Reg(0), ofs: 0, n_bits: 32 } };
    p.add_rule(Rule::new(0, 5, vec![conj_id(5)], Instructions { apply: vec![Action::SetField { field: Field::Reg(0), value: 9 }, mv], goto: Some(1), ..Default::default() })).unwrap();
    p.add_rule(Rule::new(1, 5, vec![FieldMatch::exact(Field::Reg(0), 0)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(port_of(&mut p, 1, 3), Some(2));
}
