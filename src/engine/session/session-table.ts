// SessionTable: the sessions of one worker thread and the claims of client ids it holds, as the
// rest of the engine sees them. It is a composition and holds no state of its own: the index of
// client sessions (session-index.ts), the claim chain that orders takeovers of one client id on
// this node (claim-chain.ts), what happens to a session as connections come and go
// (session-lifecycle.ts), the fences that keep deliveries in order after a session moved between
// workers (fences.ts), the session's passage between the nodes of a cluster (node-handover.ts),
// and the broker's own sessions (internal-sessions.ts). `open`, for a CONNECT, is the one path
// that uses them together. Owned by the worker thread; see handover.ts for the state that
// travels between workers.
import type { ClientRegistry } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import type { EndpointCounters } from '../../broker/endpoint-counters.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { Delivery } from '../../router/delivery.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import type { Persistence } from './persistence.ts';
import type { Session, SessionLimits } from './session.ts';
import type { SessionLink } from './link.ts';
import type { Outbox } from './outbox.ts';
import type { Wills } from './wills.ts';
import { LOAD_FROM_STORE, type HandoverMessage, type SessionState } from './handover.ts';
import { HandoverFences } from './fences.ts';
import { SessionIndex } from './session-index.ts';
import { InternalSessions } from './internal-sessions.ts';
import { ClaimChain } from './claim-chain.ts';
import { SessionLifecycle, type Opening } from './session-lifecycle.ts';
import { NodeHandover, type FromNode, type MovingPlaces, type NodeClaims } from './node-handover.ts';

/** What the session table needs from its worker thread. */
export interface SessionTableEnv {
  readonly workerId: number;
  /** Exclusive subscriptions: the places a session held free when it ends, and move with it
   * between nodes. */
  readonly exclusive?: MovingPlaces;
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

/**
 * What `open` answers. An Opening at once when nothing has to be waited for: no claim of the
 * client id before this one, and no cluster to ask. That is the common CONNECT, and it stays
 * synchronous so that the connect handler goes on to CONNACK in the same turn, with no promise
 * and no microtask on the hot path. A PendingOpening when the claim waits: for the session's
 * previous owner (a connection here or on another worker), the other nodes, or the store.
 */
export type OpenResult = Opening | PendingOpening;

/** An open that waits; null when the previous owner of the session did not answer within
 * HANDOVER_WAIT_MS (claim-chain.ts): the caller refuses the CONNECT, and the session is kept. */
export type PendingOpening = Promise<Opening | null>;

export class SessionTable {
  readonly byHandle: Map<number, Session>;
  readonly byClientId: Map<string, Session>;
  private readonly index: SessionIndex;
  private readonly internal: InternalSessions;
  private readonly fences: HandoverFences;
  private readonly chain: ClaimChain;
  private readonly life: SessionLifecycle;
  private readonly nodes: NodeHandover;
  /** With a cluster: this node's tag (`<node>/<run>/`), which with a message's routing tick makes
   * the identity of a message published here (Message.origin for the others). Null: no cluster,
   * no identities kept. */
  originTag: string | null = null;

  constructor(private readonly env: SessionTableEnv) {
    const index = (this.index = new SessionIndex(env.stats));
    this.byHandle = index.byHandle;
    this.byClientId = index.byClientId;
    this.internal = new InternalSessions((handle) => env.router.removeSession(handle));
    this.fences = new HandoverFences({
      workerId: env.workerId,
      stats: env.stats,
      maxHeld: Math.max(1, env.limits.maxQueued),
      peers: () => env.peers(),
      sendControl: (worker, msg) => env.sendControl(worker, msg),
      flush: () => env.router.flush(),
      afterDeferred: (done) => env.router.afterDeferred(done),
      release: (handle, held) => {
        const s = index.byHandle.get(handle);
        if (s) for (const d of held) env.outbox.deliver(s, d, null);
      },
    });
    this.chain = new ClaimChain({
      workerId: env.workerId,
      registry: env.registry,
      stats: env.stats,
      log: env.log,
      sendControl: (worker, msg) => env.sendControl(worker, msg),
      loadStored: (clientId, handle) => env.loadStored(clientId, handle),
      holds: (session) => index.has(session),
      giveUp: (session, req, cross, reply) => this.life.giveUp(session, req, cross, reply),
      keepLate: (claim, received, resume) => this.life.keepLate(claim, received, resume),
    });
    this.life = new SessionLifecycle({ ...env, index, chain: this.chain, fences: this.fences });
    this.nodes = new NodeHandover({ ...env, index, chain: this.chain, life: this.life });
  }

  get size(): number {
    return this.index.size;
  }

  /** True when some worker holds a session for `clientId`. */
  known(clientId: string): boolean {
    return this.env.registry.lookup(clientId) !== null;
  }

  /** The forward handle of the node the session `handle` left for lately (see SessionIndex). */
  forwardOf(handle: number): number | undefined {
    return this.index.forwardOf(handle);
  }

  movedTo(handle: number): number | undefined {
    return this.index.movedTo(handle);
  }

  /** Every client session of this thread. */
  all(): IterableIterator<Session> {
    return this.index.all();
  }

  /** Whether `session` is (still) a session of this thread. */
  owns(session: Session): boolean {
    return this.index.has(session) || this.internal.has(session);
  }

  // ---- opening a session for a CONNECT ------------------------------------------------------

  /**
   * Claims `clientId` for a CONNECT and opens its session: a new one, or the existing one (here
   * or on another worker, after its connection is taken over) when Clean Start is 0
   * [MQTT-3.1.2-4 .. MQTT-3.1.2-6, MQTT-3.1.4-3]. See OpenResult for when it answers at once.
   */
  open(link: SessionLink, clientId: string, username: string | undefined, clean: boolean, expiry: number): OpenResult {
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

  /** Claims `clientId` on this node, with what the other nodes gave up (`remote`). */
  private openHere(link: SessionLink, clientId: string, username: string | undefined, clean: boolean, expiry: number, remote: FromNode): OpenResult {
    const { claim, previous } = this.chain.claim(clientId, clean);
    const life = this.life;
    if (previous === null) {
      // A client id nobody holds on this node: opened now, without waiting for anything.
      if (remote === null) return life.opened(claim, null, link, username, expiry);
      return this.nodes.continueHere(claim, remote, (session) => life.opened(claim, session, link, username, expiry));
    }
    if (remote !== null && remote !== LOAD_FROM_STORE) this.env.log.warn('a client id was held here and on another node; the session here continues', { clientId });
    return this.chain.receive(claim, previous, !clean).then(
      // null: timed out; the claim settles when the session arrives (see ClaimChain.receive).
      (received) => (received === null ? null : life.opened(claim, life.adopt(received), link, username, expiry)),
    );
  }

  /**
   * Another node claims `clientId`: the session leaves this node (see NodeHandover). Answers its
   * state when it is to be resumed, else null.
   */
  releaseToNode(clientId: string, resume: boolean, forward?: number): Promise<SessionState | null> {
    return this.nodes.releaseToNode(clientId, resume, forward);
  }

  // ---- messages from other workers ----------------------------------------------------------

  /** Hand-over messages from other workers. */
  onControl(msg: HandoverMessage, from: number): void {
    if (msg.t === 'fence' || msg.t === 'fence-relay' || msg.t === 'fence-done') this.fences.onMessage(msg);
    else this.chain.onMessage(msg, from);
  }

  /** A worker died: claims waiting for it get their session from the store, and fences stop
   * waiting for it. */
  onPeerGone(worker: number): void {
    this.fences.peerGone(worker);
    this.chain.peerGone(worker);
  }

  // ---- connections, deliveries, the store ---------------------------------------------------

  /** The network connection `link` of a session went away (closed by either side). */
  connectionClosed(session: Session, link: SessionLink): void {
    this.life.connectionClosed(session, link);
  }

  /** Ends a session (see SessionLifecycle.end). Resolves when it has left the store. */
  end(session: Session, publishPendingWill: boolean): Promise<void> {
    return this.life.end(session, publishPendingWill);
  }

  /** A delivery for the session `handle` of this thread; false when it has none by that handle. */
  deliverLocal(handle: number, d: Delivery, frameCache: Map<string, Buffer> | null, from: number): boolean {
    const s = this.byHandle.get(handle) ?? this.internal.get(handle);
    if (!s) return false;
    // In a cluster, a session that moves between nodes may be sent a message twice (see
    // Session.firstCopy): the second copy is dropped. Only sessions that outlive their
    // connection move with their state; QoS 0 is at most once anyway.
    if (this.originTag !== null && d.qos > 0 && s.expiryInterval > 0 && s.sink === null) {
      const m = d.message;
      const key = m.origin ?? (m.seq === undefined ? undefined : this.originTag + m.seq);
      if (key !== undefined && !s.firstCopy(key, Date.now())) {
        this.env.stats.dropped.clusterCopy++;
        return true;
      }
    }
    // Routed by another worker just after the session came here: after what it routed before.
    if (this.fences.hold(handle, d, from)) return true;
    this.env.outbox.deliver(s, d, frameCache);
    return true;
  }

  /** The handles of the sessions of these client ids on this node (any worker), for a routing
   * that is only for them (NodeScope.only). */
  handlesOf(clientIds: readonly string[]): Set<number> {
    const out = new Set<number>();
    for (const id of clientIds) {
      const held = this.env.registry.lookup(id);
      if (held) out.add(held[0]);
    }
    return out;
  }

  /** Takes on a session from the store (after a restart or a worker crash), offline: claims its
   * client id and routes its subscriptions here. `build` makes the session for the claimed handle. */
  restore(clientId: string, build: (handle: number) => Session): Session {
    return this.life.restore(clientId, build);
  }

  // ---- the broker's own sessions ------------------------------------------------------------

  /**
   * Opens an internal session with the given handle (allocated by the supervisor, so it survives a
   * worker restart): its deliveries go to `sink`. Not registered as a client.
   */
  openInternal(handle: number, name: string, sink: (d: Delivery) => void): Session {
    return this.internal.open(handle, name, sink);
  }

  /** Closes an internal session: its subscriptions leave the routing core. */
  closeInternal(session: Session): void {
    this.internal.close(session);
  }
}
