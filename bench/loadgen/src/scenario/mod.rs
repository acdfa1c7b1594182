//! One module per scenario; each returns the JSON result of one run.
pub mod connrate;
pub mod idle;
pub mod idle_scale;
pub mod latency;
pub mod retained;
pub mod subscriptions;
pub mod throughput;
