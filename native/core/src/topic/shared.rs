//! Owns shared-subscription groups [MQTT-4.8.2]: one `SharedGroup` per (share name, filter), stored
//! on the filter's trie node, and member selection. Members are mutated under the trie write lock;
//! `pick` runs under the trie read lock on any matching thread (the round-robin cursor is atomic).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

use compact_str::CompactString;

use super::subscription::Subscription;

/// How one member of a shared group is chosen for each message [MQTT-4.8.2-3 ... 4.8.2-6 leave the
/// policy to the Server].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareStrategy {
    RoundRobin,
    Random,
    HashClientId,
}

/// One share group at one filter. Members sorted by session id (deterministic order).
pub(crate) struct SharedGroup {
    pub name: CompactString,
    pub members: Vec<Subscription>,
    pub cursor: AtomicU32,
}

impl SharedGroup {
    /// Chooses the member that receives this message (None only for an empty group, which the trie
    /// never keeps).
    #[inline]
    pub fn pick(&self, strategy: ShareStrategy, publisher_hash: u32) -> Option<&Subscription> {
        let n = self.members.len() as u32;
        if n == 0 {
            return None;
        }
        let i = match strategy {
            ShareStrategy::RoundRobin => self.cursor.fetch_add(1, Ordering::Relaxed) % n,
            ShareStrategy::Random => (next_random() % n as u64) as u32,
            ShareStrategy::HashClientId => publisher_hash % n,
        };
        self.members.get(i as usize)
    }

    /// `pick` among the members `eligible` accepts only (a message from another node of a cluster:
    /// never to a node handle); None when none is. Round robin keeps one cursor for both kinds of
    /// pick; a pick with every member eligible is the same as `pick`.
    #[inline]
    pub fn pick_where(&self, strategy: ShareStrategy, publisher_hash: u32, eligible: impl Fn(&Subscription) -> bool) -> Option<&Subscription> {
        let k = self.members.iter().filter(|m| eligible(m)).count() as u32;
        if k == 0 {
            return None;
        }
        if k == self.members.len() as u32 {
            return self.pick(strategy, publisher_hash);
        }
        let i = match strategy {
            ShareStrategy::RoundRobin => self.cursor.fetch_add(1, Ordering::Relaxed) % k,
            ShareStrategy::Random => (next_random() % k as u64) as u32,
            ShareStrategy::HashClientId => publisher_hash % k,
        };
        self.members.iter().filter(|m| eligible(m)).nth(i as usize)
    }

    pub fn heap_bytes(&self) -> usize {
        let name = if self.name.is_heap_allocated() { self.name.capacity() } else { 0 };
        name + self.members.capacity() * std::mem::size_of::<Subscription>()
    }
}

/// The shared groups of one node, sorted by name; boxed so ordinary nodes pay one pointer.
pub(crate) type SharedGroups = Option<Box<Vec<SharedGroup>>>;

/// Adds or replaces `sub` as a member of group `name`; returns true when it replaced a member.
pub(crate) fn upsert(groups: &mut SharedGroups, name: &str, sub: Subscription) -> bool {
    let list = groups.get_or_insert_with(Default::default);
    let gi = match list.binary_search_by(|g| g.name.as_str().cmp(name)) {
        Ok(i) => i,
        Err(i) => {
            list.insert(i, SharedGroup { name: name.into(), members: Vec::new(), cursor: AtomicU32::new(0) });
            i
        }
    };
    let members = &mut list[gi].members;
    match members.binary_search_by_key(&sub.session, |m| m.session) {
        Ok(i) => {
            members[i] = sub;
            true
        }
        Err(i) => {
            members.insert(i, sub);
            false
        }
    }
}

/// Removes `session` from group `name`; drops the group (and the box) when it becomes empty.
pub(crate) fn remove(groups: &mut SharedGroups, name: &str, session: u32) -> bool {
    let Some(list) = groups.as_mut() else { return false };
    let Ok(gi) = list.binary_search_by(|g| g.name.as_str().cmp(name)) else { return false };
    let members = &mut list[gi].members;
    let Ok(i) = members.binary_search_by_key(&session, |m| m.session) else { return false };
    members.remove(i);
    if members.is_empty() {
        list.remove(gi);
    }
    if list.is_empty() {
        *groups = None;
    }
    true
}

/// Removes `session` from every group of the node; returns how many memberships were removed, and
/// tells `removed_from` each group's name.
pub(crate) fn remove_session(groups: &mut SharedGroups, session: u32, mut removed_from: impl FnMut(&str)) -> usize {
    let Some(list) = groups.as_mut() else { return 0 };
    let mut removed = 0;
    list.retain_mut(|g| {
        if let Ok(i) = g.members.binary_search_by_key(&session, |m| m.session) {
            g.members.remove(i);
            removed += 1;
            removed_from(&g.name);
        }
        !g.members.is_empty()
    });
    if list.is_empty() {
        *groups = None;
    }
    removed
}

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let local = 0u8;
    let addr = &local as *const u8 as u64;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (addr ^ nanos.rotate_left(17)) | 1
}

/// xorshift64* per thread: cheap, lock-free, good enough to spread load over group members.
#[inline]
fn next_random() -> u64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 16
    })
}
