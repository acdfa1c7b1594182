// SessionLifecycle: what happens to a client session of this worker thread as its connections come
// and go: opened for a CONNECT (the Opening the connect handler settles), its connection lost (the
// will, the expiry, the store), ended (routing core, client id, store, endpoint count, a will
// still waiting), given up to the next claim of its client id (its connection taken over), arrived
// from another worker or the store (its subscriptions routed here), and taken on from the store
// after a restart. The claim chain (claim-chain.ts) decides when a session moves; this file moves
// it. Owned by the worker thread.
import type { ClientRegistry } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import type { EndpointCounters } from '../../broker/endpoint-counters.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import { NEVER_EXPIRES } from '../../store/types.ts';
import type { Persistence } from './persistence.ts';
import { Session, type SessionLimits } from './session.ts';
import type { SessionLink } from './link.ts';
import type { Outbox } from './outbox.ts';
import type { Wills } from './wills.ts';
import { exportState, importState } from './handover.ts';
import type { HandoverFences } from './fences.ts';
import type { SessionIndex } from './session-index.ts';
import type { Claim, ClaimChain, HandoverRequest, Received } from './claim-chain.ts';

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

/** What the session lifecycle needs from its worker thread. */
export interface SessionLifecycleEnv {
  readonly workerId: number;
  readonly limits: SessionLimits;
  readonly router: WorkerRouter;
  readonly persistence: Persistence | null;
  readonly outbox: Outbox;
  readonly wills: Wills;
  readonly endpointCounters: EndpointCounters;
  readonly registry: Pick<InstanceType<typeof ClientRegistry>, 'setPersistent'>;
  readonly index: SessionIndex;
  readonly chain: ClaimChain;
  readonly fences: HandoverFences;
  /** Exclusive subscriptions: the places a session held free when it ends. */
  readonly exclusive?: { readonly enabled: boolean; release(filter: string, clientId: string): void };
}

export class SessionLifecycle {
  constructor(private readonly env: SessionLifecycleEnv) {}

  /** The claim has its session (`previous`, or a new one): attached to `link`, not yet acknowledged. */
  opened(claim: Claim, previous: Session | null, link: SessionLink, username: string | undefined, expiry: number): Opening {
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
        env.chain.settle(claim);
      },
      abandon: () => {
        if (session.connection === link) this.detach(session, link);
        env.chain.settle(claim);
      },
    };
  }

  /** The session a claim received, made a session of this thread (Clean Start receives none: the
   * previous session ended where it was). */
  adopt(received: Received): Session | null {
    switch (received.kind) {
      case 'session': return received.session; // same worker: already routed here
      case 'state': {
        const session = this.routeHere(importState(received.state, this.env.limits));
        this.env.fences.raise(session.handle, received.from);
        return session;
      }
      case 'loaded': return this.routeHere(received.session);
      default: return null;
    }
  }

  /** What a claim received after its CONNECT was refused for waiting too long: the session stays
   * here, offline (`resume`), or ends. */
  keepLate(claim: Claim, received: Received, resume: boolean): void {
    const session = this.adopt(received);
    if (!session) return;
    this.bind(claim, session);
    if (resume) this.detach(session, null);
    else void this.end(session, false);
  }

  /** A session that comes to this worker (handed over, or loaded from the store): its
   * subscriptions are routed here. */
  routeHere(session: Session): Session {
    this.env.index.arrived(session.handle);
    for (const sub of session.subscriptions.values()) {
      // Same session and filter: replaces the entry, now pointing at this worker.
      this.env.router.subscribe(sub.filter, session.handle, sub.options, sub.subscriptionId);
    }
    return session;
  }

  /** `claim` has `session`, which is a session of this thread from now on. */
  bind(claim: Claim, session: Session): void {
    this.env.chain.bind(claim, session);
    if (!this.env.index.has(session)) this.env.index.add(session);
  }

  /**
   * The next claim `req` takes the session over: its connection is taken over (DISCONNECT 0x8E)
   * and the session handed over whole, or ended (Clean Start, or expiry 0). `cross`: the next
   * claim is on another worker, and the session leaves as a state.
   */
  giveUp(session: Session, req: HandoverRequest, cross: boolean, reply: (r: Received) => void): void {
    const env = this.env;
    const link = session.connection;
    if (link) {
      // The connection is taken over [MQTT-3.1.4-3]: its will goes out as for any lost connection
      // (3.1.2.5), unless delayed, since the new connection cancels a delayed will [MQTT-3.1.2-8].
      this.detach(session, link, true);
      link.kick(RC.SESSION_TAKEN_OVER, 'takeover');
    }
    // What a fence still holds joins the session's queue before the session moves on.
    env.fences.lower(session.handle, true);
    env.wills.cancel(session);
    if (!req.resume || session.expiryInterval === 0) {
      // Clean Start, or a session that ended with its connection: it ends here. The new owner
      // stores its new session only after the old one has left the store.
      const removed = this.end(session, false);
      removed.then(() => reply({ kind: 'none' }), () => reply({ kind: 'none' })); // a failure is logged by Persistence
      return;
    }
    if (!cross) {
      // Same worker: the session stays in the index while it passes to the next claim, so a
      // delivery made meanwhile (a store write completing) finds it, and queues.
      session.clearTimers();
      reply({ kind: 'session', session });
      return;
    }
    this.forget(session);
    // Deliveries already batched for the new owner leave before the session does.
    env.router.flush();
    env.index.markMoved(session.handle, req.from);
    reply({ kind: 'state', state: exportState(session), from: env.workerId });
  }

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
    const env = this.env;
    session.connection = null;
    session.disconnectedAt = Date.now();
    const will = session.will;
    session.will = null;
    if (will && !link?.normalDisconnect) {
      if (!handingOver) env.wills.connectionLost(session, will);
      else if (will.delay === 0) env.wills.publish(session, will);
    }
    if (handingOver) return;
    if (session.expiryInterval === 0) {
      this.end(session, false);
      return;
    }
    env.persistence?.sessionDisconnected(session);
    if (session.expiryInterval !== NEVER_EXPIRES) {
      session.expiryTimer = setTimeout(() => this.end(session, true), session.expiryInterval * 1000);
    }
  }

  /** Ends a session: its subscriptions leave the routing core, its client id is released, and a
   * will still waiting is published now [MQTT-3.1.3-9: "or the Session ends"]. Resolves when it
   * has left the store. */
  end(session: Session, publishPendingWill: boolean): Promise<void> {
    const env = this.env;
    if (!env.index.has(session)) return Promise.resolve();
    env.fences.lower(session.handle, false);
    this.forget(session);
    if (env.exclusive?.enabled) for (const filter of session.subscriptions.keys()) env.exclusive.release(filter, session.clientId);
    env.router.removeSession(session.handle);
    env.chain.ended(session);
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

  /** Takes on a session from the store (after a restart or a worker crash), offline: claims its
   * client id and routes its subscriptions here. `build` makes the session for the claimed handle. */
  restore(clientId: string, build: (handle: number) => Session): Session {
    const env = this.env;
    const claim = env.chain.claimRestored(clientId);
    const session = this.routeHere(build(claim.handle));
    this.bind(claim, session);
    env.registry.setPersistent(session.handle, clientId, true);
    // Its will and its expiry count from when the client went away.
    const now = Date.now();
    const will = session.will;
    if (will) {
      session.will = null;
      const wait = session.disconnectedAt + will.delay * 1000 - now;
      if (wait <= 0) env.wills.publish(session, will);
      else env.wills.delay(session, will, wait);
    }
    if (session.expiryInterval !== NEVER_EXPIRES) {
      const left = session.disconnectedAt + session.expiryInterval * 1000 - now;
      if (left <= 0) void this.end(session, true);
      else session.expiryTimer = setTimeout(() => this.end(session, true), left);
    }
    return session;
  }

  private newSession(claim: Claim): Session {
    const session = new Session(claim.handle, claim.clientId, this.env.limits);
    this.env.index.add(session);
    return session;
  }

  /** Drops a session from this worker (it moved or ended): its timers stop. */
  private forget(session: Session): void {
    session.clearTimers();
    this.env.index.remove(session);
  }
}
