//! RetainedStore: the retained messages of the whole process, shared by every worker thread.
//! A message is stored once as an opaque record (the broker's own serialisation) under its topic;
//! the topic index finds the records a subscription filter matches without scanning them all.
//! It also keeps what the retained-message limits need, under the same lock as the records, so
//! every worker sees one count: totals per first topic level (the broker's own `$SYS` level is
//! not counted against a limit), and the records that expire, in expiry order.
//! Lock order: `records` before the index's own lock (the index never calls back).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use crate::topic::RetainedIndex;

/// The first topic level of the broker's own statistics, not counted against a count limit.
const SYSTEM_LEVEL: &str = "$SYS";
/// How long a place reserved by `admit` is held for its `set_reserved` at most (a store write that
/// failed, or a worker that died, gives its places back by then).
const RESERVATION_TTL: Duration = Duration::from_secs(10);

#[derive(Default)]
pub struct RetainedStore {
    index: RetainedIndex,
    records: RwLock<Records>,
}

struct Entry {
    topic: Box<str>,
    record: Arc<[u8]>,
    /// Absolute expiry in ms since the epoch; 0: never.
    expires_at: u64,
}

/// Records and bytes under one first topic level.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelTotals {
    pub count: usize,
    pub bytes: usize,
}

#[derive(Default)]
struct Records {
    by_id: HashMap<u64, Entry>,
    next_id: u64,
    bytes: usize,
    levels: HashMap<Box<str>, LevelTotals>,
    /// (expires_at, id) of every record that expires.
    expiring: BTreeSet<(u64, u64)>,
    /// Places `admit` reserved for new topics whose records are not set yet, by deadline.
    reservations: VecDeque<Instant>,
}

/// What `admit` answered.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Admission {
    /// No limit applies (no limit, a `$SYS` topic, or a topic that has a record: a replace).
    Free,
    /// A new topic: a place is held for it until `set_reserved` (or `release`, or the TTL).
    Reserved,
    /// A new topic past the limit, counting the places held.
    Refused,
}

/// What `set_within` did.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum SetOutcome {
    Added,
    Replaced,
    /// A new topic past the count limit: nothing changed.
    Refused,
}

fn first_level(topic: &str) -> &str {
    topic.split('/').next().unwrap_or("")
}

impl Records {
    fn insert(&mut self, id: u64, entry: Entry) {
        self.bytes += entry.record.len();
        let level = first_level(&entry.topic);
        match self.levels.get_mut(level) {
            Some(t) => {
                t.count += 1;
                t.bytes += entry.record.len();
            }
            None => {
                self.levels.insert(level.into(), LevelTotals { count: 1, bytes: entry.record.len() });
            }
        }
        if entry.expires_at != 0 {
            self.expiring.insert((entry.expires_at, id));
        }
        self.by_id.insert(id, entry);
    }

    fn take(&mut self, id: u64) -> Option<Entry> {
        let entry = self.by_id.remove(&id)?;
        self.bytes -= entry.record.len();
        let level = first_level(&entry.topic);
        if let Some(t) = self.levels.get_mut(level) {
            t.count -= 1;
            t.bytes -= entry.record.len();
            if t.count == 0 {
                self.levels.remove(level);
            }
        }
        if entry.expires_at != 0 {
            self.expiring.remove(&(entry.expires_at, id));
        }
        Some(entry)
    }

    fn drop_stale_reservations(&mut self, now: Instant) {
        while self.reservations.front().is_some_and(|&deadline| deadline <= now) {
            self.reservations.pop_front();
        }
    }

    /// Records a count limit applies to: all but the broker's own `$SYS` ones.
    fn counted(&self) -> usize {
        self.by_id.len() - self.levels.get(SYSTEM_LEVEL).map_or(0, |t| t.count)
    }
}

impl RetainedStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores (or replaces) the retained record of `topic`, expiring at `expires_at` (ms since
    /// the epoch, 0: never). Returns true if one was replaced.
    pub fn set(&self, topic: &str, record: &[u8], expires_at: u64) -> bool {
        self.set_within(topic, record, expires_at, 0) == SetOutcome::Replaced
    }

    /// As `set`, but a new topic is refused when `max_count` (0: no limit) records other than
    /// `$SYS` ones are held already. Replacing a topic's record is never refused. The check and
    /// the insert are under one lock: workers racing for the last place cannot both take it.
    pub fn set_within(&self, topic: &str, record: &[u8], expires_at: u64, max_count: usize) -> SetOutcome {
        let mut r = self.records.write();
        if max_count > 0 && first_level(topic) != SYSTEM_LEVEL && r.counted() >= max_count && self.index.get(topic).is_none() {
            return SetOutcome::Refused;
        }
        r.next_id += 1;
        let id = r.next_id;
        r.insert(id, Entry { topic: topic.into(), record: Arc::from(record), expires_at });
        match self.index.set(topic, id) {
            Some(old) => {
                r.take(old);
                SetOutcome::Replaced
            }
            None => SetOutcome::Added,
        }
    }

    /// Whether a record for `topic` would be admitted under `max_count` now, places held
    /// counted, without holding one (see `admit`).
    pub fn admits(&self, topic: &str, max_count: usize) -> bool {
        if max_count == 0 || first_level(topic) == SYSTEM_LEVEL {
            return true;
        }
        let r = self.records.read();
        r.counted() + r.reservations.len() < max_count || self.index.get(topic).is_some()
    }

    /// Admits a record for `topic` under `max_count` (0: no limit), holding a place for a new
    /// topic until its record is set: the check a worker makes when it accepts a PUBLISH, before
    /// the record is stored (with a store, only once the write is done). Places held count
    /// against the limit, so workers admitting at the same moment, or many PUBLISHes waiting for
    /// their store write, cannot pass it together.
    pub fn admit(&self, topic: &str, max_count: usize) -> Admission {
        if max_count == 0 || first_level(topic) == SYSTEM_LEVEL {
            return Admission::Free;
        }
        let mut r = self.records.write();
        if self.index.get(topic).is_some() {
            return Admission::Free;
        }
        let now = Instant::now();
        r.drop_stale_reservations(now);
        if r.counted() + r.reservations.len() >= max_count {
            return Admission::Refused;
        }
        r.reservations.push_back(now + RESERVATION_TTL);
        Admission::Reserved
    }

    /// `set` for a topic `admit` reserved a place for: the place is taken by the record.
    pub fn set_reserved(&self, topic: &str, record: &[u8], expires_at: u64) -> bool {
        let replaced = self.set(topic, record, expires_at);
        self.release();
        replaced
    }

    /// Gives back a place `admit` reserved (its message was not retained after all).
    pub fn release(&self) {
        self.records.write().reservations.pop_front();
    }

    /// Removes the retained record of `topic` [MQTT-3.3.1-6]. Returns whether there was one.
    pub fn remove(&self, topic: &str) -> bool {
        let mut r = self.records.write();
        match self.index.remove(topic) {
            Some(id) => {
                r.take(id);
                true
            }
            None => false,
        }
    }

    /// Removes the records expired at `now` (ms since the epoch); returns how many. Costs
    /// O(log n) per record removed, nothing for the records that do not expire.
    pub fn remove_expired(&self, now: u64) -> usize {
        let mut r = self.records.write();
        let mut removed = 0;
        while let Some(&(at, id)) = r.expiring.first() {
            if at > now {
                break;
            }
            match r.take(id) {
                Some(entry) => {
                    if self.index.get(&entry.topic) == Some(id) {
                        self.index.remove(&entry.topic);
                    }
                    removed += 1;
                }
                None => {
                    r.expiring.remove(&(at, id));
                }
            }
        }
        removed
    }

    pub fn get(&self, topic: &str) -> Option<Arc<[u8]>> {
        let r = self.records.read();
        self.index.get(topic).and_then(|id| r.by_id.get(&id).map(|e| e.record.clone()))
    }

    /// The records whose topics the filter matches (validated by the caller).
    pub fn match_filter(&self, filter: &str, out: &mut Vec<Arc<[u8]>>) {
        let r = self.records.read();
        let mut ids = Vec::new();
        self.index.match_filter(filter, &mut ids);
        out.extend(ids.iter().filter_map(|id| r.by_id.get(id).map(|e| e.record.clone())));
    }

    /// Topics and records, for listing; `visit` returns false to stop.
    pub fn for_each(&self, mut visit: impl FnMut(&str, &[u8]) -> bool) {
        let r = self.records.read();
        for e in r.by_id.values() {
            if !visit(&e.topic, &e.record) {
                break;
            }
        }
    }

    /// The `top` first topic levels holding the most records (most first, then by name), and the
    /// totals of all the others.
    pub fn levels(&self, top: usize) -> (Vec<(String, LevelTotals)>, LevelTotals) {
        let r = self.records.read();
        let mut all: Vec<(&str, LevelTotals)> = r.levels.iter().map(|(l, t)| (&**l, *t)).collect();
        sort_levels(&mut all);
        let mut rest = LevelTotals::default();
        for (_, t) in all.iter().skip(top) {
            rest.count += t.count;
            rest.bytes += t.bytes;
        }
        (all.into_iter().take(top).map(|(l, t)| (l.to_string(), t)).collect(), rest)
    }

    pub fn len(&self) -> usize {
        self.records.read().by_id.len()
    }

    /// Records a count limit applies to (all but `$SYS` ones).
    pub fn counted(&self) -> usize {
        self.records.read().counted()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> usize {
        self.records.read().bytes
    }
}

fn sort_levels(levels: &mut [(&str, LevelTotals)]) {
    levels.sort_unstable_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replace_remove_match() {
        let s = RetainedStore::new();
        assert!(!s.set("a/b", b"one", 0));
        assert!(s.set("a/b", b"two", 0));
        s.set("a/c", b"three", 0);
        s.set("$SYS/x", b"sys", 0);
        assert_eq!(&*s.get("a/b").unwrap(), b"two");
        assert_eq!(s.len(), 3);
        assert_eq!(s.bytes(), 3 + 5 + 3);
        let mut out = Vec::new();
        s.match_filter("#", &mut out);
        let mut got: Vec<&[u8]> = out.iter().map(|r| &r[..]).collect();
        got.sort();
        assert_eq!(got, vec![&b"three"[..], &b"two"[..]], "'#' does not see $ topics [MQTT-4.7.2-1]");
        assert!(s.remove("a/b"));
        assert!(!s.remove("a/b"));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn count_limit_refuses_new_topics_only() {
        let s = RetainedStore::new();
        s.set("$SYS/uptime", b"1", 0);
        assert_eq!(s.set_within("a/1", b"x", 0, 2), SetOutcome::Added);
        assert_eq!(s.set_within("a/2", b"x", 0, 2), SetOutcome::Added);
        assert_eq!(s.counted(), 2, "$SYS is not counted");
        assert!(!s.admits("a/3", 2));
        assert!(s.admits("a/1", 2), "a replace is admitted");
        assert!(s.admits("$SYS/more", 2), "the broker's own topics are not limited");
        assert_eq!(s.set_within("a/3", b"x", 0, 2), SetOutcome::Refused);
        assert!(s.get("a/3").is_none());
        assert_eq!(s.set_within("a/1", b"yy", 0, 2), SetOutcome::Replaced);
        assert_eq!(&*s.get("a/1").unwrap(), b"yy");
        assert!(s.remove("a/2"));
        assert_eq!(s.set_within("a/3", b"x", 0, 2), SetOutcome::Added);
        assert_eq!(s.set_within("a/4", b"x", 0, 0), SetOutcome::Added, "0: no limit");
    }

    #[test]
    fn count_limit_holds_across_threads() {
        let s = Arc::new(RetainedStore::new());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut added = 0;
                    for i in 0..200 {
                        if s.set_within(&format!("t{t}/{i}"), b"x", 0, 100) == SetOutcome::Added {
                            added += 1;
                        }
                    }
                    added
                })
            })
            .collect();
        let added: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(added, 100);
        assert_eq!(s.len(), 100);
    }

    #[test]
    fn admitted_places_count_until_set_or_released() {
        let s = RetainedStore::new();
        s.set("a/1", b"x", 0);
        assert_eq!(s.admit("a/2", 3), Admission::Reserved);
        assert_eq!(s.admit("a/3", 3), Admission::Reserved);
        assert_eq!(s.admit("a/4", 3), Admission::Refused, "one record and two places held");
        assert!(!s.admits("a/4", 3));
        assert_eq!(s.admit("a/1", 3), Admission::Free, "a replace holds no place");
        assert_eq!(s.admit("$SYS/x", 3), Admission::Free);
        assert_eq!(s.admit("a/4", 0), Admission::Free);
        s.set_reserved("a/2", b"x", 0);
        assert_eq!(s.admit("a/4", 3), Admission::Refused, "two records and one place held");
        s.release(); // a/3's message was not retained after all
        assert_eq!(s.admit("a/4", 3), Admission::Reserved);
        s.set_reserved("a/4", b"x", 0);
        assert_eq!(s.counted(), 3);
        assert_eq!(s.admit("a/5", 3), Admission::Refused);
        s.release(); // more releases than places: nothing to give back
        assert_eq!(s.admit("a/5", 3), Admission::Refused);
    }

    #[test]
    fn admission_holds_across_threads() {
        let s = Arc::new(RetainedStore::new());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut admitted = Vec::new();
                    for i in 0..200 {
                        let topic = format!("t{t}/{i}");
                        if s.admit(&topic, 100) == Admission::Reserved {
                            admitted.push(topic);
                        }
                    }
                    // Stored afterwards, as with a store write in between.
                    for topic in &admitted {
                        s.set_reserved(topic, b"x", 0);
                    }
                    admitted.len()
                })
            })
            .collect();
        let admitted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(admitted, 100);
        assert_eq!(s.len(), 100);
    }

    #[test]
    fn levels_and_bytes_follow_sets_and_removes() {
        let s = RetainedStore::new();
        s.set("a/1", b"xx", 0);
        s.set("a/2", b"xxx", 0);
        s.set("b", b"y", 0);
        s.set("c/1", b"z", 0);
        s.set("/lead", b"e", 0);
        s.set("a/1", b"x", 0);
        let (top, rest) = s.levels(2);
        assert_eq!(top, vec![("a".to_string(), LevelTotals { count: 2, bytes: 4 }), ("".to_string(), LevelTotals { count: 1, bytes: 1 })]);
        assert_eq!(rest, LevelTotals { count: 2, bytes: 2 });
        s.remove("a/1");
        s.remove("a/2");
        let (top, _) = s.levels(10);
        assert!(top.iter().all(|(l, _)| l != "a"), "an emptied level is gone");
        assert_eq!(s.bytes(), 3);
    }

    #[test]
    fn expired_records_leave_in_expiry_order() {
        let s = RetainedStore::new();
        s.set("a", b"1", 1000);
        s.set("b", b"2", 2000);
        s.set("c", b"3", 0);
        s.set("d", b"4", 1500);
        s.set("d", b"5", 0); // replaced by a record that does not expire
        assert_eq!(s.remove_expired(999), 0);
        assert_eq!(s.remove_expired(1500), 1);
        assert!(s.get("a").is_none());
        assert_eq!(&*s.get("d").unwrap(), b"5");
        assert_eq!(s.remove_expired(10_000), 1);
        assert!(s.get("b").is_none());
        assert_eq!(s.len(), 2);
        let mut out = Vec::new();
        s.match_filter("#", &mut out);
        assert_eq!(out.len(), 2, "the index forgot the expired topics");
        assert!(!s.remove("b"));
    }
}
