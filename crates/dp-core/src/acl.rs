//! 5-tuple ACL rules (ClassBench / rte_acl style) on the classifier.
//!
//! A rule: IPv4 source and destination prefixes, source and destination
//! port ranges, protocol value/mask; the first rule of a list has the
//! highest priority. `insert` puts rule `i` of `n` into a `Classifier` as
//! one rule (priority `n - i`, id `i`): the prefixes and protocol as
//! value/mask on the packet key, each port range that is not 0..=65535 as a
//! `FieldRange` (so a range is one rule, and a port range without a protocol
//! needs no per-protocol copies). Ports are the key's L4 source/destination
//! slots: TCP/UDP/SCTP ports (for ICMP its type/code, else 0), as rte_acl
//! reads the bytes at the L4 offset whatever the protocol. `first_match` is
//! the plain linear scan that checks the classifier.
//! State: none. Cost: `insert` as `Classifier::insert_ranged`.

use crate::classifier::{Classifier, FieldRange, RuleId};
use crate::field::{put, Field, Key, KEY_WORDS};
use crate::parse::ETH_TYPE_IPV4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclRule {
    pub src: u32,
    pub src_len: u8,
    pub dst: u32,
    pub dst_len: u8,
    pub sport: (u16, u16),
    pub dport: (u16, u16),
    pub proto: u8,
    pub proto_mask: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclPacket {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

fn prefix_mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

impl AclRule {
    pub fn matches(&self, p: &AclPacket) -> bool {
        let (sm, dm) = (prefix_mask(self.src_len), prefix_mask(self.dst_len));
        p.src & sm == self.src & sm
            && p.dst & dm == self.dst & dm
            && (self.sport.0..=self.sport.1).contains(&p.sport)
            && (self.dport.0..=self.dport.1).contains(&p.dport)
            && p.proto & self.proto_mask == self.proto & self.proto_mask
    }

    /// Add this rule to `c` as rule `id` with `priority`.
    pub fn insert(&self, c: &mut Classifier, id: RuleId, priority: u16) {
        let (mut v, mut m) = ([0u64; KEY_WORDS], [0u64; KEY_WORDS]);
        let mut set = |f: Field, val: u64, mask: u64| {
            put(&mut v, f.slot(), u128::from(val & mask));
            put(&mut m, f.slot(), u128::from(mask));
        };
        set(Field::EthType, u64::from(ETH_TYPE_IPV4), 0xffff);
        set(Field::Ipv4Src, u64::from(self.src), u64::from(prefix_mask(self.src_len)));
        set(Field::Ipv4Dst, u64::from(self.dst), u64::from(prefix_mask(self.dst_len)));
        if self.proto_mask != 0 {
            set(Field::IpProto, u64::from(self.proto), u64::from(self.proto_mask));
        }
        let mut ranges = Vec::new();
        for (f, (lo, hi)) in [(Field::TcpSrc, self.sport), (Field::TcpDst, self.dport)] {
            if (lo, hi) != (0, u16::MAX) {
                ranges.push(FieldRange::of(f, u64::from(lo), u64::from(hi)));
            }
        }
        if ranges.is_empty() {
            c.insert(id, priority, &v, &m);
        } else {
            c.insert_ranged(id, priority, &v, &m, &ranges);
        }
    }
}

impl AclPacket {
    /// The packet key of an IPv4 packet with these fields.
    pub fn key(&self) -> Key {
        let mut k = [0u64; KEY_WORDS];
        put(&mut k, Field::EthType.slot(), u128::from(ETH_TYPE_IPV4));
        put(&mut k, Field::IpProto.slot(), u128::from(self.proto));
        put(&mut k, Field::Ipv4Src.slot(), u128::from(self.src));
        put(&mut k, Field::Ipv4Dst.slot(), u128::from(self.dst));
        put(&mut k, Field::TcpSrc.slot(), u128::from(self.sport));
        put(&mut k, Field::TcpDst.slot(), u128::from(self.dport));
        k
    }
}

/// A classifier holding `rules` (first highest: rule i has id i and
/// priority `rules.len() - i`). None when there are more than 65,535 rules.
pub fn classifier(rules: &[AclRule]) -> Option<Classifier> {
    let n = rules.len();
    if n > usize::from(u16::MAX) {
        return None;
    }
    let mut c = Classifier::new();
    for (i, r) in rules.iter().enumerate() {
        r.insert(&mut c, i as RuleId, (n - i) as u16);
    }
    Some(c)
}

/// Index of the first rule matching `p` (linear scan).
pub fn first_match(rules: &[AclRule], p: &AclPacket) -> Option<usize> {
    rules.iter().position(|r| r.matches(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift64 as Rng;

    #[test]
    fn classifier_agrees_with_linear_scan_on_ranges_and_wildcard_protocols() {
        let mut rng = Rng(42);
        let pool = [0x0a00_0000u32, 0x0a00_0100, 0xc0a8_0000];
        let rules: Vec<AclRule> = (0..400)
            .map(|_| {
                let range = |rng: &mut Rng| match rng.below(4) {
                    0 => (0, u16::MAX),
                    1 => (80, 80),
                    2 => (1024, u16::MAX),
                    _ => {
                        let a = rng.below(3000) as u16;
                        (a, a + rng.below(5000) as u16)
                    }
                };
                AclRule {
                    src: pool[rng.below(3) as usize] | rng.below(256) as u32,
                    src_len: [0, 8, 16, 24, 32][rng.below(5) as usize],
                    dst: pool[rng.below(3) as usize] | rng.below(256) as u32,
                    dst_len: [0, 8, 16, 24, 32][rng.below(5) as usize],
                    sport: range(&mut rng),
                    dport: range(&mut rng),
                    proto: [6, 17, 0][rng.below(3) as usize],
                    proto_mask: [0xff, 0xff, 0][rng.below(3) as usize],
                }
            })
            .map(|mut r| {
                r.proto &= r.proto_mask;
                r
            })
            .collect();
        let mut c = classifier(&rules).unwrap();
        c.set_tree_policy(Some((0, 0)));
        let pkts: Vec<AclPacket> = (0..5000)
            .map(|_| AclPacket {
                src: pool[rng.below(3) as usize] | rng.below(256) as u32,
                dst: pool[rng.below(3) as usize] | rng.below(256) as u32,
                sport: [80, 1023, 1024, 2999, rng.below(65536) as u16][rng.below(5) as usize],
                dport: [80, 81, 0, 7999, rng.below(65536) as u16][rng.below(5) as usize],
                proto: [6, 17, 1][rng.below(3) as usize],
            })
            .collect();
        let keys: Vec<Key> = pkts.iter().map(|p| p.key()).collect();
        let mut out = vec![None; keys.len()];
        c.lookup_batch(&keys, &mut out);
        let mut matched = 0;
        for (p, o) in pkts.iter().zip(&out) {
            let want = first_match(&rules, p);
            assert_eq!(o.map(|(_, id)| id as usize), want, "{p:?}");
            matched += usize::from(want.is_some());
        }
        assert!(matched > 1000, "{matched} packets matched a rule");
        assert_eq!(c.len(), rules.len(), "one classifier rule per ACL rule");
        assert_eq!(c.tree_rules(), Some(rules.len()), "each range rule is one tree rule");
    }
}
