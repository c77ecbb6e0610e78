//! Wall-clock speed of the NF code itself (not the emulator's modelled time):
//! the loops `tandem bench nfs` runs. Each measurement runs the NF on one
//! thread over pre-built frames (a fresh copy of each frame per packet, as a
//! NIC would DMA it), `reps` times, and reports every repetition so the caller
//! takes the median. No I/O.

use crate::samples::{self, configs, udp_sized};
use crate::state::FlowFilter;
use crate::{make_nf_config, NetworkFunction};
use std::time::Instant;

fn cfg(kind: &str) -> String {
    configs().into_iter().find(|(k, _)| *k == kind).map(|(_, c)| c).unwrap()
}

const ENC_IN: &str = r#"{"sas":[{"spi":4098,"dir":"out","cipher":"CIPHER","key":"KEY","local":"192.0.2.2","remote":"192.0.2.1"}]}"#;
const DEC: &str = r#"{"sas":[{"spi":4098,"dir":"in","cipher":"CIPHER","key":"KEY","local":"192.0.2.1","remote":"192.0.2.2","replay_window":1024}]}"#;

fn key(cipher: &str) -> &'static str {
    if cipher == "aes256gcm" {
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fdeadbeef"
    } else {
        "000102030405060708090a0b0c0d0e0fdeadbeef"
    }
}

/// ESP frames of exactly `frame_len` bytes, inner packets from `inner`.
fn esp_frames(cipher: &str, frame_len: usize, n: usize, inner: &dyn Fn(usize, usize) -> Vec<u8>) -> Vec<Vec<u8>> {
    let mut enc = make_nf_config("secgw", 2, &ENC_IN.replace("CIPHER", cipher).replace("KEY", key(cipher))).unwrap();
    // ESP overhead: outer IP 20 + ESP 8 + IV 8 + trailer 2 + ICV 16 (+ padding)
    let inner_len = frame_len - 14 - 20 - 16 - 2 - 16;
    let inner_len = inner_len - (inner_len + 2) % 4;
    (0..n)
        .map(|i| {
            let mut f = inner(i, inner_len + 14);
            enc.process(&mut f, 0, 0);
            f.resize(frame_len, 0); // Ethernet padding up to the exact size (ignored by the parser)
            f
        })
        .collect()
}

/// CPU time this thread has run, in ns (`CLOCK_THREAD_CPUTIME_ID`), so a busy
/// machine's figures can be compared with `openssl speed`, which divides by CPU
/// time by default. `None` where unavailable.
pub fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: valid pointer to a timespec; the clock id is a constant.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
    }
    None
}

/// Run `nf` over `frames` (cycled) for `packets` packets; returns seconds.
fn time_nf(nf: &mut dyn NetworkFunction, frames: &[Vec<u8>], packets: usize) -> f64 {
    let mut buf = Vec::with_capacity(2048);
    let t = Instant::now();
    let mut ok = 0usize;
    for i in 0..packets {
        let f = &frames[i % frames.len()];
        buf.clear();
        buf.extend_from_slice(f);
        if let crate::NfVerdict::Forward { .. } = nf.process(&mut buf, 0, i as u64 * 200_000) {
            ok += 1;
        }
    }
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(ok);
    s
}

/// SECGW decrypt (optionally followed by L7FW) at `frame_len`: Gbps of ESP
/// frame bytes per repetition. Every packet is fresh (unique sequence number),
/// so anti-replay and ICV checks run on each. Frames are produced by an
/// encrypting SECGW in untimed batches of 512 (so they sit in cache, as frames
/// a NIC just wrote do) and each batch is decrypted under the clock.
/// Each repetition gives (wall Gbps, CPU-time Gbps; 0 when CPU time is unavailable).
pub fn secgw_decrypt(cipher: &str, frame_len: usize, packets: usize, reps: usize, with_l7fw: bool) -> Result<Vec<(f64, f64)>, String> {
    let inner = |i: usize, len: usize| {
        if i % 64 == 0 {
            // a flow's first data packet carries an HTTP request
            let mut p = crate::l7fw::payloads::http_get("www.site.example", "GET");
            p.resize(len - 54, b' ');
            samples::tcp(0x0a00_0002 + (i / 64) as u32 % 200, 0x0a00_0101, 30000 + (i / 64 % 200) as u16, 80, 0x18, 1, &p)
        } else {
            samples::tcp(0x0a00_0002 + (i / 64) as u32 % 200, 0x0a00_0101, 30000 + (i / 64 % 200) as u16, 80, 0x10, 1 + i as u32 * 1000, &vec![0x41; len - 54])
        }
    };
    let enc_cfg = ENC_IN.replace("CIPHER", cipher).replace("KEY", key(cipher));
    let dec_cfg = DEC.replace("CIPHER", cipher).replace("KEY", key(cipher));
    let inner_len = frame_len - 14 - 20 - 16 - 2 - 16;
    let inner_len = inner_len - (inner_len + 2) % 4;
    let plain: Vec<Vec<u8>> = (0..4096).map(|i| inner(i, inner_len + 14)).collect();
    let batch = 512;
    let mut out = vec![];
    for _ in 0..reps {
        let mut enc = make_nf_config("secgw", 2, &enc_cfg)?;
        let mut dec = make_nf_config("secgw", 2, &dec_cfg)?;
        let mut fw = make_nf_config("l7fw", 2, &cfg("l7fw"))?;
        let mut frames: Vec<Vec<u8>> = vec![Vec::with_capacity(2048); batch];
        let mut buf = Vec::with_capacity(2048);
        let mut ok = 0usize;
        let mut secs = 0.0;
        let mut cpu_ns = 0u64;
        let mut done = 0usize;
        while done < packets {
            for (j, f) in frames.iter_mut().enumerate() {
                f.clear();
                f.extend_from_slice(&plain[(done + j) % plain.len()]);
                enc.process(f, 0, 0);
                f.resize(frame_len, 0);
            }
            let c0 = thread_cpu_ns();
            let t = Instant::now();
            for f in &frames {
                buf.clear();
                buf.extend_from_slice(f);
                if let crate::NfVerdict::Forward { .. } = dec.process(&mut buf, 1, 0) {
                    if !with_l7fw || matches!(fw.process(&mut buf, 0, 0), crate::NfVerdict::Forward { .. }) {
                        ok += 1;
                    }
                }
            }
            secs += t.elapsed().as_secs_f64();
            if let (Some(a), Some(b)) = (c0, thread_cpu_ns()) {
                cpu_ns += b.saturating_sub(a);
            }
            done += batch;
        }
        if ok != done {
            return Err(format!("secgw bench: only {ok} of {done} packets forwarded"));
        }
        let bits = (frame_len * done * 8) as f64;
        out.push((bits / secs / 1e9, if cpu_ns > 0 { bits / cpu_ns as f64 } else { 0.0 }));
    }
    Ok(out)
}

/// SECGW encrypt at `frame_len` (inner frame size): Gbps of inner bytes.
pub fn secgw_encrypt(cipher: &str, frame_len: usize, packets: usize, reps: usize) -> Result<Vec<f64>, String> {
    let frames: Vec<Vec<u8>> = (0..1024).map(|i| udp_sized(i, frame_len)).collect();
    let c = ENC_IN.replace("CIPHER", cipher).replace("KEY", key(cipher)).replace("192.0.2.2\",\"remote\":\"192.0.2.1", "192.0.2.1\",\"remote\":\"192.0.2.2");
    let mut out = vec![];
    for _ in 0..reps {
        let mut nf = make_nf_config("secgw", 2, &c)?;
        let s = time_nf(nf.as_mut(), &frames, packets);
        out.push((frame_len * packets * 8) as f64 / s / 1e9);
    }
    Ok(out)
}

/// The frame the speed loops feed `kind` for flow `flow`: 64-byte UDP, aimed
/// so the NF does its real work (the LB's VIP; a payload the alert rules and
/// the payload analyzer's automaton look at).
fn bench_frame(kind: &str, flow: u32, len: usize) -> Vec<u8> {
    let pl = len.max(60) - 42;
    match kind {
        "maglev_lb" => samples::udp(0x0a00_0000 | (flow & 0xffff) | 0x1_0000, 0x0a00_0064, 1024 + (flow % 50000) as u16, 80, &vec![0x5a; pl]),
        "alert" => {
            let mut p = b"..EVIL..".to_vec();
            p.resize(pl, b'.');
            samples::udp(0x0a00_0000 | (flow & 0xffff), 0x0a00_0001, 1024 + (flow % 50000) as u16, 53, &p)
        }
        _ => udp_sized(flow, len),
    }
}

/// Bench configuration: the samples', except the logger reports every 100 ms
/// (the samples' 50 µs interval exists to make short tests report).
fn bench_cfg(kind: &str) -> String {
    if kind == "logger" {
        r#"{"interval_ms":100}"#.into()
    } else {
        cfg(kind)
    }
}

/// One NF at `frame_len`-byte frames over `flows` flows: Mpps per repetition.
/// Packet times advance 200 ns per packet (5 Mpps line rate).
pub fn nf_mpps(kind: &str, frame_len: usize, flows: u32, packets: usize, reps: usize) -> Result<Vec<f64>, String> {
    let frames: Vec<Vec<u8>> = (0..flows.max(1) * 4).map(|i| bench_frame(kind, i % flows.max(1), frame_len)).collect();
    let mut out = vec![];
    for _ in 0..reps {
        let mut nf = make_nf_config(kind, 2, &bench_cfg(kind))?;
        // warm the flow state once, then time
        time_nf(nf.as_mut(), &frames, frames.len());
        let s = time_nf(nf.as_mut(), &frames, packets);
        out.push(packets as f64 / s / 1e6);
    }
    Ok(out)
}

/// Result of the state-move measurement for one NF.
#[derive(Debug, Clone)]
pub struct StateMove {
    /// Seconds for export + import of all flows, per repetition.
    pub seconds: Vec<f64>,
    pub flows: usize,
    /// Bytes of the per-flow part of the blob, divided by the flow count.
    pub bytes_per_flow: f64,
    /// Bytes of the shared (multi-flow) part.
    pub shared_bytes: usize,
}

/// Populate `flows` flows, then time `export_state` + `import_state` into a
/// fresh instance.
pub fn state_move(kind: &str, flows: usize, reps: usize) -> Result<StateMove, String> {
    let config = if kind == "secgw" { DEC.replace("CIPHER", "aes128gcm").replace("KEY", key("aes128gcm")) } else { cfg(kind) };
    let mut nf = make_nf_config(kind, 2, &config)?;
    match kind {
        "secgw" => {
            // one SA pair is all the state a SECGW has: drive it
            let frames = esp_frames("aes128gcm", 200, 64, &|i, l| udp_sized(i as u32, l));
            time_nf(nf.as_mut(), &frames, frames.len());
        }
        "l7fw" => {
            for (i, (p, t, f)) in samples::mixed_trace(5, flows as u32, flows * 12).into_iter().enumerate() {
                let _ = i;
                nf.process(&mut f.clone(), p, t);
            }
        }
        "asset_monitor" => {
            for i in 0..flows as u32 {
                nf.process(&mut samples::tcp(0x0a00_0000 + i, 0x0b00_0000 + i, 1000, 80, 0x02, 1, b""), 0, i as u64);
            }
        }
        "monitor" => {
            for i in 0..flows as u32 {
                nf.process(&mut udp_sized(i, 1400), 0, 0);
                for _ in 0..2 {
                    nf.process(&mut udp_sized(i, 1400), 0, 0);
                }
            }
        }
        _ => {
            for i in 0..flows as u32 {
                nf.process(&mut bench_frame(kind, i, 64), 0, i as u64 * 1000);
            }
        }
    }
    let n = nf.flow_count();
    let per_flow = nf.export_flows(&FlowFilter::all(), false).len();
    let empty = make_nf_config(kind, 2, &config)?.export_flows(&FlowFilter::all(), false).len();
    let full = nf.export_state().len();
    let mut seconds = vec![];
    for _ in 0..reps {
        let mut fresh = make_nf_config(kind, 2, &config)?;
        let t = Instant::now();
        let blob = nf.export_state();
        fresh.import_state(&blob).map_err(|e| e.0)?;
        seconds.push(t.elapsed().as_secs_f64());
        if fresh.flow_count() != n {
            return Err(format!("{kind}: imported {} flows of {n}", fresh.flow_count()));
        }
    }
    Ok(StateMove { seconds, flows: n, bytes_per_flow: (per_flow - empty) as f64 / n.max(1) as f64, shared_bytes: full - per_flow })
}
