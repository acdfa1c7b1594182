// Proxy subscriptions: the subscriptions the operator wants every client to have (admin API),
// added after each CONNECT and to every connected client when the list grows. The list is this
// worker thread's copy; the supervisor pushes it (src/worker/ops/subscriptions.ts).
import type { Logger } from '../../log/index.ts';
import { subscribeOnBehalf, type SubscriptionEnv } from './subscriptions.ts';
import type { Session } from './session.ts';

export interface ProxySubscription {
  topic: string;
  qos: 0 | 1 | 2;
}

/** What proxy subscriptions need from the worker thread. */
export interface ProxyEnv extends SubscriptionEnv {
  readonly log: Logger;
  /** The client sessions of this thread. */
  sessions(): Iterable<Session>;
  /** Whether `session` is still this thread's (it may have moved while its store write ran). */
  owns(session: Session): boolean;
}

let proxies: readonly ProxySubscription[] = [];
/** How many times each proxy subscription was added to a session by this worker. */
const applied = new Map<string, number>();

/**
 * Replaces this worker's proxy list. Subscriptions that are new (or whose QoS changed) are added
 * at once to every session whose client is connected here; removed ones are only no longer added
 * (sessions that have them keep them, like subscriptions of their own).
 */
export function setProxySubscriptions(env: ProxyEnv, list: readonly ProxySubscription[]): void {
  const before = new Set(proxies.map((p) => `${p.qos}${p.topic}`));
  proxies = list.map((p) => ({ topic: p.topic, qos: p.qos }));
  for (const topic of [...applied.keys()]) if (!proxies.some((p) => p.topic === topic)) applied.delete(topic);
  const added = proxies.filter((p) => !before.has(`${p.qos}${p.topic}`));
  if (added.length === 0) return;
  for (const session of [...env.sessions()]) {
    if (!session.connection?.connected) continue;
    for (const p of added) applyOne(env, session, p);
  }
}

/** After a CONNECT: the session gets every proxy subscription (retained messages only for the
 * ones it did not have, as with Retain Handling 1). */
export function applyProxySubscriptions(env: ProxyEnv, session: Session): void {
  for (const p of proxies) applyOne(env, session, p);
}

function applyOne(env: ProxyEnv, session: Session, p: ProxySubscription): void {
  applied.set(p.topic, (applied.get(p.topic) ?? 0) + 1);
  subscribeOnBehalf(env, session, p.topic, p.qos | (1 << 4), () => env.owns(session)).catch((err: unknown) => {
    env.log.error('proxy subscription not applied', { clientId: session.clientId, topic: p.topic, err });
  });
}

/** Per proxy subscription: times this worker added it to a session, and the sessions of this
 * worker that hold a subscription to its topic now. */
export function proxyStatus(env: ProxyEnv): { topic: string; qos: number; applied: number; sessions: number }[] {
  return proxies.map((p) => {
    let sessions = 0;
    for (const s of env.sessions()) if (s.subscriptionCount > 0 && s.subscriptions.has(p.topic)) sessions++;
    return { topic: p.topic, qos: p.qos, applied: applied.get(p.topic) ?? 0, sessions };
  });
}
