// handle_subscribe: adds subscriptions to the session and the shared routing core, answers
// SUBACK, then sends the retained messages the new subscriptions match (by Retain Handling).
import { performance } from 'node:perf_hooks';

import type { Packet, SubscriptionRequest } from '../native/index.ts';
import type { Connection, HandlerResult } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import { suback } from '../protocol/send.ts';
import { levelCount } from './publish.ts';

const SHARED = /^\$(share|queue)\//;

export function handleSubscribe(conn: Connection, p: Packet): HandlerResult {
  const startedAt = performance.now();
  const subs = p.subscriptions!;
  if (conn.authorizer.allowsEverything) return finishSubscribe(conn, p, subs.map(() => true), startedAt);
  const decisions = subs.map((s) => conn.authorizer.authorize(conn.identity, 'subscribe', s.topic));
  if (decisions.every((d) => typeof d === 'boolean')) return finishSubscribe(conn, p, decisions as boolean[], startedAt);
  return Promise.all(decisions).then((ok) => finishSubscribe(conn, p, ok, startedAt));
}

function finishSubscribe(conn: Connection, p: Packet, allowed: boolean[], startedAt: number): HandlerResult {
  if (conn.state === 'closed') return;
  const ctx = conn.ctx;
  const session = conn.session!;
  const subscriptionId = p.properties?.subscriptionIdentifier?.[0] ?? 0;
  const codes: number[] = [];
  const retainedFor: { sub: SubscriptionRequest; existed: boolean }[] = [];
  const storing: Promise<void>[] = [];
  p.subscriptions!.forEach((sub, i) => {
    if (!allowed[i]) {
      ctx.stats.aclDenied++;
      conn.endpoint.stats.aclDenied++;
      codes.push(RC.NOT_AUTHORIZED); // [MQTT-3.9.3-?] 0x87 in v5, 0x80 in v3
      return;
    }
    if (sub.topic.length >= ctx.config.limits.maxTopicLevels && levelCount(sub.topic) > ctx.config.limits.maxTopicLevels) {
      codes.push(RC.TOPIC_FILTER_INVALID); // more levels than limits.maxTopicLevels
      return;
    }
    const options = sub.qos | (sub.nl ? 4 : 0) | (sub.rap ? 8 : 0) | ((sub.rh ?? 0) << 4);
    let existed: boolean;
    try {
      existed = ctx.router.subscribe(sub.topic, session.handle, options, subscriptionId);
    } catch (err) {
      ctx.log.debug('subscription refused', { clientId: conn.clientId, filter: sub.topic, err });
      codes.push((err as { reason?: number }).reason ?? RC.TOPIC_FILTER_INVALID);
      return;
    }
    const entry = { filter: sub.topic, options, subscriptionId };
    session.subscriptions.set(sub.topic, entry);
    const stored = ctx.persistence?.subscribed(session, entry);
    if (stored) storing.push(stored);
    codes.push(sub.qos); // granted QoS: we support all three
    retainedFor.push({ sub, existed });
  });
  const answer = () => {
    conn.write(suback(conn.version, p.messageId!, codes));
    conn.endpoint.stats.timed('subscribe', startedAt);
    for (const { sub, existed } of retainedFor) {
      // [MQTT-3.3.1-9 .. MQTT-3.3.1-11] Retain Handling 0: always; 1: only for a new
      // subscription; 2: never. Shared subscriptions get no retained messages [MQTT-4.8.2-?].
      const rh = sub.rh ?? 0;
      if (SHARED.test(sub.topic) || rh === 2 || (rh === 1 && existed)) continue;
      ctx.router.sendRetained(session, sub.topic, sub.qos as 0 | 1 | 2, subscriptionId);
    }
  };
  if (storing.length === 0) {
    answer();
    return;
  }
  // A persistent session's subscriptions are acknowledged once stored.
  return Promise.all(storing).then(() => {
    if (!conn.isClosed()) answer();
  }, (err: unknown) => {
    ctx.log.error('subscription could not be stored', { clientId: conn.clientId, err });
    conn.disconnectWith(RC.UNSPECIFIED_ERROR, 'protocol_error', 'subscription could not be stored');
  });
}
