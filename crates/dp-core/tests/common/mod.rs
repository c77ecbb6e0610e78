//! Helpers the pipeline tests share: a small UDP frame and a switch with ports 1-4.

use dp_core::pipeline::*;

pub fn udp(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    dp_core::checksum::ipv4_header_fix(&mut f, 14, 20);
    f.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

pub fn switch(n_tables: usize) -> Pipeline {
    let mut p = Pipeline::new(n_tables);
    for port in 1..=4 {
        p.add_port(port);
    }
    p
}
