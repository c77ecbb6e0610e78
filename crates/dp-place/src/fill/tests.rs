//! The search against enumeration of every placement on small random problems.

use super::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_problem(r: &mut Rng) -> Problem {
    let n = 1 + r.below(7) as usize;
    let k = 1 + r.below(3) as usize;
    let mode = [Pcie::Duplex, Pcie::Shared, Pcie::Paper][r.below(3) as usize];
    let unit = 1 + r.below(3); // a common factor, removed by the gcd
    let uses: Vec<u64> = (0..n).map(|_| unit * (1 + r.below(12))).collect();
    let ratio = 0.5;
    // most values at the ratio (ties), some off it
    let values: Vec<f64> = uses
        .iter()
        .map(|&u| if r.below(3) == 0 { u as f64 * (0.1 + r.below(10) as f64 * 0.2) } else { ratio * u as f64 })
        .collect();
    let host_ok = (0..n).map(|_| r.below(4) != 0).collect();
    let total: u64 = uses.iter().sum();
    let caps = (0..k).map(|_| r.below(total / k as u64 + 2)).collect();
    let end = |r: &mut Rng| if r.below(3) == 0 { End::At(r.below(k as u64 + 1) as usize) } else { End::Node(r.below(n as u64) as usize) };
    let edges = (0..r.below(2 * n as u64 + 2))
        .map(|_| Edge { src: end(r), dst: end(r), gbps: (1 + r.below(9)) as f64 * 0.5 })
        .collect();
    let pcie = (0..k).map(|_| r.below(12) as f64).collect();
    let base_up = (0..k).map(|_| r.below(2) as f64).collect();
    let base_down = (0..k).map(|_| r.below(2) as f64).collect();
    Problem { caps, pcie, mode, base_up, base_down, uses, values, host_ok, edges, ratio }
}

/// Offloaded value of a placement, None if it breaks a budget.
fn check(p: &Problem, loc: &[usize]) -> Option<f64> {
    let k = p.caps.len();
    let mut fill = vec![0u64; k + 1];
    for (i, &l) in loc.iter().enumerate() {
        if l == 0 && !p.host_ok[i] {
            return None;
        }
        fill[l] += p.uses[i];
    }
    if (1..=k).any(|l| fill[l] > p.caps[l - 1]) {
        return None;
    }
    let (mut up, mut down) = (p.base_up.clone(), p.base_down.clone());
    let at = |e: End| match e {
        End::Node(i) => loc[i],
        End::At(l) => l,
    };
    for e in &p.edges {
        add_load(&mut up, &mut down, at(e.src), at(e.dst), e.gbps);
    }
    for j in 0..k {
        let ok = match p.mode {
            Pcie::Duplex => up[j] <= p.pcie[j] && down[j] <= p.pcie[j],
            Pcie::Shared => up[j] + down[j] <= p.pcie[j],
            Pcie::Paper => down[j] <= p.pcie[j],
        };
        if !ok {
            return None;
        }
    }
    Some(loc.iter().zip(&p.values).filter(|(&l, _)| l > 0).map(|(_, v)| v).sum())
}

fn brute(p: &Problem) -> Option<f64> {
    let (n, l) = (p.uses.len(), p.caps.len() + 1);
    let mut best: Option<f64> = None;
    for code in 0..l.pow(n as u32) {
        let loc: Vec<usize> = (0..n).map(|i| code / l.pow(i as u32) % l).collect();
        if let Some(v) = check(p, &loc) {
            best = Some(best.map_or(v, |b: f64| b.max(v)));
        }
    }
    best
}

const NO_LIMIT: Limits = Limits { deadline: None, max_nodes: None };

#[test]
fn finds_the_enumerated_optimum() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut feasible, mut infeasible) = (0, 0);
    for case in 0..3000 {
        let p = random_problem(&mut r);
        let want = brute(&p);
        let got = search(&p, f64::NEG_INFINITY, 1e-9, f64::INFINITY, NO_LIMIT).unwrap();
        assert!(got.complete, "case {case}");
        match (want, &got.best) {
            (None, None) => infeasible += 1,
            (Some(w), Some(loc)) => {
                let v = check(&p, loc).unwrap_or_else(|| panic!("case {case}: returned placement breaks a budget"));
                assert!((v - w).abs() <= 1e-9 && (got.value - w).abs() <= 1e-9, "case {case}: {v} {} vs {w}: {p:?}", got.value);
                feasible += 1;
            }
            _ => panic!("case {case}: brute {want:?} search {:?}: {p:?}", got.best),
        }
    }
    assert!(feasible > 1000 && infeasible > 50, "{feasible} feasible, {infeasible} infeasible cases");
}

#[test]
fn need_above_the_optimum_proves_nothing_better() {
    let mut r = Rng(12345);
    for case in 0..1000 {
        let p = random_problem(&mut r);
        if let Some(w) = brute(&p) {
            let got = search(&p, w + 1e-6, 1e-9, f64::INFINITY, NO_LIMIT).unwrap();
            assert!(got.complete && got.best.is_none(), "case {case}");
            let got = search(&p, w - 1e-6, 1e-9, w - 1e-6, NO_LIMIT).unwrap();
            assert!(got.best.is_some(), "case {case}: the optimum {w} beats its need");
        }
    }
}

#[test]
fn node_limit_stops_incomplete() {
    let p = Problem {
        caps: vec![50, 50],
        pcie: vec![100.0, 100.0],
        mode: Pcie::Duplex,
        base_up: vec![0.0; 2],
        base_down: vec![0.0; 2],
        uses: (1..=16).map(|i| 2 * i + 1).collect(),
        values: (1..=16).map(|i| (2 * i + 1) as f64).collect(),
        host_ok: vec![true; 16],
        edges: vec![],
        ratio: 1.0,
    };
    let got = search(&p, f64::NEG_INFINITY, 1e-9, f64::INFINITY, Limits { deadline: None, max_nodes: Some(5) }).unwrap();
    assert!(!got.complete);
    let full = search(&p, f64::NEG_INFINITY, 1e-9, f64::INFINITY, NO_LIMIT).unwrap();
    assert!(full.complete && full.value == 100.0, "{full:?}");
}

#[test]
fn malformed_input_is_an_error() {
    let mut p = Problem {
        caps: vec![5],
        pcie: vec![1.0],
        mode: Pcie::Shared,
        base_up: vec![0.0],
        base_down: vec![0.0],
        uses: vec![1],
        values: vec![1.0],
        host_ok: vec![true],
        edges: vec![Edge { src: End::Node(0), dst: End::At(2), gbps: 1.0 }],
        ratio: 1.0,
    };
    assert!(search(&p, 0.0, 0.0, f64::INFINITY, NO_LIMIT).unwrap_err().contains("location 2"));
    p.edges.clear();
    p.ratio = f64::NAN;
    assert!(search(&p, 0.0, 0.0, f64::INFINITY, NO_LIMIT).unwrap_err().contains("ratio"));
}
