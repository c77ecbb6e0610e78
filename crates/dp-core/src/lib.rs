//! dp-core — Tandem's data-plane core: packets, header parsing, (later) the
//! classifier and the OpenFlow/POF pipeline. Pure Rust, no Python: the
//! `dp-python` crate wraps what is here.

pub mod parse;

pub use parse::{parse_frame, Headers, ParseError};
