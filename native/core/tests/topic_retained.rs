//! RetainedIndex: set / replace / remove / get and filter matching with '+', '#' and '$' topics.

use spindle_core::topic::RetainedIndex;

fn matched(idx: &RetainedIndex, filter: &str) -> Vec<u64> {
    let mut out = Vec::new();
    idx.match_filter(filter, &mut out);
    out.sort();
    out
}

#[test]
fn set_replace_remove_get() {
    let idx = RetainedIndex::new();
    assert!(idx.is_empty());
    assert_eq!(idx.set("a/b", 1), None);
    assert_eq!(idx.set("a/b", 2), Some(1));
    assert_eq!(idx.set("a", 3), None);
    assert_eq!(idx.len(), 2);
    assert_eq!(idx.get("a/b"), Some(2));
    assert_eq!(idx.get("a/c"), None);
    assert_eq!(idx.remove("a/c"), None);
    assert_eq!(idx.remove("a"), Some(3));
    assert_eq!(idx.remove("a"), None);
    assert_eq!(idx.get("a/b"), Some(2));
    assert_eq!(idx.remove("a/b"), Some(2));
    assert!(idx.is_empty());
    assert_eq!(matched(&idx, "#"), Vec::<u64>::new());
}

#[test]
fn match_filters() {
    let idx = RetainedIndex::new();
    let topics = [
        ("sport", 1),
        ("sport/tennis", 2),
        ("sport/tennis/player1", 3),
        ("sport/tennis/player1/ranking", 4),
        ("sport/golf/player1", 5),
        ("/finance", 6),
        ("finance", 7),
        ("$SYS/monitor/Clients", 8),
        ("a//b", 9),
        ("$SYS", 10),
    ];
    for (t, v) in topics {
        idx.set(t, v);
    }
    assert_eq!(matched(&idx, "sport/tennis/player1/#"), vec![3, 4]);
    assert_eq!(matched(&idx, "sport/#"), vec![1, 2, 3, 4, 5]);
    assert_eq!(matched(&idx, "sport/+/player1"), vec![3, 5]);
    assert_eq!(matched(&idx, "sport/+"), vec![2]);
    assert_eq!(matched(&idx, "+"), vec![1, 7]); // not "$SYS" [MQTT-4.7.2-1]
    assert_eq!(matched(&idx, "+/+"), vec![2, 6]);
    assert_eq!(matched(&idx, "/+"), vec![6]);
    assert_eq!(matched(&idx, "#"), vec![1, 2, 3, 4, 5, 6, 7, 9]);
    assert_eq!(matched(&idx, "+/monitor/Clients"), Vec::<u64>::new());
    assert_eq!(matched(&idx, "$SYS/#"), vec![8, 10]);
    assert_eq!(matched(&idx, "$SYS/monitor/+"), vec![8]);
    assert_eq!(matched(&idx, "a/+/b"), vec![9]);
    assert_eq!(matched(&idx, "a//b"), vec![9]);
    assert_eq!(matched(&idx, "a/#/b"), Vec::<u64>::new()); // invalid filter
    for f in ["sport/#", "+/+", "#", "$SYS/#", "a/+/b"] {
        let brute: Vec<u64> = {
            let mut v: Vec<u64> =
                topics.iter().filter(|(t, _)| spindle_core::topic::topic_matches(f, t)).map(|(_, v)| *v).collect();
            v.sort();
            v
        };
        assert_eq!(matched(&idx, f), brute, "{f}");
    }
    idx.remove("sport/tennis/player1/ranking");
    idx.remove("sport/tennis");
    assert_eq!(matched(&idx, "sport/#"), vec![1, 3, 5]);
    assert_eq!(idx.len(), 8);
}

#[test]
fn concurrent_set_and_match() {
    let idx = RetainedIndex::new();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let idx = &idx;
            s.spawn(move || {
                for i in 0..500u64 {
                    idx.set(&format!("r/{t}/{i}"), t * 1000 + i);
                    let mut out = Vec::new();
                    idx.match_filter(&format!("r/{t}/+"), &mut out);
                    assert_eq!(out.len() as u64, i + 1);
                }
            });
        }
    });
    assert_eq!(idx.len(), 2000);
}
