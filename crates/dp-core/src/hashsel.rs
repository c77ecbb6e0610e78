//! Open vSwitch's hash-selection actions as the pipeline stores them: `multipath`
//! (write a link number chosen from a flow hash into a subfield) and `bundle` /
//! `bundle_load` (choose a live member port by index and liveness; output to it,
//! or load its number). The hashes and choices are `ovs_hash`'s.
//! State: none. Cost: one flow hash, then O(links) or O(members).

use crate::ovs_hash::{bundle_member, flow_hash_fields, multipath_link, HashFields, MultipathAlgorithm};
use crate::parse::Headers;
use crate::rule::Subfield;
use std::fmt;

/// `multipath(fields, basis, algorithm, n_links, arg, dst)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Multipath {
    pub fields: HashFields,
    pub basis: u16,
    pub algorithm: MultipathAlgorithm,
    /// 1 ..= 65536
    pub n_links: u32,
    pub arg: u32,
    pub dst: Subfield,
}

impl Multipath {
    /// The link number to write into `dst`.
    pub fn link(&self, h: &Headers) -> u16 {
        multipath_link(flow_hash_fields(h, self.fields, self.basis), self.algorithm, self.n_links, self.arg)
    }
}

/// `bundle(fields, basis, algorithm, ofport, members:…)` (`dst` None) or
/// `bundle_load(…, dst, members:…)`; `hrw` false is active_backup.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bundle {
    pub fields: HashFields,
    pub basis: u16,
    pub hrw: bool,
    pub members: Vec<u32>,
    pub dst: Option<Subfield>,
}

/// What `bundle_load` loads when no member is live (OpenFlow 1.0's OFPP_NONE).
pub const NO_MEMBER: u16 = 0xffff;

/// Whether a reserved member is live, as Open vSwitch 3.1 decides (None: not a reserved
/// port, its liveness is the port's). IN_PORT, TABLE, NORMAL, FLOOD, ALL and NONE (here
/// OFPP_ANY) always are; so is LOCAL, which every bridge has (Open vSwitch asks its
/// port, up unless its device is set down); CONTROLLER is no member (refused at parse).
pub fn reserved_member_live(port: u32) -> Option<bool> {
    use crate::rule::{OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL, OFPP_TABLE};
    match port {
        OFPP_IN_PORT | OFPP_TABLE | OFPP_NORMAL | OFPP_FLOOD | OFPP_ALL | OFPP_LOCAL | OFPP_ANY => Some(true),
        OFPP_CONTROLLER => Some(false),
        _ => None,
    }
}

impl Bundle {
    /// The chosen member port (None: no member is live).
    pub fn choose(&self, h: &Headers, live: impl Fn(u32) -> bool) -> Option<u32> {
        // (active_backup hashes nothing; hrw hashes even with one member)
        let hash = if self.hrw { flow_hash_fields(h, self.fields, self.basis) } else { 0 };
        bundle_member(self.hrw, hash, self.members.len(), |i| live(self.members[i])).map(|i| self.members[i])
    }
}

fn algorithm(hrw: bool) -> &'static str {
    if hrw {
        "hrw"
    } else {
        "active_backup"
    }
}

impl fmt::Display for Multipath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (fields, alg) = (self.fields.name(), self.algorithm.name());
        write!(f, "multipath({fields},{},{alg},{},{},{})", self.basis, self.n_links, self.arg, self.dst)
    }
}

impl fmt::Display for Bundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members = self.members.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(",");
        let (fields, alg) = (self.fields.name(), algorithm(self.hrw));
        match &self.dst {
            None => write!(f, "bundle({fields},{},{alg},ofport,members:{members})", self.basis),
            Some(dst) => write!(f, "bundle_load({fields},{},{alg},ofport,{dst},members:{members})", self.basis),
        }
    }
}

#[cfg(test)]
mod reserved_member_tests {
    use super::reserved_member_live;
    use crate::rule::{OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL, OFPP_TABLE};

    #[test]
    fn reserved_members_are_live_as_open_vswitch_counts_them() {
        for p in [OFPP_IN_PORT, OFPP_TABLE, OFPP_NORMAL, OFPP_FLOOD, OFPP_ALL, OFPP_LOCAL, OFPP_ANY] {
            assert_eq!(reserved_member_live(p), Some(true), "{p:#x}");
        }
        assert_eq!(reserved_member_live(OFPP_CONTROLLER), Some(false));
        assert_eq!(reserved_member_live(0), None); // (a port number: the port's own liveness)
        assert_eq!(reserved_member_live(0xfeff), None);
    }
}
