//! Bindings for dp-core's 5-tuple ACL rules (`dp_core::acl`): the classifier
//! benchmark loads ClassBench rules and traces (parsed in Python by
//! `tandem.rules.classbench`) straight into a classifier, one rule each.
//! Conversions and timing loops only.

use dp_core::acl::{self, AclPacket, AclRule};
use dp_core::{Classifier, Key};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::time::Instant;

type RuleTuple = (u32, u8, u32, u8, u16, u16, u16, u16, u8, u8);
type PacketTuple = (u32, u32, u16, u16, u8);

fn thread_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// A classifier holding ACL rules (rule i: id i, priority n - i) and the
/// keys of a trace, for timing and checking lookups.
#[pyclass(unsendable)]
pub struct AclBench {
    c: Classifier,
    rules: Vec<AclRule>,
    pkts: Vec<AclPacket>,
    keys: Vec<Key>,
}

#[pymethods]
impl AclBench {
    /// `rules`: (src, src_len, dst, dst_len, sport_lo, sport_hi, dport_lo,
    /// dport_hi, proto, proto_mask); `packets`: (src, dst, sport, dport, proto).
    #[new]
    fn new(rules: Vec<RuleTuple>, packets: Vec<PacketTuple>) -> PyResult<Self> {
        let rules: Vec<AclRule> = rules
            .into_iter()
            .enumerate()
            .map(|(i, (src, src_len, dst, dst_len, slo, shi, dlo, dhi, proto, proto_mask))| {
                if src_len > 32 || dst_len > 32 || slo > shi || dlo > dhi {
                    return Err(PyValueError::new_err(format!("rule {}: prefix longer than 32 or empty port range", i + 1)));
                }
                Ok(AclRule { src, src_len, dst, dst_len, sport: (slo, shi), dport: (dlo, dhi), proto: proto & proto_mask, proto_mask })
            })
            .collect::<PyResult<_>>()?;
        let c = acl::classifier(&rules).ok_or_else(|| PyValueError::new_err(format!("{} rules: at most 65,535 fit 16-bit priorities", rules.len())))?;
        let pkts: Vec<AclPacket> = packets.into_iter().map(|(src, dst, sport, dport, proto)| AclPacket { src, dst, sport, dport, proto }).collect();
        let keys = pkts.iter().map(|p| p.key()).collect();
        Ok(AclBench { c, rules, pkts, keys })
    }

    /// Rules in the classifier (one per ACL rule).
    fn n_rules(&self) -> usize {
        self.c.len()
    }

    /// Rule index per packet (-1: none), from batched lookups.
    fn answers(&self, py: Python<'_>) -> Vec<i64> {
        py.detach(|| {
            let mut out = vec![None; self.keys.len()];
            self.c.lookup_batch(&self.keys, &mut out);
            out.iter().map(|r| r.map_or(-1, |(_, id)| i64::from(id))).collect()
        })
    }

    /// Let batched lookups use the AVX-512 tree walk when the CPU has it
    /// (`on`), or force the scalar walk; the trees are rebuilt on the next
    /// lookup.
    fn set_simd(&mut self, on: bool) {
        self.c.set_simd(on);
    }

    /// Whether the built trees are walked with AVX-512 (after `answers`).
    fn uses_simd(&self) -> bool {
        self.c.uses_simd()
    }

    /// Rule index per packet (-1: none) by a linear scan of the rules.
    fn reference(&self, py: Python<'_>) -> Vec<i64> {
        py.detach(|| self.pkts.iter().map(|p| acl::first_match(&self.rules, p).map_or(-1, |i| i as i64)).collect())
    }

    /// `rounds` passes of batched lookups over the trace: (wall seconds,
    /// CPU seconds of this thread or None).
    fn time(&self, py: Python<'_>, rounds: usize) -> (f64, Option<f64>) {
        py.detach(|| {
            let mut out = vec![None; self.keys.len()];
            let c0 = thread_cpu_secs();
            let t0 = Instant::now();
            for _ in 0..rounds {
                self.c.lookup_batch(&self.keys, &mut out);
            }
            let secs = t0.elapsed().as_secs_f64();
            std::hint::black_box(&out);
            (secs, thread_cpu_secs().zip(c0).map(|(b, a)| b - a))
        })
    }

    /// (size in 16-byte units, dimensions, max depth, subtables left to
    /// tuple space, rules in trees) of the decision trees, once built (after
    /// `answers`).
    fn tree_stats(&self) -> Option<(usize, usize, u32, usize, usize)> {
        let (n, d, depth, rest) = self.c.tree_stats()?;
        Some((n, d, depth, rest, self.c.tree_rules()?))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AclBench>()?;
    Ok(())
}
