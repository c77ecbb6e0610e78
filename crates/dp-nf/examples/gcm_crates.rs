//! The measurement behind the SECGW's AES-GCM crate: `ring` against RustCrypto
//! `aes-gcm`, AES-128-GCM decrypt (verify + decrypt in place) of 1,400-byte
//! buffers, one thread, median of 5 runs of 100,000 buffers each, side by side.
//! Both crates pick their AES-NI / CLMUL code at run time (no target-cpu flags).
//!
//!   cargo run --release -p dp-nf --example gcm_crates

use aes_gcm::{AeadInOut, Aes128Gcm, KeyInit};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let (n, len) = (100_000usize, 1400usize);
    let key = [7u8; 16];
    let nonce = [1u8; 12];
    let aad = [9u8; 8];
    let rk = ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(&ring::aead::AES_128_GCM, &key).unwrap());
    let mut ct = vec![3u8; len];
    let tag = rk.seal_in_place_separate_tag(ring::aead::Nonce::assume_unique_for_key(nonce), ring::aead::Aad::from(aad), &mut ct).unwrap();
    let mut sealed = ct.clone();
    sealed.extend_from_slice(tag.as_ref());
    let rc = Aes128Gcm::new(&key.into());
    let (mut r, mut a) = (vec![], vec![]);
    let mut buf = Vec::with_capacity(len + 16);
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            buf.clear();
            buf.extend_from_slice(&sealed);
            rk.open_in_place(ring::aead::Nonce::assume_unique_for_key(nonce), ring::aead::Aad::from(aad), &mut buf).unwrap();
        }
        r.push((n * len * 8) as f64 / t.elapsed().as_secs_f64() / 1e9);
        let t = Instant::now();
        for _ in 0..n {
            buf.clear();
            buf.extend_from_slice(&ct);
            rc.decrypt_inout_detached(&nonce.into(), &aad, buf.as_mut_slice().into(), tag.as_ref().try_into().unwrap()).unwrap();
        }
        a.push((n * len * 8) as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    let (r, a) = (median(r), median(a));
    println!("AES-128-GCM decrypt, 1400 B, one thread, median of 5:");
    println!("  ring {:.2} Gbps   aes-gcm {:.2} Gbps   ring/aes-gcm {:.2}x", r, a, r / a);
}
