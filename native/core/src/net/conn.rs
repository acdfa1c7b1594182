//! One accepted TCP connection as the driver keeps it: the socket, the peer address, a few flags
//! and the bytes the kernel has not taken yet. An idle connection holds no buffer at all: reads
//! go into the turn's shared batch, and the output queue exists only while the kernel is full.

use std::io::{self, IoSlice, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;

pub(crate) const PAUSED: u8 = 1;
/// In the driver's ready list (read again on the next turn).
pub(crate) const READY: u8 = 2;
/// The worker asked for an orderly close: what is queued goes out, then FIN; reads are discarded
/// until the peer closes too.
pub(crate) const ENDING: u8 = 4;
/// shutdown(SHUT_WR) done.
pub(crate) const WRITE_SHUT: u8 = 8;

/// A queue this large is given back to the allocator once it drains (smaller ones are kept).
const KEEP_QUEUE_CAPACITY: usize = 16 * 1024;

pub(crate) struct Conn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub flags: u8,
    out: Vec<u8>,
    out_at: usize,
}

impl Conn {
    pub fn new(stream: TcpStream, peer: SocketAddr) -> Self {
        Conn { stream, peer, flags: 0, out: Vec::new(), out_at: 0 }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Bytes accepted from the worker that the kernel has not taken yet.
    pub fn queued(&self) -> usize {
        self.out.len() - self.out_at
    }

    /// Writes `bufs` after anything already queued; what the kernel does not take now is queued.
    /// Returns the bytes the kernel took.
    pub fn write(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if self.queued() > 0 {
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
        if self.out.capacity() > KEEP_QUEUE_CAPACITY {
            self.out = Vec::new();
        } else {
            self.out.clear();
        }
        self.out_at = 0;
        Ok((written, true))
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
