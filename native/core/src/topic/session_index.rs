//! Owns the per-session index: session id -> trie node ids holding that session's subscriptions
//! (one entry per subscription, so a node appears once per plain/shared subscription there).
//! Lets `remove_session` visit only the session's nodes instead of scanning the trie. Lives inside
//! the trie lock; touched only by the thread holding the write lock.
//!
//! Most sessions of a large broker hold one subscription, so the map value is 4 bytes: the node id
//! itself, or (top bit set) the index of a heap list in `lists` for sessions with more. A map
//! slot is 8 bytes plus hashbrown's control byte.

use std::collections::HashMap;

use super::hash::FxBuild;
use super::trie::MAX_NODES;

/// Value tag: the rest is an index into `lists`. Node ids are below `MAX_NODES` = this bit.
const LIST: u32 = MAX_NODES;

#[derive(Default)]
pub(crate) struct SessionIndex {
    map: HashMap<u32, u32, FxBuild>,
    /// Node ids of the sessions with more than one subscription; empty entries are on `free`.
    lists: Vec<Vec<u32>>,
    free: Vec<u32>,
}

impl SessionIndex {
    pub fn add(&mut self, session: u32, node: u32) {
        debug_assert!(node < LIST);
        let Some(&v) = self.map.get(&session) else {
            self.map.insert(session, node);
            return;
        };
        if v & LIST != 0 {
            self.lists[(v & !LIST) as usize].push(node);
            return;
        }
        let list = vec![v, node];
        let i = match self.free.pop() {
            Some(i) => {
                self.lists[i as usize] = list;
                i
            }
            None => {
                self.lists.push(list);
                (self.lists.len() - 1) as u32
            }
        };
        self.map.insert(session, LIST | i);
    }

    /// Forgets one subscription of `session` at `node`.
    pub fn remove_one(&mut self, session: u32, node: u32) {
        let Some(&v) = self.map.get(&session) else { return };
        if v & LIST == 0 {
            if v == node {
                self.map.remove(&session);
            }
            return;
        }
        let i = (v & !LIST) as usize;
        let list = &mut self.lists[i];
        if let Some(k) = list.iter().position(|&x| x == node) {
            list.swap_remove(k);
        }
        if list.len() == 1 {
            // Back to the inline form.
            self.map.insert(session, list[0]);
            self.release_list(i);
        }
    }

    /// Removes the session and returns its distinct node ids (sorted).
    pub fn take(&mut self, session: u32) -> Vec<u32> {
        let mut ids = match self.map.remove(&session) {
            None => return Vec::new(),
            Some(v) if v & LIST == 0 => return vec![v],
            Some(v) => {
                let i = (v & !LIST) as usize;
                let ids = std::mem::take(&mut self.lists[i]);
                self.release_list(i);
                ids
            }
        };
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    fn release_list(&mut self, i: usize) {
        self.lists[i] = Vec::new();
        self.free.push(i as u32);
        if self.free.len() == self.lists.len() {
            // No multi-subscription session left: give the slab back.
            self.lists = Vec::new();
            self.free = Vec::new();
        }
        if self.map.capacity() > 1024 && self.map.len() * 4 < self.map.capacity() {
            self.map.shrink_to(self.map.len() * 2);
        }
    }

    pub fn heap_bytes(&self) -> usize {
        // hashbrown: one control byte + one (key, value) slot per bucket (buckets = capacity * 8/7).
        let slot = std::mem::size_of::<(u32, u32)>() + 1;
        self.map.capacity() * 8 / 7 * slot
            + self.lists.capacity() * std::mem::size_of::<Vec<u32>>()
            + self.lists.iter().map(|l| l.capacity() * 4).sum::<usize>()
            + self.free.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_then_list_then_inline() {
        let mut idx = SessionIndex::default();
        for n in [5, 6, 5, 7, 8] {
            idx.add(1, n);
        }
        idx.remove_one(1, 5);
        assert_eq!(idx.take(1), vec![5, 6, 7, 8]);
        assert!(idx.take(1).is_empty());
        assert!(idx.lists.is_empty());
        idx.add(2, 9);
        idx.add(2, 10);
        idx.remove_one(2, 9);
        assert_eq!(idx.map.get(&2), Some(&10));
        assert!(idx.lists.is_empty());
        idx.remove_one(2, 10);
        idx.add(3, 4);
        idx.remove_one(3, 4);
        assert!(idx.map.is_empty());
        assert_eq!(idx.take(3), Vec::<u32>::new());
    }
}
