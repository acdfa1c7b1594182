//! One accepted TCP connection as the driver keeps it: the socket, the peer address, a few flags
//! and the bytes the kernel has not taken yet. An idle TCP connection holds no buffer at all:
//! reads go into the turn's shared batch, and the output queue exists only while the kernel is
//! full. A TLS connection also holds its rustls session (`Tls`), whose buffers are rustls' own.
//! A connection of a PROXY protocol listener holds the bytes of its header until it is read
//! (`HeaderWait`), then what the header said (`proxied`).

use std::io::{self, IoSlice, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use mio::net::TcpStream;
use rustls::ServerConnection;

use super::proxy::{ProxyHeader, ProxyPolicy};
use crate::tls::TlsEndpoint;

/// Ciphertext rustls may hold for one connection before plaintext waits in our queue instead.
const TLS_BUFFER_LIMIT: usize = 64 * 1024;

/// A TLS session: rustls' state, and the endpoint it was made with (a reload does not change the
/// roots an open connection's certificate is checked against).
pub(crate) struct Tls {
    pub session: ServerConnection,
    pub endpoint: Arc<TlsEndpoint>,
}

impl Tls {
    pub fn new(endpoint: Arc<TlsEndpoint>) -> Result<Box<Tls>, rustls::Error> {
        let mut session = endpoint.new_connection()?;
        session.set_buffer_limit(Some(TLS_BUFFER_LIMIT));
        Ok(Box::new(Tls { session, endpoint }))
    }
}

/// What one read of a TLS connection gave.
pub(crate) enum TlsRead {
    /// Plaintext appended; the socket has nothing more for now.
    Drained,
    /// Plaintext appended; more may be there (the budget ran out).
    More,
    /// The peer closed (plaintext before the close was appended).
    Closed,
    /// A socket or TLS error (errno; EPROTO for a TLS failure, after its alert was sent).
    Failed(u32),
}

pub(crate) const PAUSED: u8 = 1;
/// In the driver's ready list (read again on the next turn).
pub(crate) const READY: u8 = 2;
/// The worker asked for an orderly close: what is queued goes out, then FIN; reads are discarded
/// until the peer closes too.
pub(crate) const ENDING: u8 = 4;
/// shutdown(SHUT_WR) done.
pub(crate) const WRITE_SHUT: u8 = 8;
/// Registered for the writable edge (only while bytes are queued).
pub(crate) const WANT_WRITE: u8 = 16;

/// A queue this large is given back to the allocator once it drains (smaller ones are kept).
const KEEP_QUEUE_CAPACITY: usize = 16 * 1024;

/// A connection of a PROXY protocol listener whose header has not been decided yet: the worker
/// has not been told of it (no EV_OPEN).
pub(crate) struct HeaderWait {
    pub policy: Arc<ProxyPolicy>,
    pub listener: u32,
    /// The peer is in the policy's trusted blocks.
    pub trusted: bool,
    pub deadline: Instant,
    /// What was read so far (proxy::HEADER_READ_MAX at most).
    pub buf: Vec<u8>,
}

pub(crate) struct Conn {
    pub stream: TcpStream,
    /// The TCP peer (a balancer's address when a PROXY header named the client).
    pub peer: SocketAddr,
    pub flags: u8,
    /// Bytes not yet taken by the kernel (TCP), or plaintext not yet taken by rustls (TLS).
    out: Vec<u8>,
    out_at: usize,
    pub tls: Option<Box<Tls>>,
    pub wait: Option<Box<HeaderWait>>,
    /// The PROXY header that named this connection's client (or carried its TLS details).
    pub proxied: Option<Box<ProxyHeader>>,
}

impl Conn {
    pub fn new(stream: TcpStream, peer: SocketAddr, tls: Option<Box<Tls>>, wait: Option<Box<HeaderWait>>) -> Self {
        Conn { stream, peer, flags: 0, out: Vec::new(), out_at: 0, tls, wait, proxied: None }
    }

    /// The client's address: the PROXY header's source, or the TCP peer.
    pub fn client(&self) -> SocketAddr {
        self.proxied.as_ref().and_then(|h| h.source).unwrap_or(self.peer)
    }

    /// TLS: ciphertext that was read with a PROXY header (the start of the handshake) into
    /// rustls; handshake replies are written, plaintext appended to `data`. Err: errno.
    pub fn feed_tls(&mut self, mut bytes: &[u8], data: &mut Vec<u8>) -> Result<(), u32> {
        while !bytes.is_empty() {
            let tls = self.tls.as_mut().expect("a TLS connection");
            match tls.session.read_tls(&mut bytes) {
                Ok(0) => return Err(libc::EPROTO as u32),
                Ok(_) => {}
                Err(e) => return Err(errno(&e)),
            }
            match tls.session.process_new_packets() {
                Ok(state) => {
                    let plain = state.plaintext_bytes_to_read();
                    if plain > 0 {
                        let at = data.len();
                        data.resize(at + plain, 0);
                        if tls.session.reader().read_exact(&mut data[at..]).is_err() {
                            data.truncate(at);
                        }
                    }
                }
                Err(_) => {
                    let _ = tls.session.write_tls(&mut &self.stream);
                    return Err(libc::EPROTO as u32);
                }
            }
        }
        if self.tls.as_ref().is_some_and(|t| t.session.wants_write()) {
            self.pump_tls().map_err(|e| errno(&e))?;
        }
        Ok(())
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Bytes accepted from the worker that the kernel has not taken yet (TLS: plaintext queued,
    /// or 1 while rustls still holds ciphertext, so a drain is still to come).
    pub fn queued(&self) -> usize {
        let plain = self.out.len() - self.out_at;
        match &self.tls {
            Some(t) if plain == 0 && t.session.wants_write() => 1,
            _ => plain,
        }
    }

    /// Writes `bufs` after anything already queued; what the kernel does not take now is queued.
    /// Returns the bytes the kernel took.
    pub fn write(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if self.queued() > 0 || self.tls.is_some() {
            for b in bufs {
                self.out.extend_from_slice(b);
            }
            return self.write_queued().map(|(n, _)| n);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let n = match (&self.stream).write_vectored(bufs) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        if n < total {
            self.queue_rest(bufs, n);
            // The kernel may have room again by now only if it took everything; a short write
            // means it is full: the writable edge will come.
        }
        Ok(n)
    }

    /// Queues what is left of `bufs` after the first `skip` bytes.
    fn queue_rest(&mut self, bufs: &[IoSlice<'_>], mut skip: usize) {
        for b in bufs {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            self.out.extend_from_slice(&b[skip..]);
            skip = 0;
        }
    }

    /// Writes from the queue until it is empty or the kernel is full. Returns the bytes written
    /// and whether the queue is now empty.
    pub fn write_queued(&mut self) -> io::Result<(usize, bool)> {
        if self.tls.is_some() {
            return self.pump_tls();
        }
        let mut written = 0;
        while self.out_at < self.out.len() {
            match (&self.stream).write(&self.out[self.out_at..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out_at += n;
                    written += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((written, false)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.reset_queue();
        Ok((written, true))
    }

    fn reset_queue(&mut self) {
        if self.out.capacity() > KEEP_QUEUE_CAPACITY {
            self.out = Vec::new();
        } else {
            self.out.clear();
        }
        self.out_at = 0;
    }

    /// TLS: plaintext from the queue into rustls (as much as it takes), ciphertext to the socket,
    /// until both are empty or the kernel is full. Returns the bytes written and whether all is out.
    pub fn pump_tls(&mut self) -> io::Result<(usize, bool)> {
        let tls = self.tls.as_mut().expect("a TLS connection");
        let mut written = 0;
        loop {
            while self.out_at < self.out.len() {
                let n = tls.session.writer().write(&self.out[self.out_at..])?;
                if n == 0 {
                    break;
                }
                self.out_at += n;
            }
            if !tls.session.wants_write() {
                break;
            }
            match tls.session.write_tls(&mut &self.stream) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((written, false)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let empty = self.out_at == self.out.len();
        if empty {
            self.reset_queue();
        }
        Ok((written, empty))
    }

    /// TLS: reads ciphertext, up to `budget` bytes, and appends the plaintext to `data`. Handshake
    /// replies (and alerts) are written as they come.
    pub fn read_tls(&mut self, data: &mut Vec<u8>, budget: usize) -> (usize, TlsRead) {
        let mut got = 0;
        let mut outcome = TlsRead::Drained;
        loop {
            let tls = self.tls.as_mut().expect("a TLS connection");
            let mut eof = false;
            let mut blocked = false;
            match tls.session.read_tls(&mut &self.stream) {
                Ok(0) => eof = true,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return (got, TlsRead::Failed(errno(&e))),
            }
            match tls.session.process_new_packets() {
                Ok(state) => {
                    let plain = state.plaintext_bytes_to_read();
                    if state.peer_has_closed() {
                        eof = true;
                    }
                    if plain > 0 {
                        let at = data.len();
                        data.resize(at + plain, 0);
                        if tls.session.reader().read_exact(&mut data[at..]).is_err() {
                            data.truncate(at);
                        }
                    }
                }
                Err(e) => {
                    // rustls queued an alert for the peer: try to send it, then give up. A client
                    // certificate a CRL revokes closes with EKEYREVOKED (counted apart), any other
                    // failure with EPROTO.
                    let _ = tls.session.write_tls(&mut &self.stream);
                    let code = match e {
                        rustls::Error::InvalidCertificate(rustls::CertificateError::Revoked) => libc::EKEYREVOKED,
                        _ => libc::EPROTO,
                    };
                    return (got, TlsRead::Failed(code as u32));
                }
            }
            if tls.session.wants_write() {
                if let Err(e) = self.pump_tls() {
                    return (got, TlsRead::Failed(errno(&e)));
                }
            }
            if eof {
                outcome = TlsRead::Closed;
                break;
            }
            if blocked {
                break;
            }
            if got >= budget {
                outcome = TlsRead::More;
                break;
            }
        }
        (got, outcome)
    }

    /// The CN of a client certificate that verified (TLS with client certificates).
    pub fn verified_cn(&self) -> Option<String> {
        let tls = self.tls.as_ref()?;
        tls.endpoint.verified_cn(&tls.session)
    }

    /// The client's certificates (DER), once the handshake is done.
    pub fn peer_certificates(&self) -> Option<Vec<Vec<u8>>> {
        let tls = self.tls.as_ref()?;
        if tls.session.is_handshaking() {
            return None;
        }
        Some(tls.session.peer_certificates()?.iter().map(|c| c.to_vec()).collect())
    }

    /// TLS: close_notify, sent with what is queued.
    pub fn close_notify(&mut self) {
        if let Some(tls) = self.tls.as_mut() {
            tls.session.send_close_notify();
        }
    }

    /// FIN to the peer (once); errors are ignored (the peer may be gone already).
    pub fn shutdown_write(&mut self) {
        if !self.has(WRITE_SHUT) {
            self.flags |= WRITE_SHUT;
            let _ = self.stream.shutdown(std::net::Shutdown::Write);
        }
    }
}

/// The errno of an I/O error, or EIO when it has none.
pub(crate) fn errno(e: &io::Error) -> u32 {
    e.raw_os_error().map(|c| c as u32).unwrap_or(libc::EIO as u32)
}
