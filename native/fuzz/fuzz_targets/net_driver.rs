#![no_main]
//! The connection driver's state machine under arbitrary sequences of what clients and the worker
//! do, over real loopback sockets: connect, send, half-close, vanish; write, flush, pause,
//! resume, end, destroy (with live and stale ids), turn. It must never panic, never report an id
//! it does not hold, and once every client is gone, every connection must be released.

use std::collections::HashSet;
use std::io::Write;
use std::net::{Shutdown, TcpStream};

use libfuzzer_sys::fuzz_target;
use spindle_core::net::{local_port, reuseport_listener, Driver, EventSink, ListenOptions, EVENT_WORDS, EV_CLOSE, EV_OPEN};

struct World {
    driver: Driver,
    port: u16,
    clients: Vec<Option<TcpStream>>,
    open: HashSet<u32>,
    seen: Vec<u32>,
    table: Vec<u32>,
    data: Vec<u8>,
}

impl World {
    fn turn(&mut self) {
        let mut sink = EventSink::new(&mut self.table, std::mem::take(&mut self.data), 1 << 16);
        self.driver.turn(&mut sink);
        let n = sink.count();
        self.data = sink.into_data();
        for i in 0..n {
            let r = &self.table[i * EVENT_WORDS..(i + 1) * EVENT_WORDS];
            match r[0] {
                EV_OPEN => {
                    assert!(self.open.insert(r[1]), "an id opened twice");
                    self.seen.push(r[1]);
                }
                EV_CLOSE => {
                    // A connection the worker destroyed or ended may still report its close
                    // only if it was ended (destroy gives no event).
                    self.open.remove(&r[1]);
                }
                _ => assert!(self.open.contains(&r[1]) || r[0] == 5, "event for an id not open: {r:?}"),
            }
        }
    }

    fn id(&self, pick: u8) -> u32 {
        if self.seen.is_empty() {
            return pick as u32;
        }
        self.seen[pick as usize % self.seen.len()]
    }
}

fuzz_target!(|ops: &[u8]| {
    // As in Node, which the driver runs in: a write to a socket the peer closed is EPIPE, not a
    // signal that ends the process.
    // SAFETY: setting a signal disposition to SIG_IGN.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let fd = reuseport_listener("127.0.0.1", 0, 1024, false).unwrap();
    let port = local_port(fd).unwrap();
    let mut driver = Driver::new().unwrap();
    driver.listen(fd, ListenOptions { no_delay: true, keep_alive_secs: None }, None).unwrap();
    let mut w = World { driver, port, clients: Vec::new(), open: HashSet::new(), seen: Vec::new(), table: vec![0; 8 * EVENT_WORDS], data: Vec::new() };
    for pair in ops.chunks(2).take(200) {
        let (op, arg) = (pair[0], *pair.get(1).unwrap_or(&0));
        match op % 12 {
            0 if w.clients.len() < 32 => w.clients.push(TcpStream::connect(("127.0.0.1", w.port)).ok()),
            1 => {
                let n = w.clients.len().max(1);
                if let Some(Some(c)) = w.clients.get_mut(arg as usize % n) {
                    let _ = c.write_all(&vec![arg; arg as usize * 64]);
                }
            }
            2 => {
                let n = w.clients.len().max(1);
                if let Some(Some(c)) = w.clients.get(arg as usize % n) {
                    let _ = c.shutdown(Shutdown::Write);
                }
            }
            3 => {
                let n = w.clients.len().max(1);
                if let Some(slot) = w.clients.get_mut(arg as usize % n) {
                    slot.take();
                }
            }
            4 => {
                let id = w.id(arg);
                let frame = vec![arg; (arg as usize) * 512];
                let records = [id, 0, frame.len() as u32, id, 0, (frame.len() / 2) as u32];
                let mut status = [0u32; 8];
                let n = w.driver.flush(&frame, &records, &mut status);
                for k in 0..n {
                    assert!(w.open.contains(&status[k * 2]), "status for an id not open");
                }
            }
            5 => {
                let id = w.id(arg);
                let _ = w.driver.write(id, &vec![1u8; 100_000]);
            }
            6 => w.driver.pause(w.id(arg)),
            7 => {
                w.driver.resume(w.id(arg));
            }
            8 => {
                w.driver.end(w.id(arg));
            }
            9 => {
                let id = w.id(arg);
                w.driver.destroy(id);
                w.open.remove(&id);
            }
            _ => w.turn(),
        }
    }
    // Every client leaves; every connection must be released.
    w.clients.clear();
    for _ in 0..2000 {
        w.turn();
        if w.driver.stats.open == 0 {
            break;
        }
        // Paused connections are never read: resume them so their close is seen.
        for id in w.open.clone() {
            w.driver.resume(id);
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    assert_eq!(w.driver.stats.open, 0, "connections left open after every client closed");
    assert!(w.open.is_empty(), "the worker was not told of every close: {:?}", w.open);
});
