//! Owns the subscription trie: a chunked arena of nodes addressed by `u32` ids, one node per filter
//! level. Literal children are edges in one global `EdgeMap` keyed by (parent id, interned level
//! id); the '+' and '#' children are node fields, NATS-style. Mutated only under the router's trie
//! write lock; walked under its read lock by any matching thread. Never holds a lock itself.
//!
//! Node layout (40 bytes): subs 16 (one subscription inline) | parent, plus, hash, level ids 16 |
//! literal-children count with a has-shared-groups bit 4. Shared groups are rare and live in a
//! side map keyed by node id. Chunks of 4096 nodes: no doubling slack.

use std::collections::HashMap;

use super::edges::EdgeMap;
use super::hash::FxBuild;
use super::levels::Levels;
use super::prefetch::prefetch;
use super::shared::{SharedGroup, SharedGroups};
use super::subscription::Subscription;

/// "No node" marker for ids.
pub(crate) const NONE: u32 = u32::MAX;
/// `parent` value of a node on the free list.
const FREE: u32 = u32::MAX - 1;
pub(crate) const ROOT: u32 = 0;
/// Node ids stay below 2^31 (the session index tags its values with the top bit).
pub(crate) const MAX_NODES: u32 = 1 << 31;
/// `Node::kids` bit: the node has shared groups in `Trie::shared`.
const HAS_SHARED: u32 = 1 << 31;
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Non-shared subscriptions of one node, at most one per session [MQTT-3.8.4-3]; sorted by session
/// when more than one. The common single subscription is stored inline.
pub(crate) enum SubList {
    Empty,
    One(Subscription),
    // Boxed on purpose: keeps SubList at 16 bytes (the Node at 64).
    #[allow(clippy::box_collection)]
    Many(Box<Vec<Subscription>>),
}

impl SubList {
    #[inline]
    pub fn as_slice(&self) -> &[Subscription] {
        match self {
            SubList::Empty => &[],
            SubList::One(s) => std::slice::from_ref(s),
            SubList::Many(v) => v,
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, SubList::Empty)
    }

    /// Adds or replaces the session's subscription; true when it replaced one.
    pub fn upsert(&mut self, sub: Subscription) -> bool {
        match self {
            SubList::Empty => {
                *self = SubList::One(sub);
                false
            }
            SubList::One(s) if s.session == sub.session => {
                *s = sub;
                true
            }
            SubList::One(s) => {
                let (a, b) = if s.session < sub.session { (*s, sub) } else { (sub, *s) };
                *self = SubList::Many(Box::new(vec![a, b]));
                false
            }
            SubList::Many(v) => match v.binary_search_by_key(&sub.session, |m| m.session) {
                Ok(i) => {
                    v[i] = sub;
                    true
                }
                Err(i) => {
                    v.insert(i, sub);
                    false
                }
            },
        }
    }

    pub fn remove(&mut self, session: u32) -> bool {
        match self {
            SubList::Empty => false,
            SubList::One(s) => {
                if s.session == session {
                    *self = SubList::Empty;
                    true
                } else {
                    false
                }
            }
            SubList::Many(v) => {
                let Ok(i) = v.binary_search_by_key(&session, |m| m.session) else { return false };
                v.remove(i);
                if v.len() == 1 {
                    *self = SubList::One(v[0]);
                }
                true
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            SubList::Many(v) => std::mem::size_of::<Vec<Subscription>>() + v.capacity() * 12,
            _ => 0,
        }
    }
}

pub(crate) struct Node {
    pub subs: SubList,
    pub parent: u32,
    pub plus: u32,
    pub hash: u32,
    /// Interned level of a literal node (NONE for the root, '+' and '#' nodes).
    level: u32,
    /// Number of literal children, | HAS_SHARED.
    kids: u32,
}

impl Node {
    fn empty(parent: u32, level: u32) -> Node {
        Node { subs: SubList::Empty, parent, plus: NONE, hash: NONE, level, kids: 0 }
    }

    /// True when a match on this node yields something.
    #[inline]
    pub fn is_live(&self) -> bool {
        !self.subs.is_empty() || self.has_shared()
    }

    #[inline]
    pub fn has_shared(&self) -> bool {
        self.kids & HAS_SHARED != 0
    }

    fn is_prunable(&self) -> bool {
        !self.is_live() && self.kids == 0 && self.plus == NONE && self.hash == NONE
    }
}

pub(crate) struct Trie {
    chunks: Vec<Box<[Node]>>,
    /// Ids below `next` have been handed out at least once.
    next: u32,
    free: Vec<u32>,
    live_nodes: usize,
    edges: EdgeMap,
    levels: Levels,
    /// Shared groups of the nodes flagged HAS_SHARED.
    shared: HashMap<u32, Box<Vec<SharedGroup>>, FxBuild>,
}

impl Trie {
    pub fn new() -> Trie {
        let mut t = Trie {
            chunks: Vec::new(),
            next: 0,
            free: Vec::new(),
            live_nodes: 0,
            edges: EdgeMap::new(),
            levels: Levels::new(),
            shared: HashMap::default(),
        };
        let root = t.alloc(NONE, NONE);
        debug_assert_eq!(root, ROOT);
        t
    }

    #[inline]
    pub fn node(&self, id: u32) -> &Node {
        &self.chunks[(id >> CHUNK_BITS) as usize][id as usize & (CHUNK - 1)]
    }

    #[inline]
    pub fn node_mut(&mut self, id: u32) -> &mut Node {
        &mut self.chunks[(id >> CHUNK_BITS) as usize][id as usize & (CHUNK - 1)]
    }

    fn alloc(&mut self, parent: u32, level: u32) -> u32 {
        self.live_nodes += 1;
        if let Some(id) = self.free.pop() {
            *self.node_mut(id) = Node::empty(parent, level);
            return id;
        }
        let id = self.next;
        assert!(id < MAX_NODES, "topic trie is full");
        if id as usize == self.chunks.len() * CHUNK {
            self.chunks.push((0..CHUNK).map(|_| Node::empty(FREE, NONE)).collect());
        }
        self.next += 1;
        *self.node_mut(id) = Node::empty(parent, level);
        id
    }

    fn release(&mut self, id: u32) {
        // Drop the node's boxed list now; the slot keeps only its inline bytes.
        *self.node_mut(id) = Node::empty(FREE, NONE);
        self.free.push(id);
        self.live_nodes -= 1;
    }

    pub fn node_count(&self) -> usize {
        self.live_nodes
    }

    /// The shared groups of a node (empty for most).
    #[inline]
    pub fn shared_groups(&self, id: u32) -> &[SharedGroup] {
        if !self.node(id).has_shared() {
            return &[];
        }
        self.shared.get(&id).map_or(&[], |g| g.as_slice())
    }

    /// Runs `f` on the node's shared groups (None when it has none; `f` may create or drop them),
    /// keeping the node's HAS_SHARED bit in step.
    pub fn with_shared<R>(&mut self, id: u32, f: impl FnOnce(&mut SharedGroups) -> R) -> R {
        let mut groups = if self.node(id).has_shared() { self.shared.remove(&id) } else { None };
        let r = f(&mut groups);
        let node = self.node_mut(id);
        match groups {
            Some(g) => {
                node.kids |= HAS_SHARED;
                self.shared.insert(id, g);
            }
            None => {
                node.kids &= !HAS_SHARED;
                if self.shared.capacity() > 64 && self.shared.len() * 4 < self.shared.capacity() {
                    self.shared.shrink_to_fit();
                }
            }
        }
        r
    }

    /// The node of an existing filter (plain, validated), without creating anything.
    pub fn find(&self, filter: &str) -> Option<u32> {
        let mut id = ROOT;
        for level in filter.split('/') {
            let n = self.node(id);
            id = match level {
                "+" => n.plus,
                "#" => n.hash,
                _ => self.edges.get(id, self.levels.get(level)?)?,
            };
            if id == NONE {
                return None;
            }
        }
        Some(id)
    }

    /// The node of a filter (plain, validated), creating the missing levels.
    pub fn ensure(&mut self, filter: &str) -> u32 {
        let mut id = ROOT;
        for level in filter.split('/') {
            id = match level {
                "+" => match self.node(id).plus {
                    NONE => {
                        let c = self.alloc(id, NONE);
                        self.node_mut(id).plus = c;
                        c
                    }
                    c => c,
                },
                "#" => match self.node(id).hash {
                    NONE => {
                        let c = self.alloc(id, NONE);
                        self.node_mut(id).hash = c;
                        c
                    }
                    c => c,
                },
                _ => match self.levels.get(level).and_then(|l| self.edges.get(id, l)) {
                    Some(c) => c,
                    None => {
                        let l = self.levels.acquire(level);
                        let c = self.alloc(id, l);
                        self.edges.insert(id, l, c);
                        self.node_mut(id).kids += 1;
                        c
                    }
                },
            };
        }
        id
    }

    /// Frees `id` and then its ancestors while they hold nothing and have no children.
    pub fn prune(&mut self, mut id: u32) {
        while id != ROOT && self.node(id).is_prunable() {
            let (parent, level) = (self.node(id).parent, self.node(id).level);
            let p = self.node_mut(parent);
            if p.plus == id {
                p.plus = NONE;
            } else if p.hash == id {
                p.hash = NONE;
            } else {
                p.kids -= 1;
                let removed = self.edges.remove(parent, level);
                debug_assert_eq!(removed, Some(id));
                self.levels.release(level);
            }
            self.release(id);
            id = parent;
        }
    }

    /// Rebuilds the plain filter a node stands for (used when a node dies in `remove_session`).
    pub fn filter_of(&self, mut id: u32) -> String {
        let mut levels: Vec<&str> = Vec::new();
        while id != ROOT {
            let n = self.node(id);
            let p = self.node(n.parent);
            let level = if p.plus == id {
                "+"
            } else if p.hash == id {
                "#"
            } else {
                self.levels.text(n.level)
            };
            levels.push(level);
            id = n.parent;
        }
        levels.reverse();
        levels.join("/")
    }

    /// Interns the levels of `topic` for `match_nodes`: NONE for a level no filter has (it can
    /// only match '+' and '#'). One hash lookup per level, instead of one per visited node.
    pub fn topic_levels(&self, topic: &str, out: &mut Vec<u32>) {
        out.clear();
        out.extend(topic.split('/').map(|l| self.levels.get(l).unwrap_or(NONE)));
    }

    /// Collects the live nodes whose filter matches the topic whose interned levels are `levels`
    /// (see `topic_levels`), unsorted. Walks level by level: `frontier` holds the nodes reached at
    /// the current depth (at most one per '+' position, plus the exact path), all of them
    /// prefetched while the previous level was walked, so their memory misses overlap instead of
    /// forming one chain per branch. No recursion: a deep topic cannot overflow the thread stack.
    /// '+' and '#' at the root are not followed for topics starting with '$' [MQTT-4.7.2-1].
    pub fn match_nodes(&self, levels: &[u32], dollar: bool, out: &mut Vec<u32>, frontier: &mut Vec<u32>, next: &mut Vec<u32>) {
        frontier.clear();
        let mut d = 0;
        if dollar {
            // Only literal children of the root can match a '$' topic.
            match self.literal(ROOT, levels[0]) {
                Some(c) => frontier.push(c),
                None => return,
            }
            d = 1;
        } else {
            frontier.push(ROOT);
        }
        while d < levels.len() && !frontier.is_empty() {
            let (level, after) = (levels[d], levels.get(d + 1).copied().unwrap_or(NONE));
            next.clear();
            for &id in frontier.iter() {
                let n = self.node(id);
                // A '#' node has no children, so it is pruned as soon as it holds nothing:
                // existing means live (no extra memory access to check).
                if n.hash != NONE {
                    debug_assert!(self.node(n.hash).is_live());
                    prefetch(self.node(n.hash));
                    out.push(n.hash);
                }
                if n.plus != NONE {
                    self.queue(next, n.plus, after);
                }
                if let Some(c) = self.literal(id, level) {
                    self.queue(next, c, after);
                }
            }
            std::mem::swap(frontier, next);
            d += 1;
        }
        // All levels consumed: these nodes, and their '#' children ("sport/#" matches "sport").
        for &id in frontier.iter() {
            let n = self.node(id);
            if n.is_live() {
                out.push(id);
            }
            if n.hash != NONE {
                out.push(n.hash);
            }
        }
    }

    /// Queues a node for the next depth and prefetches what its visit reads: the node and the
    /// edge slot of its literal child for the following level (`level`). Both addresses are known
    /// now, a whole level before the visit.
    #[inline]
    fn queue(&self, next: &mut Vec<u32>, id: u32, level: u32) {
        prefetch(self.node(id));
        if level != NONE {
            self.edges.prefetch(id, level);
        }
        next.push(id);
    }

    #[inline]
    fn literal(&self, parent: u32, level: u32) -> Option<u32> {
        if level == NONE {
            return None;
        }
        self.edges.get(parent, level)
    }

    pub fn heap_bytes(&self) -> usize {
        let mut bytes = self.chunks.capacity() * std::mem::size_of::<Box<[Node]>>()
            + self.chunks.len() * CHUNK * std::mem::size_of::<Node>()
            + self.free.capacity() * 4
            + self.edges.heap_bytes()
            + self.levels.heap_bytes()
            + self.shared.capacity() * 8 / 7 * (std::mem::size_of::<(u32, Box<Vec<SharedGroup>>)>() + 1);
        for id in 0..self.next {
            bytes += self.node(id).subs.heap_bytes();
        }
        for groups in self.shared.values() {
            bytes += std::mem::size_of::<Vec<SharedGroup>>()
                + groups.capacity() * std::mem::size_of::<SharedGroup>()
                + groups.iter().map(SharedGroup::heap_bytes).sum::<usize>();
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_is_40_bytes() {
        assert_eq!(std::mem::size_of::<SubList>(), 16);
        assert_eq!(std::mem::size_of::<Node>(), 40);
    }

    #[test]
    fn ensure_find_prune_filter_of() {
        let mut t = Trie::new();
        let a = t.ensure("a/+/c/#");
        assert_eq!(t.find("a/+/c/#"), Some(a));
        assert_eq!(t.filter_of(a), "a/+/c/#");
        let b = t.ensure("a//x");
        assert_eq!(t.filter_of(b), "a//x");
        assert_eq!(t.node_count(), 1 + 4 + 2); // a,+,c,# and "",x
        assert_eq!(t.levels.len(), 4); // a, c, "", x
        t.prune(a);
        assert_eq!(t.node_count(), 1 + 3);
        assert_eq!(t.find("a/+"), None);
        assert_eq!(t.levels.len(), 3);
        t.prune(b);
        assert_eq!(t.node_count(), 1);
        assert_eq!(t.node(ROOT).kids, 0);
        assert_eq!(t.levels.len(), 0);
    }
}
