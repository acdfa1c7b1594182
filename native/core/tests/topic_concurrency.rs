//! 8 threads subscribing, unsubscribing, removing sessions and matching on one Router at once.

use spindle_core::topic::*;

fn sub(session: u32, qos: u8) -> Subscription {
    Subscription { session, worker: 0, options: SubOptions::new(qos, false, false, 0), subscription_id: 0 }
}

#[test]
fn eight_threads_on_one_router() {
    const THREADS: u32 = 8;
    let r = Router::new(RouterConfig { cache_capacity: 64, share_strategy: ShareStrategy::RoundRobin });
    for t in 0..THREADS {
        r.subscribe(&format!("stable/{t}"), sub(1000 + t, 1)).unwrap();
        r.subscribe(&format!("$share/g/stable/{t}"), sub(2000 + t, 1)).unwrap();
    }
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let r = &r;
            scope.spawn(move || {
                let mut out = MatchResult::default();
                let mut x = 0x9E37_79B9u64 * (t as u64 + 1);
                let filters = ["+/+", "stable/#", "#", "churn/+/x", "$share/h/+/+", "churn/a/x"];
                for i in 0..3000u32 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let session = t * 100 + (x % 10) as u32;
                    let f = filters[(x >> 8) as usize % filters.len()];
                    match x % 5 {
                        0 | 1 => {
                            r.subscribe(f, sub(session, 0)).unwrap();
                        }
                        2 => {
                            r.unsubscribe(f, session);
                        }
                        3 if i % 7 == 0 => {
                            r.remove_session(session);
                        }
                        _ => {
                            let topic = format!("stable/{}", (x >> 20) % THREADS as u64);
                            let want = 1000 + ((x >> 20) % THREADS as u64) as u32;
                            r.match_topic(&topic, u32::MAX, 0, &mut out);
                            assert!(out.deliveries.iter().any(|d| d.session == want && !d.shared));
                            let g: Vec<_> = out.deliveries.iter().filter(|d| d.session >= 2000).collect();
                            assert_eq!(g.len(), 1);
                            assert!(g[0].shared);
                            r.match_topic(&format!("churn/{i}/x"), u32::MAX, 0, &mut out);
                        }
                    }
                }
                for s in 0..10 {
                    r.remove_session(t * 100 + s);
                }
            });
        }
    });
    assert_eq!(r.subscription_count(), 2 * THREADS as usize);
    // Final state agrees with a fresh, cache-less router holding the same subscriptions.
    let fresh = Router::new(RouterConfig { cache_capacity: 0, share_strategy: ShareStrategy::RoundRobin });
    for t in 0..THREADS {
        fresh.subscribe(&format!("stable/{t}"), sub(1000 + t, 1)).unwrap();
        fresh.subscribe(&format!("$share/g/stable/{t}"), sub(2000 + t, 1)).unwrap();
    }
    let (mut a, mut b) = (MatchResult::default(), MatchResult::default());
    for topic in ["stable/0", "stable/7", "churn/1/x", "churn/a/x", "x/y", "stable"] {
        r.match_topic(topic, u32::MAX, 0, &mut a);
        fresh.match_topic(topic, u32::MAX, 0, &mut b);
        let key = |m: &MatchResult| m.deliveries.iter().map(|d| (d.session, d.shared)).collect::<Vec<_>>();
        assert_eq!(key(&a), key(&b), "{topic}");
    }
    assert_eq!(r.node_count(), fresh.node_count());
}
