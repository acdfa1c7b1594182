//! Latency at a fixed rate: one publisher sends `--rate` messages per second (paced in 1 ms
//! ticks), each carrying its send time; one subscriber on the same topic records publish-to-
//! delivery time. Both ends are in this process, so one monotonic clock measures both.
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{percentile, CpuWindow, Json};

const SUB: u32 = 0;
const PUB: u32 = 1;

struct Run {
    version: u8,
    qos: u8,
    epoch: Instant,
    publisher: usize,
    subscribed: bool,
    sent: u64,
    delivered: u64,
    acked: u64,
    recording: bool,
    samples: Vec<u64>,
    topic: Vec<u8>,
}

impl Handler for Run {
    fn ready(&mut self, net: &mut Net, c: usize) {
        if net.conn(c).role == SUB {
            mqtt::subscribe(net.out(c), self.version, 1, &[self.topic.as_slice()], self.qos);
        } else {
            self.publisher = c;
        }
    }

    fn packet(&mut self, net: &mut Net, c: usize, p: &Packet<'_>) {
        match p.kind {
            mqtt::PUBLISH => {
                let Some(m) = mqtt::parse_publish(self.version, p) else {
                    net.error("malformed PUBLISH".into());
                    return;
                };
                let now = self.epoch.elapsed().as_nanos() as u64;
                self.delivered += 1;
                if self.recording && m.payload.len() >= 8 {
                    let sent = u64::from_le_bytes(m.payload[..8].try_into().unwrap());
                    self.samples.push(now.saturating_sub(sent));
                }
                if m.qos == 1 {
                    mqtt::puback(net.out(c), m.packet_id);
                }
            }
            mqtt::PUBACK => {
                self.acked += 1;
                let conn = net.conn(c);
                conn.inflight = conn.inflight.saturating_sub(1);
            }
            mqtt::SUBACK => self.subscribed = true,
            k => net.error(format!("unexpected packet type {k}")),
        }
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let qos = a.num("qos", 0) as u8;
    let rate = a.num("rate", 10_000) as f64;
    let warmup = Duration::from_secs_f64(a.float("warmup", 1.0));
    let duration = Duration::from_secs_f64(a.float("duration", 3.0));
    let mut net = Net::new(common).expect("epoll");
    let epoch = Instant::now();
    let mut run = Run { version: common.version, qos, epoch, publisher: usize::MAX, subscribed: false, sent: 0, delivered: 0, acked: 0, recording: false, samples: Vec::new(), topic: format!("{}/lat", common.prefix).into_bytes() };
    // --sub-port: the subscriber connects to another broker (a node of the same cluster).
    let pub_target = net.target;
    let sub_port = a.num("sub-port", 0) as u16;
    if sub_port != 0 {
        net.target = std::net::SocketAddrV4::new(common.host, sub_port);
    }
    net.open(Spec { version: common.version, client_id: format!("{}-ls", common.prefix).into_bytes(), keepalive: 600, role: SUB, index: 0 });
    let t = Instant::now();
    while !run.subscribed && net.errors == 0 && t.elapsed() < Duration::from_secs(30) {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    net.target = pub_target;
    net.open(Spec { version: common.version, client_id: format!("{}-lp", common.prefix).into_bytes(), keepalive: 600, role: PUB, index: 0 });
    while (!run.subscribed || run.publisher == usize::MAX) && net.errors == 0 && t.elapsed() < Duration::from_secs(30) {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    let base = Json::new().str("scenario", "latency").int("version", common.version as u64).int("qos", qos as u64).num("targetRate", rate);
    if !run.subscribed || run.publisher == usize::MAX {
        return base.bool("ok", false).str("failure", "setup did not complete").int("errors", net.errors.max(1)).strs("errorSamples", &net.error_samples);
    }
    let mut payload = vec![0x5a; common.payload.max(8)];
    let start = Instant::now();
    let end = warmup + duration;
    let mut cpu = None;
    let mut measured_from = (0u64, Instant::now());
    let mut measured_sent = 0;
    let mut seconds = 0.0;
    loop {
        let elapsed = start.elapsed();
        if elapsed >= end {
            break;
        }
        if !run.recording && elapsed >= warmup {
            run.recording = true;
            cpu = Some(CpuWindow::start());
            measured_from = (run.sent, Instant::now());
        }
        // Messages due by now; QoS 1 also waits for the broker's Receive Maximum.
        let due = (elapsed.as_secs_f64() * rate) as u64;
        while run.sent < due {
            let c = run.publisher;
            let conn = net.conn(c);
            if qos > 0 && conn.inflight >= conn.receive_max {
                break;
            }
            let id = conn.next_id;
            if qos > 0 {
                conn.inflight += 1;
                conn.next_id = if id == u16::MAX { 1 } else { id + 1 };
            }
            let now = epoch.elapsed().as_nanos() as u64;
            payload[..8].copy_from_slice(&now.to_le_bytes());
            mqtt::publish(net.out(c), common.version, &run.topic, qos, false, id, &payload);
            run.sent += 1;
        }
        net.flush();
        if net.errors > 0 {
            break;
        }
        net.turn(&mut run, Some(Duration::from_millis(1)));
        if run.recording {
            measured_sent = run.sent - measured_from.0;
            seconds = measured_from.1.elapsed().as_secs_f64();
        }
    }
    run.recording = false;
    let cpu = cpu.map(|c| c.stop()).unwrap_or_default();
    let t = Instant::now();
    while (run.delivered < run.sent || (qos > 0 && run.acked < run.sent)) && t.elapsed() < Duration::from_secs(5) {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let loss = run.sent.saturating_sub(run.delivered);
    let mut s = std::mem::take(&mut run.samples);
    s.sort_unstable();
    let us = |p: f64| percentile(&s, p) as f64 / 1000.0;
    net.disconnect_all();
    base.bool("ok", loss == 0 && net.errors == 0 && !s.is_empty())
        .num("rate", measured_sent as f64 / seconds.max(1e-9))
        .num("p50", us(50.0))
        .num("p90", us(90.0))
        .num("p99", us(99.0))
        .num("p999", us(99.9))
        .num("max", s.last().copied().unwrap_or(0) as f64 / 1000.0)
        .str("unit", "microseconds")
        .int("samples", s.len() as u64)
        .int("sent", run.sent)
        .int("delivered", run.delivered)
        .int("loss", loss)
        .int("errors", net.errors)
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
