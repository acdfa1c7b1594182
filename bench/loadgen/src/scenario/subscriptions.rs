//! Many subscriptions: `--subscribers` clients hold `--subscriptions` exact filters between them
//! (`prefix/s/<client>/<n>`, `--batch` filters per SUBSCRIBE, a few SUBSCRIBEs in flight per
//! client). Reports the subscribe rate and the broker's RSS growth per subscription (from /proc,
//! `--broker-pid`), then a closed-loop QoS 0 publish run (`--publishers`, window `--window`) on
//! random subscribed topics, each matching exactly one subscription.
use std::time::{Duration, Instant};

use crate::args::{Args, Common};
use crate::mqtt::{self, Packet};
use crate::net::{Handler, Net, Spec};
use crate::report::{rss_bytes, CpuWindow, Json};

const SUB: u32 = 0;
const PUB: u32 = 1;

struct Run {
    version: u8,
    prefix: String,
    per_client: u64,
    batch: u64,
    /// Per subscriber: filters requested so far.
    requested: Vec<u64>,
    subs: Vec<usize>,
    outstanding: Vec<u32>,
    granted: u64,
    pubs: Vec<usize>,
    ready_subs: usize,
    ready_pubs: usize,
    running: bool,
    sent: u64,
    delivered: u64,
    window: u64,
    rng: u64,
    rr: usize,
    payload: Vec<u8>,
}

impl Run {
    fn subscribe_more(&mut self, net: &mut Net, i: usize) {
        let c = self.subs[i];
        while self.outstanding[i] < 8 && self.requested[i] < self.per_client {
            let from = self.requested[i];
            let to = (from + self.batch).min(self.per_client);
            let filters: Vec<String> = (from..to).map(|n| format!("{}/s/{i}/{n}", self.prefix)).collect();
            let refs: Vec<&[u8]> = filters.iter().map(|f| f.as_bytes()).collect();
            let id = (from / self.batch % 60_000 + 1) as u16;
            mqtt::subscribe(net.out(c), self.version, id, &refs, 0);
            self.requested[i] = to;
            self.outstanding[i] += 1;
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pump(&mut self, net: &mut Net) {
        let clients = self.subs.len() as u64;
        // Refill in batches of a sixteenth of the window (see throughput.rs).
        if self.sent + self.window / 16 > self.delivered + self.window {
            return;
        }
        while self.running && self.sent < self.delivered + self.window {
            let r = self.next_random();
            let topic = format!("{}/s/{}/{}", self.prefix, r % clients, (r >> 32) % self.per_client);
            let c = self.pubs[self.rr];
            self.rr = (self.rr + 1) % self.pubs.len();
            mqtt::publish(net.out(c), self.version, topic.as_bytes(), 0, false, 0, &self.payload);
            self.sent += 1;
        }
    }
}

impl Handler for Run {
    fn ready(&mut self, net: &mut Net, c: usize) {
        let conn = net.conn(c);
        let i = conn.index as usize;
        if conn.role == SUB {
            self.subs[i] = c;
            self.ready_subs += 1;
        } else {
            self.pubs[i] = c;
            self.ready_pubs += 1;
        }
    }

    fn packet(&mut self, net: &mut Net, c: usize, p: &Packet<'_>) {
        match p.kind {
            mqtt::SUBACK => {
                let i = net.conn(c).index as usize;
                match mqtt::parse_suback(self.version, p) {
                    Some((_, codes)) if codes.iter().all(|&x| x < 0x80) => self.granted += codes.len() as u64,
                    _ => net.error("SUBSCRIBE refused".into()),
                }
                self.outstanding[i] -= 1;
                self.subscribe_more(net, i);
            }
            mqtt::PUBLISH => self.delivered += 1,
            k => net.error(format!("unexpected packet type {k}")),
        }
    }

    fn tick(&mut self, net: &mut Net) {
        self.pump(net);
    }
}

pub fn run(a: &Args, common: &Common) -> Json {
    let clients = a.num("subscribers", 100);
    let total = a.num("subscriptions", 1_000_000);
    let per_client = total / clients;
    let total = per_client * clients;
    let publishers = a.num("publishers", 10) as usize;
    let duration = Duration::from_secs_f64(a.float("duration", 3.0));
    let warmup = Duration::from_secs_f64(a.float("warmup", 1.0));
    let timeout = Duration::from_secs_f64(a.float("timeout", 300.0));
    let pid = common.broker_pid;
    let mut net = Net::new(common).expect("epoll");
    let mut run = Run {
        version: common.version,
        prefix: common.prefix.clone(),
        per_client,
        batch: a.num("batch", 100),
        requested: vec![0; clients as usize],
        subs: vec![usize::MAX; clients as usize],
        outstanding: vec![0; clients as usize],
        granted: 0,
        pubs: vec![usize::MAX; publishers],
        ready_subs: 0,
        ready_pubs: 0,
        running: false,
        sent: 0,
        delivered: 0,
        window: a.num("window", 4096),
        rng: 0x9e37_79b9_7f4a_7c15,
        rr: 0,
        payload: vec![0x5a; common.payload],
    };
    let base = Json::new().str("scenario", "subscriptions").int("version", common.version as u64).int("subscriptions", total).int("subscribers", clients);
    let spec = |role: u32, index: u32| Spec {
        version: common.version,
        client_id: format!("{}-{}{index}", common.prefix, if role == SUB { "m" } else { "q" }).into_bytes(),
        keepalive: 600,
        role,
        index,
    };
    for i in 0..clients {
        net.open(spec(SUB, i as u32));
    }
    for i in 0..publishers {
        net.open(spec(PUB, i as u32));
    }
    let t = Instant::now();
    while (run.ready_subs < clients as usize || run.ready_pubs < publishers) && net.errors == 0 && t.elapsed() < Duration::from_secs(60) {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    if run.ready_subs < clients as usize || run.ready_pubs < publishers {
        return base.bool("ok", false).str("failure", "connections did not complete").int("errors", net.errors.max(1)).strs("errorSamples", &net.error_samples);
    }
    // Let the broker settle before the baseline reading.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(500) {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    let rss0 = rss_bytes(pid).unwrap_or(0);
    let sub_start = Instant::now();
    for i in 0..clients as usize {
        run.subscribe_more(&mut net, i);
    }
    while run.granted < total && net.errors == 0 && sub_start.elapsed() < timeout {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    let sub_seconds = sub_start.elapsed().as_secs_f64();
    if run.granted < total {
        return base.bool("ok", false).str("failure", "subscribing did not complete").int("granted", run.granted).num("seconds", sub_seconds).int("errors", net.errors.max(1)).strs("errorSamples", &net.error_samples);
    }
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(1) {
        net.turn(&mut run, Some(Duration::from_millis(10)));
    }
    let rss1 = rss_bytes(pid).unwrap_or(0);

    run.running = true;
    let t = Instant::now();
    while t.elapsed() < warmup && net.errors == 0 {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let d0 = run.delivered;
    let cpu = CpuWindow::start();
    let t = Instant::now();
    while t.elapsed() < duration && net.errors == 0 {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let seconds = t.elapsed().as_secs_f64();
    let d1 = run.delivered;
    let cpu = cpu.stop();
    run.running = false;
    let t = Instant::now();
    while run.delivered < run.sent && t.elapsed() < Duration::from_secs(5) {
        net.turn(&mut run, Some(Duration::from_millis(5)));
    }
    let loss = run.sent.saturating_sub(run.delivered);
    net.disconnect_all();
    base.bool("ok", loss == 0 && net.errors == 0 && d1 > d0)
        .num("rate", (d1 - d0) as f64 / seconds)
        .num("subscribeRate", total as f64 / sub_seconds)
        .num("subscribeSeconds", sub_seconds)
        .num("bytesPerSubscription", if pid > 0 { (rss1 as f64 - rss0 as f64) / total as f64 } else { f64::NAN })
        .int("rssBefore", rss0)
        .int("rssAfter", rss1)
        .int("sent", run.sent)
        .int("delivered", run.delivered)
        .int("loss", loss)
        .int("errors", net.errors)
        .strs("errorSamples", &net.error_samples)
        .obj("cpu", cpu)
}
