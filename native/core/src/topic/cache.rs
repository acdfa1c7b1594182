//! Owns the bounded match cache: topic -> sorted ids of the live trie nodes whose filter matches
//! it. Subscriptions and shared groups are read from those nodes on every match, so No Local and
//! shared-member selection still happen per message. Sharded: each shard is a `Mutex`.
//!
//! Threads: matchers look up and insert while holding the trie READ lock; subscribe, unsubscribe
//! and remove_session update entries while holding the trie WRITE lock (so an entry can never be
//! computed from an older trie than the one it is stored next to). At most one shard lock is held
//! at a time, always after the trie lock. Entries are updated in place when a node becomes live or
//! dead, never flushed. Eviction: CLOCK (second chance) per shard.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

use parking_lot::Mutex;

use super::filter::{has_wildcard, topic_matches};

const MAX_SHARDS: usize = 16;

struct Slot {
    topic: Box<str>,
    nodes: Vec<u32>,
    referenced: bool,
}

struct Shard {
    map: HashMap<Box<str>, u32, RandomState>,
    slots: Vec<Slot>,
    hand: usize,
}

pub(crate) struct MatchCache {
    shards: Box<[Mutex<Shard>]>,
    per_shard: usize,
    /// Randomly keyed (topics are client-chosen): picks the shard.
    hasher: RandomState,
}

impl MatchCache {
    /// None when `capacity` is 0 (cache off).
    pub fn new(capacity: usize) -> Option<MatchCache> {
        if capacity == 0 {
            return None;
        }
        let n = capacity.clamp(1, MAX_SHARDS);
        let per_shard = capacity.div_ceil(n);
        let shards = (0..n)
            .map(|_| Mutex::new(Shard { map: HashMap::default(), slots: Vec::new(), hand: 0 }))
            .collect();
        Some(MatchCache { shards, per_shard, hasher: RandomState::new() })
    }

    #[inline]
    fn shard(&self, topic: &str) -> &Mutex<Shard> {
        let h = self.hasher.hash_one(topic);
        &self.shards[((h >> 32) as usize) % self.shards.len()]
    }

    /// On a hit copies the node ids into `out` (appending) and returns true.
    pub fn get_into(&self, topic: &str, out: &mut Vec<u32>) -> bool {
        let mut s = self.shard(topic).lock();
        let Some(&i) = s.map.get(topic) else { return false };
        let slot = &mut s.slots[i as usize];
        slot.referenced = true;
        out.extend_from_slice(&slot.nodes);
        true
    }

    /// Stores a freshly computed (sorted) match. Caller holds the trie read lock.
    pub fn insert(&self, topic: &str, nodes: &[u32]) {
        let per_shard = self.per_shard;
        let mut guard = self.shard(topic).lock();
        let s = &mut *guard;
        if let Some(&i) = s.map.get(topic) {
            let slot = &mut s.slots[i as usize];
            slot.nodes.clear();
            slot.nodes.extend_from_slice(nodes);
            return;
        }
        let key: Box<str> = topic.into();
        if s.slots.len() < per_shard {
            s.map.insert(key.clone(), s.slots.len() as u32);
            s.slots.push(Slot { topic: key, nodes: nodes.to_vec(), referenced: false });
            return;
        }
        // CLOCK: skip (and clear) referenced slots; evict the first unreferenced one.
        let victim = loop {
            let h = s.hand;
            s.hand = (h + 1) % s.slots.len();
            if s.slots[h].referenced {
                s.slots[h].referenced = false;
            } else {
                break h;
            }
        };
        let slot = &mut s.slots[victim];
        s.map.remove(&slot.topic);
        slot.topic = key.clone();
        slot.nodes.clear();
        slot.nodes.extend_from_slice(nodes);
        slot.referenced = false;
        s.map.insert(key, victim as u32);
    }

    /// A node for `filter` became live: add it to every cached topic the filter matches.
    /// Caller holds the trie write lock.
    pub fn add_node(&self, filter: &str, node: u32) {
        self.update(filter, |nodes| {
            if let Err(i) = nodes.binary_search(&node) {
                nodes.insert(i, node);
            }
        });
    }

    /// The node for `filter` is no longer live: remove it from the cached topics it matched.
    /// An exact filter is one lookup; otherwise every entry is checked by node id (a binary search
    /// on a short sorted list, no topic matching). Caller holds the trie write lock.
    pub fn remove_node(&self, filter: &str, node: u32) {
        let remove = |nodes: &mut Vec<u32>| {
            if let Ok(i) = nodes.binary_search(&node) {
                nodes.remove(i);
            }
        };
        if !has_wildcard(filter) {
            self.update(filter, remove);
            return;
        }
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            for slot in s.slots.iter_mut() {
                remove(&mut slot.nodes);
            }
        }
    }

    fn update(&self, filter: &str, mut f: impl FnMut(&mut Vec<u32>)) {
        if !has_wildcard(filter) {
            // An exact filter matches exactly one topic: itself ('$' rule irrelevant).
            let mut guard = self.shard(filter).lock();
            let s = &mut *guard;
            if let Some(&i) = s.map.get(filter) {
                f(&mut s.slots[i as usize].nodes);
            }
            return;
        }
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            for slot in s.slots.iter_mut() {
                if topic_matches(filter, &slot.topic) {
                    f(&mut slot.nodes);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().slots.len()).sum()
    }
}
