// Subscriptions of a session: adding one (routing core, session, store), removing one, and the
// retained messages a new subscription receives. The one place this logic lives: the SUBSCRIBE
// and UNSUBSCRIBE handlers, subscriptions made on a client's behalf (admin API), proxy
// subscriptions and the broker's local subscriptions all go through it.
import { TopicError } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { tooManyLevels } from '../../protocol/topic-levels.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import type { Persistence } from './persistence.ts';
import type { Session, SubscriptionEntry } from './session.ts';

/** `$share/<group>/<filter>` and `$queue/<filter>` [MQTT-4.8.2]. */
const SHARED = /^\$(share|queue)\//;

/** What subscribing needs from the worker thread. */
export interface SubscriptionEnv {
  readonly router: WorkerRouter;
  readonly persistence: Persistence | null;
  readonly maxTopicLevels: number;
}

/** A subscription refused by the routing core or the limits: `reason` is the SUBACK code. */
export class SubscriptionRefused extends Error {
  constructor(readonly reason: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SubscriptionRefused';
  }
}

/** The v5 options byte: QoS bits 0-1, No Local 2, Retain As Published 3, Retain Handling 4-5. */
export function optionsByte(qos: number, noLocal: boolean, retainAsPublished: boolean, retainHandling: number): number {
  return qos | (noLocal ? 4 : 0) | (retainAsPublished ? 8 : 0) | (retainHandling << 4);
}

/**
 * Adds (or replaces) the subscription of `session` to `filter`: in the shared routing core, in the
 * session, and in the store for a persistent session. Answers whether the session had it already
 * and the store write to wait for before acknowledging it (undefined: nothing stored). Throws
 * SubscriptionRefused.
 */
export function addSubscription(env: SubscriptionEnv, session: Session, filter: string, options: number, subscriptionId = 0, readChecked = false): { existed: boolean; stored: Promise<void> | undefined } {
  if (tooManyLevels(filter, env.maxTopicLevels)) {
    throw new SubscriptionRefused(RC.TOPIC_FILTER_INVALID, `more than ${env.maxTopicLevels} levels (limits.maxTopicLevels)`);
  }
  let existed: boolean;
  try {
    existed = env.router.subscribe(filter, session.handle, options, subscriptionId);
  } catch (err) {
    if (err instanceof TopicError) throw new SubscriptionRefused(err.reason ?? RC.TOPIC_FILTER_INVALID, err.message, { cause: err });
    throw err;
  }
  const entry: SubscriptionEntry = readChecked ? { filter, options, subscriptionId, readChecked } : { filter, options, subscriptionId };
  const before = session.subscriptions.get(filter);
  if (before?.readChecked === true) session.readChecks--;
  if (readChecked) session.readChecks++;
  session.subscriptions.set(filter, entry);
  return { existed, stored: env.persistence?.subscribed(session, entry) };
}

/**
 * Once a subscription is acknowledged: the retained messages its filter matches, by Retain
 * Handling [MQTT-3.3.1-9 .. MQTT-3.3.1-11] (0: always; 1: only for a new subscription; 2: never).
 * Shared subscriptions get none: retained messages go to a new Non-shared Subscription (MQTT 5.0
 * section 3.3.1.3).
 */
export function sendRetained(env: SubscriptionEnv, session: Session, filter: string, options: number, subscriptionId: number, existed: boolean): void {
  const rh = (options >> 4) & 3;
  if (SHARED.test(filter) || rh === 2 || (rh === 1 && existed)) return;
  env.router.sendRetained(session.handle, filter, (options & 3) as 0 | 1 | 2, subscriptionId);
}

/** Removes the subscription of `session` to `filter`; false when it had none. */
export function removeSubscription(env: SubscriptionEnv, session: Session, filter: string): boolean {
  const entry = session.subscriptions.get(filter);
  if (entry?.readChecked === true) session.readChecks--;
  const had = session.subscriptions.delete(filter);
  if (had) env.persistence?.unsubscribed(session, filter);
  return env.router.unsubscribe(filter, session.handle) || had;
}

/** Marks (or unmarks) a subscription as one whose deliveries are checked for their topic. */
export function setReadChecked(session: Session, entry: SubscriptionEntry, checked: boolean): void {
  if ((entry.readChecked === true) === checked) return;
  entry.readChecked = checked;
  session.readChecks += checked ? 1 : -1;
}

/**
 * Subscribes as the broker itself does it for a session (admin API, proxy and local
 * subscriptions): adds it, waits for the store, then sends the retained messages if the session
 * is still this thread's (`live`). Answers whether the session had the subscription already.
 */
export async function subscribeOnBehalf(env: SubscriptionEnv, session: Session, filter: string, options: number, live: () => boolean): Promise<boolean> {
  const { existed, stored } = addSubscription(env, session, filter, options);
  if (stored) await stored;
  if (live()) sendRetained(env, session, filter, options, 0, existed);
  return existed;
}
