//! The pipeline's fast paths: the whole-pipeline path cache (`pathcache`)
//! and what keeps it exact. `forward_fast` builds the key straight from the
//! frame and, on a cached "write-metadata/goto ... output" path, forwards
//! with counters only; `run_cached` drives the full walk behind the cache
//! (replaying known lookups, or recording a new path when every lookup on
//! it saw the ingress key). Every rule, group or port change bumps the
//! cache's generation.
//! State: `Paths` (the cache, its generation and key mask). Cost: one key
//! build + one probe per packet; O(1) per rule change.

use super::*;

/// in_port's bits in key word 0.
const IN_PORT_BITS: u64 = 0xffff_ffff << 32;

/// The whole-pipeline cache and what keeps it valid.
pub(super) struct Paths {
    pub(super) cache: PathCache,
    /// Bypasses the cache while its hit rate is too low to pay (many
    /// distinct flows); a bypassed packet is neither probed nor recorded.
    pub(super) gate: crate::cachegate::Gate,
    pub(super) enabled: bool,
    /// Bumped by every rule, group or port change (0 is never current).
    pub(super) gen: u32,
    /// Union of the masks of all rules ever added (metadata excluded: it
    /// starts at 0), plus in_port.
    pub(super) union: Key,
    /// A rule was removed: recompute `any_pof` before the next packet.
    pub(super) stale: bool,
    /// Some table matches on POF fields: bypass the cache (their slots are
    /// filled per table from the frame, not from the ingress key).
    pub(super) any_pof: bool,
}

/// What `forward_fast` learnt before declining a packet (its path-cache
/// probe, if it made one), for `process_missed`.
pub struct Missed(pub(super) Option<Probe>);

/// A path-cache probe made by the fast path, handed to the full walk.
pub(super) struct Probe {
    pub(super) hit: Option<Path>,
    pub(super) hash: u64,
    /// The gate turned the cache off for this packet: do not record it.
    pub(super) bypass: bool,
}

/// A path being recorded during a full walk; `ok` turns false when the
/// path cannot be cached (too long, or a lookup saw a rewritten frame).
pub(super) struct Recorder {
    pub(super) path: Path,
    pub(super) ok: bool,
}

impl Pipeline {
    /// Forget every cached path (any change to rules, groups or ports).
    pub(super) fn invalidate_paths(&mut self) {
        let p = &mut self.paths;
        p.gen = p.gen.wrapping_add(1);
        if p.gen == 0 {
            // Wrapped: entries of an old generation 1.. could look current.
            p.cache = PathCache::default();
            p.cache.reshape(&p.union);
            p.gen = 1;
        }
    }

    /// A rule with `mask` was added: widen the cache key. The key always
    /// holds in_port, on which outputs depend even when no rule matches it.
    pub(super) fn paths_rule_added(&mut self, mask: &Key) {
        self.invalidate_paths();
        let p = &mut self.paths;
        let mut changed = p.union[0] & IN_PORT_BITS != IN_PORT_BITS;
        p.union[0] |= IN_PORT_BITS;
        for (w, m) in mask.iter().enumerate() {
            if w != 1 && p.union[w] | m != p.union[w] {
                p.union[w] |= m;
                changed = true;
            }
        }
        p.any_pof |= mask[crate::field::KEY_WORDS - 2 * POF_SLOTS..].iter().any(|&m| m != 0);
        if changed {
            p.cache.reshape(&p.union);
        }
    }

    /// After rules were removed: is the cache still bypassed for POF fields?
    /// (The key's union mask is not narrowed: a wider key is still exact,
    /// and narrowing would cost a scan of every rule.)
    pub(super) fn refresh_paths(&mut self) {
        self.paths.any_pof = self.tables.iter().any(|t| t.pof.iter().any(|e| e.is_some()));
        self.paths.stale = false;
    }

    /// The fast path, for callers that mostly forward: a frame of a common
    /// shape (`fast_base_key`) whose cached path ends in a plain output
    /// leaves unchanged on the returned port, with no parse into `Headers`,
    /// no instruction run and every counter updated as the full walk would.
    /// Otherwise nothing has happened to the packet yet: hand it, with the
    /// returned `Missed`, to `process_missed`.
    #[inline]
    pub fn forward_fast(&mut self, data: &[u8], in_port: u32) -> Result<u32, Missed> {
        if self.paths.stale {
            self.refresh_paths();
        }
        if !self.paths.enabled || self.paths.any_pof || self.tracing() {
            return Err(Missed(None));
        }
        if !self.paths.gate.admit(self.paths.cache.hits) {
            return Err(Missed(Some(Probe { hit: None, hash: 0, bypass: true })));
        }
        let mut key = [0u64; crate::field::KEY_WORDS];
        if !fast_base_key(data, in_port, &mut key) {
            return Err(Missed(None));
        }
        let (hit, hash) = self.paths.cache.get(&key, self.paths.gen);
        let Some(path @ Path { end: End::Output(port), .. }) = hit else {
            return Err(Missed(Some(Probe { hit, hash, bypass: false })));
        };
        let bytes = data.len() as u64;
        if let Some(c) = self.port_counters_mut(in_port) {
            c.rx_packets += 1;
            c.rx_bytes += bytes;
        }
        self.count_path(&path, bytes);
        if let Some(c) = self.port_counters_mut(port) {
            c.tx_packets += 1;
            c.tx_bytes += bytes;
        }
        Ok(port)
    }

    /// Table and rule counters of a cached path's lookups, as if the tables had run.
    #[inline(always)]
    fn count_path(&mut self, path: &Path, bytes: u64) {
        for i in 0..path.len() {
            let (t, rule) = path.step(i);
            let t = &mut self.tables[t as usize];
            t.lookups += 1;
            t.matched += 1;
            if let Some(id) = rule {
                let s = &mut self.stats[id as usize];
                s.packets += 1;
                s.bytes += bytes;
            }
        }
    }

    /// The packet's walk through the tables behind the path cache: a hit
    /// outputs at once (`End::Output`) or replays the known lookups; a miss
    /// walks the tables and records the path when it is cacheable.
    pub(super) fn run_cached(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>, probe: Option<Probe>) {
        if self.paths.stale {
            self.refresh_paths();
        }
        if self.paths.any_pof {
            return self.run_tables(ctx, out, None, None);
        }
        // The fast path's probe was made with the same key (`fast_base_key`
        // equals the full parse's key whenever it accepts a frame).
        let (hit, h) = match probe {
            Some(Probe { bypass: true, .. }) => return self.run_tables(ctx, out, None, None),
            Some(Probe { hit, hash, .. }) => (hit, hash),
            None if !self.paths.gate.admit(self.paths.cache.hits) => return self.run_tables(ctx, out, None, None),
            None => self.paths.cache.get(&ctx.base, self.paths.gen),
        };
        match hit {
            Some(path) => match path.end {
                End::Output(port) => {
                    self.count_path(&path, ctx.data.len() as u64);
                    out.push(Fate::Output { port, packet: Packet::new(std::mem::take(&mut ctx.data)) });
                }
                End::Replay => self.run_tables(ctx, out, Some(&path), None),
            },
            None => {
                let key = ctx.base;
                let mut rec = Recorder { path: Path::default(), ok: true };
                self.run_tables(ctx, out, None, Some(&mut rec));
                if rec.ok && !rec.path.is_empty() {
                    rec.path.end = self.path_end(&rec.path, ctx.in_port);
                    self.paths.cache.put(&key, self.paths.gen, h, &rec.path);
                }
            }
        }
    }

    /// `End::Output(port)` when every rule of `path` but the last only writes
    /// metadata and goes on and the last only outputs to an existing port
    /// other than `in_port` (exactly the fast cases of `run_tables`).
    fn path_end(&self, path: &Path, in_port: u32) -> End {
        let n = path.len();
        for i in 0..n {
            let Some(id) = path.step(i).1 else { return End::Replay };
            match self.hot[id as usize].fast {
                Fast::Goto { .. } if i + 1 < n => {}
                Fast::Output(port) if i + 1 == n && port != in_port && self.has_port(port) => return End::Output(port),
                _ => return End::Replay,
            }
        }
        End::Replay
    }

}
