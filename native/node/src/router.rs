//! Router and RetainedIndex: the process-wide routing core. The core objects live in a static
//! registry keyed by name, so every worker thread that opens "default" gets the same Arc; the JS
//! wrapper objects are per thread. Match results are written into a caller-supplied Uint32Array.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use parking_lot::Mutex;
use spindle_core::topic::{self, MatchResult, MatchScope, RouterConfig, ShareStrategy, SubOptions, Subscription};

use crate::errors::{invalid_arg, topic_error};

static ROUTERS: LazyLock<Mutex<HashMap<String, Arc<topic::Router>>>> = LazyLock::new(Default::default);
static RETAINED_INDEXES: LazyLock<Mutex<HashMap<String, Arc<topic::RetainedIndex>>>> = LazyLock::new(Default::default);

thread_local! {
    // One reusable match buffer per thread: matching allocates nothing once it has grown.
    static MATCH: std::cell::RefCell<MatchResult> = std::cell::RefCell::new(MatchResult::default());
}

#[napi(object)]
pub struct RouterOptions {
    /// Entries in the bounded match cache; 0 turns it off. Default 65536.
    pub cache_capacity: Option<u32>,
    /// "round_robin" (default), "random" or "hash_clientid".
    pub share_strategy: Option<String>,
}

/// Bits of the second word of a delivery written by `match`.
pub const DELIVERY_RAP: u32 = 1 << 18;
pub const DELIVERY_SHARED: u32 = 1 << 19;

#[napi]
pub struct Router {
    inner: Arc<topic::Router>,
}

#[napi]
impl Router {
    /// Opens the process-wide router called `name`, creating it with `options` the first time.
    /// Every thread that opens the same name shares one routing core.
    #[napi(factory, catch_unwind)]
    pub fn open(name: String, options: Option<RouterOptions>) -> Result<Router, String> {
        let mut routers = ROUTERS.lock();
        if let Some(existing) = routers.get(&name) {
            return Ok(Router { inner: existing.clone() });
        }
        let options = options.unwrap_or(RouterOptions { cache_capacity: None, share_strategy: None });
        let share_strategy = match options.share_strategy.as_deref().unwrap_or("round_robin") {
            "round_robin" => ShareStrategy::RoundRobin,
            "random" => ShareStrategy::Random,
            "hash_clientid" => ShareStrategy::HashClientId,
            other => {
                return Err(invalid_arg(
                    "INVALID_ARGUMENT",
                    format!("shareStrategy must be round_robin, random or hash_clientid, not {other}"),
                ))
            }
        };
        let config = RouterConfig { cache_capacity: options.cache_capacity.unwrap_or(65536) as usize, share_strategy };
        let inner = Arc::new(topic::Router::new(config));
        routers.insert(name, inner.clone());
        Ok(Router { inner })
    }

    /// Drops the registry's reference to a router (tests, shutdown). Open handles keep it alive.
    #[napi(catch_unwind)]
    pub fn close(name: String) -> bool {
        ROUTERS.lock().remove(&name).is_some()
    }

    /// Adds or replaces a subscription. `options` is the v5 SUBSCRIBE options byte (bits 0-1 QoS,
    /// 2 No Local, 3 Retain As Published, 4-5 Retain Handling). Returns true when it replaced one.
    #[napi(catch_unwind)]
    pub fn subscribe(&self, filter: String, session: u32, worker: u32, options: u32, subscription_id: Option<u32>) -> Result<bool, String> {
        if options & 3 == 3 || options >> 6 != 0 || (options >> 4) & 3 == 3 {
            return Err(invalid_arg("INVALID_ARGUMENT", format!("invalid subscription options 0x{options:02x}")));
        }
        let sub = Subscription {
            session,
            worker: u16::try_from(worker).map_err(|_| invalid_arg("INVALID_ARGUMENT", format!("worker out of range: {worker}")))?,
            options: SubOptions(options as u8),
            subscription_id: subscription_id.unwrap_or(0),
        };
        self.inner.subscribe(&filter, sub).map_err(topic_error)
    }

    #[napi(catch_unwind)]
    pub fn unsubscribe(&self, filter: String, session: u32) -> bool {
        self.inner.unsubscribe(&filter, session)
    }

    /// Starts keeping the local interest for a cluster: which filters have subscriptions of
    /// sessions other than `excluded` (the cluster's own handle). Only before anything
    /// subscribes: false after.
    #[napi(catch_unwind)]
    pub fn enable_interest(&self, excluded: Vec<u32>) -> bool {
        self.inner.enable_interest(excluded)
    }

    /// The filters that gained ("+filter") or lost ("-filter") all their local subscriptions since
    /// the last call, in order.
    #[napi(catch_unwind)]
    pub fn take_interest_changes(&self) -> Vec<String> {
        self.inner.take_interest_changes().into_iter().map(|(f, gained)| format!("{}{f}", if gained { '+' } else { '-' })).collect()
    }

    /// Every filter with local interest now.
    #[napi(catch_unwind)]
    pub fn interest_snapshot(&self) -> Vec<String> {
        self.inner.interest_snapshot()
    }

    /// Removes every subscription of a session; returns how many.
    #[napi(catch_unwind)]
    pub fn remove_session(&self, session: u32) -> u32 {
        self.inner.remove_session(session) as u32
    }

    /// Matches a topic name and writes the deliveries into `out`: per delivery
    /// `[session, worker | qos << 16 | RAP | SHARED, n, subscriptionId * n]`. Returns the number
    /// of u32 words written, or the negative number of words needed when `out` is too small.
    /// `publisher` is the publishing session (No Local), 0xFFFFFFFF for none; `publisherHash` is a
    /// hash of the publisher's client id (hash_clientid shared strategy).
    #[napi(js_name = "match", catch_unwind)]
    pub fn match_topic(&self, topic: String, publisher: u32, publisher_hash: u32, mut out: Uint32ArraySlice) -> i64 {
        // SAFETY: JS reads the output only after the call returns (same thread).
        self.match_into(&topic, publisher, publisher_hash, None, unsafe { out.as_mut() })
    }

    /// `match` for a topic given as UTF-8 bytes inside a buffer (no JS string needed). The bytes
    /// must have been validated as a topic name (the framer does that).
    #[napi(catch_unwind)]
    pub fn match_bytes(&self, buf: &[u8], start: u32, len: u32, publisher: u32, publisher_hash: u32, mut out: Uint32ArraySlice) -> Result<i64, String> {
        let bytes = buf
            .get(start as usize..start as usize + len as usize)
            .ok_or_else(|| invalid_arg("OUT_OF_RANGE", format!("{start}+{len} is outside a buffer of {}", buf.len())))?;
        let topic = std::str::from_utf8(bytes).map_err(|_| invalid_arg("INVALID_UTF8", "topic is not UTF-8".into()))?;
        Ok(self.match_into(topic, publisher, publisher_hash, None, unsafe { out.as_mut() }))
    }

    /// `matchBytes` for a message another node of the cluster sent here: to the plain subscribers
    /// only if `plain`, and to one member of each shared group `shares` names (`$share/<group>/
    /// <filter>`, the groups the other node picked this one for), never a session excluded by
    /// `enableInterest` (a node handle) nor one on `skipWorker` (0xFFFFFFFF: none). Groups not
    /// named get nothing; a named group with no such member gets nothing (the caller counts it:
    /// one `shared` delivery per group reached).
    #[napi(catch_unwind)]
    pub fn match_scoped(
        &self,
        buf: &[u8],
        start: u32,
        len: u32,
        publisher: u32,
        publisher_hash: u32,
        plain: bool,
        shares: Vec<String>,
        skip_worker: u32,
        mut out: Uint32ArraySlice,
    ) -> Result<i64, String> {
        let bytes = buf
            .get(start as usize..start as usize + len as usize)
            .ok_or_else(|| invalid_arg("OUT_OF_RANGE", format!("{start}+{len} is outside a buffer of {}", buf.len())))?;
        let topic = std::str::from_utf8(bytes).map_err(|_| invalid_arg("INVALID_UTF8", "topic is not UTF-8".into()))?;
        let scope = MatchScope { plain, shares: &shares, skip_worker: u16::try_from(skip_worker).ok() };
        // SAFETY: as in `match`.
        Ok(self.match_into(topic, publisher, publisher_hash, Some(&scope), unsafe { out.as_mut() }))
    }

    #[napi(getter, catch_unwind)]
    pub fn subscription_count(&self) -> u32 {
        self.inner.subscription_count() as u32
    }

    #[napi(getter, catch_unwind)]
    pub fn cache_size(&self) -> u32 {
        self.inner.cache_len() as u32
    }

    /// Approximate heap bytes held by the trie.
    #[napi(getter, catch_unwind)]
    pub fn heap_bytes(&self) -> f64 {
        self.inner.heap_bytes() as f64
    }
}

impl Router {
    fn match_into(&self, topic: &str, publisher: u32, publisher_hash: u32, scope: Option<&MatchScope>, out: &mut [u32]) -> i64 {
        MATCH.with(|cell| {
            let mut result = cell.borrow_mut();
            result.deliveries.clear();
            result.subscription_ids.clear();
            match scope {
                None => self.inner.match_topic(topic, publisher, publisher_hash, &mut result),
                Some(sc) => self.inner.match_topic_scoped(topic, publisher, publisher_hash, sc, &mut result),
            }
            let needed: usize = result.deliveries.iter().map(|d| 3 + d.sub_ids_len as usize).sum();
            if needed > out.len() {
                return -(needed as i64);
            }
            let mut i = 0;
            for d in &result.deliveries {
                out[i] = d.session;
                let mut word = d.worker as u32 | (d.qos as u32) << 16;
                if d.retain_as_published {
                    word |= DELIVERY_RAP;
                }
                if d.shared {
                    word |= DELIVERY_SHARED;
                }
                out[i + 1] = word;
                out[i + 2] = d.sub_ids_len;
                let ids = &result.subscription_ids[d.sub_ids_start as usize..(d.sub_ids_start + d.sub_ids_len) as usize];
                out[i + 3..i + 3 + ids.len()].copy_from_slice(ids);
                i += 3 + ids.len();
            }
            i as i64
        })
    }
}

/// The process-wide index of retained topic names: topic -> a number the caller chooses (for
/// example the id of the stored message).
#[napi]
pub struct RetainedIndex {
    inner: Arc<topic::RetainedIndex>,
}

#[napi]
impl RetainedIndex {
    #[napi(factory, catch_unwind)]
    pub fn open(name: String) -> RetainedIndex {
        let inner = RETAINED_INDEXES.lock().entry(name).or_insert_with(|| Arc::new(topic::RetainedIndex::new())).clone();
        RetainedIndex { inner }
    }

    #[napi(catch_unwind)]
    pub fn close(name: String) -> bool {
        RETAINED_INDEXES.lock().remove(&name).is_some()
    }

    /// Sets topic -> value (value < 2^53); returns the previous value or null.
    #[napi(catch_unwind)]
    pub fn set(&self, topic: String, value: f64) -> Result<Option<f64>, String> {
        if !(0.0..=9007199254740991.0).contains(&value) || value.fract() != 0.0 {
            return Err(invalid_arg("INVALID_ARGUMENT", format!("value must be an integer in 0..2^53, not {value}")));
        }
        topic::validate_topic(&topic).map_err(topic_error)?;
        Ok(self.inner.set(&topic, value as u64).map(|v| v as f64))
    }

    #[napi(catch_unwind)]
    pub fn remove(&self, topic: String) -> Option<f64> {
        self.inner.remove(&topic).map(|v| v as f64)
    }

    #[napi(catch_unwind)]
    pub fn get(&self, topic: String) -> Option<f64> {
        self.inner.get(&topic).map(|v| v as f64)
    }

    /// The values of every retained topic the filter matches.
    #[napi(js_name = "match", catch_unwind)]
    pub fn match_filter(&self, filter: String) -> Result<Vec<f64>, String> {
        topic::validate_filter(&filter).map_err(topic_error)?;
        let mut out = Vec::new();
        self.inner.match_filter(&filter, &mut out);
        Ok(out.into_iter().map(|v| v as f64).collect())
    }

    #[napi(getter, catch_unwind)]
    pub fn size(&self) -> u32 {
        self.inner.len() as u32
    }
}
