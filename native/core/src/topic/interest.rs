//! Owns a routing core's local interest, for a cluster: per interest key, how many subscriptions
//! of sessions that are not excluded (the cluster's own handles, whose subscriptions are the other
//! nodes' interest) it has, and the keys whose count went from 0 to 1 (gained) or from 1 to 0
//! (lost) since the changes were last taken. The key of a plain subscription is its filter; that
//! of a shared one is `$share/<group>/<filter>` (a `$queue/<filter>` is the group DEFAULT), so
//! another node can take part in the group as one member. Kept under the router's state lock.

use std::collections::HashMap;

#[derive(Default)]
pub struct InterestLog {
    excluded: Vec<u32>,
    counts: HashMap<String, u32>,
    changes: Vec<(String, bool)>,
}

impl InterestLog {
    pub fn new(mut excluded: Vec<u32>) -> Self {
        excluded.sort_unstable();
        excluded.dedup();
        InterestLog { excluded, counts: HashMap::new(), changes: Vec::new() }
    }

    /// Whether `session` is one of the excluded (the cluster's) handles.
    #[inline]
    pub fn excludes(&self, session: u32) -> bool {
        self.excluded.binary_search(&session).is_ok()
    }

    fn counted(&self, session: u32) -> bool {
        !self.excludes(session)
    }

    /// A new subscription of `session` to `filter` (not a replacement).
    pub fn add(&mut self, session: u32, filter: &str) {
        if !self.counted(session) {
            return;
        }
        let n = self.counts.entry(filter.to_owned()).or_insert(0);
        *n += 1;
        if *n == 1 {
            self.changes.push((filter.to_owned(), true));
        }
    }

    /// A removed subscription of `session` to `filter`.
    pub fn remove(&mut self, session: u32, filter: &str) {
        if !self.counted(session) {
            return;
        }
        let Some(n) = self.counts.get_mut(filter) else { return };
        *n -= 1;
        if *n == 0 {
            self.counts.remove(filter);
            self.changes.push((filter.to_owned(), false));
        }
    }

    /// The changes since the last take, in order.
    pub fn take(&mut self) -> Vec<(String, bool)> {
        std::mem::take(&mut self.changes)
    }

    /// Every key with local interest now.
    pub fn snapshot(&self) -> Vec<String> {
        self.counts.keys().cloned().collect()
    }
}

/// The interest key of a shared subscription.
pub fn shared_key(group: &str, filter: &str) -> String {
    let mut k = String::with_capacity(8 + group.len() + filter.len());
    k.push_str("$share/");
    k.push_str(group);
    k.push('/');
    k.push_str(filter);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_gains_and_losses_excluding_a_session() {
        let mut log = InterestLog::new(vec![7]);
        log.add(1, "a/#");
        log.add(2, "a/#");
        log.add(7, "b");
        assert_eq!(log.take(), vec![("a/#".to_owned(), true)]);
        log.remove(1, "a/#");
        assert!(log.take().is_empty());
        log.remove(2, "a/#");
        log.remove(7, "b");
        assert_eq!(log.take(), vec![("a/#".to_owned(), false)]);
        assert!(log.snapshot().is_empty());
    }

    #[test]
    fn excluded_sessions_are_known_in_any_order() {
        let log = InterestLog::new(vec![9, 3, 7, 3]);
        assert!(log.excludes(3) && log.excludes(7) && log.excludes(9));
        assert!(!log.excludes(4) && !log.excludes(10));
    }
}

