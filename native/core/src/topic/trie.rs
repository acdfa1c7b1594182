//! Owns the subscription trie: a chunked arena of nodes addressed by `u32` ids, one node per filter
//! level. Literal children sit in a sorted `Vec` (binary search); the '+' and '#' children are node
//! fields, NATS-style. Mutated only under the router's trie write lock; walked under its read lock
//! by any matching thread. Never holds a lock itself.
//!
//! Node layout (64 bytes): children Vec 24 | subs 16 (one subscription inline) | shared groups 8
//! (boxed, rare) | parent, plus, hash ids 12. Each literal child costs its parent 32 bytes
//! (CompactString key, inline up to 24 bytes, + id). Chunks of 4096 nodes: no doubling slack.

use compact_str::CompactString;

use super::shared::{SharedGroup, SharedGroups};
use super::subscription::Subscription;

/// "No node" marker for ids.
pub(crate) const NONE: u32 = u32::MAX;
/// `parent` value of a node on the free list.
const FREE: u32 = u32::MAX - 1;
pub(crate) const ROOT: u32 = 0;
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
    /// Literal children sorted by `key_cmp`.
    pub children: Vec<(CompactString, u32)>,
    pub subs: SubList,
    pub shared: SharedGroups,
    pub parent: u32,
    pub plus: u32,
    pub hash: u32,
}

impl Node {
    fn empty(parent: u32) -> Node {
        Node { children: Vec::new(), subs: SubList::Empty, shared: None, parent, plus: NONE, hash: NONE }
    }

    /// True when a match on this node yields something.
    #[inline]
    pub fn is_live(&self) -> bool {
        !self.subs.is_empty() || self.shared.is_some()
    }

    fn is_prunable(&self) -> bool {
        !self.is_live() && self.children.is_empty() && self.plus == NONE && self.hash == NONE
    }

    #[inline]
    fn child(&self, level: &str) -> Option<u32> {
        self.children.binary_search_by(|(k, _)| key_cmp(k, level)).ok().map(|i| self.children[i].1)
    }
}

pub(crate) struct Trie {
    chunks: Vec<Box<[Node]>>,
    /// Ids below `next` have been handed out at least once.
    next: u32,
    free: Vec<u32>,
    live_nodes: usize,
}

impl Trie {
    pub fn new() -> Trie {
        let mut t = Trie { chunks: Vec::new(), next: 0, free: Vec::new(), live_nodes: 0 };
        let root = t.alloc(NONE);
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

    fn alloc(&mut self, parent: u32) -> u32 {
        self.live_nodes += 1;
        if let Some(id) = self.free.pop() {
            *self.node_mut(id) = Node::empty(parent);
            return id;
        }
        let id = self.next;
        assert!(id < FREE - 1, "topic trie is full");
        if id as usize == self.chunks.len() * CHUNK {
            self.chunks.push((0..CHUNK).map(|_| Node::empty(FREE)).collect());
        }
        self.next += 1;
        *self.node_mut(id) = Node::empty(parent);
        id
    }

    fn release(&mut self, id: u32) {
        // Drop the node's vectors now; the slot keeps only its inline bytes.
        *self.node_mut(id) = Node::empty(FREE);
        self.free.push(id);
        self.live_nodes -= 1;
    }

    pub fn node_count(&self) -> usize {
        self.live_nodes
    }

    /// The node of an existing filter (plain, validated), without creating anything.
    pub fn find(&self, filter: &str) -> Option<u32> {
        let mut id = ROOT;
        for level in filter.split('/') {
            let n = self.node(id);
            id = match level {
                "+" => n.plus,
                "#" => n.hash,
                _ => n.child(level)?,
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
                        let c = self.alloc(id);
                        self.node_mut(id).plus = c;
                        c
                    }
                    c => c,
                },
                "#" => match self.node(id).hash {
                    NONE => {
                        let c = self.alloc(id);
                        self.node_mut(id).hash = c;
                        c
                    }
                    c => c,
                },
                _ => match self.node(id).children.binary_search_by(|(k, _)| key_cmp(k, level)) {
                    Ok(i) => self.node(id).children[i].1,
                    Err(i) => {
                        let c = self.alloc(id);
                        self.node_mut(id).children.insert(i, (CompactString::new(level), c));
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
            let parent = self.node(id).parent;
            let p = self.node_mut(parent);
            if p.plus == id {
                p.plus = NONE;
            } else if p.hash == id {
                p.hash = NONE;
            } else if let Some(i) = p.children.iter().position(|c| c.1 == id) {
                p.children.remove(i);
                if p.children.capacity() > 8 && p.children.len() * 4 < p.children.capacity() {
                    p.children.shrink_to(p.children.len() * 2);
                }
            }
            self.release(id);
            id = parent;
        }
    }

    /// Rebuilds the plain filter a node stands for (used when a node dies in `remove_session`).
    pub fn filter_of(&self, mut id: u32) -> String {
        let mut levels: Vec<&str> = Vec::new();
        while id != ROOT {
            let parent = self.node(id).parent;
            let p = self.node(parent);
            let level = if p.plus == id {
                "+"
            } else if p.hash == id {
                "#"
            } else {
                p.children.iter().find(|c| c.1 == id).map(|c| c.0.as_str()).unwrap_or("")
            };
            levels.push(level);
            id = parent;
        }
        levels.reverse();
        levels.join("/")
    }

    /// Collects the live nodes whose filter matches `topic` (unsorted). Iterative (explicit
    /// stack), so a deep topic cannot overflow the thread stack. '+' and '#' at the root are not
    /// followed for topics starting with '$' [MQTT-4.7.2-1].
    pub fn match_nodes(&self, topic: &str, out: &mut Vec<u32>, stack: &mut Vec<(u32, usize)>) {
        const DONE: usize = usize::MAX;
        let bytes = topic.as_bytes();
        stack.clear();
        let root = self.node(ROOT);
        if let Some(&b'$') = bytes.first() {
            // Only literal children of the root can match a '$' topic.
            let (level, tail) = split_level(topic, 0);
            if let Some(c) = root.child(level) {
                stack.push((c, tail));
            }
        } else {
            stack.push((ROOT, 0));
        }
        while let Some((id, pos)) = stack.pop() {
            let n = self.node(id);
            if pos == DONE {
                // All levels consumed: this node, and its '#' child ("sport/#" matches "sport").
                if n.is_live() {
                    out.push(id);
                }
                if n.hash != NONE {
                    out.push(n.hash);
                }
                continue;
            }
            // A '#' node has no children, so it is pruned as soon as it holds nothing: existing
            // means live (no extra memory access to check).
            if n.hash != NONE {
                debug_assert!(self.node(n.hash).is_live());
                out.push(n.hash);
            }
            let (level, tail) = split_level(topic, pos);
            if n.plus != NONE {
                stack.push((n.plus, tail));
            }
            if let Some(c) = n.child(level) {
                stack.push((c, tail));
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        let mut bytes = self.chunks.capacity() * std::mem::size_of::<Box<[Node]>>()
            + self.chunks.len() * CHUNK * std::mem::size_of::<Node>()
            + self.free.capacity() * 4;
        for id in 0..self.next {
            let n = self.node(id);
            if n.parent == FREE {
                continue;
            }
            bytes += n.children.capacity() * std::mem::size_of::<(CompactString, u32)>();
            bytes += n
                .children
                .iter()
                .map(|(k, _)| if k.is_heap_allocated() { k.capacity() } else { 0 })
                .sum::<usize>();
            bytes += n.subs.heap_bytes();
            if let Some(groups) = &n.shared {
                bytes += std::mem::size_of::<Vec<SharedGroup>>()
                    + groups.capacity() * std::mem::size_of::<SharedGroup>()
                    + groups.iter().map(SharedGroup::heap_bytes).sum::<usize>();
            }
        }
        bytes
    }
}

/// Order of literal children: by length, then bytes. Most probes then end on one integer compare
/// instead of a memcmp call; the order is internal to the trie.
#[inline]
fn key_cmp(key: &CompactString, level: &str) -> std::cmp::Ordering {
    let k = key.as_str();
    k.len().cmp(&level.len()).then_with(|| k.as_bytes().cmp(level.as_bytes()))
}

/// Splits the level starting at byte `pos`: (level, start of the next level or usize::MAX).
#[inline]
fn split_level(topic: &str, pos: usize) -> (&str, usize) {
    let rest = &topic[pos..];
    match memchr_slash(rest.as_bytes()) {
        Some(i) => (&rest[..i], pos + i + 1),
        None => (rest, usize::MAX),
    }
}

#[inline]
fn memchr_slash(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_is_64_bytes() {
        assert_eq!(std::mem::size_of::<SubList>(), 16);
        assert_eq!(std::mem::size_of::<Node>(), 64);
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
        t.prune(a);
        assert_eq!(t.node_count(), 1 + 3);
        assert_eq!(t.find("a/+"), None);
        t.prune(b);
        assert_eq!(t.node_count(), 1);
        assert!(t.node(ROOT).children.is_empty());
    }
}
