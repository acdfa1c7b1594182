// Client ids across the nodes (main thread): a client id is held by one node at a time. A CONNECT
// asks, before its worker claims the client id, that every other running node give it up; the
// claims of one tick go to each node in one request (`spindle.claim.<node>`). A node holding the
// client id takes its connection over (DISCONNECT 0x8E), and the session leaves it (routing core,
// client registry, store): with Clean Start 0 its state travels back in the reply (subscriptions,
// messages queued and in flight, incoming QoS 2 ids, will) and continues on the claiming node.
// Two CONNECTs with one client id on two nodes at once: each node sees the other's claim while
// its own is out. The earlier claim (time, then node name: both nodes decide alike) goes first;
// the later one is asked again until the earlier one holds the client id, which it then takes
// over, as if the two CONNECTs had come one after the other on one node.
// A node that goes down while a claim waits for it: with a store the nodes share, the claiming
// node takes the client's stored session from it (atomically: the node adopting the dead node's
// sessions takes the others) and the CONNECT resumes it; else the claim asks the running nodes
// again (the adopter gives the session up once its adoption ended).
import { deserialize, serialize } from 'node:v8';
import type { Msg } from '@nats-io/transport-node';

import type { ClusterPart, ClusterPartContext } from './part.ts';
import { token } from './names.ts';
import { LOAD_FROM_STORE } from '../worker/node-claims.ts';
import type { SessionForwards } from './forwards.ts';

interface Claim {
  id: number;
  clientId: string;
  resume: boolean;
}

interface Queued {
  worker: number;
  claim: Claim;
  /** When this node first asked (ms), and how many times it asked again. */
  at: number;
  tries: number;
}

/** A claim as it crosses to the other nodes. */
interface WireClaim {
  clientId: string;
  resume: boolean;
  at: number;
}

/** What the claims need of the supervisor. A session's state is opaque here (a structured-clone
 * value made and read by the workers). */
export interface ClaimsHost {
  onNodeClaims(fn: (worker: number, claims: Claim[]) => void): void;
  answerNodeClaims(worker: number, replies: { id: number; state: unknown }[]): void;
  /** `worker`: the worker this node just let claim the client id, for one the registry does not
   * show yet (the worker has not read that answer): the release goes to it, after the answer. */
  releaseClients(clients: readonly { clientId: string; resume: boolean; worker?: number }[], forward?: number): Promise<unknown[]>;
  /** The filters of a session given up (a state releaseClients answered) that are forwarded to
   * its new node a while (see forwards.ts). */
  forwardedFilters(state: unknown): string[];
  /** Moves the stored sessions of these claims from node `from` (gone) to this node (those of
   * Clean Start claims end there): answers the client ids of the resumed ones moved (none without
   * a store the nodes share). */
  takeStoredSessions(claims: readonly { clientId: string; resume: boolean }[], from: string): Promise<string[]>;
}


/** How long a claim waits for another node (which may wait for a CONNECT in progress there). */
const REQUEST_TIMEOUT_MS = 10_000;
/** Claims in one request at most. */
const MAX_CLAIMS = 1000;
/** A claim that met an earlier one for the same client id on another node is asked again every
 * RETRY_MS, for at most RETRY_FOR_MS since it was first made (then it goes on, counted in
 * `claimConflictsUnresolved`): as long as a claim may wait for a node that does not answer. */
const RETRY_MS = 20;
const RETRY_FOR_MS = 10_000;
/** How long a claim that found no node listening waits for that node to be marked down (3 s
 * without heartbeats, checked every 250 ms). */
const GONE_WAIT_MS = 5000;
const delay = (ms: number) => new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ms).unref());
/** Answered in place of a session state: "my claim for this client id is earlier; ask again". */
const LATER = 'spindle:claim-later';
/** How long this node remembers which worker it let claim a client id: far longer than a worker
 * takes to read the answer and enter the client id in the registry. */
const ANSWERED_FOR_MS = 10_000;

export interface ClaimCounters {
  /** Client ids this node asked the others for. */
  claimsSent: number;
  /** Claims that met another node's claim for the same client id (asked again), and those still
   * unsettled after every retry (they went on). */
  claimConflicts: number;
  claimConflictsUnresolved: number;
  /** Claims that waited for a node that went down, and sessions then taken from the store the
   * nodes share (the CONNECT resumed them). */
  claimsOfGoneNodes: number;
  sessionsFromStore: number;
  /** Sessions that came from another node to continue here. */
  sessionsReceived: number;
  /** Client ids another node claimed that were held here (their connection taken over). */
  sessionsGivenUp: number;
  /** Requests another node did not answer in time (its claims went on without it). */
  claimTimeouts: number;
  /** A session whose state was larger than a NATS message may be: it ended instead of moving. */
  tooLarge: number;
  badRequests: number;
}

export class NodeClaimsPart implements ClusterPart {
  private ctx: ClusterPartContext | null = null;
  private queue: Queued[] = [];
  /** This node's claims out now, by client id: when it made them, and whether another node's
   * earlier claim for the same client id came meanwhile (then this one is asked again). */
  private readonly out = new Map<string, { at: number; later: boolean }>();
  /** The claims this node let its workers make lately, oldest first: client id -> worker and
   * when. Another node's claim that comes before the worker has entered the client id in the
   * registry is sent to that worker, after the answer, so it finds the claim (else both nodes
   * would hold the client id). */
  private readonly answered = new Map<string, { worker: number; at: number }>();
  /** Claims waiting for a node, told when it goes down. */
  private readonly downWaiters = new Map<string, Set<() => void>>();
  /** Sessions of nodes that went down being adopted here (claims wait for it). */
  adoption: { settled(): Promise<unknown> } | null = null;
  /** The sessions given up to other nodes, followed a while (see forwards.ts). */
  forwards: Pick<SessionForwards, 'begin' | 'departed'> | null = null;
  readonly counters: ClaimCounters = { claimsSent: 0, claimConflicts: 0, claimConflictsUnresolved: 0, claimsOfGoneNodes: 0, sessionsFromStore: 0, sessionsReceived: 0, sessionsGivenUp: 0, claimTimeouts: 0, tooLarge: 0, badRequests: 0 };

  constructor(private readonly host: ClaimsHost) {}

  peerDown(node: string): void {
    const waiters = this.downWaiters.get(node);
    this.downWaiters.delete(node);
    for (const w of waiters ?? []) w();
  }

  /** Resolves when `node` goes down (and `cancel` stops waiting). */
  private whenDown(node: string): { down: Promise<'down'>; cancel(): void } {
    let fire!: () => void;
    const down = new Promise<'down'>((resolve) => (fire = () => resolve('down')));
    let set = this.downWaiters.get(node);
    if (!set) this.downWaiters.set(node, (set = new Set()));
    set.add(fire);
    return { down, cancel: () => set.delete(fire) };
  }

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
    ctx.nc.subscribe(`spindle.claim.${token(ctx.nodeName)}`, { callback: (err, m) => {
      if (!err) void this.onRequest(m);
    } });
    this.host.onNodeClaims((worker, claims) => this.onClaims(worker, claims));
  }

  private onClaims(worker: number, claims: Claim[]): void {
    // Alone, or cut off from NATS (then every node serves its own clients): claimed here at once.
    if (this.ctx === null || !this.ctx.natsUp() || this.ctx.runningPeers().length === 0) {
      this.host.answerNodeClaims(worker, claims.map((c) => ({ id: c.id, state: null })));
      return;
    }
    const at = Date.now();
    this.enqueue(claims.map((claim) => ({ worker, claim, at, tries: 0 })));
  }

  private enqueue(items: Queued[]): void {
    if (this.queue.length === 0) setImmediate(() => void this.flush());
    this.queue.push(...items);
  }

  /** Whether this node's claim (made at `own`) goes before another node's (`at`, by `node`). */
  private first(own: number, at: number, node: string): boolean {
    return own < at || (own === at && this.ctx!.nodeName < node);
  }

  private async flush(): Promise<void> {
    const ctx = this.ctx!;
    while (this.queue.length > 0) {
      const items = this.queue.splice(0, MAX_CLAIMS);
      this.counters.claimsSent += items.length;
      for (const i of items) this.out.set(i.claim.clientId, { at: i.at, later: false });
      const body = JSON.stringify({ node: ctx.nodeName, claims: items.map((i): WireClaim => ({ clientId: i.claim.clientId, resume: i.claim.resume, at: i.at })) });
      const states: unknown[] = items.map(() => null);
      const later = items.map(() => false);
      /** Nodes that went down before they answered. */
      const gone: string[] = [];
      const peers = ctx.natsUp() ? ctx.runningPeers() : [];
      await Promise.all(peers.map(async (peer) => {
        const down = this.whenDown(peer);
        try {
          const reply = await Promise.race([ctx.nc.request(`spindle.claim.${token(peer)}`, body, { timeout: REQUEST_TIMEOUT_MS }), down.down]);
          if (reply === 'down') {
            gone.push(peer);
            return;
          }
          const got = deserialize(reply.data) as unknown[];
          // A client id is held by one node at most: the first state found is the session.
          got.forEach((s, i) => {
            if (s === LATER) later[i] = true;
            else if (s !== null && s !== undefined && states[i] === null) states[i] = s;
          });
        } catch (err) {
          // Nobody listens for it (a node that died has no subscriptions left): it is marked down
          // within seconds, then handled as gone.
          if ((err as Error).name !== 'TimeoutError' && (await Promise.race([down.down, delay(GONE_WAIT_MS)])) === 'down') {
            gone.push(peer);
            return;
          }
          this.counters.claimTimeouts++;
          ctx.log.warn('cluster: a node did not answer client-id claims in time; they went on without it', { node: peer, count: items.length, err });
        } finally {
          down.cancel();
        }
      }));
      // A node that went down meanwhile may have held some of these sessions: with a shared store
      // they are taken from it here (the CONNECT loads them); the others are asked again of the
      // nodes running now (one of them may be adopting them).
      const askAgain = new Set<number>();
      if (gone.length > 0) {
        this.counters.claimsOfGoneNodes += items.length;
        const open = items.filter((_, i) => states[i] === null && !later[i]).map((item) => ({ clientId: item.claim.clientId, resume: item.claim.resume }));
        const fromStore = new Set<string>();
        for (const node of gone) {
          try {
            for (const id of await this.host.takeStoredSessions(open.filter((c) => !fromStore.has(c.clientId)), node)) fromStore.add(id);
          } catch (err) {
            ctx.log.error('cluster: sessions of a node that went down could not be taken from the store', { node, err });
          }
        }
        items.forEach((item, i) => {
          if (states[i] !== null || later[i]) return;
          if (fromStore.has(item.claim.clientId)) states[i] = LOAD_FROM_STORE;
          else if (item.tries === 0) askAgain.add(i);
        });
      }
      // A session being adopted here is here before the CONNECT goes on.
      await this.adoption?.settled();
      const byWorker = new Map<number, { id: number; state: unknown }[]>();
      const again: Queued[] = [];
      items.forEach((item, i) => {
        const own = this.out.get(item.claim.clientId);
        this.out.delete(item.claim.clientId);
        if (askAgain.has(i)) {
          again.push({ ...item, tries: item.tries + 1 });
          return;
        }
        // Another node's earlier claim for this client id is out: ask again once it holds it
        // (then it gives the session up to this claim), unless a session came already.
        if (states[i] === null && (later[i] || own?.later)) {
          if (item.tries === 0) this.counters.claimConflicts++;
          if (Date.now() - item.at < RETRY_FOR_MS) {
            again.push({ ...item, tries: item.tries + 1 });
            return;
          }
          this.counters.claimConflictsUnresolved++;
          ctx.log.warn('cluster: a client id claimed on two nodes at once stayed unsettled; this claim went on', { clientId: item.claim.clientId });
        }
        if (states[i] === LOAD_FROM_STORE) this.counters.sessionsFromStore++;
        else if (states[i] !== null) this.counters.sessionsReceived++;
        let list = byWorker.get(item.worker);
        if (!list) byWorker.set(item.worker, (list = []));
        list.push({ id: item.claim.id, state: states[i] });
        this.answered.delete(item.claim.clientId); // re-inserted: the map stays oldest first
        this.answered.set(item.claim.clientId, { worker: item.worker, at: Date.now() });
      });
      this.forgetAnswered();
      for (const [worker, replies] of byWorker) this.host.answerNodeClaims(worker, replies);
      if (again.length > 0) setTimeout(() => this.enqueue(again), RETRY_MS).unref();
    }
  }

  private forgetAnswered(): void {
    const before = Date.now() - ANSWERED_FOR_MS;
    for (const [clientId, a] of this.answered) {
      if (a.at >= before) break;
      this.answered.delete(clientId);
    }
  }

  /** Another node's claims: the sessions held here for those client ids are given up. */
  private async onRequest(m: Msg): Promise<void> {
    let node: string;
    let claims: WireClaim[];
    try {
      ({ node, claims } = m.json<{ node: string; claims: WireClaim[] }>());
      if (typeof node !== 'string' || !Array.isArray(claims) || !claims.every((c) => typeof c?.clientId === 'string' && typeof c.resume === 'boolean' && typeof c.at === 'number')) throw new Error('not a list of claims');
    } catch (err) {
      this.counters.badRequests++;
      this.ctx!.log.warn('cluster: a claim request that does not parse was ignored', { err });
      return;
    }
    // A client id this node claims too, at the same time: the earlier claim goes first.
    const clients: WireClaim[] = [];
    const mine: boolean[] = claims.map((c) => {
      const own = this.out.get(c.clientId);
      if (own === undefined) return false;
      if (this.first(own.at, c.at, node)) return true;
      own.later = true;
      return false;
    });
    claims.forEach((c, i) => {
      if (!mine[i]) clients.push(c);
    });
    // A session being adopted here is given up only once it is here.
    await this.adoption?.settled();
    let released: unknown[];
    // What still comes here for the sessions resumed there is forwarded to them a while.
    const following = this.forwards?.begin(node, clients.filter((c) => c.resume).map((c) => c.clientId));
    try {
      this.forgetAnswered();
      released = clients.length === 0 ? [] : await this.host.releaseClients(clients.map((c) => ({ clientId: c.clientId, resume: c.resume, worker: this.answered.get(c.clientId)?.worker })), following?.handle);
      released.forEach((state, i) => {
        if (state !== null && state !== undefined && clients[i].resume) this.forwards?.departed(node, clients[i].clientId, this.host.forwardedFilters(state));
      });
    } catch (err) {
      this.ctx!.log.error('cluster: sessions claimed by another node could not be given up', { err });
      released = clients.map(() => null);
    } finally {
      following?.end();
    }
    let states: unknown[] = [];
    let r = 0;
    for (let i = 0; i < claims.length; i++) states.push(mine[i] ? LATER : released[r++]);
    for (const s of states) if (s !== null && s !== LATER) this.counters.sessionsGivenUp++;
    const max = (this.ctx!.nc.info?.max_payload ?? 1_048_576) - 1024;
    let data = serialize(states);
    if (data.length > max) {
      // Each state alone must fit; one that does not cannot move (it has ended here).
      states = states.map((s) => {
        if (s === null || s === LATER || serialize(s).length <= max / Math.max(1, claims.length)) return s;
        this.counters.tooLarge++;
        this.ctx!.log.error('cluster: a session was too large to move to another node; it ended', { max });
        return null;
      });
      data = serialize(states);
    }
    m.respond(data);
  }
}
