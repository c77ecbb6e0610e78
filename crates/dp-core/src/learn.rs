//! Open vSwitch's `learn` action as data, and the flow it builds from a packet
//! (OVS 3.1 `learn_execute`): match specs write bits of the learned flow's
//! match, load specs become `load` actions, output specs an `output` to the
//! port the source bits hold (only a 16-bit port below OFPP_MAX or a reserved
//! port, else no action). The pipeline (`pipeline/learning.rs`) installs it.
//! State: none. Cost: O(specs) per learned flow.

use crate::field::Field;
use crate::rule::{ones, Action, FieldMatch, Instructions, Rule, Subfield};
use crate::rule::{OFPP_ALL, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL};

/// Where a spec's bits come from: a packet field, or an immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LearnSrc {
    Field(Subfield),
    Imm(u128),
}

/// What a spec does with its bits in the learned flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LearnDst {
    /// The learned flow matches these bits of the field.
    Match(Subfield),
    /// The learned flow loads them into this subfield.
    Load(Subfield),
    /// The learned flow outputs to the port they hold.
    Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LearnSpec {
    pub src: LearnSrc,
    pub dst: LearnDst,
    pub n_bits: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Learn {
    pub specs: Vec<LearnSpec>,
    pub table: u8,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub cookie: u64,
    pub send_flow_rem: bool,
    pub delete_learned: bool,
    /// 0: no limit; else the most rules its table may hold with its cookie (NXAST_LEARN2).
    pub limit: u32,
    /// Gets 1 if the flow was learned (or refreshed), 0 if the limit refused it.
    pub result_dst: Option<Subfield>,
    /// `fin_idle_timeout` / `fin_hard_timeout`: the learned flow starts with
    /// `fin_timeout(idle_timeout=…,hard_timeout=…)` when either is set (OVS's learn_execute).
    pub fin_idle_timeout: u16,
    pub fin_hard_timeout: u16,
}

/// A flow built by `learn`: the rule and the attributes OVS keeps beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedFlow {
    pub rule: Rule,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub send_flow_rem: bool,
}

/// OpenFlow 1.0 reserved port numbers a learned output may name, as OpenFlow 1.3 ones.
fn output_port(v: u128, n_bits: u32) -> Option<u32> {
    if n_bits > 16 && v >> 16 != 0 {
        return None;
    }
    match v as u16 {
        p if p < 0xff00 => Some(u32::from(p)),
        0xfff8 => Some(OFPP_IN_PORT),
        0xfffb => Some(OFPP_FLOOD),
        0xfffc => Some(OFPP_ALL),
        0xfffe => Some(OFPP_LOCAL),
        _ => None,
    }
}

impl Learn {
    /// The flow this action learns from a packet whose fields `read` returns.
    pub fn build(&self, mut read: impl FnMut(Field) -> u128) -> LearnedFlow {
        let mut fields: Vec<(Field, u128, u128)> = Vec::new();
        let mut apply = Vec::new();
        if self.fin_idle_timeout > 0 || self.fin_hard_timeout > 0 {
            apply.push(Action::FinTimeout { idle: self.fin_idle_timeout, hard: self.fin_hard_timeout });
        }
        for s in &self.specs {
            let bits = match s.src {
                LearnSrc::Field(sf) => (read(sf.field) >> sf.ofs) & ones(sf.n_bits),
                LearnSrc::Imm(v) => v & ones(s.n_bits),
            };
            match s.dst {
                LearnDst::Match(sf) => {
                    let (v, m) = (bits << sf.ofs, sf.mask());
                    let at = fields.iter().position(|e| e.0 == sf.field);
                    let (v, m) = at.map_or((v, m), |i| ((fields[i].1 & !m) | v, fields[i].2 | m));
                    // OVS's mf_set: a field that cannot be masked takes only a whole value
                    // (a part of one, e.g. OXM in_port[0..15], leaves the match as it was).
                    if !sf.field.maskable() && m != ones(sf.field.bits()) {
                        continue;
                    }
                    match at {
                        Some(i) => fields[i] = (sf.field, v, m),
                        None => fields.push((sf.field, v, m)),
                    }
                }
                LearnDst::Load(sf) => apply.push(Action::SetMasked { field: sf.field, value: bits << sf.ofs, mask: sf.mask() }),
                LearnDst::Output => {
                    if let Some(port) = output_port(bits, s.n_bits) {
                        apply.push(Action::Output { port, max_len: 0 }); // (OVS's learned output: max_len 0)
                    }
                }
            }
        }
        let matches = fields
            .into_iter()
            .map(|(f, v, m)| {
                if m == ones(f.bits()) {
                    FieldMatch::exact(f, v)
                } else {
                    FieldMatch::masked(f, v, m)
                }
            })
            .collect();
        let mut rule = Rule::new(self.table, self.priority, matches, Instructions::apply(apply));
        rule.cookie = self.cookie;
        LearnedFlow { rule, idle_timeout: self.idle_timeout, hard_timeout: self.hard_timeout, send_flow_rem: self.send_flow_rem }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf(field: Field, ofs: u32, n_bits: u32) -> Subfield {
        Subfield { field, ofs, n_bits }
    }

    #[test]
    fn mac_learning_flow() {
        let l = Learn {
            specs: vec![
                LearnSpec { src: LearnSrc::Field(sf(Field::EthSrc, 0, 48)), dst: LearnDst::Match(sf(Field::EthDst, 0, 48)), n_bits: 48 },
                LearnSpec { src: LearnSrc::Imm(5), dst: LearnDst::Match(sf(Field::Reg(3), 4, 4)), n_bits: 4 },
                LearnSpec { src: LearnSrc::Imm(1), dst: LearnDst::Match(sf(Field::Reg(3), 0, 1)), n_bits: 1 },
                LearnSpec { src: LearnSrc::Imm(7), dst: LearnDst::Load(sf(Field::Reg(1), 8, 8)), n_bits: 8 },
                LearnSpec { src: LearnSrc::Field(sf(Field::InPort, 0, 16)), dst: LearnDst::Output, n_bits: 16 },
                LearnSpec { src: LearnSrc::Imm(0xff00), dst: LearnDst::Output, n_bits: 16 },
            ],
            table: 2, priority: 9, idle_timeout: 3, hard_timeout: 0, cookie: 0x77, send_flow_rem: true, delete_learned: false, limit: 0, result_dst: None, fin_idle_timeout: 0, fin_hard_timeout: 0,
        };
        let f = l.build(|field| match field {
            Field::EthSrc => 0x0200_0000_0001,
            Field::InPort => 4,
            _ => 0,
        });
        assert_eq!(f.rule.table, 2);
        assert_eq!(f.rule.cookie, 0x77);
        assert_eq!(f.rule.matches, vec![FieldMatch::exact(Field::EthDst, 0x0200_0000_0001), FieldMatch::masked(Field::Reg(3), 0x51, 0xf1)]);
        // (0xff00 is no port: no action, as in OVS)
        assert_eq!(f.rule.instructions.apply, vec![Action::SetMasked { field: Field::Reg(1), value: 0x700, mask: 0xff00 }, Action::Output { port: 4, max_len: 0 }]);
        assert!(f.send_flow_rem && f.idle_timeout == 3);
    }

    #[test]
    fn in_port_part_matches_nothing() {
        let l = Learn {
            specs: vec![LearnSpec { src: LearnSrc::Imm(3), dst: LearnDst::Match(sf(Field::InPort, 0, 16)), n_bits: 16 }],
            table: 1, priority: 1, idle_timeout: 0, hard_timeout: 0, cookie: 0, send_flow_rem: false, delete_learned: false, limit: 0, result_dst: None, fin_idle_timeout: 0, fin_hard_timeout: 0,
        };
        assert_eq!(l.build(|_| 0).rule.matches, vec![]);
        assert_eq!(output_port(0xfff8, 16), Some(OFPP_IN_PORT));
        assert_eq!(output_port(0x1_0003, 32), None);
    }
}
