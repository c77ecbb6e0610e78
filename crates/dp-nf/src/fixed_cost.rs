//! Fixed-cost NF: forwards frames unchanged like the pass-through NF, but
//! declares a fixed cost profile (cycles per packet + cycles per byte), so the
//! emulator's timing can be tested against closed-form capacities.
//! State: per-port rx/tx counters.

use crate::{other_port, CostProfile, NetworkFunction, NfVerdict, PortCounters, StateError};

#[derive(Debug, Clone)]
pub struct FixedCost {
    ports: u8,
    cost: CostProfile,
    pub counters: PortCounters,
}

impl FixedCost {
    pub fn new(ports: u8, cycles_per_packet: f64, cycles_per_byte: f64) -> Self {
        FixedCost {
            ports,
            cost: CostProfile { cycles_per_packet, cycles_per_byte, accelerator: None },
            counters: PortCounters::default(),
        }
    }
}

impl NetworkFunction for FixedCost {
    fn kind(&self) -> &'static str {
        "fixed_cost"
    }
    fn ports(&self) -> u8 {
        self.ports
    }
    fn process(&mut self, _frame: &mut Vec<u8>, in_port: u8, _now_ps: u64) -> NfVerdict {
        let out = other_port(self.ports, in_port);
        self.counters.rx[(in_port & 1) as usize] += 1;
        self.counters.tx[out as usize] += 1;
        NfVerdict::Forward { port: out }
    }
    fn default_cost(&self) -> CostProfile {
        self.cost.clone()
    }
    fn export_state(&self) -> Vec<u8> {
        self.counters.to_bytes()
    }
    fn import_state(&mut self, state: &[u8]) -> Result<(), StateError> {
        self.counters = PortCounters::from_bytes(state)?;
        Ok(())
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
