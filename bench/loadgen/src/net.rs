//! The event loop: every connection of a run on one thread, non-blocking sockets on epoll (mio),
//! edge-triggered. Owns the sockets and their read/write buffers; a scenario (`Handler`) sees
//! whole packets and appends what it wants to send with `Net::out`. Writes are batched: a
//! connection written to during a turn is flushed once at the end of it. Every CONNECT carries
//! the run's credentials (`--username`, `--password`, `--users`: connection i, counted in the
//! order `Net::open` was called, gets its own numbered name).
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::FromRawFd;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::args::{Common, Credentials};
use crate::mqtt::{self, Frame, Packet};

/// What a scenario does with the connections `Net` runs for it.
pub trait Handler {
    /// CONNACK with return code 0 arrived.
    fn ready(&mut self, net: &mut Net, c: usize);
    /// Any packet after the CONNACK.
    fn packet(&mut self, net: &mut Net, c: usize, p: &Packet<'_>);
    /// The connection failed or was closed by the broker (already counted in `Net::errors`).
    fn lost(&mut self, _net: &mut Net, _c: usize) {}
    /// After each batch of events, before the writes are flushed.
    fn tick(&mut self, _net: &mut Net) {}
}

/// A connection to open: its protocol level, client id and keep alive, and the scenario's tags.
pub struct Spec {
    pub version: u8,
    pub client_id: Vec<u8>,
    pub keepalive: u16,
    pub role: u32,
    pub index: u32,
}

pub struct Conn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    wpos: usize,
    tcp_up: bool,
    dirty: bool,
    client_id: Vec<u8>,
    username: Option<Vec<u8>>,
    keepalive: u16,
    pub version: u8,
    pub ready: bool,
    pub role: u32,
    pub index: u32,
    /// QoS 1 PUBLISHes sent and not yet acknowledged (kept by the scenario).
    pub inflight: u32,
    pub next_id: u16,
    /// Receive Maximum from the CONNACK (65535 when absent, and always for 3.1.1).
    pub receive_max: u32,
}

pub struct Net {
    poll: Poll,
    events: Option<Events>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    freeing: Vec<usize>,
    dirty: Vec<usize>,
    /// Connections queued by `open`, each with the username it signs in with.
    pending: VecDeque<(Spec, Option<Vec<u8>>)>,
    scratch: Vec<u8>,
    handshaking: usize,
    /// Most connections in the TCP + CONNECT handshake at once (the rest wait in `pending`).
    pub max_handshakes: usize,
    /// Where connections opened from now on go (`--sub-port` points subscribers elsewhere).
    pub target: SocketAddrV4,
    sources: Vec<Ipv4Addr>,
    next_source: usize,
    credentials: Credentials,
    /// PROXY protocol header version written before each CONNECT (0: none).
    proxy_protocol: u8,
    /// Headers written so far: the next one's client address (10.0.0.0 + n).
    proxied: u32,
    /// Connections queued so far: the next one's number for `Credentials::username`.
    opened: u64,
    pub errors: u64,
    pub error_samples: Vec<String>,
    /// Every error counted by kind: the operation and errno ("connect EADDRNOTAVAIL"), or the
    /// message itself when it carries none ("closed by the broker").
    pub error_kinds: BTreeMap<String, u64>,
    pub open: usize,
    pub bytes_in: u64,
    /// CONNACKs with a non-zero return / reason code (each also counted in `errors`).
    pub refused: u64,
    /// The code of the first refusal: 3.1.1 return code (4 bad username or password, 5 not
    /// authorized) or 5.0 reason code (0x86, 0x87, ...).
    pub first_refusal: Option<u8>,
}

impl Net {
    /// A loop towards `common`'s broker, from its source addresses, with its credentials.
    pub fn new(common: &Common) -> io::Result<Net> {
        Ok(Net {
            poll: Poll::new()?,
            events: Some(Events::with_capacity(4096)),
            conns: Vec::new(),
            free: Vec::new(),
            freeing: Vec::new(),
            dirty: Vec::new(),
            pending: VecDeque::new(),
            scratch: vec![0; 256 * 1024],
            handshaking: 0,
            max_handshakes: 256,
            target: SocketAddrV4::new(common.host, common.port),
            sources: common.sources.clone(),
            next_source: 0,
            credentials: common.credentials.clone(),
            proxy_protocol: common.proxy_protocol,
            proxied: 0,
            opened: 0,
            errors: 0,
            error_samples: Vec::new(),
            error_kinds: BTreeMap::new(),
            open: 0,
            bytes_in: 0,
            refused: 0,
            first_refusal: None,
        })
    }

    pub fn error(&mut self, what: String) {
        self.errors += 1;
        *self.error_kinds.entry(error_kind(&what)).or_insert(0) += 1;
        if self.error_samples.len() < 5 {
            self.error_samples.push(what);
        }
    }

    /// Counts `count` errors of one kind at once, with no sample (e.g. handshakes never answered).
    pub fn errors_of_kind(&mut self, kind: &str, count: u64) {
        if count > 0 {
            self.errors += count;
            *self.error_kinds.entry(kind.to_string()).or_insert(0) += count;
        }
    }

    /// Source addresses for the connections opened from now on, used in turn.
    pub fn use_sources(&mut self, sources: Vec<Ipv4Addr>) {
        assert!(!sources.is_empty(), "no source address");
        self.sources = sources;
        self.next_source = 0;
    }

    /// Connections queued by `open` and not started yet.
    pub fn queued(&self) -> usize {
        self.pending.len()
    }

    /// Forgets the connections queued by `open` and not started yet.
    pub fn clear_queue(&mut self) {
        self.pending.clear();
    }

    /// Queues a connection; it is opened when fewer than `max_handshakes` are in progress.
    pub fn open(&mut self, spec: Spec) {
        let username = self.credentials.username(self.opened);
        self.opened += 1;
        self.pending.push_back((spec, username));
    }

    /// Upper bound of the connection indexes handed out so far.
    pub fn slots(&self) -> usize {
        self.conns.len()
    }

    pub fn pending(&self) -> usize {
        self.pending.len() + self.handshaking
    }

    pub fn conn(&mut self, c: usize) -> &mut Conn {
        self.conns[c].as_mut().expect("live connection")
    }

    pub fn get(&self, c: usize) -> Option<&Conn> {
        self.conns.get(c).and_then(|x| x.as_ref())
    }

    /// The write buffer of `c`, flushed at the end of the turn.
    pub fn out(&mut self, c: usize) -> &mut Vec<u8> {
        let conn = self.conns[c].as_mut().expect("live connection");
        if !conn.dirty {
            conn.dirty = true;
            self.dirty.push(c);
        }
        &mut conn.wbuf
    }

    /// Closes `c` now (whatever is still buffered is dropped). Its slot is reused after the turn.
    pub fn close(&mut self, c: usize) {
        if let Some(mut conn) = self.conns[c].take() {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            if !conn.ready {
                self.handshaking -= 1;
            }
            self.open -= 1;
            self.freeing.push(c);
        }
    }

    /// Writes DISCONNECT on every open connection and closes them all.
    pub fn disconnect_all(&mut self) {
        for c in 0..self.conns.len() {
            if let Some(conn) = self.conns[c].as_mut() {
                if conn.ready {
                    let mut d = Vec::new();
                    mqtt::disconnect(&mut d);
                    conn.wbuf.extend_from_slice(&d);
                    let _ = flush_conn(conn);
                }
            }
            self.close(c);
        }
    }

    fn start_pending(&mut self) {
        while self.handshaking < self.max_handshakes {
            let Some((spec, username)) = self.pending.pop_front() else { break };
            let source = self.sources[self.next_source % self.sources.len()];
            self.next_source += 1;
            match connect_from(source, self.target) {
                Ok(mut stream) => {
                    let c = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    if let Err(e) = self.poll.registry().register(&mut stream, Token(c), Interest::READABLE | Interest::WRITABLE) {
                        self.error(format!("register: {e}"));
                        self.free.push(c);
                        continue;
                    }
                    self.conns[c] = Some(Conn {
                        stream,
                        rbuf: Vec::new(),
                        wbuf: Vec::new(),
                        wpos: 0,
                        tcp_up: false,
                        dirty: false,
                        client_id: spec.client_id,
                        username,
                        keepalive: spec.keepalive,
                        version: spec.version,
                        ready: false,
                        role: spec.role,
                        index: spec.index,
                        inflight: 0,
                        next_id: 1,
                        receive_max: 65535,
                    });
                    self.handshaking += 1;
                    self.open += 1;
                }
                Err(e) => self.error(format!("connect: {e}")),
            }
        }
    }

    /// One turn: wait up to `timeout` for events, hand packets to `h`, open queued connections,
    /// flush every connection written to.
    pub fn turn<H: Handler>(&mut self, h: &mut H, timeout: Option<Duration>) {
        self.start_pending();
        let mut events = self.events.take().expect("events");
        if let Err(e) = self.poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                self.error(format!("poll: {e}"));
            }
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        for ev in events.iter() {
            let c = ev.token().0;
            if self.get(c).is_none() {
                continue;
            }
            if ev.is_writable() || ev.is_error() {
                let password = self.credentials.password.as_deref();
                let (proxy_protocol, proxied, target) = (self.proxy_protocol, self.proxied, self.target);
                let conn = self.conns[c].as_mut().expect("live connection");
                if !conn.tcp_up {
                    match tcp_established(&conn.stream) {
                        Ok(true) => {
                            conn.tcp_up = true;
                            let _ = conn.stream.set_nodelay(true);
                            let mut hello = Vec::with_capacity(96);
                            if proxy_protocol != 0 {
                                proxy_header(&mut hello, proxy_protocol, proxied, target);
                                self.proxied = proxied.wrapping_add(1);
                            }
                            mqtt::connect(&mut hello, conn.version, &conn.client_id, conn.keepalive, conn.username.as_deref(), password);
                            conn.wbuf.extend_from_slice(&hello);
                            self.mark_dirty(c);
                        }
                        Ok(false) => {}
                        Err(e) => {
                            self.fail(h, c, format!("connect: {e}"));
                            continue;
                        }
                    }
                } else if let Err(e) = flush_conn(self.conn(c)) {
                    self.fail(h, c, format!("write: {e}"));
                    continue;
                }
            }
            if ev.is_readable() || ev.is_read_closed() {
                self.read(h, c, &mut scratch);
            }
        }
        self.scratch = scratch;
        self.events = Some(events);
        h.tick(self);
        self.start_pending();
        self.flush();
        self.free.append(&mut self.freeing);
    }

    fn mark_dirty(&mut self, c: usize) {
        let conn = self.conn(c);
        if !conn.dirty {
            conn.dirty = true;
            self.dirty.push(c);
        }
    }

    /// Writes what every dirty connection has buffered (until the socket would block).
    pub fn flush(&mut self) {
        let dirty = std::mem::take(&mut self.dirty);
        for &c in &dirty {
            let Some(conn) = self.conns[c].as_mut() else { continue };
            conn.dirty = false;
            if !conn.tcp_up {
                continue;
            }
            if let Err(e) = flush_conn(conn) {
                self.error(format!("write: {e}"));
                self.close(c);
            }
        }
        let mut dirty = dirty;
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }

    fn fail<H: Handler>(&mut self, h: &mut H, c: usize, what: String) {
        self.error(what);
        self.close(c);
        h.lost(self, c);
    }

    fn read<H: Handler>(&mut self, h: &mut H, c: usize, scratch: &mut [u8]) {
        loop {
            let Some(conn) = self.conns[c].as_mut() else { return };
            match conn.stream.read(scratch) {
                Ok(0) => {
                    self.fail(h, c, "closed by the broker".into());
                    return;
                }
                Ok(n) => {
                    self.bytes_in += n as u64;
                    let mut rbuf = std::mem::take(&mut conn.rbuf);
                    let consumed = if rbuf.is_empty() {
                        let used = self.dispatch(h, c, &scratch[..n]);
                        if used < n {
                            rbuf.extend_from_slice(&scratch[used..n]);
                        }
                        None
                    } else {
                        rbuf.extend_from_slice(&scratch[..n]);
                        Some(self.dispatch(h, c, &rbuf))
                    };
                    if let Some(used) = consumed {
                        rbuf.drain(..used);
                    }
                    match self.conns[c].as_mut() {
                        Some(conn) => conn.rbuf = rbuf,
                        None => return,
                    }
                    if n < scratch.len() {
                        // A short read emptied the socket; data arriving later raises a new
                        // edge, so no extra read (that would return WouldBlock) is needed.
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(h, c, format!("read: {e}"));
                    return;
                }
            }
        }
    }

    /// Hands every whole packet in `buf` to `h`; returns the bytes used.
    fn dispatch<H: Handler>(&mut self, h: &mut H, c: usize, buf: &[u8]) -> usize {
        let mut at = 0;
        loop {
            if self.get(c).is_none() {
                return buf.len();
            }
            match mqtt::frame(&buf[at..]) {
                Frame::Incomplete => return at,
                Frame::Malformed => {
                    self.fail(h, c, "malformed packet from the broker".into());
                    return buf.len();
                }
                Frame::Packet(p, used) => {
                    at += used;
                    let conn = self.conn(c);
                    if !conn.ready {
                        let version = conn.version;
                        match (p.kind, mqtt::parse_connack(version, &p)) {
                            (mqtt::CONNACK, Some((0, receive_max))) => {
                                conn.ready = true;
                                conn.receive_max = receive_max as u32;
                                self.handshaking -= 1;
                                h.ready(self, c);
                            }
                            (mqtt::CONNACK, Some((code, _))) => {
                                self.refused += 1;
                                self.first_refusal.get_or_insert(code);
                                self.fail(h, c, format!("CONNACK refused: 0x{code:02x}"));
                            }
                            _ => self.fail(h, c, format!("expected CONNACK, got type {}", p.kind)),
                        }
                    } else if p.kind == mqtt::DISCONNECT {
                        let reason = p.body.first().copied().unwrap_or(0);
                        self.fail(h, c, format!("DISCONNECT from the broker: 0x{reason:02x}"));
                    } else {
                        h.packet(self, c, &p);
                    }
                }
            }
        }
    }
}

/// "connect: Cannot assign requested address (os error 99)" -> "connect EADDRNOTAVAIL"; a message
/// without an OS error is its own kind.
fn error_kind(what: &str) -> String {
    let errno = what.rsplit_once("(os error ").and_then(|(_, rest)| rest.trim_end_matches(')').parse::<i32>().ok());
    match (errno, what.split_once(':')) {
        (Some(e), Some((op, _))) => format!("{op} {}", errno_name(e)),
        (Some(e), None) => errno_name(e),
        (None, _) => what.chars().take(60).collect(),
    }
}

fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::EPIPE => "EPIPE",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ENOBUFS => "ENOBUFS",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

fn flush_conn(conn: &mut Conn) -> io::Result<()> {
    while conn.wpos < conn.wbuf.len() {
        match conn.stream.write(&conn.wbuf[conn.wpos..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => conn.wpos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    conn.wbuf.clear();
    conn.wpos = 0;
    Ok(())
}

fn tcp_established(stream: &TcpStream) -> io::Result<bool> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e),
    }
}

/// A non-blocking connect from `source` (port chosen at connect time, so many source addresses
/// multiply the ephemeral ports available for connection-rate runs).
/// A load balancer's PROXY protocol header (v1 text or v2 binary) for its `n`th client:
/// 10.0.0.0 + n, port 1024 + n % 60000, to `target`.
fn proxy_header(out: &mut Vec<u8>, version: u8, n: u32, target: SocketAddrV4) {
    let client = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 0)).wrapping_add(n & 0x00ff_ffff));
    let port = 1024 + (n % 60000) as u16;
    if version == 1 {
        out.extend_from_slice(format!("PROXY TCP4 {client} {} {port} {}\r\n", target.ip(), target.port()).as_bytes());
        return;
    }
    out.extend_from_slice(b"\r\n\r\n\0\r\nQUIT\n");
    out.extend_from_slice(&[0x21, 0x11, 0, 12]); // v2 PROXY, TCP over IPv4, 12 bytes
    out.extend_from_slice(&client.octets());
    out.extend_from_slice(&target.ip().octets());
    out.extend_from_slice(&port.to_be_bytes());
    out.extend_from_slice(&target.port().to_be_bytes());
}

fn connect_from(source: Ipv4Addr, target: SocketAddrV4) -> io::Result<TcpStream> {
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let stream = std::net::TcpStream::from_raw_fd(fd);
        let one: libc::c_int = 1;
        // IP_BIND_ADDRESS_NO_PORT: pick the port at connect(), per destination.
        libc::setsockopt(fd, libc::IPPROTO_IP, 24, &one as *const _ as *const libc::c_void, 4);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from(source).to_be();
        if libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) != 0 {
            return Err(io::Error::last_os_error());
        }
        sa.sin_addr.s_addr = u32::from(*target.ip()).to_be();
        sa.sin_port = target.port().to_be();
        if libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                return Err(e);
            }
        }
        Ok(TcpStream::from_std(stream))
    }
}
