//! Owns the literal edges of the trie: one global open-addressing table keyed by (parent node id,
//! level id) -> child node id. Replaces a sorted child vector per node: no per-node allocation or
//! slack, and a lookup is one hash probe whatever the fan-out. Linear probing over 12-byte slots
//! with no separate control bytes, so the home slot of a key is a plain address the matcher can
//! prefetch before it needs it. Load factor at most 4/5; backward-shift deletion (no tombstones).
//! Part of `Trie`: mutated under the router's write lock, read under its read lock.

#[derive(Clone, Copy)]
struct Edge {
    parent: u32,
    level: u32,
    /// EMPTY for a free slot.
    child: u32,
}

const EMPTY: u32 = u32::MAX;
const VACANT: Edge = Edge { parent: 0, level: 0, child: EMPTY };
const MIN_SLOTS: usize = 64;

pub(crate) struct EdgeMap {
    /// Power-of-two length.
    slots: Box<[Edge]>,
    len: usize,
    /// Random per map: ids are not chosen by clients, but the order of subscriptions is, so the
    /// slot layout should not be predictable from outside.
    seed: [u64; 2],
}

impl EdgeMap {
    pub fn new() -> EdgeMap {
        use std::hash::BuildHasher;
        let rs = std::collections::hash_map::RandomState::new();
        EdgeMap { slots: vec![VACANT; MIN_SLOTS].into(), len: 0, seed: [rs.hash_one(1u64), rs.hash_one(2u64) | 1] }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Folded 64x64->128 multiply of the packed key: cheap, and every key bit reaches the low bits.
    #[inline]
    fn home(&self, parent: u32, level: u32) -> usize {
        let key = ((parent as u64) << 32 | level as u64) ^ self.seed[0];
        let m = key as u128 * self.seed[1] as u128;
        ((m as u64) ^ ((m >> 64) as u64)) as usize & self.mask()
    }

    #[inline]
    pub fn get(&self, parent: u32, level: u32) -> Option<u32> {
        let mask = self.mask();
        let mut i = self.home(parent, level);
        loop {
            let e = self.slots[i];
            if e.child == EMPTY {
                return None;
            }
            if e.parent == parent && e.level == level {
                return Some(e.child);
            }
            i = (i + 1) & mask;
        }
    }

    /// Starts loading the home slot of a key that `get` will be asked for soon.
    #[inline]
    pub fn prefetch(&self, parent: u32, level: u32) {
        super::prefetch::prefetch(&self.slots[self.home(parent, level)]);
    }

    /// Adds an edge known to be absent.
    pub fn insert(&mut self, parent: u32, level: u32, child: u32) {
        debug_assert!(child != EMPTY && self.get(parent, level).is_none());
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            self.resize(self.slots.len() * 2);
        }
        self.place(Edge { parent, level, child });
        self.len += 1;
    }

    fn place(&mut self, e: Edge) {
        let mask = self.mask();
        let mut i = self.home(e.parent, e.level);
        while self.slots[i].child != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = e;
    }

    pub fn remove(&mut self, parent: u32, level: u32) -> Option<u32> {
        let mask = self.mask();
        let mut i = self.home(parent, level);
        loop {
            let e = self.slots[i];
            if e.child == EMPTY {
                return None;
            }
            if e.parent == parent && e.level == level {
                break;
            }
            i = (i + 1) & mask;
        }
        let child = self.slots[i].child;
        // Backward shift: pull later entries of the run into the hole when their home allows it,
        // so every run stays contiguous and lookups need no tombstones.
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.slots[j];
            if e.child == EMPTY {
                break;
            }
            let home = self.home(e.parent, e.level);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(i) & mask) {
                self.slots[i] = e;
                i = j;
            }
        }
        self.slots[i] = VACANT;
        self.len -= 1;
        // Give memory back after mass unsubscribes.
        if self.slots.len() > MIN_SLOTS && self.len * 8 < self.slots.len() {
            self.resize(self.slots.len() / 2);
        }
        Some(child)
    }

    fn resize(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![VACANT; slots.max(MIN_SLOTS)].into());
        for e in old.iter().filter(|e| e.child != EMPTY) {
            self.place(*e);
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Edge>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_resize() {
        let mut m = EdgeMap::new();
        for p in 0..2000u32 {
            m.insert(p, p % 7, p + 10);
        }
        assert!(m.slots.len() >= 2048);
        for p in 0..2000u32 {
            assert_eq!(m.get(p, p % 7), Some(p + 10));
            assert_eq!(m.get(p, 7), None);
        }
        for p in (0..2000u32).step_by(2) {
            assert_eq!(m.remove(p, p % 7), Some(p + 10));
        }
        for p in 0..2000u32 {
            assert_eq!(m.get(p, p % 7), if p % 2 == 0 { None } else { Some(p + 10) });
        }
        for p in (1..2000u32).step_by(2) {
            assert_eq!(m.remove(p, p % 7), Some(p + 10));
        }
        assert_eq!(m.len, 0);
        assert_eq!(m.slots.len(), MIN_SLOTS);
    }
}
