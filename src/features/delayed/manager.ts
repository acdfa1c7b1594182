// The main thread's half of delayed publish: stores each delayed message the workers hand over
// (admin kind `delayed` of the configured store) before the worker acknowledges it, keeps every
// message of the store in memory (its index), and fires the due ones on one node: a min-heap by
// due time and one timer for the earliest. At due time the message is dropped when expired or
// when its publisher's ACL no longer allows it (asked on a worker), else published to its topic
// with its properties and retain flag, then deleted from the store (at least once: a node lost
// between the two publishes it again after a restart or from the node that takes over).
//
// In a cluster every node keeps the index (the kind is replicated: the firing node learns of a
// message another node accepted, the others of its firing or a cancel), and only the holder of
// the run lease `delayed` fires; a node that gets the lease reads the store again first, so it
// takes over the due messages of a node that was lost.
import { randomUUID } from 'node:crypto';

import type { Logger } from '../../log/index.ts';
import type { Store } from '../../store/types.ts';
import type { RunLeases } from '../../cluster/run-leases.ts';
import type { BatchMessage } from '../../worker/messages.ts';
import type { WorkerCall } from '../../worker/ops/index.ts';
import { matches } from '../../auth/topic-filter.ts';
import { notFound } from '../../errors/domain-error.ts';
import { DueHeap } from './heap.ts';
import type { DelayedAccept, DelayedDoc, DelayedReply, DelayedWorkerState } from './types.ts';
import type { DelayedPost } from './worker-delayed.ts';

export const DELAYED_KIND = 'delayed';
/** Messages published per call to a worker. */
const FIRE_BATCH = 1000;
/** Batches being published at once. */
const FIRE_PARALLEL = 4;
/** A batch that could not be published is tried again this much later. */
const RETRY_MS = 1000;
/** The longest a timer is armed for (setTimeout's bound is 2^31-1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** In a cluster, the firing node reads the store again this often (changes it was not told of). */
const RECONCILE_MS = 30_000;

const RC_QUOTA_EXCEEDED = 0x97;
const RC_UNSPECIFIED = 0x80;

export interface DelayedHost {
  readonly nodeName: string;
  readonly log: Logger;
  readonly store: Store;
  readonly config: { enabled: boolean; maxMessages: number; maxInterval: number };
  /** The run leases, in a cluster on a shared SQL store (else this node fires what it holds). */
  readonly leases: RunLeases | null;
  /** Tells the cluster's other nodes of changes (DelayedPart), when leases are used. */
  readonly part: { stored(id: string, doc: DelayedDoc): void; removed(id: string): void } | null;
  readonly call: WorkerCall;
  running(): number[];
  reply(worker: number, replies: DelayedReply[]): void;
  publishBatch(messages: BatchMessage[]): Promise<number[]>;
  setWorkerState(value: DelayedWorkerState): void;
}

export interface DelayedCounters {
  accepted: number;
  fired: number;
  cancelled: number;
  expired: number;
  refused: { quota: number; invalid: number; store: number };
  denied: { receipt: number; due: number };
}

/** One delayed message as the API lists it. */
export interface DelayedSummary {
  id: string;
  topic: string;
  qos: 0 | 1 | 2;
  retain: boolean;
  payloadBytes: number;
  dueAt: string;
  receivedAt: string;
  expiresAt: string | null;
  clientId: string;
  username: string | null;
  node: string;
}

export class DelayedManager {
  private readonly docs = new Map<string, DelayedDoc>();
  private readonly heap = new DueHeap();
  /** Whether this node fires (it holds the lease, or there is no cluster). */
  private firing = false;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private reconcileTimer: NodeJS.Timeout | null = null;
  /** While the store is read again: the ids handled here meanwhile. */
  private goneDuringRead: Set<string> | null = null;
  private running = false;
  private closed = false;
  /** Accepted but not yet stored: counted against the bound. */
  private storing = 0;
  readonly counters: DelayedCounters = { accepted: 0, fired: 0, cancelled: 0, expired: 0, refused: { quota: 0, invalid: 0, store: 0 }, denied: { receipt: 0, due: 0 } };
  /** Each fired message's lateness in seconds (fire time minus due time), for the histogram. */
  onFired: (latenessSeconds: number) => void = () => {};

  constructor(private readonly host: DelayedHost) {}

  get pending(): number {
    return this.docs.size;
  }

  async load(): Promise<void> {
    const all = await this.host.store.listAdmin<DelayedDoc>(DELAYED_KIND);
    for (const { id, doc } of all) this.index(id, doc);
    this.host.setWorkerState({ enabled: this.host.config.enabled, maxInterval: this.host.config.maxInterval });
    if (this.host.leases) {
      this.host.leases.want(DELAYED_KIND, {
        granted: () => void this.takeOver(),
        lost: () => this.stopFiring(),
      });
    } else {
      this.firing = true;
      this.arm();
    }
  }

  /** The workers' post: stores each message, then answers each worker. */
  accepted(worker: number, post: DelayedPost): void {
    this.counters.refused.invalid += post.refusals.invalid;
    this.counters.denied.receipt += post.refusals.denied;
    if (post.items.length === 0) return;
    void Promise.all(post.items.map((item) => this.store(item))).then((rcs) => {
      this.host.reply(worker, post.items.map((item, i) => ({ id: item.id, rc: rcs[i] })));
    });
  }

  private async store(item: DelayedAccept): Promise<number> {
    if (this.closed) return RC_UNSPECIFIED;
    if (this.docs.size + this.storing >= this.host.config.maxMessages) {
      this.counters.refused.quota++;
      return RC_QUOTA_EXCEEDED;
    }
    const id = randomUUID();
    const doc: DelayedDoc = {
      topic: item.topic,
      payload: Buffer.from(item.payload.buffer, item.payload.byteOffset, item.payload.byteLength).toString('base64'),
      qos: item.qos,
      retain: item.retain,
      props: item.props === null ? null : Buffer.from(item.props.buffer, item.props.byteOffset, item.props.byteLength).toString('base64'),
      expiresAt: item.expiresAt,
      receivedAt: item.receivedAt,
      dueAt: item.dueAt,
      publisher: item.publisher,
      node: this.host.nodeName,
    };
    this.storing++;
    try {
      await this.host.store.putAdmin(DELAYED_KIND, id, doc);
    } catch (err) {
      this.counters.refused.store++;
      this.host.log.error('delayed message not stored; refused', { err, topic: item.topic });
      return RC_UNSPECIFIED;
    } finally {
      this.storing--;
    }
    this.counters.accepted++;
    this.index(id, doc);
    this.host.part?.stored(id, doc);
    return 0;
  }

  /** A change made on another node of the cluster (replicated kind): a message accepted there,
   * or fired or cancelled there (null). */
  applyRemote(id: string, doc: DelayedDoc | null): void {
    if (doc === null) this.docs.delete(id);
    else this.index(id, doc);
  }

  private index(id: string, doc: DelayedDoc): void {
    if (this.docs.has(id)) return;
    this.docs.set(id, doc);
    this.heap.push(doc.dueAt, id);
    if (this.firing && doc.dueAt < this.timerAt) this.arm();
  }

  /** This node got the lease: read the store again (what a lost node accepted), then fire. */
  private async takeOver(): Promise<void> {
    await this.reread();
    this.firing = true;
    this.host.log.info('firing delayed messages on this node', { pending: this.docs.size });
    this.arm();
    this.reconcileTimer ??= setInterval(() => void this.reread().then(() => this.arm()), RECONCILE_MS);
  }

  /** The index made the store's content again. */
  private async reread(): Promise<void> {
    // Known before the read: in the store already (stored before indexed), unless gone since.
    const before = [...this.docs.keys()];
    const gone = new Set<string>();
    this.goneDuringRead = gone;
    try {
      const all = await this.host.store.listAdmin<DelayedDoc>(DELAYED_KIND);
      const present = new Set<string>();
      for (const { id, doc } of all) {
        present.add(id);
        // Handled here while the read ran: its row may still have been read.
        if (!gone.has(id)) this.index(id, doc);
      }
      // Fired or cancelled meanwhile by the node that held the lease.
      for (const id of before) if (!present.has(id)) this.docs.delete(id);
    } catch (err) {
      this.host.log.error('delayed messages could not be read from the store; firing the ones known here', { err });
    } finally {
      if (this.goneDuringRead === gone) this.goneDuringRead = null;
    }
  }

  private stopFiring(): void {
    this.firing = false;
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
  }

  /** One timer, for the earliest due message. */
  private arm(): void {
    if (!this.firing || this.closed || this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const at = this.heap.peek();
    this.timerAt = at;
    if (at === Infinity) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      void this.fire();
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
  }

  /** Fires every due message, up to FIRE_PARALLEL batches at a time (over the workers), then
   * arms the timer again. */
  private async fire(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const inflight = new Set<Promise<void>>();
      while (this.firing && !this.closed) {
        if (this.heap.peek() <= Date.now() && inflight.size < FIRE_PARALLEL) {
          const p: Promise<void> = this.fireBatch().finally(() => inflight.delete(p));
          inflight.add(p);
          continue;
        }
        if (inflight.size === 0) break;
        await Promise.race(inflight);
      }
      await Promise.all(inflight);
    } finally {
      this.running = false;
      this.arm();
    }
  }

  private async fireBatch(): Promise<void> {
    const now = Date.now();
    const due: { id: string; doc: DelayedDoc }[] = [];
    while (due.length < FIRE_BATCH && this.heap.peek() <= now) {
      const id = this.heap.pop()!;
      const doc = this.docs.get(id);
      if (doc !== undefined) due.push({ id, doc }); // else cancelled
    }
    if (due.length === 0) return;
    // Expired while held: dropped.
    const live = due.filter(({ id, doc }) => {
      if (doc.expiresAt === 0 || doc.expiresAt > now) return true;
      this.counters.expired++;
      this.forget(id);
      return false;
    });
    let allowed: boolean[];
    try {
      allowed = await this.authorize(live);
      const out: { id: string; doc: DelayedDoc }[] = [];
      for (let i = 0; i < live.length; i++) {
        if (allowed[i]) out.push(live[i]);
        else {
          this.counters.denied.due++;
          this.forget(live[i].id);
        }
      }
      if (out.length > 0) await this.host.publishBatch(out.map(({ doc }) => messageOf(doc)));
      const at = Date.now();
      for (const { id, doc } of out) {
        this.counters.fired++;
        this.onFired((at - doc.dueAt) / 1000);
        this.forget(id);
      }
    } catch (err) {
      // Not published: kept, and tried again (what was published of it may come twice).
      this.host.log.warn('delayed messages could not be published; retrying', { err, count: live.length });
      for (const { id, doc } of live) if (this.docs.has(id)) this.heap.push(Math.max(doc.dueAt, now + RETRY_MS), id);
    }
  }

  /** The publishers' ACL now, asked on a worker (all allowed when no worker runs to ask: the
   * publish then fails and is retried). */
  private async authorize(items: readonly { doc: DelayedDoc }[]): Promise<boolean[]> {
    if (items.length === 0) return [];
    const [worker] = this.host.running();
    if (worker === undefined) throw new Error('no worker is running');
    return this.host.call(worker, 'delayed.authorize', { items: items.map(({ doc }) => ({ publisher: doc.publisher, topic: doc.topic })) });
  }

  /** Gone from the index (and, told, from the other nodes'); the caller deletes the row. */
  private forgetRow(id: string): void {
    this.docs.delete(id);
    this.goneDuringRead?.add(id);
    this.host.part?.removed(id);
  }

  /** Gone from the index and the store (fired, expired, denied, cancelled). */
  private forget(id: string): void {
    this.docs.delete(id);
    this.goneDuringRead?.add(id);
    this.host.part?.removed(id);
    this.host.store.deleteAdmin(DELAYED_KIND, id).catch((err: unknown) => {
      this.host.log.error('a delayed message handled could not be deleted from the store', { err, id });
    });
  }

  // ---- the admin API ----

  list(filter: string | undefined): DelayedSummary[] {
    const out: DelayedSummary[] = [];
    for (const [id, doc] of this.docs) if (filter === undefined || matches(filter, doc.topic)) out.push(summaryOf(id, doc));
    out.sort((a, b) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : 0));
    return out;
  }

  get(id: string): DelayedSummary & { payload: string; props: string | null } {
    const doc = this.docs.get(id);
    if (!doc) throw notFound(`no delayed message ${id}`, 'id');
    return { ...summaryOf(id, doc), payload: doc.payload, props: doc.props };
  }

  /** Cancels one message; answers what it was. */
  async cancel(id: string): Promise<DelayedSummary> {
    const doc = this.docs.get(id);
    if (!doc) throw notFound(`no delayed message ${id}`, 'id');
    this.forgetRow(id);
    await this.host.store.deleteAdmin(DELAYED_KIND, id);
    this.counters.cancelled++;
    return summaryOf(id, doc);
  }

  /** Cancels every message whose topic matches `filter`; answers how many. */
  async cancelMatching(filter: string): Promise<number> {
    const ids: string[] = [];
    for (const [id, doc] of this.docs) if (matches(filter, doc.topic)) ids.push(id);
    for (const id of ids) this.forgetRow(id);
    await Promise.all(ids.map((id) => this.host.store.deleteAdmin(DELAYED_KIND, id)));
    this.counters.cancelled += ids.length;
    return ids.length;
  }

  stats() {
    return {
      pending: this.docs.size,
      maxMessages: this.host.config.maxMessages,
      maxInterval: this.host.config.maxInterval,
      firing: this.firing,
      firingNode: this.host.leases ? this.host.leases.owner(DELAYED_KIND) : this.host.nodeName,
      nextDueAt: this.docs.size === 0 ? null : new Date(this.nextDue()).toISOString(),
      ...this.counters,
    };
  }

  private nextDue(): number {
    let min = Infinity;
    for (const doc of this.docs.values()) if (doc.dueAt < min) min = doc.dueAt;
    return min;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopFiring();
    if (this.host.leases) await this.host.leases.release(DELAYED_KIND);
  }
}

function messageOf(doc: DelayedDoc): BatchMessage {
  return {
    topic: doc.topic,
    payload: Buffer.from(doc.payload, 'base64'),
    qos: doc.qos,
    retain: doc.retain,
    expiresAt: doc.expiresAt,
    props: doc.props === null ? null : Buffer.from(doc.props, 'base64'),
    tracedAs: doc.publisher.clientId,
  };
}

function summaryOf(id: string, doc: DelayedDoc): DelayedSummary {
  return {
    id,
    topic: doc.topic,
    qos: doc.qos,
    retain: doc.retain,
    payloadBytes: Buffer.byteLength(doc.payload, 'base64'),
    dueAt: new Date(doc.dueAt).toISOString(),
    receivedAt: new Date(doc.receivedAt).toISOString(),
    expiresAt: doc.expiresAt === 0 ? null : new Date(doc.expiresAt).toISOString(),
    clientId: doc.publisher.clientId,
    username: doc.publisher.username,
    node: doc.node,
  };
}
