// Exclusive subscription operations on one worker (src/features/exclusive asks them): the
// places its sessions hold, the places of sessions restored from the store (after a restart, a
// worker's restart, or adopted from a node that went down) taken again, and a subscription whose
// place the cluster gave another client dropped.
import { removeSubscription } from '../../engine/session/subscriptions.ts';
import type { ExclusiveHold } from '../../features/exclusive/types.ts';
import type { Op } from './types.ts';

export const exclusiveOps = {
  'exclusive.holders'(_args: undefined, env): { clientId: string; filter: string; connected: boolean }[] {
    const out: { clientId: string; filter: string; connected: boolean }[] = [];
    if (!env.exclusive.enabled) return out;
    for (const [clientId, session] of env.sessions.byClientId) {
      for (const filter of session.subscriptions.keys()) if (env.exclusive.holds(filter, clientId)) out.push({ clientId, filter, connected: session.connection !== null });
    }
    return out;
  },
  /** Of these kept places, those whose session is on this worker with its subscription to the
   * filter are taken again in the node's table: answers them (the others are not here, or their
   * place is held by another client). */
  'exclusive.restore'(args: { holds: ExclusiveHold[] }, env): ExclusiveHold[] {
    const out: ExclusiveHold[] = [];
    if (!env.exclusive.enabled) return out;
    for (const h of args.holds) {
      const session = env.sessions.byClientId.get(h.clientId);
      if (session === undefined || !session.subscriptions.has(h.filter)) continue;
      const got = env.exclusive.acquire(h.filter, h.clientId);
      if (got === 'taken' || got === 'held') out.push(h);
    }
    return out;
  },
  /** A place the cluster gave another client: the subscription of `clientId` to `filter` (a
   * restored session's) is removed, so one client at a time receives through it. */
  'exclusive.drop'(args: ExclusiveHold, env): boolean {
    const session = env.sessions.byClientId.get(args.clientId);
    env.exclusive.release(args.filter, args.clientId);
    if (session === undefined) return false;
    return removeSubscription(env.proxies, session, args.filter);
  },
} satisfies Record<string, Op>;
