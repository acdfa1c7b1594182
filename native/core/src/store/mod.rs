//! LOCAL persistence: an embedded SQLite database in the data directory.
//!
//! Why SQLite: durability is the whole point of this backend, and SQLite has the strongest record
//! of any embedded engine. Commits are atomic (all of a transaction or none of it survives a crash
//! or power loss), the write-ahead log makes a commit one sequential append plus one fsync, and the
//! engine has been tested for decades against simulated power failures and I/O errors at every
//! write (its crash and I/O-error test harnesses run on every release). It needs no server and no
//! setup, which is what the zero-configuration default wants. `rusqlite` with the `bundled`
//! feature compiles SQLite's C source into the binary, so no system library is required.
//!
//! Shape: one [`LocalStore`] owns one writer thread and the only write connection. Callers send
//! operations over a channel; the writer takes everything queued (up to [`MAX_BATCH`]), applies it
//! in ONE transaction, commits (WAL append + fsync with `synchronous=FULL`), and only then reports
//! each operation complete. Operations sent while a commit is in flight wait in the channel and
//! form the next transaction: group commit, so many concurrent callers share one fsync. Reads
//! (`Load*`, `Stats`, `GetAdmin`, ...) go through the same queue, so a caller always reads its own
//! earlier writes and the per-caller order is the channel's FIFO order.

mod ops;
mod schema;
mod writer;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};
use rusqlite::{Connection, OpenFlags};

pub use schema::{schema_version, MIGRATIONS};

/// Most operations the writer applies in one transaction; the rest wait for the next one.
pub const MAX_BATCH: usize = 8192;

/// A stored application message. Ids and sequence numbers are chosen by the broker and must be in
/// `0..=i64::MAX` (SQLite integers are signed 64-bit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: i64,
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    pub properties: Option<Vec<u8>>,
    /// Absolute expiry, ms since the epoch; 0 = never.
    pub expires_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Will {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    pub properties: Option<Vec<u8>>,
    /// Message Expiry Interval, seconds, counted from the will's publication; 0 none.
    pub expiry_interval: u32,
    /// Will Delay Interval, seconds.
    pub delay: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub client_id: String,
    /// Seconds the session outlives its connection; 0xFFFFFFFF never expires.
    pub expiry_interval: u32,
    /// ms since the epoch, or None while connected.
    pub disconnected_at: Option<i64>,
    pub username: Option<String>,
    pub will: Option<Will>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    pub client_id: String,
    pub filter: String,
    pub options: u8,
    pub subscription_id: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DeliveryState {
    Queued = 0,
    Inflight = 1,
    Pubrel = 2,
}

impl DeliveryState {
    pub fn from_u8(v: u8) -> Option<DeliveryState> {
        match v {
            0 => Some(DeliveryState::Queued),
            1 => Some(DeliveryState::Inflight),
            2 => Some(DeliveryState::Pubrel),
            _ => None,
        }
    }
}

/// A queued delivery to create with a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewDelivery {
    pub client_id: String,
    pub seq: i64,
    pub qos: u8,
    pub retain: bool,
    pub subscription_ids: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub client_id: String,
    pub message_id: i64,
    pub seq: i64,
    pub state: DeliveryState,
    pub packet_id: u16,
    pub qos: u8,
    pub retain: bool,
    pub subscription_ids: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedDelivery {
    pub delivery: Delivery,
    pub message: Message,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retained {
    pub topic: String,
    pub message: Message,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    /// Client ids of the sessions removed, sorted.
    pub sessions: Vec<String>,
    /// Expired messages removed.
    pub messages: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub sessions: u64,
    pub messages: u64,
    pub deliveries: u64,
    pub retained: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminDoc {
    pub id: String,
    /// JSON text.
    pub doc: String,
}

/// One audit record (who did what to which resource, when, from where). Written once, never
/// changed; `before` and `after` are JSON text. Mirrors `AuditEntry` in src/store/types.ts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    pub id: String,
    /// ms since the epoch.
    pub time: i64,
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

/// Filters of an audit query: each present one must match; `from` and `to` are inclusive ms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub username: Option<String>,
    pub action: Option<String>,
    pub resource: Option<String>,
    pub resource_id: Option<String>,
    pub organization_id: Option<String>,
    pub project_id: Option<String>,
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub offset: i64,
    pub limit: i64,
}

/// One page of audit entries, newest first, and how many match in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub total: u64,
}

/// One store operation; mirrors the TypeScript `Store` interface.
#[derive(Clone, Debug)]
pub enum Op {
    SaveSession(Session),
    DeleteSession(String),
    LoadSessions,
    AddSubscription(Subscription),
    RemoveSubscription { client_id: String, filter: String },
    LoadSubscriptions(Option<String>),
    AddMessage(Message, Vec<NewDelivery>),
    UpdateDelivery { client_id: String, message_id: i64, state: DeliveryState, packet_id: u16 },
    RemoveDelivery { client_id: String, message_id: i64 },
    LoadDeliveries(String),
    AddIncomingQos2 { client_id: String, packet_id: u16 },
    RemoveIncomingQos2 { client_id: String, packet_id: u16 },
    LoadIncomingQos2(String),
    SetRetained(String, Message),
    DeleteRetained(String),
    LoadRetained,
    DeleteExpired(i64),
    PutAdmin { kind: String, id: String, doc: String },
    GetAdmin { kind: String, id: String },
    DeleteAdmin { kind: String, id: String },
    ListAdmin(String),
    Stats,
    /// Appends audit entries; an id already stored is skipped (the stored entry is kept).
    AppendAudit(Vec<AuditEntry>),
    QueryAudit(AuditQuery),
    /// Removes at most `limit` audit entries older than `before` (ms); replies with how many.
    PruneAudit { before: i64, limit: i64 },
}

/// What an operation returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    None,
    Bool(bool),
    Sessions(Vec<Session>),
    Subscriptions(Vec<Subscription>),
    Deliveries(Vec<LoadedDelivery>),
    PacketIds(Vec<u16>),
    Retained(Vec<Retained>),
    Expired(Expired),
    Admin(Option<String>),
    AdminList(Vec<AdminDoc>),
    Stats(Stats),
    Audit(AuditPage),
    Count(u64),
}

/// Stable error codes, the same strings as src/store/errors.ts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorCode {
    /// The database is locked or busy (another process holds it).
    Unavailable,
    /// I/O error, disk full, corruption, cannot open.
    Io,
    /// The store was closed.
    Closed,
    /// The schema could not be created or migrated, or is newer than this build.
    Migration,
    /// An argument or a constraint was refused.
    Invalid,
}

impl StoreErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            StoreErrorCode::Unavailable => "STORE_UNAVAILABLE",
            StoreErrorCode::Io => "STORE_IO",
            StoreErrorCode::Closed => "STORE_CLOSED",
            StoreErrorCode::Migration => "STORE_MIGRATION",
            StoreErrorCode::Invalid => "STORE_INVALID",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    pub code: StoreErrorCode,
    pub message: String,
}

impl StoreError {
    pub fn new(code: StoreErrorCode, message: impl Into<String>) -> StoreError {
        StoreError { code, message: message.into() }
    }
    pub fn closed() -> StoreError {
        StoreError::new(StoreErrorCode::Closed, "the store is closed")
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode as C;
        let code = match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                C::DatabaseBusy | C::DatabaseLocked => StoreErrorCode::Unavailable,
                C::ConstraintViolation | C::TooBig | C::TypeMismatch | C::ApiMisuse => StoreErrorCode::Invalid,
                _ => StoreErrorCode::Io,
            },
            rusqlite::Error::ToSqlConversionFailure(_) | rusqlite::Error::InvalidParameterName(_) => StoreErrorCode::Invalid,
            _ => StoreErrorCode::Io,
        };
        StoreError::new(code, e.to_string())
    }
}

/// `PRAGMA synchronous` for the write connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// fsync the WAL on every commit: a resolved write survives power loss. The default.
    Full,
    /// fsync only at checkpoints: survives a process crash, but the last commits may be lost on
    /// power loss or an OS crash (the database stays consistent).
    Normal,
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub synchronous: Synchronous,
}

impl Default for Options {
    fn default() -> Options {
        Options { synchronous: Synchronous::Full }
    }
}

/// Receives the results of submitted operations, on the writer thread, after their transaction
/// committed (or failed). `flush` is called once per batch for every sink that got results, so an
/// implementation can wake its consumer once per batch instead of once per operation.
pub trait Completion: Send + Sync {
    fn complete(&self, ticket: u64, result: Result<Reply, StoreError>);
    fn flush(&self) {}
}

pub(crate) struct Job {
    pub op: Op,
    pub sink: Arc<dyn Completion>,
    pub ticket: u64,
}

pub(crate) enum Cmd {
    Job(Job),
    Close(mpsc::SyncSender<Result<(), StoreError>>),
}

/// The embedded store: one SQLite file, one writer thread.
pub struct LocalStore {
    path: PathBuf,
    tx: RwLock<Option<mpsc::Sender<Cmd>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl LocalStore {
    /// Opens (creating it if needed) the database at `path`, migrates the schema, and starts the
    /// writer thread.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<LocalStore, StoreError> {
        LocalStore::open_with_migrations(path, options, MIGRATIONS)
    }

    /// `open` with an explicit migration list (tests exercise upgrades with it).
    #[doc(hidden)]
    pub fn open_with_migrations(path: impl AsRef<Path>, options: Options, migrations: &[&str]) -> Result<LocalStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut conn = open_connection(&path, options)?;
        schema::migrate(&mut conn, migrations)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("spindle-store".into())
            .spawn(move || writer::run(conn, rx))
            .map_err(|e| StoreError::new(StoreErrorCode::Io, format!("cannot start the store writer thread: {e}")))?;
        Ok(LocalStore { path, tx: RwLock::new(Some(tx)), thread: Mutex::new(Some(thread)) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues an operation. Its result goes to `sink.complete(ticket, ..)` once durable. After
    /// `close`, the sink gets `STORE_CLOSED` at once (on this thread).
    pub fn submit(&self, op: Op, sink: Arc<dyn Completion>, ticket: u64) {
        let guard = self.tx.read();
        let rejected = match guard.as_ref() {
            Some(tx) => match tx.send(Cmd::Job(Job { op, sink, ticket })) {
                Ok(()) => None,
                Err(mpsc::SendError(Cmd::Job(job))) => Some(job.sink),
                Err(_) => None,
            },
            None => Some(sink),
        };
        drop(guard);
        if let Some(sink) = rejected {
            sink.complete(ticket, Err(StoreError::closed()));
            sink.flush();
        }
    }

    /// Submits and blocks until the result is durable (tests, tools).
    pub fn call(&self, op: Op) -> Result<Reply, StoreError> {
        struct OneShot(Mutex<Option<mpsc::SyncSender<Result<Reply, StoreError>>>>);
        impl Completion for OneShot {
            fn complete(&self, _ticket: u64, result: Result<Reply, StoreError>) {
                if let Some(tx) = self.0.lock().take() {
                    let _ = tx.send(result);
                }
            }
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(op, Arc::new(OneShot(Mutex::new(Some(tx)))), 0);
        rx.recv().unwrap_or_else(|_| Err(StoreError::closed()))
    }

    /// Applies everything queued before it, checkpoints the WAL, closes the database and joins the
    /// writer thread. Later operations fail with `STORE_CLOSED`. Idempotent.
    pub fn close(&self) -> Result<(), StoreError> {
        let tx = self.tx.write().take();
        let Some(tx) = tx else { return Ok(()) };
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let sent = tx.send(Cmd::Close(done_tx)).is_ok();
        drop(tx);
        let result = if sent { done_rx.recv().unwrap_or(Ok(())) } else { Ok(()) };
        if let Some(thread) = self.thread.lock().take() {
            if thread.join().is_err() {
                return Err(StoreError::new(StoreErrorCode::Io, "the store writer thread panicked"));
            }
        }
        result
    }

    pub fn is_closed(&self) -> bool {
        self.tx.read().is_none()
    }
}

impl Drop for LocalStore {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn open_connection(path: &Path, options: Options) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::new(StoreErrorCode::Io, format!("cannot open {}: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::new(StoreErrorCode::Io, format!("{} cannot use WAL mode (got {mode})", path.display())));
    }
    let sync = match options.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // 16 MiB of page cache; the writer is the only user of this connection.
    conn.pragma_update(None, "cache_size", -16384)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}
