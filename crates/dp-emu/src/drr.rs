//! Deficit round robin on an Ethernet transmitter (FairNIC egress sharing).
//!
//! A DRR port keeps one queue per class (a tenant; plus a default class for
//! traffic of no tenant) instead of the transmitter's single FIFO. Classes with
//! packets waiting take turns: on its turn a class earns `quantum × weight`
//! bytes of credit and sends packets while the head fits its credit; an
//! emptied class forfeits its credit (Shreedhar & Varghese, 1995). Each busy
//! class thus gets a share of the line proportional to its weight, and an idle
//! class's share goes to the others (work conserving).
//! State per port: per-class queues of parked packets (slab slots), credits,
//! the round-robin list of busy classes, whether the wire is busy.
//! Cost: one event per transmitted packet (the wire frees up) and O(1)
//! amortised queue work; FIFO ports do not pay any of it.

use crate::clock::{bytes_ps, Ps};
use crate::emulator::{Emulator, Ev, Slot};
use crate::traffic::Packet;
use std::collections::VecDeque;

#[derive(Debug, Default)]
struct Class {
    quantum: f64,
    credit: f64,
    queue: VecDeque<(Slot, usize)>,
}

/// The DRR state of one Ethernet port.
#[derive(Debug, Default)]
pub struct DrrPort {
    classes: Vec<Class>,
    /// Class of each traffic source (by source index); others use the last class.
    class_of_source: Vec<u16>,
    busy_classes: VecDeque<usize>,
    /// The class at the front of `busy_classes` already got this turn's credit.
    credited: bool,
    wire_busy: bool,
    depth: usize,
}

impl DrrPort {
    /// `weights[i]`: class i's weight; `class_of_source[s]`: class of source s
    /// (sources beyond it, or mapped past the last weight, go to a default class
    /// of weight 1). `quantum`: bytes of credit per turn at weight 1;
    /// `depth`: packets each class may queue.
    pub fn new(weights: &[f64], class_of_source: Vec<u16>, quantum: f64, depth: usize) -> Self {
        let mut classes: Vec<Class> = weights.iter().map(|w| Class { quantum: quantum * w, ..Default::default() }).collect();
        classes.push(Class { quantum, ..Default::default() });
        DrrPort { classes, class_of_source, busy_classes: VecDeque::new(), credited: false, wire_busy: false, depth: depth.max(1) }
    }

    fn class(&self, source: u32) -> usize {
        let last = self.classes.len() - 1;
        self.class_of_source.get(source as usize).map_or(last, |&c| (c as usize).min(last))
    }

    /// Queue a parked packet of `len` bytes from `source`; false if its class is full.
    fn enqueue(&mut self, source: u32, slot: Slot, len: usize) -> bool {
        let c = self.class(source);
        let cl = &mut self.classes[c];
        if cl.queue.len() >= self.depth {
            return false;
        }
        cl.queue.push_back((slot, len));
        if cl.queue.len() == 1 {
            self.busy_classes.push_back(c);
        }
        true
    }

    /// The next packet to send, by deficit round robin.
    fn next(&mut self) -> Option<(Slot, usize)> {
        loop {
            let &c = self.busy_classes.front()?;
            let cl = &mut self.classes[c];
            if !self.credited {
                cl.credit += cl.quantum;
                self.credited = true;
            }
            let &(slot, len) = cl.queue.front().expect("busy class has packets");
            if len as f64 <= cl.credit {
                cl.credit -= len as f64;
                cl.queue.pop_front();
                if cl.queue.is_empty() {
                    cl.credit = 0.0;
                    self.busy_classes.pop_front();
                    self.credited = false;
                }
                return Some((slot, len));
            }
            // Not enough credit: keep it for the next turn and pass the turn on.
            self.busy_classes.rotate_left(1);
            self.credited = false;
        }
    }
}

impl Emulator {
    /// A packet reaches a DRR Ethernet port: queue it in its class, start the wire if idle.
    #[inline(never)]
    pub(crate) fn drr_enqueue(&mut self, now: Ps, eth: u32, pkt: Packet) {
        let (source, len) = (pkt.source, pkt.frame.len());
        let slot = self.stash(pkt);
        let e = &mut self.eths[eth as usize];
        let drr = e.drr.as_mut().expect("DRR port");
        if !drr.enqueue(source, slot, len) {
            let place = e.place;
            let pkt = self.unstash(slot);
            return self.drop_pkt(place, "eth_tx_queue_full", pkt);
        }
        if !drr.wire_busy {
            self.drr_send_next(now, eth);
        }
    }

    /// The wire of DRR port `eth` is free at `now`: send the next packet, if any.
    pub(crate) fn drr_send_next(&mut self, now: Ps, eth: u32) {
        let e = &mut self.eths[eth as usize];
        let drr = e.drr.as_mut().expect("DRR port");
        let Some((slot, len)) = drr.next() else {
            drr.wire_busy = false;
            return;
        };
        drr.wire_busy = true;
        let fin = now + bytes_ps(len + 20, e.ps_per_byte);
        if fin <= self.horizon {
            e.packets += 1;
            e.bytes += len as u64;
        }
        let (at, sink) = (fin + e.propagation_ps, e.sink);
        self.sched.at(fin, Ev::EthFree { eth });
        let pkt = self.unstash(slot);
        self.receive(at, sink, pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(p: &mut DrrPort, n: usize) -> Vec<Slot> {
        (0..n).filter_map(|_| p.next().map(|(s, _)| s)).collect()
    }

    #[test]
    fn equal_weights_alternate_between_busy_classes() {
        let mut p = DrrPort::new(&[1.0, 1.0], vec![0, 1], 1500.0, 100);
        for i in 0..4 {
            assert!(p.enqueue(0, i, 1000));
            assert!(p.enqueue(1, 100 + i, 1000));
        }
        let order = drain(&mut p, 8);
        // Each turn buys 1.5 packets: after three turns each class sent three.
        let from_a = order.iter().take(6).filter(|&&s| s < 100).count();
        assert_eq!(from_a, 3, "{order:?}");
        assert_eq!(order.len(), 8);
    }

    #[test]
    fn bytes_sent_follow_the_weights() {
        let mut p = DrrPort::new(&[1.0, 3.0], vec![0, 1], 1500.0, 10_000);
        for i in 0..4000 {
            p.enqueue(0, i, 700);
            p.enqueue(1, 10_000 + i, 1200);
        }
        let (mut a, mut b) = (0usize, 0usize);
        for _ in 0..3000 {
            let (s, len) = p.next().unwrap();
            if s < 10_000 {
                a += len;
            } else {
                b += len;
            }
        }
        let ratio = b as f64 / a as f64;
        assert!((ratio - 3.0).abs() < 0.1, "{ratio}");
    }

    #[test]
    fn an_idle_class_leaves_the_line_to_the_others_and_full_classes_refuse() {
        let mut p = DrrPort::new(&[1.0, 1.0], vec![0, 1], 1500.0, 2);
        assert!(p.enqueue(1, 1, 100));
        assert!(p.enqueue(1, 2, 100));
        assert!(!p.enqueue(1, 3, 100));
        assert!(p.enqueue(7, 9, 100)); // a source of no class: the default class
        assert_eq!(drain(&mut p, 5), vec![1, 2, 9]);
        assert!(p.next().is_none());
    }
}
