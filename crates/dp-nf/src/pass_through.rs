//! Pass-through NF: forwards every frame unchanged (port 0 <-> port 1, or back
//! out of port 0 for a one-port NF). State: per-port rx/tx counters.
//! Cost: none of its own; the emulator charges whatever profile it is given.

use crate::{other_port, NetworkFunction, NfVerdict, PortCounters, StateError};

#[derive(Debug, Clone)]
pub struct PassThrough {
    ports: u8,
    pub counters: PortCounters,
}

impl PassThrough {
    pub fn new(ports: u8) -> Self {
        PassThrough { ports, counters: PortCounters::default() }
    }
}

impl NetworkFunction for PassThrough {
    fn kind(&self) -> &'static str {
        "pass_through"
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
    fn forwards_to_other_port_and_counts() {
        let mut nf = PassThrough::new(2);
        let mut f = vec![0u8; 64];
        assert_eq!(nf.process(&mut f, 0, 0), NfVerdict::Forward { port: 1 });
        assert_eq!(nf.process(&mut f, 1, 0), NfVerdict::Forward { port: 0 });
        assert_eq!(nf.counters.rx, [1, 1]);
        let mut one = PassThrough::new(1);
        assert_eq!(one.process(&mut f, 0, 0), NfVerdict::Forward { port: 0 });
    }

    #[test]
    fn state_round_trips_and_rejects_garbage() {
        let mut a = PassThrough::new(2);
        let mut f = vec![0u8; 64];
        for _ in 0..5 {
            a.process(&mut f, 0, 0);
        }
        let mut b = PassThrough::new(2);
        b.import_state(&a.export_state()).unwrap();
        assert_eq!(b.counters, a.counters);
        assert!(b.import_state(&[1, 2, 3]).unwrap_err().0.contains("32 bytes"));
    }
}
