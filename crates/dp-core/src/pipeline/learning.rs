//! Learned flows: the pipeline stage behind Open vSwitch's `learn` action.
//!
//! A `learn` in an apply list builds its flow from the packet (`learn.rs`)
//! and decides at once, as OVS 3.1's `ofproto_flow_mod_learn` does: a flow
//! identical to an installed one (match, priority, cookie, actions, timeouts,
//! flags) only restarts that one's hard timeout; otherwise, with a `limit`,
//! the rules of the learn's table with its cookie are counted (any match, any
//! priority, learned or not: OVS's catch-all criteria) and the flow is refused
//! at the limit; `result_dst` gets 1 or 0.
//! The flow is installed after the packet leaves the pipeline (OVS translates
//! a packet against one tables version: the packet never sees what it learned)
//! through the ordinary ADD path, which replaces an identical-match rule and
//! invalidates the flow and path caches as a FLOW_MOD does.
//! `delete_learned`: when the last installed rule with a learn of that (table,
//! cookie) and the flag goes, every rule of that table with that cookie goes too.
//! Timeouts run in the pipeline's modelled time (`set_now_ns`): the timers are
//! looked at when a packet arrives at or after the next deadline, at most one
//! modelled second apart while a learned flow has a timeout, and whenever
//! `expire_learned` is called (the emulator does as its clock moves, so a flow
//! times out with no packet arriving); a flow's last use is known to that
//! second (as OVS's revalidators know it). Removed flows with
//! `send_flow_rem` are queued for `take_removed` (FLOW_REMOVED).
//! State: per learned flow its timers and flags; per (table, cookie) the count
//! of rules that delete their learned flows. Cost: nothing per packet while no
//! learned flow has a timeout (one `Option` test); a timer look is O(learned flows).

use super::*;
use crate::learn::{Learn, LearnedFlow};
use std::sync::Mutex;

const SECOND_NS: u64 = 1_000_000_000;

/// Why a rule left the pipeline (OpenFlow's flow-removed reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemovedReason {
    IdleTimeout,
    HardTimeout,
    Delete,
    /// Replaced by an ADD of an identical rule: no FLOW_REMOVED.
    Replaced,
}

impl RemovedReason {
    pub fn name(&self) -> &'static str {
        match self {
            RemovedReason::IdleTimeout => "idle_timeout",
            RemovedReason::HardTimeout => "hard_timeout",
            RemovedReason::Delete => "delete",
            RemovedReason::Replaced => "replaced",
        }
    }
}

/// A timed rule (learned, or given timeouts by `flow_mod_timed`) with
/// `send_flow_rem` that left the pipeline.
#[derive(Debug, Clone)]
pub struct Removed {
    /// The id the rule had (free again now).
    pub id: RuleId,
    pub rule: Rule,
    pub reason: RemovedReason,
    pub duration_ns: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub stats: RuleStats,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    pub(super) idle_timeout: u16,
    pub(super) hard_timeout: u16,
    pub(super) send_flow_rem: bool,
    pub(super) installed_ns: u64,
    /// Hard timeout counts from here (install, or the last refresh or modify).
    pub(super) modified_ns: u64,
    pub(super) used_ns: u64,
    /// The flow's packet count when its use was last looked at.
    pub(super) seen_packets: u64,
    /// Installed by `learn` (false: an ordinary rule with timeouts, `timeouts.rs`).
    pub(super) learned: bool,
}

impl Meta {
    pub(super) fn deadline(&self) -> Option<u64> {
        let hard = (self.hard_timeout > 0).then(|| self.modified_ns + u64::from(self.hard_timeout) * SECOND_NS);
        let idle = (self.idle_timeout > 0).then(|| self.used_ns + u64::from(self.idle_timeout) * SECOND_NS);
        match (hard, idle) {
            (Some(h), Some(i)) => Some(h.min(i)),
            (h, i) => h.or(i),
        }
    }
}

#[derive(Default)]
pub(super) struct Learning {
    /// Every rule with timers: learned flows and timed ordinary rules.
    pub(super) flows: HashMap<RuleId, Meta>,
    cookies: HashMap<(u8, u64), u32>,
    dead: Vec<(u8, u64)>,
    removed: Vec<Removed>,
    /// When the timers are next looked at (None: no learned flow has a timeout).
    pub(super) next_check: Option<u64>,
    /// The modelled time of the last packet seen while a timer runs.
    last_packet_ns: u64,
    /// Flows the packet in the pipeline learned, installed when it leaves (a
    /// Mutex, not a Ctx field, so the packet path without learn never touches it).
    pending: Mutex<Vec<LearnedFlow>>,
    /// fin_timeout reductions the packet in the pipeline asked for, (rule, idle,
    /// hard), applied when it leaves (`timeouts.rs`; a Mutex for the same reason).
    pub(super) fin: Mutex<Vec<(RuleId, u16, u16)>>,
    /// Per rule id: (install time, last modify time, send_flow_rem) of rules added by
    /// `flow_mod_timed`, for a fin_timeout that gives an untimed rule its timeouts.
    pub(super) born: Vec<(u64, u64, bool)>,
}

impl Pipeline {
    /// The `learn` action on this packet: the flow it learns (queued on the
    /// packet, installed when it leaves) and `result_dst`.
    pub(super) fn run_learn(&self, l: &Learn, ctx: &mut Ctx) {
        let flow = l.build(|f| Self::read_field(ctx, f));
        let ok = self.identical_learned(&flow).is_some() || l.limit == 0 || self.under_limit(&flow, l.limit as usize);
        self.note(|| format!("  learn: {}", if ok { "learned" } else { "refused: limit reached" }));
        if ok {
            self.learning.pending.lock().unwrap_or_else(|e| e.into_inner()).push(flow);
        }
        if let Some(dst) = l.result_dst {
            Self::write_subfield(ctx, dst, u128::from(ok));
        }
    }

    /// Whether the table of `flow` holds fewer than `limit` flows with its cookie, counting
    /// the flows this packet learned before it: Open vSwitch installs a learned flow while
    /// it translates the packet, so a later `learn(limit=…)` of the same packet sees it
    /// (measured: a `learn(table=1,cookie=1)` then `learn(table=1,cookie=1,limit=1)` in one
    /// rule learns the first flow only).
    fn under_limit(&self, flow: &LearnedFlow, limit: usize) -> bool {
        let r = &flow.rule;
        let pending = self.learning.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.iter().any(|p| p.rule.table == r.table && p.rule.priority == r.priority && p.rule.matches == r.matches
            && p.rule.cookie == r.cookie && p.rule.instructions == r.instructions)
        {
            return true; // (a refresh of the flow this packet already learned)
        }
        let installed = self.rules().filter(|(_, s)| s.table == r.table && s.cookie == r.cookie).count();
        let mut before: Vec<&LearnedFlow> = Vec::new();
        for p in pending.iter().filter(|p| p.rule.table == r.table && p.rule.cookie == r.cookie) {
            let new = self.find_strict(&p.rule).map_or(true, |id| self.rules[id as usize].as_ref().is_none_or(|x| x.rule.cookie != r.cookie));
            if new && !before.iter().any(|b| b.rule.priority == p.rule.priority && b.rule.matches == p.rule.matches) {
                before.push(p);
            }
        }
        installed + before.len() < limit
    }

    /// The installed rule `flow` would only refresh.
    fn identical_learned(&self, flow: &LearnedFlow) -> Option<RuleId> {
        let id = self.find_strict(&flow.rule)?;
        let r = &self.rules[id as usize].as_ref()?.rule;
        let attrs = self.learning.flows.get(&id).map_or((0, 0, false), |m| (m.idle_timeout, m.hard_timeout, m.send_flow_rem));
        (r.cookie == flow.rule.cookie && r.instructions == flow.rule.instructions && attrs == (flow.idle_timeout, flow.hard_timeout, flow.send_flow_rem))
            .then_some(id)
    }

    /// Install (or refresh) the flows the packet that just left learned.
    #[inline]
    pub(super) fn install_learned(&mut self) {
        let pending = self.learning.pending.get_mut().unwrap_or_else(|e| e.into_inner());
        if !pending.is_empty() {
            let flows = std::mem::take(pending);
            self.install_flows(flows);
        }
        if !self.learning.fin.get_mut().unwrap_or_else(|e| e.into_inner()).is_empty() {
            self.apply_fin_timeouts();
        }
    }

    #[cold]
    fn install_flows(&mut self, flows: Vec<LearnedFlow>) {
        let now = self.now_ns;
        for flow in flows {
            if let Some(id) = self.identical_learned(&flow) {
                if let Some(m) = self.learning.flows.get_mut(&id) {
                    m.modified_ns = now;
                }
                continue;
            }
            let (idle_timeout, hard_timeout, send_flow_rem) = (flow.idle_timeout, flow.hard_timeout, flow.send_flow_rem);
            // (a learned flow passed the same checks as its learning rule's; a
            // rare refusal, e.g. a prerequisite the packet lacked, learns nothing)
            if let Ok(id) = self.add_rule(flow.rule) {
                let m = Meta { idle_timeout, hard_timeout, send_flow_rem, installed_ns: now, modified_ns: now, used_ns: now, seen_packets: 0, learned: true };
                self.learning.flows.insert(id, m);
                if let Some(d) = m.deadline() {
                    self.schedule(d);
                }
            }
        }
    }

    pub(super) fn schedule(&mut self, deadline: u64) {
        let cap = self.now_ns.saturating_add(SECOND_NS);
        let t = deadline.min(cap);
        self.learning.next_check = Some(self.learning.next_check.map_or(t, |n| n.min(t)));
    }

    /// Look at the timed rules' timers now, learned or not (the packet path calls this when due).
    pub fn expire_learned(&mut self) {
        let now = self.now_ns;
        let last = self.learning.last_packet_ns;
        let mut gone = Vec::new();
        let mut next: Option<u64> = None;
        for (&id, m) in self.learning.flows.iter_mut() {
            let packets = self.stats[id as usize].packets;
            if packets != m.seen_packets {
                m.seen_packets = packets;
                m.used_ns = m.used_ns.max(last);
            }
            let hard = m.hard_timeout > 0 && now >= m.modified_ns + u64::from(m.hard_timeout) * SECOND_NS;
            let idle = m.idle_timeout > 0 && now >= m.used_ns + u64::from(m.idle_timeout) * SECOND_NS;
            if hard || idle {
                gone.push((id, if hard { RemovedReason::HardTimeout } else { RemovedReason::IdleTimeout }));
            } else if let Some(d) = m.deadline() {
                next = Some(next.map_or(d, |n| n.min(d)));
            }
        }
        for (id, reason) in gone {
            self.remove_rule_for(id, reason);
        }
        self.flush_learned_cookies();
        self.learning.next_check = next.map(|d| d.min(now.saturating_add(SECOND_NS)));
    }

    /// On each packet: the timers when due, and the packet's time (a flow's use).
    /// (One test of a flag while no learned flow has a timeout.)
    #[inline(always)]
    pub(super) fn learning_tick(&mut self) {
        if self.learning.next_check.is_some() {
            self.learning_timers();
        }
    }

    #[cold]
    #[inline(never)]
    fn learning_timers(&mut self) {
        if self.learning.next_check.is_some_and(|t| self.now_ns >= t) {
            self.expire_learned();
        }
        self.learning.last_packet_ns = self.now_ns;
    }

    /// A rule left (`remove_rule_for`): its learned-flow record, FLOW_REMOVED, cookie counts.
    pub(super) fn learning_rule_gone(&mut self, id: RuleId, rule: &Rule, reason: RemovedReason) {
        if let Some(m) = self.learning.flows.remove(&id) {
            if m.send_flow_rem && reason != RemovedReason::Replaced {
                self.learning.removed.push(Removed {
                    id,
                    rule: rule.clone(),
                    reason,
                    duration_ns: self.now_ns.saturating_sub(m.installed_ns),
                    idle_timeout: m.idle_timeout,
                    hard_timeout: m.hard_timeout,
                    stats: self.stats[id as usize],
                });
            }
        }
        self.count_learn_cookies(rule, false);
    }

    /// Count (add) or uncount a rule's delete_learned learns: those of its own apply
    /// list, as Open vSwitch 3.1 counts them (a learn inside a clone is not counted:
    /// deleting its rule leaves the flows it learned).
    pub(super) fn count_learn_cookies(&mut self, rule: &Rule, add: bool) {
        for a in &rule.instructions.apply {
            if let Action::Learn(l) = a {
                if l.delete_learned {
                    let key = (l.table, l.cookie);
                    if add {
                        *self.learning.cookies.entry(key).or_default() += 1;
                    } else if let Some(n) = self.learning.cookies.get_mut(&key) {
                        *n -= 1;
                        if *n == 0 {
                            self.learning.cookies.remove(&key);
                            self.learning.dead.push(key);
                        }
                    }
                }
            }
        }
    }

    /// Delete the rules of every (table, cookie) whose last delete_learned learn went.
    pub(super) fn flush_learned_cookies(&mut self) {
        while let Some((table, cookie)) = self.learning.dead.pop() {
            if self.learning.cookies.contains_key(&(table, cookie)) {
                continue;
            }
            let doomed: Vec<RuleId> = self.rules().filter(|(_, r)| r.table == table && r.cookie == cookie).map(|(id, _)| id).collect();
            for id in doomed {
                self.remove_rule_for(id, RemovedReason::Delete);
            }
        }
    }

    /// FLOW_REMOVED records of timed rules with send_flow_rem (learned flows and
    /// `flow_mod_timed`'s), oldest first.
    pub fn take_removed(&mut self) -> Vec<Removed> {
        std::mem::take(&mut self.learning.removed)
    }

    /// The learned flows installed now, with their idle and hard timeouts and send_flow_rem.
    pub fn learned_flows(&self) -> Vec<(RuleId, &Rule, u16, u16, bool)> {
        let mut v: Vec<_> = self
            .learning
            .flows
            .iter()
            .filter(|(_, m)| m.learned)
            .filter_map(|(&id, m)| Some((id, self.rule(id)?, m.idle_timeout, m.hard_timeout, m.send_flow_rem)))
            .collect();
        v.sort_by_key(|e| e.0);
        v
    }
}
