// Subscriptions the broker makes for a session rather than its client: subscribe/unsubscribe on a
// client's behalf (admin API) and the proxy subscriptions the operator wants every client to have
// (added after each CONNECT, and to every connected client when the list grows). The proxy list
// is this worker thread's copy; the supervisor pushes it (src/worker/ops/subscriptions.ts).
import { TopicError } from '../native/index.ts';
import type { WorkerContext } from '../worker/context.ts';
import { levelCount } from '../handlers/publish.ts';
import type { Session, SubscriptionEntry } from './session.ts';

const SHARED = /^\$(share|queue)\//;

/** A subscription refused by the routing core or the limits; `message` says why. */
export class SubscriptionRefused extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SubscriptionRefused';
  }
}

/**
 * Subscribes `session` to `filter` with the v5 options byte (QoS bits 0-1, No Local 2, Retain As
 * Published 3, Retain Handling 4-5), stores it for a persistent session, then sends the retained
 * messages the filter matches by Retain Handling (0: always, 1: only when new, 2: never; shared
 * subscriptions get none). Answers whether the session had the subscription already.
 */
export async function subscribeSession(ctx: WorkerContext, session: Session, filter: string, options: number, subscriptionId = 0): Promise<boolean> {
  const maxLevels = ctx.config.limits.maxTopicLevels;
  if (filter.length >= maxLevels && levelCount(filter) > maxLevels) throw new SubscriptionRefused(`more than ${maxLevels} levels (limits.maxTopicLevels)`);
  let existed: boolean;
  try {
    existed = ctx.router.subscribe(filter, session.handle, options, subscriptionId);
  } catch (err) {
    if (err instanceof TopicError) throw new SubscriptionRefused(err.message, { cause: err });
    throw err;
  }
  const entry: SubscriptionEntry = { filter, options, subscriptionId };
  session.subscriptions.set(filter, entry);
  const stored = ctx.persistence?.subscribed(session, entry);
  if (stored) await stored;
  const rh = (options >> 4) & 3;
  const live = ctx.sessions.byHandle.get(session.handle) === session || ctx.sessions.internal.get(session.handle) === session;
  if (!SHARED.test(filter) && rh !== 2 && !(rh === 1 && existed) && live) {
    ctx.router.sendRetained(session, filter, (options & 3) as 0 | 1 | 2, subscriptionId);
  }
  return existed;
}

/** Removes a subscription of `session`; false when it had none for `filter`. */
export function unsubscribeSession(ctx: WorkerContext, session: Session, filter: string): boolean {
  const had = session.subscriptions.delete(filter);
  if (had) ctx.persistence?.unsubscribed(session, filter);
  ctx.router.unsubscribe(filter, session.handle);
  return had;
}

// ---- proxy subscriptions ----------------------------------------------------------------------

export interface ProxySubscription {
  topic: string;
  qos: 0 | 1 | 2;
}

let proxies: readonly ProxySubscription[] = [];
/** How many times each proxy subscription was added to a session by this worker. */
const applied = new Map<string, number>();

/**
 * Replaces this worker's proxy list. Subscriptions that are new (or whose QoS changed) are added
 * at once to every session whose client is connected here; removed ones are only no longer added
 * (sessions that have them keep them, like subscriptions of their own).
 */
export function setProxySubscriptions(ctx: WorkerContext, list: readonly ProxySubscription[]): void {
  const before = new Set(proxies.map((p) => `${p.qos}${p.topic}`));
  proxies = list.map((p) => ({ topic: p.topic, qos: p.qos }));
  for (const topic of [...applied.keys()]) if (!proxies.some((p) => p.topic === topic)) applied.delete(topic);
  const added = proxies.filter((p) => !before.has(`${p.qos}${p.topic}`));
  if (added.length === 0) return;
  for (const session of [...ctx.sessions.all()]) {
    if (session.connection?.state !== 'connected') continue;
    for (const p of added) applyOne(ctx, session, p);
  }
}

/** After a CONNECT: the session gets every proxy subscription (retained messages only for the
 * ones it did not have, as with Retain Handling 1). */
export function applyProxySubscriptions(ctx: WorkerContext, session: Session): void {
  for (const p of proxies) applyOne(ctx, session, p);
}

function applyOne(ctx: WorkerContext, session: Session, p: ProxySubscription): void {
  applied.set(p.topic, (applied.get(p.topic) ?? 0) + 1);
  subscribeSession(ctx, session, p.topic, p.qos | (1 << 4)).catch((err: unknown) => {
    ctx.log.error('proxy subscription not applied', { clientId: session.clientId, topic: p.topic, err });
  });
}

/** Per proxy subscription: times this worker added it to a session, and the sessions of this
 * worker that hold a subscription to its topic now. */
export function proxyStatus(ctx: WorkerContext): { topic: string; qos: number; applied: number; sessions: number }[] {
  return proxies.map((p) => {
    let sessions = 0;
    for (const s of ctx.sessions.all()) if (s.subscriptions.has(p.topic)) sessions++;
    return { topic: p.topic, qos: p.qos, applied: applied.get(p.topic) ?? 0, sessions };
  });
}
