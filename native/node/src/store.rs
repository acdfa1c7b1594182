//! LocalStore: the napi binding of spindle_core::store (the LOCAL, SQLite-backed store).
//!
//! One core store (one SQLite connection, one writer thread) per canonical database path per
//! process: every worker thread that opens the same path shares it, reference-counted by the open
//! handles. Each JS handle has a completion sink with one weak threadsafe function. An operation
//! method queues the operation and returns a ticket (u32); when the writer has committed a batch it
//! pushes the results into the sinks and wakes each sink's thread once. The JS side then calls
//! `drain()`, which returns `[ticket, kind]` pairs: kind 0 done, 1 done with a value to fetch with
//! the matching `take*` method, 2 failed (every `take*` throws the error, with a stable `code`).
//! So the per-operation cost is one native call plus a Map entry in JS; the wake-up is per batch.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use parking_lot::Mutex;
use spindle_core::store::{self as core, Completion, Op, Reply, StoreError};

use crate::errors::invalid_arg;

struct Shared {
    store: Arc<core::LocalStore>,
    refs: usize,
}

static STORES: LazyLock<Mutex<HashMap<PathBuf, Shared>>> = LazyLock::new(Default::default);

type Wake = ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>;

struct Sink {
    queue: Mutex<Vec<(u32, std::result::Result<Reply, StoreError>)>>,
    notified: AtomicBool,
    wake: Wake,
}

impl Completion for Sink {
    fn complete(&self, ticket: u64, result: std::result::Result<Reply, StoreError>) {
        self.queue.lock().push((ticket as u32, result));
    }
    fn flush(&self) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            self.wake.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

fn store_error(e: StoreError) -> Error<String> {
    Error::new(e.code.as_str().to_string(), e.message)
}

fn id(what: &str, v: BigInt) -> Result<i64, String> {
    let (value, lossless) = v.get_i64();
    if !lossless || value < 0 {
        return Err(invalid_arg("STORE_INVALID", format!("{what} must be a bigint in 0..2^63")));
    }
    Ok(value)
}

fn small(what: &str, v: u32, max: u32) -> Result<u32, String> {
    if v > max {
        return Err(invalid_arg("STORE_INVALID", format!("{what} must be at most {max}, not {v}")));
    }
    Ok(v)
}

fn ms(what: &str, v: f64) -> Result<i64, String> {
    if !v.is_finite() || v.fract() != 0.0 || v.abs() > 9007199254740991.0 {
        return Err(invalid_arg("STORE_INVALID", format!("{what} must be an integer number of ms, not {v}")));
    }
    Ok(v as i64)
}

/// Where `path` would canonically be: its directory resolved (it must exist) plus the file name.
fn canonical(path: &str) -> Result<PathBuf, String> {
    let p = Path::new(path);
    let name = p.file_name().ok_or_else(|| invalid_arg("STORE_INVALID", format!("{path} is not a file path")))?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| Error::new("STORE_IO".to_string(), format!("cannot open {path}: directory {}: {e}", dir.display())))?;
    Ok(dir.join(name))
}

fn release(key: &Path) -> Option<Arc<core::LocalStore>> {
    let mut stores = STORES.lock();
    let last = match stores.get_mut(key) {
        Some(shared) => {
            shared.refs -= 1;
            shared.refs == 0
        }
        None => false,
    };
    if last {
        stores.remove(key).map(|s| s.store)
    } else {
        None
    }
}

#[napi(object)]
pub struct JsStoredMessage {
    pub id: BigInt,
    pub topic: String,
    pub payload: Buffer,
    pub qos: u32,
    pub retain: bool,
    pub properties: Option<Buffer>,
    pub expires_at: f64,
}

#[napi(object, object_from_js = false)]
pub struct JsLoadedMessage {
    pub id: i64n,
    pub topic: String,
    pub payload: Buffer,
    pub qos: u32,
    pub retain: bool,
    pub properties: Option<Buffer>,
    pub expires_at: f64,
}

#[napi(object)]
pub struct JsStoredWill {
    pub topic: String,
    pub payload: Buffer,
    pub qos: u32,
    pub retain: bool,
    pub properties: Option<Buffer>,
    /// Message Expiry Interval, seconds, counted from the will's publication; 0 none.
    pub expiry_interval: u32,
    pub delay: u32,
}

#[napi(object)]
pub struct JsStoredSession {
    pub client_id: String,
    pub expiry_interval: u32,
    pub disconnected_at: Option<f64>,
    pub username: Option<String>,
    pub will: Option<JsStoredWill>,
}

#[napi(object)]
pub struct JsStoredSubscription {
    pub client_id: String,
    pub filter: String,
    pub options: u32,
    pub subscription_id: u32,
}

#[napi(object, object_from_js = false)]
pub struct JsLoadedDelivery {
    pub client_id: String,
    pub message_id: i64n,
    pub seq: i64n,
    /// 0 queued, 1 inflight, 2 pubrel.
    pub state: u32,
    pub packet_id: u32,
    pub qos: u32,
    pub retain: bool,
    pub subscription_ids: Vec<u32>,
    pub message: JsLoadedMessage,
}

#[napi(object, object_from_js = false)]
pub struct JsStoredRetained {
    pub topic: String,
    pub message: JsLoadedMessage,
}

#[napi(object)]
pub struct JsExpired {
    pub sessions: Vec<String>,
    pub messages: f64,
}

#[napi(object)]
pub struct JsAdminDoc {
    pub id: String,
    /// JSON text.
    pub doc: String,
}

#[napi(object)]
pub struct JsStoreStats {
    pub sessions: f64,
    pub messages: f64,
    pub deliveries: f64,
    pub retained: f64,
}

/// One audit record; `before` and `after` are JSON text (absent or null: none).
#[napi(object)]
pub struct JsAuditEntry {
    pub id: String,
    /// ms since the epoch.
    pub time: f64,
    pub username: String,
    pub role: String,
    pub organization_id: Option<String>,
    pub project_id: Option<String>,
    pub action: String,
    pub resource: String,
    pub resource_id: Option<String>,
    pub method: String,
    pub path: String,
    pub status: u32,
    pub address: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Filters of an audit query (each present one must match; `from` and `to` inclusive ms) and the page.
#[napi(object)]
pub struct JsAuditQuery {
    pub username: Option<String>,
    pub action: Option<String>,
    pub resource: Option<String>,
    pub resource_id: Option<String>,
    pub organization_id: Option<String>,
    pub project_id: Option<String>,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub offset: f64,
    pub limit: f64,
}

#[napi(object, object_from_js = false)]
pub struct JsAuditPage {
    pub entries: Vec<JsAuditEntry>,
    pub total: f64,
}

fn core_audit_entry(e: JsAuditEntry) -> Result<core::AuditEntry, String> {
    Ok(core::AuditEntry {
        id: e.id,
        time: ms("audit time", e.time)?,
        username: e.username,
        role: e.role,
        organization_id: e.organization_id,
        project_id: e.project_id,
        action: e.action,
        resource: e.resource,
        resource_id: e.resource_id,
        method: e.method,
        path: e.path,
        status: e.status,
        address: e.address,
        before: e.before,
        after: e.after,
    })
}

fn js_audit_entry(e: core::AuditEntry) -> JsAuditEntry {
    JsAuditEntry {
        id: e.id,
        time: e.time as f64,
        username: e.username,
        role: e.role,
        organization_id: e.organization_id,
        project_id: e.project_id,
        action: e.action,
        resource: e.resource,
        resource_id: e.resource_id,
        method: e.method,
        path: e.path,
        status: e.status,
        address: e.address,
        before: e.before,
        after: e.after,
    }
}

fn core_audit_query(q: JsAuditQuery) -> Result<core::AuditQuery, String> {
    let bound = |what: &str, v: Option<f64>| v.map(|v| ms(what, v)).transpose();
    let count = |what: &str, v: f64| match ms(what, v)? {
        n if n >= 0 => Ok(n),
        n => Err(invalid_arg("STORE_INVALID", format!("audit query {what} must not be negative, not {n}"))),
    };
    Ok(core::AuditQuery {
        username: q.username,
        action: q.action,
        resource: q.resource,
        resource_id: q.resource_id,
        organization_id: q.organization_id,
        project_id: q.project_id,
        from: bound("from", q.from)?,
        to: bound("to", q.to)?,
        offset: count("offset", q.offset)?,
        limit: count("limit", q.limit)?,
    })
}

fn js_message(m: core::Message) -> JsLoadedMessage {
    JsLoadedMessage {
        id: i64n(m.id),
        topic: m.topic,
        payload: m.payload.into(),
        qos: m.qos as u32,
        retain: m.retain,
        properties: m.properties.map(Into::into),
        expires_at: m.expires_at as f64,
    }
}

fn core_message(m: JsStoredMessage) -> Result<core::Message, String> {
    Ok(core::Message {
        id: id("message id", m.id)?,
        topic: m.topic,
        payload: m.payload.to_vec(),
        qos: small("qos", m.qos, 2)? as u8,
        retain: m.retain,
        properties: m.properties.map(|p| p.to_vec()),
        expires_at: ms("expiresAt", m.expires_at)?,
    })
}

fn packet(v: u32) -> Result<u16, String> {
    Ok(small("packetId", v, 65535)? as u16)
}

fn delivery_state(v: u32) -> Result<core::DeliveryState, String> {
    Ok(core::DeliveryState::from_u8(small("state", v, 2)? as u8).unwrap_or(core::DeliveryState::Queued))
}

fn core_session(session: JsStoredSession) -> Result<core::Session, String> {
    let will = match session.will {
        None => None,
        Some(w) => Some(core::Will {
            topic: w.topic,
            payload: w.payload.to_vec(),
            qos: small("will qos", w.qos, 2)? as u8,
            retain: w.retain,
            properties: w.properties.map(|p| p.to_vec()),
            expiry_interval: w.expiry_interval,
            delay: w.delay,
        }),
    };
    let disconnected_at = match session.disconnected_at {
        Some(v) => Some(ms("disconnectedAt", v)?),
        None => None,
    };
    Ok(core::Session { client_id: session.client_id, expiry_interval: session.expiry_interval, disconnected_at, username: session.username, will })
}

fn js_session(s: core::Session) -> JsStoredSession {
    JsStoredSession {
        client_id: s.client_id,
        expiry_interval: s.expiry_interval,
        disconnected_at: s.disconnected_at.map(|v| v as f64),
        username: s.username,
        will: s.will.map(|w| JsStoredWill {
            topic: w.topic,
            payload: w.payload.into(),
            qos: w.qos as u32,
            retain: w.retain,
            properties: w.properties.map(Into::into),
            expiry_interval: w.expiry_interval,
            delay: w.delay,
        }),
    }
}

/// The deliveries of `addMessage`: a flat array of 4 entries per delivery (see there).
fn core_deliveries(deliveries: &Array) -> Result<Vec<core::NewDelivery>, String> {
    let len = deliveries.len();
    if len % 4 != 0 {
        return Err(invalid_arg("STORE_INVALID", format!("deliveries must hold 4 entries per delivery, not {len}")));
    }
    let bad = |what: &str| invalid_arg("STORE_INVALID", format!("delivery {what} is missing"));
    let conv = |e: Error| invalid_arg("STORE_INVALID", format!("delivery: {}", e.reason));
    let mut ds = Vec::with_capacity(len as usize / 4);
    for i in (0..len).step_by(4) {
        let client_id: String = deliveries.get(i).map_err(conv)?.ok_or_else(|| bad("clientId"))?;
        let seq: BigInt = deliveries.get(i + 1).map_err(conv)?.ok_or_else(|| bad("seq"))?;
        let flags: u32 = deliveries.get(i + 2).map_err(conv)?.ok_or_else(|| bad("flags"))?;
        let subscription_ids: Option<Vec<u32>> = deliveries.get(i + 3).map_err(conv)?.flatten();
        ds.push(core::NewDelivery {
            client_id,
            seq: id("delivery seq", seq)?,
            qos: small("delivery qos", flags & 3, 2)? as u8,
            retain: flags & 4 != 0,
            subscription_ids: subscription_ids.unwrap_or_default(),
        });
    }
    Ok(ds)
}

fn js_delivery(l: core::LoadedDelivery) -> JsLoadedDelivery {
    let d = l.delivery;
    JsLoadedDelivery {
        client_id: d.client_id,
        message_id: i64n(d.message_id),
        seq: i64n(d.seq),
        state: d.state as u32,
        packet_id: d.packet_id as u32,
        qos: d.qos as u32,
        retain: d.retain,
        subscription_ids: d.subscription_ids,
        message: js_message(l.message),
    }
}

/// A handle on the process-wide LOCAL store of one database file.
#[napi]
pub struct LocalStore {
    store: Option<Arc<core::LocalStore>>,
    key: PathBuf,
    sink: Arc<Sink>,
    env: napi::sys::napi_env,
    next_ticket: u32,
    pending: u32,
    results: HashMap<u32, std::result::Result<Reply, StoreError>>,
}

#[napi]
impl LocalStore {
    /// Opens the database at `path` (its directory must exist), creating and migrating it, or
    /// joins this process's already open store of the same file. `onComplete` is called (with no
    /// arguments) when results are ready to `drain()`. `synchronous` is "FULL" (default) or
    /// "NORMAL" and only applies when this call opens the file.
    #[napi(factory, catch_unwind)]
    pub fn open(env: Env, path: String, on_complete: ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>, synchronous: Option<String>) -> Result<LocalStore, String> {
        let synchronous = match synchronous.as_deref().unwrap_or("FULL") {
            "FULL" => core::Synchronous::Full,
            "NORMAL" => core::Synchronous::Normal,
            other => return Err(invalid_arg("STORE_INVALID", format!("synchronous must be FULL or NORMAL, not {other}"))),
        };
        let key = canonical(&path)?;
        let store = {
            let mut stores = STORES.lock();
            match stores.get_mut(&key) {
                Some(shared) => {
                    shared.refs += 1;
                    shared.store.clone()
                }
                None => {
                    let store = Arc::new(core::LocalStore::open(&key, core::Options { synchronous }).map_err(store_error)?);
                    stores.insert(key.clone(), Shared { store: store.clone(), refs: 1 });
                    store
                }
            }
        };
        let sink = Arc::new(Sink { queue: Mutex::new(Vec::new()), notified: AtomicBool::new(false), wake: on_complete });
        Ok(LocalStore { store: Some(store), key, sink, env: env.raw(), next_ticket: 0, pending: 0, results: HashMap::new() })
    }

    /// The canonical path of the database file.
    #[napi(getter, catch_unwind)]
    pub fn path(&self) -> String {
        self.key.display().to_string()
    }

    /// How many handles of this process share the file's store (0 once this one is closed).
    #[napi(getter, catch_unwind)]
    pub fn shared_by(&self) -> u32 {
        if self.store.is_none() {
            return 0;
        }
        STORES.lock().get(&self.key).map_or(0, |s| s.refs as u32)
    }

    /// Completed operations since the last call, as `[ticket, kind]` pairs (kind 0 done, 1 done
    /// with a value for `take*`, 2 failed: `take*` throws).
    #[napi(catch_unwind)]
    pub fn drain(&mut self) -> Uint32Array {
        self.sink.notified.store(false, Ordering::Release);
        let done = std::mem::take(&mut *self.sink.queue.lock());
        let mut out = Vec::with_capacity(done.len() * 2);
        for (ticket, result) in done {
            let kind = match result {
                Ok(Reply::None) => 0,
                Ok(r) => {
                    self.results.insert(ticket, Ok(r));
                    1
                }
                Err(e) => {
                    self.results.insert(ticket, Err(e));
                    2
                }
            };
            out.push(ticket);
            out.push(kind);
        }
        self.pending -= (out.len() / 2) as u32;
        if self.pending == 0 {
            unsafe { napi::sys::napi_unref_threadsafe_function(self.env, self.sink.wake.raw()) };
        }
        Uint32Array::new(out)
    }

    /// Throws the error of a failed operation (or returns when it has nothing stored).
    #[napi(catch_unwind)]
    pub fn take_void(&mut self, ticket: u32) -> Result<(), String> {
        self.take(ticket).map(|_| ())
    }
}

impl LocalStore {
    /// A new ticket owed to this thread; the first one owed keeps the event loop alive.
    fn owe_ticket(&mut self) -> u32 {
        let ticket = self.next_ticket;
        self.next_ticket = self.next_ticket.wrapping_add(1);
        self.pending += 1;
        if self.pending == 1 {
            unsafe { napi::sys::napi_ref_threadsafe_function(self.env, self.sink.wake.raw()) };
        }
        ticket
    }

    fn submit(&mut self, op: Op) -> u32 {
        let ticket = self.owe_ticket();
        match &self.store {
            Some(store) => store.submit(op, self.sink.clone(), ticket as u64),
            None => {
                self.sink.complete(ticket as u64, Err(StoreError::closed()));
                self.sink.flush();
            }
        }
        ticket
    }

    fn take(&mut self, ticket: u32) -> Result<Reply, String> {
        match self.results.remove(&ticket) {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) => Err(store_error(e)),
            None => Err(invalid_arg("STORE_INVALID", format!("no result for ticket {ticket}"))),
        }
    }

    fn mismatch(ticket: u32) -> Error<String> {
        invalid_arg("STORE_INVALID", format!("ticket {ticket} holds another kind of result"))
    }
}

/// Emits one `#[napi] impl LocalStore` block from a table of operations, so each is an entry:
/// `fn name(args) => op;` checks its arguments while building `op` (a `?` refuses the call),
/// queues it and returns the ticket; `fn take_x(Variant(v)) -> T { value }` takes a finished
/// operation's reply, throwing its error, or STORE_INVALID when it holds another kind of reply.
/// Arguments and attributes are passed on as plain tokens, so napi reads them as written. Doc
/// comments in the table are `#[doc = "..."]`: a `///` inside a macro call reaches napi as a raw
/// string, which it copies into index.d.ts with its `r"` prefix.
macro_rules! operations {
    (@methods [$($methods:tt)*]) => {
        #[napi]
        impl LocalStore {
            $($methods)*
        }
    };
    (@methods [$($methods:tt)*] $(#[$($attr:tt)*])* fn $name:ident($variant:ident($value:pat)) -> $ret:ty $body:block $($rest:tt)*) => {
        operations!(@methods [$($methods)*
            $(#[$($attr)*])*
            #[napi(catch_unwind)]
            pub fn $name(&mut self, ticket: u32) -> Result<$ret, String> {
                let Reply::$variant($value) = self.take(ticket)? else { return Err(Self::mismatch(ticket)) };
                Ok($body)
            }
        ] $($rest)*);
    };
    (@methods [$($methods:tt)*] $(#[$($attr:tt)*])* fn $name:ident($($args:tt)*) => $op:expr; $($rest:tt)*) => {
        operations!(@methods [$($methods)*
            $(#[$($attr)*])*
            #[napi(catch_unwind)]
            pub fn $name(&mut self, $($args)*) -> Result<u32, String> {
                Ok(self.submit($op))
            }
        ] $($rest)*);
    };
    ($($entries:tt)*) => {
        operations!(@methods [] $($entries)*);
    };
}

operations! {
    fn save_session(session: JsStoredSession) => Op::SaveSession(core_session(session)?);
    fn delete_session(client_id: String) => Op::DeleteSession(client_id);
    fn load_sessions() => Op::LoadSessions;
    fn take_sessions(Sessions(v)) -> Vec<JsStoredSession> { v.into_iter().map(js_session).collect() }

    fn add_subscription(client_id: String, filter: String, options: u32, subscription_id: u32) =>
        Op::AddSubscription(core::Subscription { client_id, filter, options: small("options", options, 255)? as u8, subscription_id });
    fn remove_subscription(client_id: String, filter: String) => Op::RemoveSubscription { client_id, filter };
    fn load_subscriptions(client_id: Option<String>) => Op::LoadSubscriptions(client_id);
    fn take_subscriptions(Subscriptions(v)) -> Vec<JsStoredSubscription> {
        v.into_iter()
            .map(|s| JsStoredSubscription { client_id: s.client_id, filter: s.filter, options: s.options as u32, subscription_id: s.subscription_id })
            .collect()
    }

    #[doc = " Stores a message and a queued delivery of it per delivery, atomically. The message comes"]
    #[doc = " as separate arguments and the deliveries as one flat array of 4 entries per delivery,"]
    #[doc = " `[clientId: string, seq: bigint, flags: number (qos | retain << 2), subscriptionIds:"]
    #[doc = " number[] | null, ...]`: read by index, with no property lookups."]
    #[allow(clippy::too_many_arguments)]
    fn add_message(id_: BigInt, topic: String, payload: &[u8], qos: u32, retain: bool, properties: Option<&[u8]>, expires_at: f64, deliveries: Array) =>
        Op::AddMessage(
            core::Message {
                id: id("message id", id_)?,
                topic,
                payload: payload.to_vec(),
                qos: small("qos", qos, 2)? as u8,
                retain,
                properties: properties.map(|p| p.to_vec()),
                expires_at: ms("expiresAt", expires_at)?,
            },
            core_deliveries(&deliveries)?,
        );
    #[doc = " `state`: 0 queued, 1 inflight, 2 pubrel."]
    fn update_delivery(client_id: String, message_id: BigInt, state: u32, packet_id: u32) =>
        Op::UpdateDelivery { client_id, message_id: id("message id", message_id)?, state: delivery_state(state)?, packet_id: packet(packet_id)? };
    fn remove_delivery(client_id: String, message_id: BigInt) => Op::RemoveDelivery { client_id, message_id: id("message id", message_id)? };
    fn load_deliveries(client_id: String) => Op::LoadDeliveries(client_id);
    fn take_deliveries(Deliveries(v)) -> Vec<JsLoadedDelivery> { v.into_iter().map(js_delivery).collect() }

    fn add_incoming_qos2(client_id: String, packet_id: u32) => Op::AddIncomingQos2 { client_id, packet_id: packet(packet_id)? };
    fn remove_incoming_qos2(client_id: String, packet_id: u32) => Op::RemoveIncomingQos2 { client_id, packet_id: packet(packet_id)? };
    fn load_incoming_qos2(client_id: String) => Op::LoadIncomingQos2(client_id);
    fn take_packet_ids(PacketIds(v)) -> Vec<u32> { v.into_iter().map(u32::from).collect() }

    fn set_retained(topic: String, message: JsStoredMessage) => Op::SetRetained(topic, core_message(message)?);
    fn delete_retained(topic: String) => Op::DeleteRetained(topic);
    fn load_retained() => Op::LoadRetained;
    fn take_retained(Retained(v)) -> Vec<JsStoredRetained> {
        v.into_iter().map(|r| JsStoredRetained { topic: r.topic, message: js_message(r.message) }).collect()
    }

    fn delete_expired(now: f64) => Op::DeleteExpired(ms("now", now)?);
    fn take_expired(Expired(e)) -> JsExpired { JsExpired { sessions: e.sessions, messages: e.messages as f64 } }

    #[doc = " `doc` is JSON text."]
    fn put_admin(kind: String, id: String, doc: String) => Op::PutAdmin { kind, id, doc };
    fn get_admin(kind: String, id: String) => Op::GetAdmin { kind, id };
    fn take_admin(Admin(v)) -> Option<String> { v }
    fn delete_admin(kind: String, id: String) => Op::DeleteAdmin { kind, id };
    fn take_bool(Bool(v)) -> bool { v }
    fn list_admin(kind: String) => Op::ListAdmin(kind);
    fn take_admin_list(AdminList(v)) -> Vec<JsAdminDoc> { v.into_iter().map(|d| JsAdminDoc { id: d.id, doc: d.doc }).collect() }

    #[doc = " Appends audit entries in one transaction; an id already stored is skipped."]
    fn append_audit(entries: Vec<JsAuditEntry>) =>
        Op::AppendAudit(entries.into_iter().map(core_audit_entry).collect::<Result<Vec<_>, _>>()?);
    #[doc = " Audit entries matching every given filter, newest first (time desc, id desc), and the total."]
    fn query_audit(query: JsAuditQuery) => Op::QueryAudit(core_audit_query(query)?);
    fn take_audit(Audit(p)) -> JsAuditPage { JsAuditPage { entries: p.entries.into_iter().map(js_audit_entry).collect(), total: p.total as f64 } }
    #[doc = " Removes at most `limit` audit entries older than `before` (ms): a large prune runs as"]
    #[doc = " several calls, so no one transaction holds the writer long."]
    fn prune_audit(before: f64, limit: u32) => Op::PruneAudit { before: ms("before", before)?, limit: i64::from(limit) };
    fn take_count(Count(n)) -> f64 { n as f64 }

    fn stats() => Op::Stats;
    fn take_stats(Stats(s)) -> JsStoreStats {
        JsStoreStats { sessions: s.sessions as f64, messages: s.messages as f64, deliveries: s.deliveries as f64, retained: s.retained as f64 }
    }
}

#[napi]
impl LocalStore {
    /// Releases this handle; its ticket completes once everything it queued is durable. The last
    /// handle of the process closes the database (WAL checkpoint) and stops the writer thread.
    /// Later operations on this handle fail with STORE_CLOSED.
    #[napi(catch_unwind)]
    pub fn close(&mut self) -> u32 {
        let ticket = self.owe_ticket();
        let Some(store) = self.store.take() else {
            // already closed: nothing to do
            self.sink.complete(ticket as u64, Ok(Reply::None));
            self.sink.flush();
            return ticket;
        };
        match release(&self.key) {
            Some(last) => {
                drop(store);
                let sink = self.sink.clone();
                std::thread::spawn(move || {
                    let result = last.close().map(|_| Reply::None);
                    sink.complete(ticket as u64, result);
                    sink.flush();
                });
            }
            // others still use the store: wait for this handle's own writes (the queue is FIFO)
            None => store.submit(Op::Stats, Arc::new(Barrier(self.sink.clone())), ticket as u64),
        }
        ticket
    }
}

/// Completes with no value (a close barrier's Stats result is not wanted).
struct Barrier(Arc<Sink>);

impl Completion for Barrier {
    fn complete(&self, ticket: u64, result: std::result::Result<Reply, StoreError>) {
        self.0.complete(ticket, result.map(|_| Reply::None));
    }
    fn flush(&self) {
        self.0.flush();
    }
}

impl Drop for LocalStore {
    fn drop(&mut self) {
        // a handle collected without close() gives its reference back
        if self.store.take().is_some() {
            if let Some(last) = release(&self.key) {
                std::thread::spawn(move || {
                    let _ = last.close();
                });
            }
        }
    }
}

