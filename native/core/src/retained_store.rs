//! RetainedStore: the retained messages of the whole process, shared by every worker thread.
//! A message is stored once as an opaque record (the broker's own serialisation) under its topic;
//! the topic index finds the records a subscription filter matches without scanning them all.
//! Lock order: `records` before the index's own lock (the index never calls back).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::topic::RetainedIndex;

#[derive(Default)]
pub struct RetainedStore {
    index: RetainedIndex,
    records: RwLock<Records>,
}

#[derive(Default)]
struct Records {
    by_id: HashMap<u64, (Box<str>, Arc<[u8]>)>,
    next_id: u64,
    bytes: usize,
}

impl RetainedStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores (or replaces) the retained record of `topic`. Returns true if one was replaced.
    pub fn set(&self, topic: &str, record: &[u8]) -> bool {
        let mut r = self.records.write();
        r.next_id += 1;
        let id = r.next_id;
        r.bytes += record.len();
        r.by_id.insert(id, (topic.into(), Arc::from(record)));
        match self.index.set(topic, id) {
            Some(old) => {
                if let Some((_, rec)) = r.by_id.remove(&old) {
                    r.bytes -= rec.len();
                }
                true
            }
            None => false,
        }
    }

    /// Removes the retained record of `topic` [MQTT-3.3.1-6]. Returns whether there was one.
    pub fn remove(&self, topic: &str) -> bool {
        let mut r = self.records.write();
        match self.index.remove(topic) {
            Some(id) => {
                if let Some((_, rec)) = r.by_id.remove(&id) {
                    r.bytes -= rec.len();
                }
                true
            }
            None => false,
        }
    }

    pub fn get(&self, topic: &str) -> Option<Arc<[u8]>> {
        let r = self.records.read();
        self.index.get(topic).and_then(|id| r.by_id.get(&id).map(|(_, rec)| rec.clone()))
    }

    /// The records whose topics the filter matches (validated by the caller).
    pub fn match_filter(&self, filter: &str, out: &mut Vec<Arc<[u8]>>) {
        let r = self.records.read();
        let mut ids = Vec::new();
        self.index.match_filter(filter, &mut ids);
        out.extend(ids.iter().filter_map(|id| r.by_id.get(id).map(|(_, rec)| rec.clone())));
    }

    /// Topics and records, for listing; `visit` returns false to stop.
    pub fn for_each(&self, mut visit: impl FnMut(&str, &[u8]) -> bool) {
        let r = self.records.read();
        for (topic, rec) in r.by_id.values() {
            if !visit(topic, rec) {
                break;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.records.read().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> usize {
        self.records.read().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replace_remove_match() {
        let s = RetainedStore::new();
        assert!(!s.set("a/b", b"one"));
        assert!(s.set("a/b", b"two"));
        s.set("a/c", b"three");
        s.set("$SYS/x", b"sys");
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
}
