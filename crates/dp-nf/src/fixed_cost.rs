//! Fixed-cost NF: forwards frames unchanged like the pass-through NF (it is
//! one, with a cost attached), but declares a fixed cost profile (cycles per
//! packet + cycles per byte), so the emulator's timing can be tested against
//! closed-form capacities.
//! State: the pass-through's per-port rx/tx counters.

use crate::pass_through::PassThrough;
use crate::{CostProfile, NetworkFunction, NfVerdict, StateError};

#[derive(Debug, Clone)]
pub struct FixedCost {
    forward: PassThrough,
    cost: CostProfile,
}

impl FixedCost {
    pub fn new(ports: u8, cycles_per_packet: f64, cycles_per_byte: f64) -> Self {
        FixedCost {
            forward: PassThrough::new(ports),
            cost: CostProfile { cycles_per_packet, cycles_per_byte, accelerator: None },
        }
    }
}

impl NetworkFunction for FixedCost {
    fn kind(&self) -> &'static str {
        "fixed_cost"
    }
    fn ports(&self) -> u8 {
        self.forward.ports()
    }
    fn process(&mut self, frame: &mut Vec<u8>, in_port: u8, now_ps: u64) -> NfVerdict {
        self.forward.process(frame, in_port, now_ps)
    }
    fn default_cost(&self) -> CostProfile {
        self.cost.clone()
    }
    fn export_state(&self) -> Vec<u8> {
        self.forward.export_state()
    }
    fn import_state(&mut self, state: &[u8]) -> Result<(), StateError> {
        self.forward.import_state(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declares_its_cost() {
        let nf = FixedCost::new(2, 100.0, 2.0);
        assert_eq!(nf.default_cost().cycles(64), 228.0);
    }
}
