//! Property tests of the decision-tree fast path: random rule sets (prefix,
//! exact and arbitrary masks over several fields, repeated priorities), with
//! rules added and removed between rounds of lookups, against (a) a
//! brute-force linear scan (best priority) and (b) the same classifier with
//! the tree disabled (the identical rule, so equal priorities resolve as
//! tuple space search resolves them). Single, batched and cached lookups.

use super::*;
use crate::field::{put, Field};

use crate::rng::XorShift64 as Rng;

#[derive(Clone)]
struct R {
    id: RuleId,
    prio: u16,
    value: Key,
    mask: Key,
}

fn prefix(bits: u32, len: u32) -> u128 {
    if len == 0 {
        0
    } else {
        ((1u128 << len) - 1) << (bits - len)
    }
}

/// A random rule in the style of `style`: 0 = ClassBench-like 5-tuple
/// prefixes, 1 = adds exact in_port / VLAN and masked metadata, 2 = also
/// arbitrary (non-prefix) masks.
fn random_rule(rng: &mut Rng, id: RuleId, style: u32) -> R {
    let (mut v, mut m) = ([0u64; KEY_WORDS], [0u64; KEY_WORDS]);
    let mut set = |f: Field, val: u128, mask: u128| {
        put(&mut v, f.slot(), val & mask);
        put(&mut m, f.slot(), mask);
    };
    set(Field::EthType, 0x0800, 0xffff);
    // small value pools so rules overlap often
    let ip = |rng: &mut Rng| u128::from([0x0a00_0000u32, 0x0a01_0000, 0xc0a8_0100, 0x0a00_0080][rng.below(4) as usize] | (rng.below(4) as u32) << 6);
    let sl = [0, 8, 16, 24, 26, 32][rng.below(6) as usize];
    let dl = [0, 8, 16, 23, 32][rng.below(5) as usize];
    let s = ip(rng);
    let d = ip(rng);
    set(Field::Ipv4Src, s, prefix(32, sl));
    set(Field::Ipv4Dst, d, prefix(32, dl));
    if rng.below(3) > 0 {
        set(Field::IpProto, [6, 17][rng.below(2) as usize], 0xff);
        if rng.below(2) == 0 {
            let pl = [16, 12, 8][rng.below(3) as usize];
            set(Field::TcpDst, [80, 443, 0x1234][rng.below(3) as usize], prefix(16, pl));
        }
    }
    if style >= 1 {
        if rng.below(4) == 0 {
            set(Field::InPort, u128::from(1 + rng.below(3) as u32), 0xffff_ffff);
        }
        if rng.below(5) == 0 {
            set(Field::Metadata, u128::from(rng.below(4)) << 60, prefix(64, 1 + rng.below(4) as u32));
        }
    }
    if style >= 2 && rng.below(4) == 0 {
        // arbitrary masks: bytes picked out of a field
        let pick = [0x00ff_00ffu128, 0x0f0f_0000, 0x0000_ff00][rng.below(3) as usize];
        set(Field::Ipv4Src, s, pick);
        if rng.below(2) == 0 {
            set(Field::EthSrc, u128::from(rng.below(4)) * 0x0101_0101_0101, 0x00ff_0000_ff00 & ((1 << 48) - 1));
        }
    }
    // priorities from a small range, so equal priorities are common
    R { id, prio: rng.below(40) as u16, value: v, mask: m }
}

/// A key that matches `r` (random bits where it wildcards) or, half the
/// time, a random key built from the same value pools.
fn random_key(rng: &mut Rng, rules: &[R]) -> Key {
    let mut k = [0u64; KEY_WORDS];
    for w in k.iter_mut() {
        *w = rng.next();
    }
    if rules.is_empty() || rng.below(2) == 0 {
        let src = random_rule(rng, 0, 2);
        for w in 0..KEY_WORDS {
            k[w] = (k[w] & !src.mask[w]) | src.value[w];
        }
        return k;
    }
    let r = &rules[rng.below(rules.len() as u64) as usize];
    for w in 0..KEY_WORDS {
        k[w] = (k[w] & !r.mask[w]) | r.value[w];
    }
    k
}

fn brute(rules: &[R], key: &Key) -> Option<u16> {
    rules.iter().filter(|r| (0..KEY_WORDS).all(|w| key[w] & r.mask[w] == r.value[w])).map(|r| r.prio).max()
}

fn check_round(fast: &mut Classifier, plain: &mut Classifier, rules: &[R], rng: &mut Rng, n: usize) {
    let keys: Vec<Key> = (0..n).map(|_| random_key(rng, rules)).collect();
    let mut batch = vec![None; n];
    fast.lookup_batch(&keys, &mut batch);
    // the other batched walk (scalar vs AVX-512, when the CPU has it) on the same rules
    let simd = fast.uses_simd();
    let mut other = vec![None; n];
    fast.set_simd(!fast.simd);
    fast.lookup_batch(&keys, &mut other);
    assert!(fast.tree_stats().is_none() || !fast.uses_simd() || !simd, "set_simd(false) turns AVX-512 off");
    fast.set_simd(true);
    assert_eq!(batch, other, "scalar and AVX-512 batched walks (simd was {simd})");
    for (i, key) in keys.iter().enumerate() {
        let want = plain.lookup(key);
        assert_eq!(want.map(|x| x.0), brute(rules, key), "tuple space search vs linear scan");
        assert_eq!(fast.lookup(key), want, "tree, one key");
        assert_eq!(batch[i], want, "tree, batched");
        assert_eq!(fast.lookup_cached(key), want, "tree, through the cache");
    }
}

fn run(seed: u64, style: u32, n_rules: usize, budget: Option<usize>) -> (usize, usize) {
    let mut rng = Rng(seed);
    let mut fast = Classifier::new();
    fast.set_tree_policy(Some((0, 0)));
    fast.test_node_budget = budget;
    let mut plain = Classifier::new();
    plain.set_tree_policy(None);
    let mut rules: Vec<R> = Vec::new();
    let mut next_id = 0;
    let mut trees = 0;
    for round in 0..8 {
        // add a batch, remove some, then look up
        for _ in 0..n_rules / 4 {
            let r = random_rule(&mut rng, next_id, style);
            next_id += 1;
            fast.insert(r.id, r.prio, &r.value, &r.mask);
            plain.insert(r.id, r.prio, &r.value, &r.mask);
            rules.push(r);
        }
        if round % 2 == 1 {
            for _ in 0..rules.len() / 5 {
                let r = rules.swap_remove(rng.below(rules.len() as u64) as usize);
                assert!(fast.remove(r.id, r.prio, &r.value, &r.mask));
                assert!(plain.remove(r.id, r.prio, &r.value, &r.mask));
            }
        }
        check_round(&mut fast, &mut plain, &rules, &mut rng, 600);
        trees += usize::from(fast.tree_stats().is_some());
        // a change right after lookups must drop the tree
        if let Some(r) = rules.pop() {
            assert!(fast.remove(r.id, r.prio, &r.value, &r.mask));
            assert!(plain.remove(r.id, r.prio, &r.value, &r.mask));
            assert!(fast.tree_stats().is_none());
            check_round(&mut fast, &mut plain, &rules, &mut rng, 100);
        }
    }
    (trees, fast.tree_stats().map_or(0, |s| s.3))
}

#[test]
fn five_tuple_prefix_rules_match_linear_scan_and_tuple_space() {
    for seed in 1..6 {
        let (trees, _) = run(seed * 7919, 0, 400, None);
        assert!(trees > 0, "the tree was built");
    }
}

#[test]
fn exact_and_masked_extra_fields_match() {
    for seed in 1..6 {
        let (trees, _) = run(seed * 104729, 1, 400, None);
        assert!(trees > 0);
    }
}

#[test]
fn arbitrary_masks_match() {
    for seed in 1..6 {
        run(seed * 15485863, 2, 400, None);
    }
}

#[test]
fn list_leaves_and_budget_fallback_match() {
    // budgets so small that trees use list leaves or are abandoned
    for (seed, budget) in [(3u64, 64usize), (5, 300), (11, 8)] {
        run(seed, 1, 300, Some(budget));
    }
}

#[test]
fn more_shapes_than_dimensions_leaves_a_tuple_space_remainder() {
    // many distinct non-prefix masks: more runs of bits than MAX_DIMS
    let mut rng = Rng(42);
    let mut fast = Classifier::new();
    fast.set_tree_policy(Some((0, 0)));
    let mut plain = Classifier::new();
    plain.set_tree_policy(None);
    let mut rules = Vec::new();
    for id in 0..300u32 {
        let mut r = random_rule(&mut rng, id, 0);
        if id % 3 == 0 {
            let w = 6 + (id as usize / 3) % 6;
            let bits = rng.next() & rng.next();
            r.mask[w] = bits;
            r.value[w] = rng.next() & bits;
        }
        fast.insert(r.id, r.prio, &r.value, &r.mask);
        plain.insert(r.id, r.prio, &r.value, &r.mask);
        rules.push(r);
    }
    check_round(&mut fast, &mut plain, &rules, &mut rng, 2000);
    let (_, _, _, remainder) = fast.tree_stats().expect("a tree over the simple shapes");
    assert!(remainder > 0, "some subtables stay in tuple space search");
}

#[test]
fn default_policy_builds_only_after_enough_lookups() {
    let mut rng = Rng(9);
    let mut c = Classifier::new();
    let rules: Vec<R> = (0..50).map(|i| random_rule(&mut rng, i, 0)).collect();
    for r in &rules {
        c.insert(r.id, r.prio, &r.value, &r.mask);
    }
    let key = random_key(&mut rng, &rules);
    c.lookup(&key);
    assert!(c.tree_stats().is_none(), "one lookup after a change: no tree yet");
    let keys: Vec<Key> = (0..200).map(|_| random_key(&mut rng, &rules)).collect();
    let mut out = vec![None; keys.len()];
    c.lookup_batch(&keys, &mut out);
    c.lookup_batch(&keys, &mut out);
    assert!(c.tree_stats().is_some(), "built once lookups outnumber rules");
    for (k, o) in keys.iter().zip(&out) {
        assert_eq!(o.map(|x| x.0), brute(&rules, k));
    }
}

/// A 5-tuple rule with port ranges: (id, priority, value/mask without the
/// ports, source and destination port ranges).
struct Ranged {
    id: RuleId,
    prio: u16,
    value: Key,
    mask: Key,
    sport: (u64, u64),
    dport: (u64, u64),
}

impl Ranged {
    fn matches(&self, k: &Key) -> bool {
        let port = |f: Field| (k[f.slot().word] >> f.slot().shift) & 0xffff;
        (0..KEY_WORDS).all(|w| k[w] & self.mask[w] == self.value[w])
            && (self.sport.0..=self.sport.1).contains(&port(Field::TcpSrc))
            && (self.dport.0..=self.dport.1).contains(&port(Field::TcpDst))
    }
    fn ranges(&self) -> Vec<FieldRange> {
        let mut v = Vec::new();
        if self.sport != (0, 0xffff) {
            v.push(FieldRange::of(Field::TcpSrc, self.sport.0, self.sport.1));
        }
        if self.dport != (0, 0xffff) {
            v.push(FieldRange::of(Field::TcpDst, self.dport.0, self.dport.1));
        }
        v
    }
}

fn random_ranged(rng: &mut Rng, id: RuleId, prio: u16) -> Ranged {
    let (mut v, mut m) = ([0u64; KEY_WORDS], [0u64; KEY_WORDS]);
    let mut set = |f: Field, val: u128, mask: u128| {
        put(&mut v, f.slot(), val & mask);
        put(&mut m, f.slot(), mask);
    };
    set(Field::EthType, 0x0800, 0xffff);
    let ip = |rng: &mut Rng| u128::from([0x0a00_0000u32, 0x0a01_0000, 0xc0a8_0100][rng.below(3) as usize] | (rng.below(4) as u32) << 6);
    set(Field::Ipv4Src, ip(rng), prefix(32, [0, 8, 16, 24, 32][rng.below(5) as usize]));
    set(Field::Ipv4Dst, ip(rng), prefix(32, [0, 8, 16, 24, 32][rng.below(5) as usize]));
    if rng.below(2) == 0 {
        set(Field::IpProto, [6, 17][rng.below(2) as usize], 0xff);
    }
    let range = |rng: &mut Rng| match rng.below(4) {
        0 => (0, 0xffff),
        1 => {
            let p = [80u64, 443, 1000, 1024][rng.below(4) as usize];
            (p, p)
        }
        2 => (1024, 0xffff),
        _ => {
            let a = rng.below(2000);
            (a, a + rng.below(3000))
        }
    };
    let (sport, dport) = (range(rng), range(rng));
    Ranged { id, prio, value: v, mask: m, sport, dport }
}

/// A random key matching a random rule of `rules` on its value/mask, with
/// both ports on or just beside that rule's range edges (`near`) or random.
fn ranged_key(rng: &mut Rng, rules: &[Ranged], near: bool) -> Key {
    let mut k = [0u64; KEY_WORDS];
    for w in k.iter_mut() {
        *w = rng.next();
    }
    let r = &rules[rng.below(rules.len() as u64) as usize];
    for w in 0..KEY_WORDS {
        k[w] = (k[w] & !r.mask[w]) | r.value[w];
    }
    if near {
        let edge = |(lo, hi): (u64, u64), rng: &mut Rng| [lo, hi, lo.wrapping_sub(1), hi + 1][rng.below(4) as usize] & 0xffff;
        let (s, d) = (edge(r.sport, rng), edge(r.dport, rng));
        k[5] = (k[5] & !(0xffff_ffffu64 << 32)) | (s << 48) | (d << 32);
    }
    k
}

#[test]
fn range_rules_are_one_tree_rule_and_match_linear_scan_through_changes() {
    for seed in 1..4u64 {
        let mut rng = Rng(seed * 7919);
        let mut fast = Classifier::new();
        fast.set_tree_policy(Some((0, 0)));
        let mut plain = Classifier::new();
        plain.set_tree_policy(None);
        let mut rules: Vec<Ranged> = Vec::new();
        let mut next = 0u32;
        for round in 0..6 {
            for _ in 0..150 {
                // distinct priorities: equal-priority overlaps with a range rule are unspecified
                let r = random_ranged(&mut rng, next, (next % 60000) as u16 + 1);
                next += 1;
                for c in [&mut fast, &mut plain] {
                    c.insert_ranged(r.id, r.prio, &r.value, &r.mask, &r.ranges());
                }
                rules.push(r);
            }
            if round % 2 == 1 {
                for _ in 0..rules.len() / 4 {
                    let r = rules.swap_remove(rng.below(rules.len() as u64) as usize);
                    assert!(fast.remove_ranged(r.id) && plain.remove_ranged(r.id));
                    assert!(!fast.remove_ranged(r.id), "removed twice");
                }
            }
            assert_eq!(fast.len(), rules.len());
            // ports near the rule's range edges half the time
            let keys: Vec<Key> = (0..800).map(|i| ranged_key(&mut rng, &rules, i % 2 == 0)).collect();
            let mut batch = vec![None; keys.len()];
            fast.lookup_batch(&keys, &mut batch);
            for (i, k) in keys.iter().enumerate() {
                let want = rules.iter().filter(|r| r.matches(k)).max_by_key(|r| r.prio).map(|r| (r.prio, r.id));
                assert_eq!(plain.lookup(k), want, "tuple space search, seed {seed} round {round}");
                assert_eq!(fast.lookup(k), want, "tree, seed {seed} round {round}");
                assert_eq!(batch[i], want, "tree, batched");
                assert_eq!(fast.lookup_cached(k), want, "through the cache");
            }
            // every range rule is one tree rule, not its pieces
            let pieces: usize = rules.iter().map(|r| r.ranges().iter().fold(1, |n, g| n * g.prefixes().len())).sum();
            assert_eq!(fast.tree_rules(), Some(rules.len()), "{} pieces in tuple space", pieces);
            assert!(pieces > rules.len());
        }
    }
}

#[test]
fn range_rules_with_priority_ties_agree_in_every_walk() {
    // ranges, wildcards and priorities from a small set (ties everywhere):
    // which of several equal-priority matches answers is not specified, but
    // it must be a best match, and the single-key walk, the scalar batch and
    // the AVX-512 batch (when the CPU has it) must pick the same one
    for seed in 1..5u64 {
        let mut rng = Rng(seed * 104_729);
        let rules: Vec<Ranged> = (0..600)
            .map(|id| {
                let prio = 1 + rng.below(12) as u16;
                random_ranged(&mut rng, id, prio)
            })
            .collect();
        let mut c = Classifier::new();
        c.set_tree_policy(Some((0, 0)));
        for r in &rules {
            c.insert_ranged(r.id, r.prio, &r.value, &r.mask, &r.ranges());
        }
        let keys: Vec<Key> = (0..1000)
            .map(|i| {
                let mut k = ranged_key(&mut rng, &rules, i % 5 != 0);
                if i % 9 == 0 {
                    // not IPv4: fails every tree's guard
                    put(&mut k, Field::EthType.slot(), 0x86dd);
                }
                k
            })
            .collect();
        let mut batch = vec![None; keys.len()];
        c.lookup_batch(&keys, &mut batch);
        let simd = c.uses_simd();
        c.set_simd(false);
        let mut scalar = vec![None; keys.len()];
        c.lookup_batch(&keys, &mut scalar);
        assert!(!c.uses_simd());
        for (i, k) in keys.iter().enumerate() {
            let best = rules.iter().filter(|r| r.matches(k)).map(|r| r.prio).max();
            let one = c.lookup(k);
            assert_eq!(one.map(|a| a.0), best, "seed {seed} key {i}: priority of the answer");
            if let Some((_, id)) = one {
                assert!(rules[id as usize].matches(k), "seed {seed} key {i}: the answer matches");
            }
            assert_eq!(scalar[i], one, "seed {seed} key {i}: scalar batch vs one key");
            assert_eq!(batch[i], one, "seed {seed} key {i}: batch (AVX-512: {simd}) vs one key");
        }
        assert!(keys.iter().filter(|k| rules.iter().filter(|r| r.matches(k)).count() > 1).count() > 100, "overlaps");
        assert_eq!(c.tree_rules(), Some(rules.len()), "each range rule is one tree rule");
    }
}

#[test]
fn range_prefixes_cover_exactly() {
    let mut rng = Rng(5);
    for _ in 0..2000 {
        let lo = rng.below(1 << 16);
        let hi = lo + rng.below((1 << 16) - lo);
        let r = FieldRange::of(Field::UdpDst, lo, hi);
        let ps = r.prefixes();
        assert!(ps.len() <= 30, "{lo}..={hi}: {} pieces", ps.len());
        let mut covered = 0u64;
        for &(v, m) in &ps {
            assert_eq!(v & !m & 0xffff, 0);
            covered += (!m & 0xffff) + 1;
            assert!(v >= lo && (v | (!m & 0xffff)) <= hi);
        }
        assert_eq!(covered, hi - lo + 1);
    }
}

#[test]
fn one_range_rule_is_exact_at_its_edge() {
    let (mut v, mut m) = ([0u64; KEY_WORDS], [0u64; KEY_WORDS]);
    put(&mut v, Field::EthType.slot(), 0x800);
    put(&mut m, Field::EthType.slot(), 0xffff);
    let mut c = Classifier::new();
    c.set_tree_policy(Some((0, 0)));
    c.insert_ranged(1, 5, &v, &m, &[FieldRange::of(Field::TcpSrc, 1024, 65535)]);
    let mut k = v;
    k[5] = 81u64 << 48;
    assert_eq!(c.lookup(&k), None, "{:?}", c.tree_stats());
    k[5] = 1024u64 << 48;
    assert_eq!(c.lookup(&k), Some((5, 1)));
}

#[test]
fn port_ranges_alone_match_every_port() {
    // non-prefix ranges cover root cells only in part: such cells must not
    // share a subtree with cells the same rules cover whole
    for n in [2usize, 3, 4, 6, 10, 20, 50] {
        for seed in 0..6u64 {
            let mut rng = Rng(seed + 100);
            let (mut v, mut m) = ([0u64; KEY_WORDS], [0u64; KEY_WORDS]);
            put(&mut v, Field::EthType.slot(), 0x800);
            put(&mut m, Field::EthType.slot(), 0xffff);
            let mut c = Classifier::new();
            c.set_tree_policy(Some((0, 0)));
            let mut rs = Vec::new();
            for i in 0..n {
                let a = rng.below(60000);
                let b = a + rng.below(65535 - a);
                rs.push((i as u32, (i + 1) as u16, a, b));
                c.insert_ranged(i as u32, (i + 1) as u16, &v, &m, &[FieldRange::of(Field::TcpSrc, a, b)]);
            }
            // every rule edge and its neighbours, and a stride over the rest
            let edges = rs.iter().flat_map(|r| [r.2, r.3]).flat_map(|e| e.saturating_sub(2)..=(e + 2).min(65535));
            for p in edges.chain((0..65536u64).step_by(61)) {
                let mut k = v;
                k[5] = p << 48;
                let want = rs.iter().filter(|r| r.2 <= p && p <= r.3).map(|r| (r.1, r.0)).max();
                assert_eq!(c.lookup(&k), want, "n {n} seed {seed} port {p} rules {rs:?}");
            }
        }
    }
}

#[test]
fn avx512_walk_is_used_when_the_cpu_has_it_and_matches_the_linear_scan() {
    // 5-tuple rules: at most 8 dimensions and 4 trees, so the AVX-512 walk
    // applies whenever the CPU has AVX-512F
    let mut rng = Rng(77);
    let rules: Vec<R> = (0..2000).map(|id| random_rule(&mut rng, id, 0)).collect();
    let mut c = Classifier::new();
    c.set_tree_policy(Some((0, 0)));
    for r in &rules {
        c.insert(r.id, r.prio, &r.value, &r.mask);
    }
    // batch sizes around the chunk the batched walk takes at a time (256),
    // so partial chunks are walked too
    for n in [1usize, 7, 255, 256, 257, 1000] {
        let keys: Vec<Key> = (0..n).map(|_| random_key(&mut rng, &rules)).collect();
        let mut out = vec![None; n];
        c.lookup_batch(&keys, &mut out);
        for (k, o) in keys.iter().zip(&out) {
            assert_eq!(o.map(|x| x.0), brute(&rules, k));
        }
    }
    #[cfg(target_arch = "x86_64")]
    assert_eq!(c.uses_simd(), std::arch::is_x86_feature_detected!("avx512f"));
    c.set_simd(false);
    let mut out = vec![None; 1];
    c.lookup_batch(&[random_key(&mut rng, &rules)], &mut out);
    assert!(!c.uses_simd());
}
