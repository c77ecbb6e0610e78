//! Open vSwitch's `controller(…)` action with a wire reason above 5 and with
//! `meter_id=M`, as Open vSwitch 3.1 runs them (measured on one bridge).
//!
//! Reasons: 6 (its explicit table miss) sends a `no_match` packet-in, 7 (implicit
//! miss) and 8..255 none (`ControllerReason::of_action`; the action's `reason` is None).
//!
//! Meter: the packet-in passes meter M first, as OpenFlow's meter instruction passes a
//! packet (`meter.rs`: the same token buckets; a drop band drops the packet-in only,
//! a DSCP-remark band remarks the packet-in's copy of the frame; the packet itself goes
//! on unchanged). Open vSwitch resolves M when the rule is added or modified: a meter
//! that does not exist then leaves the packet-ins unmetered until the rule changes
//! (measured: a meter added after the rule meters nothing; one deleted after it passes
//! them, and added again meters them again), so `resolve_controller_meters` drops
//! such an M from the rule it installs. An action that sends nothing still takes its tokens. Meters need `&mut self` and actions run under `&self`, so
//! the action leaves its packet-in `pending` and the pipeline settles every pending one
//! in the order they were sent: before the packet's next meter instruction (so the
//! buckets see the packet-ins and the instructions in Open vSwitch's order) and when
//! the packet's walk ends. State: none. Cost: nothing for a packet without one.

use super::{actions, Ctx, Fate, Pipeline};
use crate::fate::{ControllerReason, PendingMeter};
use crate::field::Field;
use crate::meter::{MeterTable, Verdict};
use crate::parse::{parse_into, Headers};
use crate::rule::{Action, ControllerAction, Rule};

impl Pipeline {
    /// `rule` as installed: each `controller(meter_id=M)` (also in clones) whose meter
    /// does not exist now loses its meter, as Open vSwitch resolves it at install.
    pub(super) fn resolve_controller_meters(&self, mut rule: Rule) -> Rule {
        fn walk(acts: &mut [Action], meters: &MeterTable) {
            for a in acts {
                match a {
                    Action::Controller(c) if c.meter_id.is_some_and(|m| !meters.contains(m)) => c.meter_id = None,
                    Action::Clone(nested) => walk(nested, meters),
                    _ => {}
                }
            }
        }
        walk(&mut rule.instructions.apply, &self.meters);
        walk(&mut rule.instructions.write, &self.meters);
        rule
    }

    /// `controller(…)`: its packet-in (pending its meter, if it has one).
    pub(super) fn run_controller(&self, c: &ControllerAction, ctx: &Ctx, out: &mut Vec<Fate>) {
        if !self.takes_controller_id(c.controller_id) || (c.reason.is_none() && c.meter_id.is_none()) {
            return;
        }
        let mut pin = self.packet_in_to(c.reason.unwrap_or(ControllerReason::NoMatch), c.controller_id, ctx);
        if let Fate::Controller { userdata, pending, .. } = &mut pin {
            userdata.clone_from(&c.userdata);
            *pending = c.meter_id.map(|meter| PendingMeter { meter, send: c.reason.is_some() });
        }
        out.push(pin);
    }

    /// Run the meters of the pending packet-ins in `out[from..]` (this packet's fates), in
    /// order: each kept (remarked by a DSCP band) or removed (dropped, or one that sends nothing).
    pub(super) fn settle_packet_in_meters(&mut self, out: &mut Vec<Fate>, from: usize) {
        if !out[from.min(out.len())..].iter().any(|f| matches!(f, Fate::Controller { pending: Some(_), .. })) {
            return;
        }
        let now = self.now_ns;
        let mut i = from;
        while i < out.len() {
            let keep = match &mut out[i] {
                Fate::Controller { pending: pending @ Some(_), packet, .. } => {
                    let PendingMeter { meter, send } = pending.take().unwrap_or(PendingMeter { meter: 0, send: false });
                    match self.meters.run(meter, now, packet.data.len()) {
                        Some(Verdict::Drop { band }) => {
                            self.note(|| format!("  controller meter:{meter} band {band}: packet-in dropped"));
                            false
                        }
                        Some(Verdict::Remark { prec_level, .. }) => {
                            remark(&mut packet.data, prec_level);
                            send
                        }
                        _ => send,
                    }
                }
                _ => true,
            };
            if keep {
                i += 1;
            } else {
                out.remove(i);
            }
        }
    }
}

impl Pipeline {
    /// A PACKET_OUT's `controller(meter_id=M)` packet-in of `frame` (the frame as the
    /// PACKET_OUT changed it so far) through meter `meter` now, as a pending packet-in is
    /// settled: false if a drop band drops it, else true, `frame` remarked by a DSCP band.
    /// A meter that does not exist passes it (measured on Open vSwitch 3.1: a PACKET_OUT
    /// resolves M when it runs, and without meter M its packet-ins all go). The token is
    /// spent whether or not the packet-in is then sent (a reason above 5, an id no
    /// controller has), as Open vSwitch's datapath meter runs before its upcall.
    pub fn meter_packet_in(&mut self, meter: u32, frame: &mut [u8]) -> bool {
        match self.meters.run(meter, self.now_ns, frame.len()) {
            Some(Verdict::Drop { band }) => {
                self.note(|| format!("  PACKET_OUT controller meter:{meter} band {band}: packet-in dropped"));
                false
            }
            Some(Verdict::Remark { prec_level, .. }) => {
                remark(frame, prec_level);
                true
            }
            _ => true,
        }
    }
}

/// A DSCP-remark band's verdict on a packet-in's frame (as `run_meter` remarks a packet).
fn remark(frame: &mut [u8], prec_level: u8) {
    let mut h = Headers::default();
    if parse_into(frame, &mut h).is_ok() {
        if let Some(dscp) = h.ip_dscp {
            actions::set_field(frame, &h, Field::IpDscp, u128::from(crate::meter::remark_dscp(dscp, prec_level)));
        }
    }
}
