//! Retained delivery: one client stores `--topics` retained messages (QoS 1, at most
//! `--inflight` unacknowledged, so every one is stored when the last PUBACK arrives), then a new
//! client subscribes to `#` and the run times the arrival of all of them.
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{CpuWindow, Json};

const LOADER: u32 = 0;
const READER: u32 = 1;

struct Run {
    version: u8,
    loader: usize,
    reader: usize,
    acked: u64,
    received: u64,
    retained_flag: u64,
    suback_at: Option<Instant>,
}

impl Handler for Run {
    fn ready(&mut self, net: &mut Net, c: usize) {
        if net.conn(c).role == LOADER {
            self.loader = c;
        } else {
            self.reader = c;
        }
    }

    fn packet(&mut self, net: &mut Net, c: usize, p: &Packet<'_>) {
        match p.kind {
            mqtt::PUBACK => {
                self.acked += 1;
                let conn = net.conn(c);
                conn.inflight = conn.inflight.saturating_sub(1);
                if mqtt::parse_puback(p).is_some_and(|(_, r)| r >= 0x80) {
                    net.error("PUBLISH refused".into());
                }
            }
            mqtt::PUBLISH => {
                let Some(m) = mqtt::parse_publish(self.version, p) else {
                    net.error("malformed PUBLISH".into());
                    return;
                };
                self.received += 1;
                if m.retain {
                    self.retained_flag += 1;
                }
                if m.qos == 1 {
                    mqtt::puback(net.out(c), m.packet_id);
                }
            }
            mqtt::SUBACK => self.suback_at = Some(Instant::now()),
            k => net.error(format!("unexpected packet type {k}")),
        }
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let topics = a.num("topics", 100_000);
    let inflight = a.num("inflight", 1000) as u32;
    let timeout = Duration::from_secs_f64(a.float("timeout", 120.0));
    let mut net = Net::new(common).expect("epoll");
    let mut run = Run { version: common.version, loader: usize::MAX, reader: usize::MAX, acked: 0, received: 0, retained_flag: 0, suback_at: None };
    let base = Json::new().str("scenario", "retained").int("version", common.version as u64).int("topics", topics);
    net.open(Spec { version: common.version, client_id: format!("{}-rl", common.prefix).into_bytes(), keepalive: 600, role: LOADER, index: 0 });
    let t = Instant::now();
    while run.loader == usize::MAX && net.errors == 0 && t.elapsed() < Duration::from_secs(30) {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    if run.loader == usize::MAX {
        return base.bool("ok", false).str("failure", "no connection").int("errors", net.errors.max(1)).strs("errorSamples", &net.error_samples);
    }
    // Load: topics prefix/r/<i / 1000>/<i % 1000>, 64-byte payloads.
    let payload = vec![0x5a; common.payload];
    let load_start = Instant::now();
    let mut sent = 0u64;
    while run.acked < topics && net.errors == 0 && load_start.elapsed() < timeout {
        let c = run.loader;
        let cap = inflight.min(net.conn(c).receive_max);
        while sent < topics && net.conn(c).inflight < cap {
            let conn = net.conn(c);
            conn.inflight += 1;
            let id = conn.next_id;
            conn.next_id = if id == u16::MAX { 1 } else { id + 1 };
            let topic = format!("{}/r/{}/{}", common.prefix, sent / 1000, sent % 1000);
            mqtt::publish(net.out(c), common.version, topic.as_bytes(), 1, true, id, &payload);
            sent += 1;
        }
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let load_seconds = load_start.elapsed().as_secs_f64();
    if run.acked < topics {
        return base.bool("ok", false).str("failure", "loading retained messages did not complete").int("acked", run.acked).int("errors", net.errors.max(1)).strs("errorSamples", &net.error_samples);
    }
    net.open(Spec { version: common.version, client_id: format!("{}-rr", common.prefix).into_bytes(), keepalive: 600, role: READER, index: 0 });
    while run.reader == usize::MAX && net.errors == 0 && t.elapsed() < timeout {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    if run.reader == usize::MAX {
        return base.bool("ok", false).str("failure", "no reader connection").int("errors", net.errors.max(1)).strs("errorSamples", &net.error_samples);
    }
    let cpu = CpuWindow::start();
    let sub_start = Instant::now();
    mqtt::subscribe(net.out(run.reader), common.version, 1, &[b"#".as_slice()], 0);
    while run.received < topics && net.errors == 0 && sub_start.elapsed() < timeout {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let seconds = sub_start.elapsed().as_secs_f64();
    let cpu = cpu.stop();
    // Anything beyond `topics` (another client's retained messages) would show up here.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(200) {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let loss = topics.saturating_sub(run.received);
    net.disconnect_all();
    base.bool("ok", loss == 0 && net.errors == 0)
        .num("rate", run.received.min(topics) as f64 / seconds)
        .num("seconds", seconds)
        .num("firstSubackSeconds", run.suback_at.map_or(f64::NAN, |s| (s - sub_start).as_secs_f64()))
        .num("loadRate", topics as f64 / load_seconds)
        .num("loadSeconds", load_seconds)
        .int("received", run.received)
        .int("retainFlag", run.retained_flag)
        .int("loss", loss)
        .int("errors", net.errors)
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
