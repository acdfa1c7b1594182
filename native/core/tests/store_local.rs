//! LocalStore (SQLite) tests: semantics, migrations, group commit, crash safety.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use spindle_core::store::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spindle-store-{name}-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn rand_suffix() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) ^ (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64)
}

fn open(path: &Path) -> LocalStore {
    LocalStore::open(path, Options::default()).unwrap()
}

fn msg(id: i64, topic: &str) -> Message {
    Message { id, topic: topic.into(), payload: vec![id as u8; 8], qos: 1, retain: false, properties: None, expires_at: 0 }
}

fn delivery(client: &str, seq: i64) -> NewDelivery {
    NewDelivery { client_id: client.into(), seq, qos: 1, retain: false, subscription_ids: vec![seq as u32, 7] }
}

fn stats(s: &LocalStore) -> Stats {
    match s.call(Op::Stats).unwrap() {
        Reply::Stats(st) => st,
        r => panic!("unexpected {r:?}"),
    }
}

fn deliveries(s: &LocalStore, client: &str) -> Vec<LoadedDelivery> {
    match s.call(Op::LoadDeliveries(client.into())).unwrap() {
        Reply::Deliveries(d) => d,
        r => panic!("unexpected {r:?}"),
    }
}

#[test]
fn store_messages_are_stored_once_and_collected_with_their_last_reference() {
    let dir = temp_dir("gc");
    let s = open(&dir.join("spindle.db"));
    s.call(Op::AddMessage(msg(1, "a/b"), vec![delivery("c1", 2), delivery("c2", 1)])).unwrap();
    s.call(Op::AddMessage(msg(2, "a/c"), vec![delivery("c1", 1)])).unwrap();
    assert_eq!(stats(&s), Stats { sessions: 0, messages: 2, deliveries: 3, retained: 0 });
    let d = deliveries(&s, "c1");
    assert_eq!(d.iter().map(|d| d.message.id).collect::<Vec<_>>(), vec![2, 1], "seq order");
    assert_eq!(d[1].delivery.subscription_ids, vec![2, 7]);
    assert_eq!(d[1].message.payload, vec![1u8; 8]);

    s.call(Op::UpdateDelivery { client_id: "c1".into(), message_id: 1, state: DeliveryState::Inflight, packet_id: 42 }).unwrap();
    let d = deliveries(&s, "c1");
    assert_eq!((d[1].delivery.state, d[1].delivery.packet_id), (DeliveryState::Inflight, 42));

    // retained reference keeps message 1 alive after its deliveries go
    s.call(Op::SetRetained("a/b".into(), msg(1, "a/b"))).unwrap();
    s.call(Op::RemoveDelivery { client_id: "c1".into(), message_id: 1 }).unwrap();
    s.call(Op::RemoveDelivery { client_id: "c2".into(), message_id: 1 }).unwrap();
    assert_eq!(stats(&s).messages, 2);
    s.call(Op::DeleteRetained("a/b".into())).unwrap();
    assert_eq!(stats(&s), Stats { sessions: 0, messages: 1, deliveries: 1, retained: 0 });

    // replacing a retained message collects the old one
    s.call(Op::SetRetained("r".into(), msg(10, "r"))).unwrap();
    s.call(Op::SetRetained("r".into(), msg(11, "r"))).unwrap();
    match s.call(Op::LoadRetained).unwrap() {
        Reply::Retained(r) => assert_eq!(r, vec![Retained { topic: "r".into(), message: msg(11, "r") }]),
        r => panic!("{r:?}"),
    }
    assert_eq!(stats(&s).messages, 2);
    s.close().unwrap();
}

#[test]
fn store_delete_session_removes_what_belongs_to_it() {
    let dir = temp_dir("session");
    let s = open(&dir.join("spindle.db"));
    let will = Will { topic: "w".into(), payload: b"bye".to_vec(), qos: 1, retain: true, properties: Some(vec![1, 2]), expiry_interval: 5, delay: 30 };
    let sess = Session { client_id: "c1".into(), expiry_interval: 60, disconnected_at: Some(1000), username: Some("u".into()), will: Some(will) };
    s.call(Op::SaveSession(sess.clone())).unwrap();
    s.call(Op::SaveSession(Session { client_id: "c2".into(), expiry_interval: 0xFFFF_FFFF, disconnected_at: None, username: None, will: None })).unwrap();
    s.call(Op::AddSubscription(Subscription { client_id: "c1".into(), filter: "a/#".into(), options: 1, subscription_id: 3 })).unwrap();
    s.call(Op::AddIncomingQos2 { client_id: "c1".into(), packet_id: 9 }).unwrap();
    s.call(Op::AddMessage(msg(1, "a"), vec![delivery("c1", 1)])).unwrap();
    s.call(Op::AddMessage(msg(2, "a"), vec![delivery("c1", 2), delivery("c2", 1)])).unwrap();
    match s.call(Op::LoadSessions).unwrap() {
        Reply::Sessions(v) => assert_eq!(v[0], sess),
        r => panic!("{r:?}"),
    }
    // deleteExpired: c1 expires at 1000 + 60 s
    match s.call(Op::DeleteExpired(60_999)).unwrap() {
        Reply::Expired(e) => assert_eq!(e, Expired { sessions: vec![], messages: 0 }),
        r => panic!("{r:?}"),
    }
    match s.call(Op::DeleteExpired(61_000)).unwrap() {
        Reply::Expired(e) => assert_eq!(e, Expired { sessions: vec!["c1".into()], messages: 0 }),
        r => panic!("{r:?}"),
    }
    assert_eq!(stats(&s), Stats { sessions: 1, messages: 1, deliveries: 1, retained: 0 });
    assert_eq!(s.call(Op::LoadSubscriptions(Some("c1".into()))).unwrap(), Reply::Subscriptions(vec![]));
    assert_eq!(s.call(Op::LoadIncomingQos2("c1".into())).unwrap(), Reply::PacketIds(vec![]));
    s.call(Op::DeleteSession("c2".into())).unwrap();
    assert_eq!(stats(&s), Stats::default());
}

#[test]
fn store_expired_messages_and_admin_documents() {
    let dir = temp_dir("expire");
    let s = open(&dir.join("spindle.db"));
    let mut m = msg(1, "x");
    m.expires_at = 500;
    s.call(Op::AddMessage(m.clone(), vec![delivery("c", 1)])).unwrap();
    s.call(Op::SetRetained("x".into(), m)).unwrap();
    s.call(Op::AddMessage(msg(2, "y"), vec![delivery("c", 2)])).unwrap();
    assert_eq!(s.call(Op::DeleteExpired(500)).unwrap(), Reply::Expired(Expired { sessions: vec![], messages: 1 }));
    assert_eq!(stats(&s), Stats { sessions: 0, messages: 1, deliveries: 1, retained: 0 });

    s.call(Op::PutAdmin { kind: "user".into(), id: "b".into(), doc: "{\"n\":2}".into() }).unwrap();
    s.call(Op::PutAdmin { kind: "user".into(), id: "a".into(), doc: "{\"n\":1}".into() }).unwrap();
    s.call(Op::PutAdmin { kind: "user".into(), id: "a".into(), doc: "{\"n\":3}".into() }).unwrap();
    assert_eq!(s.call(Op::GetAdmin { kind: "user".into(), id: "a".into() }).unwrap(), Reply::Admin(Some("{\"n\":3}".into())));
    assert_eq!(s.call(Op::GetAdmin { kind: "rule".into(), id: "a".into() }).unwrap(), Reply::Admin(None));
    match s.call(Op::ListAdmin("user".into())).unwrap() {
        Reply::AdminList(v) => assert_eq!(v.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), vec!["a", "b"]),
        r => panic!("{r:?}"),
    }
    assert_eq!(s.call(Op::DeleteAdmin { kind: "user".into(), id: "a".into() }).unwrap(), Reply::Bool(true));
    assert_eq!(s.call(Op::DeleteAdmin { kind: "user".into(), id: "a".into() }).unwrap(), Reply::Bool(false));
}

#[test]
fn store_migrations_are_versioned() {
    let dir = temp_dir("migrate");
    let path = dir.join("spindle.db");
    {
        let s = open(&path);
        s.call(Op::PutAdmin { kind: "k".into(), id: "1".into(), doc: "{}".into() }).unwrap();
        s.close().unwrap();
    }
    let version = |p: &Path| schema_version(&rusqlite::Connection::open(p).unwrap()).unwrap();
    assert_eq!(version(&path), MIGRATIONS.len() as i64);

    // a failing migration leaves the previous version and the data untouched
    let mut broken: Vec<&str> = MIGRATIONS.to_vec();
    broken.push("CREATE TABLE extra (x INTEGER); THIS IS NOT SQL;");
    let err = LocalStore::open_with_migrations(&path, Options::default(), &broken).err().unwrap();
    assert_eq!(err.code, StoreErrorCode::Migration);
    assert_eq!(version(&path), MIGRATIONS.len() as i64);

    // a good one upgrades and keeps the data
    let mut next: Vec<&str> = MIGRATIONS.to_vec();
    next.push("ALTER TABLE admin ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;");
    let s = LocalStore::open_with_migrations(&path, Options::default(), &next).unwrap();
    assert_eq!(s.call(Op::GetAdmin { kind: "k".into(), id: "1".into() }).unwrap(), Reply::Admin(Some("{}".into())));
    s.close().unwrap();
    assert_eq!(version(&path), MIGRATIONS.len() as i64 + 1);

    // a database newer than the build is refused
    let err = LocalStore::open(&path, Options::default()).err().unwrap();
    assert_eq!(err.code, StoreErrorCode::Migration);
    assert!(err.message.contains("newer"), "{}", err.message);
}

#[test]
fn store_migration_2_turns_a_negative_will_expiry_into_its_interval() {
    let dir = temp_dir("will-expiry");
    let path = dir.join("spindle.db");
    // a database at version 1, holding wills as version 1 wrote them: minus the interval, or 0
    LocalStore::open_with_migrations(&path, Options::default(), &MIGRATIONS[..1]).unwrap().close().unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), 1);
        let insert = "INSERT INTO sessions (client_id, expiry_interval, disconnected_at, username, will_topic, will_payload,
                          will_qos, will_retain, will_properties, will_expires_at, will_delay)
                      VALUES (?1, 60, 1000, NULL, 'w', x'6279', 1, 0, NULL, ?2, 5)";
        conn.execute(insert, rusqlite::params!["expiring", -30]).unwrap();
        conn.execute(insert, rusqlite::params!["never", 0]).unwrap();
        conn.execute("INSERT INTO sessions (client_id, expiry_interval) VALUES ('no-will', 0)", []).unwrap();
    }
    let s = open(&path);
    let Reply::Sessions(sessions) = s.call(Op::LoadSessions).unwrap() else { panic!("not sessions") };
    let intervals: Vec<(&str, Option<u32>)> =
        sessions.iter().map(|s| (s.client_id.as_str(), s.will.as_ref().map(|w| w.expiry_interval))).collect();
    assert_eq!(intervals, vec![("expiring", Some(30)), ("never", Some(0)), ("no-will", None)]);
    let will = sessions[0].will.as_ref().unwrap();
    assert_eq!((will.topic.as_str(), will.payload.as_slice(), will.delay), ("w", b"by".as_slice(), 5));
    s.close().unwrap();
    assert_eq!(schema_version(&rusqlite::Connection::open(&path).unwrap()).unwrap(), MIGRATIONS.len() as i64);
}

/// Records completions per sink and counts flushes (one flush per batch per sink).
struct Recorder {
    tickets: Mutex<Vec<u64>>,
    errors: Mutex<Vec<(u64, StoreError)>>,
    flushes: AtomicU64,
}

impl Completion for Recorder {
    fn complete(&self, ticket: u64, result: Result<Reply, StoreError>) {
        match result {
            Ok(_) => self.tickets.lock().unwrap().push(ticket),
            Err(e) => self.errors.lock().unwrap().push((ticket, e)),
        }
    }
    fn flush(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }
}

fn recorder() -> Arc<Recorder> {
    Arc::new(Recorder { tickets: Mutex::new(Vec::new()), errors: Mutex::new(Vec::new()), flushes: AtomicU64::new(0) })
}

#[test]
fn store_group_commit_batches_concurrent_writes_and_keeps_order() {
    let dir = temp_dir("group");
    let s = Arc::new(open(&dir.join("spindle.db")));
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 5000;
    let recorders: Vec<_> = (0..THREADS).map(|_| recorder()).collect();
    let handles: Vec<_> = recorders
        .iter()
        .enumerate()
        .map(|(t, rec)| {
            let s = s.clone();
            let rec = rec.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    let id = (t as i64) << 32 | i as i64;
                    s.submit(Op::AddMessage(msg(id, "t"), vec![delivery(&format!("c{t}"), i as i64)]), rec.clone(), i);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // wait for everything: a blocking call goes behind all of them in the queue
    assert_eq!(stats(&s).deliveries, THREADS * PER_THREAD);
    let mut total_flushes = 0;
    for rec in &recorders {
        let tickets = rec.tickets.lock().unwrap();
        assert_eq!(*tickets, (0..PER_THREAD).collect::<Vec<_>>(), "completion order is submission order");
        assert!(rec.errors.lock().unwrap().is_empty());
        total_flushes += rec.flushes.load(Ordering::Relaxed);
    }
    // group commit: far fewer transactions than operations
    assert!(total_flushes < THREADS * PER_THREAD / 4, "{total_flushes} flushes for {} writes", THREADS * PER_THREAD);
    // per-caller order: the last update wins
    let rec = recorder();
    for state in [DeliveryState::Inflight, DeliveryState::Pubrel, DeliveryState::Queued, DeliveryState::Pubrel] {
        s.submit(Op::UpdateDelivery { client_id: "c0".into(), message_id: 0, state, packet_id: state as u16 + 1 }, rec.clone(), 0);
    }
    let d = deliveries(&s, "c0");
    assert_eq!((d[0].delivery.state, d[0].delivery.packet_id), (DeliveryState::Pubrel, 3));
    s.close().unwrap();
}

#[test]
fn store_a_failing_operation_fails_alone() {
    let dir = temp_dir("isolate");
    let s = open(&dir.join("spindle.db"));
    let rec = recorder();
    // hold the writer busy so the three land in one batch
    s.submit(Op::AddMessage(msg(1, "a"), vec![delivery("c", 1)]), rec.clone(), 1);
    s.submit(Op::AddMessage(msg(-5, "bad"), vec![delivery("c", 2)]), rec.clone(), 2);
    s.submit(Op::AddMessage(msg(3, "a"), vec![delivery("c", 3), NewDelivery { seq: -1, ..delivery("d", 0) }]), rec.clone(), 3);
    s.submit(Op::AddMessage(msg(4, "a"), vec![delivery("c", 4)]), rec.clone(), 4);
    assert_eq!(stats(&s), Stats { sessions: 0, messages: 2, deliveries: 2, retained: 0 });
    assert_eq!(*rec.tickets.lock().unwrap(), vec![1, 4]);
    let errors = rec.errors.lock().unwrap();
    assert_eq!(errors.iter().map(|(t, e)| (*t, e.code)).collect::<Vec<_>>(), vec![(2, StoreErrorCode::Invalid), (3, StoreErrorCode::Invalid)]);
    drop(errors);
    s.close().unwrap();
    assert_eq!(s.call(Op::Stats).unwrap_err().code, StoreErrorCode::Closed);
}

const CHILD_ENV: &str = "SPINDLE_STORE_CRASH_CHILD";

/// Child half of the crash test: writes until killed, printing each acknowledged id.
#[test]
fn store_crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let s = open(Path::new(&path));
    for i in 0.. {
        s.call(Op::AddMessage(msg(i, "crash"), vec![delivery("c", i)])).unwrap();
        println!("ACK {i}");
    }
}

#[test]
fn store_acknowledged_writes_survive_sigkill() {
    let dir = temp_dir("crash");
    let path = dir.join("spindle.db");
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "store_crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut acked = -1i64;
        for line in stdout.lines() {
            let line = line.unwrap();
            if let Some(n) = line.strip_prefix("ACK ") {
                acked = n.parse().unwrap();
                if acked >= 300 + round * 100 {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL: no close, no checkpoint
        child.wait().unwrap();
        assert!(acked >= 300);
        let s = open(&path);
        let d = deliveries(&s, "c");
        let ids: std::collections::HashSet<i64> = d.iter().map(|d| d.message.id).collect();
        for i in 0..=acked {
            assert!(ids.contains(&i), "round {round}: acknowledged message {i} is missing after SIGKILL ({} present)", ids.len());
        }
        s.close().unwrap();
    }
}
