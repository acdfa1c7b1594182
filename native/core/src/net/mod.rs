//! Network I/O of a worker thread: the SO_REUSEPORT listening sockets (listener.rs) and the
//! connection driver (driver.rs) that accepts, reads and writes every TCP connection of one
//! worker on one epoll instance, reporting what happened as a flat batch of events; the PROXY
//! protocol header a listener may expect first (proxy.rs).

mod conn;
mod driver;
mod events;
mod listener;
pub mod proxy;

pub use driver::{Driver, DriverStats, ListenOptions};
pub use events::{EventSink, EV_ACCEPT_ERROR, EV_CLOSE, EV_DATA, EV_DRAIN, EV_OPEN, EV_PROXY_ERROR, EVENT_WORDS};
pub use listener::{local_port, reuseport_listener};
