//! Idle connections at scale (bench/scale-idle.ts runs it): opens `--connections` (1 000 000)
//! MQTT clients to one broker and keeps them open, each socket bound to a source address of
//! `--source-addrs` (a list `127.0.0.2,127.0.0.3` or a range `127.0.0.2-127.0.0.21`, used in
//! turn; 64,511 connections at most per address and broker port, fewer with the kernel's default
//! port range), `--handshakes` (256) at a time. The broker's RSS (`--broker-pid`) is read before,
//! once everything is connected and after `--hold` seconds; then a PINGREQ round checks that the
//! connections are still served.
//!
//! It stops opening connections when all N answered, when `--max-failures` (1000) connections
//! failed, when no handshake finished for `--stall` seconds (30; those still waiting count as
//! timeouts) or after `--timeout` seconds (1800). The result says how many it held at most, why
//! it stopped, and the failures by kind: the operation and errno (`connect EADDRNOTAVAIL`,
//! `connect EMFILE`, `read ECONNRESET`, ...) or what the broker did (`closed by the broker`).
//! Progress goes to stderr every 5 s. The process raises its own open-file limit to N + 1024, or
//! to the hard limit when it may not (the result gives both).
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{nofile_limits, raise_nofile, rss_bytes, CpuWindow, Json};

struct Run {
    ready: u64,
    lost: u64,
    pongs: u64,
    /// Most connections open and answered at once.
    max_held: u64,
    /// When the last handshake finished (answered or failed), for the stall check.
    last_progress: Instant,
    /// When the last CONNACK arrived: the end of the connect phase's timing.
    last_ready: Instant,
}

impl Run {
    fn held(&self) -> u64 {
        self.ready.saturating_sub(self.lost)
    }
}

impl Handler for Run {
    fn ready(&mut self, _net: &mut Net, _c: usize) {
        self.ready += 1;
        self.max_held = self.max_held.max(self.held());
        self.last_progress = Instant::now();
        self.last_ready = self.last_progress;
    }

    fn packet(&mut self, net: &mut Net, _c: usize, p: &Packet<'_>) {
        if p.kind == mqtt::PINGRESP {
            self.pongs += 1;
        } else {
            net.error(format!("unexpected packet type {}", p.kind));
        }
    }

    fn lost(&mut self, _net: &mut Net, _c: usize) {
        self.lost += 1;
        self.last_progress = Instant::now();
    }
}

/// `127.0.0.2,127.0.0.3` or `127.0.0.2-127.0.0.21` (inclusive).
fn parse_sources(s: &str) -> Vec<Ipv4Addr> {
    let ip = |t: &str| t.trim().parse::<Ipv4Addr>().unwrap_or_else(|_| panic!("--source-addrs: not an IPv4 address: {t}"));
    if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (u32::from(ip(a)), u32::from(ip(b)));
        assert!(a <= b, "--source-addrs: an empty range: {s}");
        (a..=b).map(Ipv4Addr::from).collect()
    } else {
        s.split(',').map(ip).collect()
    }
}

/// Open connections that got their CONNACK, counted (a connection can also fail on a write, which
/// no callback reports, so `Run::held` is only the running estimate for progress lines).
fn live_ready(net: &Net) -> u64 {
    (0..net.slots()).filter(|&c| net.get(c).is_some_and(|k| k.ready)).count() as u64
}

fn wait_until(net: &mut Net, run: &mut Run, timeout: Duration, done: impl Fn(&Run) -> bool) {
    let t = Instant::now();
    while !done(run) && t.elapsed() < timeout {
        net.turn(run, Some(Duration::from_millis(10)));
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let n = a.num("connections", 1_000_000);
    let sources = parse_sources(&a.str("source-addrs", "127.0.0.2"));
    let handshakes = a.num("handshakes", 256) as usize;
    let max_failures = a.num("max-failures", 1000);
    let stall = Duration::from_secs_f64(a.float("stall", 30.0));
    let timeout = Duration::from_secs_f64(a.float("timeout", 1800.0));
    let hold = Duration::from_secs_f64(a.float("hold", 5.0));
    let keepalive = a.num("keepalive", 1200).min(65535) as u16;
    let pid = common.broker_pid;
    assert!(pid > 0, "--broker-pid is needed to read the broker's RSS");

    // Its own sockets: one per connection, plus epoll and stdio.
    let (_, hard) = nofile_limits();
    let nofile = raise_nofile((n + 1024).max(hard));
    if nofile < n + 16 {
        eprintln!("idle-scale: this process may open {nofile} files, fewer than {n} connections need (raise the hard limit: ulimit -Hn as root, up to fs.nr_open)");
    }

    let mut net = Net::new(common).expect("epoll");
    net.use_sources(sources.clone());
    net.max_handshakes = handshakes;
    let mut run = Run { ready: 0, lost: 0, pongs: 0, max_held: 0, last_progress: Instant::now(), last_ready: Instant::now() };
    let rss_before = rss_bytes(pid).unwrap_or(0);
    let cpu = CpuWindow::start();
    let t = Instant::now();
    let mut queued = 0u64;
    let mut last_report = Instant::now();
    let stop_reason: String;
    let mut stalled = false;
    loop {
        let failed = net.errors;
        // Every connection queued and none waiting: each was answered or failed.
        if queued == n && net.pending() == 0 {
            stop_reason = if failed == 0 { "all connected".into() } else { "all tried".into() };
            break;
        }
        if failed >= max_failures {
            stop_reason = format!("{failed} failures (--max-failures {max_failures})");
            break;
        }
        if net.pending() > 0 && run.last_progress.elapsed() > stall {
            stop_reason = format!("stalled: no handshake finished for {} s", stall.as_secs_f64());
            stalled = true;
            break;
        }
        if t.elapsed() > timeout {
            stop_reason = format!("timed out after {} s", timeout.as_secs_f64());
            break;
        }
        // Queue a little ahead of the handshakes in progress, not all N at once.
        while queued < n && net.pending() < handshakes * 2 {
            net.open(Spec { version: common.version, client_id: format!("{}-s{queued}", common.prefix).into_bytes(), keepalive, role: 0, index: 0 });
            queued += 1;
        }
        net.turn(&mut run, Some(Duration::from_millis(10)));
        if last_report.elapsed() >= Duration::from_secs(5) {
            last_report = Instant::now();
            let rss = rss_bytes(pid).map_or("gone".to_string(), |b| format!("{} MiB", b >> 20));
            eprintln!(
                "idle-scale: {:>6.1} s  held {}  failed {}  handshaking {}  broker RSS {rss}",
                t.elapsed().as_secs_f64(),
                run.held(),
                net.errors,
                net.pending()
            );
        }
    }
    let phase_seconds = t.elapsed().as_secs_f64();
    // From the first connect to the last CONNACK (a stall's wait is not in it).
    let connect_seconds = run.last_ready.saturating_duration_since(t).as_secs_f64();
    // Handshakes still waiting are closed and counted as failures (timeouts after a stall, given
    // up otherwise), never held. Connections queued and not started were not tried.
    let not_tried = n - queued + net.queued() as u64;
    let unanswered = (net.pending() - net.queued()) as u64;
    net.clear_queue();
    for c in 0..net.slots() {
        if net.get(c).is_some_and(|k| !k.ready) {
            net.close(c);
        }
    }
    net.errors_of_kind(if stalled { "no CONNACK (timeout)" } else { "no CONNACK (given up)" }, unanswered);
    let rss_connected = rss_bytes(pid).unwrap_or(0);
    let held_connected = live_ready(&net);
    wait_until(&mut net, &mut run, hold, |_| false);
    let rss_after = rss_bytes(pid);
    let cpu = cpu.stop();
    let mut pings = 0u64;
    for c in 0..net.slots() {
        if net.get(c).is_some_and(|k| k.ready) {
            mqtt::pingreq(net.out(c));
            pings += 1;
        }
    }
    wait_until(&mut net, &mut run, Duration::from_secs(120), |r| r.pongs >= pings);
    let held_end = live_ready(&net);
    run.max_held = run.max_held.max(held_connected).max(held_end);
    let per_conn = match rss_after {
        Some(after) if pings > 0 => (after as f64 - rss_before as f64) / pings as f64,
        _ => f64::NAN,
    };
    let ok = held_end == n && run.pongs == n && net.errors == 0;
    let kinds = net.error_kinds.iter().fold(Json::new(), |j, (k, v)| j.int(k, *v));
    net.disconnect_all();
    Json::new()
        .str("scenario", "idle-scale")
        .int("version", common.version as u64)
        .int("connections", n)
        .bool("ok", ok)
        .str("stopReason", &stop_reason)
        .int("connected", run.ready)
        .int("maxHeld", run.max_held)
        .int("heldConnected", held_connected)
        .int("heldEnd", held_end)
        .int("pingResponses", run.pongs)
        .int("failed", net.errors)
        .int("unanswered", unanswered)
        .int("notTried", not_tried)
        .obj("failures", kinds)
        .strs("errorSamples", &net.error_samples)
        .num("connectSeconds", connect_seconds)
        .num("phaseSeconds", phase_seconds)
        .num("rate", if connect_seconds > 0.0 { run.ready as f64 / connect_seconds } else { 0.0 })
        .int("rssBefore", rss_before)
        .int("rssConnected", rss_connected)
        .num("rssAfter", rss_after.map_or(f64::NAN, |b| b as f64))
        .num("bytesPerConnection", per_conn)
        .int("sourceAddresses", sources.len() as u64)
        .str("firstSource", &sources[0].to_string())
        .int("handshakes", handshakes as u64)
        .int("nofile", nofile)
        .int("nofileHard", nofile_limits().1)
        .obj("cpu", cpu)
}
