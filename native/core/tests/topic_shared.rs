//! Shared subscriptions [MQTT-4.8.2]: strategies, one delivery per group, $queue, members leaving.

use spindle_core::topic::*;

fn sub(session: u32, id: u32) -> Subscription {
    Subscription { session, worker: 0, options: SubOptions::new(1, false, false, 0), subscription_id: id }
}

fn router(strategy: ShareStrategy, cache: usize) -> Router {
    Router::new(RouterConfig { cache_capacity: cache, share_strategy: strategy })
}

fn shared_picks(r: &Router, topic: &str, hash: u32) -> Vec<u32> {
    let mut out = MatchResult::default();
    r.match_topic(topic, u32::MAX, hash, &mut out);
    out.deliveries.iter().filter(|d| d.shared).map(|d| d.session).collect()
}

#[test]
fn round_robin_cycles_through_members() {
    for cache in [0, 16] {
        let r = router(ShareStrategy::RoundRobin, cache);
        for s in [30, 10, 20] {
            r.subscribe("$share/g/jobs/+", sub(s, s)).unwrap();
        }
        let picks: Vec<u32> = (0..6).flat_map(|_| shared_picks(&r, "jobs/x", 0)).collect();
        assert_eq!(picks, vec![10, 20, 30, 10, 20, 30]); // members ordered by session
        let mut out = MatchResult::default();
        r.match_topic("jobs/x", u32::MAX, 0, &mut out);
        assert_eq!(out.deliveries.len(), 1);
        let d = out.deliveries[0];
        assert!(d.shared);
        assert_eq!(out.sub_ids(&d), &[d.session]);
    }
}

#[test]
fn hash_is_stable_per_publisher() {
    let r = router(ShareStrategy::HashClientId, 16);
    for s in 1..=5 {
        r.subscribe("$share/g/#", sub(s, 0)).unwrap();
    }
    for h in [0u32, 7, 12345, u32::MAX] {
        let first = shared_picks(&r, "a/b", h);
        assert_eq!(first.len(), 1);
        for _ in 0..10 {
            assert_eq!(shared_picks(&r, "a/b", h), first);
            assert_eq!(shared_picks(&r, "c", h), first);
        }
    }
    let spread: std::collections::HashSet<u32> = (0..100).flat_map(|h| shared_picks(&r, "a", h)).collect();
    assert_eq!(spread.len(), 5);
}

#[test]
fn random_picks_only_members() {
    let r = router(ShareStrategy::Random, 0);
    for s in [4, 8, 15] {
        r.subscribe("$share/g/r", sub(s, 0)).unwrap();
    }
    r.subscribe("r", sub(99, 0)).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..300 {
        let p = shared_picks(&r, "r", 0);
        assert_eq!(p.len(), 1);
        assert!([4, 8, 15].contains(&p[0]));
        seen.insert(p[0]);
    }
    assert_eq!(seen.len(), 3);
}

#[test]
fn one_delivery_per_group_queue_and_two_groups() {
    for cache in [0, 16] {
        let r = router(ShareStrategy::RoundRobin, cache);
        r.subscribe("$share/a/t/+", sub(1, 0)).unwrap();
        r.subscribe("$share/a/t/+", sub(2, 0)).unwrap();
        r.subscribe("$share/b/t/+", sub(1, 0)).unwrap(); // session 1 in two groups
        r.subscribe("$queue/t/#", sub(3, 0)).unwrap();
        r.subscribe("$share/DEFAULT/t/#", sub(4, 0)).unwrap(); // same group as $queue
        r.subscribe("$share/a/t/#", sub(5, 0)).unwrap(); // same name, other filter: other group
        r.subscribe("t/+", sub(1, 0)).unwrap(); // plain sub of a shared member
        assert_eq!(r.subscription_count(), 7);
        let mut out = MatchResult::default();
        for _ in 0..4 {
            r.match_topic("t/x", u32::MAX, 0, &mut out);
            let shared: Vec<&Delivery> = out.deliveries.iter().filter(|d| d.shared).collect();
            assert_eq!(shared.len(), 4, "{:?}", out.deliveries); // a@t/+, b@t/+, DEFAULT@t/#, a@t/#
            assert_eq!(out.deliveries.iter().filter(|d| !d.shared).count(), 1);
        }
        // $queue unsubscribe addresses the DEFAULT group
        assert!(r.unsubscribe("$queue/t/#", 4));
        assert!(!r.unsubscribe("$share/a/t/#", 3));
        let picks: Vec<u32> = (0..4).flat_map(|_| shared_picks(&r, "t/y/z", 0)).collect();
        assert!(picks.iter().all(|s| [3, 5].contains(s)), "{picks:?}");
        assert_eq!(picks.len(), 8);
        // a member leaving (session end) removes it from every group
        assert_eq!(r.remove_session(1), 3);
        for _ in 0..4 {
            r.match_topic("t/x", u32::MAX, 0, &mut out);
            let s: Vec<u32> = out.deliveries.iter().map(|d| d.session).collect();
            assert!(s.contains(&2) && !s.contains(&1), "{s:?}");
            assert_eq!(out.deliveries.len(), 3);
        }
        assert!(r.unsubscribe("$share/a/t/+", 2));
        r.match_topic("t/x", u32::MAX, 0, &mut out);
        assert_eq!(out.deliveries.len(), 2);
    }
}
