//! `output:NORMAL`: Open vSwitch 3.1's MAC-learning switch (`xlate_normal` in
//! ofproto-dpif-xlate.c), with its table in `mactable.rs`.
//!
//! Every port is its own bundle in OVS's default mode, a trunk of every VLAN, and
//! the packet's VLAN is the VID of its outer 802.1Q/802.1ad tag (0 when untagged
//! or priority-tagged). Established against one OVS 3.1 bridge
//! (`tandem bench learn_oracle -- --normal --dp`, tests/dataplane/test_normal_dp.py):
//! - The packet as it is when NORMAL runs is what counts (rewritten MACs, a pushed
//!   tag): the in_port is the packet's own (a resubmit's port does not change it).
//! - In order: a destination OVS reserves (`mactable::is_reserved`: 01:80:c2:00:00:0x,
//!   Cisco and Extreme protocol addresses) drops the packet, nothing learned; the
//!   source is learned on the in_port (not a multicast source; `MacTable::learn`);
//!   then a multicast destination, or one not in the table, floods: one copy to
//!   every port but the in_port and those marked no-flood (OFPPC_NO_FLOOD,
//!   `set_no_flood`); a known destination gets one copy on its port, none if that
//!   is the in_port.
//! - The learning happens at once: a later NORMAL in the same pipeline (another
//!   rule, the action set) sees what an earlier one learned.
//! - Each copy leaves as OVS's VLAN translation puts it: the first tag (of the two
//!   parsed) with VID 0 and priority 0 is removed with every tag inside it (an outer
//!   priority-only tag 0x0000 takes the inner tag with it); other frames leave unchanged. The packet itself
//!   goes on unchanged to the actions after NORMAL.
//! - A packet from a port the switch does not have (OVS: no bundle) is dropped by
//!   NORMAL, except from CONTROLLER (a PACKET_OUT's in_port): that one learns
//!   nothing, is not checked for reserved destinations, and floods to every port.
//! - Entries expire `idle_time` seconds after they were last learned (in the
//!   pipeline's modelled time; looked at whenever NORMAL runs and by
//!   `expire_macs`), a full table evicts fairly (see `mactable.rs`), and a port
//!   removed takes its entries with it.
//!
//!
//! State: the table (behind a lock: actions run with `&self`) and the no-flood
//! ports. Cost: one table lookup and at most one update per NORMAL, a copy per
//! port flooded.

use super::*;
use crate::mactable::{is_reserved, MacEntry, MacTable};

const SECOND_NS: u64 = 1_000_000_000;
/// OpenFlow 1.0's OFPP_NONE as OpenFlow 1.3 writes it (a packet from nowhere).
const OFPP_NONE: u32 = 0xffff_ffff;

#[derive(Default)]
pub(super) struct Normal {
    macs: Mutex<MacTable>,
    no_flood: BTreeSet<u32>,
}

fn mac_of(b: &[u8; 6]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

impl Pipeline {
    fn macs(&self) -> std::sync::MutexGuard<'_, MacTable> {
        self.normal.macs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_s(&self) -> i64 {
        (self.now_ns / SECOND_NS) as i64
    }

    /// Run NORMAL on the packet as it is now (see the module comment).
    pub(super) fn run_normal(&self, ctx: &Ctx, out: &mut Vec<Fate>) {
        self.normal_on(&ctx.data, &ctx.h, ctx.in_port, ctx.mark, out);
    }

    /// A PACKET_OUT's `output:NORMAL` (its other actions already applied to
    /// `pkt`): NORMAL on this switch's table, `in_port` the PACKET_OUT's.
    pub fn packet_out_normal(&mut self, pkt: Packet, in_port: u32) -> Vec<Fate> {
        let mut h = Headers::default();
        let mut out = Vec::new();
        match parse_into(&pkt.data, &mut h) {
            Err(e @ ParseError::RuntFrame { .. }) => out.push(Fate::Drop { reason: DropReason::Malformed(e.name()) }),
            _ => self.normal_on(&pkt.data, &h, in_port, pkt.mark, &mut out),
        }
        out
    }

    fn normal_on(&self, data: &[u8], h: &Headers, in_port: u32, mark: u32, out: &mut Vec<Fate>) {
        let from_port = self.has_port(in_port);
        if !from_port && in_port != OFPP_CONTROLLER && in_port != OFPP_NONE {
            self.note(|| "  NORMAL: no input port, dropping".into());
            return;
        }
        let (src, dst) = (mac_of(&h.eth_src), mac_of(&h.eth_dst));
        let tag = h.vlans.first().copied();
        let vlan = tag.map_or(0, |t| t.vid);
        let now = self.now_s();
        let to = {
            let mut t = self.macs();
            t.expire(now);
            if from_port {
                if is_reserved(dst) {
                    self.note(|| "  NORMAL: reserved destination MAC, dropping".into());
                    return;
                }
                t.learn(src, vlan, in_port, Self::gratuitous_arp(h), now);
            }
            t.lookup(dst, vlan)
        };
        // (OVS's VLAN translation ends the tag stack at the first tag that carries neither
        // a VID nor a priority: that tag and those inside it go)
        let cut = h.vlans.iter().position(|t| t.vid == 0 && t.pcp == 0).map(|i| (12 + 4 * i, 12 + 4 * h.vlans.len()));
        let pkt = || {
            let mut data = data.to_vec();
            if let Some((from, to)) = cut {
                if data.len() >= to {
                    data.drain(from..to);
                }
            }
            Packet::marked(data, mark)
        };
        match to {
            Some(p) if p == in_port => self.note(|| "  NORMAL: learned port is the input port, dropping".into()),
            Some(p) => {
                self.note(|| format!("  NORMAL: to learned port {p}"));
                out.push(Fate::Output { port: p, packet: pkt() });
            }
            None => {
                self.note(|| "  NORMAL: flood".into());
                for &p in &self.port_list {
                    if p != in_port && !self.normal.no_flood.contains(&p) {
                        out.push(Fate::Output { port: p, packet: pkt() });
                    }
                }
            }
        }
    }

    /// OVS's `is_gratuitous_arp`: an ARP to the broadcast address that is a reply,
    /// or a request whose sender and target addresses are equal.
    fn gratuitous_arp(h: &Headers) -> bool {
        if h.eth_type != 0x0806 || h.eth_dst != [0xff; 6] {
            return false;
        }
        match h.arp_op {
            Some(2) => true,
            Some(1) => h.arp_spa == h.arp_tpa,
            _ => false,
        }
    }

    /// Mark `port` no-flood (OFPPC_NO_FLOOD) or not: NORMAL's flood skips it.
    pub fn set_no_flood(&mut self, port: u32, no_flood: bool) {
        self.invalidate_paths();
        if no_flood {
            self.normal.no_flood.insert(port);
        } else {
            self.normal.no_flood.remove(&port);
        }
    }

    pub fn no_flood(&self, port: u32) -> bool {
        self.normal.no_flood.contains(&port)
    }

    /// NORMAL's aging time (s) and table size, as OVS's `mac-aging-time` and
    /// `mac-table-size` (clamped as OVS clamps them).
    pub fn set_mac_table_config(&mut self, idle_time: u32, max_entries: usize) {
        let t = self.normal.macs.get_mut().unwrap_or_else(|e| e.into_inner());
        t.set_idle_time(idle_time);
        t.set_max_entries(max_entries);
    }

    /// Expire what is due at the pipeline's time (OVS's `mac_learning_run`).
    pub fn expire_macs(&mut self) {
        let now = self.now_s();
        self.normal.macs.get_mut().unwrap_or_else(|e| e.into_inner()).expire(now);
    }

    /// The MAC table (after `expire_macs`), least recently used first.
    pub fn mac_entries(&mut self) -> Vec<MacEntry> {
        self.expire_macs();
        let now = self.now_s();
        self.macs().entries(now)
    }

    /// Forget every learned MAC (OVS's `fdb/flush`).
    pub fn flush_macs(&mut self) {
        self.normal.macs.get_mut().unwrap_or_else(|e| e.into_inner()).flush();
    }

    /// A port removed takes its MAC entries and its no-flood mark with it.
    pub(super) fn normal_port_removed(&mut self, port: u32) {
        self.normal.no_flood.remove(&port);
        self.normal.macs.get_mut().unwrap_or_else(|e| e.into_inner()).flush_port(port);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: u64, src: u64, vlan: Option<(u8, u16)>) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst.to_be_bytes()[2..]);
        f.extend_from_slice(&src.to_be_bytes()[2..]);
        if let Some((pcp, vid)) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&((u16::from(pcp) << 13) | vid).to_be_bytes());
        }
        f.extend_from_slice(&[0x88, 0xb5]);
        f.extend_from_slice(&[0u8; 46]);
        f
    }

    fn switch() -> Pipeline {
        let mut p = Pipeline::new(1);
        for port in 1..=4 {
            p.add_port(port);
        }
        let rule = Rule::new(0, 0, vec![], Instructions::apply(vec![Action::Output { port: OFPP_NORMAL, max_len: 0 }]));
        p.add_rule(rule).unwrap();
        p
    }

    fn ports(f: &[Fate]) -> Vec<u32> {
        let mut v: Vec<u32> = f.iter().filter_map(|f| if let Fate::Output { port, .. } = f { Some(*port) } else { None }).collect();
        v.sort();
        v
    }

    const A: u64 = 0x0200_0000_000a;
    const B: u64 = 0x0200_0000_000b;

    #[test]
    fn floods_then_forwards_to_the_learned_port() {
        let mut p = switch();
        p.set_no_flood(4, true);
        assert_eq!(ports(&p.process(Packet::new(frame(B, A, None)), 1)), vec![2, 3], "flood skips in_port and no-flood");
        assert_eq!(ports(&p.process(Packet::new(frame(A, B, None)), 2)), vec![1]);
        assert_eq!(ports(&p.process(Packet::new(frame(B, A, None)), 1)), vec![2]);
        assert_eq!(ports(&p.process(Packet::new(frame(B, A, Some((0, 5)))), 1)), vec![2, 3], "VLAN 5 learned nothing yet");
        assert_eq!(ports(&p.process(Packet::new(frame(A, B, None)), 1)), Vec::<u32>::new(), "to its own port: nothing");
        let macs = p.mac_entries();
        assert_eq!(macs.iter().map(|e| (e.port, e.vlan, e.mac)).collect::<Vec<_>>(), vec![(1, 0, A), (1, 5, A), (1, 0, B)],
                   "A's repeat in the same second refreshed nothing; B's move did");
    }

    #[test]
    fn reserved_destinations_are_dropped_unlearned_and_priority_tags_removed() {
        let mut p = switch();
        assert!(ports(&p.process(Packet::new(frame(0x0180_c200_0000, A, None)), 1)).is_empty());
        assert!(p.mac_entries().is_empty());
        let out = p.process(Packet::new(frame(B, A, Some((0, 0)))), 1);
        assert_eq!(ports(&out), vec![2, 3, 4]);
        let Fate::Output { packet, .. } = &out[0] else { panic!() };
        assert_eq!(packet.data, frame(B, A, None), "VID 0, priority 0: the tag goes");
        let out = p.process(Packet::new(frame(B, A, Some((3, 0)))), 1);
        let Fate::Output { packet, .. } = &out[0] else { panic!() };
        assert_eq!(packet.data, frame(B, A, Some((3, 0))), "a priority keeps it");
        let mut two = frame(B, A, Some((0, 7)));
        two.splice(12..12, [0x81, 0x00, 0x00, 0x00]);
        let out = p.process(Packet::new(two), 1);
        let Fate::Output { packet, .. } = &out[0] else { panic!() };
        assert_eq!(packet.data, frame(B, A, None), "a bare outer tag takes the inner one with it");
    }

    #[test]
    fn a_packet_out_from_controller_learns_nothing_and_floods_everywhere() {
        let mut p = switch();
        assert_eq!(ports(&p.packet_out_normal(Packet::new(frame(B, A, None)), OFPP_CONTROLLER)), vec![1, 2, 3, 4]);
        assert!(p.mac_entries().is_empty());
        p.process(Packet::new(frame(A, B, None)), 2);
        assert_eq!(ports(&p.packet_out_normal(Packet::new(frame(B, A, None)), OFPP_CONTROLLER)), vec![2]);
        assert_eq!(ports(&p.packet_out_normal(Packet::new(frame(B, A, None)), 3)), vec![2], "from a port: learned there");
        assert_eq!(p.mac_entries().iter().map(|e| (e.port, e.mac)).collect::<Vec<_>>(), vec![(2, B), (3, A)]);
        assert!(ports(&p.packet_out_normal(Packet::new(frame(B, A, None)), 99)).is_empty(), "no such port: dropped");
    }

    #[test]
    fn entries_age_out_and_go_with_their_port() {
        let mut p = switch();
        p.set_mac_table_config(15, 8192);
        p.process(Packet::new(frame(B, A, None)), 1);
        p.set_now_ns(14 * SECOND_NS);
        assert_eq!(p.mac_entries().len(), 1);
        p.set_now_ns(15 * SECOND_NS);
        assert!(p.mac_entries().is_empty());
        p.process(Packet::new(frame(B, A, None)), 1);
        p.remove_port(1);
        assert!(p.mac_entries().is_empty());
    }
}
