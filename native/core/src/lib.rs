//! spindle-core: the MQTT codec (framing, decoding, encoding, validation) and the topic routing
//! core (trie, shared subscriptions, match cache, retained index), the process-wide client
//! registry and retained store. Pure Rust: no N-API types here,
//! so the crate is testable, fuzzable and benchmarkable on its own.

pub mod codec;
pub mod net;
pub mod registry;
pub mod retained_store;
pub mod store;
pub mod tls;
pub mod topic;
