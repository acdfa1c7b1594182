//! Closed-loop throughput: publishers send only while fewer than `window` deliveries are
//! outstanding (sent x fan-out - delivered), so the run measures sustained delivery, not how much
//! the broker can buffer. QoS 1 publishers are also bounded by their unacknowledged PUBLISHes
//! (the broker's Receive Maximum). After the measured window the publishers stop and the run
//! drains; whatever was sent and never delivered is loss, and a run with loss or errors fails.
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{CpuWindow, Json};

const SUB: u32 = 0;
const PUB: u32 = 1;

#[derive(Clone, Copy, PartialEq)]
pub enum Topology {
    /// Every publisher on its own topic, one subscriber to `prefix/in/+`.
    FanIn,
    /// One topic, every subscriber on it.
    FanOut,
    /// Publisher i to subscriber i, each pair on its own topic.
    Pairs,
}

struct Run {
    version: u8,
    qos: u8,
    fanout: u64,
    window: u64,
    topology: Topology,
    prefix: String,
    /// Encoded PUBLISH per publisher and where its packet id sits.
    templates: Vec<(Vec<u8>, usize)>,
    pubs: Vec<usize>,
    subscribed: usize,
    ready_pubs: usize,
    running: bool,
    rr: usize,
    sent: u64,
    delivered: u64,
    acked: u64,
    dups: u64,
    refused: u64,
}

impl Run {
    fn topic(&self, i: u32) -> String {
        match self.topology {
            Topology::FanIn => format!("{}/in/{i}", self.prefix),
            Topology::FanOut => format!("{}/out", self.prefix),
            Topology::Pairs => format!("{}/pair/{i}", self.prefix),
        }
    }

    fn filter(&self, i: u32) -> String {
        match self.topology {
            Topology::FanIn => format!("{}/in/+", self.prefix),
            _ => self.topic(i),
        }
    }

    /// Sends while the window allows, one message per publisher in turn. Refills start only once
    /// a sixteenth of the window is free, so each write carries a batch rather than one message
    /// (fewer syscalls in the generator; the window bound is the same).
    fn pump(&mut self, net: &mut Net) {
        let n = self.pubs.len();
        let step = (self.window / 16).max(self.fanout);
        if self.sent * self.fanout + step > self.delivered + self.window {
            return;
        }
        while self.running && (self.sent + 1) * self.fanout <= self.delivered + self.window {
            let mut chosen = None;
            for k in 0..n {
                let i = (self.rr + k) % n;
                let c = net.conn(self.pubs[i]);
                if self.qos == 0 || c.inflight < c.receive_max.min(65000) {
                    chosen = Some(i);
                    break;
                }
            }
            let Some(i) = chosen else { break };
            self.rr = (i + 1) % n;
            let c = self.pubs[i];
            let conn = net.conn(c);
            let id = conn.next_id;
            if self.qos > 0 {
                conn.inflight += 1;
                conn.next_id = if id == u16::MAX { 1 } else { id + 1 };
            }
            let (frame, id_at) = &self.templates[i];
            let out = net.out(c);
            let start = out.len();
            out.extend_from_slice(frame);
            if self.qos > 0 {
                out[start + id_at..start + id_at + 2].copy_from_slice(&id.to_be_bytes());
            }
            self.sent += 1;
        }
    }

    fn expected(&self) -> u64 {
        self.sent * self.fanout
    }
}

impl Handler for Run {
    fn ready(&mut self, net: &mut Net, c: usize) {
        let (role, index) = (net.conn(c).role, net.conn(c).index);
        if role == SUB {
            let filter = self.filter(index);
            mqtt::subscribe(net.out(c), self.version, 1, &[filter.as_bytes()], self.qos);
        } else {
            self.pubs[index as usize] = c;
            self.ready_pubs += 1;
        }
    }

    fn packet(&mut self, net: &mut Net, c: usize, p: &Packet<'_>) {
        match p.kind {
            mqtt::PUBLISH => {
                let Some(m) = mqtt::parse_publish(self.version, p) else {
                    net.error("malformed PUBLISH".into());
                    return;
                };
                self.delivered += 1;
                if m.dup {
                    self.dups += 1;
                }
                if m.qos == 1 {
                    mqtt::puback(net.out(c), m.packet_id);
                }
            }
            mqtt::PUBACK => {
                let conn = net.conn(c);
                conn.inflight = conn.inflight.saturating_sub(1);
                self.acked += 1;
                if let Some((_, reason)) = mqtt::parse_puback(p) {
                    // 0x10 (no matching subscribers) is a success.
                    if reason >= 0x80 {
                        self.refused += 1;
                    }
                }
            }
            mqtt::SUBACK => match mqtt::parse_suback(self.version, p) {
                Some((_, codes)) if codes.iter().all(|&x| x < 0x80) => self.subscribed += 1,
                _ => net.error("SUBSCRIBE refused".into()),
            },
            mqtt::PINGRESP => {}
            k => net.error(format!("unexpected packet type {k}")),
        }
    }

    fn tick(&mut self, net: &mut Net) {
        self.pump(net);
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let topology = match a.str("topology", "fanin").as_str() {
        "fanin" => Topology::FanIn,
        "fanout" => Topology::FanOut,
        "pairs" => Topology::Pairs,
        t => panic!("--topology: fanin, fanout or pairs, not {t}"),
    };
    let (default_pubs, default_subs) = match topology {
        Topology::FanIn => (10, 1),
        Topology::FanOut => (1, 100),
        Topology::Pairs => (100, 100),
    };
    let pubs = a.num("pubs", default_pubs) as u32;
    let subs = match topology {
        Topology::Pairs => pubs,
        _ => a.num("subs", default_subs) as u32,
    };
    let qos = a.num("qos", 0) as u8;
    let fanout = if topology == Topology::FanOut { subs as u64 } else { 1 };
    // The window counts deliveries; a fan-out run keeps at least 4 messages outstanding.
    let window = a.num("window", 4096).max(4 * fanout);
    let warmup = Duration::from_secs_f64(a.float("warmup", 1.0));
    let duration = Duration::from_secs_f64(a.float("duration", 3.0));
    let drain = Duration::from_secs_f64(a.float("drain", 5.0));
    let setup_timeout = Duration::from_secs_f64(a.float("setup-timeout", 60.0));

    let mut run = Run {
        version: common.version,
        qos,
        fanout,
        window,
        topology,
        prefix: common.prefix.clone(),
        templates: Vec::new(),
        pubs: vec![usize::MAX; pubs as usize],
        subscribed: 0,
        ready_pubs: 0,
        running: false,
        rr: 0,
        sent: 0,
        delivered: 0,
        acked: 0,
        dups: 0,
        refused: 0,
    };
    let payload = vec![0x5a; common.payload];
    for i in 0..pubs {
        let mut frame = Vec::new();
        let id_at = mqtt::publish(&mut frame, common.version, run.topic(i).as_bytes(), qos, false, 1, &payload);
        // Offset of the id from the frame's start (usize::MAX stays for QoS 0).
        run.templates.push((frame, id_at));
    }

    let mut net = Net::new(common).expect("epoll");
    net.max_handshakes = a.num("handshakes", 128) as usize;
    let spec = |role: u32, index: u32| Spec {
        version: common.version,
        client_id: format!("{}-{}{}", common.prefix, if role == SUB { "s" } else { "p" }, index).into_bytes(),
        keepalive: 600,
        role,
        index,
    };
    // --sub-port: the subscribers connect to another broker (a node of the same cluster).
    let pub_target = net.target;
    let sub_port = a.num("sub-port", 0) as u16;
    if sub_port != 0 {
        net.target = std::net::SocketAddrV4::new(common.host, sub_port);
    }
    for i in 0..subs {
        net.open(spec(SUB, i));
    }
    let setup_start = Instant::now();
    while run.subscribed < subs as usize && net.errors == 0 && setup_start.elapsed() < setup_timeout {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    net.target = pub_target;
    // --settle ms: time for the subscriptions to reach the publishers' node (a cluster's interest
    // propagation) before anything is published; the windowed flow control waits for every message.
    let settle = Duration::from_millis(a.num("settle", 0));
    let settle_start = Instant::now();
    while settle_start.elapsed() < settle {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    for i in 0..pubs {
        net.open(spec(PUB, i));
    }
    while run.ready_pubs < pubs as usize && net.errors == 0 && setup_start.elapsed() < setup_timeout {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    let setup_secs = setup_start.elapsed().as_secs_f64();
    let base = Json::new()
        .str("scenario", "throughput")
        .str("topology", a.str("topology", "fanin").as_str())
        .int("version", common.version as u64)
        .int("qos", qos as u64)
        .int("publishers", pubs as u64)
        .int("subscribers", subs as u64)
        .int("payload", common.payload as u64)
        .int("window", window);
    if run.subscribed < subs as usize || run.ready_pubs < pubs as usize {
        return base
            .bool("ok", false)
            .str("failure", "setup did not complete")
            .int("errors", net.errors.max(1))
            .strs("errorSamples", &net.error_samples);
    }

    run.running = true;
    let start = Instant::now();
    while start.elapsed() < warmup && net.errors == 0 {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let (d0, s0) = (run.delivered, run.sent);
    let cpu = CpuWindow::start();
    let measure_start = Instant::now();
    while measure_start.elapsed() < duration && net.errors == 0 {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let seconds = measure_start.elapsed().as_secs_f64();
    let (d1, s1) = (run.delivered, run.sent);
    let cpu = cpu.stop();
    run.running = false;
    let drain_start = Instant::now();
    while (run.delivered < run.expected() || (qos > 0 && run.acked < run.sent)) && drain_start.elapsed() < drain {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let loss = run.expected().saturating_sub(run.delivered);
    let unacked = if qos > 0 { run.sent - run.acked } else { 0 };
    let errors = net.errors + run.refused;
    net.disconnect_all();
    base.bool("ok", loss == 0 && errors == 0 && unacked == 0 && d1 > d0)
        .num("rate", (d1 - d0) as f64 / seconds)
        .num("publishRate", (s1 - s0) as f64 / seconds)
        .num("seconds", seconds)
        .num("setupSeconds", setup_secs)
        .int("sent", run.sent)
        .int("expected", run.expected())
        .int("delivered", run.delivered)
        .int("loss", loss)
        .int("unacked", unacked)
        .int("duplicates", run.dups)
        .int("errors", errors)
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
