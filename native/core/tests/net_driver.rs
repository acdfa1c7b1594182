//! The connection driver against real loopback sockets: accept, read, vectored writes in order,
//! back-pressure and drain, pause and resume, orderly and abrupt closes, stale ids.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use spindle_core::net::{local_port, reuseport_listener, Driver, EventSink, ListenOptions, EVENT_WORDS, EV_CLOSE, EV_DATA, EV_DRAIN, EV_OPEN};

struct Harness {
    driver: Driver,
    port: u16,
    table: Vec<u32>,
    data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Open(u32),
    Data(u32, Vec<u8>),
    Drain(u32),
    Close(u32, u32),
}

impl Harness {
    fn new() -> Self {
        let fd = reuseport_listener("127.0.0.1", 0, 1024, false).unwrap();
        let port = local_port(fd).unwrap();
        let mut driver = Driver::new().unwrap();
        driver.listen(fd, ListenOptions { no_delay: true, keep_alive_secs: Some(30) }, None).unwrap();
        Harness { driver, port, table: vec![0; 64 * EVENT_WORDS], data: Vec::new() }
    }

    fn turn(&mut self) -> Vec<Ev> {
        let mut sink = EventSink::new(&mut self.table, std::mem::take(&mut self.data), 1 << 20);
        self.driver.turn(&mut sink);
        let n = sink.count();
        let data = sink.into_data();
        let mut out = Vec::new();
        for i in 0..n {
            let r = &self.table[i * EVENT_WORDS..(i + 1) * EVENT_WORDS];
            out.push(match r[0] {
                EV_OPEN => {
                    assert_eq!(r[2] & 0xffff, 0, "listener 0");
                    assert_eq!(r[3], 0x7f00_0001, "from 127.0.0.1");
                    Ev::Open(r[1])
                }
                EV_DATA => Ev::Data(r[1], data[r[2] as usize..(r[2] + r[3]) as usize].to_vec()),
                EV_DRAIN => Ev::Drain(r[1]),
                EV_CLOSE => Ev::Close(r[1], r[2]),
                k => panic!("unexpected event {k}"),
            });
        }
        self.data = data;
        out
    }

    /// Turns until `pick` finds what it wants (5 s at most).
    fn until<T>(&mut self, mut pick: impl FnMut(&Ev) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            for e in self.turn() {
                if let Some(t) = pick(&e) {
                    return t;
                }
            }
            assert!(Instant::now() < deadline, "event did not come");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn connect(&mut self) -> (TcpStream, u32) {
        let client = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let id = self.until(|e| if let Ev::Open(id) = e { Some(*id) } else { None });
        (client, id)
    }

    fn send(&mut self, id: u32, frames: &[&[u8]]) -> Vec<u32> {
        let mut arena = Vec::new();
        let mut records = Vec::new();
        for f in frames {
            records.extend_from_slice(&[id, arena.len() as u32, f.len() as u32]);
            arena.extend_from_slice(f);
        }
        let mut status = vec![0u32; 16];
        let n = self.driver.flush(&arena, &records, &mut status);
        status.truncate(n * 2);
        status
    }
}

#[test]
fn accepts_reads_and_writes_in_order() {
    let mut h = Harness::new();
    let (mut client, id) = h.connect();
    assert_eq!(h.driver.peer(id).unwrap().ip().to_string(), "127.0.0.1");
    client.write_all(b"hello").unwrap();
    let got = h.until(|e| if let Ev::Data(i, d) = e { Some((*i, d.clone())) } else { None });
    assert_eq!(got, (id, b"hello".to_vec()));
    let status = h.send(id, &[b"one ", b"two ", b"three"]);
    assert!(status.is_empty(), "nothing queued for a reading client");
    let mut buf = [0u8; 13];
    client.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"one two three");
}

#[test]
fn peer_close_is_reported_after_its_data() {
    let mut h = Harness::new();
    let (mut client, id) = h.connect();
    client.write_all(b"last words").unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let mut seen = Vec::new();
    h.until(|e| {
        seen.push(e.clone());
        matches!(e, Ev::Close(..)).then_some(())
    });
    assert_eq!(seen, vec![Ev::Data(id, b"last words".to_vec()), Ev::Close(id, 0)]);
    assert_eq!(h.driver.stats.open, 0);
    // A stale id is ignored everywhere.
    assert_eq!(h.driver.write(id, b"x"), None);
    assert!(!h.driver.resume(id));
    h.driver.destroy(id);
}

#[test]
fn back_pressure_queues_and_drains() {
    let mut h = Harness::new();
    let (mut client, id) = h.connect();
    let chunk = vec![7u8; 1 << 20];
    let mut queued = 0;
    for _ in 0..16 {
        let s = h.send(id, &[&chunk]);
        if !s.is_empty() {
            queued = s[1];
        }
    }
    assert!(queued > 0, "a client that does not read leaves bytes queued");
    assert_eq!(h.driver.queued(id), queued as usize);
    let reader = std::thread::spawn(move || {
        let mut total = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        while total < 16 << 20 {
            let n = client.read(&mut buf).unwrap();
            assert!(buf[..n].iter().all(|&b| b == 7));
            total += n;
        }
        total
    });
    h.until(|e| matches!(e, Ev::Drain(i) if *i == id).then_some(()));
    assert_eq!(h.driver.queued(id), 0);
    assert_eq!(reader.join().unwrap(), 16 << 20);
}

#[test]
fn paused_connections_are_not_read_until_resumed() {
    let mut h = Harness::new();
    let (mut client, id) = h.connect();
    h.driver.pause(id);
    client.write_all(b"waits").unwrap();
    for _ in 0..20 {
        assert!(h.turn().iter().all(|e| !matches!(e, Ev::Data(..))));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(h.driver.resume(id));
    assert!(h.driver.has_more());
    let got = h.until(|e| if let Ev::Data(_, d) = e { Some(d.clone()) } else { None });
    assert_eq!(got, b"waits");
}

#[test]
fn end_sends_what_is_queued_then_fin() {
    let mut h = Harness::new();
    let (mut client, id) = h.connect();
    h.send(id, &[b"bye"]);
    assert!(h.driver.end(id));
    let mut all = Vec::new();
    client.read_to_end(&mut all).unwrap();
    assert_eq!(all, b"bye", "the data, then EOF");
    drop(client);
    h.until(|e| matches!(e, Ev::Close(i, _) if *i == id).then_some(()));
}

#[test]
fn ids_of_reused_slots_differ() {
    let mut h = Harness::new();
    let (_c1, first) = h.connect();
    h.driver.destroy(first);
    let (mut c2, second) = h.connect();
    assert_ne!(first, second);
    assert_eq!(first & 0xff_ffff, second & 0xff_ffff, "the slot is reused");
    // Output for the old id does not reach the new connection.
    h.send(first, &[b"not yours"]);
    h.send(second, &[b"yours"]);
    let mut buf = [0u8; 5];
    c2.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"yours");
}

#[test]
fn many_connections_in_one_turn() {
    let mut h = Harness::new();
    let clients: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect(("127.0.0.1", h.port)).unwrap()).collect();
    let mut opened = 0;
    h.until(|e| {
        if matches!(e, Ev::Open(_)) {
            opened += 1;
        }
        (opened == 200).then_some(())
    });
    assert_eq!(h.driver.stats.open, 200);
    drop(clients);
    let mut closed = 0;
    h.until(|e| {
        if matches!(e, Ev::Close(..)) {
            closed += 1;
        }
        (closed == 200).then_some(())
    });
    assert_eq!(h.driver.stats.open, 0);
}
