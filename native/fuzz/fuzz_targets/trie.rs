//! Fuzzes the router with arbitrary subscribe/unsubscribe/match sequences: nothing may panic, and
//! the cached router must always answer as the uncached one and the brute-force matcher.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spindle_core::topic::{topic_matches, MatchResult, Router, RouterConfig, ShareStrategy, SubOptions, Subscription};

const LEVELS: [&str; 6] = ["a", "b", "", "+", "#", "$s"];

fn text(bytes: &[u8]) -> String {
    bytes.iter().map(|b| LEVELS[*b as usize % LEVELS.len()]).collect::<Vec<_>>().join("/")
}

fuzz_target!(|data: &[u8]| {
    let cached = Router::new(RouterConfig { cache_capacity: 4, share_strategy: ShareStrategy::RoundRobin });
    let plain = Router::new(RouterConfig { cache_capacity: 0, share_strategy: ShareStrategy::RoundRobin });
    let mut subs: Vec<(String, u32)> = Vec::new();
    let (mut a, mut b) = (MatchResult::default(), MatchResult::default());
    for op in data.chunks(4) {
        if op.len() < 4 {
            break;
        }
        let session = (op[1] % 4) as u32;
        let s = text(&op[2..4]);
        match op[0] % 3 {
            0 => {
                let sub = Subscription { session, worker: 0, options: SubOptions::new(op[1] % 3, false, false, 0), subscription_id: 0 };
                let r1 = cached.subscribe(&s, sub);
                let r2 = plain.subscribe(&s, sub);
                assert_eq!(r1.is_ok(), r2.is_ok());
                if r1.is_ok() {
                    subs.retain(|(f, x)| !(f == &s && *x == session));
                    subs.push((s, session));
                }
            }
            1 => {
                assert_eq!(cached.unsubscribe(&s, session), plain.unsubscribe(&s, session));
                subs.retain(|(f, x)| !(f == &s && *x == session));
            }
            _ => {
                if s.contains('+') || s.contains('#') {
                    continue;
                }
                a.deliveries.clear();
                a.subscription_ids.clear();
                b.deliveries.clear();
                b.subscription_ids.clear();
                cached.match_topic(&s, u32::MAX, 0, &mut a);
                plain.match_topic(&s, u32::MAX, 0, &mut b);
                let mut x: Vec<u32> = a.deliveries.iter().map(|d| d.session).collect();
                let mut y: Vec<u32> = b.deliveries.iter().map(|d| d.session).collect();
                let mut z: Vec<u32> = subs.iter().filter(|(f, _)| topic_matches(f, &s)).map(|(_, x)| *x).collect();
                x.sort();
                y.sort();
                z.sort();
                z.dedup();
                assert_eq!(x, y);
                assert_eq!(x, z);
            }
        }
    }
});
