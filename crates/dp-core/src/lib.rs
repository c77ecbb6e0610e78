//! dp-core — Tandem's data-plane core: packets, header parsing, the packed
//! header key, the classifier and the OpenFlow 1.3 + POF pipeline. Pure Rust,
//! no Python: the `dp-python` crate wraps what is here.

pub mod acl;
pub mod actions;
pub mod actionset;
pub mod cachegate;
pub mod checksum;
pub mod classifier;
pub mod conntrack;
pub mod conntrack_tcp;
pub mod ct_alg;
pub mod ct_alg_ftp_nat;
pub mod ct_alg_nat;
pub mod ct_nat;
pub mod ct_related;
pub mod fate;
pub mod hashsel;
pub mod field;
pub mod flat;
pub mod flowcache;
pub mod learn;
pub mod mactable;
pub mod meter;
pub mod nsh;
pub mod ovs_hash;
pub mod parse;
pub mod pipeline;
pub mod rng;
pub mod rule;
pub mod tunwide;

pub use classifier::{Classifier, RuleId};
pub use field::{Field, Key, KEY_WORDS};
pub use parse::{parse_frame, Headers, ParseError};
pub use pipeline::{
    Action, Bucket, ControllerReason, DropReason, Fate, FieldMatch, FlowModCommand, Group, GroupType, Instructions, Packet, Pipeline, PipelineError, Rule,
};
