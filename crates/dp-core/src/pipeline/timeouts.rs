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
//! State: none beyond the timer records. Cost: a FLOW_MOD with timeouts adds
//! one record; packets pay what learned flows' timers cost (one flag test
//! while no rule has a timeout).

use super::learning::Meta;
use super::*;

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

    /// Rule `id`'s timeouts and flag (None: an untimed rule, or no such rule).
    pub fn rule_timeouts(&self, id: RuleId) -> Option<Timeouts> {
        let m = self.learning.flows.get(&id)?;
        Some(Timeouts { idle: m.idle_timeout, hard: m.hard_timeout, send_flow_rem: m.send_flow_rem })
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
