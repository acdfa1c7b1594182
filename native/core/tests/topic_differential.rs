//! Randomized differential test: Router with a tiny cache (so eviction happens), Router without a
//! cache and a brute-force reference built on `topic_matches` must agree on every match.

use std::collections::BTreeMap;

use spindle_core::topic::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const LEVELS: &[&str] = &["a", "b", "c", "", "$s"];

fn random_topic(rng: &mut Rng) -> String {
    let n = 1 + rng.below(4) as usize;
    (0..n).map(|_| rng.pick(LEVELS)).collect::<Vec<_>>().join("/")
}

fn random_filter(rng: &mut Rng) -> String {
    let n = 1 + rng.below(4) as usize;
    let mut levels: Vec<&str> = (0..n)
        .map(|_| match rng.below(10) {
            0..=2 => "+",
            _ => rng.pick(LEVELS),
        })
        .collect();
    if rng.below(4) == 0 {
        levels.push("#");
    }
    let plain = levels.join("/");
    match rng.below(8) {
        0 => format!("$share/{}/{plain}", rng.pick(&["g1", "g2"])),
        1 => format!("$queue/{plain}"),
        _ => plain,
    }
}

/// Normalized delivery: (shared, session, worker, qos, rap, sub ids).
type Norm = (bool, u32, u16, u8, bool, Vec<u32>);

fn normalize(out: &MatchResult) -> Vec<Norm> {
    let mut v: Vec<Norm> = out
        .deliveries
        .iter()
        .map(|d| (d.shared, d.session, d.worker, d.qos, d.retain_as_published, out.sub_ids(d).to_vec()))
        .collect();
    v.sort();
    v
}

/// Brute force: (session, full filter) -> subscription.
#[derive(Default)]
struct Reference {
    subs: BTreeMap<(u32, String), Subscription>,
}

impl Reference {
    fn matches(&self, topic: &str, publisher: u32, hash: u32) -> Vec<Norm> {
        let mut plain: BTreeMap<u32, Vec<Subscription>> = BTreeMap::new();
        let mut groups: BTreeMap<(String, String), Vec<Subscription>> = BTreeMap::new();
        for ((_, filter), s) in &self.subs {
            match parse_shared(filter).unwrap() {
                Some((g, f)) => {
                    if topic_matches(f, topic) {
                        groups.entry((g.to_string(), f.to_string())).or_default().push(*s);
                    }
                }
                None => {
                    if topic_matches(filter, topic) && !(s.session == publisher && s.options.no_local()) {
                        plain.entry(s.session).or_default().push(*s);
                    }
                }
            }
        }
        let mut v = Vec::new();
        for (session, subs) in plain {
            let mut ids: Vec<u32> = subs.iter().map(|s| s.subscription_id).filter(|&i| i != 0).collect();
            ids.sort();
            ids.dedup();
            let qos = subs.iter().map(|s| s.options.qos()).max().unwrap();
            let rap = subs.iter().any(|s| s.options.retain_as_published());
            v.push((false, session, subs[0].worker, qos, rap, ids));
        }
        for (_, mut members) in groups {
            members.sort_by_key(|m| m.session);
            let m = members[(hash % members.len() as u32) as usize];
            let ids = if m.subscription_id == 0 { vec![] } else { vec![m.subscription_id] };
            v.push((true, m.session, m.worker, m.options.qos(), m.options.retain_as_published(), ids));
        }
        v.sort();
        v
    }
}

fn run(seed: u64, ops: usize, strategy: ShareStrategy) {
    let mut rng = Rng(seed);
    let cached = Router::new(RouterConfig { cache_capacity: 8, share_strategy: strategy });
    let plain = Router::new(RouterConfig { cache_capacity: 0, share_strategy: strategy });
    let mut reference = Reference::default();
    let mut known: Vec<String> = Vec::new();
    let (mut a, mut b) = (MatchResult::default(), MatchResult::default());
    let (mut non_empty, mut shared_seen, mut multi_ids) = (0, 0, 0);
    for step in 0..ops {
        match rng.below(20) {
            0..=7 => {
                let filter = random_filter(&mut rng);
                let session = rng.below(8) as u32;
                let shared = filter.starts_with("$share/") || filter.starts_with("$queue/");
                let no_local = !shared && rng.below(3) == 0;
                let s = Subscription {
                    session,
                    worker: (session % 3) as u16,
                    options: SubOptions::new(rng.below(3) as u8, no_local, rng.below(2) == 0, 0),
                    subscription_id: rng.below(4) as u32,
                };
                let r1 = cached.subscribe(&filter, s);
                let r2 = plain.subscribe(&filter, s);
                assert_eq!(r1, r2);
                if r1.is_err() {
                    // e.g. "" or "$queue/": rejected by both, nothing stored
                    let ok = match parse_shared(&filter) {
                        Err(_) => true,
                        Ok(inner) => inner.map_or(filter.as_str(), |(_, f)| f).is_empty(),
                    };
                    assert!(ok, "step {step}: {filter} {r1:?}");
                    continue;
                }
                let replaced = reference.subs.insert((session, filter.clone()), s).is_some();
                assert_eq!(r1, Ok(replaced), "step {step}: {filter}");
                known.push(filter);
            }
            8..=10 => {
                let filter = if !known.is_empty() && rng.below(4) != 0 {
                    known[rng.below(known.len() as u64) as usize].clone()
                } else {
                    random_filter(&mut rng)
                };
                let session = rng.below(8) as u32;
                let expected = reference.subs.remove(&(session, filter.clone())).is_some();
                assert_eq!(cached.unsubscribe(&filter, session), expected, "step {step}: {filter}");
                assert_eq!(plain.unsubscribe(&filter, session), expected);
            }
            11 => {
                let session = rng.below(8) as u32;
                let before = reference.subs.len();
                reference.subs.retain(|(s, _), _| *s != session);
                let n = before - reference.subs.len();
                assert_eq!(cached.remove_session(session), n);
                assert_eq!(plain.remove_session(session), n);
            }
            _ => {
                let topic = random_topic(&mut rng);
                let publisher = if rng.below(2) == 0 { rng.below(8) as u32 } else { u32::MAX };
                let hash = rng.next() as u32;
                cached.match_topic(&topic, publisher, hash, &mut a);
                plain.match_topic(&topic, publisher, hash, &mut b);
                assert_eq!(normalize(&a), normalize(&b), "step {step}: {topic}");
                assert_eq!(a.deliveries, b.deliveries, "identical order too");
                non_empty += !a.deliveries.is_empty() as usize;
                shared_seen += a.deliveries.iter().any(|d| d.shared) as usize;
                multi_ids += a.deliveries.iter().any(|d| d.sub_ids_len > 1) as usize;
                if strategy == ShareStrategy::HashClientId {
                    assert_eq!(normalize(&a), reference.matches(&topic, publisher, hash), "step {step}: {topic}");
                }
            }
        }
        assert_eq!(cached.subscription_count(), reference.subs.len());
        assert_eq!(plain.subscription_count(), reference.subs.len());
        assert!(cached.cache_len() <= 8);
    }
    // The random workload really exercises deliveries, shared groups and id merging.
    assert!(non_empty > 300 && shared_seen > 50 && multi_ids > 20, "{non_empty} {shared_seen} {multi_ids}");
    // Everything unsubscribed: the trie shrinks back to its root.
    for s in 0..8 {
        cached.remove_session(s);
        plain.remove_session(s);
    }
    assert_eq!(cached.node_count(), 1);
    assert_eq!(plain.node_count(), 1);
}

#[test]
fn differential_hash_strategy_vs_reference() {
    for seed in 1..=40u64 {
        run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, 3000, ShareStrategy::HashClientId);
    }
}

#[test]
fn differential_round_robin_cache_on_off() {
    for seed in 1..=20u64 {
        run(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1, 3000, ShareStrategy::RoundRobin);
    }
}
