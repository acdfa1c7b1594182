//! Owns the per-session index: session id -> trie node ids holding that session's subscriptions
//! (one entry per subscription, so a node appears once per plain/shared subscription there).
//! Lets `remove_session` visit only the session's nodes instead of scanning the trie. Lives inside
//! the trie lock; touched only by the thread holding the write lock.

use std::collections::HashMap;

use super::hash::FxBuild;

/// Node ids of one session: up to 3 inline, else on the heap. 16 bytes.
enum NodeRefs {
    Inline(u8, [u32; 3]),
    // Boxed on purpose: keeps the enum at 16 bytes for the common inline case.
    #[allow(clippy::box_collection)]
    Heap(Box<Vec<u32>>),
}

impl NodeRefs {
    fn as_slice(&self) -> &[u32] {
        match self {
            NodeRefs::Inline(n, ids) => &ids[..*n as usize],
            NodeRefs::Heap(v) => v,
        }
    }
    fn push(&mut self, id: u32) {
        match self {
            NodeRefs::Inline(n, ids) if (*n as usize) < ids.len() => {
                ids[*n as usize] = id;
                *n += 1;
            }
            NodeRefs::Inline(_, ids) => {
                let mut v = Vec::with_capacity(6);
                v.extend_from_slice(ids);
                v.push(id);
                *self = NodeRefs::Heap(Box::new(v));
            }
            NodeRefs::Heap(v) => v.push(id),
        }
    }
    fn remove_one(&mut self, id: u32) -> bool {
        match self {
            NodeRefs::Inline(n, ids) => {
                let len = *n as usize;
                match ids[..len].iter().position(|&x| x == id) {
                    Some(i) => {
                        ids[i] = ids[len - 1];
                        *n -= 1;
                        true
                    }
                    None => false,
                }
            }
            NodeRefs::Heap(v) => match v.iter().position(|&x| x == id) {
                Some(i) => {
                    v.swap_remove(i);
                    true
                }
                None => false,
            },
        }
    }
    fn heap_bytes(&self) -> usize {
        match self {
            NodeRefs::Inline(..) => 0,
            NodeRefs::Heap(v) => std::mem::size_of::<Vec<u32>>() + v.capacity() * 4,
        }
    }
}

#[derive(Default)]
pub(crate) struct SessionIndex {
    map: HashMap<u32, NodeRefs, FxBuild>,
}

impl SessionIndex {
    pub fn add(&mut self, session: u32, node: u32) {
        self.map.entry(session).or_insert(NodeRefs::Inline(0, [0; 3])).push(node);
    }

    /// Forgets one subscription of `session` at `node`.
    pub fn remove_one(&mut self, session: u32, node: u32) {
        if let Some(refs) = self.map.get_mut(&session) {
            refs.remove_one(node);
            if refs.as_slice().is_empty() {
                self.map.remove(&session);
            }
        }
    }

    /// Removes the session and returns its distinct node ids (sorted).
    pub fn take(&mut self, session: u32) -> Vec<u32> {
        let mut ids = match self.map.remove(&session) {
            Some(refs) => refs.as_slice().to_vec(),
            None => return Vec::new(),
        };
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub fn heap_bytes(&self) -> usize {
        // hashbrown: one control byte + one (key, value) slot per bucket.
        let slot = std::mem::size_of::<(u32, NodeRefs)>() + 1;
        self.map.capacity() * slot + self.map.values().map(NodeRefs::heap_bytes).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_inline_then_heap() {
        assert_eq!(std::mem::size_of::<NodeRefs>(), 16);
        let mut idx = SessionIndex::default();
        for n in [5, 6, 5, 7, 8] {
            idx.add(1, n);
        }
        idx.remove_one(1, 5);
        assert_eq!(idx.take(1), vec![5, 6, 7, 8]);
        assert!(idx.take(1).is_empty());
        idx.add(2, 9);
        idx.remove_one(2, 9);
        assert!(idx.map.is_empty());
    }
}
