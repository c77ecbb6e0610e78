//! The whole-pipeline path cache changes nothing but speed: a pipeline with
//! its caches on and one with them off, given the same random rules, rule /
//! group / port changes and packets (repeated, so cached paths are reused),
//! emit the same fates and keep the same counters and rule statistics; so
//! does a third driven through `forward_fast` / `process_missed` (the
//! emulator's entry points).

use dp_core::field::Field;
use dp_core::pipeline::*;
use dp_core::RuleId;

use dp_core::rng::XorShift64 as Rng;

const N_TABLES: u8 = 3;
const PORTS: [u32; 4] = [1, 2, 3, 4];

fn frame(r: &mut Rng) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2 + r.below(2) as u8, 2, 0, 0, 0, 0, 1];
    if r.chance(30) {
        f.extend_from_slice(&[0x81, 0x00, 0x20, r.below(3) as u8 + 1]);
    }
    let proto = if r.chance(50) { 6 } else { 17 };
    f.extend_from_slice(&[8, 0, 0x45, 0, 0, 46, 0, 0, 0, 0, [1, 2, 64][r.below(3) as usize], proto, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1 + r.below(3) as u8, 10, 0, 0, 1 + r.below(3) as u8]);
    let ip = f.len() - 20;
    dp_core::checksum::ipv4_header_fix(&mut f, ip, 20);
    f.extend_from_slice(&(1000 + r.below(2) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 80 + r.below(2) as u8]);
    f.resize(f.len() + 20 + r.below(10) as usize, 0xab);
    f
}

fn action(r: &mut Rng, groups: bool) -> Action {
    match r.below(if groups { 8 } else { 7 }) {
        0 => Action::PushVlan { ethertype: 0x8100 },
        1 => Action::PopVlan,
        2 => Action::SetField { field: Field::Ipv4Dst, value: 0x0a00_0001 + u128::from(r.below(3) as u8) },
        3 => Action::SetField { field: Field::EthDst, value: 0x0200_0000_0002 },
        4 => Action::DecTtl,
        7 => Action::Group(1 + r.below(2) as u32),
        _ => Action::output([1, 2, 3, 4, 5, OFPP_IN_PORT, OFPP_FLOOD][r.below(7) as usize]),
    }
}

fn rule(r: &mut Rng, groups: bool) -> Rule {
    let table = r.below(u64::from(N_TABLES)) as u8;
    let mut m = Vec::new();
    if r.chance(40) {
        m.push(FieldMatch::exact(Field::InPort, 1 + u128::from(r.below(4) as u8)));
    }
    if r.chance(60) {
        m.push(FieldMatch::exact(Field::EthType, 0x800));
        if r.chance(60) {
            m.push(FieldMatch::masked(Field::Ipv4Dst, 0x0a00_0001 + u128::from(r.below(3) as u8), [0xffff_ffff, 0xffff_fffe][r.below(2) as usize]));
        }
        if r.chance(40) {
            m.push(FieldMatch::exact(Field::IpProto, 6));
            if r.chance(50) {
                m.push(FieldMatch::exact(Field::TcpDst, 80));
            }
        }
    }
    if r.chance(30) {
        m.push(FieldMatch::masked(Field::Metadata, u128::from(r.below(3) as u8), 0xf));
    }
    if r.chance(20) {
        m.push(FieldMatch::exact(Field::VlanVid, 0x1000 | (0x20 << 8 | (1 + r.below(3))) as u128 & 0x1fff));
    }
    let n_apply = r.below(3) as usize;
    let mut ins = Instructions { apply: (0..n_apply).map(|_| action(r, groups)).collect(), ..Default::default() };
    if r.chance(25) {
        ins.write = (0..1 + r.below(2)).map(|_| action(r, groups)).collect();
    }
    ins.clear = r.chance(10);
    if r.chance(40) {
        ins.write_metadata = Some((r.below(3), 0xf));
    }
    if table + 1 < N_TABLES && r.chance(60) {
        ins.goto = Some(table + 1 + r.below(u64::from(N_TABLES - table - 1)) as u8);
    }
    if r.chance(30) && ins.write.is_empty() && !ins.clear {
        // the plain shapes the cache compiles: goto with metadata, or one output
        ins = if table + 1 < N_TABLES && r.chance(50) {
            Instructions { write_metadata: Some((r.below(3), 0xf)), goto: Some(table + 1), ..Default::default() }
        } else {
            Instructions::apply(vec![Action::output(1 + r.below(4) as u32)])
        };
    }
    Rule::new(table, 1 + r.below(40) as u16, m, ins)
}

fn group(r: &mut Rng, id: u32) -> Group {
    let kind = if r.chance(50) { GroupType::All } else { GroupType::Indirect };
    let n = if kind == GroupType::All { 1 + r.below(2) } else { 1 };
    let buckets = (0..n).map(|_| Bucket::new(vec![action(r, false), Action::output(1 + r.below(4) as u32)], 1)).collect();
    Group { id, kind, buckets }
}

fn counters(p: &Pipeline) -> Vec<(String, u64)> {
    p.counters().into_iter().filter(|(n, _)| !n.contains("cache")).collect()
}

fn stats(p: &Pipeline) -> Vec<(RuleId, Option<RuleStats>)> {
    p.rules().map(|(id, _)| (id, p.rule_stats(id))).collect()
}

#[test]
fn cached_and_uncached_pipelines_agree_under_rule_changes() {
    let mut hits = 0;
    for seed in 1..=40u64 {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x100_0000_01b3));
        let mut on = Pipeline::new(N_TABLES as usize);
        let mut off = Pipeline::new(N_TABLES as usize);
        let mut fwd = Pipeline::new(N_TABLES as usize);
        off.set_cache_enabled(false);
        for p in [&mut on, &mut off, &mut fwd] {
            for port in PORTS {
                p.add_port(port);
            }
        }
        let g1 = group(&mut r, 1);
        let g2 = group(&mut r, 2);
        for p in [&mut on, &mut off, &mut fwd] {
            p.add_group(g1.clone()).unwrap();
            p.add_group(g2.clone()).unwrap();
        }
        for _ in 0..12 {
            let ru = rule(&mut r, true);
            fwd.add_rule(ru.clone()).ok();
            assert_eq!(on.add_rule(ru.clone()).ok(), off.add_rule(ru).ok());
        }
        let pool: Vec<(u32, Vec<u8>)> = (0..12).map(|_| (1 + r.below(4) as u32, frame(&mut r))).collect();
        for step in 0..400 {
            if step % 40 == 39 {
                // A change between packets: the cache must never serve a stale path.
                match r.below(6) {
                    0 | 1 => {
                        let ru = rule(&mut r, true);
                        fwd.add_rule(ru.clone()).ok();
                        assert_eq!(on.add_rule(ru.clone()).ok(), off.add_rule(ru).ok());
                    }
                    2 => {
                        let ru = rule(&mut r, true);
                        let cmd = if r.chance(50) { FlowModCommand::Delete } else { FlowModCommand::Modify };
                        fwd.flow_mod(cmd, ru.clone(), OFPP_ANY, OFPG_ANY, false).ok();
                        let a = on.flow_mod(cmd, ru.clone(), OFPP_ANY, OFPG_ANY, false).ok();
                        assert_eq!(a, off.flow_mod(cmd, ru, OFPP_ANY, OFPG_ANY, false).ok());
                    }
                    3 => {
                        let id = 1 + r.below(2) as u32;
                        let g = group(&mut r, id);
                        on.add_group(g.clone()).unwrap();
                        fwd.add_group(g.clone()).unwrap();
                        off.add_group(g).unwrap();
                    }
                    4 => {
                        let port = 1 + r.below(5) as u32;
                        if on.ports().contains(&port) {
                            on.remove_port(port);
                            fwd.remove_port(port);
                            off.remove_port(port);
                        } else {
                            on.add_port(port);
                            fwd.add_port(port);
                            off.add_port(port);
                        }
                    }
                    _ => {
                        let ids: Vec<RuleId> = on.rules().map(|(i, _)| i).collect();
                        if !ids.is_empty() {
                            let id = ids[r.below(ids.len() as u64) as usize];
                            fwd.remove_rule(id);
                            assert_eq!(on.remove_rule(id), off.remove_rule(id));
                        }
                    }
                }
            }
            let (port, f) = &pool[r.below(pool.len() as u64) as usize];
            let a = on.process(Packet::new(f.clone()), *port);
            let b = off.process(Packet::new(f.clone()), *port);
            assert_eq!(a, b, "seed {seed} step {step}");
            let mut c = Vec::new();
            match fwd.forward_fast(f, *port) {
                Ok(out) => c.push(Fate::Output { port: out, packet: Packet::new(f.clone()) }),
                Err(missed) => fwd.process_missed(Packet::new(f.clone()), *port, &mut c, missed),
            }
            assert_eq!(c, b, "forward_fast, seed {seed} step {step}");
        }
        assert_eq!(counters(&fwd), counters(&off), "seed {seed}");
        assert_eq!(counters(&on), counters(&off), "seed {seed}");
        assert_eq!(stats(&on), stats(&off), "seed {seed}");
        let c: std::collections::HashMap<_, _> = on.counters().into_iter().collect();
        hits += c["path_cache.hits"];
    }
    assert!(hits > 2000, "the cache was exercised ({hits} hits)");
}

#[test]
fn a_cached_path_follows_a_rule_change_at_once() {
    let mut p = Pipeline::new(2);
    for port in PORTS {
        p.add_port(port);
    }
    let goto = Instructions { write_metadata: Some((1, 0xff)), goto: Some(1), ..Default::default() };
    p.add_rule(Rule::new(0, 1, vec![], goto)).unwrap();
    let out2 = p.add_rule(Rule::new(1, 1, vec![FieldMatch::masked(Field::Metadata, 1, 0xff)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    let mut r = Rng(7);
    let f = frame(&mut r);
    let out_port = |fates: Vec<Fate>| match &fates[..] {
        [Fate::Output { port, .. }] => *port,
        other => panic!("{other:?}"),
    };
    for _ in 0..3 {
        assert_eq!(out_port(p.process(Packet::new(f.clone()), 1)), 2);
    }
    // No rule matches in_port, yet the same frame from port 2 must not take
    // the cached "output to 2" path.
    assert_eq!(p.process(Packet::new(f.clone()), 2), vec![Fate::Drop { reason: DropReason::OutputToInPort }]);
    // A better rule in table 1 takes over at once.
    p.add_rule(Rule::new(1, 5, vec![FieldMatch::exact(Field::EthType, 0x800)], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(out_port(p.process(Packet::new(f.clone()), 1)), 3);
    // Its port disappears: the same path now drops.
    p.remove_port(3);
    assert_eq!(p.process(Packet::new(f.clone()), 1), vec![Fate::Drop { reason: DropReason::UnknownPort(3) }]);
    // Modify the first rule's instructions: straight output.
    p.modify(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(4)])), true).unwrap();
    assert_eq!(out_port(p.process(Packet::new(f.clone()), 1)), 4);
    assert_eq!(p.rule_stats(out2), Some(RuleStats { packets: 4, bytes: 4 * f.len() as u64 }));
    let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
    assert_eq!((c["table.0.lookups"], c["table.1.lookups"], c["table.1.matched"]), (7, 6, 6));
    assert!(c["path_cache.hits"] >= 2);
}

#[test]
fn pof_fields_bypass_the_cache_until_their_rules_are_gone() {
    let mut on = Pipeline::new(2);
    let mut off = Pipeline::new(2);
    off.set_cache_enabled(false);
    let mut r = Rng(11);
    let frames: Vec<Vec<u8>> = (0..6).map(|_| frame(&mut r)).collect();
    // Table 1 matches the last byte of the destination MAC (frame bits
    // 40..48, 2 or 3 in `frame`) as a POF field.
    let pof = Field::Pof { offset: 40, length: 8 };
    let rules = [
        Rule::new(0, 1, vec![], Instructions { write_metadata: Some((1, 0xff)), goto: Some(1), ..Default::default() }),
        Rule::new(1, 5, vec![FieldMatch::exact(pof, 2)], Instructions::apply(vec![Action::output(2)])),
        Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(3)])),
    ];
    let mut ids = Vec::new();
    for p in [&mut on, &mut off] {
        for port in PORTS {
            p.add_port(port);
        }
        ids = rules.iter().map(|ru| p.add_rule(ru.clone()).unwrap()).collect();
    }
    let run = |on: &mut Pipeline, off: &mut Pipeline| {
        for _ in 0..3 {
            for f in &frames {
                assert_eq!(on.process(Packet::new(f.clone()), 1), off.process(Packet::new(f.clone()), 1));
            }
        }
    };
    run(&mut on, &mut off);
    let hits = |p: &Pipeline| p.counters().into_iter().find(|(n, _)| n == "path_cache.hits").unwrap().1;
    assert_eq!(hits(&on), 0, "POF rules present: no cached paths");
    on.remove_rule(ids[1]);
    off.remove_rule(ids[1]);
    run(&mut on, &mut off);
    assert!(hits(&on) > 0, "POF rules gone: the cache is used again");
    assert_eq!(counters(&on), counters(&off));
}

/// `forward_fast_mut` (the emulator's entry point) with the shapes OneSwitch
/// installs - tag-push hand-offs, tag-pop deliveries, in_port-only rules that
/// the per-port memo short-cuts, rules that need pkt_mark=0 or a flow id - emits the same frames and keeps the same
/// counters and rule statistics as the uncached full walk, under rule changes.
#[test]
fn forward_fast_mut_with_tag_and_port_only_paths_agrees_with_the_full_walk() {
    let mut memo_paths = 0u64;
    for seed in 1..=40u64 {
        let mut r = Rng(0x51a5_5eed_0000_0001 ^ seed.wrapping_mul(0x100_0000_01b3));
        let mut off = Pipeline::new(N_TABLES as usize);
        let mut fwd = Pipeline::new(N_TABLES as usize);
        off.set_cache_enabled(false);
        for p in [&mut off, &mut fwd] {
            p.drop_malformed = false;
            for port in PORTS {
                p.add_port(port);
            }
        }
        let shaped = |r: &mut Rng| {
            let mut ru = rule(r, false);
            if r.chance(40) {
                ru.matches = vec![FieldMatch::exact(Field::InPort, 1 + u128::from(r.below(4) as u8))];
            }
            // OneSwitch's table 0: copies for any in_port match pkt_mark=0, delivery rules a flow id
            match r.below(6) {
                0 => ru.matches.push(FieldMatch::exact(Field::PktMark, 0)),
                1 => ru.matches = vec![FieldMatch::exact(Field::PktMark, 1 + u128::from(r.below(3) as u8))],
                _ => {}
            }
            let out = 1 + r.below(4) as u32;
            match r.below(5) {
                2 => {
                    ru.instructions = Instructions::apply(vec![
                        Action::SetField { field: Field::PktMark, value: u128::from(1 + r.below(3) as u32) },
                        Action::output(out),
                    ])
                }
                0 => {
                    ru.instructions = Instructions::apply(vec![
                        Action::PushVlan { ethertype: 0x88a8 },
                        Action::SetField { field: Field::VlanVid, value: 0x1000 | u128::from(1 + r.below(5) as u16) },
                        Action::output(out),
                        Action::PopVlan,
                    ])
                }
                1 => ru.instructions = Instructions::apply(vec![Action::PopVlan, Action::output(out)]),
                _ => {}
            }
            ru
        };
        for _ in 0..10 {
            let ru = shaped(&mut r);
            fwd.add_rule(ru.clone()).ok();
            off.add_rule(ru).ok();
        }
        let pool: Vec<(u32, Vec<u8>)> = (0..12).map(|_| (1 + r.below(4) as u32, frame(&mut r))).collect();
        for step in 0..400 {
            if step % 50 == 49 {
                if r.chance(50) {
                    let ru = shaped(&mut r);
                    fwd.add_rule(ru.clone()).ok();
                    off.add_rule(ru).ok();
                } else {
                    let ids: Vec<RuleId> = off.rules().map(|(i, _)| i).collect();
                    if !ids.is_empty() {
                        let id = ids[r.below(ids.len() as u64) as usize];
                        fwd.remove_rule(id);
                        off.remove_rule(id);
                    }
                }
            }
            let (port, f) = &pool[r.below(pool.len() as u64) as usize];
            let b = off.process(Packet::new(f.clone()), *port);
            let mut c = Vec::new();
            let mut data = f.clone();
            match fwd.forward_fast_mut_marking(&mut data, *port) {
                Ok((out, mark)) => {
                    memo_paths += 1;
                    c.push(Fate::Output { port: out, packet: Packet::marked(data, mark) })
                }
                Err(missed) => {
                    assert_eq!(&data, f, "a declined frame is untouched");
                    fwd.process_missed(Packet::new(data), *port, &mut c, missed)
                }
            }
            assert_eq!(c, b, "forward_fast_mut, seed {seed} step {step}");
        }
        assert_eq!(counters(&fwd), counters(&off), "seed {seed}");
        assert_eq!(stats(&fwd), stats(&off), "seed {seed}");
    }
    assert!(memo_paths > 1000, "the fast endings were exercised ({memo_paths} fast forwards)");
}

/// Two pipelines with the same 301 rules (on destination prefixes, and one
/// on source address and ports, which puts those in the cache key): one
/// with its caches on, one off.
fn on_and_off_pipelines() -> (Pipeline, Pipeline) {
    let mut on = Pipeline::new(1);
    let mut off = Pipeline::new(1);
    off.set_cache_enabled(false);
    for p in [&mut on, &mut off] {
        for port in PORTS {
            p.add_port(port);
        }
    }
    for i in 0..300u32 {
        let dst = 0x0a00_0000 | (i << 8);
        let m = vec![FieldMatch::exact(Field::EthType, 0x800), FieldMatch::masked(Field::Ipv4Dst, u128::from(dst), 0xffff_ff00)];
        let ru = Rule::new(0, 1 + (i % 7) as u16, m, Instructions::apply(vec![Action::output(1 + i % 3)]));
        for p in [&mut on, &mut off] {
            p.add_rule(ru.clone()).unwrap();
        }
    }
    let m = vec![FieldMatch::exact(Field::EthType, 0x800), FieldMatch::exact(Field::Ipv4Src, 1), FieldMatch::exact(Field::IpProto, 17), FieldMatch::exact(Field::UdpSrc, 1), FieldMatch::exact(Field::UdpDst, 1)];
    for p in [&mut on, &mut off] {
        p.add_rule(Rule::new(0, 9, m.clone(), Instructions::apply(vec![Action::output(2)]))).unwrap();
    }
    (on, off)
}

/// A frame of a flow of its own: random source address and ports, one of
/// the rules' destination prefixes.
fn distinct_flow(r: &mut Rng) -> Vec<u8> {
    let mut f = frame(r);
    let at = f.iter().position(|&b| b == 0x45).expect("IPv4 header");
    f[at + 12..at + 16].copy_from_slice(&(r.next() as u32).to_be_bytes());
    f[at + 16..at + 19].copy_from_slice(&[10, 0, r.below(300) as u8]);
    f[at + 20..at + 22].copy_from_slice(&(r.next() as u16).to_be_bytes());
    f
}

#[test]
fn many_distinct_flows_bypass_both_caches_and_change_nothing() {
    // a stream of flows that never come back: the path cache grows to its
    // largest size, then its misses evict live entries and its gate turns
    // it off (the table's flow cache, smaller, sooner); bypassed packets
    // are neither probed nor recorded, and every fate and counter is what
    // the pipeline with its caches off gives
    let (mut on, mut off) = on_and_off_pipelines();
    let mut r = Rng(23);
    let total = 500_000u64;
    for _ in 0..total {
        let f = distinct_flow(&mut r);
        let (a, b) = (on.process(Packet::new(f.clone()), 1), off.process(Packet::new(f), 1));
        assert_eq!(a, b);
    }
    let c: std::collections::HashMap<String, u64> = on.counters().into_iter().collect();
    let probed = c["path_cache.hits"] + c["path_cache.misses"];
    // once it has grown and about half filled, its evicting misses turn it
    // off: then it is only tried now and then
    // (401,696 of 500,000)
    assert!(c["path_cache.bypassed"] > total * 3 / 4, "{c:?}");
    assert_eq!(probed + c["path_cache.bypassed"], total, "every packet is probed or bypassed, once");
    assert!(c["table.0.cache_bypassed"] > total * 8 / 10, "{c:?}");
    assert_eq!(counters(&on), counters(&off));
}

#[test]
fn a_working_set_the_path_cache_can_hold_keeps_it_on() {
    // 50,000 flows replayed 4 times: the path cache grows until they fit
    // (most of the second round hits already: 136,159 hits of 150,000
    // possible); its gate never bypasses it (the first round's misses only
    // fill entries); same fates and counters as off
    let (mut on, mut off) = on_and_off_pipelines();
    let mut r = Rng(29);
    let flows: Vec<Vec<u8>> = (0..50_000).map(|_| distinct_flow(&mut r)).collect();
    for _ in 0..4 {
        for f in &flows {
            let (a, b) = (on.process(Packet::new(f.clone()), 1), off.process(Packet::new(f.clone()), 1));
            assert_eq!(a, b);
        }
    }
    let c: std::collections::HashMap<String, u64> = on.counters().into_iter().collect();
    assert_eq!(c["path_cache.bypassed"], 0, "{c:?}");
    assert!(c["path_cache.hits"] > 130_000, "{c:?}");
    assert_eq!(counters(&on), counters(&off));
}
