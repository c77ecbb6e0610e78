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
/// pkt_mark's bits in key word `PKT_MARK_WORD`.
const MARK_BITS: u64 = 0xffff_ffff << 32;
use crate::field::PKT_MARK_WORD;

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
    /// Per in_port (< 65536): the generation it was computed in and, when
    /// the rules decide the whole path of *every* frame entering that port
    /// from in_port alone, that path (see `port_path`).
    pub(super) memo: Vec<(u32, Option<Path>)>,
}

/// Rule count up to which `port_path` scans the tables (a scan is
/// O(rules), once per input port and rule change).
const PORT_PATH_MAX_RULES: usize = 4096;

/// What `forward_fast` learnt before declining a packet, for
/// `process_missed`.
pub struct Missed(pub(super) Probe);

/// What the fast path did with the path cache, handed to the full walk.
pub(super) enum Probe {
    /// Nothing (the walk probes the cache itself, if it is on).
    None,
    /// The gate turned the cache off for this packet: the walk neither
    /// probes nor records it (and costs no more than with the cache off).
    Bypass,
    /// Probed with the walk's key: the hit, if any, and the key's hash.
    Made { hit: Option<Path>, hash: u64 },
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
            p.memo.clear();
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
        self.forward_fast_marked(data, 0, in_port)
    }

    /// `forward_fast` for a packet that arrives with a packet mark (e.g.
    /// OneSwitch's flow id on a PCIe port; 0 for none): the cache key gets the
    /// mark's bits, as the full walk's key does. On `Ok` the frame leaves unchanged
    /// with the same mark (a cached `End::Output` path sets nothing).
    #[inline(always)]
    pub fn forward_fast_marked(&mut self, data: &[u8], mark: u32, in_port: u32) -> Result<u32, Missed> {
        // the checks that decline most packets when the cache is off or
        // bypassed, inline (no call, no frame set-up); the probe out of line
        if self.paths.stale {
            self.refresh_paths();
        }
        if !self.paths.enabled || self.paths.any_pof || self.tracing() {
            return Err(Missed(Probe::None));
        }
        if !self.paths.gate.admit(self.paths.cache.hits, self.paths.cache.fills) {
            return Err(Missed(Probe::Bypass));
        }
        self.forward_fast_probe(data, mark, in_port)
    }

    /// `forward_fast_marked` once the cache is in use: build the key, probe.
    #[inline(never)]
    fn forward_fast_probe(&mut self, data: &[u8], mark: u32, in_port: u32) -> Result<u32, Missed> {
        let mut key = [0u64; crate::field::KEY_WORDS];
        if !fast_base_key(data, in_port, &mut key) {
            return Err(Missed(Probe::None));
        }
        key[crate::field::PKT_MARK_WORD] |= u64::from(mark) << 32;
        let (hit, hash) = self.paths.cache.get(&key, self.paths.gen);
        let Some(path @ Path { end: End::Output(port), .. }) = hit else {
            return Err(Missed(Probe::Made { hit, hash }));
        };
        self.count_forward(&path, in_port, port, data.len() as u64, data.len() as u64);
        Ok(port)
    }

    /// `forward_fast` for a caller that owns the frame: also takes cached
    /// paths that end by pushing or popping the outer tag (a tagged hand-off
    /// between switches and its delivery), rewriting `data` in place as the full walk
    /// would. On `Err` the frame is untouched.
    #[inline]
    pub fn forward_fast_mut(&mut self, data: &mut Vec<u8>, in_port: u32) -> Result<u32, Missed> {
        self.forward_fast_mut_inner(data, in_port, false).map(|(port, _)| port)
    }

    /// `forward_fast_mut` that also takes cached paths ending in a packet-mark
    /// hand-off (`End::MarkOutput`): Ok((port, mark the frame leaves with)).
    #[inline]
    pub fn forward_fast_mut_marking(&mut self, data: &mut Vec<u8>, in_port: u32) -> Result<(u32, u32), Missed> {
        self.forward_fast_mut_inner(data, in_port, true)
    }

    #[inline(always)]
    fn forward_fast_mut_inner(&mut self, data: &mut Vec<u8>, in_port: u32, marking: bool) -> Result<(u32, u32), Missed> {
        if self.paths.stale {
            self.refresh_paths();
        }
        if !self.paths.enabled || self.paths.any_pof || self.tracing() {
            return Err(Missed(Probe::None));
        }
        if let Some(port) = self.forward_port_only(data, in_port) {
            return Ok((port, 0));
        }
        if !self.paths.gate.admit(self.paths.cache.hits, self.paths.cache.fills) {
            return Err(Missed(Probe::Bypass));
        }
        let mut key = [0u64; crate::field::KEY_WORDS];
        if !fast_base_key(data, in_port, &mut key) {
            return Err(Missed(Probe::None));
        }
        let (hit, hash) = self.paths.cache.get(&key, self.paths.gen);
        let Some(path) = hit else {
            return Err(Missed(Probe::Made { hit, hash }));
        };
        let mut mark = 0;
        let port = match path.end {
            End::Output(port) => port,
            End::MarkOutput { mark: m, port } if marking => {
                mark = m;
                port
            }
            // push_vlan drops the innermost tag when the frame already has
            // MAX_VLANS: leave that rare case to the full walk.
            // (the tags are counted only for the ends that need them)
            End::TagOutput { port, .. } if outer_tags(data) < crate::parse::MAX_VLANS => port,
            End::PopOutput(port) if outer_tags(data) > 0 => port,
            _ => return Err(Missed(Probe::Made { hit, hash })),
        };
        let rx_bytes = data.len() as u64;
        match path.end {
            End::TagOutput { tpid, vid, .. } => {
                let mut tag = [0u8; 4];
                tag[..2].copy_from_slice(&tpid.to_be_bytes());
                tag[2..].copy_from_slice(&vid.to_be_bytes());
                data.splice(12..12, tag);
            }
            End::PopOutput(_) => {
                data.drain(12..16);
            }
            _ => {}
        }
        self.count_forward(&path, in_port, port, rx_bytes, data.len() as u64);
        Ok((port, mark))
    }

    /// Forward a frame whose whole path the rules decide from in_port alone
    /// (`port_path`): no key, no probe; counters as the full walk keeps them.
    /// Exact only when a frame's content cannot drop it: with
    /// `drop_malformed` off (malformed frames are matched on what parsed, as
    /// Open vSwitch does) and not a runt. None: nothing happened.
    /// (The refusals are checked inline: with `drop_malformed`, the default,
    /// every frame is refused here, and a call would cost more than the check.)
    #[inline(always)]
    pub fn forward_port_only(&mut self, data: &[u8], in_port: u32) -> Option<u32> {
        if self.drop_malformed || data.len() < 14 || !self.paths.enabled || self.paths.any_pof || self.tracing() {
            return None;
        }
        if self.has_timers() {
            return None; // (a timed rule's use needs the packet's time, which this path has not)
        }
        self.forward_port_only_admitted(data, in_port)
    }

    #[inline]
    fn forward_port_only_admitted(&mut self, data: &[u8], in_port: u32) -> Option<u32> {
        if self.paths.stale {
            self.refresh_paths();
            if self.paths.any_pof {
                return None;
            }
        }
        let path = self.port_path(in_port)?;
        let End::Output(port) = path.end else { return None };
        self.count_forward(&path, in_port, port, data.len() as u64, data.len() as u64);
        Some(port)
    }

    /// The path every frame entering `in_port` with no packet mark takes, when
    /// the rules decide it from in_port alone: in each table on the way the
    /// highest-priority rule that can match in_port (and a mark of 0) is
    /// unique, matches nothing but in_port (and pkt_mark=0),
    /// and only goes on (goto, no metadata) or outputs to another existing
    /// port. Memoised per port and rule generation.
    #[inline]
    fn port_path(&mut self, in_port: u32) -> Option<Path> {
        let i = in_port as usize;
        if i >= 1 << 16 {
            return None;
        }
        if let Some(&(gen, path)) = self.paths.memo.get(i) {
            if gen == self.paths.gen {
                return path;
            }
        }
        let path = if self.rules.len() <= PORT_PATH_MAX_RULES { self.scan_port_path(in_port) } else { None };
        if self.paths.memo.len() <= i {
            self.paths.memo.resize(i + 1, (0, None));
        }
        self.paths.memo[i] = (self.paths.gen, path);
        path
    }

    fn scan_port_path(&self, in_port: u32) -> Option<Path> {
        let want = u64::from(in_port) << 32;
        let mut path = Path::default();
        let mut table = 0u8;
        loop {
            // (priority, rule id, matches in_port only), best first; ties are ambiguous.
            let mut best: Option<(u16, u32, bool)> = None;
            let mut tie = false;
            for (id, st) in self.rules.iter().enumerate() {
                let Some(st) = st else { continue };
                if st.rule.table != table {
                    continue;
                }
                let m0 = st.mask[0] & IN_PORT_BITS;
                if st.value[0] & m0 != want & m0 {
                    continue;
                }
                // the frames this path is for carry no packet mark: a rule that needs
                // one cannot match them, and one that needs pkt_mark=0 always does
                let mark = st.mask[PKT_MARK_WORD] & MARK_BITS;
                if st.value[PKT_MARK_WORD] & mark != 0 {
                    continue;
                }
                let only_port = st.mask[0] & !IN_PORT_BITS == 0
                    && st.mask[1..].iter().enumerate().all(|(i, &w)| if i + 1 == PKT_MARK_WORD { w & !MARK_BITS == 0 } else { w == 0 });
                let prio = st.rule.priority;
                match best {
                    Some((p, _, _)) if p > prio => {}
                    Some((p, _, _)) if p == prio => tie = true,
                    _ => {
                        best = Some((prio, id as u32, only_port));
                        tie = false;
                    }
                }
            }
            let (_, id, only_port) = best?;
            if tie || !only_port || !path.push(table, Some(id)) {
                return None;
            }
            match self.hot[id as usize].fast {
                Fast::Goto { table: g, metadata: None } if g > table => table = g,
                Fast::Output(port) if port != in_port && self.has_port(port) => {
                    path.end = End::Output(port);
                    return Some(path);
                }
                _ => return None,
            }
        }
    }

    /// Every counter a fast-forwarded frame touches, as the full walk keeps
    /// them: rx on `in_port`, the path's table and rule counters (by the
    /// received size), tx on `port` (by the size that left).
    #[inline(always)]
    fn count_forward(&mut self, path: &Path, in_port: u32, port: u32, rx_bytes: u64, tx_bytes: u64) {
        if let Some(c) = self.port_counters_mut(in_port) {
            c.rx_packets += 1;
            c.rx_bytes += rx_bytes;
        }
        self.count_path(path, rx_bytes);
        if let Some(c) = self.port_counters_mut(port) {
            c.tx_packets += 1;
            c.tx_bytes += tx_bytes;
        }
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
    pub(super) fn run_cached(&mut self, ctx: &mut Ctx, out: &mut Vec<Fate>, probe: Probe) {
        if self.paths.stale {
            self.refresh_paths();
        }
        if self.paths.any_pof {
            return self.run_tables(ctx, out, None, None);
        }
        // The fast path's probe was made with the same key (`fast_base_key`
        // equals the full parse's key whenever it accepts a frame).
        let (hit, h) = match probe {
            Probe::Bypass => return self.run_tables(ctx, out, None, None),
            Probe::Made { hit, hash } => (hit, hash),
            Probe::None if !self.paths.gate.admit(self.paths.cache.hits, self.paths.cache.fills) => return self.run_tables(ctx, out, None, None),
            Probe::None => self.paths.cache.get(&ctx.base, self.paths.gen),
        };
        match hit {
            Some(path) => match path.end {
                End::Output(port) => {
                    self.count_path(&path, ctx.data.len() as u64);
                    out.push(Fate::Output { port, packet: Packet::marked(std::mem::take(&mut ctx.data), ctx.mark) });
                }
                End::MarkOutput { mark, port } => {
                    self.count_path(&path, ctx.data.len() as u64);
                    out.push(Fate::Output { port, packet: Packet::marked(std::mem::take(&mut ctx.data), mark) });
                }
                _ => self.run_tables(ctx, out, Some(&path), None),
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
                Fast::TagOutput { tpid, vid, port } if i + 1 == n && port != in_port && self.has_port(port) => {
                    return End::TagOutput { tpid, vid, port }
                }
                Fast::PopOutput(port) if i + 1 == n && port != in_port && self.has_port(port) => return End::PopOutput(port),
                Fast::MarkOutput { mark, port } if i + 1 == n && port != in_port && self.has_port(port) => {
                    return End::MarkOutput { mark, port }
                }
                _ => return End::Replay,
            }
        }
        End::Replay
    }

}

/// VLAN tags (802.1Q or 802.1ad) at the front of an Ethernet frame, up to MAX_VLANS + 1.
#[inline]
fn outer_tags(data: &[u8]) -> usize {
    use crate::parse::{ETH_TYPE_QINQ, ETH_TYPE_VLAN};
    let mut n = 0;
    let mut off = 12;
    while n <= crate::parse::MAX_VLANS && data.len() >= off + 6 {
        let t = u16::from_be_bytes([data[off], data[off + 1]]);
        if t != ETH_TYPE_VLAN && t != ETH_TYPE_QINQ {
            break;
        }
        n += 1;
        off += 4;
    }
    n
}
