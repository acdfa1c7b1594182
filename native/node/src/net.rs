//! Listening sockets for worker threads (SO_REUSEPORT); see spindle_core::net.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::errors::io_error;

/// Creates a listening TCP socket with SO_REUSEADDR and SO_REUSEPORT on host:port and returns its
/// file descriptor, for `net.Server.listen({ fd })` in a worker thread. Port 0 picks a free port
/// (read it back with `listenerPort`), and then the others can bind that port too.
#[napi(catch_unwind)]
pub fn reuseport_listener(host: String, port: u32, backlog: Option<i32>, ipv6_only: Option<bool>) -> Result<i32, String> {
    if port > 65535 {
        return Err(Error::new("EINVAL".to_string(), format!("port out of range: {port}")));
    }
    spindle_core::net::reuseport_listener(&host, port as u16, backlog.unwrap_or(1024), ipv6_only.unwrap_or(false))
        .map_err(io_error)
}

/// The local port of a listening socket's fd.
#[napi(catch_unwind)]
pub fn listener_port(fd: i32) -> Result<u32, String> {
    spindle_core::net::local_port(fd).map(|p| p as u32).map_err(io_error)
}

/// Closes a file descriptor that was never handed to Node (error paths).
#[napi(catch_unwind)]
pub fn close_fd(fd: i32) {
    // SAFETY: the caller gives up ownership of an fd it got from reuseportListener.
    unsafe {
        drop(<std::net::TcpListener as std::os::fd::FromRawFd>::from_raw_fd(fd));
    }
}

/// What is wrong with a CRL file (a TLS endpoint's `crl`), as loading the endpoint would find it;
/// null when it loads. For the admin API's and the configuration's checks, before any worker
/// opens the endpoint.
#[napi(catch_unwind)]
pub fn crl_file_problem(path: String) -> Option<String> {
    spindle_core::tls::check_crl_file(std::path::Path::new(&path)).err().map(|e| e.to_string())
}
