// SessionTable: the sessions owned by one worker thread, by handle and by client id. It opens
// and resumes sessions (also taking them over from another worker), queues and drains
// deliveries, publishes wills, and ends sessions when they expire. Cross-worker hand-over goes
// through the ClientRegistry (who owns a client id) and a request to the previous owner.
import { NO_PUBLISHER, type ClientRegistry } from '../native/index.ts';
import { toRecord, readRecord, type Message } from '../broker/message.ts';
import { RC } from '../protocol/reason-codes.ts';
import { ack, PUBREL } from '../protocol/send.ts';
import type { WorkerContext } from '../worker/context.ts';
import { endpointStatsOfSlot } from '../worker/endpoint-stats.ts';
import type { Connection } from './connection.ts';
import type { LoadedDelivery, StoredMessage, StoredSession, StoredSubscription } from '../store/types.ts';
import { NEVER_EXPIRES, Session, type Delivery, type SubscriptionEntry } from './session.ts';

/** A stored message as the broker routes it. */
function fromStored(m: StoredMessage, now: number): Message {
  return {
    topic: m.topic,
    topicBytes: Buffer.from(m.topic, 'utf8'),
    payload: m.payload,
    qos: m.qos,
    retain: m.retain,
    props: m.properties,
    expiresAt: m.expiresAt,
    receivedAt: now,
    storeId: m.id === 0n ? undefined : m.id,
  };
}

/** A session as it travels to another worker (structured clone). */
export interface SessionState {
  handle: number;
  clientId: string;
  username: string | undefined;
  expiryInterval: number;
  subscriptions: SubscriptionEntry[];
  inflight: { packetId: number; state: 'publish' | 'pubrel'; qos: 0 | 1 | 2; retain: boolean; ids: number[] | null; record: Uint8Array }[];
  queue: { qos: 0 | 1 | 2; retain: boolean; ids: number[] | null; record: Uint8Array }[];
  incomingQos2: number[];
  will: { record: Uint8Array; delay: number } | null;
  stored: boolean;
  endpointSlot: number;
}

interface PendingTakeover {
  resolve(state: SessionState | null): void;
  timer: NodeJS.Timeout;
}

const TAKEOVER_TIMEOUT_MS = 3000;
const MOVED_MEMORY_MS = 60_000;

export class SessionTable {
  readonly byHandle = new Map<number, Session>();
  readonly byClientId = new Map<string, Session>();
  /** The broker's own sessions (local subscriptions), by handle: not in the client registry, so
   * no MQTT client can reach or take them over. */
  readonly internal = new Map<number, Session>();
  /** Sessions handed to another worker recently: stray deliveries are forwarded there. */
  private readonly moved = new Map<number, number>();
  private readonly pending = new Map<string, PendingTakeover>();
  private readonly claimOut = new Uint32Array(4);

  constructor(private readonly ctx: WorkerContext, private readonly registry: InstanceType<typeof ClientRegistry>) {}

  get size(): number {
    return this.byHandle.size;
  }

  /** True when some worker holds a session for `clientId`. */
  known(clientId: string): boolean {
    return this.registry.lookup(clientId) !== null;
  }

  movedTo(handle: number): number | undefined {
    return this.moved.get(handle);
  }

  /**
   * Opens the session for a CONNECT: a new one, or the existing one (here or on another worker)
   * when Clean Start is 0 [MQTT-3.1.2-4 .. MQTT-3.1.2-6]. An existing connection with the same
   * client id is closed first [MQTT-3.1.4-3].
   */
  async open(conn: Connection, clientId: string, clean: boolean, expiry: number): Promise<{ session: Session; present: boolean }> {
    const ctx = this.ctx;
    // An existing connection of this client on this worker is closed first; if its session
    // ended with it (expiry 0), the claim below starts a new one.
    const current = this.registry.lookup(clientId);
    if (current && current[1] === ctx.workerId) {
      const old = this.byHandle.get(current[0]);
      if (old) this.takeOverConnection(old);
    }
    const out = this.claimOut;
    this.registry.claim(clientId, ctx.workerId, clean, out);
    const [handle, prevHandle, prevWorker, hadPrevious] = out;
    let session: Session | undefined;
    if (hadPrevious) {
      if (prevWorker === ctx.workerId) {
        const old = this.byHandle.get(prevHandle);
        if (old) {
          this.takeOverConnection(old);
          if (clean) this.end(old, true);
          else session = old;
        }
      } else {
        const state = await this.requestTakeover(prevWorker, clientId, prevHandle, !clean);
        if (state && !clean) session = this.adopt(state);
      }
    }
    const present = session !== undefined;
    if (!session) {
      session = new Session(handle, clientId, { maxQueued: ctx.config.limits.maxQueuedMessages, dropPolicy: ctx.config.limits.queueDropPolicy });
      this.track(session);
    }
    if (session.willTimer) {
      // Reconnected within the will delay: the will is not sent [MQTT-3.1.3-9].
      clearTimeout(session.willTimer);
      session.willTimer = null;
    }
    session.will = null;
    if (session.expiryTimer) clearTimeout(session.expiryTimer);
    session.expiryTimer = null;
    session.expiryInterval = expiry;
    session.username = conn.username;
    session.connection = conn;
    conn.session = session;
    return { session, present };
  }

  /** After CONNACK: resend what was in flight (PUBLISH with DUP, or PUBREL) [MQTT-4.4.0-1], then
   * what was queued. */
  resume(session: Session): void {
    const conn = session.connection!;
    for (const entry of session.inflight.values()) {
      if (entry.state === 'pubrel') conn.write(ack(PUBREL, entry.packetId, conn.version));
      else conn.sendPublish(entry, undefined, true, entry.packetId);
    }
    this.drain(session);
  }

  enqueue(session: Session, d: Delivery): void {
    if (d.qos === 0 && !session.connection && !this.ctx.config.limits.queueQos0) {
      this.ctx.stats.dropped.qos0Offline++;
      const es = endpointStatsOfSlot(session.endpointSlot);
      if (es) es.dropped.client_disconnected++;
      return;
    }
    const dropped = session.queue.push(d);
    if (dropped !== undefined) {
      this.ctx.stats.dropped.queueFull++;
      const es = session.connection?.endpoint.stats ?? endpointStatsOfSlot(session.endpointSlot);
      if (es) es.dropped.buffer_full++;
      this.ctx.persistence?.delivered(session, dropped.message);
    }
  }

  /** Sends queued deliveries while the client's window has room (and the store keeps up). */
  drain(session: Session): void {
    const conn = session.connection;
    if (!conn || conn.state !== 'connected') return;
    const persistence = this.ctx.persistence;
    if (persistence?.congested && session.stored) {
      if (!session.drainScheduled) {
        session.drainScheduled = true;
        persistence.whenClear(() => {
          session.drainScheduled = false;
          this.drain(session);
        });
      }
      return;
    }
    const window = Math.min(conn.sendQuota, this.ctx.config.limits.maxInflight);
    while (session.queue.length > 0) {
      const next = session.queue.peek()!;
      if (next.qos > 0 && session.inflight.size >= window) return;
      session.queue.shift();
      conn.sendPublish(next, undefined, false);
    }
  }

  /** A delivery for a session of this worker: to its connection, or to its queue. */
  deliverLocal(session: Session, d: Delivery, frameCache: Map<string, Buffer>): void {
    if (session.sink !== null) {
      session.sink(d);
      return;
    }
    const conn = session.connection;
    // A stored message waits in the queue while the store is congested (drain resumes it).
    if (conn && conn.state === 'connected' && !(d.message.storeId !== undefined && session.stored && this.ctx.persistence?.congested)) {
      let frame: Buffer | undefined;
      if (conn.aliasMaxOut === 0) {
        // One encoding per variant of the message for this tick's subscribers.
        const key = `${conn.version}${d.qos}${d.retain ? 1 : 0}${d.subscriptionIds ?? ''}`;
        frame = frameCache.get(key);
        if (!frame) {
          frame = conn.encode(d, Date.now(), false);
          frameCache.set(key, frame);
        }
      }
      conn.deliver(d, frame);
      return;
    }
    this.enqueue(session, d);
    // Connected but the store is congested: drain picks the queue up once it has caught up.
    if (conn && conn.state === 'connected') this.drain(session);
  }

  /** The network connection of a session went away. */
  connectionClosed(conn: Connection): void {
    const session = conn.session;
    if (!session || session.connection !== conn) return;
    session.connection = null;
    session.disconnectedAt = Date.now();
    const will = session.will;
    session.will = null;
    if (will && !conn.normalDisconnect) {
      // [MQTT-3.1.3-9] a delayed will waits for its delay or the end of the session.
      if (will.delay > 0 && session.expiryInterval > 0) {
        this.delayWill(session, will, Math.min(will.delay, session.expiryInterval) * 1000);
      } else {
        this.publishWill(session, will.message);
      }
    }
    if (session.expiryInterval === 0) {
      this.end(session, false);
      return;
    }
    this.ctx.persistence?.sessionDisconnected(session);
    if (session.expiryInterval !== NEVER_EXPIRES) {
      session.expiryTimer = setTimeout(() => this.end(session, true), session.expiryInterval * 1000);
    }
  }

  /** Ends a session: its subscriptions leave the routing core, its client id is released, and a
   * will still waiting is published now [MQTT-3.1.3-9: "or the Session ends"]. */
  end(session: Session, publishPendingWill: boolean): void {
    if (this.byHandle.get(session.handle) !== session) return;
    this.forget(session);
    this.ctx.router.removeSession(session.handle);
    this.registry.release(session.clientId, session.handle, this.ctx.workerId);
    this.ctx.persistence?.sessionEnded(session);
    if (session.endpointSlot >= 0) {
      this.ctx.endpointCounters.releaseSession(session.endpointSlot);
      session.endpointSlot = -1;
    }
    const will = session.will;
    session.will = null;
    if (will && publishPendingWill) this.publishWill(session, will.message);
  }

  /** Keeps the will until `ms` pass (or the session ends, or the client comes back first). */
  private delayWill(session: Session, will: NonNullable<Session['will']>, ms: number): void {
    session.will = will;
    session.willTimer = setTimeout(() => {
      session.willTimer = null;
      const w = session.will;
      session.will = null;
      if (w) this.publishWill(session, w.message);
    }, ms);
  }

  publishWill(session: Session, m: Message): void {
    // A will's expiry is relative until it is published (negative seconds, see connect.ts).
    const message = m.expiresAt < 0 ? { ...m, expiresAt: Date.now() - m.expiresAt * 1000 } : m;
    if (message.topic.charCodeAt(0) === 0x24) return;
    const identity = { clientId: session.clientId, username: session.username };
    const allowed = this.ctx.authorizerFor(identity).authorize(identity, 'publish', message.topic);
    const go = (ok: boolean) => {
      if (!ok) {
        this.ctx.stats.dropped.notAuthorized++;
        return;
      }
      const persistence = this.ctx.persistence;
      if (!persistence) {
        this.ctx.router.publish(message, NO_PUBLISHER, 0);
        return;
      }
      // Stored for persistent subscribers (and as retained) before it is delivered, like a PUBLISH.
      const routed = this.ctx.router.route(message, NO_PUBLISHER, 0);
      const waits = [persistence.messageRouted(message, routed), message.retain ? persistence.retained(message) : undefined].filter((p) => p !== undefined);
      Promise.all(waits).then(
        () => this.ctx.router.deliverRouted(message, routed),
        (err: unknown) => this.ctx.log.error('will could not be stored; not published', { clientId: session.clientId, err }),
      );
    };
    if (typeof allowed === 'boolean') go(allowed);
    else allowed.then(go, (err) => this.ctx.log.error('will authorization failed', { clientId: session.clientId, err }));
  }

  private takeOverConnection(session: Session): void {
    const old = session.connection;
    if (old) old.disconnectWith(RC.SESSION_TAKEN_OVER, 'takeover');
  }

  // ---- hand-over between workers ----------------------------------------------------------

  private requestTakeover(worker: number, clientId: string, handle: number, resume: boolean): Promise<SessionState | null> {
    return new Promise((resolve) => {
      const key = `${clientId}\0${handle}`;
      const timer = setTimeout(() => {
        this.pending.delete(key);
        this.ctx.log.warn('session takeover timed out', { clientId, worker });
        resolve(null);
      }, TAKEOVER_TIMEOUT_MS);
      this.pending.set(key, { resolve, timer });
      this.ctx.sendControl(worker, { t: 'takeover', clientId, handle, resume, from: this.ctx.workerId });
    });
  }

  /** Another worker's client took over one of ours: close it, hand the session over (or end it). */
  onTakeoverRequest(msg: { clientId: string; handle: number; resume: boolean; from: number }): void {
    let session = this.byHandle.get(msg.handle);
    if (session) {
      this.takeOverConnection(session);
      // Closing the connection may have ended a session that was not to outlive it.
      if (this.byHandle.get(msg.handle) !== session) session = undefined;
    }
    const reply = (state: SessionState | null) => this.ctx.sendControl(msg.from, { t: 'session-state', clientId: msg.clientId, handle: msg.handle, state });
    if (!session) {
      reply(null);
      return;
    }
    this.forget(session);
    if (msg.resume) {
      const state = this.exportState(session);
      this.moved.set(session.handle, msg.from);
      setTimeout(() => this.moved.delete(msg.handle), MOVED_MEMORY_MS).unref();
      reply(state);
      return;
    }
    // Clean Start: the old session ends here (its will, if pending, goes out). The new owner
    // stores its new session only after the old one has left the store.
    const will = session.will;
    session.will = null;
    this.ctx.router.removeSession(session.handle);
    if (will) this.publishWill(session, will.message);
    const removed = this.ctx.persistence?.sessionEnded(session);
    if (removed) removed.then(() => reply(null), () => reply(null)); // a failure is logged by Persistence
    else reply(null);
  }

  /** Adds a session to this worker's tables. */
  private track(session: Session): void {
    this.byHandle.set(session.handle, session);
    this.byClientId.set(session.clientId, session);
    this.ctx.stats.sessions++;
  }

  /** Drops a session from this worker's tables (it moved or ended elsewhere). */
  private forget(session: Session): void {
    session.clearTimers();
    this.byHandle.delete(session.handle);
    if (this.byClientId.get(session.clientId) === session) this.byClientId.delete(session.clientId);
    this.ctx.stats.sessions--;
  }

  onSessionState(msg: { clientId: string; handle: number; state: SessionState | null }): void {
    const key = `${msg.clientId}\0${msg.handle}`;
    const p = this.pending.get(key);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(key);
    p.resolve(msg.state);
  }

  private exportState(s: Session): SessionState {
    const rec = (m: Message) => new Uint8Array(toRecord(m));
    return {
      handle: s.handle,
      clientId: s.clientId,
      username: s.username,
      expiryInterval: s.expiryInterval,
      subscriptions: [...s.subscriptions.values()],
      inflight: [...s.inflight.values()].map((e) => ({ packetId: e.packetId, state: e.state, qos: e.qos, retain: e.retain, ids: e.subscriptionIds, record: rec(e.message) })),
      queue: [...s.queue].map((d) => ({ qos: d.qos, retain: d.retain, ids: d.subscriptionIds, record: rec(d.message) })),
      incomingQos2: [...s.incomingQos2],
      will: s.will ? { record: rec(s.will.message), delay: s.will.delay } : null,
      stored: s.stored,
      endpointSlot: s.endpointSlot,
    };
  }

  /** Rebuilds a session handed over by another worker; its subscriptions now route here. */
  private adopt(state: SessionState): Session {
    const ctx = this.ctx;
    const msg = (r: Uint8Array) => readRecord(Buffer.from(r.buffer, r.byteOffset, r.byteLength), 0).message;
    const s = new Session(state.handle, state.clientId, { maxQueued: ctx.config.limits.maxQueuedMessages, dropPolicy: ctx.config.limits.queueDropPolicy }, state.username);
    s.expiryInterval = state.expiryInterval;
    s.stored = state.stored;
    s.endpointSlot = state.endpointSlot;
    for (const sub of state.subscriptions) {
      s.subscriptions.set(sub.filter, sub);
      // Same session and filter: replaces the entry, now pointing at this worker.
      ctx.router.subscribe(sub.filter, s.handle, sub.options, sub.subscriptionId);
    }
    for (const e of state.inflight) s.inflight.set(e.packetId, { message: msg(e.record), qos: e.qos, retain: e.retain, subscriptionIds: e.ids, packetId: e.packetId, state: e.state });
    for (const q of state.queue) s.queue.push({ message: msg(q.record), qos: q.qos, retain: q.retain, subscriptionIds: q.ids });
    for (const id of state.incomingQos2) s.incomingQos2.add(id);
    this.track(s);
    return s;
  }

  /**
   * Brings back a session from the store (after a restart or a worker crash): offline, with its
   * subscriptions routed to this worker, its deliveries queued or in flight as they were, its
   * incoming QoS 2 ids, its expiry and its pending will counted from when the client went away.
   */
  restore(stored: StoredSession, subscriptions: StoredSubscription[], deliveries: LoadedDelivery[], incomingQos2: number[]): void {
    const ctx = this.ctx;
    const now = Date.now();
    const out = this.claimOut;
    this.registry.claim(stored.clientId, ctx.workerId, false, out);
    const s = new Session(out[0], stored.clientId, { maxQueued: ctx.config.limits.maxQueuedMessages, dropPolicy: ctx.config.limits.queueDropPolicy }, stored.username ?? undefined);
    s.expiryInterval = stored.expiryInterval;
    s.stored = true;
    // A client still connected when the broker stopped lost its connection then.
    s.disconnectedAt = stored.disconnectedAt ?? now;
    this.registry.setPersistent(s.handle, s.clientId, true);
    for (const sub of subscriptions) {
      const entry = { filter: sub.filter, options: sub.options, subscriptionId: sub.subscriptionId };
      s.subscriptions.set(sub.filter, entry);
      ctx.router.subscribe(sub.filter, s.handle, sub.options, sub.subscriptionId);
    }
    for (const d of deliveries) {
      const message = fromStored(d.message, now);
      const delivery = { message, qos: d.qos, retain: d.retain, subscriptionIds: d.subscriptionIds.length ? d.subscriptionIds : null };
      if (d.state === 'queued' || d.packetId === 0 || s.inflight.has(d.packetId)) s.queue.push(delivery);
      else s.inflight.set(d.packetId, { ...delivery, packetId: d.packetId, state: d.state === 'pubrel' ? 'pubrel' : 'publish' });
    }
    for (const id of incomingQos2) s.incomingQos2.add(id);
    this.track(s);
    if (stored.will) {
      const will = { message: { ...fromStored({ ...stored.will.message, id: 0n }, now), storeId: undefined }, delay: stored.will.delay };
      const wait = s.disconnectedAt + will.delay * 1000 - now;
      if (wait <= 0) this.publishWill(s, will.message);
      else this.delayWill(s, will, wait);
    }
    if (s.expiryInterval !== NEVER_EXPIRES) {
      const left = s.disconnectedAt + s.expiryInterval * 1000 - now;
      if (left <= 0) this.end(s, true);
      else s.expiryTimer = setTimeout(() => this.end(s, true), left);
    }
  }

  /**
   * Opens an internal session with the given handle (allocated by the supervisor, so it survives a
   * worker restart): its deliveries go to `sink`. Not registered as a client.
   */
  openInternal(handle: number, name: string, sink: (d: Delivery) => void): Session {
    const s = new Session(handle, name, { maxQueued: 0, dropPolicy: 'drop-newest' });
    s.sink = sink;
    this.internal.set(handle, s);
    return s;
  }

  /** Closes an internal session: its subscriptions leave the routing core. */
  closeInternal(session: Session): void {
    if (this.internal.get(session.handle) !== session) return;
    this.internal.delete(session.handle);
    this.ctx.router.removeSession(session.handle);
  }

  /** Shutdown: every session of this worker, for persistence or a final count. */
  all(): IterableIterator<Session> {
    return this.byHandle.values();
  }
}
