// Exclusive subscriptions across a cluster's nodes (main thread), a part of the cluster link.
// - Who holds each place is a key of the JetStream KV bucket `spindle-exclusive` (key: the
//   filter's 64-bit hash, as table.ts names it; value: {filter, clientId, node}), without expiry.
// - A place the node's table gave a SUBSCRIBE (the worker waits) is claimed by creating its key:
//   JetStream creates a key once, so of two nodes' SUBSCRIBEs at the same moment exactly one
//   wins and the other is refused 0x97. A key that exists already is granted only to the client
//   that holds it (its session came here from another node, or came back after a restart): the
//   key is rewritten with this node's name, on the revision read (compare-and-set).
// - A place freed here (unsubscribed, the session ended) deletes the key when it names this node
//   and the client, on the revision read: a key another node rewrote meanwhile stays.
// - A node that went down: the first running node by name (as for sessions, adoption.ts) waits for
//   the adoption of its sessions (a store the nodes share), then takes each place of that node
//   whose session is now here (its key rewritten with this node's name) and deletes the others:
//   their places are free. With LOCAL stores a dead node's sessions wait for it, their places do
//   not: once it is back, each of its persistent sessions claims its places again (below).
// - At start (restart): the places of the persistent sessions restored from the store
//   (places.ts) are claimed again; one another client took meanwhile is lost, and the restored
//   session's subscription to it removed. Keys naming this node that no restored session holds
//   (places of clean sessions before the restart) are deleted.
// - NATS away: a claim is refused (0x97, counted `reason="cluster"`), never granted on a guess.
import type { KV } from '@nats-io/kv';

import type { ClusterPart, ClusterPartContext } from '../../cluster/part.ts';
import type { Logger } from '../../log/index.ts';
import { hashes } from './table.ts';
import type { ExclusiveHold } from './types.ts';

export const EXCLUSIVE_BUCKET = 'spindle-exclusive';
/** Compare-and-set rounds before a claim gives up (each one lost to a concurrent write). */
const ROUNDS = 5;

interface Entry extends ExclusiveHold {
  node: string;
}

export interface ExclusiveClusterCounters {
  /** Claims granted by the cluster, and refused: busy (another node's client holds it) or
   * cluster (NATS could not be asked). */
  granted: number;
  busy: number;
  failed: number;
  /** Places of nodes that went down taken here with their sessions, and freed. */
  adopted: number;
  freedOfGone: number;
  /** Places of restored sessions another client took while this node was away (dropped). */
  lost: number;
}

/** What the cluster's places need of the node. */
export interface ExclusiveClusterHost {
  /** Resolves with the places the persistent sessions restored at start hold again. */
  restored(): Promise<ExclusiveHold[]>;
  /** Whether `clientId` holds `filter` in this node's table. */
  holds(filter: string, clientId: string): boolean;
  /** The places of node `node` kept in the store (a store the nodes share) that sessions now on
   * this node hold again: answers them (their store records now name this node). */
  adopt(node: string, holds: ExclusiveHold[]): Promise<ExclusiveHold[]>;
  /** Removes a restored session's subscription whose place another client holds. */
  drop(hold: ExclusiveHold): Promise<void>;
  adoptionSettled(): Promise<unknown>;
}

export type ClaimResult = 'granted' | 'busy' | 'cluster';

export function keyOf(filter: string): string {
  const [a, b] = hashes(filter);
  return `f${(a >>> 0).toString(16).padStart(8, '0')}${(b >>> 0).toString(16).padStart(8, '0')}`;
}

export class ExclusiveCluster implements ClusterPart {
  readonly name = 'exclusive';
  readonly counters: ExclusiveClusterCounters = { granted: 0, busy: 0, failed: 0, adopted: 0, freedOfGone: 0, lost: 0 };
  private ctx: ClusterPartContext | null = null;
  private kv: KV | null = null;
  private ready: Promise<void>;
  private markReady!: () => void;
  /** The writes of one key, one after the other (a claim and the free that follows it). */
  private readonly chains = new Map<string, Promise<unknown>>();
  private log: Logger;

  constructor(private readonly host: ExclusiveClusterHost, log: Logger) {
    this.log = log;
    this.ready = new Promise((resolve) => (this.markReady = resolve));
  }

  start(ctx: ClusterPartContext): void {
    this.ctx = ctx;
    this.log = ctx.log.named('exclusive');
    // In the background: the restored places come once the workers run (after this part starts).
    void this.open().catch((err: unknown) => this.log.error('exclusive subscriptions: the cluster\'s places could not be opened; claims are refused', { err }));
  }

  private async open(): Promise<void> {
    const ctx = this.ctx!;
    // Loaded only in a cluster, as the cluster's own modules are (src/node/features.ts).
    const { Kvm } = await import('@nats-io/kv');
    const kvm = new Kvm(ctx.nc);
    try {
      this.kv = await kvm.create(EXCLUSIVE_BUCKET, { history: 1, replicas: Math.min(3, ctx.runningPeers().length + 1) });
    } catch {
      this.kv = await kvm.create(EXCLUSIVE_BUCKET, { history: 1 });
    }
    const restored = await this.host.restored();
    // Keys naming this node from before a restart that no restored session holds: freed.
    for (const key of await this.keys()) {
      const e = await this.read(key);
      if (e !== null && e.entry.node === ctx.nodeName && !this.host.holds(e.entry.filter, e.entry.clientId)) {
        await this.kv.delete(key, { previousSeq: e.revision }).catch(() => undefined);
      }
    }
    this.markReady();
    for (const hold of restored) {
      if ((await this.claim(hold.filter, hold.clientId)) === 'granted') continue;
      this.counters.lost++;
      this.log.warn('exclusive subscriptions: a restored session\'s place was taken by another client while this node was away; its subscription is removed', { ...hold });
      await this.host.drop(hold).catch((err: unknown) => this.log.error('exclusive subscriptions: a lost place\'s subscription could not be removed', { ...hold, err }));
    }
  }

  /** Claims the place of `filter` for `clientId` across the cluster: granted, or refused (busy:
   * another client holds it; cluster: NATS could not be asked). */
  claim(filter: string, clientId: string): Promise<ClaimResult> {
    return this.chain(keyOf(filter), async (key) => {
      await this.ready;
      const kv = this.kv;
      if (kv === null || !this.ctx!.natsUp()) {
        this.counters.failed++;
        return 'cluster';
      }
      const value = JSON.stringify({ filter, clientId, node: this.ctx!.nodeName } satisfies Entry);
      try {
        for (let round = 0; round < ROUNDS; round++) {
          try {
            await kv.create(key, value);
            this.counters.granted++;
            return 'granted';
          } catch (err) {
            if (!exists(err)) throw err;
          }
          const e = await this.read(key);
          if (e === null) continue; // deleted meanwhile: create again
          if (e.entry.clientId !== clientId || e.entry.filter !== filter) {
            this.counters.busy++;
            return 'busy';
          }
          // Its own place (its session moved here, or came back): this node holds it now.
          try {
            await kv.update(key, value, e.revision);
            this.counters.granted++;
            return 'granted';
          } catch (err) {
            if (!exists(err)) throw err;
          }
        }
        this.counters.busy++;
        return 'busy';
      } catch (err) {
        this.counters.failed++;
        this.log.warn('exclusive subscriptions: a place could not be claimed across the cluster; refused', { filter, err: (err as Error).message });
        return 'cluster';
      }
    });
  }

  /** The place of `filter` freed here by `clientId`: its key goes when it names them. */
  free(filter: string, clientId: string): Promise<void> {
    return this.chain(keyOf(filter), async (key) => {
      await this.ready;
      if (this.kv === null) return;
      const e = await this.read(key);
      if (e === null || e.entry.clientId !== clientId || e.entry.node !== this.ctx!.nodeName) return;
      await this.kv.delete(key, { previousSeq: e.revision });
    }).catch((err: unknown) => this.log.warn('exclusive subscriptions: a freed place could not be deleted across the cluster', { filter, err: (err as Error).message }));
  }

  peerDown(node: string): void {
    const ctx = this.ctx;
    if (!ctx) return;
    if ([ctx.nodeName, ...ctx.runningPeers()].sort()[0] !== ctx.nodeName) return;
    void this.takeFrom(node).catch((err: unknown) => this.log.error('exclusive subscriptions: the places of a node that went down could not be settled', { node, err }));
  }

  private async takeFrom(node: string): Promise<void> {
    await this.ready;
    await this.host.adoptionSettled();
    const kv = this.kv!;
    const theirs: { key: string; entry: Entry }[] = [];
    for (const key of await this.keys()) {
      const e = await this.read(key);
      if (e !== null && e.entry.node === node) theirs.push({ key, entry: e.entry });
    }
    if (theirs.length === 0) return;
    const here = new Set((await this.host.adopt(node, theirs.map((t) => ({ filter: t.entry.filter, clientId: t.entry.clientId })))).map((h) => `${h.clientId}\n${h.filter}`));
    for (const t of theirs) {
      await this.chain(t.key, async () => {
        const e = await this.read(t.key);
        if (e === null || e.entry.node !== node || e.entry.clientId !== t.entry.clientId) return;
        if (here.has(`${t.entry.clientId}\n${t.entry.filter}`)) {
          await kv.update(t.key, JSON.stringify({ ...t.entry, node: this.ctx!.nodeName } satisfies Entry), e.revision);
          this.counters.adopted++;
        } else {
          await kv.delete(t.key, { previousSeq: e.revision });
          this.counters.freedOfGone++;
        }
      }).catch((err: unknown) => this.log.warn('exclusive subscriptions: a place of a node that went down could not be settled', { node, filter: t.entry.filter, err: (err as Error).message }));
    }
    this.log.info('exclusive subscriptions: the places of a node that went down are settled', { node, places: theirs.length, adopted: here.size });
  }

  /** Entries of every node, to look through (a node going down, a restart). */
  private async keys(): Promise<string[]> {
    const out: string[] = [];
    for await (const k of await this.kv!.keys()) out.push(k);
    return out;
  }

  private async read(key: string): Promise<{ entry: Entry; revision: number } | null> {
    const e = await this.kv!.get(key);
    if (e === null || e.operation !== 'PUT') return null;
    try {
      const entry = e.json<Entry>();
      if (typeof entry?.filter !== 'string' || typeof entry.clientId !== 'string' || typeof entry.node !== 'string') return null;
      return { entry, revision: e.revision };
    } catch {
      return null;
    }
  }

  private chain<T>(key: string, fn: (key: string) => Promise<T>): Promise<T> {
    const before = this.chains.get(key) ?? Promise.resolve();
    const run = before.then(() => fn(key), () => fn(key));
    const tail = run.catch(() => undefined);
    this.chains.set(key, tail);
    void tail.then(() => {
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return run;
  }
}

/** A create or compare-and-set that lost to another write. */
function exists(err: unknown): boolean {
  return /wrong last sequence|key exists|10071/i.test(String((err as Error)?.message));
}
