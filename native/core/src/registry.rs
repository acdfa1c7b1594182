//! ClientRegistry: which session handle and which worker thread own each client id, for the whole
//! process. Every worker claims a client id here when a CONNECT arrives, so a client id is unique
//! across workers [MQTT-3.1.4-3] and a takeover finds the previous owner even on another worker.
//! Each claim gets a generation, and names the generation it follows: claims of one client id form
//! a chain in the order the registry saw them, which is the order the session passes from owner to
//! owner (see the TypeScript engine's takeover). Shared by all threads; one Mutex, never held while
//! calling anything else (no lock order).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;

/// Session handles start at 1; 0 is never a session, u32::MAX means "no publisher".
const FIRST_HANDLE: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub handle: u32,
    pub worker: u16,
    /// The claim that made this owner (unique per claim, never 0).
    pub generation: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The handle the new connection's session uses.
    pub handle: u32,
    /// This claim's generation.
    pub generation: u32,
    /// The owner before this claim, if the client id was known.
    pub previous: Option<Owner>,
}

#[derive(Default)]
pub struct ClientRegistry {
    owners: Mutex<HashMap<Box<str>, Owner>>,
    /// Handle -> client id of the sessions that persist (so a worker routing a message to a
    /// session on another worker knows whether, and under which client id, to store it).
    persistent: Mutex<HashMap<u32, Box<str>>>,
    next: AtomicU32,
    next_generation: AtomicU32,
}

impl ClientRegistry {
    pub fn new() -> Self {
        ClientRegistry {
            owners: Mutex::new(HashMap::new()),
            persistent: Mutex::new(HashMap::new()),
            next: AtomicU32::new(FIRST_HANDLE),
            next_generation: AtomicU32::new(1),
        }
    }

    /// A handle no session has had before.
    pub fn new_handle(&self) -> u32 {
        loop {
            let h = self.next.fetch_add(1, Ordering::Relaxed);
            if h != 0 && h != u32::MAX {
                return h;
            }
        }
    }

    /// Makes `worker` the owner of `client_id`. The existing session continues under its handle
    /// unless `clean_start` (or there is none), in which case a new handle is issued.
    pub fn claim(&self, client_id: &str, worker: u16, clean_start: bool) -> Claim {
        let mut owners = self.owners.lock();
        let previous = owners.get(client_id).copied();
        let handle = match previous {
            Some(p) if !clean_start => p.handle,
            _ => self.new_handle(),
        };
        let generation = loop {
            let g = self.next_generation.fetch_add(1, Ordering::Relaxed);
            if g != 0 {
                break g;
            }
        };
        owners.insert(client_id.into(), Owner { handle, worker, generation });
        Claim { handle, generation, previous }
    }

    /// Forgets `client_id` if the claim `generation` still owns it (its session ended and nobody
    /// claimed the client id since). Returns whether it did.
    pub fn release(&self, client_id: &str, generation: u32) -> bool {
        let mut owners = self.owners.lock();
        match owners.get(client_id) {
            Some(o) if o.generation == generation => {
                let handle = o.handle;
                owners.remove(client_id);
                drop(owners);
                self.persistent.lock().remove(&handle);
                true
            }
            _ => false,
        }
    }

    /// Marks a session as persistent (its messages are stored) or not.
    pub fn set_persistent(&self, handle: u32, client_id: &str, persistent: bool) {
        let mut p = self.persistent.lock();
        if persistent {
            p.insert(handle, client_id.into());
        } else {
            p.remove(&handle);
        }
    }

    /// The client id of a persistent session, or None for a session that is not stored.
    pub fn persistent_client_id(&self, handle: u32) -> Option<Box<str>> {
        self.persistent.lock().get(&handle).cloned()
    }

    pub fn lookup(&self, client_id: &str) -> Option<Owner> {
        self.owners.lock().get(client_id).copied()
    }

    /// Every client id a worker owns (to rebuild after that worker restarts).
    pub fn owned_by(&self, worker: u16) -> Vec<(String, u32)> {
        self.owners.lock().iter().filter(|(_, o)| o.worker == worker).map(|(c, o)| (c.to_string(), o.handle)).collect()
    }

    pub fn len(&self) -> usize {
        self.owners.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_client_gets_a_new_handle() {
        let r = ClientRegistry::new();
        let a = r.claim("a", 0, false);
        let b = r.claim("b", 1, false);
        assert_eq!(a.previous, None);
        assert_ne!(a.handle, b.handle);
        assert_eq!(r.lookup("b"), Some(Owner { handle: b.handle, worker: 1, generation: b.generation }));
    }

    #[test]
    fn takeover_keeps_the_handle_unless_clean_start() {
        let r = ClientRegistry::new();
        let first = r.claim("c", 0, false);
        let resumed = r.claim("c", 1, false);
        assert_eq!(resumed.handle, first.handle);
        assert_eq!(resumed.previous, Some(Owner { handle: first.handle, worker: 0, generation: first.generation }));
        let clean = r.claim("c", 0, true);
        assert_ne!(clean.handle, first.handle);
        assert_eq!(clean.previous, Some(Owner { handle: first.handle, worker: 1, generation: resumed.generation }));
    }

    #[test]
    fn release_only_by_the_current_claim() {
        let r = ClientRegistry::new();
        let old = r.claim("d", 0, false).generation;
        let new = r.claim("d", 1, true).generation;
        assert!(!r.release("d", old), "a stale session must not release the new one");
        assert!(r.release("d", new));
        assert!(r.is_empty());
    }

    #[test]
    fn a_resumed_session_is_released_only_by_its_latest_claim() {
        let r = ClientRegistry::new();
        let first = r.claim("e", 0, false);
        let second = r.claim("e", 0, false);
        assert_eq!(second.handle, first.handle, "the session keeps its handle");
        assert_ne!(second.generation, first.generation);
        assert!(!r.release("e", first.generation), "an earlier claim of the same worker no longer owns it");
        assert!(r.release("e", second.generation));
    }

    #[test]
    fn claims_of_one_client_id_form_a_chain() {
        let r = ClientRegistry::new();
        let a = r.claim("f", 0, false);
        let b = r.claim("f", 1, false);
        let c = r.claim("f", 0, true);
        assert_eq!(b.previous.map(|p| p.generation), Some(a.generation));
        assert_eq!(c.previous.map(|p| (p.worker, p.generation)), Some((1, b.generation)));
    }

    #[test]
    fn persistent_sessions_are_known_by_handle_until_released() {
        let r = ClientRegistry::new();
        let h = r.claim("p", 0, false).handle;
        assert_eq!(r.persistent_client_id(h), None);
        r.set_persistent(h, "p", true);
        assert_eq!(r.persistent_client_id(h).as_deref(), Some("p"));
        assert!(r.release("p", r.lookup("p").unwrap().generation));
        assert_eq!(r.persistent_client_id(h), None);
    }

    #[test]
    fn owned_by_lists_a_workers_clients() {
        let r = ClientRegistry::new();
        r.claim("x", 3, false);
        r.claim("y", 4, false);
        let mine = r.owned_by(3);
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].0, "x");
    }
}
