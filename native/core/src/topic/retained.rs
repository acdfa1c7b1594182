//! Owns `RetainedIndex`: the set of topics that have a retained message, as a level tree mapping
//! each topic to an opaque u64 (the binding's handle to the stored message). Any thread: one
//! internal parking_lot RwLock (writers: PUBLISH with retain; readers: SUBSCRIBE delivering
//! retained messages [MQTT-3.3.1-9]). Independent of the router's locks; never nested with them.

use compact_str::CompactString;
use parking_lot::RwLock;

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

struct RNode {
    /// Sorted by level.
    children: Vec<(CompactString, u32)>,
    value: Option<u64>,
    parent: u32,
}

struct Tree {
    nodes: Vec<RNode>,
    free: Vec<u32>,
    len: usize,
}

impl Tree {
    fn child(&self, id: u32, level: &str) -> Option<u32> {
        let c = &self.nodes[id as usize].children;
        c.binary_search_by(|(k, _)| k.as_str().cmp(level)).ok().map(|i| c[i].1)
    }

    fn find(&self, topic: &str) -> Option<u32> {
        let mut id = ROOT;
        for level in topic.split('/') {
            id = self.child(id, level)?;
        }
        Some(id)
    }

    fn alloc(&mut self, parent: u32) -> u32 {
        let node = RNode { children: Vec::new(), value: None, parent };
        match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn ensure(&mut self, topic: &str) -> u32 {
        let mut id = ROOT;
        for level in topic.split('/') {
            let pos = self.nodes[id as usize].children.binary_search_by(|(k, _)| k.as_str().cmp(level));
            id = match pos {
                Ok(i) => self.nodes[id as usize].children[i].1,
                Err(i) => {
                    let c = self.alloc(id);
                    self.nodes[id as usize].children.insert(i, (CompactString::new(level), c));
                    c
                }
            };
        }
        id
    }

    fn prune(&mut self, mut id: u32) {
        while id != ROOT {
            let n = &self.nodes[id as usize];
            if n.value.is_some() || !n.children.is_empty() {
                return;
            }
            let parent = n.parent;
            let siblings = &mut self.nodes[parent as usize].children;
            if let Some(i) = siblings.iter().position(|c| c.1 == id) {
                siblings.remove(i);
            }
            self.nodes[id as usize] = RNode { children: Vec::new(), value: None, parent: NONE };
            self.free.push(id);
            id = parent;
        }
    }

    /// Appends the values of `id` and all its descendants; `skip_dollar` leaves out children
    /// whose level starts with '$' (only at the root [MQTT-4.7.2-1]).
    fn collect_subtree(&self, id: u32, skip_dollar: bool, out: &mut Vec<u64>) {
        let mut stack = vec![id];
        let mut first = true;
        while let Some(id) = stack.pop() {
            let n = &self.nodes[id as usize];
            if let Some(v) = n.value {
                out.push(v);
            }
            for (k, c) in &n.children {
                if first && skip_dollar && k.starts_with('$') {
                    continue;
                }
                stack.push(*c);
            }
            first = false;
        }
    }
}

pub struct RetainedIndex {
    tree: RwLock<Tree>,
}

impl Default for RetainedIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl RetainedIndex {
    pub fn new() -> Self {
        let root = RNode { children: Vec::new(), value: None, parent: NONE };
        RetainedIndex { tree: RwLock::new(Tree { nodes: vec![root], free: Vec::new(), len: 0 }) }
    }

    /// Inserts or replaces the retained entry of `topic` (a valid topic name); returns the old value.
    pub fn set(&self, topic: &str, value: u64) -> Option<u64> {
        let mut t = self.tree.write();
        let id = t.ensure(topic);
        let old = t.nodes[id as usize].value.replace(value);
        if old.is_none() {
            t.len += 1;
        }
        old
    }

    /// Removes the retained entry of `topic` (a zero-length retained PUBLISH [MQTT-3.3.1-6]).
    pub fn remove(&self, topic: &str) -> Option<u64> {
        let mut t = self.tree.write();
        let id = t.find(topic)?;
        let old = t.nodes[id as usize].value.take();
        if old.is_some() {
            t.len -= 1;
            t.prune(id);
        }
        old
    }

    pub fn get(&self, topic: &str) -> Option<u64> {
        let t = self.tree.read();
        t.find(topic).and_then(|id| t.nodes[id as usize].value)
    }

    /// Appends the values of the retained topics `filter` (a plain, valid filter) matches, walking
    /// only the matching branches: '+' visits the children of one level, '#' collects a subtree
    /// including its parent level [MQTT-4.7.1-2]; wildcards in the first level skip '$' topics
    /// [MQTT-4.7.2-1]. An invalid filter matches nothing.
    pub fn match_filter(&self, filter: &str, out: &mut Vec<u64>) {
        if super::filter::validate_filter(filter).is_err() {
            return;
        }
        let levels: Vec<&str> = filter.split('/').collect();
        let t = self.tree.read();
        let mut stack: Vec<(u32, usize)> = vec![(ROOT, 0)];
        while let Some((id, i)) = stack.pop() {
            let n = &t.nodes[id as usize];
            if i == levels.len() {
                if let Some(v) = n.value {
                    out.push(v);
                }
                continue;
            }
            match levels[i] {
                "#" => t.collect_subtree(id, i == 0, out),
                "+" => {
                    for (k, c) in &n.children {
                        if i == 0 && k.starts_with('$') {
                            continue;
                        }
                        stack.push((*c, i + 1));
                    }
                }
                level => {
                    if let Some(c) = t.child(id, level) {
                        stack.push((c, i + 1));
                    }
                }
            }
        }
    }

    /// Number of retained topics.
    pub fn len(&self) -> usize {
        self.tree.read().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
