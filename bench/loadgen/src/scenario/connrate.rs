//! Connections per second: keep `--concurrency` handshakes going; each one is a TCP connect,
//! CONNECT, CONNACK, DISCONNECT and close. Source addresses rotate over 127.0.0.x (`--sources`)
//! so ephemeral ports do not run out. Timed (`--warmup`, `--duration`) or one pass of `--count`
//! connections. A refused CONNACK is an error; the result says how many and the first code.
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{CpuWindow, Json};

struct Run {
    completed: u64,
    failed: u64,
}

impl Handler for Run {
    fn ready(&mut self, net: &mut Net, c: usize) {
        mqtt::disconnect(net.out(c));
        net.flush();
        net.close(c);
        self.completed += 1;
    }

    fn packet(&mut self, net: &mut Net, _c: usize, p: &Packet<'_>) {
        net.error(format!("unexpected packet type {}", p.kind));
    }

    fn lost(&mut self, _net: &mut Net, _c: usize) {
        self.failed += 1;
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let concurrency = a.num("concurrency", 64) as usize;
    let count = a.num("count", 0);
    let mut net = Net::new(common).expect("epoll");
    net.max_handshakes = concurrency;
    let mut run = Run { completed: 0, failed: 0 };
    let mut n = 0u64;
    // Queues connections up to `limit` in all; returns how many are queued so far.
    let mut refill = |net: &mut Net, limit: u64| {
        while net.pending() < concurrency && n < limit {
            net.open(Spec { version: common.version, client_id: format!("{}-c{n}", common.prefix).into_bytes(), keepalive: 60, role: 0, index: 0 });
            n += 1;
        }
        n
    };
    let mut timed_out = false;
    let (c0, e0, r0, cpu, t) = if count > 0 {
        // One pass of exactly `count` connections (with --users N = count: every user once),
        // timed from the first connect to the last answer.
        let timeout = Duration::from_secs_f64(a.float("timeout", 300.0));
        let cpu = CpuWindow::start();
        let t = Instant::now();
        loop {
            if refill(&mut net, count) == count && net.pending() == 0 {
                break;
            }
            if t.elapsed() > timeout {
                timed_out = true;
                break;
            }
            net.turn(&mut run, Some(Duration::from_millis(5)));
        }
        (0, 0, 0, cpu, t)
    } else {
        let warmup = Duration::from_secs_f64(a.float("warmup", 0.5));
        let duration = Duration::from_secs_f64(a.float("duration", 3.0));
        let start = Instant::now();
        while start.elapsed() < warmup {
            refill(&mut net, u64::MAX);
            net.turn(&mut run, Some(Duration::from_millis(5)));
        }
        let marks = (run.completed, net.errors, net.refused);
        let cpu = CpuWindow::start();
        let t = Instant::now();
        while t.elapsed() < duration {
            refill(&mut net, u64::MAX);
            net.turn(&mut run, Some(Duration::from_millis(5)));
        }
        (marks.0, marks.1, marks.2, cpu, t)
    };
    let seconds = t.elapsed().as_secs_f64();
    let cpu = cpu.stop();
    let completed = run.completed - c0;
    let mut errors = net.errors - e0;
    let refused = net.refused - r0;
    let unanswered = net.pending() as u64;
    if timed_out {
        net.error(format!("timed out: {unanswered} of {count} connections unanswered"));
        errors += 1;
    }
    Json::new()
        .str("scenario", "connrate")
        .int("version", common.version as u64)
        .int("concurrency", concurrency as u64)
        .int("sources", common.sources.len() as u64)
        .int("users", common.credentials.users)
        .bool("ok", errors == 0 && completed > 0)
        .num("rate", completed as f64 / seconds)
        .int("completed", completed)
        .num("seconds", seconds)
        .int("errors", errors)
        // Refusals (also in errors): how many, and the first return / reason code seen (null: none).
        .int("refused", refused)
        .num("refusedCode", net.first_refusal.map_or(f64::NAN, |c| c as f64))
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
