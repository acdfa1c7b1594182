//! NetDriver: the connection driver of one worker thread (spindle_core::net::Driver), woken by
//! the thread's own libuv loop (uv_waker.rs). Calls are per turn and per tick, never per packet:
//! `turn` hands over every event and all the bytes read as one batch; `flush` takes one tick's
//! output for every connection from an arena the worker filled.

use napi::bindgen_prelude::*;
use napi::JsValue;
use napi_derive::napi;
use std::sync::Arc;

use spindle_core::net::{Driver, EventSink, ListenOptions, EVENT_WORDS};
use spindle_core::tls::{TlsEndpoint, TlsSettings};

use crate::errors::io_error;
use crate::uv_waker::Waker;

/// Words at the start of the event table before the records: count, more, 0, 0.
const HEADER_WORDS: usize = 4;
/// Bytes one turn reads at most (over all connections).
const TURN_DATA_LIMIT: usize = 1 << 20;

/// A TLS endpoint's files and client-certificate policy (mqtt.tls.*, an endpoint's sslConfig).
#[napi(object)]
pub struct NetTlsOptions {
    pub cert: String,
    pub key: String,
    pub ca: Option<String>,
    pub request_cert: bool,
    pub reject_unauthorized: bool,
}

fn load_tls(o: &NetTlsOptions) -> Result<Arc<TlsEndpoint>, String> {
    let settings = TlsSettings {
        cert: o.cert.clone().into(),
        key: o.key.clone().into(),
        ca: o.ca.clone().filter(|c| !c.is_empty()).map(Into::into),
        request_cert: o.request_cert,
        reject_unauthorized: o.reject_unauthorized,
    };
    TlsEndpoint::load(&settings).map(Arc::new).map_err(|e| Error::new("TLS_CONFIG".to_string(), e.to_string()))
}

#[napi(object)]
pub struct NetStats {
    pub accepted: f64,
    pub closed: f64,
    pub accept_errors: f64,
    pub bytes_read: f64,
    pub bytes_written: f64,
    pub open: f64,
}

#[napi]
pub struct NetDriver {
    driver: Driver,
    /// Reused for every turn's reads; each turn's bytes leave in a Buffer of their own size.
    data: Vec<u8>,
    waker: Option<Waker>,
}

#[napi]
impl NetDriver {
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Result<Self, String> {
        Ok(NetDriver { driver: Driver::new().map_err(io_error)?, data: Vec::new(), waker: None })
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
    #[napi(catch_unwind)]
    pub fn listen(&mut self, fd: i32, no_delay: bool, keep_alive_secs: Option<u32>, tls: Option<NetTlsOptions>) -> Result<u32, String> {
        let tls = tls.as_ref().map(load_tls).transpose()?;
        self.driver.listen(fd, ListenOptions { no_delay, keep_alive_secs }, tls).map_err(io_error)
    }

    /// Reads a TLS listener's certificate files again for its new connections (open ones keep
    /// theirs). Throws, changing nothing, when they do not load.
    #[napi(catch_unwind)]
    pub fn set_tls(&mut self, listener: u32, tls: NetTlsOptions) -> Result<(), String> {
        let endpoint = load_tls(&tls)?;
        if !self.driver.set_tls(listener, endpoint) {
            return Err(Error::new("EINVAL".to_string(), format!("listener {listener} is not a TLS listener")));
        }
        Ok(())
    }

    /// The subject CN of a TLS client certificate that verified (null otherwise).
    #[napi(catch_unwind)]
    pub fn verified_cn(&self, id: u32) -> Option<String> {
        self.driver.verified_cn(id)
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
        header[0] = sink.count() as u32;
        header[1] = more as u32;
        let data = sink.into_data();
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
        self.driver.destroy(id);
    }

    /// The peer's IP address ('' when the id is not open).
    #[napi(catch_unwind)]
    pub fn peer_address(&self, id: u32) -> String {
        // IPv4-mapped peers of a dual-stack listener read `::ffff:a.b.c.d`, as in Node.
        self.driver.peer(id).map(|a| a.ip().to_string()).unwrap_or_default()
    }

    #[napi(catch_unwind)]
    pub fn peer_port(&self, id: u32) -> u32 {
        self.driver.peer(id).map(|a| a.port() as u32).unwrap_or(0)
    }

    #[napi(catch_unwind)]
    pub fn queued(&self, id: u32) -> f64 {
        self.driver.queued(id) as f64
    }

    #[napi(catch_unwind)]
    pub fn stats(&self) -> NetStats {
        let s = self.driver.stats;
        NetStats {
            accepted: s.accepted as f64,
            closed: s.closed as f64,
            accept_errors: s.accept_errors as f64,
            bytes_read: s.bytes_read as f64,
            bytes_written: s.bytes_written as f64,
            open: s.open as f64,
        }
    }
}

impl Drop for NetDriver {
    fn drop(&mut self) {
        self.stop();
    }
}
