//! The MAC learning table behind `output:NORMAL`, as Open vSwitch 3.1 keeps it
//! (`lib/mac-learning.c`, `lib/heap.c`).
//!
//! One entry per (VLAN, MAC): the port the MAC was last seen on and when it
//! expires, `idle_time` seconds (default 300; set within 15..=3600) after it was
//! last learned. Time is whole seconds of the caller's clock (OVS's `time_now()`;
//! the pipeline passes its modelled time).
//! - `learn` is `mac_learning_update`: a multicast source is never learned; an
//!   entry is refreshed (expiry pushed back, made most recently used in the table
//!   and in its port's list) when it is new, when it is at least one second old,
//!   when the packet is a gratuitous ARP, or when it moves to another port; an
//!   entry refreshed in the same second from the same port is left alone.
//! - A new entry in a full table (`max_entries`, default 8192; set within
//!   10..=1,000,000) first evicts one, "fairly": the least recently used entry of
//!   the port holding the most entries. Ties between ports are broken as OVS's
//!   binary heap of ports by entry count breaks them, so that heap is kept here
//!   node for node (`Heap`).
//! - `lookup` of a multicast address finds nothing; an entry past its expiry
//!   still answers until `expire` runs (OVS's `mac_learning_run`, which also
//!   trims a table above `max_entries`, least recently used first).
//!
//! State: the entries, the global LRU order, one LRU order per port, the heap.
//! Cost: O(log n) per learn (ordered maps), O(1) per lookup.

use std::collections::{BTreeMap, HashMap};

/// Open vSwitch's defaults (`MAC_ENTRY_DEFAULT_IDLE_TIME`, `MAC_DEFAULT_MAX`).
pub const DEFAULT_IDLE_TIME: u32 = 300;
pub const DEFAULT_MAX_ENTRIES: usize = 8192;

type Key = (u16, u64); // (VLAN, MAC)

#[derive(Debug, Clone)]
struct Entry {
    port: u32,
    expires: i64,
    /// Position in the table's LRU order and in its port's (fresh numbers on each move to the back).
    lru: u64,
    port_lru: u64,
}

/// One row of `MacTable::entries`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacEntry {
    pub port: u32,
    pub vlan: u16,
    pub mac: u64,
    /// Seconds since the entry was last learned (OVS's `mac_entry_age`).
    pub age: i64,
}

/// OVS's `lib/heap.c` max-heap of ports by entry count, 1-based, with the same
/// float-up / float-down moves so that `max()` names the port OVS would.
#[derive(Debug, Clone, Default)]
struct Heap {
    nodes: Vec<(u32, u64)>, // (port, count); index 0 unused
    idx: HashMap<u32, usize>,
}

impl Heap {
    fn n(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }
    fn put(&mut self, node: (u32, u64), i: usize) {
        self.idx.insert(node.0, i);
        self.nodes[i] = node;
    }
    fn swap(&mut self, i: usize, j: usize) {
        let (a, b) = (self.nodes[i], self.nodes[j]);
        self.put(b, i);
        self.put(a, j);
    }
    fn float_up(&mut self, mut i: usize) -> bool {
        let mut moved = false;
        while i > 1 {
            let parent = i / 2;
            if self.nodes[parent].1 >= self.nodes[i].1 {
                break;
            }
            self.swap(parent, i);
            moved = true;
            i = parent;
        }
        moved
    }
    fn float_down(&mut self, mut i: usize) {
        let n = self.n();
        while 2 * i <= n {
            let (left, right) = (2 * i, 2 * i + 1);
            let mut max = i;
            if self.nodes[left].1 > self.nodes[max].1 {
                max = left;
            }
            if right <= n && self.nodes[right].1 > self.nodes[max].1 {
                max = right;
            }
            if max == i {
                break;
            }
            self.swap(max, i);
            i = max;
        }
    }
    fn float_up_or_down(&mut self, i: usize) {
        if !self.float_up(i) {
            self.float_down(i);
        }
    }
    fn insert(&mut self, port: u32, count: u64) {
        if self.nodes.is_empty() {
            self.nodes.push((0, 0));
        }
        self.nodes.push((port, count));
        let i = self.n();
        self.idx.insert(port, i);
        self.float_up(i);
    }
    fn remove(&mut self, port: u32) {
        let Some(i) = self.idx.remove(&port) else { return };
        let n = self.n();
        if i < n {
            let last = self.nodes[n];
            self.put(last, i);
        }
        self.nodes.pop();
        if i <= self.n() {
            self.float_up_or_down(i);
        }
    }
    fn change(&mut self, port: u32, count: u64) {
        if let Some(&i) = self.idx.get(&port) {
            self.nodes[i].1 = count;
            self.float_up_or_down(i);
        }
    }
    fn count(&self, port: u32) -> Option<u64> {
        self.idx.get(&port).map(|&i| self.nodes[i].1)
    }
    fn max(&self) -> Option<u32> {
        self.nodes.get(1).map(|n| n.0)
    }
}

#[derive(Debug, Clone)]
pub struct MacTable {
    entries: HashMap<Key, Entry>,
    lrus: BTreeMap<u64, Key>,
    port_lrus: HashMap<u32, BTreeMap<u64, Key>>,
    by_usage: Heap,
    seq: u64,
    idle_time: u32,
    max_entries: usize,
}

impl Default for MacTable {
    fn default() -> Self {
        MacTable {
            entries: HashMap::new(),
            lrus: BTreeMap::new(),
            port_lrus: HashMap::new(),
            by_usage: Heap::default(),
            seq: 0,
            idle_time: DEFAULT_IDLE_TIME,
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }
}

/// Group bit of the first octet (OVS's `eth_addr_is_multicast`; broadcast included).
pub fn is_multicast(mac: u64) -> bool {
    (mac >> 40) & 1 == 1
}

/// OVS's `eth_addr_is_reserved`: destinations NORMAL drops (unless the bridge
/// forwards BPDUs): 01:80:c2:00:00:00-0f, Extreme's EDP/EAPS, Cisco's ISL,
/// PAgP/CDP/VTP, PVST+, STP Uplink Fast and CFM addresses.
pub fn is_reserved(mac: u64) -> bool {
    (0x0180_c200_0000..=0x0180_c200_000f).contains(&mac)
        || matches!(mac, 0x00e0_2b00_0000 | 0x00e0_2b00_0004 | 0x00e0_2b00_0006 | 0x0100_0c00_0000 | 0x0100_0ccc_cccc | 0x0100_0ccc_cccd | 0x0100_0ccd_cdcd)
        || (0x0100_0ccc_ccc0..=0x0100_0ccc_ccc7).contains(&mac)
}

impl MacTable {
    pub fn idle_time(&self) -> u32 {
        self.idle_time
    }
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// OVS's `mac_learning_set_idle_time`: clamped to 15..=3600; existing entries'
    /// expiries move by the difference.
    pub fn set_idle_time(&mut self, idle_time: u32) {
        let t = idle_time.clamp(15, 3600);
        let delta = i64::from(t) - i64::from(self.idle_time);
        for e in self.entries.values_mut() {
            e.expires += delta;
        }
        self.idle_time = t;
    }

    /// OVS's `mac_learning_set_max_entries`: clamped to 10..=1,000,000 (a smaller
    /// table is trimmed by the next `expire`).
    pub fn set_max_entries(&mut self, n: usize) {
        self.max_entries = n.clamp(10, 1_000_000);
    }

    /// The port `mac` was learned on in `vlan` (none for a multicast address).
    pub fn lookup(&self, mac: u64, vlan: u16) -> Option<u32> {
        if is_multicast(mac) {
            return None;
        }
        self.entries.get(&(vlan, mac)).map(|e| e.port)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// `mac_learning_update` for a frame from `mac` in `vlan` on `port` at second
    /// `now` (`grat_arp`: a gratuitous ARP, which always refreshes). True if the
    /// table changed port for the MAC (or learned it).
    pub fn learn(&mut self, mac: u64, vlan: u16, port: u32, grat_arp: bool, now: i64) -> bool {
        if is_multicast(mac) {
            return false;
        }
        let key = (vlan, mac);
        if let Some(e) = self.entries.get(&key) {
            let age = i64::from(self.idle_time) - (e.expires - now);
            if age == 0 && !grat_arp && e.port == port {
                return false;
            }
        }
        // mac_learning_insert
        let new = !self.entries.contains_key(&key);
        if new && self.entries.len() >= self.max_entries {
            self.evict_fairly();
        }
        let lru = self.next_seq();
        let expires = now + i64::from(self.idle_time);
        let moved = match self.entries.get_mut(&key) {
            Some(e) => {
                let (old_lru, old_port_lru, old_port) = (e.lru, e.port_lru, e.port);
                e.lru = lru;
                e.expires = expires;
                self.lrus.remove(&old_lru);
                self.lrus.insert(lru, key);
                let plru = self.next_seq();
                let list = self.port_lrus.get_mut(&old_port).expect("a port's LRU list");
                list.remove(&old_port_lru);
                list.insert(plru, key);
                self.entries.get_mut(&key).unwrap().port_lru = plru;
                old_port != port
            }
            None => {
                self.entries.insert(key, Entry { port, expires, lru, port_lru: 0 });
                self.lrus.insert(lru, key);
                self.attach(key, port);
                false
            }
        };
        if moved {
            self.detach(key);
            self.attach(key, port);
        }
        new || moved
    }

    /// `mac_entry_set_port`'s second half: `key` at the back of `port`'s list.
    fn attach(&mut self, key: Key, port: u32) {
        let plru = self.next_seq();
        let e = self.entries.get_mut(&key).expect("entry");
        e.port = port;
        e.port_lru = plru;
        self.port_lrus.entry(port).or_default().insert(plru, key);
        match self.by_usage.count(port) {
            None => self.by_usage.insert(port, 1),
            Some(c) => self.by_usage.change(port, c + 1),
        }
    }

    /// `mac_entry_set_port`'s first half: `key` out of its port's list.
    fn detach(&mut self, key: Key) {
        let e = &self.entries[&key];
        let (port, plru) = (e.port, e.port_lru);
        let list = self.port_lrus.get_mut(&port).expect("a port's LRU list");
        list.remove(&plru);
        if list.is_empty() {
            self.port_lrus.remove(&port);
            self.by_usage.remove(port);
        } else {
            let c = self.by_usage.count(port).unwrap_or(1);
            self.by_usage.change(port, c - 1);
        }
    }

    fn remove(&mut self, key: Key) {
        self.detach(key);
        if let Some(e) = self.entries.remove(&key) {
            self.lrus.remove(&e.lru);
        }
    }

    /// `evict_mac_entry_fairly`: the LRU entry of the port at the heap's top.
    fn evict_fairly(&mut self) {
        let Some(port) = self.by_usage.max() else { return };
        if let Some(&key) = self.port_lrus.get(&port).and_then(|l| l.values().next()) {
            self.remove(key);
        }
    }

    /// `mac_learning_run` at second `now`: least recently used entries go while the
    /// table is above `max_entries` or they have expired. The number removed.
    pub fn expire(&mut self, now: i64) -> usize {
        let mut n = 0;
        while let Some((_, &key)) = self.lrus.iter().next() {
            if self.entries.len() > self.max_entries || now >= self.entries[&key].expires {
                self.remove(key);
                n += 1;
            } else {
                break;
            }
        }
        n
    }

    /// The earliest expiry (None: empty table).
    pub fn next_expiry(&self) -> Option<i64> {
        self.lrus.values().next().map(|k| self.entries[k].expires)
    }

    /// Forget every entry learned on `port` (OVS flushes a bundle's MACs when it goes).
    pub fn flush_port(&mut self, port: u32) {
        let keys: Vec<Key> = self.port_lrus.get(&port).map(|l| l.values().copied().collect()).unwrap_or_default();
        for k in keys {
            self.remove(k);
        }
    }

    pub fn flush(&mut self) {
        *self = MacTable { idle_time: self.idle_time, max_entries: self.max_entries, ..Default::default() };
    }

    /// Every entry, least recently used first (as `ovs-appctl fdb/show` lists them), at second `now`.
    pub fn entries(&self, now: i64) -> Vec<MacEntry> {
        self.lrus
            .values()
            .map(|k| {
                let e = &self.entries[k];
                MacEntry { port: e.port, vlan: k.0, mac: k.1, age: i64::from(self.idle_time) - (e.expires - now) }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0x0200_0000_000a;
    const B: u64 = 0x0200_0000_000b;

    #[test]
    fn learns_moves_and_ignores_multicast_sources() {
        let mut t = MacTable::default();
        assert!(t.learn(A, 0, 1, false, 100));
        assert_eq!(t.lookup(A, 0), Some(1));
        assert_eq!(t.lookup(A, 5), None, "per VLAN");
        assert!(!t.learn(A, 0, 1, false, 100), "same second, same port: no change");
        assert!(t.learn(A, 0, 2, false, 100), "a move is learned at once");
        assert_eq!(t.lookup(A, 0), Some(2));
        assert!(!t.learn(0x0100_5e00_0001, 0, 1, false, 100));
        assert!(t.is_empty() == false && t.len() == 1);
        assert_eq!(t.lookup(0xffff_ffff_ffff, 0), None);
    }

    #[test]
    fn ages_out_in_whole_seconds() {
        let mut t = MacTable::default();
        t.set_idle_time(1); // clamped to 15
        assert_eq!(t.idle_time(), 15);
        t.learn(A, 0, 1, false, 10);
        t.learn(B, 0, 1, false, 20);
        assert_eq!(t.expire(24), 0);
        assert_eq!(t.expire(25), 1, "A learned at 10 expires at 25");
        assert_eq!(t.lookup(A, 0), None);
        t.learn(B, 0, 1, false, 30); // refreshed: expires at 45
        assert_eq!(t.expire(44), 0);
        assert_eq!(t.expire(45), 1);
    }

    #[test]
    fn a_full_table_evicts_the_busiest_ports_oldest_entry() {
        let mut t = MacTable::default();
        t.set_max_entries(3); // clamped to 10
        for i in 0..7 {
            t.learn(0x0200_0000_0100 + i, 0, 1, false, 0);
        }
        for i in 0..3 {
            t.learn(0x0200_0000_0200 + i, 0, 2, false, 0);
        }
        assert_eq!(t.len(), 10);
        t.learn(0x0200_0000_0300, 0, 3, false, 0);
        assert_eq!(t.len(), 10);
        assert_eq!(t.lookup(0x0200_0000_0100, 0), None, "port 1's oldest went");
        assert_eq!(t.lookup(0x0200_0000_0200, 0), Some(2));
    }

    #[test]
    fn heap_ties_follow_ovs_order() {
        // Two ports of equal count: the heap's root is the one inserted first.
        let mut h = Heap::default();
        h.insert(7, 1);
        h.insert(9, 1);
        assert_eq!(h.max(), Some(7));
        h.change(9, 2);
        assert_eq!(h.max(), Some(9));
        h.change(7, 2); // equal again: 9 stays on top (float_up needs a strictly larger count)
        assert_eq!(h.max(), Some(9));
        h.remove(9);
        assert_eq!(h.max(), Some(7));
    }
}
