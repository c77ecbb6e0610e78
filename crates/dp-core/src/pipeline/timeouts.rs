//! Idle and hard timeouts of ordinary rules (a FLOW_MOD's `idle_timeout`,
//! `hard_timeout` and `OFPFF_SEND_FLOW_REM`), aged as Open vSwitch 3.1 ages
//! them, in the pipeline's modelled time (`set_now_ns`).
//!
//! A timed rule keeps the same timer record as a learned flow
//! (`learning.rs`), so the same checks expire both: idle counts from the
//! rule's last hit (known to the modelled second, as OVS's revalidators know
//! it), hard from its install, and an OFPFC_MODIFY restarts the hard timeout
//! (OVS replaces the rule: the new one keeps `created` and the old
//! timeouts, flags and counters, but its `modified` is now). An ADD over an
//! identical rule replaces it with the new timeouts (none: untimed). A rule
//! that expires leaves with reason IDLE_TIMEOUT or HARD_TIMEOUT (hard wins
//! when both are due, as in OVS's `rule_expire`); with `send_flow_rem` its
//! FLOW_REMOVED record (duration since install, packet and byte counts) is
//! queued for `take_removed`.
//! `fin_timeout(idle_timeout=I,hard_timeout=H)` (`Action::FinTimeout`): a TCP
//! packet with FIN or RST that runs it shrinks the running rule's timeouts,
//! when the packet leaves, as OVS's `ofproto_rule_reduce_timeouts__` does: a
//! set I or H replaces a timeout that is none or longer; a rule without
//! timeouts gets them then (hard counting from its install or last modify, its
//! idle from that packet), so `rule_timeouts` (FLOW_STATS) shows the reduced
//! ones and the rule expires by them. A path through it is never cached.
//! State: the timer records, and per rule id its install and modify times and
//! flag (`Learning::born`). Cost: a FLOW_MOD writes one `born` slot and, with
//! timeouts, one record; packets pay what learned flows' timers cost (one flag
//! test while no rule has a timeout) and, on the full walk, one test for
//! pending fin_timeout reductions.

use super::learning::Meta;
use super::*;

const TCP_FIN: u16 = 0x001;
const TCP_RST: u16 = 0x004;

/// OVS's `reduce_timeout`: `max` (when set) replaces a timeout that is none or longer.
fn reduce(timeout: &mut u16, max: u16) {
    if max > 0 && (*timeout == 0 || *timeout > max) {
        *timeout = max;
    }
}

/// A FLOW_MOD's timeouts (seconds, 0 = none) and its OFPFF_SEND_FLOW_REM flag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub idle: u16,
    pub hard: u16,
    pub send_flow_rem: bool,
}

impl Timeouts {
    pub fn any(&self) -> bool {
        self.idle > 0 || self.hard > 0
    }
}

impl Pipeline {
    /// `flow_mod` with the timeouts and flag of an ADD (a MODIFY keeps the
    /// rules' own and restarts their hard timeouts; other commands ignore them).
    pub fn flow_mod_timed(&mut self, cmd: FlowModCommand, rule: Rule, out_port: u32, out_group: u32, all_tables: bool, t: Timeouts) -> Result<Vec<RuleId>, PipelineError> {
        let ids = self.flow_mod(cmd, rule, out_port, out_group, all_tables)?;
        let now = self.now_ns;
        let born = &mut self.learning.born;
        match cmd {
            FlowModCommand::Add => {
                let i = ids[0] as usize;
                if born.len() <= i {
                    born.resize(i + 1, (0, 0, false));
                }
                born[i] = (now, now, t.send_flow_rem);
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                for &id in &ids {
                    if let Some(b) = born.get_mut(id as usize) {
                        b.1 = now;
                    }
                }
            }
            _ => {}
        }
        match cmd {
            FlowModCommand::Add if t.any() => {
                let m = Meta {
                    idle_timeout: t.idle,
                    hard_timeout: t.hard,
                    send_flow_rem: t.send_flow_rem,
                    installed_ns: now,
                    modified_ns: now,
                    used_ns: now,
                    seen_packets: 0,
                    learned: false,
                };
                self.learning.flows.insert(ids[0], m);
                if let Some(d) = m.deadline() {
                    self.schedule(d);
                }
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                for id in &ids {
                    if let Some(m) = self.learning.flows.get_mut(id) {
                        m.modified_ns = now;
                        if let Some(d) = m.deadline() {
                            self.schedule(d);
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(ids)
    }

    /// `fin_timeout` on the packet in the pipeline: on a TCP FIN or RST, the
    /// running rule's timeouts shrink when the packet leaves (as OVS 3.1's
    /// `xlate_fin_timeout`, which acts on the flow's TCP flags).
    pub(super) fn run_fin_timeout(&self, idle: u16, hard: u16, ctx: &mut Ctx) {
        ctx.dirty = true; // (a per-packet effect: keeps the path cache from recording this path)
        let fin_or_rst = ctx.h.tcp_flags.is_some_and(|f| f & (TCP_FIN | TCP_RST) != 0);
        if let (true, Some(id)) = (fin_or_rst && (idle > 0 || hard > 0), ctx.rule) {
            self.learning.fin.lock().unwrap_or_else(|e| e.into_inner()).push((id, idle, hard));
        }
    }

    /// The reductions the packet that left asked for, as OVS's
    /// `ofproto_rule_reduce_timeouts__`: a timeout shrinks to the new one where
    /// that is set and the rule's is none or longer. An untimed rule gets its
    /// timers here: hard from its install (or last modify), idle from now.
    #[cold]
    pub(super) fn apply_fin_timeouts(&mut self) {
        let asked = std::mem::take(self.learning.fin.get_mut().unwrap_or_else(|e| e.into_inner()));
        let now = self.now_ns;
        for (id, idle, hard) in asked {
            if self.rule(id).is_none() {
                continue;
            }
            let packets = self.stats[id as usize].packets;
            let (installed, modified, send_flow_rem) = self.learning.born.get(id as usize).copied().unwrap_or((now, now, false));
            let m = self.learning.flows.entry(id).or_insert(Meta {
                idle_timeout: 0,
                hard_timeout: 0,
                send_flow_rem,
                installed_ns: installed,
                modified_ns: modified,
                used_ns: now,
                seen_packets: packets,
                learned: false,
            });
            reduce(&mut m.idle_timeout, idle);
            reduce(&mut m.hard_timeout, hard);
            if let Some(d) = m.deadline() {
                self.schedule(d);
            }
        }
    }

    /// Rule `id`'s timeouts and flag (None: an untimed rule, or no such rule).
    pub fn rule_timeouts(&self, id: RuleId) -> Option<Timeouts> {
        let m = self.learning.flows.get(&id)?;
        Some(Timeouts { idle: m.idle_timeout, hard: m.hard_timeout, send_flow_rem: m.send_flow_rem })
    }

    /// Every timed rule that is no learned flow, with its timeouts now (a
    /// `fin_timeout` may have shrunk them, or given an untimed rule some), by id.
    pub fn timed_rules(&self) -> Vec<(RuleId, Timeouts)> {
        let mut v: Vec<_> = (self.learning.flows.iter())
            .filter(|(_, m)| !m.learned)
            .map(|(&id, m)| (id, Timeouts { idle: m.idle_timeout, hard: m.hard_timeout, send_flow_rem: m.send_flow_rem }))
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// Some rule has a timeout (learned or not).
    #[inline(always)]
    pub fn has_timers(&self) -> bool {
        self.learning.next_check.is_some()
    }

    /// A packet arrives at `now_ns` on a path that does not set the clock (the
    /// emulator's fast path): while a rule has a timeout, set it and do what
    /// `process` does first (the timers when due, the packet's time as a use).
    #[inline(always)]
    pub fn tick_timers(&mut self, now_ns: u64) {
        if self.has_timers() {
            self.tick_timers_at(now_ns);
        }
    }

    #[cold]
    #[inline(never)]
    fn tick_timers_at(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.learning_tick();
    }

    /// Expire the timed rules whose timers are due now (what a packet arriving
    /// now would do first), for a caller whose clock moves without packets.
    pub fn expire_due(&mut self) {
        if self.learning.next_check.is_some_and(|t| self.now_ns >= t) {
            self.expire_learned();
        }
    }
}
