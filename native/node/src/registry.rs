//! ClientRegistry and RetainedStore bindings: process-wide objects opened by name, shared by
//! every worker thread (see spindle_core::registry and spindle_core::retained_store).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use parking_lot::Mutex;
use spindle_core::{registry, retained_store};

use crate::errors::{invalid_arg, topic_error};

static REGISTRIES: LazyLock<Mutex<HashMap<String, Arc<registry::ClientRegistry>>>> = LazyLock::new(Default::default);
static RETAINED_STORES: LazyLock<Mutex<HashMap<String, Arc<retained_store::RetainedStore>>>> = LazyLock::new(Default::default);

#[napi]
pub struct ClientRegistry {
    inner: Arc<registry::ClientRegistry>,
}

#[napi]
impl ClientRegistry {
    #[napi(factory, catch_unwind)]
    pub fn open(name: String) -> ClientRegistry {
        let inner = REGISTRIES.lock().entry(name).or_insert_with(|| Arc::new(registry::ClientRegistry::new())).clone();
        ClientRegistry { inner }
    }

    #[napi(catch_unwind)]
    pub fn close(name: String) -> bool {
        REGISTRIES.lock().remove(&name).is_some()
    }

    /// Makes `worker` the owner of `clientId` and writes `[handle, generation, previousHandle,
    /// previousWorker, previousGeneration, hadPrevious]` into `out`. The session keeps its handle
    /// unless `cleanStart`.
    #[napi(catch_unwind)]
    pub fn claim(&self, client_id: String, worker: u32, clean_start: bool, mut out: Uint32ArraySlice) -> Result<(), String> {
        // SAFETY: JS reads `out` only after this call returns (same thread).
        let out = unsafe { out.as_mut() };
        if out.len() < 6 {
            return Err(invalid_arg("INVALID_ARGUMENT", "out needs 6 slots".into()));
        }
        let worker = u16::try_from(worker).map_err(|_| invalid_arg("INVALID_ARGUMENT", format!("worker out of range: {worker}")))?;
        let claim = self.inner.claim(&client_id, worker, clean_start);
        out[0] = claim.handle;
        out[1] = claim.generation;
        match claim.previous {
            Some(p) => {
                out[2] = p.handle;
                out[3] = p.worker as u32;
                out[4] = p.generation;
                out[5] = 1;
            }
            None => out[2..6].fill(0),
        }
        Ok(())
    }

    /// Forgets `clientId` if the claim `generation` still owns it.
    #[napi(catch_unwind)]
    pub fn release(&self, client_id: String, generation: u32) -> bool {
        self.inner.release(&client_id, generation)
    }

    /// `[handle, worker, generation]` of the current owner, or null.
    #[napi(catch_unwind)]
    pub fn lookup(&self, client_id: String) -> Option<Vec<u32>> {
        self.inner.lookup(&client_id).map(|o| vec![o.handle, o.worker as u32, o.generation])
    }

    /// Marks a session as persistent (its messages are stored) or not.
    #[napi(catch_unwind)]
    pub fn set_persistent(&self, handle: u32, client_id: String, persistent: bool) {
        self.inner.set_persistent(handle, &client_id, persistent);
    }

    /// The client id of a persistent session, or null when the session is not stored.
    #[napi(catch_unwind)]
    pub fn persistent_client_id(&self, handle: u32) -> Option<String> {
        self.inner.persistent_client_id(handle).map(String::from)
    }

    /// A fresh session handle (for sessions that are not keyed by a client id).
    #[napi(catch_unwind)]
    pub fn new_handle(&self) -> u32 {
        self.inner.new_handle()
    }

    #[napi(getter, catch_unwind)]
    pub fn size(&self) -> u32 {
        self.inner.len() as u32
    }
}

#[napi]
pub struct RetainedStore {
    inner: Arc<retained_store::RetainedStore>,
}

#[napi]
impl RetainedStore {
    #[napi(factory, catch_unwind)]
    pub fn open(name: String) -> RetainedStore {
        let inner = RETAINED_STORES.lock().entry(name).or_insert_with(|| Arc::new(retained_store::RetainedStore::new())).clone();
        RetainedStore { inner }
    }

    #[napi(catch_unwind)]
    pub fn close(name: String) -> bool {
        RETAINED_STORES.lock().remove(&name).is_some()
    }

    /// Stores the record for a topic name (validated by the caller); true when it replaced one.
    /// The record's expiry is read from it (see `record_expires_at`).
    #[napi(catch_unwind)]
    pub fn set(&self, topic: String, record: &[u8]) -> bool {
        self.inner.set(&topic, record, record_expires_at(record))
    }

    /// Whether a record for `topic` would be taken with at most `maxCount` retained messages
    /// (0: no limit; `$SYS` ones not counted): true for a topic that has one (a replace).
    #[napi(catch_unwind)]
    pub fn admits(&self, topic: String, max_count: u32) -> bool {
        self.inner.admits(&topic, max_count as usize)
    }

    /// Admits a record for `topic` under `maxCount` (0: no limit) when a PUBLISH is accepted:
    /// 0 free (no limit applies, or a replace), 1 a place is held for the new topic until
    /// `setReserved` or `release` (10 s at most), 2 refused (past the limit, places held counted).
    #[napi(catch_unwind)]
    pub fn admit(&self, topic: String, max_count: u32) -> u32 {
        match self.inner.admit(&topic, max_count as usize) {
            retained_store::Admission::Free => 0,
            retained_store::Admission::Reserved => 1,
            retained_store::Admission::Refused => 2,
        }
    }

    /// `set` for a topic `admit` held a place for (the place is taken by the record).
    #[napi(catch_unwind)]
    pub fn set_reserved(&self, topic: String, record: &[u8]) -> bool {
        self.inner.set_reserved(&topic, record, record_expires_at(record))
    }

    /// Gives back a place `admit` held (its message was not retained after all).
    #[napi(catch_unwind)]
    pub fn release(&self) {
        self.inner.release()
    }

    /// Removes the records whose expiry (ms since the epoch) is at or before `now`; answers how many.
    #[napi(catch_unwind)]
    pub fn remove_expired(&self, now: f64) -> u32 {
        self.inner.remove_expired(now.max(0.0) as u64) as u32
    }

    /// Records and bytes under the `top` first topic levels holding the most, most first; the
    /// others summed in a last entry whose `level` is null (absent when there are none).
    #[napi(catch_unwind)]
    pub fn levels(&self, top: u32) -> Vec<RetainedLevel> {
        let (levels, rest) = self.inner.levels(top as usize);
        let mut out: Vec<RetainedLevel> = levels.into_iter().map(|(level, t)| RetainedLevel { level: Some(level), count: t.count as u32, bytes: t.bytes as f64 }).collect();
        if rest.count > 0 {
            out.push(RetainedLevel { level: None, count: rest.count as u32, bytes: rest.bytes as f64 });
        }
        out
    }

    /// Retained messages a count limit applies to: all but the broker's own `$SYS` ones.
    #[napi(getter, catch_unwind)]
    pub fn counted(&self) -> u32 {
        self.inner.counted() as u32
    }

    #[napi(catch_unwind)]
    pub fn remove(&self, topic: String) -> bool {
        self.inner.remove(&topic)
    }

    #[napi(catch_unwind)]
    pub fn get(&self, topic: String) -> Option<Buffer> {
        self.inner.get(&topic).map(|r| Buffer::from(r.to_vec()))
    }

    /// Every record whose topic the filter matches, in one buffer: `[u32 LE length][record]...`
    /// (one allocation per call, not one per record).
    #[napi(js_name = "match", catch_unwind)]
    pub fn match_filter(&self, filter: String) -> Result<Buffer, String> {
        spindle_core::topic::validate_filter(&filter).map_err(topic_error)?;
        let mut records = Vec::new();
        self.inner.match_filter(&filter, &mut records);
        Ok(concat(records.iter().map(|r| &r[..])).into())
    }

    /// Up to `limit` records after skipping `offset`, in the same framing as `match`.
    #[napi(catch_unwind)]
    pub fn list(&self, offset: u32, limit: u32) -> Buffer {
        let mut records: Vec<Vec<u8>> = Vec::new();
        let mut skipped = 0;
        self.inner.for_each(|_, rec| {
            if skipped < offset {
                skipped += 1;
                return true;
            }
            records.push(rec.to_vec());
            records.len() < limit as usize
        });
        concat(records.iter().map(|r| &r[..])).into()
    }

    #[napi(getter, catch_unwind)]
    pub fn size(&self) -> u32 {
        self.inner.len() as u32
    }

    #[napi(getter, catch_unwind)]
    pub fn bytes(&self) -> f64 {
        self.inner.bytes() as f64
    }
}

/// Records and bytes of retained messages under one first topic level.
#[napi(object)]
pub struct RetainedLevel {
    /// The first level; null for the sum of the levels past the top ones.
    pub level: Option<String>,
    pub count: u32,
    pub bytes: f64,
}

/// A record's expiry: bytes 16..24 are its expiresAt, an f64 of ms since the epoch, 0 for none
/// (the record layout of src/broker/message.ts, writeRecord).
fn record_expires_at(record: &[u8]) -> u64 {
    match record.get(16..24) {
        Some(b) => {
            let at = f64::from_le_bytes(b.try_into().unwrap());
            if at.is_finite() && at > 0.0 { at as u64 } else { 0 }
        }
        None => 0,
    }
}

fn concat<'a>(records: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let total: usize = records.clone().map(|r| 4 + r.len()).sum();
    let mut out = Vec::with_capacity(total);
    for r in records {
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
        out.extend_from_slice(r);
    }
    out
}
