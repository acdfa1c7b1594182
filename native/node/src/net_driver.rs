//! NetDriver: the connection driver of one worker thread (spindle_core::net::Driver), woken by
//! the thread's own libuv loop (uv_waker.rs). Calls are per turn and per tick, never per packet:
//! `turn` hands over every event and all the bytes read as one batch; `flush` takes one tick's
//! output for every connection from an arena the worker filled.

use napi::bindgen_prelude::*;
use napi::JsValue;
use napi_derive::napi;
use std::sync::Arc;

use spindle_core::codec::{self, CodecError, FrameRef, FrameSource, ProtocolVersion};
use spindle_core::net::proxy::{Cidr, ProxyMode, ProxyPolicy};
use spindle_core::net::{Driver, EventSink, ListenOptions, EVENT_WORDS, EV_CLOSE, EV_DATA, EV_OPEN};
use spindle_core::tls::{TlsEndpoint, TlsSettings};

use crate::errors::{io_error, ErrorInfo};
use crate::framer::{describe_frame, DESC_SLOTS};
use crate::uv_waker::Waker;

/// Words at the start of the event table before the records: count, more, descriptors, 0.
const HEADER_WORDS: usize = 4;
/// Bytes read, split into packets: `[EV_FRAMES | flags << 8, id, first descriptor, count]`
/// replaces the driver's EV_DATA. The descriptors (12 words each, as Framer.feed writes them) are
/// in `descriptors()`, their offsets into the turn's data.
const EV_FRAMES: u32 = 6;
/// EV_FRAMES flag: a packet is half received (kept here for the next read).
const FRAMES_PARTIAL: u32 = 1 << 8;
/// EV_FRAMES flag: the bytes broke the protocol after the described packets (`framerError(id)`).
const FRAMES_FAILED: u32 = 1 << 9;
const SLOT_MASK: u32 = (1 << 24) - 1;
/// Bytes one turn reads at most (over all connections).
const TURN_DATA_LIMIT: usize = 1 << 16;

/// A TLS endpoint's files and client-certificate policy (mqtt.tls.*, an endpoint's sslConfig).
#[napi(object)]
pub struct NetTlsOptions {
    pub cert: String,
    pub key: String,
    pub ca: Option<String>,
    pub request_cert: bool,
    pub reject_unauthorized: bool,
    /// Certificate revocation lists (PEM or DER) client certificates are checked against.
    pub crl: Option<String>,
}

/// A listener's PROXY protocol settings (an endpoint's proxyProtocol, proxyProtocolTrusted).
#[napi(object)]
pub struct NetProxyOptions {
    /// 'optional' or 'required'.
    pub mode: String,
    /// CIDR blocks (or addresses) of the balancers.
    pub trusted: Vec<String>,
    /// Milliseconds a connection has to send its header.
    pub timeout_ms: u32,
}

/// What a connection's PROXY header said, and who sent it.
#[napi(object)]
pub struct NetProxyInfo {
    /// The TCP peer: the balancer.
    pub address: String,
    pub port: u32,
    /// 1 or 2.
    pub version: u32,
    /// PP2_TYPE_AUTHORITY: the server name the client asked the balancer for (its TLS SNI).
    pub authority: Option<String>,
    /// PP2_TYPE_SSL: the client spoke TLS to the balancer.
    pub ssl: bool,
    /// PP2_SUBTYPE_SSL_VERSION.
    pub ssl_version: Option<String>,
    /// PP2_SUBTYPE_SSL_CN: the client certificate's CN, as sent (verified or not).
    pub ssl_cn: Option<String>,
    /// The client presented a certificate (PP2_CLIENT_CERT_CONN or _SESS) that the balancer verified.
    pub cert_verified: bool,
}

fn proxy_policy(o: &NetProxyOptions) -> Result<ProxyPolicy, String> {
    let mode = match o.mode.as_str() {
        "optional" => ProxyMode::Optional,
        "required" => ProxyMode::Required,
        m => return Err(Error::new("EINVAL".to_string(), format!("proxy mode {m:?}: expected optional or required"))),
    };
    let mut trusted = Vec::with_capacity(o.trusted.len());
    for t in &o.trusted {
        trusted.push(Cidr::parse(t).ok_or_else(|| Error::new("EINVAL".to_string(), format!("not an address or CIDR block: {t:?}")))?);
    }
    Ok(ProxyPolicy { mode, trusted, timeout_ms: o.timeout_ms })
}

fn load_tls(o: &NetTlsOptions) -> Result<Arc<TlsEndpoint>, String> {
    let settings = TlsSettings {
        cert: o.cert.clone().into(),
        key: o.key.clone().into(),
        ca: o.ca.clone().filter(|c| !c.is_empty()).map(Into::into),
        request_cert: o.request_cert,
        reject_unauthorized: o.reject_unauthorized,
        crl: o.crl.clone().filter(|c| !c.is_empty()).map(Into::into),
    };
    TlsEndpoint::load(&settings).map(Arc::new).map_err(|e| Error::new("TLS_CONFIG".to_string(), e.to_string()))
}

/// The framing state of one connection: the packet being assembled across reads, the protocol
/// version PUBLISH packets are decoded with, and the error that stopped it.
struct Framing {
    framer: codec::Framer,
    version: ProtocolVersion,
    error: Option<CodecError>,
}

#[napi]
pub struct NetDriver {
    driver: Driver,
    /// Reused for every turn's reads; each turn's bytes leave in a Buffer of their own size.
    data: Vec<u8>,
    waker: Option<Waker>,
    /// Per connection slot (its id's low 24 bits), from OPEN to CLOSE or destroy.
    framing: Vec<Option<Framing>>,
    /// The largest packet per listener (its endpoint's limit).
    max_packet: Vec<u32>,
    frames: Vec<FrameRef>,
    /// The descriptors of the last turn (taken by `descriptors()`).
    desc: Vec<u32>,
    /// Per listener: the OCSP response stapled, and the server certificate (DER) it is for; kept
    /// across certificate reloads while the certificate stays the same.
    staples: Vec<Option<Staple>>,
}

struct Staple {
    leaf: Vec<u8>,
    ocsp: Vec<u8>,
}

#[napi]
impl NetDriver {
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Result<Self, String> {
        Ok(NetDriver {
            driver: Driver::new().map_err(io_error)?,
            data: Vec::new(),
            waker: None,
            framing: Vec::new(),
            max_packet: Vec::new(),
            frames: Vec::new(),
            desc: Vec::new(),
            staples: Vec::new(),
        })
    }

    /// Calls `onReady()` from this thread's event loop whenever a turn has something to do.
    #[napi(catch_unwind)]
    pub fn start(&mut self, env: Env, on_ready: Function<(), ()>) -> Result<()> {
        if self.waker.is_some() {
            return Err(Error::from_reason("NetDriver already started"));
        }
        // SAFETY: env is this call's environment, on_ready a function in it; the epoll fd lives
        // as long as self, and stop() runs before it is dropped.
        self.waker = Some(unsafe { Waker::start(env.raw(), self.driver.fd(), on_ready.raw())? });
        Ok(())
    }

    /// Stops the wake-ups and closes every connection and listener.
    #[napi(catch_unwind)]
    pub fn stop(&mut self) {
        if let Some(mut w) = self.waker.take() {
            w.stop();
        }
        self.driver.close_all();
    }

    /// Accepts on a listening socket fd (the driver owns it from now on). Returns the listener
    /// number that OPEN events carry.
    /// With `tls`, connections speak TLS (rustls); the certificate files are read now.
    /// `max_packet_size`: the endpoint's largest packet, fixed header included (checked from the
    /// fixed header alone, before the body is kept).
    #[napi(catch_unwind)]
    pub fn listen(&mut self, fd: i32, no_delay: bool, keep_alive_secs: Option<u32>, tls: Option<NetTlsOptions>, max_packet_size: u32) -> Result<u32, String> {
        let tls = tls.as_ref().map(load_tls).transpose()?;
        let n = self.driver.listen(fd, ListenOptions { no_delay, keep_alive_secs }, tls).map_err(io_error)?;
        if self.max_packet.len() <= n as usize {
            self.max_packet.resize(n as usize + 1, 0);
        }
        self.max_packet[n as usize] = max_packet_size;
        if let Some(s) = self.staples.get_mut(n as usize) {
            *s = None; // a listener number used before
        }
        Ok(n)
    }

    /// A new packet limit for a listener's new connections.
    #[napi(catch_unwind)]
    pub fn set_max_packet_size(&mut self, listener: u32, max_packet_size: u32) {
        if let Some(m) = self.max_packet.get_mut(listener as usize) {
            *m = max_packet_size;
        }
    }

    /// The protocol level a connection's CONNECT negotiated (3, 4 or 5): PUBLISH packets are
    /// decoded by it from the next read on.
    #[napi(catch_unwind)]
    pub fn set_version(&mut self, id: u32, level: u32) {
        if let (Some(f), Some(v)) = (self.framing_mut(id), u8::try_from(level).ok().and_then(ProtocolVersion::from_level)) {
            f.version = v;
        }
    }

    /// The error that stopped a connection's framing (after an EV_FRAMES with FRAMES_FAILED).
    #[napi(catch_unwind)]
    pub fn framer_error(&self, id: u32) -> Option<ErrorInfo> {
        self.framing.get((id & SLOT_MASK) as usize)?.as_ref()?.error.map(ErrorInfo::from)
    }

    /// The descriptors of the last turn's EV_FRAMES events (12 words a packet).
    #[napi(catch_unwind)]
    pub fn descriptors(&mut self) -> Uint32Array {
        Uint32Array::new(std::mem::take(&mut self.desc))
    }

    /// Reads a TLS listener's certificate files again for its new connections (open ones keep
    /// theirs). Throws, changing nothing, when they do not load.
    #[napi(catch_unwind)]
    pub fn set_tls(&mut self, listener: u32, tls: NetTlsOptions) -> Result<(), String> {
        let mut endpoint = load_tls(&tls)?;
        // The stapled response stays while the certificate is the one it is for.
        if let Some(Some(s)) = self.staples.get(listener as usize) {
            if endpoint.leaf().as_ref() == s.leaf.as_slice() {
                endpoint = Arc::new(endpoint.with_ocsp(Some(s.ocsp.clone())));
            }
        }
        if !self.driver.set_tls(listener, endpoint) {
            return Err(Error::new("EINVAL".to_string(), format!("listener {listener} is not a TLS listener")));
        }
        Ok(())
    }

    /// Staples `ocsp` (a DER OCSPResponse) to a TLS listener's new handshakes, when the listener's
    /// certificate is `leaf` (DER): answers false, changing nothing, when it is another one (the
    /// certificates were reloaded since the response was fetched). Null `ocsp`: no staple.
    #[napi(catch_unwind)]
    pub fn set_ocsp_staple(&mut self, listener: u32, ocsp: Option<&[u8]>, leaf: &[u8]) -> Result<bool, String> {
        let Some(current) = self.driver.tls(listener) else {
            return Err(Error::new("EINVAL".to_string(), format!("listener {listener} is not a TLS listener")));
        };
        if current.leaf().as_ref() != leaf {
            return Ok(false);
        }
        let endpoint = Arc::new(current.with_ocsp(ocsp.map(<[u8]>::to_vec)));
        self.driver.set_tls(listener, endpoint);
        let i = listener as usize;
        if self.staples.len() <= i {
            self.staples.resize_with(i + 1, || None);
        }
        self.staples[i] = ocsp.map(|o| Staple { leaf: leaf.to_vec(), ocsp: o.to_vec() });
        Ok(true)
    }

    /// The certificates a TLS client presented (DER, its own first), once the handshake is done;
    /// null before, without TLS, or when it presented none. Asked only for client OCSP checks.
    #[napi(catch_unwind)]
    pub fn peer_certificates(&self, id: u32) -> Option<Vec<Buffer>> {
        Some(self.driver.peer_certificates(id)?.into_iter().map(Buffer::from).collect())
    }

    /// The subject CN of a TLS client certificate that verified (null otherwise).
    #[napi(catch_unwind)]
    pub fn verified_cn(&self, id: u32) -> Option<String> {
        self.driver.verified_cn(id)
    }

    /// The PROXY protocol settings of a listener's new connections (null: off). Called right after
    /// `listen`, before the next turn accepts anything.
    #[napi(catch_unwind)]
    pub fn set_proxy(&mut self, listener: u32, proxy: Option<NetProxyOptions>) -> Result<(), String> {
        let policy = proxy.as_ref().map(proxy_policy).transpose()?;
        if !self.driver.set_proxy(listener, policy) {
            return Err(Error::new("EINVAL".to_string(), format!("no listener {listener}")));
        }
        Ok(())
    }

    /// Closes the connections whose PROXY header is overdue; their EV_PROXY_ERROR events come with
    /// the next turn. Returns how many.
    #[napi(catch_unwind)]
    pub fn expire_proxy_headers(&mut self) -> u32 {
        self.driver.expire_headers(std::time::Instant::now()) as u32
    }

    /// What the PROXY header of a connection said (null: none, or not open).
    #[napi(catch_unwind)]
    pub fn proxy_info(&self, id: u32) -> Option<NetProxyInfo> {
        let (peer, h) = self.driver.proxied(id)?;
        let ssl = h.ssl.as_ref();
        Some(NetProxyInfo {
            address: peer.ip().to_string(),
            port: peer.port() as u32,
            version: h.version as u32,
            authority: h.authority.clone(),
            ssl: ssl.is_some_and(|s| s.client & spindle_core::net::proxy::PP2_CLIENT_SSL != 0),
            ssl_version: ssl.and_then(|s| s.version.clone()),
            ssl_cn: ssl.and_then(|s| s.cn.clone()),
            cert_verified: ssl.is_some_and(|s| s.verified()),
        })
    }

    /// Stops accepting on a listener and closes its socket.
    #[napi(catch_unwind)]
    pub fn unlisten(&mut self, listener: u32) {
        self.driver.unlisten(listener);
    }

    /// One turn. Writes `[count, more, 0, 0]` then `count` records of 4 words to `events`, and
    /// returns the bytes read (DATA records point into it), or null when none were read.
    #[napi(catch_unwind)]
    pub fn turn(&mut self, env: Env, mut events: Uint32ArraySlice) -> Result<Option<BufferSlice<'_>>> {
        // SAFETY: the table is only read by JS after this call returns (same thread).
        let table = unsafe { events.as_mut() };
        if table.len() < HEADER_WORDS + 2 * EVENT_WORDS {
            return Err(Error::from_reason("event table too small"));
        }
        let (header, records) = table.split_at_mut(HEADER_WORDS);
        let mut sink = EventSink::new(records, std::mem::take(&mut self.data), TURN_DATA_LIMIT);
        let more = self.driver.turn(&mut sink);
        let count = sink.count();
        header[0] = count as u32;
        header[1] = more as u32;
        let mut data = sink.into_data();
        header[2] = self.frame(&mut records[..count * EVENT_WORDS], &mut data) as u32;
        let out = if data.is_empty() { None } else { Some(BufferSlice::copy_from(&env, &data)?) };
        self.data = data;
        Ok(out)
    }

    /// Writes one tick's output: `count` records (id, offset, length) into `arena`. Writes
    /// (id, queued) pairs to `status` for connections left with bytes queued; returns how many,
    /// with bit 31 set when a turn should follow soon (a write failed: its close is waiting).
    #[napi(catch_unwind)]
    pub fn flush(&mut self, arena: &[u8], records: Uint32ArraySlice, count: u32, mut status: Uint32ArraySlice) -> u32 {
        let records = &records[..(count as usize * 3).min(records.len())];
        // SAFETY: read by JS after this call returns.
        let status = unsafe { status.as_mut() };
        let n = self.driver.flush(arena, records, status) as u32;
        n | ((self.driver.has_more() as u32) << 31)
    }

    /// Writes one frame now (a large one). Returns the bytes left queued, or -1 when the
    /// connection is gone.
    #[napi(catch_unwind)]
    pub fn write(&mut self, id: u32, bytes: &[u8]) -> f64 {
        self.driver.write(id, bytes).map(|q| q as f64).unwrap_or(-1.0)
    }

    #[napi(catch_unwind)]
    pub fn pause(&mut self, id: u32) {
        self.driver.pause(id);
    }

    /// Reads the connection again; true when a turn should follow soon.
    #[napi(catch_unwind)]
    pub fn resume(&mut self, id: u32) -> bool {
        self.driver.resume(id)
    }

    /// Orderly close (queued bytes, then FIN); a CLOSE event follows when the peer closes.
    #[napi(catch_unwind)]
    pub fn end(&mut self, id: u32) -> bool {
        self.driver.end(id)
    }

    /// Closes now; no event follows.
    #[napi(catch_unwind)]
    pub fn destroy(&mut self, id: u32) {
        if self.driver.peer(id).is_some() {
            if let Some(f) = self.framing.get_mut((id & SLOT_MASK) as usize) {
                *f = None;
            }
        }
        self.driver.destroy(id);
    }

    /// The peer's IP address ('' when the id is not open).
    #[napi(catch_unwind)]
    pub fn peer_address(&self, id: u32) -> String {
        // IPv4-mapped peers of a dual-stack listener read `::ffff:a.b.c.d`, as in Node.
        self.driver.peer(id).map(|a| a.ip().to_string()).unwrap_or_default()
    }
}

impl NetDriver {
    fn framing_mut(&mut self, id: u32) -> Option<&mut Framing> {
        self.framing.get_mut((id & SLOT_MASK) as usize)?.as_mut()
    }

    /// Splits every DATA event's bytes into packets: OPEN makes a connection's framing, CLOSE
    /// drops it, DATA becomes FRAMES with its descriptors. A packet completed from bytes of
    /// earlier reads is copied to the end of `data`. Returns the descriptors written.
    fn frame(&mut self, records: &mut [u32], data: &mut Vec<u8>) -> usize {
        let mut desc = std::mem::take(&mut self.desc);
        desc.clear();
        let mut frames = std::mem::take(&mut self.frames);
        for r in records.chunks_exact_mut(EVENT_WORDS) {
            let slot = (r[1] & SLOT_MASK) as usize;
            match r[0] {
                EV_OPEN => {
                    if self.framing.len() <= slot {
                        self.framing.resize_with(slot + 1, || None);
                    }
                    let max = self.max_packet.get((r[2] & 0xffff) as usize).copied().unwrap_or(268_435_460);
                    self.framing[slot] = Some(Framing { framer: codec::Framer::new(max), version: ProtocolVersion::V311, error: None });
                }
                EV_CLOSE => {
                    if let Some(f) = self.framing.get_mut(slot) {
                        *f = None;
                    }
                }
                EV_DATA => {
                    let (at, len) = (r[2] as usize, r[3] as usize);
                    let first = desc.len() / DESC_SLOTS as usize;
                    let mut count = 0u32;
                    let mut flags = 0;
                    if let Some(Some(f)) = self.framing.get_mut(slot) {
                        if f.error.is_none() {
                            frames.clear();
                            if let Err(e) = f.framer.feed(&data[at..at + len], &mut frames) {
                                f.error = Some(e);
                            }
                            for frame in &frames {
                                let base = match frame.source {
                                    FrameSource::Input => at + frame.start,
                                    FrameSource::Held => {
                                        let base = data.len();
                                        data.extend_from_slice(f.framer.held_frame());
                                        base
                                    }
                                };
                                let d = desc.len();
                                desc.resize(d + DESC_SLOTS as usize, 0);
                                if let Err(e) = describe_frame(f.version, frame.header, &data[base..base + frame.len], base as u32, false, &mut desc[d..]) {
                                    // Stop at the first invalid packet: what came before it stands.
                                    desc.truncate(d);
                                    f.error = Some(e);
                                    break;
                                }
                                count += 1;
                            }
                            if f.framer.buffered() > 0 {
                                flags |= FRAMES_PARTIAL;
                            }
                        }
                        if f.error.is_some() {
                            flags |= FRAMES_FAILED;
                        }
                    }
                    r[0] = EV_FRAMES | flags;
                    r[2] = first as u32;
                    r[3] = count;
                }
                _ => {}
            }
        }
        self.frames = frames;
        let n = desc.len() / DESC_SLOTS as usize;
        self.desc = desc;
        n
    }
}

impl Drop for NetDriver {
    fn drop(&mut self) {
        self.stop();
    }
}
