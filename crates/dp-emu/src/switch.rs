//! The functional switch inside each device. The emulator talks to it through
//! [`SwitchLogic`]: one frame in on a port, zero or more fates out. The full
//! OpenFlow/POF pipeline from dp-core plugs in behind this trait; a port map
//! (in_port -> out_port) is the trivial implementation used by experiments that
//! only need fixed chaining. Cost: charged by the emulator per pass, from the
//! device's switch profile, not here.

/// What leaves the switch for one input frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchFate {
    Output { port: u32, frame: Vec<u8> },
    Controller { frame: Vec<u8> },
    Drop { reason: &'static str },
}

pub trait SwitchLogic: Send + Sync {
    /// Process `frame` that entered on `in_port`, appending its fates to `out`.
    fn process(&mut self, frame: Vec<u8>, in_port: u32, out: &mut Vec<SwitchFate>);
    /// Installed table entries (for table-capacity accounting).
    fn entries(&self) -> usize {
        0
    }
}

/// Fixed forwarding: a frame entering port `p` leaves on `map[p]`.
#[derive(Debug, Clone, Default)]
pub struct PortMapSwitch {
    map: Vec<Option<u32>>,
}

impl PortMapSwitch {
    pub fn set(&mut self, in_port: u32, out_port: u32) {
        let i = in_port as usize;
        if i >= self.map.len() {
            self.map.resize(i + 1, None);
        }
        self.map[i] = Some(out_port);
    }
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

impl SwitchLogic for PortMapSwitch {
    fn process(&mut self, frame: Vec<u8>, in_port: u32, out: &mut Vec<SwitchFate>) {
        match self.map.get(in_port as usize).copied().flatten() {
            Some(port) => out.push(SwitchFate::Output { port, frame }),
            None => out.push(SwitchFate::Drop { reason: "table_miss" }),
        }
    }
    fn entries(&self) -> usize {
        self.map.iter().filter(|x| x.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_map_forwards_and_misses() {
        let mut s = PortMapSwitch::default();
        s.set(1, 2);
        let mut out = vec![];
        s.process(vec![1], 1, &mut out);
        s.process(vec![2], 3, &mut out);
        assert_eq!(out, vec![SwitchFate::Output { port: 2, frame: vec![1] }, SwitchFate::Drop { reason: "table_miss" }]);
        assert_eq!(s.entries(), 1);
    }
}
