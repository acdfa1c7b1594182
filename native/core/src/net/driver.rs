//! The connection driver of one worker thread: every listening socket and every TCP connection
//! of the worker on one edge-triggered epoll instance (mio). A turn (`turn`) accepts, reads and
//! flushes queued output, and reports it all as one batch of events; the worker writes a tick's
//! output for all its connections in one call (`flush`), one vectored write per connection.
//!
//! The epoll fd is exposed (`fd`) so the owner can wait on it from its own event loop (the
//! binding registers it with the worker's libuv loop): there is no thread of its own.
//!
//! Connection ids are `slot | generation << 24`: an id the worker still holds after its
//! connection closed never reaches the connection that took the slot next.
//!
//! A listener with a PROXY protocol policy (`set_proxy`) reads each connection's header before
//! the worker hears of it: EV_OPEN comes once the header is read, with the client's address it
//! names; a connection refused for its header is never opened (EV_PROXY_ERROR instead). On a TLS
//! listener the header comes before the handshake.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use socket2::SockRef;

use super::conn::{errno, Conn, HeaderWait, Tls, TlsRead, ENDING, PAUSED, READY, WANT_WRITE};
use super::events::{EventSink, EVENT_WORDS, EV_ACCEPT_ERROR, EV_CLOSE, EV_DATA, EV_DRAIN, EV_OPEN, EV_PROXY_ERROR};
use super::proxy::{self, Decision, ProxyError, ProxyHeader, ProxyPolicy};
use crate::tls::TlsEndpoint;

const SLOT_BITS: u32 = 24;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
/// Tokens at or above this are listeners.
const LISTENER_TOKEN: usize = 1 << 32;
/// Bytes read from one connection per turn, at most: one busy client cannot starve the others.
const READ_BUDGET: usize = 64 * 1024;
/// Connections accepted from one listener per turn, at most.
const ACCEPT_BUDGET: usize = 256;
/// At most this many slices per writev (IOV_MAX is 1024 on Linux).
const MAX_IOV: usize = 512;

const READABLE: u8 = 1;
const WRITABLE: u8 = 2;
const TO_THE_END: u8 = 4;

/// Where reading a PROXY header stands after a read.
enum HeaderRead {
    /// The socket is empty; the next edge brings more.
    Pending,
    /// Closed before sending a byte.
    Gone,
    Decided(Decision),
}

/// How accepted connections of a listener are set up.
#[derive(Clone, Copy, Debug, Default)]
pub struct ListenOptions {
    /// TCP_NODELAY (no Nagle).
    pub no_delay: bool,
    /// SO_KEEPALIVE with this idle time in seconds before the first probe (0: the system's);
    /// None: off.
    pub keep_alive_secs: Option<u32>,
}

struct Listener {
    socket: TcpListener,
    options: ListenOptions,
    /// TLS endpoints: what new connections are made with (swapped on a reload).
    tls: Option<Arc<TlsEndpoint>>,
    /// PROXY protocol: the header new connections must (or may) send first.
    proxy: Option<Arc<ProxyPolicy>>,
}

struct Slot {
    generation: u32,
    conn: Option<Box<Conn>>,
}

/// Counters since the driver was made.
#[derive(Clone, Copy, Debug, Default)]
pub struct DriverStats {
    pub accepted: u64,
    pub closed: u64,
    pub accept_errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Connections open now.
    pub open: u64,
}

pub struct Driver {
    poll: Poll,
    events: Events,
    harvested: Vec<(usize, u8)>,
    listeners: Vec<Option<Listener>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    ready: Vec<u32>,
    ready_listeners: Vec<u32>,
    retry_listeners: Vec<u32>,
    pending: VecDeque<[u32; EVENT_WORDS]>,
    group: Vec<(u32, u32)>,
    /// Ids of connections reading their PROXY header (some may have opened or closed since).
    header_waits: Vec<u32>,
    pub stats: DriverStats,
}

impl Driver {
    pub fn new() -> io::Result<Self> {
        Ok(Driver {
            poll: Poll::new()?,
            events: Events::with_capacity(1024),
            harvested: Vec::with_capacity(1024),
            listeners: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            ready_listeners: Vec::new(),
            retry_listeners: Vec::new(),
            pending: VecDeque::new(),
            group: Vec::new(),
            header_waits: Vec::new(),
            stats: DriverStats::default(),
        })
    }

    /// The epoll fd: readable when a turn has something to do.
    pub fn fd(&self) -> RawFd {
        self.poll.as_raw_fd()
    }

    /// Work is left for another turn right away (a budget ran out, a connection was resumed, an
    /// event waits): the owner should turn again without waiting for the fd.
    pub fn has_more(&self) -> bool {
        !self.ready.is_empty() || !self.ready_listeners.is_empty() || !self.pending.is_empty()
    }

    /// Takes over a listening socket (non-blocking, already listening) and returns its listener
    /// number, which OPEN events carry.
    pub fn listen(&mut self, fd: RawFd, options: ListenOptions, tls: Option<Arc<TlsEndpoint>>) -> io::Result<u32> {
        // SAFETY: the caller hands over ownership of a listening socket's fd.
        let std = unsafe { std::net::TcpListener::from_raw_fd(fd) };
        std.set_nonblocking(true)?;
        let mut socket = TcpListener::from_std(std);
        let index = match self.listeners.iter().position(|l| l.is_none()) {
            Some(i) => i,
            None => {
                self.listeners.push(None);
                self.listeners.len() - 1
            }
        };
        self.poll.registry().register(&mut socket, Token(LISTENER_TOKEN + index), Interest::READABLE)?;
        self.listeners[index] = Some(Listener { socket, options, tls, proxy: None });
        // Connections may be waiting in the backlog already (the edge came before we registered).
        self.ready_listeners.push(index as u32);
        Ok(index as u32)
    }

    /// New TLS certificates for a listener's new connections; open ones keep theirs.
    pub fn set_tls(&mut self, listener: u32, tls: Arc<TlsEndpoint>) -> bool {
        match self.listeners.get_mut(listener as usize) {
            Some(Some(l)) if l.tls.is_some() => {
                l.tls = Some(tls);
                true
            }
            _ => false,
        }
    }

    /// The TLS endpoint a listener's new connections are made with (None: not a TLS listener).
    pub fn tls(&self, listener: u32) -> Option<&Arc<TlsEndpoint>> {
        self.listeners.get(listener as usize)?.as_ref()?.tls.as_ref()
    }

    /// The PROXY protocol policy of a listener's new connections (None: off); open ones keep
    /// what they were accepted with.
    pub fn set_proxy(&mut self, listener: u32, proxy: Option<ProxyPolicy>) -> bool {
        match self.listeners.get_mut(listener as usize) {
            Some(Some(l)) => {
                l.proxy = proxy.map(Arc::new);
                true
            }
            _ => false,
        }
    }

    /// Closes the connections that have not decided their PROXY header by its deadline, each
    /// reported as EV_PROXY_ERROR (timeout) on the next turn. Returns how many.
    pub fn expire_headers(&mut self, now: Instant) -> usize {
        let mut expired = 0;
        let mut waits = std::mem::take(&mut self.header_waits);
        waits.retain(|&id| {
            let Some(slot) = self.slot_of(id) else { return false };
            let Some(wait) = self.slots[slot as usize].conn.as_ref().and_then(|c| c.wait.as_ref()) else { return false };
            if wait.deadline > now {
                return true;
            }
            let listener = wait.listener;
            self.release(slot);
            self.pending.push_back([EV_PROXY_ERROR, listener, ProxyError::Timeout as u32, 0]);
            expired += 1;
            false
        });
        self.header_waits = waits;
        expired
    }

    /// Connections reading their PROXY header now. (`header_waits` also holds, until the next
    /// `expire_headers`, the ids of those that opened or closed since.)
    pub fn header_waits(&self) -> usize {
        self.header_waits.iter().filter(|&&id| self.slot_of(id).and_then(|s| self.slots[s as usize].conn.as_ref()).is_some_and(|c| c.wait.is_some())).count()
    }

    /// Stops accepting on a listener and closes its socket; its connections stay, but those still
    /// reading their PROXY header are closed (the worker never heard of them, and the listener's
    /// number may go to another listener).
    pub fn unlisten(&mut self, listener: u32) {
        if let Some(slot) = self.listeners.get_mut(listener as usize) {
            if let Some(mut l) = slot.take() {
                let _ = self.poll.registry().deregister(&mut l.socket);
            }
        }
        let mut waits = std::mem::take(&mut self.header_waits);
        waits.retain(|&id| {
            let Some(slot) = self.slot_of(id) else { return false };
            match self.slots[slot as usize].conn.as_ref().and_then(|c| c.wait.as_ref()) {
                None => false,
                Some(w) if w.listener == listener => {
                    self.release(slot);
                    false
                }
                Some(_) => true,
            }
        });
        self.header_waits = waits;
    }

    /// One turn: events left from before, connections and listeners with work left, then what
    /// epoll reports now (without waiting). Returns whether more work is left (`has_more`).
    pub fn turn(&mut self, sink: &mut EventSink<'_>) -> bool {
        while let Some(e) = self.pending.front() {
            if !sink.has_room() {
                return true;
            }
            sink.push(e[0], e[1], e[2], e[3]);
            self.pending.pop_front();
        }
        let listeners = std::mem::take(&mut self.ready_listeners);
        for l in listeners {
            self.accept(l, sink);
        }
        let ready = std::mem::take(&mut self.ready);
        for slot in ready {
            if let Some(c) = self.slots[slot as usize].conn.as_mut() {
                c.flags &= !READY;
            }
            self.read(slot, sink, true);
        }
        self.ready_listeners.append(&mut self.retry_listeners);
        if sink.has_room_for_read() {
            match self.poll.poll(&mut self.events, Some(Duration::ZERO)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return true,
                Err(e) => panic!("epoll_wait failed: {e}"),
            }
            let mut harvested = std::mem::take(&mut self.harvested);
            harvested.clear();
            for ev in self.events.iter() {
                let mut what = 0;
                if ev.is_readable() {
                    what |= READABLE;
                }
                if ev.is_read_closed() || ev.is_error() {
                    what |= READABLE | TO_THE_END;
                }
                if ev.is_writable() || ev.is_error() {
                    what |= WRITABLE;
                }
                harvested.push((ev.token().0, what));
            }
            for &(token, what) in &harvested {
                if token >= LISTENER_TOKEN {
                    self.accept((token - LISTENER_TOKEN) as u32, sink);
                    continue;
                }
                let slot = token as u32;
                if what & WRITABLE != 0 {
                    self.on_writable(slot, sink);
                }
                if what & READABLE != 0 {
                    self.read(slot, sink, what & TO_THE_END != 0);
                }
            }
            self.harvested = harvested;
        }
        self.has_more()
    }

    /// An event into this turn's batch, or after those waiting when the batch is full.
    fn emit(&mut self, sink: &mut EventSink<'_>, kind: u32, id: u32, a: u32, b: u32) {
        if self.pending.is_empty() && sink.has_room() {
            sink.push(kind, id, a, b);
        } else {
            self.pending.push_back([kind, id, a, b]);
        }
    }

    fn id_of(&self, slot: u32) -> u32 {
        slot | (self.slots[slot as usize].generation << SLOT_BITS)
    }

    fn slot_of(&self, id: u32) -> Option<u32> {
        let slot = id & SLOT_MASK;
        let s = self.slots.get(slot as usize)?;
        (s.generation == id >> SLOT_BITS && s.conn.is_some()).then_some(slot)
    }

    fn conn(&mut self, id: u32) -> Option<(u32, &mut Conn)> {
        let slot = self.slot_of(id)?;
        Some((slot, self.slots[slot as usize].conn.as_mut().unwrap()))
    }

    fn accept(&mut self, index: u32, sink: &mut EventSink<'_>) {
        for _ in 0..ACCEPT_BUDGET {
            if !sink.has_room() {
                self.ready_listeners.push(index);
                return;
            }
            let Some(Some(listener)) = self.listeners.get(index as usize) else { return };
            let options = listener.options;
            let tls = listener.tls.clone();
            let proxy = listener.proxy.clone();
            match listener.socket.accept() {
                Ok((stream, peer)) => self.opened(stream, peer, index, options, tls, proxy, sink),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted || e.raw_os_error() == Some(libc::ECONNABORTED) => continue,
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS...: reported, and tried again on a later turn.
                    self.stats.accept_errors += 1;
                    self.emit(sink, EV_ACCEPT_ERROR, index, errno(&e), 0);
                    self.retry_listeners.push(index);
                    return;
                }
            }
        }
        self.ready_listeners.push(index);
    }

    #[allow(clippy::too_many_arguments)]
    fn opened(&mut self, mut stream: TcpStream, peer: SocketAddr, listener: u32, options: ListenOptions, tls: Option<Arc<TlsEndpoint>>, proxy: Option<Arc<ProxyPolicy>>, sink: &mut EventSink<'_>) {
        let wait = match proxy {
            None => None,
            Some(policy) => {
                let trusted = policy.trusts(peer.ip());
                if policy.refuse_at_accept(trusted) {
                    // 'required' and not a balancer: closed before anything is read.
                    self.emit(sink, EV_PROXY_ERROR, listener, ProxyError::Untrusted as u32, 0);
                    return;
                }
                let deadline = Instant::now() + Duration::from_millis(policy.timeout_ms as u64);
                Some(Box::new(HeaderWait { policy, listener, trusted, deadline, buf: Vec::new() }))
            }
        };
        let tls = match tls.map(Tls::new) {
            None => None,
            Some(Ok(t)) => Some(t),
            Some(Err(_)) => return, // rustls could not start a session: the socket closes
        };
        if options.no_delay {
            let _ = stream.set_nodelay(true);
        }
        match options.keep_alive_secs {
            None => {}
            // The system's idle time (net.ipv4.tcp_keepalive_time), as Node's setKeepAlive(true, 0).
            Some(0) => {
                let _ = SockRef::from(&stream).set_keepalive(true);
            }
            Some(secs) => {
                let ka = socket2::TcpKeepalive::new().with_time(Duration::from_secs(secs as u64));
                let _ = SockRef::from(&stream).set_tcp_keepalive(&ka);
            }
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                if self.slots.len() as u32 > SLOT_MASK {
                    return; // 16 million connections on one thread: refuse (the socket closes).
                }
                self.slots.push(Slot { generation: 0, conn: None });
                (self.slots.len() - 1) as u32
            }
        };
        if self.poll.registry().register(&mut stream, Token(slot as usize), Interest::READABLE).is_err() {
            self.free.push(slot);
            return;
        }
        let waiting = wait.is_some();
        self.slots[slot as usize].conn = Some(Box::new(Conn::new(stream, peer, tls, wait)));
        self.stats.accepted += 1;
        self.stats.open += 1;
        let id = self.id_of(slot);
        if waiting {
            // Opened for the worker once its header is read (`read_header`).
            self.header_waits.push(id);
            return;
        }
        self.emit_open(id, listener, peer, sink);
    }

    /// EV_OPEN: the client's address comes with the event, so the worker never has to ask (an
    /// IPv6 one: ask `peer`).
    fn emit_open(&mut self, id: u32, listener: u32, client: SocketAddr, sink: &mut EventSink<'_>) {
        let (ip4, port) = match client {
            SocketAddr::V4(a) => (u32::from(*a.ip()), a.port()),
            SocketAddr::V6(a) => (0, a.port()),
        };
        self.emit(sink, EV_OPEN, id, listener | (port as u32) << 16, ip4);
    }

    /// Reads a connection's PROXY header until it is decided. Returns None while the worker must
    /// not hear of it (more bytes to wait for; or refused, released and reported); once opened,
    /// Some(bytes after the header already appended to `sink.data`) (TLS: the plaintext they gave).
    fn read_header(&mut self, slot: u32, sink: &mut EventSink<'_>) -> Option<usize> {
        let id = self.id_of(slot);
        let conn = self.slots[slot as usize].conn.as_mut()?;
        let fd = conn.stream.as_raw_fd();
        let wait = conn.wait.as_mut()?;
        let listener = wait.listener;
        let mut read = 0u64;
        let decision = loop {
            match proxy::decide(&wait.policy, wait.trusted, &wait.buf) {
                Decision::Wait => {}
                d => break HeaderRead::Decided(d),
            }
            let room = proxy::HEADER_READ_MAX - wait.buf.len();
            if room == 0 {
                break HeaderRead::Decided(Decision::Refuse(ProxyError::Malformed)); // cannot happen: decided by then
            }
            let len = wait.buf.len();
            wait.buf.reserve(room);
            // SAFETY: `room` bytes of spare capacity were reserved; read() writes at most that.
            let n = unsafe { libc::read(fd, wait.buf.as_mut_ptr().add(len) as *mut libc::c_void, room) };
            if n > 0 {
                // SAFETY: read() initialised n bytes.
                unsafe { wait.buf.set_len(len + n as usize) };
                read += n as u64;
                continue;
            }
            if n < 0 {
                match io::Error::last_os_error().kind() {
                    io::ErrorKind::WouldBlock => break HeaderRead::Pending, // the next edge brings more
                    io::ErrorKind::Interrupted => continue,
                    _ => {}
                }
            }
            // EOF or a socket error before a decision. Nothing sent at all (a balancer's health
            // check that connects and closes): not counted.
            if wait.buf.is_empty() {
                break HeaderRead::Gone;
            }
            break HeaderRead::Decided(Decision::Refuse(ProxyError::Closed));
        };
        self.stats.bytes_read += read;
        match decision {
            HeaderRead::Pending | HeaderRead::Decided(Decision::Wait) => None,
            HeaderRead::Gone => {
                self.release(slot);
                None
            }
            HeaderRead::Decided(Decision::Refuse(reason)) => {
                self.release(slot);
                self.emit(sink, EV_PROXY_ERROR, listener, reason as u32, 0);
                None
            }
            HeaderRead::Decided(Decision::Open(header, at)) => {
                let conn = self.slots[slot as usize].conn.as_mut()?;
                let wait = conn.wait.take()?;
                conn.proxied = header.filter(|h| h.source.is_some() || h.authority.is_some() || h.ssl.is_some()).map(Box::new);
                let client = conn.client();
                let rest = &wait.buf[at..];
                let start = sink.data.len();
                let fed = if conn.tls.is_some() {
                    conn.feed_tls(rest, &mut sink.data)
                } else {
                    sink.data.extend_from_slice(rest);
                    Ok(())
                };
                self.emit_open(id, listener, client, sink);
                if let Err(err) = fed {
                    sink.data.truncate(start);
                    self.release(slot);
                    self.emit(sink, EV_CLOSE, id, err, 0);
                    return None;
                }
                Some(sink.data.len() - start)
            }
        }
    }

    /// Reads what the socket has, up to the budget. A short read ends it (the socket is empty,
    /// and new data brings a new edge) unless `to_the_end`: the peer's FIN came with this edge,
    /// or the connection came from the ready list; then it reads until EOF or EAGAIN.
    fn read(&mut self, slot: u32, sink: &mut EventSink<'_>, to_the_end: bool) {
        let id = self.id_of(slot);
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else { return };
        if conn.has(PAUSED) || conn.has(READY) {
            return;
        }
        let waiting = conn.wait.is_some();
        // A header's turn may add OPEN, then DATA and CLOSE.
        if !sink.has_room_for_read() || !self.pending.is_empty() || (waiting && !sink.has_room_for(3)) {
            conn.flags |= READY;
            self.ready.push(slot);
            return;
        }
        // Bytes that came with the header, already in the batch (read as this read's first).
        let mut carried = 0;
        if waiting {
            match self.read_header(slot, sink) {
                None => return,
                Some(n) => carried = n,
            }
        }
        let to_the_end = to_the_end || waiting; // the header's reads stopped short of EAGAIN
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else { return };
        if conn.tls.is_some() {
            let start = sink.data.len() - carried;
            let budget = READ_BUDGET.min(sink.data_room()).max(1);
            let (got, outcome) = conn.read_tls(&mut sink.data, budget);
            self.stats.bytes_read += got as u64;
            let closed = match outcome {
                TlsRead::Drained => None,
                TlsRead::More => {
                    conn.flags |= READY;
                    self.ready.push(slot);
                    None
                }
                TlsRead::Closed => Some(0),
                TlsRead::Failed(e) => Some(e),
            };
            let plain = sink.data.len() - start;
            let conn_ending = conn.has(ENDING);
            if closed.is_none() {
                // The handshake may have left bytes for the kernel.
                self.watch_writes(slot);
            }
            if conn_ending {
                sink.data.truncate(start);
            } else if plain > 0 {
                sink.push(EV_DATA, id, start as u32, plain as u32);
            }
            if let Some(err) = closed {
                self.release(slot);
                sink.push(EV_CLOSE, id, err, 0);
            }
            return;
        }
        let fd = conn.stream.as_raw_fd();
        let start = sink.data.len() - carried;
        let mut budget = READ_BUDGET;
        let mut closed: Option<u32> = None;
        loop {
            let room = budget.min(sink.data_room());
            if room == 0 {
                conn.flags |= READY;
                self.ready.push(slot);
                break;
            }
            let data = &mut sink.data;
            data.reserve(room);
            let len = data.len();
            // SAFETY: `room` bytes of spare capacity were reserved; read() writes at most that.
            let n = unsafe { libc::read(fd, data.as_mut_ptr().add(len) as *mut libc::c_void, room) };
            if n > 0 {
                let n = n as usize;
                // SAFETY: read() initialised n bytes.
                unsafe { data.set_len(len + n) };
                budget -= n;
                if n < room && !to_the_end {
                    break; // a short read: the socket is empty; the next edge comes with new data
                }
            } else if n == 0 {
                closed = Some(0);
                break;
            } else {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => {
                        closed = Some(errno(&e));
                        break;
                    }
                }
            }
        }
        let got = sink.data.len() - start;
        self.stats.bytes_read += (got - carried) as u64;
        if conn.has(ENDING) {
            sink.data.truncate(start); // closing: what the peer still sends is not read
        } else if got > 0 {
            sink.push(EV_DATA, id, start as u32, got as u32);
        }
        if let Some(err) = closed {
            self.release(slot);
            sink.push(EV_CLOSE, id, err, 0);
        }
    }

    /// Asks epoll for the writable edge only while bytes wait in the connection's queue: with it
    /// always on, every ACK that frees send buffer would wake the thread for nothing.
    fn watch_writes(&mut self, slot: u32) {
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else { return };
        let want = conn.queued() > 0;
        if want == conn.has(WANT_WRITE) {
            return;
        }
        let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        if self.poll.registry().reregister(&mut conn.stream, Token(slot as usize), interest).is_ok() {
            conn.flags ^= WANT_WRITE;
        }
    }

    fn on_writable(&mut self, slot: u32, sink: &mut EventSink<'_>) {
        let id = self.id_of(slot);
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else { return };
        if conn.queued() == 0 {
            return;
        }
        match conn.write_queued() {
            Ok((n, empty)) => {
                self.stats.bytes_written += n as u64;
                if empty {
                    if conn.has(ENDING) {
                        conn.shutdown_write();
                    } else {
                        self.emit(sink, EV_DRAIN, id, 0, 0);
                    }
                }
                self.watch_writes(slot);
            }
            Err(e) => {
                self.release(slot);
                self.emit(sink, EV_CLOSE, id, errno(&e), 0);
            }
        }
    }

    fn release(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        if s.conn.take().is_some() {
            // Closing the fd takes it out of the epoll set.
            s.generation = (s.generation + 1) & 0xff;
            self.free.push(slot);
            self.stats.closed += 1;
            self.stats.open -= 1;
        }
    }

    /// Writes one tick's output: `records` are (id, offset, length) triples into `arena`, in the
    /// order the worker wrote them. Each connection's frames leave in one vectored write, in
    /// their order. For every connection left with queued bytes, (id, queued) is written to
    /// `status`; returns how many. A connection whose write fails is closed (its CLOSE event comes
    /// on the next turn: see `has_more`).
    pub fn flush(&mut self, arena: &[u8], records: &[u32], status: &mut [u32]) -> usize {
        let mut group = std::mem::take(&mut self.group);
        group.clear();
        for (i, r) in records.chunks_exact(3).enumerate() {
            group.push((r[0], i as u32));
        }
        // Stable: one connection's frames keep their order.
        group.sort_by_key(|&(id, _)| id);
        let mut reported = 0;
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(group.len().min(MAX_IOV));
        let mut i = 0;
        while i < group.len() {
            let id = group[i].0;
            let mut j = i;
            while j < group.len() && group[j].0 == id {
                j += 1;
            }
            if self.slot_of(id).is_some() {
                let mut k = i;
                while k < j {
                    slices.clear();
                    while k < j && slices.len() < MAX_IOV {
                        let r = group[k].1 as usize * 3;
                        let (at, len) = (records[r + 1] as usize, records[r + 2] as usize);
                        if at + len <= arena.len() {
                            slices.push(IoSlice::new(&arena[at..at + len]));
                        }
                        k += 1;
                    }
                    if !self.write_slices(id, &slices) {
                        break;
                    }
                }
                if let Some((_, conn)) = self.conn(id) {
                    let q = conn.queued();
                    if q > 0 && reported * 2 + 2 <= status.len() {
                        status[reported * 2] = id;
                        status[reported * 2 + 1] = q.min(u32::MAX as usize) as u32;
                        reported += 1;
                    }
                }
            }
            i = j;
        }
        self.group = group;
        reported
    }

    /// Writes one frame (a large one, not copied into an arena). Returns the bytes queued for the
    /// connection afterwards, or None when the id is no longer open.
    pub fn write(&mut self, id: u32, bytes: &[u8]) -> Option<usize> {
        if !self.write_slices(id, &[IoSlice::new(bytes)]) {
            return None;
        }
        self.conn(id).map(|(_, c)| c.queued())
    }

    /// False when the connection is gone (or just failed and was closed).
    fn write_slices(&mut self, id: u32, slices: &[IoSlice<'_>]) -> bool {
        let Some(slot) = self.slot_of(id) else { return false };
        let conn = self.slots[slot as usize].conn.as_mut().unwrap();
        if conn.has(ENDING) {
            return true; // nothing more goes out after end()
        }
        match conn.write(slices) {
            Ok(n) => {
                self.stats.bytes_written += n as u64;
                self.watch_writes(slot);
                true
            }
            Err(e) => {
                self.release(slot);
                self.pending.push_back([EV_CLOSE, id, errno(&e), 0]);
                false
            }
        }
    }

    /// Stops reading a connection until `resume`.
    pub fn pause(&mut self, id: u32) {
        if let Some((_, c)) = self.conn(id) {
            c.flags |= PAUSED;
        }
    }

    /// Reads a paused connection again (on the next turn: returns true, the owner turns soon).
    pub fn resume(&mut self, id: u32) -> bool {
        let Some((slot, c)) = self.conn(id) else { return false };
        c.flags &= !PAUSED;
        if !c.has(READY) {
            c.flags |= READY;
            self.ready.push(slot);
        }
        true
    }

    /// Orderly close: what is queued goes out, then FIN; the connection is released when the
    /// peer closes its side (EV_CLOSE). The owner bounds the wait with `destroy`.
    pub fn end(&mut self, id: u32) -> bool {
        let Some((slot, c)) = self.conn(id) else { return false };
        c.flags |= ENDING;
        c.flags &= !PAUSED;
        if c.tls.is_some() {
            c.close_notify();
            let _ = c.pump_tls();
        }
        if c.queued() == 0 {
            c.shutdown_write();
        }
        // Read once more: the peer's FIN may be in already, behind data nobody will read.
        if !c.has(READY) {
            c.flags |= READY;
            self.ready.push(slot);
        }
        self.watch_writes(slot);
        true
    }

    /// Closes now, dropping what is queued. No event follows.
    pub fn destroy(&mut self, id: u32) {
        if let Some(slot) = self.slot_of(id) {
            self.release(slot);
        }
    }

    /// The client's address (a PROXY header's source, or the TCP peer), None when the id is not open.
    pub fn peer(&self, id: u32) -> Option<SocketAddr> {
        let slot = self.slot_of(id)?;
        self.slots[slot as usize].conn.as_ref().map(|c| c.client())
    }

    /// For a connection whose PROXY header named its client: the TCP peer (the balancer) and the
    /// header.
    pub fn proxied(&self, id: u32) -> Option<(SocketAddr, &ProxyHeader)> {
        let slot = self.slot_of(id)?;
        let conn = self.slots[slot as usize].conn.as_ref()?;
        conn.proxied.as_deref().map(|h| (conn.peer, h))
    }

    /// The subject CN of the client certificate of a TLS connection, when it verified.
    pub fn verified_cn(&self, id: u32) -> Option<String> {
        let slot = self.slot_of(id)?;
        self.slots[slot as usize].conn.as_ref()?.verified_cn()
    }

    /// The certificates a TLS client presented (DER, its own first), once its handshake is done;
    /// None before, without TLS, or when it presented none.
    pub fn peer_certificates(&self, id: u32) -> Option<Vec<Vec<u8>>> {
        let slot = self.slot_of(id)?;
        self.slots[slot as usize].conn.as_ref()?.peer_certificates()
    }

    /// Bytes queued for a connection (0 when gone).
    pub fn queued(&self, id: u32) -> usize {
        self.slot_of(id).and_then(|s| self.slots[s as usize].conn.as_ref()).map(|c| c.queued()).unwrap_or(0)
    }

    /// Closes every connection and listener (the worker is ending).
    pub fn close_all(&mut self) {
        for l in self.listeners.iter_mut() {
            l.take();
        }
        for s in 0..self.slots.len() {
            self.release(s as u32);
        }
        self.ready.clear();
        self.pending.clear();
        self.header_waits.clear();
    }
}
