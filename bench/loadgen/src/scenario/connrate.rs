//! Connections per second: keep `--concurrency` handshakes going; each one is a TCP connect,
//! CONNECT, CONNACK, DISCONNECT and close. Source addresses rotate over 127.0.0.x (`--sources`)
//! so ephemeral ports do not run out.
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
    let warmup = Duration::from_secs_f64(a.float("warmup", 0.5));
    let duration = Duration::from_secs_f64(a.float("duration", 3.0));
    let mut net = Net::new(std::net::SocketAddrV4::new(common.host, common.port), common.sources.clone()).expect("epoll");
    net.max_handshakes = concurrency;
    let mut run = Run { completed: 0, failed: 0 };
    let mut n = 0u64;
    let mut refill = |net: &mut Net| {
        while net.pending() < concurrency {
            net.open(Spec { version: common.version, client_id: format!("{}-c{n}", common.prefix).into_bytes(), keepalive: 60, role: 0, index: 0 });
            n += 1;
        }
    };
    let start = Instant::now();
    while start.elapsed() < warmup {
        refill(&mut net);
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let c0 = run.completed;
    let e0 = net.errors;
    let cpu = CpuWindow::start();
    let t = Instant::now();
    while t.elapsed() < duration {
        refill(&mut net);
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let seconds = t.elapsed().as_secs_f64();
    let cpu = cpu.stop();
    let completed = run.completed - c0;
    let errors = net.errors - e0;
    Json::new()
        .str("scenario", "connrate")
        .int("version", common.version as u64)
        .int("concurrency", concurrency as u64)
        .int("sources", common.sources.len() as u64)
        .bool("ok", errors == 0 && completed > 0)
        .num("rate", completed as f64 / seconds)
        .int("completed", completed)
        .num("seconds", seconds)
        .int("errors", errors)
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
