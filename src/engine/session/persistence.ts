// Persistence: what one worker thread tells the store, in the broker's own terms. It decides
// what must be kept (persistent sessions, their subscriptions, QoS 1/2 deliveries to them, the
// incoming QoS 2 ids, retained messages) and turns broker events into Store calls. Promises that
// guard an acknowledgement are returned to the caller, which acknowledges only once they
// resolve; the rest are tracked so that a failure is logged and counted, never lost silently.
// One per worker thread (the stores batch across callers themselves).
import type { ClientRegistry } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import { retainedExpiresAt, type Message } from '../../broker/message.ts';
import type { Routed } from '../../router/delivery.ts';
import type { Store, StoredMessage, StoredSession } from '../../store/types.ts';
import { MessageIds } from '../../store/message-id.ts';
import type { Session, SubscriptionEntry } from './session.ts';

/** Background writes in flight above which deliveries from queues pause (and below which they
 * resume): the store's own queues are bounded, and a subscriber acknowledging faster than the
 * database commits must not overflow them. */
const CONGESTED_AT = 20_000;
const CLEAR_AT = 5_000;

export class Persistence {
  /** Background writes that failed (logged); exposed for metrics. */
  failures = 0;
  private inFlight = 0;
  private waiting: (() => void)[] = [];
  private lastFailureLog = 0;
  private unloggedFailures = 0;
  /** config limits.retainedDefaultExpiry in ms (0: none), for the stored retained copy. */
  retainedDefaultExpiryMs = 0;

  constructor(
    readonly store: Store,
    private readonly registry: InstanceType<typeof ClientRegistry>,
    private readonly workerId: number,
    private readonly log: Logger,
    /** This node's name, kept with its sessions (see StoredSession.node). */
    private readonly node?: string,
    /** This node's slot in a store the cluster's nodes share (0: a store of its own). */
    nodeSlot = 0,
  ) {
    this.ids = new MessageIds(nodeSlot, workerId);
  }

  private readonly ids: MessageIds;

  /**
   * A store-wide unique, increasing id (store/message-id.ts). Increasing per worker, so the ids of
   * one publisher's messages keep their order.
   */
  nextMessageId(): bigint {
    return this.ids.next();
  }

  /**
   * A persistent session (expiry > 0) is stored; one that stopped being persistent is removed.
   * Sessions that never persist cost no write. Undefined when there is nothing to wait for.
   */
  sessionConnected(session: Session): Promise<void> | undefined {
    const persistent = session.expiryInterval > 0;
    this.registry.setPersistent(session.handle, session.clientId, persistent);
    if (persistent) {
      session.stored = true;
      return this.store.saveSession(this.toStored(session, null));
    }
    if (!session.stored) return undefined;
    session.stored = false;
    return this.store.deleteSession(session.clientId);
  }

  /**
   * A session that came from another node of the cluster is stored here whole: the session, its
   * subscriptions, its QoS 1/2 deliveries (in order, as fresh messages of this node's store) and
   * its incoming QoS 2 ids. The CONNECT that resumes it then stores what it changes.
   */
  async adopted(session: Session): Promise<void> {
    if (session.expiryInterval === 0) return;
    this.registry.setPersistent(session.handle, session.clientId, true);
    session.stored = true;
    const clientId = session.clientId;
    await this.store.saveSession(this.toStored(session, session.disconnectedAt || Date.now()));
    for (const sub of session.subscriptions.values()) {
      await this.store.addSubscription({ clientId, filter: sub.filter, options: sub.options, subscriptionId: sub.subscriptionId });
    }
    const keep = async (d: { message: Message; qos: 0 | 1 | 2; retain: boolean; subscriptionIds: number[] | null }): Promise<bigint> => {
      const id = this.nextMessageId();
      d.message.storeId = id;
      await this.store.addMessage(this.toStoredMessage(d.message), [{ clientId, seq: id, qos: d.qos, retain: d.retain, subscriptionIds: d.subscriptionIds ?? [] }]);
      return id;
    };
    for (const e of session.inflight.values()) {
      if (e.qos === 0) continue;
      const id = await keep(e);
      if (e.qos === 2) await this.store.updateDelivery(clientId, id, e.state === 'pubrel' ? 'pubrel' : 'inflight', e.packetId);
    }
    for (const d of session.queue) if (d.qos > 0) await keep(d);
    for (const id of session.incomingQos2) await this.store.addIncomingQos2(clientId, id);
  }

  sessionDisconnected(session: Session): void {
    if (!session.stored) return;
    this.background(this.store.saveSession(this.toStored(session, session.disconnectedAt || Date.now())), 'save session');
  }

  /** The session is over: it leaves the store with everything that belongs to it. */
  sessionEnded(session: Session): Promise<void> {
    this.registry.setPersistent(session.handle, session.clientId, false);
    if (!session.stored) return Promise.resolve();
    session.stored = false;
    const p = this.store.deleteSession(session.clientId);
    this.background(p, 'delete session');
    return p;
  }

  subscribed(session: Session, sub: SubscriptionEntry): Promise<void> | undefined {
    if (!session.stored) return undefined;
    return this.store.addSubscription({ clientId: session.clientId, filter: sub.filter, options: sub.options, subscriptionId: sub.subscriptionId });
  }

  unsubscribed(session: Session, filter: string): void {
    if (!session.stored) return;
    this.background(this.store.removeSubscription(session.clientId, filter), 'remove subscription');
  }

  /** Whether the messages of the session `handle` are kept in the store (it is persistent). */
  readonly keeps = (handle: number): boolean => this.registry.persistentClientId(handle) !== null;

  /**
   * Stores a routed message for the persistent sessions among its QoS 1/2 deliveries, once, and
   * returns the Promise the publisher's acknowledgement waits for (undefined when nothing needs
   * storing). Sets `message.storeId` so the subscribers' workers can update delivery state.
   */
  messageRouted(message: Message, deliveries: readonly Routed[]): Promise<void> | undefined {
    let rows: { clientId: string; seq: bigint; qos: 0 | 1 | 2; retain: boolean; subscriptionIds: number[] }[] | null = null;
    for (const d of deliveries) {
      if (d.qos === 0) continue;
      const clientId = this.registry.persistentClientId(d.handle);
      if (clientId === null) continue;
      message.storeId ??= this.nextMessageId();
      (rows ??= []).push({ clientId, seq: message.storeId, qos: d.qos, retain: d.retain, subscriptionIds: d.subscriptionIds ?? [] });
    }
    if (!rows) return undefined;
    return this.store.addMessage(this.toStoredMessage(message), rows);
  }

  /** [MQTT-3.3.1-5..7] the retained message of a topic, or its removal. Guards the ack. */
  retained(message: Message): Promise<void> {
    if (message.payload.length === 0) return this.store.deleteRetained(message.topic);
    const expiresAt = retainedExpiresAt(message, this.retainedDefaultExpiryMs);
    return this.store.setRetained(message.topic, this.toStoredMessage({ ...message, expiresAt, storeId: message.storeId ?? this.nextMessageId() }));
  }

  /** True while background writes pile up faster than the store commits them. */
  get congested(): boolean {
    return this.inFlight >= CONGESTED_AT;
  }

  /** Calls `fn` once the store has caught up (at once when it is not congested). */
  whenClear(fn: () => void): void {
    if (!this.congested) fn();
    else this.waiting.push(fn);
  }

  /**
   * A stored QoS 2 delivery went out with a packet id, or reached PUBREL. QoS 1 in-flight state is
   * not written: after a restart a QoS 1 message is simply sent again (a duplicate QoS 1 allows),
   * while a QoS 2 message must keep its packet id so the client can recognise it [MQTT-4.3.3].
   */
  deliveryState(session: Session, message: Message, state: 'inflight' | 'pubrel', packetId: number): void {
    if (message.storeId === undefined || !session.stored || message.qos < 2) return;
    this.background(this.store.updateDelivery(session.clientId, message.storeId, state, packetId), 'update delivery');
  }

  /** A stored delivery is done (acknowledged, expired or dropped). */
  delivered(session: Session, message: Message): void {
    if (message.storeId === undefined || !session.stored) return;
    this.background(this.store.removeDelivery(session.clientId, message.storeId), 'remove delivery');
  }

  incomingQos2(session: Session, packetId: number): Promise<void> | undefined {
    if (!session.stored) return undefined;
    return this.store.addIncomingQos2(session.clientId, packetId);
  }

  incomingQos2Released(session: Session, packetId: number): void {
    if (!session.stored) return;
    this.background(this.store.removeIncomingQos2(session.clientId, packetId), 'release QoS 2 id');
  }

  private toStored(session: Session, disconnectedAt: number | null): StoredSession {
    const will = session.will;
    return {
      clientId: session.clientId,
      ...(this.node !== undefined ? { node: this.node } : {}),
      expiryInterval: session.expiryInterval,
      disconnectedAt,
      username: session.username ?? null,
      will: will
        ? {
            message: { topic: will.message.topic, payload: will.message.payload, qos: will.message.qos, retain: will.message.retain, properties: will.message.props },
            delay: will.delay,
            expiryInterval: will.expiryInterval,
          }
        : null,
    };
  }

  private toStoredMessage(m: Message): StoredMessage {
    return { id: m.storeId!, topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, properties: m.props, expiresAt: m.expiresAt };
  }

  private background(p: Promise<void>, what: string): void {
    this.inFlight++;
    p.then(() => this.settled(), (err: unknown) => {
      this.settled();
      this.failures++;
      // Logged at most once a second (with how many were not), counted always.
      const now = Date.now();
      if (now - this.lastFailureLog < 1000) {
        this.unloggedFailures++;
        return;
      }
      this.log.error(`store: ${what} failed`, { err, failuresNotLogged: this.unloggedFailures, failuresTotal: this.failures });
      this.lastFailureLog = now;
      this.unloggedFailures = 0;
    });
  }

  private settled(): void {
    this.inFlight--;
    if (this.inFlight <= CLEAR_AT && this.waiting.length > 0) {
      const waiting = this.waiting;
      this.waiting = [];
      for (const fn of waiting) fn();
    }
  }
}
