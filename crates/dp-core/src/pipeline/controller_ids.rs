//! Controller ids of packet-ins, as Open vSwitch 3.1 sends them: `controller(id=N)`
//! sends one packet-in to the connections whose controller id is N, and
//! `dec_ttl(ids)` one to each listed id in order when the TTL runs out
//! (`compose_dec_ttl`: an id listed twice gets two), all with reason `invalid_ttl`.
//! A pipeline models one controller connection with id 0 (default) or, with
//! `every_controller_id`, a connection for every id (the emulator backend's physical
//! switches, whose endpoint keeps one connection per id in use): each packet-in
//! then carries its id (`Fate::Controller::controller_id`).
//! State: none. Cost: one packet-in per listed id.

use super::{Ctx, Fate, Pipeline};
use crate::fate::ControllerReason;

impl Pipeline {
    /// Does a packet-in to controller id `id` reach a connection of this switch?
    pub(super) fn takes_controller_id(&self, id: u16) -> bool {
        id == 0 || self.every_controller_id
    }

    /// A packet-in with `reason` for the connections with controller id `id`.
    pub(super) fn packet_in_to(&self, reason: ControllerReason, id: u16, ctx: &Ctx) -> Fate {
        let mut pin = self.packet_in(reason, ctx);
        if let Fate::Controller { controller_id, .. } = &mut pin {
            *controller_id = id;
        }
        pin
    }

    /// `dec_ttl(ids)` found the TTL run out: an `invalid_ttl` packet-in per listed id, in order.
    pub(super) fn dec_ttl_packet_ins(&self, ids: &[u16], ctx: &Ctx, out: &mut Vec<Fate>) {
        for &id in ids {
            if self.takes_controller_id(id) {
                out.push(self.packet_in_to(ControllerReason::InvalidTtl, id, ctx));
            }
        }
    }
}
