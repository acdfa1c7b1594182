// SessionTable: the sessions owned by one worker thread, by handle and by client id, and the
// claims of client ids this thread holds. A CONNECT claims its client id in the process-wide
// ClientRegistry; each claim has a generation and names the claim before it, so the claims of one
// client id form a chain, and the session passes along that chain one owner at a time: a claim
// asks the worker of the previous claim for the session, and that worker answers only once its
// own claim is settled (its CONNACK sent, or its CONNECT failed). So takeover is linearizable per
// client id however many connections race for it, on one worker or several: the session is
// handed over whole, a resumed session is present, nothing is left behind, and a connection gets
// CONNACK before it is taken over. Owned by the worker thread; see handover.ts for the state
// that travels between workers.
import type { ClientRegistry } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import type { EndpointCounters } from '../../broker/endpoint-counters.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { Delivery } from '../../router/delivery.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import { NEVER_EXPIRES } from '../../store/types.ts';
import type { Persistence } from './persistence.ts';
import { Session, type SessionLimits } from './session.ts';
import type { SessionLink } from './link.ts';
import type { Outbox } from './outbox.ts';
import type { Wills } from './wills.ts';
import { exportState, importState, LOAD_FROM_STORE, type HandoverMessage, type SessionState } from './handover.ts';
import { HandoverFences } from './fences.ts';

/** What the session table needs from its worker thread. */
export interface SessionTableEnv {
  readonly workerId: number;
  readonly limits: SessionLimits;
  readonly log: Logger;
  readonly stats: WorkerStats;
  readonly router: WorkerRouter;
  readonly persistence: Persistence | null;
  readonly outbox: Outbox;
  readonly wills: Wills;
  readonly endpointCounters: EndpointCounters;
  readonly registry: InstanceType<typeof ClientRegistry>;
  /** Posts a hand-over message to another worker thread. */
  sendControl(worker: number, msg: HandoverMessage): void;
  /** The other worker threads running now. */
  peers(): readonly number[];
  /** Loads the stored session of `clientId` under `handle`, offline and not yet routed (when the
   * worker that held it died); null when it is not in the store. */
  loadStored(clientId: string, handle: number): Promise<Session | null>;
  /** The other nodes of a cluster, asked for a client id before this node claims it (null, or
   * not `enabled`, without a cluster). */
  readonly nodes?: NodeClaims | null;
}

/** Claims of a client id across the nodes of a cluster (src/cluster/claims.ts, through the main
 * thread): another node holding the client id takes its connection over (0x8E) and gives up the
 * session; `resume`: its state comes back, to continue here. */
export interface NodeClaims {
  readonly enabled: boolean;
  /** The session's state from the node that held it, LOAD_FROM_STORE (taken from the store the
   * nodes share), or null (no node held it). */
  claim(clientId: string, resume: boolean): Promise<SessionState | typeof LOAD_FROM_STORE | null>;
}

/** One claim of a client id held by this thread (see the file comment). */
interface Claim {
  readonly clientId: string;
  readonly generation: number;
  readonly handle: number;
  /** The session once the claim has it (null while it is being handed over, or none). */
  session: Session | null;
  /** CONNACK was sent or the CONNECT failed: the claim may be taken over. */
  settled: boolean;
  /** The next claim's hand-over, waiting for this claim to settle. */
  next: (() => void) | null;
}

interface HandoverRequest {
  generation: number;
  resume: boolean;
  /** The worker of the asking claim, and its generation. */
  from: number;
  forGeneration: number;
}

/** What a claim received from the claim before it: the session itself (same worker), its state
 * (another worker), the session loaded from the store (the worker holding it died), or none. */
type Received = { kind: 'session'; session: Session } | { kind: 'state'; state: SessionState; from: number } | { kind: 'loaded'; session: Session } | { kind: 'none' } | { kind: 'gone' };

/** A session being opened for a CONNECT; the connect handler settles it exactly once. */
export interface Opening {
  readonly session: Session;
  /** The client's previous session continues [MQTT-3.2.2-3]. */
  readonly present: boolean;
  /** CONNACK was sent: deliveries resume on the connection; a takeover waiting may proceed. */
  attach(): void;
  /** The CONNECT failed after the session was opened: the session stays offline (or ends with
   * expiry 0); a takeover waiting may proceed. */
  abandon(): void;
}

/** How long a CONNECT waits for the previous owner of its session before it is refused (the
 * hand-over still completes afterwards: the session is kept, offline). */
const HANDOVER_WAIT_MS = 10_000;
/** Sessions handed to another worker are remembered this long: stray deliveries go there. */
const MOVED_MEMORY_MS = 60_000;

export class SessionTable {
  readonly byHandle = new Map<number, Session>();
  readonly byClientId = new Map<string, Session>();
  /** The broker's own sessions (local subscriptions), by handle: not in the client registry, so
   * no MQTT client can reach or take them over. */
  readonly internal = new Map<number, Session>();
  /** Sessions handed to another worker recently: stray deliveries are forwarded there. */
  private readonly moved = new Map<number, number>();
  /** Claims this thread holds, by generation. */
  private readonly claims = new Map<number, Claim>();
  /** The claim that holds each session of this thread, by handle. */
  private readonly claimOf = new Map<number, Claim>();
  /** Claims waiting for the session from another worker, by generation. */
  private readonly waiting = new Map<number, { worker: number; resolve(r: Received): void }>();
  private readonly claimOut = new Uint32Array(6);
  /** Sessions that came from another worker, holding deliveries until their order is assured. */
  private readonly fences: HandoverFences;

  constructor(private readonly env: SessionTableEnv) {
    this.fences = new HandoverFences({
      workerId: env.workerId,
      stats: env.stats,
      maxHeld: Math.max(1, env.limits.maxQueued),
      peers: () => env.peers(),
      sendControl: (worker, msg) => env.sendControl(worker, msg),
      flush: () => env.router.flush(),
      afterDeferred: (done) => env.router.afterDeferred(done),
      release: (handle, held) => {
        const s = this.byHandle.get(handle);
        if (s) for (const d of held) env.outbox.deliver(s, d, null);
      },
    });
  }

  get size(): number {
    return this.byHandle.size;
  }

  /** True when some worker holds a session for `clientId`. */
  known(clientId: string): boolean {
    return this.env.registry.lookup(clientId) !== null;
  }

  movedTo(handle: number): number | undefined {
    return this.moved.get(handle);
  }

  /** Every client session of this thread. */
  all(): IterableIterator<Session> {
    return this.byHandle.values();
  }

  /** Whether `session` is (still) a session of this thread. */
  owns(session: Session): boolean {
    return this.byHandle.get(session.handle) === session || this.internal.get(session.handle) === session;
  }

  // ---- opening a session for a CONNECT ------------------------------------------------------

  /**
   * Claims `clientId` for a CONNECT and opens its session: a new one, or the existing one (here
   * or on another worker, after its connection is taken over) when Clean Start is 0
   * [MQTT-3.1.2-4 .. MQTT-3.1.2-6, MQTT-3.1.4-3]. Null when the previous owner did not answer in
   * time (the caller refuses the CONNECT; the session is kept).
   */
  open(link: SessionLink, clientId: string, username: string | undefined, clean: boolean, expiry: number): Opening | null | Promise<Opening | null> {
    const nodes = this.env.nodes;
    // In a cluster the other nodes give the client id up first (one round trip, batched).
    if (nodes?.enabled) {
      return nodes.claim(clientId, !clean).then(
        (remote) => this.openHere(link, clientId, username, clean, expiry, remote),
        (err: unknown) => {
          this.env.log.warn('the other nodes did not answer a claim; the client id is claimed here alone', { clientId, err });
          return this.openHere(link, clientId, username, clean, expiry, null);
        },
      );
    }
    return this.openHere(link, clientId, username, clean, expiry, null);
  }

  private openHere(link: SessionLink, clientId: string, username: string | undefined, clean: boolean, expiry: number, remote: SessionState | typeof LOAD_FROM_STORE | null): Opening | null | Promise<Opening | null> {
    const env = this.env;
    const { claim, prevWorker, prevGeneration, hadPrevious } = this.claimHere(clientId, clean);
    const { handle, generation } = claim;
    if (remote === LOAD_FROM_STORE && !hadPrevious) {
      // Its node went down: the session was taken from the store the nodes share.
      return env.loadStored(clientId, handle).then(
        (s) => this.opened(claim, s === null ? null : this.routeHere(s), link, username, expiry),
        (err: unknown) => {
          env.log.error('a session taken from a node that went down could not be loaded; a new one starts', { clientId, err });
          return this.opened(claim, null, link, username, expiry);
        },
      );
    }
    if (!hadPrevious && remote !== null && remote !== LOAD_FROM_STORE) {
      // The session comes from another node: it continues here, under this node's handle.
      const session = this.routeHere(importState({ ...remote, handle, endpointSlot: -1, stored: false }, env.limits));
      this.track(session);
      const adopted = env.persistence?.adopted(session);
      if (adopted === undefined) return this.opened(claim, session, link, username, expiry);
      return adopted.then(() => this.opened(claim, session, link, username, expiry), (err: unknown) => {
        env.log.error('a session from another node could not be stored here; it continues in memory', { clientId, err });
        return this.opened(claim, session, link, username, expiry);
      });
    }
    if (hadPrevious && remote !== null && remote !== LOAD_FROM_STORE) env.log.warn('a client id was held here and on another node; the session here continues', { clientId });
    // A client id nobody holds: opened now, without waiting for anything.
    if (!hadPrevious) return this.opened(claim, null, link, username, expiry);
    return this.receive(prevWorker, { generation: prevGeneration, resume: !clean, from: env.workerId, forGeneration: generation }, claim).then(
      // null: timed out; the claim settles when the session arrives (see receive).
      (received) => (received === null ? null : this.opened(claim, this.take(received), link, username, expiry)),
    );
  }

  /** Claims `clientId` for this thread in the client registry: the new claim, and the claim
   * before it (the session's previous owner) when there was one. */
  private claimHere(clientId: string, clean: boolean): { claim: Claim; prevWorker: number; prevGeneration: number; hadPrevious: number } {
    const out = this.claimOut;
    this.env.registry.claim(clientId, this.env.workerId, clean, out);
    const [handle, generation, , prevWorker, prevGeneration, hadPrevious] = out;
    const claim: Claim = { clientId, generation, handle, session: null, settled: false, next: null };
    this.claims.set(generation, claim);
    return { claim, prevWorker, prevGeneration, hadPrevious };
  }

  /** The claim has its session (`previous`, or a new one): attached to `link`, not yet acknowledged. */
  private opened(claim: Claim, previous: Session | null, link: SessionLink, username: string | undefined, expiry: number): Opening {
    const env = this.env;
    const session = previous ?? this.newSession(claim);
    this.bind(claim, session);
    // The client is back: a will still waiting is not sent [MQTT-3.1.2-8].
    env.wills.cancel(session);
    if (session.expiryTimer) clearTimeout(session.expiryTimer);
    session.expiryTimer = null;
    session.expiryInterval = expiry;
    session.username = username;
    session.connection = link;
    return {
      session,
      present: previous !== null,
      attach: () => {
        session.attachedTick = env.router.tick();
        env.outbox.resume(session);
        this.settle(claim);
      },
      abandon: () => {
        if (session.connection === link) this.detach(session, link);
        this.settle(claim);
      },
    };
  }

  /** The session a claim received, routed here (Clean Start receives none: the previous session
   * ended where it was). */
  private take(received: Received): Session | null {
    switch (received.kind) {
      case 'session': return received.session; // same worker: already routed here
      case 'state': {
        const session = this.routeHere(importState(received.state, this.env.limits));
        this.fences.raise(session.handle, received.from);
        return session;
      }
      case 'loaded': return this.routeHere(received.session);
      default: return null;
    }
  }

  private newSession(claim: Claim): Session {
    const session = new Session(claim.handle, claim.clientId, this.env.limits);
    this.track(session);
    return session;
  }

  /** Asks the worker of the previous claim for the session; resolves with what it gives (null
   * when it takes longer than HANDOVER_WAIT_MS: the claim then settles when it arrives, and keeps
   * the session offline). */
  private receive(worker: number, req: HandoverRequest, claim: Claim): Promise<Received | null> {
    const env = this.env;
    return new Promise((resolve) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        env.stats.takeoverTimeouts++;
        env.log.warn('session hand-over is slow; CONNECT refused, the session is kept', { clientId: claim.clientId, worker });
        resolve(null);
      }, HANDOVER_WAIT_MS);
      const done = (r: Received) => {
        clearTimeout(timer);
        if (!late) {
          resolve(r);
          return;
        }
        // Too late for the CONNECT that asked: the session is kept here, offline.
        const session = this.take(r);
        if (session) {
          this.bind(claim, session);
          if (req.resume) this.detach(session, null);
          else void this.end(session, false);
        }
        this.settle(claim);
      };
      if (worker === env.workerId) {
        this.onRequest(req, done);
        return;
      }
      this.waiting.set(req.forGeneration, {
        worker,
        resolve: (r) => {
          if (r.kind !== 'gone') {
            done(r);
            return;
          }
          if (!req.resume) {
            done({ kind: 'none' });
            return;
          }
          // The worker holding the session died: a persistent session comes from the store.
          env.loadStored(claim.clientId, claim.handle).then(
            (s) => done(s ? { kind: 'loaded', session: s } : { kind: 'none' }),
            (err: unknown) => {
              env.log.error('stored session could not be loaded; starting a new one', { clientId: claim.clientId, err });
              done({ kind: 'none' });
            },
          );
        },
      });
      env.sendControl(worker, { t: 'handover', clientId: claim.clientId, ...req });
    });
  }

  /** Hand-over messages from other workers. */
  onControl(msg: HandoverMessage, from: number): void {
    if (msg.t === 'fence' || msg.t === 'fence-relay' || msg.t === 'fence-done') {
      this.fences.onMessage(msg);
      return;
    }
    if (msg.t === 'handover') {
      this.onRequest(msg, (r) => {
        const state = r.kind === 'state' ? r.state : null;
        this.env.sendControl(from, { t: 'handover-reply', forGeneration: msg.forGeneration, state });
      }, true);
      return;
    }
    const w = this.waiting.get(msg.forGeneration);
    if (!w) return;
    this.waiting.delete(msg.forGeneration);
    w.resolve(msg.state ? { kind: 'state', state: msg.state, from } : { kind: 'none' });
  }

  /**
   * Another node claims `clientId`: a claim of ours takes the session as a CONNECT here would
   * (its connection taken over with 0x8E once its own CONNECT settled), and the session then
   * leaves this node (routing core, client registry, store). Answers its state when it is to be
   * resumed (`resume`, and it outlives its connection), else null.
   */
  async releaseToNode(clientId: string, resume: boolean): Promise<SessionState | null> {
    const env = this.env;
    if (!this.known(clientId)) return null;
    const { claim, prevWorker, prevGeneration, hadPrevious } = this.claimHere(clientId, !resume);
    const { generation } = claim;
    const received = hadPrevious ? await this.receive(prevWorker, { generation: prevGeneration, resume, from: env.workerId, forGeneration: generation }, claim) : { kind: 'none' as const };
    // null: the previous owner was too slow; the session stays here, offline (see receive).
    if (received === null) return null;
    const session = this.take(received);
    if (!session) {
      this.claims.delete(generation);
      env.registry.release(clientId, generation);
      this.settle(claim);
      return null;
    }
    this.bind(claim, session);
    const state = exportState(session);
    await this.end(session, false).catch(() => undefined); // a failure is logged by Persistence
    this.settle(claim);
    return state;
  }

  /** A worker died: claims waiting for it get their session from the store. */
  onPeerGone(worker: number): void {
    this.fences.peerGone(worker);
    for (const [gen, w] of [...this.waiting]) {
      if (w.worker !== worker) continue;
      this.waiting.delete(gen);
      w.resolve({ kind: 'gone' });
    }
  }

  /**
   * The next claim asks for the session of our claim `req.generation`: once that claim has
   * settled, its connection is taken over (DISCONNECT 0x8E) and the session handed over whole, or
   * ended (Clean Start). `cross`: the asker is another worker (the session leaves as a state).
   */
  private onRequest(req: HandoverRequest, reply: (r: Received) => void, cross = false): void {
    const claim = this.claims.get(req.generation);
    if (!claim) {
      reply({ kind: 'none' }); // that claim's session has ended
      return;
    }
    const run = () => this.handOver(claim, req, reply, cross);
    if (claim.settled) run();
    else claim.next = run;
  }

  private settle(claim: Claim): void {
    if (claim.settled) return;
    claim.settled = true;
    const next = claim.next;
    claim.next = null;
    next?.();
  }

  private handOver(claim: Claim, req: HandoverRequest, reply: (r: Received) => void, cross: boolean): void {
    this.claims.delete(claim.generation);
    const session = claim.session;
    if (!session || this.byHandle.get(session.handle) !== session) {
      reply({ kind: 'none' });
      return;
    }
    this.claimOf.delete(session.handle);
    const link = session.connection;
    if (link) {
      // The connection is taken over [MQTT-3.1.4-3]: its will goes out as for any lost connection
      // (3.1.2.5), unless delayed, since the new connection cancels a delayed will [MQTT-3.1.2-8].
      this.detach(session, link, true);
      link.kick(RC.SESSION_TAKEN_OVER, 'takeover');
    }
    // What a fence still holds joins the session's queue before the session moves on.
    this.fences.lower(session.handle, true);
    this.env.wills.cancel(session);
    if (!req.resume || session.expiryInterval === 0) {
      // Clean Start, or a session that ended with its connection: it ends here. The new owner
      // stores its new session only after the old one has left the store.
      const removed = this.end(session, false);
      removed.then(() => reply({ kind: 'none' }), () => reply({ kind: 'none' })); // a failure is logged by Persistence
      return;
    }
    if (!cross) {
      // Same worker: the session stays in the table while it passes to the next claim, so a
      // delivery made meanwhile (a store write completing) finds it, and queues.
      session.clearTimers();
      reply({ kind: 'session', session });
      return;
    }
    this.forget(session);
    // Deliveries already batched for the new owner leave before the session does.
    this.env.router.flush();
    this.moved.set(session.handle, req.from);
    setTimeout(() => {
      if (this.moved.get(session.handle) === req.from) this.moved.delete(session.handle);
    }, MOVED_MEMORY_MS).unref();
    reply({ kind: 'state', state: exportState(session), from: this.env.workerId });
  }

  /** A session that comes to this worker (handed over, or loaded from the store): its
   * subscriptions are routed here. */
  private routeHere(session: Session): Session {
    this.moved.delete(session.handle);
    for (const sub of session.subscriptions.values()) {
      // Same session and filter: replaces the entry, now pointing at this worker.
      this.env.router.subscribe(sub.filter, session.handle, sub.options, sub.subscriptionId);
    }
    return session;
  }

  private bind(claim: Claim, session: Session): void {
    claim.session = session;
    this.claimOf.set(session.handle, claim);
    if (this.byHandle.get(session.handle) !== session) this.track(session);
  }

  // ---- connections coming and going ---------------------------------------------------------

  /** The network connection `link` of a session went away (closed by either side). */
  connectionClosed(session: Session, link: SessionLink): void {
    if (session.connection !== link) return;
    this.detach(session, link);
  }

  /**
   * The session loses its connection: the will goes out (now or after its delay) unless the
   * client disconnected normally, and the session ends (expiry 0) or waits for its expiry.
   * `handingOver`: the session is about to leave this thread (no expiry, no store write here).
   */
  private detach(session: Session, link: SessionLink | null, handingOver = false): void {
    session.connection = null;
    session.disconnectedAt = Date.now();
    const will = session.will;
    session.will = null;
    if (will && !link?.normalDisconnect) {
      if (!handingOver) this.env.wills.connectionLost(session, will);
      else if (will.delay === 0) this.env.wills.publish(session, will);
    }
    if (handingOver) return;
    if (session.expiryInterval === 0) {
      this.end(session, false);
      return;
    }
    this.env.persistence?.sessionDisconnected(session);
    if (session.expiryInterval !== NEVER_EXPIRES) {
      session.expiryTimer = setTimeout(() => this.end(session, true), session.expiryInterval * 1000);
    }
  }

  /** Ends a session: its subscriptions leave the routing core, its client id is released, and a
   * will still waiting is published now [MQTT-3.1.3-9: "or the Session ends"]. Resolves when it
   * has left the store. */
  end(session: Session, publishPendingWill: boolean): Promise<void> {
    if (this.byHandle.get(session.handle) !== session) return Promise.resolve();
    const env = this.env;
    this.fences.lower(session.handle, false);
    this.forget(session);
    env.router.removeSession(session.handle);
    const claim = this.claimOf.get(session.handle);
    if (claim) {
      // A claim asking for this one's session (once it settles) gets none.
      claim.session = null;
      this.claimOf.delete(session.handle);
      this.claims.delete(claim.generation);
      env.registry.release(session.clientId, claim.generation);
    }
    const removed = env.persistence?.sessionEnded(session) ?? Promise.resolve();
    if (session.endpointSlot >= 0) {
      env.endpointCounters.releaseSession(session.endpointSlot);
      session.endpointSlot = -1;
    }
    const will = session.will;
    session.will = null;
    if (will && publishPendingWill) env.wills.publish(session, will);
    return removed;
  }

  /** A delivery for the session `handle` of this thread; false when it has none by that handle. */
  deliverLocal(handle: number, d: Delivery, frameCache: Map<string, Buffer> | null, from: number): boolean {
    const s = this.byHandle.get(handle) ?? this.internal.get(handle);
    if (!s) return false;
    // Routed by another worker just after the session came here: after what it routed before.
    if (this.fences.hold(handle, d, from)) return true;
    this.env.outbox.deliver(s, d, frameCache);
    return true;
  }

  // ---- sessions restored from the store ---------------------------------------------------

  /** Takes on a session from the store (after a restart or a worker crash), offline: claims its
   * client id and routes its subscriptions here. `build` makes the session for the claimed handle. */
  restore(clientId: string, build: (handle: number) => Session): Session {
    const out = this.claimOut;
    this.env.registry.claim(clientId, this.env.workerId, false, out);
    const session = this.routeHere(build(out[0]));
    const claim: Claim = { clientId, generation: out[1], handle: out[0], session: null, settled: true, next: null };
    this.claims.set(claim.generation, claim);
    this.bind(claim, session);
    this.env.registry.setPersistent(session.handle, clientId, true);
    // Its will and its expiry count from when the client went away.
    const now = Date.now();
    const will = session.will;
    if (will) {
      session.will = null;
      const wait = session.disconnectedAt + will.delay * 1000 - now;
      if (wait <= 0) this.env.wills.publish(session, will);
      else this.env.wills.delay(session, will, wait);
    }
    if (session.expiryInterval !== NEVER_EXPIRES) {
      const left = session.disconnectedAt + session.expiryInterval * 1000 - now;
      if (left <= 0) void this.end(session, true);
      else session.expiryTimer = setTimeout(() => this.end(session, true), left);
    }
    return session;
  }

  // ---- the broker's own sessions ------------------------------------------------------------

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
    this.env.router.removeSession(session.handle);
  }

  // ---- bookkeeping --------------------------------------------------------------------------

  private track(session: Session): void {
    this.byHandle.set(session.handle, session);
    this.byClientId.set(session.clientId, session);
    this.env.stats.sessions++;
  }

  /** Drops a session from this worker's tables (it moved or ended). */
  private forget(session: Session): void {
    session.clearTimers();
    this.byHandle.delete(session.handle);
    if (this.byClientId.get(session.clientId) === session) this.byClientId.delete(session.clientId);
    this.env.stats.sessions--;
  }
}
