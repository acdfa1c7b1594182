//! Release-mode measurement of the topic router at 1 M subscriptions: heap bytes per
//! subscription, insert rate, match latency (p50/p99) on cache misses and hits.
//! Run: cargo run -p spindle-core --release --example trie_mem
//! Single-threaded; touches only its own Router.

use std::time::Instant;

use spindle_core::topic::*;

const SUBS: u32 = 1_000_000;
const SESSIONS: u32 = 100_000;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Leaf `i` of a 10 x 10 x 10 x 10 x 100 tree (1 M distinct 5-level topics).
fn levels(i: u32) -> [String; 5] {
    [
        format!("site{}", i % 10),
        format!("bld{}", (i / 10) % 10),
        format!("floor{}", (i / 100) % 10),
        format!("room{}", (i / 1000) % 10),
        format!("sensor{}", i / 10_000),
    ]
}

fn rss_kib() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn percentile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

fn main() {
    // 90% exact, 5% one '+' level, 5% "4 levels/#"; ~1 subscription per leaf; 10 per session.
    let filters: Vec<String> = (0..SUBS)
        .map(|n| {
            // spread consecutive n over the tree (multiplicative permutation mod 1 M)
            let i = ((n as u64 * 777_767) % SUBS as u64) as u32;
            let mut l = levels(i);
            match n % 20 {
                0 => {
                    l[(n / 20 % 5) as usize] = "+".into();
                    l.join("/")
                }
                1 => format!("{}/{}/{}/{}/#", l[0], l[1], l[2], l[3]),
                _ => l.join("/"),
            }
        })
        .collect();
    let rss0 = rss_kib();
    let cache: usize = std::env::var("CACHE").ok().and_then(|v| v.parse().ok()).unwrap_or(65_536);
    let r = Router::new(RouterConfig { cache_capacity: cache, share_strategy: ShareStrategy::RoundRobin });
    let t = Instant::now();
    for (n, f) in filters.iter().enumerate() {
        // 10 consecutive filters per session: no (session, filter) pair repeats.
        let session = n as u32 / (SUBS / SESSIONS);
        let sub = Subscription {
            session,
            worker: (session % 4) as u16,
            options: SubOptions::new(1, false, false, 0),
            subscription_id: 0,
        };
        r.subscribe(f, sub).unwrap();
    }
    let insert = t.elapsed();
    let rss1 = rss_kib();
    let subs = r.subscription_count();
    let heap = r.heap_bytes();
    println!("subscriptions        {subs}");
    println!("trie nodes           {}", r.node_count());
    println!("heap_bytes           {heap} ({:.1} B/sub)", heap as f64 / subs as f64);
    println!("RSS growth           {} KiB ({:.1} B/sub, includes allocator overhead)", rss1 - rss0, (rss1 - rss0) as f64 * 1024.0 / subs as f64);
    println!("insert               {:.2?} ({:.0} subs/s)", insert, subs as f64 / insert.as_secs_f64());

    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut out = MatchResult::default();
    let topics: Vec<String> = (0..200_000)
        .map(|k| {
            let i = (rng.next() % SUBS as u64) as u32;
            if k % 10 == 0 {
                format!("site{}/bld{}/nowhere/room1/x", i % 10, i % 7)
            } else {
                levels(i).join("/")
            }
        })
        .collect();
    // Misses: every topic seen once (each is looked up, walked, then inserted into the cache).
    let mut lat = Vec::with_capacity(topics.len());
    let mut deliveries = 0usize;
    let mut seen = std::collections::HashSet::new();
    for tpc in &topics {
        if !seen.insert(tpc.as_str()) {
            continue;
        }
        let t = Instant::now();
        r.match_topic(tpc, u32::MAX, 0, &mut out);
        lat.push(t.elapsed().as_nanos() as u64);
        deliveries += out.deliveries.len();
    }
    let n = lat.len();
    println!(
        "match miss           n={n} p50 {} ns  p99 {} ns  max {} ns  ({:.1} deliveries/match)",
        percentile(&mut lat, 0.5),
        percentile(&mut lat, 0.99),
        lat[n - 1],
        deliveries as f64 / n as f64
    );
    // Hits: a hot set that fits the cache.
    let hot: Vec<&String> = topics.iter().take(10_000).collect();
    for tpc in &hot {
        r.match_topic(tpc, u32::MAX, 0, &mut out);
    }
    let mut lat = Vec::with_capacity(100_000);
    for k in 0..100_000 {
        let tpc = hot[k % hot.len()];
        let t = Instant::now();
        r.match_topic(tpc, u32::MAX, 0, &mut out);
        lat.push(t.elapsed().as_nanos() as u64);
    }
    println!("match hit            p50 {} ns  p99 {} ns", percentile(&mut lat, 0.5), percentile(&mut lat, 0.99));
    println!("cache_len            {}", r.cache_len());

    let t = Instant::now();
    let mut removed = 0;
    for s in 0..SESSIONS / 10 {
        removed += r.remove_session(s);
    }
    println!("remove_session       {removed} subs of {} sessions in {:.2?}", SESSIONS / 10, t.elapsed());
}
