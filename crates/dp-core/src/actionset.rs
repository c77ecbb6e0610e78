//! The OpenFlow 1.3 action set that write-actions fill: at most one action of
//! each kind (set-fields: one per field), executed at the end of the pipeline
//! in the OpenFlow / Open vSwitch order: pop VLAN, pop MPLS, POF DelField,
//! decap() (rules/decap_set.py), encap(ethernet) (rules/encap_set.py), push MPLS, push VLAN, POF AddField, dec_ttl, dec MPLS TTL, dec NSH TTL (Open
//! vSwitch's `dec_nsh_ttl`, measured there on 3.1), set MPLS / IP
//! TTL, set-fields and moves (all of them, in the order written, as Open
//! vSwitch runs them), set-queue, then the group if any, else the output, else
//! (Open vSwitch) a written resubmit, else ct_clear, else ct (Open vSwitch 3.1's
//! final actions: only the first of these present runs). A set with none of these
//! does nothing.
//! State: the set itself.

use crate::rule::{Action, CtAction};

/// The write-actions action set (one action per kind; set-fields per field).
#[derive(Debug, Clone, Default)]
pub struct ActionSet {
    pop_vlan: bool,
    del_field: Option<(u32, u32)>,
    push_vlan: Option<u16>,
    add_field: Option<(u32, u32, u128)>,
    dec_ttl: Option<Action>,
    pop_mpls: Option<u16>,
    push_mpls: Option<u16>,
    dec_mpls_ttl: bool,
    dec_nsh_ttl: bool,
    /// A written `encap(ethernet)` (rules/encap_set.py: closing the apply-actions' `encap(nsh)`).
    encap_eth: bool,
    /// A written `decap()` (rules/decap_set.py: closing the apply-actions' `decap()`).
    decap: bool,
    set_mpls_ttl: Option<u8>,
    set_nw_ttl: Option<u8>,
    set_queue: Option<u32>,
    /// set_field (masked or not) and move actions, in the order written.
    sets: Vec<Action>,
    group: Option<u32>,
    output: Option<u32>,
    /// A written resubmit (in_port, table), run when there is neither group nor output.
    resubmit: Option<(u32, u8)>,
    /// A written ct_clear, run when there is no group, output or resubmit.
    ct_clear: bool,
    /// A written ct, run when there is none of the above (with `table`: recirculated).
    ct: Option<Box<CtAction>>,
}

impl ActionSet {
    pub fn write(&mut self, actions: &[Action]) {
        for a in actions {
            match *a {
                Action::PopVlan => self.pop_vlan = true,
                Action::PofDelField { offset, length } => self.del_field = Some((offset, length)),
                Action::PushVlan { ethertype } => self.push_vlan = Some(ethertype),
                Action::PofAddField { offset, length, value } => self.add_field = Some((offset, length, value)),
                Action::DecTtl | Action::DecTtlIds(_) => self.dec_ttl = Some(a.clone()),
                Action::SetField { .. } | Action::SetMasked { .. } | Action::Move { .. } => self.sets.push(a.clone()),
                Action::SetTunMetadataWide(_) => self.sets.push(a.clone()),
                // (Open vSwitch takes none of these in write-actions)
                Action::StackPush(_) | Action::StackPop(_) | Action::Note | Action::Exit | Action::Conjunction { .. } => {}
                Action::CheckPktLarger { .. } | Action::OutputReg { .. } | Action::Learn(_) => {}
                Action::Ct(ref c) => self.ct = Some(c.clone()),
                Action::CtClear => self.ct_clear = true,
                Action::Controller(_) => {}
                Action::Clone(_) => {}
                Action::Multipath(_) | Action::Bundle(_) => {}
                Action::OutputTrunc { .. } => {}
                Action::FinTimeout { .. } => {}
                Action::DeleteField(_) => {}
                Action::Resubmit { in_port, table } => self.resubmit = Some((in_port, table)),
                Action::Group(g) => self.group = Some(g),
                Action::Output { port, .. } => self.output = Some(port),
                Action::PopMpls { ethertype } => self.pop_mpls = Some(ethertype),
                Action::PushMpls { ethertype } => self.push_mpls = Some(ethertype),
                Action::DecMplsTtl => self.dec_mpls_ttl = true,
                Action::DecNshTtl => self.dec_nsh_ttl = true,
                Action::EncapEthernet => self.encap_eth = true,
                Action::EncapNsh => {} // (refused in write-actions by the rule IR: rules/encap_set.py)
                Action::Decap => self.decap = true, // (rules/decap_set.py: Open vSwitch keeps one)
                Action::SetMplsTtl(t) => self.set_mpls_ttl = Some(t),
                Action::SetNwTtl(t) => self.set_nw_ttl = Some(t),
                Action::SetQueue(q) => self.set_queue = Some(q),
            }
        }
    }
    /// A group is written (Open vSwitch's `action_set_has_group`).
    pub fn has_group(&self) -> bool {
        self.group.is_some()
    }
    /// The output written last, if any (whether or not a group wins over it).
    pub fn output(&self) -> Option<u32> {
        self.output
    }
    pub fn is_empty(&self) -> bool {
        self.group.is_none() && self.output.is_none() && self.resubmit.is_none() && !self.ct_clear && self.ct.is_none()
    }
    /// The set as an ordered action list (OVS / OpenFlow 1.3 §5.10 order).
    pub fn to_list(&self) -> Vec<Action> {
        let mut v = Vec::new();
        if self.is_empty() {
            return v;
        }
        if self.pop_vlan {
            v.push(Action::PopVlan);
        }
        if let Some(ethertype) = self.pop_mpls {
            v.push(Action::PopMpls { ethertype });
        }
        if let Some((offset, length)) = self.del_field {
            v.push(Action::PofDelField { offset, length });
        }
        if self.decap {
            v.push(Action::Decap); // (Open vSwitch: after pop_vlan and pop_mpls, before encap; recirculates)
        }
        if self.encap_eth {
            v.push(Action::EncapEthernet); // (Open vSwitch: after pop_vlan, pop_mpls and decap, before the pushes)
        }
        if let Some(ethertype) = self.push_mpls {
            v.push(Action::PushMpls { ethertype });
        }
        if let Some(ethertype) = self.push_vlan {
            v.push(Action::PushVlan { ethertype });
        }
        if let Some((offset, length, value)) = self.add_field {
            v.push(Action::PofAddField { offset, length, value });
        }
        if let Some(d) = &self.dec_ttl {
            v.push(d.clone());
        }
        if self.dec_mpls_ttl {
            v.push(Action::DecMplsTtl);
        }
        if self.dec_nsh_ttl {
            v.push(Action::DecNshTtl);
        }
        if let Some(t) = self.set_mpls_ttl {
            v.push(Action::SetMplsTtl(t));
        }
        if let Some(t) = self.set_nw_ttl {
            v.push(Action::SetNwTtl(t));
        }
        v.extend(self.sets.iter().cloned());
        if let Some(q) = self.set_queue {
            v.push(Action::SetQueue(q));
        }
        match (self.group, self.output) {
            (Some(g), _) => v.push(Action::Group(g)),
            (None, Some(port)) => v.push(Action::output(port)),
            // Open vSwitch runs the action set with table 0 as the current table, so a
            // resubmit to "its own table" (255) goes to table 0
            _ => {
                if let Some((in_port, table)) = self.resubmit {
                    v.push(Action::Resubmit { in_port, table: if table == 255 { 0 } else { table } });
                } else if self.ct_clear {
                    v.push(Action::CtClear);
                } else if let Some(c) = &self.ct {
                    v.push(Action::Ct(c.clone()));
                }
            }
        }
        v
    }
}
