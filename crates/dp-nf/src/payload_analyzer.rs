//! Payload analyzer — string and regular-expression matching on packet
//! payloads (SmartChain Table I).
//!
//! Ports: bump in the wire. Each pattern is a literal `string` (all strings
//! compiled into one `aho-corasick` automaton, one leftmost-first pass per
//! payload, so a string inside an earlier, overlapping match is not seen) or a
//! `regex` (a small backtracking engine: literals, `.`, classes `[a-z0-9_]`
//! and `[^…]`, escapes `\d \w \s \.` …, quantifiers `* + ?`, anchors `^ $`).
//! A packet that matches a pattern with `action: drop` is dropped
//! (`payload_match`); `count` patterns only count. Per flow it remembers which
//! patterns have matched, so each pattern is reported once per flow
//! (`flows_matched:<name>`), while `hits:<name>` counts packets.
//! State, per flow: a 64-bit matched-pattern set and packet count. Shared: none.
//! Cost profile: per packet one automaton pass over the payload (≈1 cycle/B)
//! plus each regex (worst case quadratic in the payload; keep them anchored
//! or short).
//! Per device kind: host code speed is what `tandem bench nfs` measures; the
//! emulator charges the scenario's profile per device — preset smartchain.payload_analyzer (SmartChain Table I).
//! Fields: reads ipv4_src/dst, ip_proto, tcp/udp ports, payload; writes none;
//! drops (drop patterns).

use crate::pkt::{self, Counters};
use crate::state::{FastMap, FlowKey, Reader, Stateful, Writer};
use crate::{other_port, Fields, NetworkFunction, NfVerdict, StateError};
use aho_corasick::AhoCorasick;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternConfig {
    pub name: String,
    pub string: Option<String>,
    pub regex: Option<String>,
    #[serde(default = "count")]
    pub action: String,
}
fn count() -> String {
    "count".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalyzerConfig {
    pub patterns: Vec<PatternConfig>,
}

// ------------------------------------------------------------ mini regex

#[derive(Debug, Clone, PartialEq)]
enum Atom {
    Any,
    Byte(u8),
    Class(Box<[bool; 256]>, bool),
}

#[derive(Debug, Clone, PartialEq)]
struct Piece {
    atom: Atom,
    min: u8,
    many: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Regex {
    start: bool,
    end: bool,
    pieces: Vec<Piece>,
}

fn class_escape(c: u8, set: &mut [bool; 256]) -> bool {
    match c {
        b'd' => (b'0'..=b'9').for_each(|x| set[x as usize] = true),
        b'w' => (0..=255u8).filter(|x| x.is_ascii_alphanumeric() || *x == b'_').for_each(|x| set[x as usize] = true),
        b's' => b" \t\r\n\x0b\x0c".iter().for_each(|x| set[*x as usize] = true),
        _ => return false,
    }
    true
}

impl Regex {
    pub fn new(p: &str) -> Result<Regex, String> {
        let b = p.as_bytes();
        let mut i = 0;
        let mut r = Regex { start: false, end: false, pieces: vec![] };
        if b.first() == Some(&b'^') {
            r.start = true;
            i = 1;
        }
        while i < b.len() {
            let c = b[i];
            let atom = match c {
                b'$' if i == b.len() - 1 => {
                    r.end = true;
                    i += 1;
                    continue;
                }
                b'.' => Atom::Any,
                b'\\' => {
                    i += 1;
                    let e = *b.get(i).ok_or("trailing backslash")?;
                    let mut set = Box::new([false; 256]);
                    if class_escape(e, &mut set) {
                        Atom::Class(set, false)
                    } else {
                        Atom::Byte(match e {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            x if x.is_ascii_alphanumeric() => return Err(format!("unsupported escape \\{}", x as char)),
                            x => x,
                        })
                    }
                }
                b'[' => {
                    let mut set = Box::new([false; 256]);
                    i += 1;
                    let neg = b.get(i) == Some(&b'^');
                    if neg {
                        i += 1;
                    }
                    let mut first = true;
                    loop {
                        let Some(&x) = b.get(i) else { return Err("unclosed [".into()) };
                        if x == b']' && !first {
                            break;
                        }
                        first = false;
                        if x == b'\\' {
                            i += 1;
                            let e = *b.get(i).ok_or("trailing backslash")?;
                            if !class_escape(e, &mut set) {
                                set[e as usize] = true;
                            }
                        } else if b.get(i + 1) == Some(&b'-') && b.get(i + 2).is_some_and(|&y| y != b']') {
                            let y = b[i + 2];
                            if y < x {
                                return Err(format!("bad range {}-{}", x as char, y as char));
                            }
                            (x..=y).for_each(|z| set[z as usize] = true);
                            i += 2;
                        } else {
                            set[x as usize] = true;
                        }
                        i += 1;
                    }
                    Atom::Class(set, neg)
                }
                b'*' | b'+' | b'?' => return Err(format!("quantifier {} with nothing to repeat at {i}", c as char)),
                b'(' | b')' | b'|' | b'{' => return Err(format!("{} is not supported (literals, ., [], \\d\\w\\s, * + ?, ^ $)", c as char)),
                x => Atom::Byte(x),
            };
            i += 1;
            let (min, many) = match b.get(i) {
                Some(b'*') => (0, true),
                Some(b'+') => (1, true),
                Some(b'?') => (0, false),
                _ => (1, false),
            };
            if matches!(b.get(i), Some(b'*' | b'+' | b'?')) {
                i += 1;
                if min == 1 && !many {
                    unreachable!()
                }
                r.pieces.push(Piece { atom, min, many });
                if matches!(b.get(i), Some(b'*' | b'+' | b'?')) {
                    return Err(format!("double quantifier at {i}"));
                }
            } else {
                r.pieces.push(Piece { atom, min: 1, many: false });
            }
        }
        // "x?" is min 0, max 1
        Ok(r)
    }

    fn one(a: &Atom, c: u8) -> bool {
        match a {
            Atom::Any => true,
            Atom::Byte(b) => *b == c,
            Atom::Class(s, neg) => s[c as usize] != *neg,
        }
    }

    fn at(&self, pi: usize, s: &[u8], i: usize) -> bool {
        if pi == self.pieces.len() {
            return !self.end || i == s.len();
        }
        let p = &self.pieces[pi];
        let max = if p.many { s.len() - i } else { 1.min(s.len() - i) };
        let mut n = 0;
        while n < max && Self::one(&p.atom, s[i + n]) {
            n += 1;
        }
        if !p.many && p.min == 1 {
            return n == 1 && self.at(pi + 1, s, i + 1);
        }
        let mut k = n as isize;
        while k >= p.min as isize {
            if self.at(pi + 1, s, i + k as usize) {
                return true;
            }
            k -= 1;
        }
        false
    }

    pub fn is_match(&self, s: &[u8]) -> bool {
        if self.start {
            return self.at(0, s, 0);
        }
        (0..=s.len()).any(|i| self.at(0, s, i))
    }
}

// ------------------------------------------------------------ NF

const C: &[&str] = &["packets", "inspected", "matched", "dropped", "not_ipv4"];

pub struct PayloadAnalyzer {
    ports: u8,
    names: Vec<String>,
    drop: Vec<bool>,
    ac: Option<AhoCorasick>,
    ac_pat: Vec<usize>,
    regexes: Vec<(usize, Regex)>,
    pub flows: FastMap<FlowKey, (u64, u64)>,
    hits: Vec<u64>,
    flows_matched: Vec<u64>,
    pub counters: Counters,
}

impl PayloadAnalyzer {
    pub fn new(ports: u8, c: AnalyzerConfig) -> Result<Self, String> {
        if c.patterns.len() > 64 {
            return Err(format!("patterns: {} given, at most 64", c.patterns.len()));
        }
        let (mut strs, mut ac_pat, mut regexes, mut names, mut drop) = (vec![], vec![], vec![], vec![], vec![]);
        for (i, p) in c.patterns.iter().enumerate() {
            let at = format!("patterns[{i}]");
            match (&p.string, &p.regex) {
                (Some(s), None) if !s.is_empty() => {
                    strs.push(s.clone());
                    ac_pat.push(i);
                }
                (None, Some(r)) => regexes.push((i, Regex::new(r).map_err(|e| format!("{at}.regex: {e}"))?)),
                _ => return Err(format!("{at}: give exactly one of a non-empty string or regex")),
            }
            drop.push(match p.action.as_str() {
                "count" => false,
                "drop" => true,
                a => return Err(format!("{at}.action: {a:?} must be count or drop")),
            });
            names.push(p.name.clone());
        }
        let ac = if strs.is_empty() { None } else { Some(AhoCorasick::new(&strs).map_err(|e| e.to_string())?) };
        let n = names.len();
        Ok(PayloadAnalyzer { ports, names, drop, ac, ac_pat, regexes, flows: FastMap::default(), hits: vec![0; n], flows_matched: vec![0; n], counters: Counters::new(C) })
    }
}

impl NetworkFunction for PayloadAnalyzer {
    crate::nf_methods!();
    fn process(&mut self, f: &mut Vec<u8>, in_port: u8, _now: u64) -> NfVerdict {
        self.counters.inc(0);
        let out = NfVerdict::Forward { port: other_port(self.ports, in_port) };
        let Some(p) = pkt::parse(f) else {
            self.counters.inc(4);
            return out;
        };
        let pl = p.payload(f);
        let e = self.flows.entry(p.key).or_insert((0, 0));
        e.1 += 1;
        if pl.is_empty() {
            return out;
        }
        self.counters.inc(1);
        let mut m = 0u64;
        if let Some(ac) = &self.ac {
            for x in ac.find_iter(pl) {
                m |= 1 << self.ac_pat[x.pattern().as_usize()];
            }
        }
        for (i, r) in &self.regexes {
            if r.is_match(pl) {
                m |= 1 << i;
            }
        }
        if m == 0 {
            return out;
        }
        let new = m & !e.0;
        e.0 |= m;
        self.counters.inc(2);
        let mut d = false;
        for i in 0..self.names.len() {
            if m >> i & 1 == 1 {
                self.hits[i] += 1;
                d |= self.drop[i];
                if new >> i & 1 == 1 {
                    self.flows_matched[i] += 1;
                }
            }
        }
        if d {
            self.counters.inc(3);
            return NfVerdict::Drop { reason: "payload_match" };
        }
        out
    }
    fn fields(&self) -> Fields {
        Fields { reads: &["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "payload"], writes: &[], drops: true, reencapsulates: false }
    }
    fn counters(&self) -> Vec<(String, u64)> {
        let mut v = self.counters.list();
        for (i, n) in self.names.iter().enumerate() {
            v.push((format!("hits:{n}"), self.hits[i]));
            v.push((format!("flows_matched:{n}"), self.flows_matched[i]));
        }
        v
    }
    fn flow_count(&self) -> usize {
        self.flows.len()
    }
    crate::state_methods!();
}

impl Stateful for PayloadAnalyzer {
    const KIND: &'static str = "payload_analyzer";
    const VERSION: u16 = 1;
    type Flow = (u64, u64);
    type Shared = ();
    crate::each_flow_of!(flows);
    fn write_flow(&self, w: &mut Writer, v: &(u64, u64)) {
        w.var(v.0);
        w.var(v.1);
    }
    fn read_flow(&self, r: &mut Reader) -> Result<(u64, u64), StateError> {
        let m = r.var("matched set")?;
        if self.names.len() < 64 && m >> self.names.len() != 0 {
            return Err(r.err(&format!("matched set names pattern {} but only {} are configured", 63 - m.leading_zeros(), self.names.len())));
        }
        Ok((m, r.var("packets")?))
    }
    fn write_shared(&self, _w: &mut Writer) {}
    fn read_shared(&self, _r: &mut Reader) -> Result<(), StateError> {
        Ok(())
    }
    fn install(&mut self, flows: Vec<(FlowKey, (u64, u64))>, _s: Option<()>, replace: bool) {
        if replace {
            self.flows.clear();
        }
        self.flows.extend(flows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::testpkt::udp;

    #[test]
    fn regex_engine() {
        let ok = |p: &str, s: &str| Regex::new(p).unwrap().is_match(s.as_bytes());
        assert!(ok("a.c", "xxabcx"));
        assert!(ok("^GET /[a-z]+\\.php", "GET /index.php?x"));
        assert!(!ok("^GET /[a-z]+\\.php", " GET /index.php"));
        assert!(ok("\\d\\d\\d-\\d+$", "call 555-1234"));
        assert!(!ok("\\d\\d\\d-\\d+$", "call 555-1234 now"));
        assert!(ok("colou?r", "color"));
        assert!(ok("colou?r", "colour"));
        assert!(ok("[^a-z]x", "Ax"));
        assert!(!ok("[^a-z]x", "ax"));
        assert!(ok("a*b", "b"));
        assert!(Regex::new("(a|b)").unwrap_err().contains("not supported"));
        assert!(Regex::new("*a").unwrap_err().contains("nothing to repeat"));
    }

    #[test]
    fn matches_counts_and_drops() {
        let c: AnalyzerConfig = serde_json::from_str(
            r#"{"patterns":[{"name":"pw","string":"password="},{"name":"sqli","regex":"[Uu][Nn][Ii][Oo][Nn] +[Ss][Ee][Ll][Ee][Cc][Tt]","action":"drop"}]}"#,
        )
        .unwrap();
        let mut pa = PayloadAnalyzer::new(2, c).unwrap();
        assert!(matches!(pa.process(&mut udp(1, 2, 3, 4, b"user=a&password=b"), 0, 0), NfVerdict::Forward { .. }));
        assert!(matches!(pa.process(&mut udp(1, 2, 3, 4, b"password=c"), 0, 0), NfVerdict::Forward { .. }));
        assert_eq!(pa.process(&mut udp(1, 2, 3, 4, b"id=1 UNION  select *"), 0, 0), NfVerdict::Drop { reason: "payload_match" });
        let c = pa.counters();
        assert!(c.contains(&("hits:pw".into(), 2)) && c.contains(&("flows_matched:pw".into(), 1)) && c.contains(&("hits:sqli".into(), 1)));
    }
}
