// NodeHandover: a session's passage between the nodes of a cluster, on this worker thread's side.
// Before a CONNECT claims its client id here, the other nodes give it up (NodeClaims: asked in
// batches by src/worker/node-claims.ts, answered by src/cluster/claims.ts in the main thread);
// what they give back, the session's state or word to load it from the store the nodes share,
// becomes the claim's session here. When another node claims a client id held here, the session
// leaves this node (releaseToNode). Inside the node the claim chain orders everything as for any
// CONNECT. Owned by the worker thread.
import type { ClientRegistry } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import { removeSubscription } from './subscriptions.ts';
import type { Persistence } from './persistence.ts';
import type { Session, SessionLimits } from './session.ts';
import { exportState, importState, LOAD_FROM_STORE, type SessionState } from './handover.ts';
import type { SessionIndex } from './session-index.ts';
import type { Claim, ClaimChain } from './claim-chain.ts';
import type { Opening, SessionLifecycle } from './session-lifecycle.ts';

/** Claims of a client id across the nodes of a cluster (src/cluster/claims.ts, through the main
 * thread): another node holding the client id takes its connection over (0x8E) and gives up the
 * session; `resume`: its state comes back, to continue here. */
export interface NodeClaims {
  readonly enabled: boolean;
  /** The session's state from the node that held it, LOAD_FROM_STORE (taken from the store the
   * nodes share), or null (no node held it). */
  claim(clientId: string, resume: boolean): Promise<FromNode>;
}

/** What the other nodes gave up for a client id (see NodeClaims.claim). */
export type FromNode = SessionState | typeof LOAD_FROM_STORE | null;

/** Exclusive subscriptions (src/features/exclusive): a session resumed on another node takes its
 * places there (the cluster lets the same client id take its own place again). */
export interface MovingPlaces {
  readonly enabled: boolean;
  holds(filter: string, clientId: string): boolean;
  acquire(filter: string, clientId: string): 'taken' | 'held' | 'busy' | 'full';
  confirm(filter: string, clientId: string, persist: boolean): true | Promise<boolean>;
  release(filter: string, clientId: string): void;
}

/** What the node hand-over needs from its worker thread. */
export interface NodeHandoverEnv {
  readonly limits: SessionLimits;
  readonly log: Logger;
  readonly persistence: Persistence | null;
  readonly registry: Pick<InstanceType<typeof ClientRegistry>, 'lookup'>;
  readonly index: SessionIndex;
  readonly chain: ClaimChain;
  readonly life: SessionLifecycle;
  /** Loads the stored session of `clientId` under `handle`, offline and not yet routed; null
   * when it is not in the store. */
  loadStored(clientId: string, handle: number): Promise<Session | null>;
  readonly router: WorkerRouter;
  readonly exclusive?: MovingPlaces;
}

/** Whether a session's subscription is forwarded after it moved to another node (a shared
 * group's member is picked where the message is routed: not forwarded). */
export function forwardedFilter(filter: string): boolean {
  return !filter.startsWith('$share/') && !filter.startsWith('$queue/');
}

export class NodeHandover {
  constructor(private readonly env: NodeHandoverEnv) {}

  /**
   * The session another node gave up (`remote`) continues under `claim`, a claim with none before
   * it on this node; `open` opens it for the CONNECT (null: a new session). Loaded from the shared
   * store when its node went down; else imported under this node's handle, and stored here before
   * the CONNECT goes on.
   */
  continueHere(claim: Claim, remote: SessionState | typeof LOAD_FROM_STORE, open: (session: Session | null) => Opening): Opening | Promise<Opening> {
    const env = this.env;
    if (remote === LOAD_FROM_STORE) {
      // Its node went down: the session was taken from the store the nodes share.
      return env.loadStored(claim.clientId, claim.handle).then(
        (s) => open(s === null ? null : env.life.routeHere(s)),
        (err: unknown) => {
          env.log.error('a session taken from a node that went down could not be loaded; a new one starts', { clientId: claim.clientId, err });
          return open(null);
        },
      );
    }
    // The session comes from another node: it continues here, under this node's handle.
    const session = env.life.routeHere(importState({ ...remote, handle: claim.handle, endpointSlot: -1, stored: false }, env.limits));
    env.index.add(session);
    if (remote.exclusive !== undefined) this.takePlaces(session, remote.exclusive);
    const adopted = env.persistence?.adopted(session);
    if (adopted === undefined) return open(session);
    return adopted.then(() => open(session), (err: unknown) => {
      env.log.error('a session from another node could not be stored here; it continues in memory', { clientId: claim.clientId, err });
      return open(session);
    });
  }

  /**
   * Another node claims `clientId`: a claim of ours takes the session as a CONNECT here would
   * (its connection taken over with 0x8E once its own CONNECT settled), and the session then
   * leaves this node (routing core, client registry, store). Answers its state when it is to be
   * resumed (`resume`, and it outlives its connection), else null.
   * `forward`: the claiming node's forward handle. A session resumed there keeps its (plain)
   * filters here under that handle, entered before the session leaves the routing core, so a
   * message routed here from then on (one another node sent before it knew of the move, or one
   * published here) is forwarded to it (src/cluster/forwards.ts ends them after a while).
   */
  async releaseToNode(clientId: string, resume: boolean, forward?: number): Promise<SessionState | null> {
    const { chain, life } = this.env;
    if (this.env.registry.lookup(clientId) === null) return null;
    const { claim, previous } = chain.claim(clientId, !resume);
    const received = previous !== null ? await chain.receive(claim, previous, resume) : { kind: 'none' as const };
    // null: the previous owner was too slow; the session stays here, offline (see receive).
    if (received === null) return null;
    const session = life.adopt(received);
    if (!session) {
      chain.withdraw(claim);
      return null;
    }
    life.bind(claim, session);
    if (forward !== undefined && resume && session.expiryInterval > 0) {
      for (const filter of session.subscriptions.keys()) if (forwardedFilter(filter)) this.env.router.tap(forward, filter);
      // Deliveries another worker routed to it before, arriving after it left, follow it too.
      this.env.index.markLeft(session.handle, forward);
    }
    const state = exportState(session);
    const places = this.env.exclusive;
    if (resume && places?.enabled) {
      const held = [...session.subscriptions.keys()].filter((f) => places.holds(f, clientId));
      if (held.length > 0) state.exclusive = held;
    }
    await life.end(session, false).catch(() => undefined); // a failure is logged by Persistence
    chain.settle(claim);
    return state;
  }

  /** The exclusive places a session held on the node it came from: taken here (the cluster gives
   * the client its own place again); one another client took meanwhile is lost, and the
   * subscription to it removed, so one client at a time receives through it. */
  private takePlaces(session: Session, filters: readonly string[]): void {
    const places = this.env.exclusive;
    if (!places?.enabled) return;
    const env = { router: this.env.router, persistence: this.env.persistence, maxTopicLevels: 0 };
    const lose = (filter: string) => {
      this.env.log.warn('an exclusive subscription\'s place was taken by another client while its session moved; the subscription is removed', { clientId: session.clientId, filter });
      removeSubscription(env, session, filter);
    };
    for (const filter of filters) {
      if (!session.subscriptions.has(filter)) continue;
      const got = places.acquire(filter, session.clientId);
      if (got === 'busy' || got === 'full') lose(filter);
      else if (got === 'taken') {
        const confirmed = places.confirm(filter, session.clientId, session.expiryInterval > 0);
        if (confirmed !== true) {
          void confirmed.then((ok) => {
            if (!ok && this.env.index.has(session) && session.subscriptions.has(filter)) lose(filter);
          });
        }
      }
    }
  }
}
