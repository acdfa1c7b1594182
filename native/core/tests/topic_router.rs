//! Router behaviour: spec wildcard examples through the trie (cache on and off), overlapping
//! subscriptions, No Local, replace, unsubscribe, remove_session, validation errors.

use spindle_core::topic::*;

fn sub(session: u32, qos: u8, id: u32) -> Subscription {
    Subscription { session, worker: (session % 4) as u16, options: SubOptions::new(qos, false, false, 0), subscription_id: id }
}

fn routers() -> Vec<Router> {
    [0, 1024]
        .into_iter()
        .map(|c| Router::new(RouterConfig { cache_capacity: c, share_strategy: ShareStrategy::RoundRobin }))
        .collect()
}

fn sessions(r: &Router, topic: &str) -> Vec<u32> {
    let mut out = MatchResult::default();
    r.match_topic(topic, u32::MAX, 0, &mut out);
    let mut s: Vec<u32> = out.deliveries.iter().map(|d| d.session).collect();
    s.sort();
    s
}

#[test]
fn spec_wildcard_examples() {
    // (filter, topic, matches) from MQTT 5 §4.7.
    let cases = [
        ("sport/tennis/player1/#", "sport/tennis/player1", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/ranking", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true),
        ("sport/#", "sport", true),
        ("sport/tennis/+", "sport/tennis/player1", true),
        ("sport/tennis/+", "sport/tennis/player1/ranking", false),
        ("sport/+", "sport", false),
        ("sport/+", "sport/", true),
        ("+", "finance", true),
        ("+", "/finance", false),
        ("+/+", "/finance", true),
        ("/+", "/finance", true),
        ("#", "$SYS/monitor/Clients", false),
        ("+/monitor/Clients", "$SYS/monitor/Clients", false),
        ("$SYS/#", "$SYS/monitor/Clients", true),
        ("$SYS/monitor/+", "$SYS/monitor/Clients", true),
        ("a//b", "a//b", true),
        ("a/+/b", "a//b", true),
        ("a/#", "a//b", true),
        ("a/b", "a//b", false),
        ("+/+/+", "a//b", true),
    ];
    for r in routers() {
        for (i, (f, _, _)) in cases.iter().enumerate() {
            r.subscribe(f, sub(i as u32, 0, 0)).unwrap();
        }
        // twice: the second round is served from the cache when it is on
        for _ in 0..2 {
            for (i, (f, t, m)) in cases.iter().enumerate() {
                assert_eq!(topic_matches(f, t), *m, "{f} vs {t}");
                assert_eq!(sessions(&r, t).contains(&(i as u32)), *m, "router: {f} vs {t}");
            }
        }
    }
}

#[test]
fn invalid_filters_rejected() {
    let r = Router::new(RouterConfig::default());
    for bad in ["", "a/#/b", "a+", "sport/tennis#", "$share//a", "$share/g", "$share/g+/a", "$queue/", "a\0"] {
        let e = r.subscribe(bad, sub(1, 0, 0)).unwrap_err();
        assert_eq!(e.reason, 0x8F, "{bad}: {e}");
    }
    let e = r.subscribe("a/#/b", sub(1, 0, 0)).unwrap_err();
    assert_eq!(e.code, "INVALID_WILDCARD");
    assert_eq!(r.subscribe("", sub(1, 0, 0)).unwrap_err().code, "EMPTY_TOPIC");
    assert_eq!(r.subscribe("$share/a+b/x", sub(1, 0, 0)).unwrap_err().code, "INVALID_SHARE_GROUP");
    let nl = Subscription { options: SubOptions::new(1, true, false, 0), ..sub(1, 0, 0) };
    assert_eq!(r.subscribe("$share/g/x", nl).unwrap_err().code, "SHARED_NO_LOCAL");
    assert_eq!(r.subscription_count(), 0);
    assert!(!r.unsubscribe("a/#/b", 1));
}

#[test]
fn overlapping_subscriptions_one_delivery_per_session() {
    for r in routers() {
        r.subscribe("a/b", sub(1, 0, 10)).unwrap();
        r.subscribe("a/+", sub(1, 2, 11)).unwrap();
        r.subscribe("#", sub(1, 1, 0)).unwrap();
        r.subscribe("a/#", Subscription { options: SubOptions::new(0, false, true, 0), ..sub(1, 0, 10) }).unwrap();
        r.subscribe("a/b", sub(2, 1, 0)).unwrap();
        r.subscribe("+/b", sub(3, 0, 7)).unwrap();
        let mut out = MatchResult::default();
        for _ in 0..2 {
            r.match_topic("a/b", u32::MAX, 0, &mut out);
            assert_eq!(out.deliveries.len(), 3);
            let d1 = out.deliveries.iter().find(|d| d.session == 1).unwrap();
            assert_eq!(d1.qos, 2);
            assert!(d1.retain_as_published);
            assert!(!d1.shared);
            assert_eq!(d1.worker, 1);
            assert_eq!(out.sub_ids(d1), &[10, 11]); // id 10 given twice is sent once
            let d2 = out.deliveries.iter().find(|d| d.session == 2).unwrap();
            assert_eq!((d2.qos, d2.retain_as_published, out.sub_ids(d2).len()), (1, false, 0));
            let d3 = out.deliveries.iter().find(|d| d.session == 3).unwrap();
            assert_eq!(out.sub_ids(d3), &[7]);
        }
        r.match_topic("a/c", u32::MAX, 0, &mut out);
        assert_eq!(out.deliveries.len(), 1);
        assert_eq!(out.sub_ids(&out.deliveries[0]), &[10, 11]); // a/+, a/# and #
        r.match_topic("nothing/here/at/all", u32::MAX, 0, &mut out);
        assert_eq!(out.deliveries.len(), 1); // "#"
    }
}

#[test]
fn no_local() {
    for r in routers() {
        let nl = |s, id| Subscription { options: SubOptions::new(1, true, false, 0), ..sub(s, 1, id) };
        r.subscribe("chat/+", nl(1, 1)).unwrap();
        r.subscribe("chat/+", sub(2, 1, 0)).unwrap();
        // publisher 1: its own no_local subscription is skipped [MQTT-3.8.3-3]
        assert_eq!(sessions_from(&r, "chat/x", 1), vec![2]);
        assert_eq!(sessions_from(&r, "chat/x", 2), vec![1, 2]);
        // another, non-no_local subscription of the same session still delivers
        r.subscribe("chat/#", sub(1, 0, 5)).unwrap();
        let mut out = MatchResult::default();
        r.match_topic("chat/x", 1, 0, &mut out);
        let d = out.deliveries.iter().find(|d| d.session == 1).unwrap();
        assert_eq!((d.qos, out.sub_ids(d)), (0, &[5][..]));
        r.match_topic("chat/x", 2, 0, &mut out);
        let d = out.deliveries.iter().find(|d| d.session == 1).unwrap();
        assert_eq!((d.qos, out.sub_ids(d)), (1, &[1, 5][..]));
    }
}

fn sessions_from(r: &Router, topic: &str, publisher: u32) -> Vec<u32> {
    let mut out = MatchResult::default();
    r.match_topic(topic, publisher, 0, &mut out);
    let mut s: Vec<u32> = out.deliveries.iter().map(|d| d.session).collect();
    s.sort();
    s
}

#[test]
fn replace_unsubscribe_remove_session() {
    for r in routers() {
        assert_eq!(r.subscribe("a/+", sub(1, 0, 1)), Ok(false));
        assert_eq!(sessions(&r, "a/x"), vec![1]);
        assert_eq!(r.subscribe("a/+", sub(1, 2, 9)), Ok(true)); // [MQTT-3.8.4-3]
        assert_eq!(r.subscription_count(), 1);
        let mut out = MatchResult::default();
        r.match_topic("a/x", u32::MAX, 0, &mut out);
        assert_eq!((out.deliveries[0].qos, out.sub_ids(&out.deliveries[0])), (2, &[9][..]));

        r.subscribe("a/x", sub(2, 0, 0)).unwrap();
        r.subscribe("#", sub(2, 0, 0)).unwrap();
        r.subscribe("$share/g/a/x", sub(2, 0, 0)).unwrap();
        r.subscribe("$share/g/a/x", sub(3, 0, 0)).unwrap();
        assert_eq!(r.subscription_count(), 5);
        assert!(!r.unsubscribe("a/y", 1));
        assert!(!r.unsubscribe("a/+", 2));
        assert!(r.unsubscribe("a/+", 1));
        assert!(!r.unsubscribe("a/+", 1));
        assert_eq!(r.subscription_count(), 4);
        r.match_topic("a/x", u32::MAX, 0, &mut out);
        assert_eq!(out.deliveries.iter().filter(|d| !d.shared).count(), 1);
        assert_eq!(out.deliveries.iter().filter(|d| d.shared).count(), 1);

        assert_eq!(r.remove_session(2), 3);
        assert_eq!(r.remove_session(2), 0);
        assert_eq!(r.subscription_count(), 1);
        for _ in 0..3 {
            r.match_topic("a/x", u32::MAX, 0, &mut out);
            assert_eq!(out.deliveries.len(), 1);
            assert_eq!((out.deliveries[0].session, out.deliveries[0].shared), (3, true));
        }
        assert!(r.unsubscribe("$share/g/a/x", 3));
        assert_eq!(r.subscription_count(), 0);
        assert_eq!(sessions(&r, "a/x"), Vec::<u32>::new());
        assert_eq!(r.node_count(), 1, "empty nodes are pruned");
    }
}

#[test]
fn cache_is_bounded_and_updated_not_flushed() {
    let r = Router::new(RouterConfig { cache_capacity: 64, share_strategy: ShareStrategy::RoundRobin });
    r.subscribe("t/+", sub(1, 0, 0)).unwrap();
    for i in 0..1000 {
        assert_eq!(sessions(&r, &format!("t/{i}")), vec![1]);
    }
    assert!(r.cache_len() <= 64 && r.cache_len() > 0, "{}", r.cache_len());
    let before = r.cache_len();
    r.subscribe("t/#", sub(2, 0, 0)).unwrap();
    r.subscribe("t/999", sub(3, 0, 0)).unwrap();
    assert_eq!(r.cache_len(), before);
    assert_eq!(sessions(&r, "t/999"), vec![1, 2, 3]);
    r.remove_session(1);
    assert_eq!(r.cache_len(), before);
    assert_eq!(sessions(&r, "t/999"), vec![2, 3]);
    assert_eq!(sessions(&r, "t/5"), vec![2]);
}

#[test]
fn router_is_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Router>();
    assert_send_sync::<RetainedIndex>();
}

#[test]
fn memory_is_given_back_after_mass_unsubscribe() {
    for r in routers() {
        let empty = r.heap_bytes();
        // Sessions with one and with several subscriptions, literal levels shared between filters.
        for s in 0..6000u32 {
            let f = format!("t{}/u{}/v{}", s % 7, s % 300, s);
            r.subscribe(&f, sub(s / 2, 1, 0)).unwrap();
            r.subscribe(&format!("t{}/+/v{}", s % 7, s), sub(s / 2, 0, 0)).unwrap();
        }
        assert_eq!(sessions(&r, "t3/u10/v10"), vec![5]);
        let peak = r.heap_bytes();
        assert!(peak > empty + 100_000);
        for s in 0..3000u32 {
            assert_eq!(r.remove_session(s), 4);
        }
        assert_eq!(r.subscription_count(), 0);
        assert_eq!(r.node_count(), 1);
        assert!(sessions(&r, "t3/u10/v10").is_empty());
        // Node slots (~14 000 here) stay allocated for reuse; the edge and level tables and the
        // session index shrink, which gives back more than half of what subscribing took.
        let left = r.heap_bytes() - empty;
        assert!(left < 14_500 * 48 && left < (peak - empty) / 2, "{left} of {} bytes left", peak - empty);
        r.subscribe("t3/u10/v10", sub(9, 0, 0)).unwrap();
        assert_eq!(sessions(&r, "t3/u10/v10"), vec![9]);
    }
}
