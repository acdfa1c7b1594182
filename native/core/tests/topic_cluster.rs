//! The routing core in a cluster: shared subscriptions count as `$share/<group>/<filter>` interest,
//! and a message from another node reaches only what its scope names (plain subscribers if told,
//! one local member of each named group, never a node handle).

use spindle_core::topic::*;

const NODE_B: u32 = 900;
const NODE_C: u32 = 901;
const RULE_WORKER: u16 = 0xffff;

fn sub(session: u32, worker: u16, id: u32) -> Subscription {
    Subscription { session, worker, options: SubOptions::new(1, false, false, 0), subscription_id: id }
}

fn router() -> Router {
    let r = Router::new(RouterConfig { cache_capacity: 16, share_strategy: ShareStrategy::RoundRobin });
    assert!(r.enable_interest(vec![NODE_C, NODE_B]));
    r
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn scoped(r: &Router, topic: &str, plain: bool, shares: &[&str]) -> (Vec<u32>, Vec<u32>) {
    let shares: Vec<String> = shares.iter().map(|s| s.to_string()).collect();
    let mut out = MatchResult::default();
    r.match_topic_scoped(topic, u32::MAX, 0, &MatchScope { plain, shares: &shares, skip_worker: Some(RULE_WORKER) }, &mut out);
    let plain_to = out.deliveries.iter().filter(|d| !d.shared).map(|d| d.session).collect();
    let shared_to = out.deliveries.iter().filter(|d| d.shared).map(|d| d.session).collect();
    (plain_to, shared_to)
}

#[test]
fn shared_subscriptions_are_interest_of_their_own() {
    let r = router();
    r.subscribe("$share/g/a/#", sub(1, 0, 0)).unwrap();
    r.subscribe("$share/g/a/#", sub(2, 0, 0)).unwrap();
    r.subscribe("$queue/q", sub(1, 0, 0)).unwrap();
    r.subscribe("a/#", sub(3, 0, 0)).unwrap();
    // The cluster's own handles count for nothing, plain or shared.
    r.subscribe("$share/g/b", sub(NODE_B, RULE_WORKER, 7)).unwrap();
    r.subscribe("b", sub(NODE_B, RULE_WORKER, 0)).unwrap();
    let gained = |c: Vec<(String, bool)>| sorted(c.into_iter().map(|(k, on)| format!("{}{k}", if on { '+' } else { '-' })).collect());
    assert_eq!(gained(r.take_interest_changes()), vec!["+$share/DEFAULT/q", "+$share/g/a/#", "+a/#"]);
    assert_eq!(sorted(r.interest_snapshot()), vec!["$share/DEFAULT/q", "$share/g/a/#", "a/#"]);
    // The group keeps its interest while a member is left.
    assert!(r.unsubscribe("$share/g/a/#", 1));
    assert!(r.take_interest_changes().is_empty());
    // A session leaving takes its memberships and its plain subscriptions with it, each once.
    r.subscribe("a/#", sub(2, 0, 0)).unwrap();
    assert_eq!(r.remove_session(2), 2);
    assert_eq!(gained(r.take_interest_changes()), vec!["-$share/g/a/#"]);
    assert_eq!(r.remove_session(1), 1);
    assert_eq!(r.remove_session(3), 1);
    assert_eq!(gained(r.take_interest_changes()), vec!["-$share/DEFAULT/q", "-a/#"]);
    assert!(r.interest_snapshot().is_empty());
}

#[test]
fn a_node_handle_is_one_member_of_the_group() {
    let r = router();
    r.subscribe("$share/g/t/+", sub(1, 0, 0)).unwrap();
    r.subscribe("$share/g/t/+", sub(NODE_B, RULE_WORKER, 5)).unwrap();
    let mut out = MatchResult::default();
    let mut picks = Vec::new();
    for _ in 0..4 {
        r.match_topic("t/x", u32::MAX, 0, &mut out);
        assert_eq!(out.deliveries.len(), 1);
        picks.push(out.deliveries[0].session);
        // The node handle's membership carries its subscription id (the cluster's name for the group).
        if out.deliveries[0].session == NODE_B {
            assert_eq!(out.sub_ids(&out.deliveries[0]), &[5]);
        }
    }
    assert_eq!(picks, vec![1, NODE_B, 1, NODE_B]);
}

#[test]
fn a_message_from_another_node_reaches_only_its_scope() {
    let r = router();
    r.subscribe("t/#", sub(10, 0, 0)).unwrap();
    r.subscribe("t/#", sub(NODE_B, RULE_WORKER, 0)).unwrap();
    for s in [1, 2] {
        r.subscribe("$share/g/t/#", sub(s, 0, 0)).unwrap();
        r.subscribe("$share/h/t/+", sub(s + 10, 1, 0)).unwrap();
    }
    r.subscribe("$share/g/t/#", sub(NODE_B, RULE_WORKER, 3)).unwrap();
    r.subscribe("$share/g/t/#", sub(NODE_C, RULE_WORKER, 3)).unwrap();
    r.subscribe("$share/g/t/#", sub(50, RULE_WORKER, 0)).unwrap(); // a rule: runs on the origin only

    // Plain only: every plain subscriber (the node handle too: the worker skips it), no group.
    let (p, s) = scoped(&r, "t/x", true, &[]);
    assert_eq!((p, s), (vec![10, NODE_B], vec![]));
    // One group named: one local member of it, never a node handle nor the rule; no plain.
    let mut got = Vec::new();
    for _ in 0..6 {
        let (p, s) = scoped(&r, "t/x", false, &["$share/g/t/#"]);
        assert!(p.is_empty());
        assert_eq!(s.len(), 1);
        got.push(s[0]);
    }
    got.sort();
    assert_eq!(got, vec![1, 1, 1, 2, 2, 2], "round robin over the local members only");
    // Both groups and plain; a group named for another filter, or unknown, names nothing.
    let (p, mut s) = scoped(&r, "t/x", true, &["$share/g/t/#", "$share/h/t/+", "$share/h/t/#", "$share/zz/t/#", "$share/bad"]);
    s.sort();
    assert_eq!(p, vec![10, NODE_B]);
    assert_eq!(s.len(), 2);
    assert!([1, 2].contains(&s[0]) && [11, 12].contains(&s[1]));
    // Every local member gone: the named group gets nothing here (the caller counts the miss).
    assert_eq!(r.remove_session(1) + r.remove_session(2), 2);
    let (p, s) = scoped(&r, "t/x", false, &["$share/g/t/#"]);
    assert!(p.is_empty() && s.is_empty());
    // Unscoped (a local publish), the node handles and the rule are members as before.
    let mut out = MatchResult::default();
    r.match_topic("t/x", u32::MAX, 0, &mut out);
    let picked: Vec<u32> = out.deliveries.iter().filter(|d| d.shared).map(|d| d.session).collect();
    assert_eq!(picked.len(), 2);
    assert!([NODE_B, NODE_C, 50].contains(&picked[0]) && [11, 12].contains(&picked[1]));
}

#[test]
fn queue_filters_are_the_default_group() {
    let r = router();
    r.subscribe("$queue/jobs", sub(4, 0, 0)).unwrap();
    assert_eq!(scoped(&r, "jobs", false, &["$share/DEFAULT/jobs"]).1, vec![4]);
    assert_eq!(scoped(&r, "jobs", false, &["$queue/jobs"]).1, vec![4]);
    assert!(scoped(&r, "jobs", false, &["$share/other/jobs"]).1.is_empty());
}

#[test]
fn hash_clientid_picks_among_the_local_members_by_the_publishers_hash() {
    let r = Router::new(RouterConfig { cache_capacity: 0, share_strategy: ShareStrategy::HashClientId });
    assert!(r.enable_interest(vec![NODE_B]));
    for s in [1, 2, 3] {
        r.subscribe("$share/g/t", sub(s, 0, 0)).unwrap();
    }
    r.subscribe("$share/g/t", sub(NODE_B, RULE_WORKER, 1)).unwrap();
    let shares = vec!["$share/g/t".to_string()];
    let pick = |hash: u32| {
        let mut out = MatchResult::default();
        r.match_topic_scoped("t", u32::MAX, hash, &MatchScope { plain: false, shares: &shares, skip_worker: None }, &mut out);
        out.deliveries.iter().map(|d| d.session).collect::<Vec<_>>()
    };
    // The same publisher always reaches the same member; publishers spread over the local ones.
    assert_eq!((pick(0), pick(1), pick(2), pick(3), pick(4)), (vec![1], vec![2], vec![3], vec![1], vec![2]));
    assert_eq!(pick(7), pick(7));
}
