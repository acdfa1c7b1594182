//! Pure-Rust twin of bench/trie.ts: the same 1 M filters and 200 000 topics (same xorshift32
//! stream, same mix: 70 % exact, 20 % one '+', 10 % '#' after 2-4 levels; one session per
//! subscription), the same cache-off router, without N-API. For iterating on the trie: prints
//! insert rate, heap and RSS bytes per subscription, match p50/p99 and deliveries per match.
//! Run: cargo run -p spindle-core --release --example trie_bench [-- <subscriptions>]
//! Single-threaded; touches only its own Router.

use std::time::Instant;

use spindle_core::topic::*;

const MATCHES: usize = 200_000;
const FANOUT: [u32; 5] = [20, 50, 50, 50, 50];

/// test/helpers/random.ts `Rng`: xorshift32, `int(n)` = next % n, `bool()` = next / 2^32 < 0.5.
struct Rng(u32);
impl Rng {
    fn new(seed: u32) -> Rng {
        Rng(if seed == 0 { 0x9e37_79b9 } else { seed })
    }
    fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
    fn int(&mut self, n: u32) -> u32 {
        self.next() % n
    }
    fn bool(&mut self) -> bool {
        self.next() < 1 << 31
    }
}

fn topic_at(rng: &mut Rng) -> Vec<String> {
    FANOUT.iter().enumerate().map(|(level, &n)| format!("l{level}-{}", rng.int(n))).collect()
}

fn filters(count: usize) -> Vec<String> {
    let mut rng = Rng::new(1);
    (0..count)
        .map(|_| {
            let mut levels = topic_at(&mut rng);
            let kind = rng.int(10);
            if kind < 7 {
                levels.join("/")
            } else if kind < 9 {
                levels[rng.int(5) as usize] = "+".into();
                levels.join("/")
            } else {
                let n = 2 + rng.int(3) as usize;
                format!("{}/#", levels[..n].join("/"))
            }
        })
        .collect()
}

fn topics(count: usize, subs: &[String]) -> Vec<String> {
    let mut rng = Rng::new(2);
    (0..count)
        .map(|_| {
            if rng.bool() {
                let f: Vec<&str> = subs[rng.int(subs.len() as u32) as usize].split('/').collect();
                let t = topic_at(&mut rng);
                let mut out: Vec<&str> =
                    f.iter().enumerate().filter(|(_, l)| **l != "#").map(|(k, l)| if *l == "+" { t[k].as_str() } else { l }).collect();
                if f.contains(&"#") {
                    out.extend(t[f.len() - 1..].iter().map(String::as_str));
                }
                out.join("/")
            } else {
                topic_at(&mut rng).join("/")
            }
        })
        .collect()
}

fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .map_or(0, |kib: usize| kib * 1024)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() as f64) * p) as usize]
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let subs = filters(count);
    let probe = topics(MATCHES, &subs);
    let rss0 = rss_bytes();
    let r = Router::new(RouterConfig { cache_capacity: 0, share_strategy: ShareStrategy::RoundRobin });
    let t = Instant::now();
    for (i, f) in subs.iter().enumerate() {
        let sub = Subscription { session: i as u32 + 1, worker: 0, options: SubOptions(0), subscription_id: 0 };
        r.subscribe(f, sub).unwrap();
    }
    let insert = t.elapsed().as_secs_f64();
    let rss = rss_bytes() - rss0;
    let heap = r.heap_bytes();
    println!("subscriptions   {}  trie nodes {}", r.subscription_count(), r.node_count());
    println!("insert          {:.0} subs/s", count as f64 / insert);
    println!("bytes/sub       RSS {:.1}  heap_bytes {:.1}", rss as f64 / count as f64, heap as f64 / count as f64);

    let mut out = MatchResult::default();
    for t in &probe[..20_000] {
        r.match_topic(t, u32::MAX, 0, &mut out);
    }
    let clock = {
        let mut e: Vec<u64> = (0..20_000)
            .map(|_| {
                let s = Instant::now();
                s.elapsed().as_nanos() as u64
            })
            .collect();
        e.sort_unstable();
        e[e.len() / 2]
    };
    let mut lat = Vec::with_capacity(MATCHES);
    let mut deliveries = 0usize;
    let all = Instant::now();
    for t in &probe {
        let s = Instant::now();
        r.match_topic(t, u32::MAX, 0, &mut out);
        lat.push((s.elapsed().as_nanos() as u64).saturating_sub(clock));
        deliveries += out.deliveries.len();
    }
    let all = all.elapsed().as_secs_f64();
    // ROUNDS=n repeats the untimed match loop n more times, so a profiler sees mostly matching.
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    for _ in 0..rounds {
        for t in &probe {
            r.match_topic(t, u32::MAX, 0, &mut out);
        }
    }
    lat.sort_unstable();
    println!(
        "match           p50 {} ns  p99 {} ns  p99.9 {} ns  mean {:.0} ns  ({deliveries} deliveries, {:.1}/match)",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        percentile(&lat, 0.999),
        all * 1e9 / MATCHES as f64,
        deliveries as f64 / MATCHES as f64
    );
}
