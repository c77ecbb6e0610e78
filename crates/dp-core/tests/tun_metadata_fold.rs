//! A table's tun_metadata matches folded into its key slots (`pipeline/tunfold.rs`): more
//! than 3 distinct options in one table, bits 120..127 of an option, many masks and values
//! of one option, rules removed (numbers renumbered, fields narrowed) and a table whose
//! fields would not fit its 3 slots refused without a change.

use dp_core::field::Field;
use dp_core::pipeline::*;

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

fn md(i: u8) -> Field {
    Field::TunMetadata(i)
}

/// Table 0 sets each (option, value) of `set` and goes to table 1; the ports table 1 sends to
/// (the packet enters on port 10).
fn out(p: &mut Pipeline, set: &[(u8, u128)]) -> Vec<u32> {
    let acts = set.iter().map(|&(i, v)| Action::SetField { field: md(i), value: v }).collect();
    let old: Option<_> = p.rules().find(|(_, r)| r.table == 0).map(|(id, _)| id);
    if let Some(id) = old {
        p.remove_rule(id);
    }
    p.add_rule(Rule::new(0, 5, vec![], Instructions { apply: acts, goto: Some(1), ..Default::default() })).unwrap();
    p.process(Packet::new(frame()), 10).iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect()
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(2);
    for port in 1..=10 {
        p.add_port(port);
    }
    p.add_rule(Rule::new(1, 0, vec![], Instructions::apply(vec![Action::output(9)]))).unwrap();
    p
}

fn rule(prio: u16, m: Vec<FieldMatch>, port: u32) -> Rule {
    Rule::new(1, prio, m, Instructions::apply(vec![Action::output(port)]))
}

#[test]
fn a_table_matches_six_options_and_bits_120_to_127() {
    let mut p = pipeline();
    for i in 0..6u8 {
        p.add_rule(rule(10 + u16::from(i), vec![FieldMatch::exact(md(i), u128::from(i) + 1)], u32::from(i) + 1)).unwrap();
    }
    let top = 0xab << 120 | 7;
    p.add_rule(rule(30, vec![FieldMatch::exact(md(6), top)], 7)).unwrap();
    p.add_rule(rule(31, vec![FieldMatch::masked(md(6), 0x1 << 127, 0x1 << 127), FieldMatch::exact(md(0), 9)], 8)).unwrap();
    for i in 0..6u8 {
        assert_eq!(out(&mut p, &[(i, u128::from(i) + 1)]), vec![u32::from(i) + 1]);
        assert_eq!(out(&mut p, &[(i, u128::from(i) + 2)]), vec![9]);
    }
    assert_eq!(out(&mut p, &[(6, top)]), vec![7]);
    assert_eq!(out(&mut p, &[(6, top ^ 1 << 121)]), vec![9]); // (bit 121 differs)
    assert_eq!(out(&mut p, &[(6, top), (0, 9)]), vec![8]);
    assert_eq!(out(&mut p, &[(6, 1 << 127), (0, 9)]), vec![8]);
    assert_eq!(out(&mut p, &[(6, 1 << 126), (0, 9)]), vec![9]);
    assert_eq!(out(&mut p, &[]), vec![9]); // (absent options meet no match)
}

#[test]
fn many_values_and_masks_of_one_option_and_removals() {
    let mut p = pipeline();
    let mut ids = Vec::new();
    for v in 0..300u16 {
        ids.push(p.add_rule(rule(100 + v, vec![FieldMatch::exact(md(3), u128::from(v) << 100)], 1 + u32::from(v % 5))).unwrap());
    }
    for k in 0..40u32 {
        p.add_rule(rule(1000 + k as u16, vec![FieldMatch::masked(md(4), 1 << k, (1 << k) | 1 << 120)], 6)).unwrap();
    }
    assert_eq!(out(&mut p, &[(3, 123 << 100)]), vec![1 + 123 % 5]);
    assert_eq!(out(&mut p, &[(4, 1 << 17)]), vec![6]);
    assert_eq!(out(&mut p, &[(4, 1 << 17 | 1 << 120)]), vec![9]);
    // removing values renumbers the last into the gap: the others still match exactly
    for (v, id) in ids.iter().enumerate().filter(|(v, _)| v % 3 == 0) {
        assert!(p.remove_rule(*id).is_some(), "{v}");
    }
    for v in [0u128, 3, 123, 297] {
        assert_eq!(out(&mut p, &[(3, v << 100)]), vec![9], "{v}");
    }
    for v in [1u128, 2, 124, 298, 299] {
        assert_eq!(out(&mut p, &[(3, v << 100)]), vec![1 + (v % 5) as u32], "{v}");
    }
}

#[test]
fn fields_that_would_not_fit_the_slots_are_refused_changing_nothing() {
    let mut p = pipeline();
    // 3 slots x 128 bits: 384 one-value pairs fit (a 1-bit field each), the 385th does not
    for k in 0..384u32 {
        let (opt, bit) = ((k / 128) as u8, k % 128);
        p.add_rule(rule(10 + k as u16, vec![FieldMatch::masked(md(opt), 0, 1 << bit)], 1)).unwrap();
    }
    let refused = p.add_rule(rule(500, vec![FieldMatch::masked(md(3), 0, 1)], 2));
    assert!(matches!(refused, Err(PipelineError::TooManyPofFields { table: 1 })), "{refused:?}");
    assert_eq!(out(&mut p, &[(0, 0)]), vec![1]);
    assert_eq!(out(&mut p, &[(3, 0)]), vec![9]);
}

