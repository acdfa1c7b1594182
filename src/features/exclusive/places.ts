// ExclusivePlaces (main thread): what the workers tell of the places (types.ts ExclusiveNote),
// the places kept across a restart, and the cluster's decisions (cluster.ts) handed back.
// - Kept: a place a persistent session (Session Expiry > 0, or MQTT 3.1.1 clean session 0) took is
//   an admin record of the store (kind `exclusive-hold`, id `{node}/{hash of the place}`, {filter,
//   clientId, node}); freed, the record goes. At start the records of this node are handed to
//   each worker as it starts, after it restored its sessions and before it opens its listeners:
//   a session restored with its subscription to the filter takes the place again, before any
//   other client can ask for it. Records no restored session took are deleted.
// - A clean session's place is not written: it ends with its connection, so with a restart.
import { createHash } from 'node:crypto';

import type { FeatureContext } from '../feature.ts';
import type { ExclusiveCluster } from './cluster.ts';
import type { ExclusiveHold, ExclusiveNote, ExclusiveReply } from './types.ts';

export const HOLD_KIND = 'exclusive-hold';

interface HoldDoc extends ExclusiveHold {
  node: string;
}

/** A record's id: the node's name and a SHA-256 of the place (ids are bounded in the SQL stores;
 * the record holds the place whole), so that two nodes of a shared store never write one record
 * (a session moving from one to the other: the old node deletes its record, the new one writes
 * its own). */
const idOf = (node: string, h: ExclusiveHold) => `${node}/${createHash('sha256').update(h.clientId).update('\0').update(h.filter).digest('base64url')}`;
const placeOf = (h: ExclusiveHold) => `${h.clientId}\n${h.filter}`;

export interface ExclusivePlaceCounters {
  /** Places kept in the store (taken by persistent sessions) and taken again after a restart. */
  kept: number;
  restored: number;
  storeErrors: number;
}

export class ExclusivePlaces {
  readonly counters: ExclusivePlaceCounters = { kept: 0, restored: 0, storeErrors: 0 };
  /** The ids of the records this node keeps. */
  private readonly ids = new Set<string>();
  private writes: Promise<unknown> = Promise.resolve();
  cluster: ExclusiveCluster | null = null;
  /** The records read at start, until every worker took its sessions' places again. */
  private pending: HoldDoc[] = [];
  private readonly taken: ExclusiveHold[] = [];
  private answered = new Set<number>();
  private done!: (holds: ExclusiveHold[]) => void;
  private readonly whenRestored = new Promise<ExclusiveHold[]>((resolve) => (this.done = resolve));

  constructor(private readonly ctx: Pick<FeatureContext, 'store' | 'log' | 'workers' | 'config'>) {}

  /** Reads this node's records; each worker takes its sessions' places as it starts. */
  async open(): Promise<void> {
    const node = this.ctx.config.nodeName;
    for (const { id, doc } of await this.ctx.store.listAdmin<HoldDoc>(HOLD_KIND)) {
      if (typeof doc?.filter !== 'string' || typeof doc.clientId !== 'string') continue;
      if (doc.node !== undefined && doc.node !== node) continue; // another node's (a store the nodes share)
      this.ids.add(id);
      this.pending.push(doc);
    }
    this.ctx.workers.onWorkerStart(async (w) => {
      const holds = this.pending.map(({ filter, clientId }) => ({ filter, clientId }));
      let got: ExclusiveHold[] = [];
      try {
        if (holds.length > 0) got = await this.ctx.workers.call(w, 'exclusive.restore', { holds });
      } catch (err) {
        // Its sessions' places are not taken again (their records go at settle): logged.
        this.ctx.log.error('exclusive subscriptions: a worker could not take its restored sessions\' places again', { worker: w, err });
      }
      this.counters.restored += got.length;
      if (this.answered.size < this.ctx.config.workers) {
        this.taken.push(...got);
        this.answered.add(w);
        if (this.answered.size === this.ctx.config.workers) this.settleRestore();
      }
    });
    if (this.pending.length === 0) this.answered = new Set(Array.from({ length: this.ctx.config.workers }, (_, i) => i));
    if (this.pending.length === 0) this.done([]);
  }

  /** Every worker started: the records no restored session took are deleted. */
  private settleRestore(): void {
    const took = new Set(this.taken.map(placeOf));
    for (const d of this.pending) if (!took.has(placeOf(d))) this.forget(d);
    this.pending = [];
    this.done(this.taken);
  }

  /** The places restored sessions took again at start (once every worker started). */
  restored(): Promise<ExclusiveHold[]> {
    return this.whenRestored;
  }

  /** What a worker told. */
  onNotes(worker: number, notes: readonly ExclusiveNote[]): void {
    for (const n of notes) {
      if (n.op === 'keep') this.keep(n);
      else if (n.op === 'free') {
        this.forget(n);
        void this.cluster?.free(n.filter, n.clientId);
      } else {
        const cluster = this.cluster;
        const decided = cluster === null ? Promise.resolve('cluster' as const) : cluster.claim(n.filter, n.clientId);
        void decided.then((result) => {
          this.ctx.workers.replyExclusive(worker, [{ id: n.id, result } satisfies ExclusiveReply]);
          if (result === 'granted' && n.persist) this.keep(n);
        });
      }
    }
  }

  /** A place held here now kept in the store (a persistent session's, or one adopted). */
  keep(h: ExclusiveHold): void {
    const id = idOf(this.ctx.config.nodeName, h);
    this.ids.add(id);
    this.counters.kept++;
    this.write(() => this.ctx.store.putAdmin(HOLD_KIND, id, { filter: h.filter, clientId: h.clientId, node: this.ctx.config.nodeName } satisfies HoldDoc));
  }

  forget(h: ExclusiveHold): void {
    const id = idOf(this.ctx.config.nodeName, h);
    if (!this.ids.delete(id)) return;
    this.write(() => this.ctx.store.deleteAdmin(HOLD_KIND, id));
  }

  /**
   * The places of node `node` (gone) whose sessions were adopted here (a store the nodes share):
   * its records in the store, handed to the workers (a session here with its subscription takes
   * the place); answers those taken, kept from now on as this node's.
   */
  async adopt(node: string, holds: ExclusiveHold[]): Promise<ExclusiveHold[]> {
    const records = (await this.ctx.store.listAdmin<HoldDoc>(HOLD_KIND)).filter((r) => r.doc?.node === node);
    const stored = new Set(records.map((r) => placeOf(r.doc)));
    const candidates = holds.filter((h) => stored.has(placeOf(h)));
    const got = candidates.length === 0 ? [] : (await this.ctx.workers.callAll('exclusive.restore', { holds: candidates })).flat();
    // Those taken here are kept as this node's; the dead node's records go.
    for (const h of got) this.keep(h);
    for (const r of records) this.write(() => this.ctx.store.deleteAdmin(HOLD_KIND, r.id));
    return got;
  }

  private write(fn: () => Promise<unknown>): void {
    this.writes = this.writes.then(fn).catch((err: unknown) => {
      this.counters.storeErrors++;
      this.ctx.log.error('exclusive subscriptions: a kept place could not be written to the store', { err });
    });
  }

  async close(): Promise<void> {
    await this.writes;
  }
}
