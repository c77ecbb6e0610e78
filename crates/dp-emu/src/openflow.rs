//! The OpenFlow 1.3 + POF switch of a device: dp-core's `Pipeline` behind the
//! emulator's `SwitchLogic`. Frames go through the real multi-table pipeline;
//! its fates map 1:1 (output, controller, drop with the pipeline's reason).
//! `forward` tries the pipeline's fast path first (a cached "goto ...
//! output" path: the frame leaves with no fate list built) and falls back
//! to the full walk with the fast path's cache probe.
//! State: the pipeline (rules, groups, counters). Cost: charged by the
//! emulator from the device's switch profile (the wall-clock cost of the
//! emulation itself is what `tandem bench emu_speed` measures).

use crate::switch::{SwitchFate, SwitchLogic};
use dp_core::pipeline::{Fate, Packet, Pipeline};
use std::any::Any;
use std::sync::Mutex;

pub struct OpenFlowSwitch {
    /// Behind a Mutex only so the switch is `Sync` whatever the pipeline holds
    /// (e.g. a RefCell for traces); every access goes through `&mut self`
    /// (`get_mut`), so it is never locked.
    pipeline: Mutex<Pipeline>,
    /// Reused fate buffer (no allocation per packet).
    scratch: Vec<Fate>,
}

impl OpenFlowSwitch {
    pub fn new(n_tables: usize) -> Self {
        OpenFlowSwitch { pipeline: Mutex::new(Pipeline::new(n_tables)), scratch: Vec::new() }
    }

    pub fn pipeline(&mut self) -> &mut Pipeline {
        self.pipeline.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// Move the pipeline's fates from the scratch buffer to `out`.
    fn convert_scratch(&mut self, out: &mut Vec<SwitchFate>) {
        let mut fates = std::mem::take(&mut self.scratch);
        for fate in fates.drain(..) {
            out.push(match fate {
                Fate::Output { port, packet } => SwitchFate::Output { port, frame: packet.data, mark: packet.mark },
                Fate::Controller { reason, controller_id, table, cookie, packet, meta, userdata, .. } => SwitchFate::Controller {
                    userdata,
                    controller_id,
                    frame: packet.data,
                    reason: reason.name(),
                    table,
                    cookie,
                    meta: meta.into_iter().map(|(f, v)| (f.name(), v)).collect(),
                },
                Fate::Drop { reason } => SwitchFate::Drop { reason: reason.name() },
            });
        }
        self.scratch = fates;
    }
}

impl SwitchLogic for OpenFlowSwitch {
    fn process(&mut self, frame: Vec<u8>, in_port: u32, out: &mut Vec<SwitchFate>) {
        let mut fates = std::mem::take(&mut self.scratch);
        self.pipeline().process_into(Packet::new(frame), in_port, &mut fates);
        self.scratch = fates;
        self.convert_scratch(out);
    }
    fn process_marked(&mut self, frame: Vec<u8>, mark: u32, in_port: u32, now_ps: u64, out: &mut Vec<SwitchFate>) {
        self.set_time(now_ps);
        let mut fates = std::mem::take(&mut self.scratch);
        self.pipeline().process_into(Packet::marked(frame, mark), in_port, &mut fates);
        self.scratch = fates;
        self.convert_scratch(out);
    }
    #[inline]
    fn forward(&mut self, mut frame: Vec<u8>, in_port: u32, now_ps: u64, out: &mut Vec<SwitchFate>) -> Option<(u32, Vec<u8>)> {
        // (the fast path never meters: the clock is set only for the full walk, or
        // while a rule has a timeout, whose timers need the packet's time)
        self.pipeline().tick_timers(now_ps / 1000);
        let missed = match self.pipeline().forward_fast_mut_marking(&mut frame, in_port) {
            Ok((port, 0)) => return Some((port, frame)),
            Ok((port, mark)) => {
                out.push(SwitchFate::Output { port, frame, mark });
                return None;
            }
            Err(missed) => missed,
        };
        self.set_time(now_ps);
        let mut fates = std::mem::take(&mut self.scratch);
        self.pipeline().process_missed(Packet::new(frame), in_port, &mut fates, missed);
        // One unmarked output and nothing else: hand it back directly.
        if let [Fate::Output { packet: Packet { mark: 0, .. }, .. }] = &fates[..] {
            if let Some(Fate::Output { port, packet }) = fates.pop() {
                self.scratch = fates;
                return Some((port, packet.data));
            }
        }
        self.scratch = fates;
        self.convert_scratch(out);
        None
    }
    #[inline]
    fn fixed_forward(&mut self, frame: &[u8], in_port: u32) -> Option<u32> {
        self.pipeline().forward_port_only(frame, in_port)
    }
    #[inline]
    fn set_time(&mut self, now_ps: u64) {
        self.pipeline().set_now_ns(now_ps / 1000);
    }
    fn entries(&self) -> usize {
        self.pipeline.lock().map_or(0, |p| p.n_rules())
    }
    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_core::pipeline::{Action, Instructions, Rule};

    #[test]
    fn pipeline_rules_drive_forwarding() {
        let mut s = OpenFlowSwitch::new(1);
        for p in [1, 2] {
            s.pipeline().add_port(p);
        }
        s.pipeline()
            .add_rule(Rule {
                table: 0,
                priority: 10,
                cookie: 0,
                matches: vec![],
                instructions: Instructions { apply: vec![Action::Output { port: 2, max_len: 0xffff }], ..Default::default() },
            })
            .unwrap();
        let mut f = Vec::new();
        crate::traffic::FrameTemplate::default().build(1, 64, &mut f);
        let mut out = vec![];
        s.process(f.clone(), 1, &mut out);
        assert_eq!(out, vec![SwitchFate::Output { port: 2, frame: f, mark: 0 }]);
        assert_eq!(s.entries(), 1);
    }
}
