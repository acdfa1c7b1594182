// Worker operations for the broker's own subscriptions: the proxy subscription list (applied to
// every client; see session/server-subscriptions.ts) and local subscriptions, internal sessions
// of this worker that keep the latest messages they receive in a bounded ring.
import type { Delivery, Session } from '../../engine/session/session.ts';
import { setProxySubscriptions, proxyStatus, type ProxySubscription } from '../../engine/session/proxy-subscriptions.ts';
import { subscribeOnBehalf, SubscriptionRefused } from '../../engine/session/subscriptions.ts';
import { payloadText } from '../../broker/payload-text.ts';
import { OpError, type Op } from './types.ts';

/** Messages a local subscription keeps (the oldest go first), and their payload bytes. */
export const LOCAL_RING_MESSAGES = 1000;
export const LOCAL_RING_BYTES = 16 * 1024 * 1024;

interface Kept {
  topic: string;
  qos: number;
  retain: boolean;
  payload: Buffer;
  time: number;
}

/** The latest messages of one local subscription; bounded by count and by payload bytes. */
class MessageRing {
  private readonly items: Kept[] = [];
  private bytes = 0;
  received = 0;
  dropped = 0;

  push(d: Delivery): void {
    const m = d.message;
    // A copy: the payload may be a view into a socket read buffer.
    const payload = Buffer.from(m.payload);
    this.items.push({ topic: m.topic, qos: d.qos, retain: d.retain, payload, time: m.receivedAt });
    this.bytes += payload.length;
    this.received++;
    while (this.items.length > LOCAL_RING_MESSAGES || (this.bytes > LOCAL_RING_BYTES && this.items.length > 1)) {
      this.bytes -= this.items.shift()!.payload.length;
      this.dropped++;
    }
  }

  /** The newest `limit` messages, oldest first. */
  latest(limit: number): Kept[] {
    return this.items.slice(Math.max(0, this.items.length - limit));
  }

  get length(): number {
    return this.items.length;
  }
}

const locals = new Map<number, { session: Session; topic: string; qos: number; ring: MessageRing }>();

export const subscriptionOps = {
  'proxy.set'(args: { list: ProxySubscription[] }, env) {
    setProxySubscriptions(env.proxies, args.list);
    return { count: args.list.length };
  },

  'proxy.status'(_args: unknown, env) {
    return proxyStatus(env.proxies);
  },

  /** Opens (or reopens after a restart) local subscription `handle` to `topic`. */
  async 'local.open'(args: { handle: number; topic: string; qos: 0 | 1 | 2 }, env) {
    const old = locals.get(args.handle);
    if (old) env.sessions.closeInternal(old.session);
    const ring = new MessageRing();
    const session = env.sessions.openInternal(args.handle, `$local/${args.handle}`, (d) => ring.push(d));
    try {
      await subscribeOnBehalf(env.proxies, session, args.topic, args.qos, () => env.sessions.owns(session));
    } catch (err) {
      env.sessions.closeInternal(session);
      if (err instanceof SubscriptionRefused) throw new OpError('INVALID_PARAMETER', `topic: ${err.message}`, 'topic');
      throw err;
    }
    locals.set(args.handle, { session, topic: args.topic, qos: args.qos, ring });
    return { handle: args.handle };
  },

  'local.close'(args: { handle: number }, env) {
    const l = locals.get(args.handle);
    if (!l) return { closed: false };
    env.sessions.closeInternal(l.session);
    locals.delete(args.handle);
    return { closed: true };
  },

  'local.messages'(args: { handle: number; limit: number }) {
    const l = locals.get(args.handle);
    if (!l) throw new OpError('NOT_FOUND', 'local subscription not found on its worker');
    return {
      received: l.ring.received,
      dropped: l.ring.dropped,
      kept: l.ring.length,
      messages: l.ring.latest(args.limit).map((k) => ({ topic: k.topic, qos: k.qos, retain: k.retain, ...payloadText(k.payload), time: new Date(k.time).toISOString() })),
    };
  },
} satisfies Record<string, Op>;
