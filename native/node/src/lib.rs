//! spindle-node: the napi-rs binding of spindle-core. Thin wrappers only: argument conversion,
//! descriptor tables, and error mapping (all of it in errors.rs). No MQTT logic lives here.
//! Every exported function uses `catch_unwind`, so a Rust panic becomes a JS exception instead
//! of aborting the process.

mod errors;
mod framer;
mod packet;
mod registry;
mod router;
mod store;
mod net;
mod net_driver;
mod uv_waker;
