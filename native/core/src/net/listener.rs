//! Listening sockets shared by worker threads. Node 20 cannot hand one listening port to several
//! worker threads, so each worker gets its own socket bound to the same address with SO_REUSEPORT
//! (the kernel spreads accepted connections across them) and listens on it with `server.listen({fd})`.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{IntoRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

/// Creates a non-blocking TCP socket bound to `host:port` with SO_REUSEADDR and SO_REUSEPORT set,
/// already listening with `backlog`, and returns its file descriptor; the caller owns the fd.
/// For an IPv6 address `v6_only` decides whether IPv4-mapped connections are accepted too.
pub fn reuseport_listener(host: &str, port: u16, backlog: i32, v6_only: bool) -> io::Result<RawFd> {
    let ip: IpAddr = host
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("not an IP address: {host}")))?;
    let addr = SocketAddr::new(ip, port);
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(v6_only)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into_raw_fd())
}

/// The port a bound socket actually got (useful after binding port 0).
pub fn local_port(fd: RawFd) -> io::Result<u16> {
    use std::os::fd::FromRawFd;
    // Borrow the fd without taking ownership: wrap, read, and release it again.
    let socket = unsafe { Socket::from_raw_fd(fd) };
    let result = socket.local_addr().map(|a| a.as_socket().map(|s| s.port()).unwrap_or(0));
    let _ = socket.into_raw_fd();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;
    use std::os::fd::FromRawFd;

    #[test]
    fn two_sockets_share_one_port() {
        let a = reuseport_listener("127.0.0.1", 0, 128, false).unwrap();
        let port = local_port(a).unwrap();
        assert_ne!(port, 0);
        let b = reuseport_listener("127.0.0.1", port, 128, false).unwrap();
        assert_eq!(local_port(b).unwrap(), port);
        TcpStream::connect(("127.0.0.1", port)).expect("connect to the shared port");
        unsafe {
            drop(Socket::from_raw_fd(a));
            drop(Socket::from_raw_fd(b));
        }
    }

    #[test]
    fn ipv6_listener() {
        // Some sandboxes have no IPv6 loopback; only check when it exists.
        if std::net::TcpListener::bind("[::1]:0").is_err() {
            return;
        }
        let fd = reuseport_listener("::1", 0, 16, true).unwrap();
        let port = local_port(fd).unwrap();
        TcpStream::connect(("::1", port)).expect("connect over IPv6");
        unsafe { drop(Socket::from_raw_fd(fd)) };
    }

    #[test]
    fn rejects_a_host_that_is_not_an_ip() {
        let err = reuseport_listener("not-an-ip", 0, 16, false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
