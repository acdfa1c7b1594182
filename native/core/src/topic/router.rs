//! Owns `Router`, the process-wide routing core shared by all Node worker threads (the binding keeps
//! it in an `Arc`): subscribe / unsubscribe / remove_session / match_topic on any thread.
//!
//! LOCK ORDER (the only two kinds of lock in the router), always in this order:
//! (1) `Router::state`, a parking_lot RwLock over trie + per-session index + counters, then
//! (2) at most ONE `MatchCache` shard Mutex at a time, only while holding (1).
//! Matchers take (1) shared, then a shard; mutators take (1) exclusive, then shards one by one.
//! Nothing is called back while a lock is held. `RetainedIndex` has its own independent lock and
//! is never taken together with these.

use std::cell::RefCell;

use parking_lot::RwLock;

use super::cache::MatchCache;
use super::interest::{shared_key, InterestLog};
use super::filter::{parse_shared, validate_filter, TopicError, ERR_SHARED_NO_LOCAL};
use super::session_index::SessionIndex;
use super::shared::{self, ShareStrategy};
use super::subscription::Subscription;
use super::trie::Trie;

pub struct RouterConfig {
    /// Number of cached topics; 0 turns the match cache off.
    pub cache_capacity: usize,
    pub share_strategy: ShareStrategy,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig { cache_capacity: 4096, share_strategy: ShareStrategy::RoundRobin }
    }
}

/// What one match answers: one Delivery per (session, shared-or-not). For non-shared subscriptions
/// ONE per session with the highest QoS of its matching subscriptions and ALL their subscription
/// ids [MQTT-3.3.4-2..5]; `retain_as_published` is set when any of those subscriptions has it. For
/// each shared group (per group+filter) exactly one member is chosen by the strategy, as a separate
/// delivery flagged `shared` [MQTT-4.8.2].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub session: u32,
    pub worker: u16,
    pub qos: u8,
    pub retain_as_published: bool,
    pub shared: bool,
    pub sub_ids_start: u32,
    pub sub_ids_len: u32,
}

/// Output buffer of `match_topic`; `sub_ids_*` index into `subscription_ids`. Reuse it between
/// calls: `match_topic` clears it and keeps the capacity.
#[derive(Default, Debug)]
pub struct MatchResult {
    pub deliveries: Vec<Delivery>,
    pub subscription_ids: Vec<u32>,
}

impl MatchResult {
    pub fn clear(&mut self) {
        self.deliveries.clear();
        self.subscription_ids.clear();
    }

    /// The subscription identifiers of one delivery.
    pub fn sub_ids(&self, d: &Delivery) -> &[u32] {
        &self.subscription_ids[d.sub_ids_start as usize..(d.sub_ids_start + d.sub_ids_len) as usize]
    }
}

struct State {
    trie: Trie,
    sessions: SessionIndex,
    subscriptions: usize,
    /// The local interest, once a cluster asked for it (`enable_interest`).
    interest: Option<InterestLog>,
}

pub struct Router {
    state: RwLock<State>,
    cache: Option<MatchCache>,
    strategy: ShareStrategy,
}

/// Per-thread scratch for matching (no allocation per match once warm). Shrunk after a huge match
/// so a burst cannot pin memory on a thread forever.
#[derive(Default)]
struct Scratch {
    nodes: Vec<u32>,
    levels: Vec<u32>,
    frontier: Vec<u32>,
    next: Vec<u32>,
    subs: Vec<Subscription>,
}

const SCRATCH_KEEP: usize = 1 << 14;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Router {
    pub fn new(config: RouterConfig) -> Self {
        Router {
            state: RwLock::new(State { trie: Trie::new(), sessions: SessionIndex::default(), subscriptions: 0, interest: None }),
            cache: MatchCache::new(config.cache_capacity),
            strategy: config.share_strategy,
        }
    }

    /// Adds or replaces (same session + same filter, incl. same share group) a subscription
    /// [MQTT-3.8.4-3]. Returns Ok(true) when it replaced an existing one. The filter may be a
    /// `$share/<group>/<filter>` or `$queue/<filter>` filter. No Local on a shared subscription is
    /// a Protocol Error [MQTT-3.8.3-4].
    pub fn subscribe(&self, filter: &str, sub: Subscription) -> Result<bool, TopicError> {
        let (group, plain) = match parse_shared(filter)? {
            Some((g, f)) => (Some(g), f),
            None => (None, filter),
        };
        validate_filter(plain)?;
        if group.is_some() && sub.options.no_local() {
            return Err(ERR_SHARED_NO_LOCAL);
        }
        let mut guard = self.state.write();
        let st = &mut *guard;
        let id = st.trie.ensure(plain);
        let was_live = st.trie.node(id).is_live();
        let replaced = match group {
            None => st.trie.node_mut(id).subs.upsert(sub),
            Some(g) => st.trie.with_shared(id, |groups| shared::upsert(groups, g, sub)),
        };
        if !replaced {
            st.sessions.add(sub.session, id);
            st.subscriptions += 1;
            if let Some(log) = &mut st.interest {
                match group {
                    None => log.add(sub.session, plain),
                    Some(g) => log.add(sub.session, &shared_key(g, plain)),
                }
            }
        }
        if !was_live {
            if let Some(c) = &self.cache {
                c.add_node(plain, id);
            }
        }
        Ok(replaced)
    }

    /// Removes the session's subscription to `filter` (which may be a shared filter); false when
    /// there was none (or the filter is malformed).
    pub fn unsubscribe(&self, filter: &str, session: u32) -> bool {
        let (group, plain) = match parse_shared(filter) {
            Ok(Some((g, f))) => (Some(g), f),
            Ok(None) => (None, filter),
            Err(_) => return false,
        };
        if validate_filter(plain).is_err() {
            return false;
        }
        let mut guard = self.state.write();
        let st = &mut *guard;
        let Some(id) = st.trie.find(plain) else { return false };
        let removed = match group {
            None => st.trie.node_mut(id).subs.remove(session),
            Some(g) => st.trie.with_shared(id, |groups| shared::remove(groups, g, session)),
        };
        if !removed {
            return false;
        }
        let now_dead = !st.trie.node(id).is_live();
        st.sessions.remove_one(session, id);
        st.subscriptions -= 1;
        if let Some(log) = &mut st.interest {
            match group {
                None => log.remove(session, plain),
                Some(g) => log.remove(session, &shared_key(g, plain)),
            }
        }
        if now_dead {
            if let Some(c) = &self.cache {
                c.remove_node(plain, id);
            }
            st.trie.prune(id);
        }
        true
    }

    /// Removes every subscription (plain and shared memberships) of a session; returns how many.
    /// Visits only the session's nodes via the per-session index.
    pub fn remove_session(&self, session: u32) -> usize {
        let mut guard = self.state.write();
        let st = &mut *guard;
        let ids = st.sessions.take(session);
        let mut removed = 0;
        let mut groups_left: Vec<String> = Vec::new();
        for id in ids {
            let plain = st.trie.node_mut(id).subs.remove(session);
            let mut n = plain as usize;
            groups_left.clear();
            if st.trie.node(id).has_shared() {
                let logged = st.interest.is_some();
                n += st.trie.with_shared(id, |groups| {
                    shared::remove_session(groups, session, |g| {
                        if logged {
                            groups_left.push(g.to_owned());
                        }
                    })
                });
            }
            let now_dead = !st.trie.node(id).is_live();
            removed += n;
            if n > 0 && st.interest.is_some() {
                let filter = st.trie.filter_of(id);
                let log = st.interest.as_mut().unwrap();
                if plain {
                    log.remove(session, &filter);
                }
                for g in &groups_left {
                    log.remove(session, &shared_key(g, &filter));
                }
            }
            if n > 0 && now_dead {
                if let Some(c) = &self.cache {
                    let filter = st.trie.filter_of(id);
                    c.remove_node(&filter, id);
                }
                st.trie.prune(id);
            }
        }
        st.subscriptions -= removed;
        removed
    }

    /// Starts keeping the local interest (see InterestLog): subscriptions of `excluded` sessions
    /// do not count. Only before anything subscribes (false, and nothing changed, after).
    pub fn enable_interest(&self, excluded: Vec<u32>) -> bool {
        let mut guard = self.state.write();
        if guard.subscriptions > 0 {
            return false;
        }
        guard.interest = Some(InterestLog::new(excluded));
        true
    }

    /// The filters that gained or lost all their local subscriptions since the last call, in
    /// order (empty while interest is not kept).
    pub fn take_interest_changes(&self) -> Vec<(String, bool)> {
        self.state.write().interest.as_mut().map(|log| log.take()).unwrap_or_default()
    }

    /// Every filter with local interest now.
    pub fn interest_snapshot(&self) -> Vec<String> {
        self.state.read().interest.as_ref().map(|log| log.snapshot()).unwrap_or_default()
    }

    /// Computes the deliveries for a PUBLISH to `topic` (a valid topic name) into `out` (cleared
    /// first). `publisher` is the publishing session for No Local [MQTT-3.8.3-3] (its own
    /// non-shared no_local subscriptions are skipped; u32::MAX = none); `publisher_hash` hashes
    /// the publisher's client id for `ShareStrategy::HashClientId`.
    pub fn match_topic(&self, topic: &str, publisher: u32, publisher_hash: u32, out: &mut MatchResult) {
        self.match_inner(topic, publisher, publisher_hash, None, out);
    }

    /// `match_topic` for a message another node of a cluster sent here, limited to `scope`: the
    /// plain subscribers only if `scope.plain`; of the shared groups only those `scope.shares`
    /// names (`$share/<group>/<filter>` or `$queue/<filter>`: the groups the other node picked
    /// this one for), each to one member that is neither an excluded session (the cluster's
    /// handles, see `enable_interest`: a message never goes back to a node) nor on
    /// `scope.skip_worker`. A named group with no such member here gets no delivery.
    pub fn match_topic_scoped(&self, topic: &str, publisher: u32, publisher_hash: u32, scope: &MatchScope, out: &mut MatchResult) {
        self.match_inner(topic, publisher, publisher_hash, Some(scope), out);
    }

    fn match_inner(&self, topic: &str, publisher: u32, publisher_hash: u32, scope: Option<&MatchScope>, out: &mut MatchResult) {
        out.clear();
        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let s = &mut *guard;
            s.nodes.clear();
            let st = self.state.read();
            let hit = match &self.cache {
                Some(c) => c.get_into(topic, &mut s.nodes),
                None => false,
            };
            if !hit {
                st.trie.topic_levels(topic, &mut s.levels);
                st.trie.match_nodes(&s.levels, topic.starts_with('$'), &mut s.nodes, &mut s.frontier, &mut s.next);
                s.nodes.sort_unstable();
                if let Some(c) = &self.cache {
                    c.insert(topic, &s.nodes);
                }
            }
            match scope {
                None => self.build(&st.trie, &s.nodes, publisher, publisher_hash, None, &mut s.subs, out),
                Some(sc) => {
                    // The named groups as (trie node, group name); malformed or unknown ones
                    // name nothing here.
                    let mut wanted: Vec<(u32, &str)> = Vec::with_capacity(sc.shares.len());
                    for f in sc.shares {
                        if let Ok(Some((g, plain))) = parse_shared(f) {
                            if let Some(id) = st.trie.find(plain) {
                                wanted.push((id, g));
                            }
                        }
                    }
                    let excluded = st.interest.as_ref();
                    let resolved = Resolved { plain: sc.plain, wanted: &wanted, excluded, skip_worker: sc.skip_worker };
                    self.build(&st.trie, &s.nodes, publisher, publisher_hash, Some(&resolved), &mut s.subs, out);
                }
            }
            drop(st);
            if s.subs.capacity() > SCRATCH_KEEP {
                s.subs = Vec::new();
            }
            if s.nodes.capacity() > SCRATCH_KEEP {
                s.nodes = Vec::new();
            }
            for v in [&mut s.levels, &mut s.frontier, &mut s.next] {
                if v.capacity() > SCRATCH_KEEP {
                    *v = Vec::new();
                }
            }
        });
    }

    /// Turns matched nodes (sorted ids) into deliveries.
    fn build(
        &self,
        trie: &Trie,
        nodes: &[u32],
        publisher: u32,
        publisher_hash: u32,
        scope: Option<&Resolved>,
        subs: &mut Vec<Subscription>,
        out: &mut MatchResult,
    ) {
        subs.clear();
        // Scoped to the shared groups only: no plain subscriber is looked at.
        let plain_nodes: &[u32] = if scope.map_or(true, |sc| sc.plain) { nodes } else { &[] };
        for &id in plain_nodes {
            for s in trie.node(id).subs.as_slice() {
                // [MQTT-3.8.3-3] No Local: not to the publisher's own connection.
                if s.session == publisher && s.options.no_local() {
                    continue;
                }
                subs.push(*s);
            }
        }
        if subs.len() > 1 {
            // Whole-record key: equal keys are identical records, so the result is deterministic.
            // Stable sort: each node's list is already sorted by session, so `subs` is a few
            // sorted runs (usually one long one) that the run-detecting merge sort just merges.
            subs.sort_by_key(delivery_order);
        }
        let mut i = 0;
        while i < subs.len() {
            let first = subs[i];
            let start = out.subscription_ids.len();
            let (mut qos, mut rap) = (0u8, false);
            while i < subs.len() && subs[i].session == first.session {
                let s = subs[i];
                // [MQTT-3.3.4-2] highest QoS of the overlapping subscriptions.
                qos = qos.max(s.options.qos());
                rap |= s.options.retain_as_published();
                // [MQTT-3.3.4-3..5] all their Subscription Identifiers (ascending after the sort;
                // a repeated id is sent once).
                let dup = out.subscription_ids.len() > start && out.subscription_ids.last() == Some(&s.subscription_id);
                if s.subscription_id != 0 && !dup {
                    out.subscription_ids.push(s.subscription_id);
                }
                i += 1;
            }
            out.deliveries.push(Delivery {
                session: first.session,
                worker: first.worker,
                qos,
                retain_as_published: rap,
                shared: false,
                sub_ids_start: start as u32,
                sub_ids_len: (out.subscription_ids.len() - start) as u32,
            });
        }
        for &id in nodes {
            for g in trie.shared_groups(id) {
                // §4.8.2: each message goes to exactly one session of the shared subscription.
                let picked = match scope {
                    None => g.pick(self.strategy, publisher_hash),
                    Some(sc) => {
                        if !sc.wanted.iter().any(|&(w, name)| w == id && name == g.name.as_str()) {
                            continue;
                        }
                        g.pick_where(self.strategy, publisher_hash, |m| sc.eligible(m))
                    }
                };
                let Some(m) = picked else { continue };
                let start = out.subscription_ids.len();
                if m.subscription_id != 0 {
                    out.subscription_ids.push(m.subscription_id);
                }
                out.deliveries.push(Delivery {
                    session: m.session,
                    worker: m.worker,
                    qos: m.options.qos(),
                    retain_as_published: m.options.retain_as_published(),
                    shared: true,
                    sub_ids_start: start as u32,
                    sub_ids_len: (out.subscription_ids.len() - start) as u32,
                });
            }
        }
    }

    pub fn subscription_count(&self) -> usize {
        self.state.read().subscriptions
    }

    /// Number of cached topics (0 when the cache is off).
    pub fn cache_len(&self) -> usize {
        self.cache.as_ref().map_or(0, MatchCache::len)
    }

    /// Trie nodes in use (root included).
    pub fn node_count(&self) -> usize {
        self.state.read().trie.node_count()
    }

    /// Approximate heap bytes owned by the trie and the per-session index (not the match cache).
    /// Walks every node: for benchmarks and diagnostics, not the hot path.
    pub fn heap_bytes(&self) -> usize {
        let st = self.state.read();
        st.trie.heap_bytes() + st.sessions.heap_bytes()
    }
}

/// What a message from another node of a cluster may reach here (`Router::match_topic_scoped`).
pub struct MatchScope<'a> {
    /// Deliver to the plain (non-shared) subscribers.
    pub plain: bool,
    /// The shared groups to deliver to, one member each: `$share/<group>/<filter>` or
    /// `$queue/<filter>`.
    pub shares: &'a [String],
    /// Members on this worker are not picked (the rule worker: a rule runs on the message's own
    /// node only).
    pub skip_worker: Option<u16>,
}

/// A `MatchScope` resolved against the trie, under the read lock.
struct Resolved<'a> {
    plain: bool,
    wanted: &'a [(u32, &'a str)],
    excluded: Option<&'a InterestLog>,
    skip_worker: Option<u16>,
}

impl Resolved<'_> {
    #[inline]
    fn eligible(&self, m: &Subscription) -> bool {
        self.skip_worker != Some(m.worker) && !self.excluded.is_some_and(|log| log.excludes(m.session))
    }
}

/// (session, subscription id, worker, options) packed into one integer: one compare per step.
#[inline]
fn delivery_order(s: &Subscription) -> u128 {
    (s.session as u128) << 96 | (s.subscription_id as u128) << 64 | (s.worker as u128) << 8 | s.options.0 as u128
}
