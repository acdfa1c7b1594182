// Client ids across the nodes (main thread): a client id is held by one node at a time. A CONNECT
// asks, before its worker claims the client id, that every other running node give it up; the
// claims of one tick go to each node in one request (`spindle.claim.<node>`). A node holding the
// client id takes its connection over (DISCONNECT 0x8E), and the session leaves it (routing core,
// client registry, store): with Clean Start 0 its state travels back in the reply (subscriptions,
// messages queued and in flight, incoming QoS 2 ids, will) and continues on the claiming node.
import { deserialize, serialize } from 'node:v8';
import type { Msg } from '@nats-io/transport-node';

import type { ClusterPart, ClusterPartContext } from './part.ts';
import { token } from './names.ts';

interface Claim {
  id: number;
  clientId: string;
  resume: boolean;
}

/** What the claims need of the supervisor. A session's state is opaque here (a structured-clone
 * value made and read by the workers). */
export interface ClaimsHost {
  onNodeClaims(fn: (worker: number, claims: Claim[]) => void): void;
  answerNodeClaims(worker: number, replies: { id: number; state: unknown }[]): void;
  releaseClients(clients: readonly { clientId: string; resume: boolean }[]): Promise<unknown[]>;
}

/** How long a claim waits for another node (which may wait for a CONNECT in progress there). */
const REQUEST_TIMEOUT_MS = 10_000;
/** Claims in one request at most. */
const MAX_CLAIMS = 1000;

export interface ClaimCounters {
  /** Client ids this node asked the others for. */
  claimsSent: number;
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
  private queue: { worker: number; claim: Claim }[] = [];
  readonly counters: ClaimCounters = { claimsSent: 0, sessionsReceived: 0, sessionsGivenUp: 0, claimTimeouts: 0, tooLarge: 0, badRequests: 0 };

  constructor(private readonly host: ClaimsHost) {}

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
    if (this.queue.length === 0) setImmediate(() => void this.flush());
    for (const claim of claims) this.queue.push({ worker, claim });
  }

  private async flush(): Promise<void> {
    const ctx = this.ctx!;
    while (this.queue.length > 0) {
      const items = this.queue.splice(0, MAX_CLAIMS);
      this.counters.claimsSent += items.length;
      const body = JSON.stringify(items.map((i) => ({ clientId: i.claim.clientId, resume: i.claim.resume })));
      const states: unknown[] = items.map(() => null);
      const peers = ctx.natsUp() ? ctx.runningPeers() : [];
      await Promise.all(peers.map(async (peer) => {
        try {
          const reply = await ctx.nc.request(`spindle.claim.${token(peer)}`, body, { timeout: REQUEST_TIMEOUT_MS });
          const got = deserialize(reply.data) as unknown[];
          // A client id is held by one node at most: the first state found is the session.
          got.forEach((s, i) => {
            if (s !== null && s !== undefined && states[i] === null) states[i] = s;
          });
        } catch (err) {
          this.counters.claimTimeouts++;
          ctx.log.warn('cluster: a node did not answer client-id claims in time; they went on without it', { node: peer, count: items.length, err });
        }
      }));
      const byWorker = new Map<number, { id: number; state: unknown }[]>();
      items.forEach((item, i) => {
        if (states[i] !== null) this.counters.sessionsReceived++;
        let list = byWorker.get(item.worker);
        if (!list) byWorker.set(item.worker, (list = []));
        list.push({ id: item.claim.id, state: states[i] });
      });
      for (const [worker, replies] of byWorker) this.host.answerNodeClaims(worker, replies);
    }
  }

  /** Another node's claims: the sessions held here for those client ids are given up. */
  private async onRequest(m: Msg): Promise<void> {
    let clients: { clientId: string; resume: boolean }[];
    try {
      clients = m.json<{ clientId: string; resume: boolean }[]>();
      if (!Array.isArray(clients) || !clients.every((c) => typeof c?.clientId === 'string' && typeof c.resume === 'boolean')) throw new Error('not a list of claims');
    } catch (err) {
      this.counters.badRequests++;
      this.ctx!.log.warn('cluster: a claim request that does not parse was ignored', { err });
      return;
    }
    let states: unknown[];
    try {
      states = await this.host.releaseClients(clients);
    } catch (err) {
      this.ctx!.log.error('cluster: sessions claimed by another node could not be given up', { err });
      states = clients.map(() => null);
    }
    for (const s of states) if (s !== null) this.counters.sessionsGivenUp++;
    const max = (this.ctx!.nc.info?.max_payload ?? 1_048_576) - 1024;
    let data = serialize(states);
    if (data.length > max) {
      // Each state alone must fit; one that does not cannot move (it has ended here).
      states = states.map((s) => {
        if (s === null || serialize(s).length <= max / Math.max(1, clients.length)) return s;
        this.counters.tooLarge++;
        this.ctx!.log.error('cluster: a session was too large to move to another node; it ended', { max });
        return null;
      });
      data = serialize(states);
    }
    m.respond(data);
  }
}
