//! pcap files: a writer for per-port capture (nanosecond timestamps, magic
//! 0xa1b23c4d, link type Ethernet) and a reader for replay (µs or ns, either
//! byte order). Reader errors name the file, the record (counted from 1, as
//! Wireshark numbers frames) and its byte offset; nothing in a file can panic it.

use crate::clock::{Ps, PS_PER_NS};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

pub struct PcapWriter {
    out: BufWriter<File>,
    pub frames: u64,
    /// Bytes of each frame kept (the rest is cut; the record keeps the frame's real length).
    snaplen: u32,
    /// Largest file size in bytes; frames that would pass it are counted in `skipped`, not written.
    limit: u64,
    written: u64,
    pub skipped: u64,
}

impl PcapWriter {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Self::create_limited(path, 65535, u64::MAX)
    }

    /// A writer that keeps the first `snaplen` bytes of each frame and stops writing
    /// frames (counting them in `skipped`) once the file would grow past `limit` bytes.
    pub fn create_limited(path: &Path, snaplen: u32, limit: u64) -> std::io::Result<Self> {
        let snaplen = snaplen.max(1);
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&1u32.to_le_bytes())?; // LINKTYPE_ETHERNET
        Ok(PcapWriter { out, frames: 0, snaplen, limit, written: 24, skipped: 0 })
    }

    pub fn write(&mut self, at: Ps, frame: &[u8]) -> std::io::Result<()> {
        let ns = at / PS_PER_NS;
        let kept = &frame[..frame.len().min(self.snaplen as usize)];
        let size = 16 + kept.len() as u64;
        if self.written.saturating_add(size) > self.limit {
            self.skipped += 1;
            return Ok(());
        }
        self.out.write_all(&((ns / 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&((ns % 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&(kept.len() as u32).to_le_bytes())?;
        self.out.write_all(&(frame.len() as u32).to_le_bytes())?;
        self.out.write_all(kept)?;
        self.written += size;
        self.frames += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// One captured frame: time since the first record, and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapRecord {
    pub at: Ps,
    pub frame: Vec<u8>,
}

/// Read every record of a pcap file; timestamps are made relative to the first.
/// Errors start with the file name.
pub fn read_pcap(path: &Path) -> Result<Vec<PcapRecord>, String> {
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse_pcap(&data).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parse a classic pcap file (µs or ns timestamps, either byte order, Ethernet
/// link type). Records count from 1, as Wireshark numbers frames; an error
/// names the record and its byte offset. Times must not go backwards.
pub fn parse_pcap(data: &[u8]) -> Result<Vec<PcapRecord>, String> {
    if data.len() >= 4 && data[0..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        return Err("a pcapng file, not pcap: convert it with `editcap -F pcap IN OUT`".to_string());
    }
    if data.len() < 24 {
        return Err(format!("not a pcap file: {} bytes is shorter than the 24-byte file header", data.len()));
    }
    let magic_le = u32::from_le_bytes(data[0..4].try_into().unwrap());
    let magic_be = u32::from_be_bytes(data[0..4].try_into().unwrap());
    let (le, ns) = match (magic_le, magic_be) {
        (0xa1b2_c3d4, _) => (true, false),
        (0xa1b2_3c4d, _) => (true, true),
        (_, 0xa1b2_c3d4) => (false, false),
        (_, 0xa1b2_3c4d) => (false, true),
        _ => return Err(format!("not a pcap file: bad magic {magic_le:#010x} at byte 0")),
    };
    let rd = |at: usize| -> u32 {
        let b: [u8; 4] = data[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let linktype = rd(20);
    if linktype != 1 {
        return Err(format!("link type {linktype} at byte 20 is not Ethernet (1)"));
    }
    let ps_per_tick: i128 = if ns { 1_000 } else { 1_000_000 };
    let mut out: Vec<PcapRecord> = Vec::new();
    let mut off = 24;
    let mut first: Option<i128> = None;
    while off < data.len() {
        let n = out.len() + 1;
        if off + 16 > data.len() {
            return Err(format!("record {n} at byte {off}: truncated header ({} of 16 bytes)", data.len() - off));
        }
        let incl = rd(off + 8) as usize;
        if incl > data.len() - off - 16 {
            return Err(format!(
                "record {n} at byte {off}: claims {incl} bytes but only {} remain (truncated file)",
                data.len() - off - 16
            ));
        }
        // whole picoseconds since the epoch need more than 64 bits: work relative to the first record
        let ps = rd(off) as i128 * 1_000_000_000_000 + rd(off + 4) as i128 * ps_per_tick;
        let rel = ps - *first.get_or_insert(ps);
        let prev = out.last().map_or(0, |r| r.at as i128);
        if rel < prev {
            return Err(format!(
                "record {n} at byte {off}: timestamp is {} ns before record {}'s; replay needs records in time order (sort with `reordercap`)",
                (prev - rel) / 1_000,
                n - 1
            ));
        }
        let at = Ps::try_from(rel).map_err(|_| format!("record {n} at byte {off}: more than 213 days after the first record (the clock's range)"))?;
        out.push(PcapRecord { at, frame: data[off + 16..off + 16 + incl].to_vec() });
        off += 16 + incl;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snaplen_cuts_frames_and_limit_stops_the_file() {
        let dir = std::env::temp_dir().join(format!("dp-emu-pcap-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.pcap");
        // header 24 + two records of 16 + 64 = 184 bytes; the third would pass 200
        let mut w = PcapWriter::create_limited(&path, 64, 200).unwrap();
        for i in 0..3u64 {
            w.write(i * PS_PER_NS, &[7u8; 1500]).unwrap();
        }
        w.flush().unwrap();
        assert_eq!((w.frames, w.skipped), (2, 1));
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 184);
        assert_eq!(u32::from_le_bytes(data[16..20].try_into().unwrap()), 64); // header snaplen
        assert_eq!(u32::from_le_bytes(data[24 + 8..24 + 12].try_into().unwrap()), 64); // incl_len
        assert_eq!(u32::from_le_bytes(data[24 + 12..24 + 16].try_into().unwrap()), 1500); // orig_len
        let recs = parse_pcap(&data).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].frame.len(), 64);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn write_then_read_round_trips() {
        let dir = std::env::temp_dir().join(format!("dp-emu-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.pcap");
        let mut w = PcapWriter::create(&p).unwrap();
        w.write(5_000_000, &[1, 2, 3]).unwrap();
        w.write(7_500_000, &[4; 60]).unwrap();
        w.flush().unwrap();
        drop(w);
        let recs = read_pcap(&p).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0], PcapRecord { at: 0, frame: vec![1, 2, 3] });
        assert_eq!(recs[1].at, 2_500_000);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A µs-resolution file (magic a1b2c3d4) in the given byte order with (sec, µs, frame) records.
    fn usec_file(big_endian: bool, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let w = |d: &mut Vec<u8>, x: u32| d.extend_from_slice(&if big_endian { x.to_be_bytes() } else { x.to_le_bytes() });
        let mut d = vec![];
        w(&mut d, 0xa1b2_c3d4);
        d.extend_from_slice(&if big_endian { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
        for x in [0, 0, 65535, 1] {
            w(&mut d, x);
        }
        for (sec, usec, frame) in recs {
            for x in [*sec, *usec, frame.len() as u32, frame.len() as u32] {
                w(&mut d, x);
            }
            d.extend_from_slice(frame);
        }
        d
    }

    #[test]
    fn epoch_timestamps_in_either_byte_order_keep_their_gaps() {
        let t0 = 1_700_000_000; // real captures carry wall-clock seconds: ps since 1970 overflow u64
        for be in [false, true] {
            let d = usec_file(be, &[(t0, 999_999, b"a"), (t0 + 1, 2, b"bb"), (t0 + 1, 2, b"c")]);
            let recs = parse_pcap(&d).unwrap();
            let at: Vec<Ps> = recs.iter().map(|r| r.at).collect();
            assert_eq!(at, vec![0, 3_000_000, 3_000_000]);
            assert_eq!(recs[1].frame, b"bb");
        }
    }

    #[test]
    fn bad_files_are_rejected_naming_the_record() {
        assert!(parse_pcap(&[0u8; 30]).unwrap_err().contains("bad magic"));
        assert!(parse_pcap(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0]).unwrap_err().contains("pcapng"));
        assert!(parse_pcap(&[0xd4, 0xc3, 0xb2, 0xa1]).unwrap_err().contains("shorter than the 24-byte"));
        let good = usec_file(false, &[(5, 0, &[1; 60]), (5, 10, &[2; 60])]);
        let e = parse_pcap(&good[..good.len() - 70]).unwrap_err();
        assert!(e.contains("record 2 at byte 100: truncated header (6 of 16 bytes)"), "{e}");
        let e = parse_pcap(&good[..good.len() - 1]).unwrap_err();
        assert!(e.contains("record 2 at byte 100: claims 60 bytes but only 59 remain"), "{e}");
        let back = usec_file(false, &[(5, 10, b"x"), (5, 20, b"y"), (5, 15, b"z")]);
        let e = parse_pcap(&back).unwrap_err();
        assert!(e.contains("record 3 at byte 58: timestamp is 5000 ns before record 2's"), "{e}");
        let mut other_link = good.clone();
        other_link[20] = 101;
        assert!(parse_pcap(&other_link).unwrap_err().contains("link type 101"));
    }
}
