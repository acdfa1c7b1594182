//! Memory per idle connection: RSS of the broker (`--broker-pid`, from /proc) before and after
//! `--connections` clients have connected and sit idle. A PINGREQ round on every connection at
//! the end proves they are all still served.
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{rss_bytes, CpuWindow, Json};

struct Run {
    ready: usize,
    pongs: usize,
    lost: usize,
}

impl Handler for Run {
    fn ready(&mut self, _net: &mut Net, _c: usize) {
        self.ready += 1;
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
    }
}

fn wait_until(net: &mut Net, run: &mut Run, timeout: Duration, done: impl Fn(&Run) -> bool) {
    let t = Instant::now();
    while !done(run) && t.elapsed() < timeout {
        net.turn(run, Some(Duration::from_millis(10)));
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let n = a.num("connections", 10_000) as usize;
    let settle = Duration::from_secs_f64(a.float("settle", 2.0));
    let pid = common.broker_pid;
    assert!(pid > 0, "--broker-pid is needed to read the broker's RSS");
    let mut net = Net::new(common).expect("epoll");
    net.max_handshakes = a.num("handshakes", 128) as usize;
    let mut run = Run { ready: 0, pongs: 0, lost: 0 };
    let before = rss_bytes(pid).unwrap_or(0);
    let cpu = CpuWindow::start();
    let t = Instant::now();
    for i in 0..n {
        net.open(Spec { version: common.version, client_id: format!("{}-i{i}", common.prefix).into_bytes(), keepalive: 600, role: 0, index: i as u32 });
    }
    wait_until(&mut net, &mut run, Duration::from_secs(120), |r| r.ready + r.lost >= n);
    let connect_seconds = t.elapsed().as_secs_f64();
    wait_until(&mut net, &mut run, settle, |_| false);
    let after = rss_bytes(pid).unwrap_or(0);
    let cpu = cpu.stop();
    for c in 0..net.slots() {
        if net.get(c).is_some_and(|k| k.ready) {
            mqtt::pingreq(net.out(c));
        }
    }
    let alive = run.ready - run.lost.min(run.ready);
    wait_until(&mut net, &mut run, Duration::from_secs(30), |r| r.pongs >= alive);
    let pongs = run.pongs;
    let per_conn = (after as f64 - before as f64) / n as f64;
    let ok = run.ready == n && run.lost == 0 && pongs == n && net.errors == 0;
    net.disconnect_all();
    Json::new()
        .str("scenario", "idle")
        .int("version", common.version as u64)
        .int("connections", n as u64)
        .bool("ok", ok)
        .num("bytesPerConnection", per_conn)
        .int("rssBefore", before)
        .int("rssAfter", after)
        .num("connectSeconds", connect_seconds)
        .int("connected", run.ready as u64)
        .int("pingResponses", pongs as u64)
        .int("errors", net.errors)
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
