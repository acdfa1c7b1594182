//! spindle-core: the MQTT codec (framing, decoding, encoding, validation) and the topic routing
//! core (trie, shared subscriptions, match cache, retained index). Pure Rust: no N-API types here,
//! so the crate is testable, fuzzable and benchmarkable on its own.

pub mod codec;
pub mod net;
pub mod topic;
