// Sessions from the store: a persistent session rebuilt as the store kept it (after a restart,
// a worker crash, or for a claim whose previous owner died), with its subscriptions, its
// deliveries queued or in flight as they were, its incoming QoS 2 ids and its will.
import type { Message } from '../../broker/message.ts';
import type { LoadedDelivery, Store, StoredMessage, StoredSession, StoredSubscription } from '../../store/types.ts';
import { Session, type SessionLimits } from './session.ts';

/** What the store holds of one session. */
export interface StoredParts {
  session: StoredSession;
  subscriptions: StoredSubscription[];
  deliveries: LoadedDelivery[];
  incomingQos2: number[];
}

/** What the store holds of the session `session`. */
export async function loadStoredParts(store: Store, session: StoredSession): Promise<StoredParts> {
  const [subscriptions, deliveries, incomingQos2] = await Promise.all([
    store.loadSubscriptions(session.clientId),
    store.loadDeliveries(session.clientId),
    store.loadIncomingQos2(session.clientId),
  ]);
  return { session, subscriptions, deliveries, incomingQos2 };
}

/** A stored message as the broker routes it. */
export function fromStored(m: Omit<StoredMessage, 'id'> & { id?: bigint }, now: number): Message {
  return {
    topic: m.topic,
    topicBytes: Buffer.from(m.topic, 'utf8'),
    payload: m.payload,
    qos: m.qos,
    retain: m.retain,
    props: m.properties,
    expiresAt: m.expiresAt,
    receivedAt: now,
    storeId: m.id === undefined || m.id === 0n ? undefined : m.id,
    seq: undefined,
  };
}

/** The session under `handle`, offline; a client still connected when the broker stopped lost
 * its connection then. */
export function storedSession(handle: number, parts: StoredParts, limits: SessionLimits, now = Date.now()): Session {
  const stored = parts.session;
  const s = new Session(handle, stored.clientId, limits, stored.username ?? undefined);
  s.expiryInterval = stored.expiryInterval;
  s.stored = true;
  s.disconnectedAt = stored.disconnectedAt ?? now;
  for (const sub of parts.subscriptions) s.subscriptions.set(sub.filter, { filter: sub.filter, options: sub.options, subscriptionId: sub.subscriptionId });
  for (const d of parts.deliveries) {
    const delivery = { message: fromStored(d.message, now), qos: d.qos, retain: d.retain, subscriptionIds: d.subscriptionIds.length ? d.subscriptionIds : null };
    if (d.state === 'queued' || d.packetId === 0 || s.inflight.has(d.packetId)) s.queue.push(delivery);
    else s.inflight.set(d.packetId, { ...delivery, packetId: d.packetId, state: d.state === 'pubrel' ? 'pubrel' : 'publish', sentAt: 0 });
  }
  for (const id of parts.incomingQos2) s.incomingQos2.add(id);
  const will = stored.will;
  if (will) {
    s.will = {
      message: fromStored({ ...will.message, expiresAt: 0 }, now),
      delay: will.delay,
      expiryInterval: will.expiryInterval,
    };
  }
  return s;
}
