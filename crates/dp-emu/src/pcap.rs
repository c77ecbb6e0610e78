//! pcap files: a writer for per-port capture (nanosecond timestamps, magic
//! 0xa1b23c4d, link type Ethernet) and a reader for replay (µs or ns, either
//! byte order). Errors name the file and the byte offset.

use crate::clock::{Ps, PS_PER_NS};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

pub struct PcapWriter {
    out: BufWriter<File>,
    pub frames: u64,
}

impl PcapWriter {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&65535u32.to_le_bytes())?;
        out.write_all(&1u32.to_le_bytes())?; // LINKTYPE_ETHERNET
        Ok(PcapWriter { out, frames: 0 })
    }

    pub fn write(&mut self, at: Ps, frame: &[u8]) -> std::io::Result<()> {
        let ns = at / PS_PER_NS;
        self.out.write_all(&((ns / 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&((ns % 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&(frame.len() as u32).to_le_bytes())?;
        self.out.write_all(&(frame.len() as u32).to_le_bytes())?;
        self.out.write_all(frame)?;
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
pub fn read_pcap(path: &Path) -> Result<Vec<PcapRecord>, String> {
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    parse_pcap(&data).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse_pcap(data: &[u8]) -> Result<Vec<PcapRecord>, String> {
    if data.len() < 24 {
        return Err(format!("not a pcap file: {} bytes is shorter than the 24-byte header", data.len()));
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
    let mut out = Vec::new();
    let mut off = 24;
    let mut first: Option<u64> = None;
    while off < data.len() {
        if off + 16 > data.len() {
            return Err(format!("truncated record header at byte {off}"));
        }
        let sec = rd(off) as u64;
        let frac = rd(off + 4) as u64;
        let incl = rd(off + 8) as usize;
        if off + 16 + incl > data.len() {
            return Err(format!("record at byte {off} claims {incl} bytes but the file ends"));
        }
        let ps = sec * 1_000_000_000_000 + if ns { frac * 1_000 } else { frac * 1_000_000 };
        let base = *first.get_or_insert(ps);
        out.push(PcapRecord { at: ps.saturating_sub(base), frame: data[off + 16..off + 16 + incl].to_vec() });
        off += 16 + incl;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn garbage_is_rejected_with_offset() {
        assert!(parse_pcap(&[0u8; 30]).unwrap_err().contains("bad magic"));
        let mut d = vec![];
        d.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
        d.extend_from_slice(&[0u8; 16]);
        d.extend_from_slice(&1u32.to_le_bytes());
        d.extend_from_slice(&[0u8; 10]);
        assert!(parse_pcap(&d).unwrap_err().contains("byte 24"));
    }
}
