// handle_subscribe: adds subscriptions to the session and the shared routing core, answers
// SUBACK once a persistent session's subscriptions are stored, then sends the retained messages
// the new subscriptions match (by Retain Handling). The subscription logic itself is shared with
// the broker's own subscriptions: ../session/subscriptions.ts.
import { performance } from 'node:perf_hooks';

import type { Packet } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { suback } from '../../protocol/send.ts';
import { addSubscription, optionsByte, sendRetained, SubscriptionRefused } from '../session/subscriptions.ts';
import { EV } from '../session/events.ts';
import { subscribeScope } from '../../auth/acl-scope.ts';
import type { ReadScope } from '../../auth/types.ts';
import type { Client, HandlerHost, HandlerResult } from './client.ts';

export function handleSubscribe(host: HandlerHost, c: Client, p: Packet): HandlerResult {
  // What this connection published before its SUBSCRIBE (retained messages waiting for the
  // store) is visible to it [MQTT-3.3.1-9, MQTT-3.3.1-10]: the SUBSCRIBE waits behind them.
  const before = c.publishChain;
  if (before !== null) return before.then(() => handleSubscribe(host, c, p), () => handleSubscribe(host, c, p));
  const startedAt = performance.now();
  const subs = p.subscriptions!;
  // Topic rewrite, before the ACL (src/features/rewrite).
  const rewrite = host.rewrite.current;
  if (rewrite.active) {
    for (const s of subs) s.topic = rewrite.filter(s.topic, c.identity);
  }
  // $exclusive/{filter} (src/features/exclusive): the prefix comes off here (the ACL and the
  // routing see the filter); the place is taken in finishSubscribe, once the ACL allowed it.
  let exclusive: boolean[] | null = null;
  if (host.exclusive.enabled) {
    for (let i = 0; i < subs.length; i++) {
      const s = subs[i];
      if (!s.topic.startsWith('$exclusive/')) continue;
      exclusive ??= subs.map(() => false);
      exclusive[i] = true;
      s.topic = s.topic.slice(11);
    }
  }
  if (c.authorizer.allowsEverything) return finishSubscribe(host, c, p, subs.map(() => 'all' as const), startedAt, exclusive);
  // Refused only when no topic of the filter may be read; granted in part, each delivery through
  // it is checked (auth/acl-scope.ts, Outbox).
  const scopes = subs.map((s) => subscribeScope(c.authorizer, c.identity, s.topic));
  if (scopes.every((d) => typeof d === 'string')) return finishSubscribe(host, c, p, scopes as ReadScope[], startedAt, exclusive);
  return Promise.all(scopes).then((all) => finishSubscribe(host, c, p, all, startedAt, exclusive));
}

/** An exclusive filter's place for one SUBSCRIBE filter: taken now (true: free it if the
 * subscription fails), held already (false), or refused with this SUBACK code. */
type Place = boolean | { refused: number };

function finishSubscribe(host: HandlerHost, c: Client, p: Packet, scopes: ReadScope[], startedAt: number, exclusive: boolean[] | null): HandlerResult {
  if (c.state === 'closed') return;
  if (exclusive === null) return grant(host, c, p, scopes, startedAt, null);
  // The places of the exclusive filters first: taken in the node's table; in a cluster, the
  // cluster decides (src/features/exclusive/cluster.ts) before anything is granted.
  const places: (Place | Promise<Place> | undefined)[] = [];
  let waiting = false;
  const persist = c.session!.expiryInterval > 0;
  p.subscriptions!.forEach((sub, i) => {
    if (!exclusive[i] || scopes[i] === 'none') return;
    // One holder per filter: another client's SUBSCRIBE is refused 0x97 Quota exceeded (MQTT
    // 3.1.1: 0x80), as EMQX does.
    if (sub.topic.length === 0 || sub.topic.startsWith('$share/')) {
      places[i] = { refused: RC.TOPIC_FILTER_INVALID };
      return;
    }
    const got = host.exclusive.acquire(sub.topic, c.clientId);
    if (got === 'busy' || got === 'full') places[i] = { refused: RC.QUOTA_EXCEEDED };
    else if (got === 'held') {
      // Held, or being decided for an earlier SUBSCRIBE of this client: that answer is this one's.
      const earlier = host.exclusive.waiting(sub.topic, c.clientId);
      if (earlier === undefined) places[i] = false;
      else {
        waiting = true;
        places[i] = earlier.then((granted) => (granted ? false : { refused: RC.QUOTA_EXCEEDED }));
      }
    } else {
      const confirmed = host.exclusive.confirm(sub.topic, c.clientId, persist);
      if (confirmed === true) places[i] = true;
      else {
        waiting = true;
        places[i] = confirmed.then((granted) => (granted ? true : { refused: RC.QUOTA_EXCEEDED }));
      }
    }
  });
  if (!waiting) return grant(host, c, p, scopes, startedAt, places as (Place | undefined)[]);
  return Promise.all(places).then((settled) => {
    if (c.state === 'closed') {
      // Gone meanwhile: the places it was given are freed (its session's end did not see them).
      settled.forEach((place, i) => {
        if (place === true) host.exclusive.release(p.subscriptions![i].topic, c.clientId);
      });
      return;
    }
    return grant(host, c, p, scopes, startedAt, settled);
  });
}

function grant(host: HandlerHost, c: Client, p: Packet, scopes: ReadScope[], startedAt: number, places: (Place | undefined)[] | null): HandlerResult {
  const session = c.session!;
  const env = host.proxies;
  const subscriptionId = p.properties?.subscriptionIdentifier?.[0] ?? 0;
  const codes: number[] = [];
  const added: { filter: string; options: number; existed: boolean }[] = [];
  const storing: Promise<void>[] = [];
  p.subscriptions!.forEach((sub, i) => {
    if (scopes[i] === 'none') {
      c.identity.tenant?.denied();
      host.stats.aclDenied++;
      c.endpoint.stats.aclDenied++;
      codes.push(RC.NOT_AUTHORIZED); // [MQTT-3.9.3-1 context] 0x87 in v5, 0x80 in v3
      return;
    }
    const options = optionsByte(sub.qos, sub.nl ?? false, sub.rap ?? false, sub.rh ?? 0);
    const place = places?.[i];
    if (typeof place === 'object') {
      codes.push(place.refused);
      return;
    }
    const taken = place === true;
    try {
      const { existed, stored } = addSubscription(env, session, sub.topic, options, subscriptionId, scopes[i] === 'some');
      if (stored) storing.push(stored);
      added.push({ filter: sub.topic, options, existed });
      codes.push(sub.qos); // granted QoS: we support all three
      if (host.events.wants[EV.SUBSCRIBE]) {
        host.events.emit('SUBSCRIBE', { clientid: c.clientId, username: c.username ?? null, peerhost: c.remoteAddress, topic: sub.topic, qos: sub.qos, timestamp: Date.now() });
      }
    } catch (err) {
      if (taken) host.exclusive.release(sub.topic, c.clientId);
      if (!(err instanceof SubscriptionRefused)) throw err;
      host.log.debug('subscription refused', { clientId: c.clientId, filter: sub.topic, err });
      codes.push(err.reason);
    }
  });
  const answer = () => {
    c.write(suback(c.version, p.messageId!, codes));
    c.endpoint.stats.timed('subscribe', startedAt);
    for (const a of added) sendRetained(env, session, a.filter, a.options, subscriptionId, a.existed);
  };
  if (storing.length === 0) {
    answer();
    return;
  }
  // A persistent session's subscriptions are acknowledged once stored.
  return Promise.all(storing).then(() => {
    if (!c.isClosed()) answer();
  }, (err: unknown) => {
    host.log.error('subscription could not be stored', { clientId: c.clientId, err });
    c.disconnectWith(RC.UNSPECIFIED_ERROR, 'protocol_error', 'subscription could not be stored');
  });
}
