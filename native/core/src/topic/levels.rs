//! Owns the level interner: each distinct literal filter level (the text between two '/') gets a
//! small id, shared by every trie edge with that text. Reference-counted by edges, so the table
//! holds only levels some live edge uses and shrinks as they go. A topic level that is not
//! interned cannot equal any literal filter level, so matching skips the edge probe for it. Part
//! of `Trie`: mutated under the router's write lock, read under its read lock.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use hashbrown::HashTable;

struct Level {
    text: Box<str>,
    /// Edges using this level; the entry is freed at 0.
    refs: u32,
}

pub(crate) struct Levels {
    /// Ids, hashed by their text.
    index: HashTable<u32>,
    /// By id; `None` slots are on `free`.
    levels: Vec<Option<Level>>,
    free: Vec<u32>,
    /// Randomly keyed SipHash: level texts are chosen by clients.
    hasher: RandomState,
}

impl Levels {
    pub fn new() -> Levels {
        Levels { index: HashTable::new(), levels: Vec::new(), free: Vec::new(), hasher: RandomState::new() }
    }

    /// The id of an interned level.
    #[inline]
    pub fn get(&self, text: &str) -> Option<u32> {
        let h = self.hasher.hash_one(text);
        self.index.find(h, |&id| self.text(id) == text).copied()
    }

    #[inline]
    pub fn text(&self, id: u32) -> &str {
        self.levels[id as usize].as_ref().map_or("", |l| &l.text)
    }

    /// Interns `text` (if needed) and takes one reference on it.
    pub fn acquire(&mut self, text: &str) -> u32 {
        if let Some(id) = self.get(text) {
            self.levels[id as usize].as_mut().expect("interned level").refs += 1;
            return id;
        }
        let level = Some(Level { text: text.into(), refs: 1 });
        let id = match self.free.pop() {
            Some(id) => {
                self.levels[id as usize] = level;
                id
            }
            None => {
                self.levels.push(level);
                (self.levels.len() - 1) as u32
            }
        };
        let (hasher, levels) = (&self.hasher, &self.levels);
        let h = hasher.hash_one(text);
        self.index.insert_unique(h, id, |&i| hasher.hash_one(levels[i as usize].as_ref().map_or("", |l| &*l.text)));
        id
    }

    /// Drops one reference; forgets the level at the last one.
    pub fn release(&mut self, id: u32) {
        let level = self.levels[id as usize].as_mut().expect("interned level");
        level.refs -= 1;
        if level.refs > 0 {
            return;
        }
        let h = self.hasher.hash_one(&*level.text);
        if let Ok(entry) = self.index.find_entry(h, |&i| i == id) {
            entry.remove();
        }
        self.levels[id as usize] = None;
        self.free.push(id);
        if self.free.len() == self.levels.len() {
            // Everything unsubscribed: give the memory back.
            *self = Levels { hasher: std::mem::take(&mut self.hasher), ..Levels::new() };
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.levels.len() - self.free.len()
    }

    pub fn heap_bytes(&self) -> usize {
        self.index.capacity() * 8 / 7 * 5
            + self.levels.capacity() * std::mem::size_of::<Option<Level>>()
            + self.free.capacity() * 4
            + self.levels.iter().flatten().map(|l| l.text.len()).sum::<usize>()
    }
}
