//! Exact branch-and-bound for filling several sNICs (UNO placement, one
//! capacity resource, PCIe budgets per sNIC link).
//!
//! Input: the nodes still to place ("searched" nodes, each with an integer
//! sNIC use, the objective it saves when offloaded, and whether it may stay on
//! the host), every sNIC's capacity left in the same integer units, its PCIe
//! budget, the traffic edges touching searched nodes (the other end a searched
//! node or a fixed location) and the loads of the edges between fixed ends.
//! Output: the placement of the searched nodes that offloads the most value
//! among those beating `need` by `improve_by`, and whether the search was
//! complete (then no placement does better than the one returned, or than
//! `need` when none is returned).
//!
//! Search, in levels, each depth-first over its nodes (largest use first):
//! - Level 0 chooses the offloaded set: each node that may stay on the host
//!   goes there or to "some sNIC" (the others are offloaded). Dropped: a
//!   partial set whose value plus a bound on what the nodes left can add does
//!   not beat `need` — for any λ ≥ 0 a set S of them adds
//!   Σ_S v_i = λ·Σ_S u_i + Σ_S (v_i − λ·u_i) ≤ λ·F + Σ max(0, v_i − λ·u_i),
//!   F the largest subset sum of the nodes left that fits the sNICs' room
//!   (suffix subset-sum bitsets, uses divided by their gcd); with λ the
//!   critical ratio and most nodes at it, this keeps the total fill within the
//!   slack the objective leaves. Also dropped: a set whose PCIe crossings
//!   known so far (an edge between the host and an sNIC crosses exactly one
//!   link) exceed the sum of the budgets.
//! - Level q = 1..K splits the offloaded set: which of the nodes not yet on
//!   an sNIC go to sNIC q, the rest to the later sNICs (all of them to sNIC K
//!   at the last level). Its fill must stay in a window: what it can still
//!   take (a subset sum of its undecided nodes, bitset query) at most its
//!   room and at least what the later sNICs cannot hold. The load of sNIC q's
//!   PCIe link depends only on which nodes are on q, so it is known edge by
//!   edge as level q decides, and checked as it grows, with a look-ahead: every
//!   undecided node's least addition (on q or not), summed.
//!
//! Each level enumerates only what can still be completed within its window,
//! so the work follows the number of feasible fills, where a node-by-node
//! search over all sNICs at once multiplies the sNICs' partial fills.
//! Cost: O(m·C/64) words per level entry (m nodes, C the capacity in gcd
//! units); per search node O(Σ degree) for the look-ahead.

use std::time::Instant;

/// How the PCIe traffic of an sNIC's link is budgeted (`uno.model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pcie {
    /// upstream ≤ budget and downstream ≤ budget
    Duplex,
    /// upstream + downstream ≤ budget
    Shared,
    /// downstream ≤ budget only
    Paper,
}

/// One end of a traffic edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// a searched node (index into `Problem::uses`)
    Node(usize),
    /// a fixed location: 0 the host, k ≥ 1 sNIC k
    At(usize),
}

#[derive(Clone, Debug)]
pub struct Edge {
    pub src: End,
    pub dst: End,
    pub gbps: f64,
}

#[derive(Clone, Debug)]
pub struct Problem {
    /// per sNIC: capacity left for the searched nodes, in use units
    pub caps: Vec<u64>,
    /// per sNIC: PCIe budget (any tolerance included)
    pub pcie: Vec<f64>,
    pub mode: Pcie,
    /// per sNIC: loads of the edges whose ends are both fixed
    pub base_up: Vec<f64>,
    pub base_down: Vec<f64>,
    /// per searched node: sNIC use (same on every sNIC), objective saved off the host, host allowed
    pub uses: Vec<u64>,
    pub values: Vec<f64>,
    pub host_ok: Vec<bool>,
    pub edges: Vec<Edge>,
    /// λ ≥ 0 of the bound (value per use unit); any value is valid, the critical ratio is tight
    pub ratio: f64,
}

#[derive(Clone, Debug)]
pub struct Outcome {
    /// location per searched node (0 host, k sNIC k) of the best placement found
    pub best: Option<Vec<usize>>,
    /// its offloaded value (`need` when none was found)
    pub value: f64,
    /// the search ran to the end: nothing beats `value` by `improve_by`
    pub complete: bool,
    pub nodes: u64,
}

/// The later links' look-ahead runs at every LATER_EVERY-th depth of a level:
/// it prunes few nodes for its cost (O(K·Σ degree)); on the 3-sNIC 100-node
/// seed 2 every depth took 6.1M nodes and 6.9 CPU-s, never 8.7M and 5.6 s,
/// every fourth 6.8M and 4.8 s.
const LATER_EVERY: usize = 4;

/// Bitset words (all levels' tables) above which a problem is refused.
pub const MAX_WORDS: usize = 1 << 23;

/// When the search gives up: a wall-clock deadline and/or a node count.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub deadline: Option<Instant>,
    pub max_nodes: Option<u64>,
}

const UNSET: usize = usize::MAX; // level 0 has not decided the node
const SOME: usize = usize::MAX - 1; // offloaded, its sNIC not chosen yet

struct Search<'a> {
    k: usize,
    mode: Pcie,
    budget: &'a [f64],
    caps: Vec<u64>, // gcd units, per sNIC (0-based)
    u: Vec<u64>,    // gcd units
    v: Vec<f64>,
    excess: Vec<f64>, // max(0, v − λ·u)
    adj: Vec<Vec<(End, f64, bool)>>, // (other end, gbps, this node is the source)
    by_use: Vec<usize>,
    base_up: Vec<f64>,
    base_down: Vec<f64>,
    lam_unit: f64,
    loc: Vec<usize>,       // UNSET, SOME, 0 host, q sNIC q
    passed_at: Vec<usize>, // the level that last left the node to the later sNICs
    tables: Vec<Vec<u64>>, // per level: suffix subset sums of its nodes
    need: f64,
    improve_by: f64,
    best: Option<(Vec<usize>, f64)>,
    nodes: u64,
    limits: Limits,
    stopped: bool,
    enough: f64,
    done: bool, // a placement worth `enough` was found
}

/// One level's nodes and their suffix sums.
struct Level {
    q: usize, // 0: the offloaded set; q ≥ 1: sNIC q
    items: Vec<usize>,
    words: usize,
    suf_use: Vec<u64>,
    suf_excess: Vec<f64>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Search `p` for placements offloading more than `need` (+ `improve_by` after
/// each one found), stopping at the first worth `enough` or more (the caller
/// knows nothing is worth more; `f64::INFINITY`: search on). Err names what is
/// malformed or too large.
pub fn search(p: &Problem, need: f64, improve_by: f64, enough: f64, limits: Limits) -> Result<Outcome, String> {
    let n = p.uses.len();
    let k = p.caps.len();
    if p.values.len() != n || p.host_ok.len() != n {
        return Err("uses, values and host_ok differ in length".into());
    }
    if p.pcie.len() != k || p.base_up.len() != k || p.base_down.len() != k || k == 0 {
        return Err("caps, pcie, base_up and base_down differ in length (or no sNIC)".into());
    }
    if p.ratio.is_nan() || p.ratio < 0.0 || !p.ratio.is_finite() {
        return Err("ratio must be a finite number ≥ 0".into());
    }
    for e in &p.edges {
        for end in [e.src, e.dst] {
            match end {
                End::Node(i) if i >= n => return Err(format!("edge end {i} is not a searched node")),
                End::At(l) if l > k => return Err(format!("edge end at location {l}: only {k} sNICs")),
                _ => {}
            }
        }
        if e.gbps.is_nan() || e.gbps < 0.0 || !e.gbps.is_finite() {
            return Err("edge traffic must be finite and ≥ 0".into());
        }
    }
    let g = p.uses.iter().fold(0u64, |acc, &x| gcd(acc, x)).max(1);
    let u: Vec<u64> = p.uses.iter().map(|&x| x / g).collect();
    let caps: Vec<u64> = p.caps.iter().map(|&c| c / g).collect();
    let total_u: u64 = u.iter().sum();
    let total_cap: u64 = caps.iter().sum();
    let words_of = |c: u64| (c.min(total_u) as usize + 1).div_ceil(64);
    let mut words = vec![words_of(total_cap)];
    words.extend(caps.iter().map(|&c| words_of(c)));
    let table_words = words.iter().map(|w| w.saturating_mul(n + 1)).fold(0usize, |a, b| a.saturating_add(b));
    if table_words > MAX_WORDS {
        return Err(format!("subset-sum tables of {table_words} words exceed {MAX_WORDS}"));
    }
    let mut by_use: Vec<usize> = (0..n).collect();
    by_use.sort_by(|&a, &b| u[b].cmp(&u[a]).then(a.cmp(&b)));
    let lam_unit = p.ratio * g as f64;
    let excess = (0..n).map(|i| (p.values[i] - lam_unit * u[i] as f64).max(0.0)).collect();
    let mut base_up = p.base_up.clone();
    let mut base_down = p.base_down.clone();
    let mut adj: Vec<Vec<(End, f64, bool)>> = vec![Vec::new(); n];
    for e in &p.edges {
        match (e.src, e.dst) {
            (End::At(a), End::At(b)) => add_load(&mut base_up, &mut base_down, a, b, e.gbps),
            (End::Node(i), End::Node(j)) if i == j => {} // a self-loop never crosses a link
            (src, dst) => {
                if let End::Node(i) = src {
                    adj[i].push((dst, e.gbps, true));
                }
                if let End::Node(j) = dst {
                    adj[j].push((src, e.gbps, false));
                }
            }
        }
    }
    let loc = p.host_ok.iter().map(|&h| if h { UNSET } else { SOME }).collect();
    let mut s = Search {
        k,
        mode: p.mode,
        budget: &p.pcie,
        caps,
        u,
        v: p.values.clone(),
        excess,
        adj,
        by_use,
        base_up,
        base_down,
        lam_unit,
        loc,
        passed_at: vec![0; n],
        tables: words.iter().map(|&w| vec![0u64; w * (n + 1)]).collect(),
        need,
        improve_by,
        best: None,
        nodes: 0,
        limits,
        stopped: false,
        enough,
        done: false,
    };
    s.offload_level();
    let complete = !s.stopped;
    Ok(match s.best {
        Some((best, value)) => Outcome { best: Some(best), value, complete, nodes: s.nodes },
        None => Outcome { best: None, value: need, complete, nodes: s.nodes },
    })
}

/// dst = src | (src << shift), over `src.len()` 64-bit words.
fn shift_or(dst: &mut [u64], src: &[u64], shift: usize) {
    let (ws, bs) = (shift / 64, shift % 64);
    for w in 0..src.len() {
        let mut x = src[w];
        if w >= ws {
            let lo = src[w - ws];
            x |= if bs == 0 { lo } else { lo << bs };
            if bs != 0 && w > ws {
                x |= src[w - ws - 1] >> (64 - bs);
            }
        }
        dst[w] = x;
    }
}

fn add_load(up: &mut [f64], down: &mut [f64], ls: usize, ld: usize, t: f64) {
    if ls != ld {
        if ls > 0 {
            up[ls - 1] += t;
        }
        if ld > 0 {
            down[ld - 1] += t;
        }
    }
}

/// Largest set bit ≤ r of a bitset (bit 0 is always set).
fn max_reach(t: &[u64], r: u64) -> u64 {
    let r = (r as usize).min(t.len() * 64 - 1);
    let mut w = r / 64;
    let mut x = t[w] & (u64::MAX >> (63 - r % 64));
    loop {
        if x != 0 {
            return (w * 64 + 63 - x.leading_zeros() as usize) as u64;
        }
        if w == 0 {
            return 0;
        }
        w -= 1;
        x = t[w];
    }
}

/// Whether a bitset has a set bit in lo..=hi.
fn any_in(t: &[u64], lo: u64, hi: u64) -> bool {
    lo <= hi && (lo as usize) < t.len() * 64 && max_reach(t, hi) >= lo
}

/// Fill a level's suffix subset-sum table (rows of `words`) for `uses` in order.
fn suffix_sums(t: &mut [u64], words: usize, uses: impl DoubleEndedIterator<Item = u64> + ExactSizeIterator) {
    let m = uses.len();
    let bits = words * 64;
    t[m * words..(m + 1) * words].iter_mut().for_each(|x| *x = 0);
    t[m * words] = 1;
    for (d, x) in uses.enumerate().rev() {
        let (head, tail) = t.split_at_mut((d + 1) * words);
        let cur = &mut head[d * words..(d + 1) * words];
        if x as usize >= bits {
            cur.copy_from_slice(&tail[..words]);
        } else {
            shift_or(cur, &tail[..words], x as usize);
        }
    }
}

impl Search<'_> {
    fn link_ok(&self, q: usize, up: f64, down: f64) -> bool {
        let b = self.budget[q - 1];
        match self.mode {
            Pcie::Duplex => up <= b && down <= b,
            Pcie::Shared => up + down <= b,
            Pcie::Paper => down <= b,
        }
    }

    /// All links together: the loads' sums within the budgets' sum.
    fn total_ok(&self, up: f64, down: f64) -> bool {
        let b: f64 = self.budget.iter().sum();
        match self.mode {
            Pcie::Duplex => up <= b && down <= b,
            Pcie::Shared => up + down <= b,
            Pcie::Paper => down <= b,
        }
    }

    fn out_of_time(&mut self) -> bool {
        if self.stopped || self.done {
            return true;
        }
        self.nodes += 1;
        if self.limits.max_nodes.is_some_and(|m| self.nodes > m) {
            self.stopped = true;
        }
        if self.nodes.is_multiple_of(4096) && self.limits.deadline.is_some_and(|t| Instant::now() >= t) {
            self.stopped = true;
        }
        self.stopped
    }

    /// Whether an end is on sNIC q as far as level q knows (q = 0: whether it
    /// is on some sNIC, as far as level 0 knows); None: not decided yet.
    fn on(&self, e: End, q: usize) -> Option<bool> {
        let l = match e {
            End::At(l) => l,
            End::Node(j) => self.loc[j],
        };
        match (l, q) {
            (UNSET, _) => None,
            (SOME, 0) => Some(true),
            (SOME, _) if self.passed_at[j_of(e)] == q => Some(false),
            (SOME, _) => None,
            (l, 0) => Some(l > 0),
            (l, q) => Some(l == q),
        }
    }

    /// (up, down) added to link q's load (q = 0: to all links together) when
    /// node i goes on q (`on`; q = 0: on some sNIC) or not.
    fn added(&self, i: usize, q: usize, on: bool) -> (f64, f64) {
        let (mut up, mut down) = (0.0, 0.0);
        for &(other, t, is_src) in &self.adj[i] {
            match self.on(other, q) {
                Some(o) if o != on => {
                    // the edge crosses a link: out of the sNIC side if that side is the source
                    if on == is_src {
                        up += t;
                    } else {
                        down += t;
                    }
                }
                _ => {}
            }
        }
        (up, down)
    }

    fn make_level(&mut self, q: usize, items: Vec<usize>) -> Level {
        let m = items.len();
        let mut suf_use = vec![0u64; m + 1];
        let mut suf_excess = vec![0.0; m + 1];
        for d in (0..m).rev() {
            suf_use[d] = suf_use[d + 1] + self.u[items[d]];
            suf_excess[d] = suf_excess[d + 1] + self.excess[items[d]];
        }
        let words = self.tables[q].len() / (self.u.len() + 1);
        let u = &self.u;
        suffix_sums(&mut self.tables[q], words, items.iter().map(|&i| u[i]));
        Level { q, items, words, suf_use, suf_excess }
    }

    /// Level 0: the offloaded set.
    fn offload_level(&mut self) {
        let n = self.u.len();
        let items: Vec<usize> = self.by_use.iter().copied().filter(|&i| self.loc[i] == UNSET).collect();
        let req: u64 = (0..n).filter(|&i| self.loc[i] == SOME).map(|i| self.u[i]).sum();
        let total_cap: u64 = self.caps.iter().sum();
        if req > total_cap {
            return;
        }
        let val: f64 = (0..n).filter(|&i| self.loc[i] == SOME).map(|i| self.v[i]).sum();
        // crossings known: edges between fixed ends, and between fixed ends and required nodes
        let mut up: f64 = self.base_up.iter().sum();
        let mut down: f64 = self.base_down.iter().sum();
        for i in 0..n {
            if self.loc[i] == SOME {
                for &(other, t, is_src) in &self.adj[i] {
                    if let End::At(0) = other {
                        if is_src { up += t } else { down += t }
                    }
                }
            }
        }
        let lv = self.make_level(0, items);
        self.dfs0(&lv, 0, total_cap - req, up, down, val);
    }

    fn dfs0(&mut self, lv: &Level, d: usize, room: u64, up: f64, down: f64, val: f64) {
        if self.out_of_time() {
            return;
        }
        if d == lv.items.len() {
            if val > self.need {
                self.split_level(1);
            }
            return;
        }
        let table = &self.tables[0][d * lv.words..(d + 1) * lv.words];
        if val + self.lam_unit * max_reach(table, room) as f64 + lv.suf_excess[d] <= self.need
            || !self.lookahead(lv, d, room, up, down)
        {
            return;
        }
        let i = lv.items[d];
        for on in [true, false] {
            if on && self.u[i] > room {
                continue;
            }
            let (a, b) = self.added(i, 0, on);
            if !self.total_ok(up + a, down + b) {
                continue;
            }
            self.loc[i] = if on { SOME } else { 0 };
            if on {
                self.dfs0(lv, d + 1, room - self.u[i], up + a, down + b, val + self.v[i]);
            } else {
                self.dfs0(lv, d + 1, room, up + a, down + b, val);
            }
            self.loc[i] = UNSET;
            if self.stopped || self.done {
                return;
            }
        }
    }

    /// Level q ≥ 1: which offloaded nodes not yet on an sNIC go to sNIC q.
    fn split_level(&mut self, q: usize) {
        if self.out_of_time() {
            return;
        }
        let mut items: Vec<usize> = self.by_use.iter().copied().filter(|&i| self.loc[i] == SOME).collect();
        // most traffic first: its PCIe crossings are decided early (subset sums prune late anyway)
        let traffic = |i: usize| -> f64 { self.adj[i].iter().map(|x| x.1).sum() };
        items.sort_by(|&a, &b| traffic(b).total_cmp(&traffic(a)).then(a.cmp(&b)));
        // link q: edges from its fixed ends to the nodes on the host or an earlier sNIC (no node is on q yet)
        let (mut up, mut down) = (self.base_up[q - 1], self.base_down[q - 1]);
        for i in 0..self.u.len() {
            if self.loc[i] != SOME {
                let (a, b) = self.added(i, q, false);
                up += a;
                down += b;
            }
        }
        if !self.link_ok(q, up, down) {
            return;
        }
        let lv = self.make_level(q, items);
        self.dfs(&lv, 0, self.caps[q - 1], up, down, 0);
    }

    /// Level q ≥ 1 below depth d: `room` left on sNIC q, `passed` use left to the later sNICs.
    fn dfs(&mut self, lv: &Level, d: usize, room: u64, up: f64, down: f64, passed: u64) {
        if self.out_of_time() {
            return;
        }
        let q = lv.q;
        if d == lv.items.len() {
            if q == self.k {
                let val: f64 = (0..self.u.len()).filter(|&i| self.loc[i] > 0).map(|i| self.v[i]).sum();
                if val > self.need {
                    self.best = Some((self.loc.clone(), val));
                    self.need = val + self.improve_by;
                    if val >= self.enough {
                        self.done = true;
                    }
                }
            } else {
                self.split_level(q + 1);
            }
            return;
        }
        let later: u64 = self.caps[q..].iter().sum();
        let table = &self.tables[q][d * lv.words..(d + 1) * lv.words];
        let lo = (passed + lv.suf_use[d]).saturating_sub(later);
        if passed > later || !any_in(table, lo, room) || !self.lookahead(lv, d, room, up, down) || (d.is_multiple_of(LATER_EVERY) && !self.later_links_ok(q)) {
            return;
        }
        let i = lv.items[d];
        for on in [true, false] {
            if on && self.u[i] > room || !on && q == self.k {
                continue;
            }
            let (a, b) = self.added(i, q, on);
            if !self.link_ok(q, up + a, down + b) {
                continue;
            }
            if on {
                self.loc[i] = q;
                self.dfs(lv, d + 1, room - self.u[i], up + a, down + b, passed);
                self.loc[i] = SOME;
            } else {
                let before = self.passed_at[i];
                self.passed_at[i] = q;
                self.dfs(lv, d + 1, room, up + a, down + b, passed + self.u[i]);
                self.passed_at[i] = before;
            }
            if self.stopped || self.done {
                return;
            }
        }
    }

    /// At level q, the links of the later sNICs: the load known (edges from
    /// their fixed ends to nodes on the host or sNICs ≤ q) plus, for every
    /// node not yet on an sNIC, its least addition (on r or not, given the
    /// ends known), within budget.
    fn later_links_ok(&self, q: usize) -> bool {
        for r in q + 1..=self.k {
            let (mut up, mut down) = (self.base_up[r - 1], self.base_down[r - 1]);
            let (mut lo_up, mut lo_down, mut lo_both) = (0.0, 0.0, 0.0);
            for j in 0..self.u.len() {
                if self.loc[j] != SOME {
                    let (a, b) = self.added(j, r, false);
                    up += a;
                    down += b;
                    continue;
                }
                let forced_on = r == self.k && q + 1 == self.k && self.passed_at[j] == q;
                let on = if self.u[j] <= self.caps[r - 1] { Some(self.added(j, r, true)) } else { None };
                let off = if forced_on { None } else { Some(self.added(j, r, false)) };
                match (on, off) {
                    (Some((a, b)), Some((c, e))) => {
                        lo_up += a.min(c);
                        lo_down += b.min(e);
                        lo_both += (a + b).min(c + e);
                    }
                    (Some((a, b)), None) | (None, Some((a, b))) => {
                        lo_up += a;
                        lo_down += b;
                        lo_both += a + b;
                    }
                    (None, None) => return false,
                }
            }
            let ok = match self.mode {
                Pcie::Duplex => self.link_ok(r, up + lo_up, down + lo_down),
                Pcie::Shared => self.link_ok(r, up + lo_both, down),
                Pcie::Paper => self.link_ok(r, up, down + lo_down),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// Every undecided node of the level still has a choice within the
    /// budget (level 0: all links together; level q: link q), and their least
    /// additions together fit it too.
    fn lookahead(&self, lv: &Level, d: usize, room: u64, up: f64, down: f64) -> bool {
        let q = lv.q;
        let (mut lo_up, mut lo_down, mut lo_both) = (0.0, 0.0, 0.0);
        let ok = |s: &Self, a: f64, b: f64| if q == 0 { s.total_ok(a, b) } else { s.link_ok(q, a, b) };
        for &j in &lv.items[d..] {
            let mut best = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
            for on in [true, false] {
                if on && self.u[j] > room || !on && q == self.k {
                    continue;
                }
                let (a, b) = self.added(j, q, on);
                if ok(self, up + a, down + b) {
                    best = (best.0.min(a), best.1.min(b), best.2.min(a + b));
                }
            }
            if best.2 == f64::INFINITY {
                return false;
            }
            lo_up += best.0;
            lo_down += best.1;
            lo_both += best.2;
        }
        match self.mode {
            Pcie::Duplex => ok(self, up + lo_up, down + lo_down),
            Pcie::Shared => ok(self, up + lo_both, down),
            Pcie::Paper => ok(self, up, down + lo_down),
        }
    }
}

fn j_of(e: End) -> usize {
    match e {
        End::Node(j) => j,
        End::At(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests;
