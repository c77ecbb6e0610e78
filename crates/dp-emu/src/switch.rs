//! The functional switch inside each device. The emulator talks to it through
//! [`SwitchLogic`]: one frame in on a port, zero or more fates out. The full
//! OpenFlow/POF pipeline from dp-core plugs in behind this trait; a port map
//! (in_port -> out_port) is the trivial implementation used by experiments that
//! only need fixed chaining. Cost: charged by the emulator per pass, from the
//! device's switch profile, not here.

/// What leaves the switch for one input frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchFate {
    /// `mark`: the packet mark it leaves with (see `SwitchLogic::process_marked`).
    Output { port: u32, frame: Vec<u8>, mark: u32 },
    /// A packet-in: why, the table it was in, the sending rule's cookie, and the
    /// pipeline state a packet-in's match lists (field name, value; not zero).
    Controller { frame: Vec<u8>, reason: &'static str, table: u8, cookie: u64, meta: Vec<(String, u128)>, userdata: Vec<u8>, controller_id: u16 },
    Drop { reason: &'static str },
}

pub trait SwitchLogic: Send + Sync {
    /// Process `frame` that entered on `in_port`, appending its fates to `out`.
    fn process(&mut self, frame: Vec<u8>, in_port: u32, out: &mut Vec<SwitchFate>);
    /// `process` at modelled time `now_ps` for a packet that arrives with a
    /// packet mark (set by the previous switch; 0 = none). Switches without
    /// marks ignore it.
    fn process_marked(&mut self, frame: Vec<u8>, _mark: u32, in_port: u32, now_ps: u64, out: &mut Vec<SwitchFate>) {
        self.set_time(now_ps);
        self.process(frame, in_port, out)
    }
    /// `process` at modelled time `now_ps` for the common case of one output:
    /// when `frame` leaves on exactly one port (and nothing else happens to
    /// it) returns that port and the frame without touching `out`; otherwise
    /// appends the fates to `out` and returns None. Same effect either way.
    /// (The time comes with the frame, not through `set_time`, so a switch
    /// that needs no clock for this frame pays nothing for it.)
    fn forward(&mut self, frame: Vec<u8>, in_port: u32, now_ps: u64, out: &mut Vec<SwitchFate>) -> Option<(u32, Vec<u8>)> {
        self.set_time(now_ps);
        self.process(frame, in_port, out);
        None
    }
    /// The modelled time (ps) of the frames `process` handles next (meters run on it).
    fn set_time(&mut self, _now_ps: u64) {}
    /// Installed table entries (for table-capacity accounting).
    fn entries(&self) -> usize {
        0
    }
    /// If every frame entering `in_port` leaves unchanged on one port, that
    /// port (lets the emulator skip building fates). Default: no such shortcut.
    fn fixed_output(&self, _in_port: u32) -> Option<u32> {
        None
    }
    /// `fixed_output` for one frame: if this frame leaves unchanged on one
    /// port, and the switch has done its bookkeeping for it (counters),
    /// that port; None: nothing happened, run `forward`.
    #[inline]
    fn fixed_forward(&mut self, _frame: &[u8], in_port: u32) -> Option<u32> {
        self.fixed_output(in_port)
    }
    /// Downcasting hook for switches that can be reconfigured (OpenFlow rules).
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

#[derive(Debug, Clone, Default)]
enum PortEntry {
    #[default]
    Miss,
    /// Frames entering here are dropped on purpose (e.g. after an NF that drops).
    Drop,
    One(u32),
    /// Weighted branches (output port, cumulative share in [0, 1]); a flow
    /// always takes the same branch (chosen by its 5-tuple hash).
    Branches(Vec<(u32, f64)>),
}

/// Fixed forwarding: a frame entering port `p` leaves on `map[p]`, or on one
/// of several weighted branches (element graphs with branch fractions).
#[derive(Debug, Clone, Default)]
pub struct PortMapSwitch {
    map: Vec<PortEntry>,
}

impl PortMapSwitch {
    fn slot(&mut self, in_port: u32) -> &mut PortEntry {
        let i = in_port as usize;
        if i >= self.map.len() {
            self.map.resize(i + 1, PortEntry::Miss);
        }
        &mut self.map[i]
    }
    pub fn set(&mut self, in_port: u32, out_port: u32) {
        *self.slot(in_port) = PortEntry::One(out_port);
    }
    /// Split frames entering `in_port` over `(out_port, weight)` branches by
    /// flow; no branches means drop them (reason `dropped_by_rule`).
    pub fn set_branches(&mut self, in_port: u32, branches: &[(u32, f64)]) {
        if branches.is_empty() {
            *self.slot(in_port) = PortEntry::Drop;
            return;
        }
        let total: f64 = branches.iter().map(|b| b.1.max(0.0)).sum();
        if branches.len() == 1 || total <= 0.0 {
            if let Some(b) = branches.first() {
                self.set(in_port, b.0);
            }
            return;
        }
        let mut acc = 0.0;
        let cum = branches
            .iter()
            .map(|&(p, w)| {
                acc += w.max(0.0) / total;
                (p, acc)
            })
            .collect();
        *self.slot(in_port) = PortEntry::Branches(cum);
    }
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

impl SwitchLogic for PortMapSwitch {
    fn process(&mut self, frame: Vec<u8>, in_port: u32, out: &mut Vec<SwitchFate>) {
        match self.map.get(in_port as usize) {
            Some(PortEntry::One(port)) => out.push(SwitchFate::Output { port: *port, frame, mark: 0 }),
            Some(PortEntry::Branches(b)) => {
                // Salt the flow hash with the input port so successive branch
                // points choose independently of each other.
                let h = crate::traffic::frame_flow_hash(&frame) as u64 ^ ((in_port as u64) << 32);
                let x = crate::traffic::mix32(h) as f64 / 4_294_967_296.0;
                let port = b.iter().find(|(_, c)| x < *c).unwrap_or(b.last().unwrap()).0;
                out.push(SwitchFate::Output { port, frame, mark: 0 })
            }
            Some(PortEntry::Drop) => out.push(SwitchFate::Drop { reason: "dropped_by_rule" }),
            _ => out.push(SwitchFate::Drop { reason: "table_miss" }),
        }
    }
    fn entries(&self) -> usize {
        self.map.iter().filter(|x| !matches!(x, PortEntry::Miss)).count()
    }
    #[inline]
    fn fixed_output(&self, in_port: u32) -> Option<u32> {
        match self.map.get(in_port as usize) {
            Some(PortEntry::One(p)) => Some(*p),
            _ => None,
        }
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
        assert_eq!(out, vec![SwitchFate::Output { port: 2, frame: vec![1], mark: 0 }, SwitchFate::Drop { reason: "table_miss" }]);
        assert_eq!(s.entries(), 1);
    }

    #[test]
    fn branches_split_flows_by_weight() {
        let mut s = PortMapSwitch::default();
        s.set_branches(1, &[(2, 0.2), (3, 0.8)]);
        let t = crate::traffic::FrameTemplate::default();
        let mut counts = [0usize; 4];
        let mut out = vec![];
        for flow in 0..5000 {
            let mut f = Vec::new();
            t.build(flow, 64, &mut f);
            s.process(f, 1, &mut out);
        }
        for o in out {
            if let SwitchFate::Output { port, .. } = o {
                counts[port as usize] += 1;
            }
        }
        assert!((counts[2] as f64 / 5000.0 - 0.2).abs() < 0.03, "{counts:?}");
        assert_eq!(counts[2] + counts[3], 5000);
    }
}
