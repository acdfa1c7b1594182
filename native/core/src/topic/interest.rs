//! Owns a routing core's local interest, for a cluster: per plain filter (a shared subscription
//! counts under its filter without the `$share/<group>/` prefix), how many subscriptions of
//! sessions that are not excluded (the cluster's own handle, whose subscriptions are the other
//! nodes' interest) it has, and the filters whose count went from 0 to 1 (gained) or from 1 to 0
//! (lost) since the changes were last taken. Kept under the router's state lock.

use std::collections::HashMap;

#[derive(Default)]
pub struct InterestLog {
    excluded: Vec<u32>,
    counts: HashMap<String, u32>,
    changes: Vec<(String, bool)>,
}

impl InterestLog {
    pub fn new(excluded: Vec<u32>) -> Self {
        InterestLog { excluded, counts: HashMap::new(), changes: Vec::new() }
    }

    fn counted(&self, session: u32) -> bool {
        !self.excluded.contains(&session)
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

    /// Every filter with local interest now.
    pub fn snapshot(&self) -> Vec<String> {
        self.counts.keys().cloned().collect()
    }
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
}
