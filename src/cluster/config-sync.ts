// ConfigSync: configuration objects (endpoints, rules, users, sources, ...) replicated across the
// cluster's nodes (main thread), a part of the ClusterLink.
// - Source of truth: the JetStream KV bucket `spindle-config`, one key per object
//   (`<kind>.<id>`, both base64url-encoded as key tokens), its value the stored document; a
//   removal is the key's delete marker. The bucket's order is the order of changes: last writer
//   wins, and every node ends on the bucket's last value for each key.
// - Out: the admin store the managers write through (replicatingStore) tells this of each
//   putAdmin / deleteAdmin of a replicated kind; the change goes to the bucket once per tick (a
//   change made while NATS is away waits and is retried every RETRY_MS).
// - In: every node watches the whole bucket (its last values first: a node that starts or joins
//   late catches up, then every change as it comes). A value that differs from what this node
//   holds is handed to the kind's owner (ConfigKind.apply), which applies it the way its own
//   admin API would, then written to this node's store. One change at a time, in the bucket's order.
// - At start, an object this node holds that the bucket has never seen (stored before the
//   cluster) is put to the bucket: the first node seeds the cluster.
// - A document a node cannot apply is logged and counted, and the node carries on.
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import { Counter, type Registry } from 'prom-client';

import type { Store } from '../store/types.ts';
import type { Logger } from '../log/index.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';

export const CONFIG_BUCKET = 'spindle-config';
const RETRY_MS = 1000;
/** At most this long at start to read the bucket's last values. */
const CATCH_UP_MS = 30_000;

/** One kind of configuration object and the owner that applies changes made on other nodes. */
export interface ConfigKind {
  /** The admin store kind (`putAdmin(kind, ...)`). */
  kind: string;
  /**
   * Applies an object changed on another node (written to this node's store once applied): `doc`
   * is the stored document, or null when it was removed. Throws when it cannot be applied.
   */
  apply(id: string, doc: unknown): Promise<void>;
  /** Objects of the kind that stay on their node (never sent, never applied). */
  local?(id: string): boolean;
}

interface Change {
  kind: string;
  id: string;
  /** The document, or null for a removal. */
  doc: unknown;
}

export class ConfigSync implements ClusterPart {
  private readonly kinds = new Map<string, ConfigKind>();
  /** What this node holds, per key: the JSON of its document ('null' when removed). */
  private readonly known = new Map<string, string>();
  /** Local changes not yet in the bucket, per key (the latest only). */
  private readonly pending = new Map<string, Change>();
  private kv: KV | null = null;
  private store: Store | null = null;
  private log: Logger;
  private watcher: { stop(): void } | null = null;
  private flushScheduled = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private applying: Promise<void> = Promise.resolve();
  private closed = false;
  /** The bucket revision of the last change seen (a restarted watch resumes after it). */
  private lastRevision = 0;
  private readonly metrics: { applied: Counter; failed: Counter; sent: Counter; sendFailures: Counter };

  constructor(log: Logger, registry: Registry) {
    this.log = log;
    this.metrics = {
      applied: new Counter({ name: 'spindle_cluster_config_applied_total', help: 'Configuration changes made on another node and applied here.', labelNames: ['kind'], registers: [registry] }),
      failed: new Counter({ name: 'spindle_cluster_config_failed_total', help: 'Configuration changes from another node that could not be applied here (logged).', labelNames: ['kind'], registers: [registry] }),
      sent: new Counter({ name: 'spindle_cluster_config_sent_total', help: 'Configuration changes made here and written to the cluster.', labelNames: ['kind'], registers: [registry] }),
      sendFailures: new Counter({ name: 'spindle_cluster_config_send_failures_total', help: 'Writes of a local configuration change to the cluster that failed (retried).', registers: [registry] }),
    };
  }

  /** A kind to replicate; every kind is registered before the part starts. */
  register(kind: ConfigKind): void {
    this.kinds.set(kind.kind, kind);
  }

  /** The store changes from other nodes are written to (the admin store itself, not the
   * replicating wrapper: no echo). */
  attach(store: Store): void {
    this.store = store;
  }

  /** Told by the replicating store of a change made on this node (after it was stored). */
  changed(kind: string, id: string, doc: unknown): void {
    const k = this.kinds.get(kind);
    if (!k || k.local?.(id) || id === '' || this.closed) return;
    const key = keyOf(kind, id);
    const json = canonical(doc);
    // An object applied from another node and written back unchanged is not news.
    if (this.known.get(key) === json) return;
    this.known.set(key, json);
    this.pending.set(key, { kind, id, doc: doc ?? null });
    this.scheduleFlush();
  }

  async start(ctx: ClusterPartContext): Promise<void> {
    if (!this.store) throw new Error('ConfigSync: attach the store before starting');
    this.log = ctx.log.named('config');
    for (const [kind, k] of this.kinds) {
      for (const { id, doc } of await this.store.listAdmin(kind)) {
        if (!k.local?.(id)) this.known.set(keyOf(kind, id), canonical(doc));
      }
    }
    const kvm = new Kvm(ctx.nc);
    try {
      this.kv = await kvm.create(CONFIG_BUCKET, { history: 1, replicas: Math.min(3, ctx.runningPeers().length + 1) });
    } catch (err) {
      // Fewer JetStream servers than replicas asked for: one replica.
      this.log.warn('config bucket with replicas refused; one replica', { err: (err as Error).message });
      try {
        this.kv = await kvm.create(CONFIG_BUCKET, { history: 1 });
      } catch (cause) {
        throw new Error(`the cluster keeps its configuration in JetStream (KV bucket ${CONFIG_BUCKET}), which NATS refused: ${(cause as Error).message}`, { cause });
      }
    }
    // The bucket's last values come first; the one with nothing pending after it ends them.
    const seen = new Set<string>();
    let caughtUp = false;
    let settle!: () => void;
    const ready = new Promise<void>((resolve) => (settle = () => {
      caughtUp = true;
      resolve();
    }));
    if ((await this.kv.status()).values === 0) settle();
    await this.watch((e) => {
      if (caughtUp) return;
      seen.add(e.key);
      if (e.delta === 0) settle();
    });
    const timer = setTimeout(() => {
      this.log.warn('the configuration bucket was not read to its end in time; this node goes on with what it has', { seen: seen.size });
      settle();
    }, CATCH_UP_MS);
    await ready;
    clearTimeout(timer);
    await this.applying;
    // Objects stored here before the cluster knew them: this node seeds the bucket.
    for (const [key, json] of this.known) {
      if (seen.has(key) || this.pending.has(key)) continue;
      const { kind, id } = unkey(key)!;
      this.pending.set(key, { kind, id, doc: JSON.parse(json) as unknown });
    }
    this.scheduleFlush();
    this.log.info('configuration synced with the cluster', { objects: this.known.size, seeded: this.pending.size });
  }

  /**
   * Watches the bucket: every last value at first, then each change (the client's ordered
   * consumer follows NATS reconnects). Should the watch end all the same, it starts again after
   * RETRY_MS from the revision after the last one seen.
   */
  private async watch(onEach?: (e: KvWatchEntry) => void): Promise<void> {
    const iter = await this.kv!.watch(this.lastRevision > 0 ? { resumeFromRevision: this.lastRevision + 1 } : {});
    this.watcher = iter;
    void (async () => {
      for await (const e of iter) {
        this.lastRevision = e.revision;
        this.onEntry(e);
        onEach?.(e);
      }
    })().catch((err: unknown) => this.log.warn('config watch failed', { err })).then(() => this.watchEnded());
  }

  private watchEnded(): void {
    if (this.closed) return;
    this.log.warn('config watch ended; started again', { revision: this.lastRevision });
    setTimeout(() => {
      if (!this.closed) this.watch().catch(() => this.watchEnded());
    }, RETRY_MS).unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watcher?.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.applying;
  }

  private onEntry(e: KvWatchEntry): void {
    const ids = unkey(e.key);
    if (!ids || !this.kinds.has(ids.kind)) {
      this.log.warn('config change of an unknown kind ignored', { key: e.key });
      this.metrics.failed.inc({ kind: 'unknown' });
      return;
    }
    let doc: unknown = null;
    if (e.operation === 'PUT') {
      try {
        doc = e.json<unknown>();
      } catch (err) {
        this.log.warn('config change that does not parse ignored', { kind: ids.kind, id: ids.id, err });
        this.metrics.failed.inc({ kind: ids.kind });
        return;
      }
    }
    const key = e.key;
    const json = canonical(doc);
    // A local change not yet written will come later in the bucket's order: it wins.
    if (this.known.get(key) === json || this.pending.has(key)) return;
    this.applying = this.applying.then(() => this.apply(key, ids.kind, ids.id, doc, json));
  }

  private async apply(key: string, kind: string, id: string, doc: unknown, json: string): Promise<void> {
    if (this.closed || this.pending.has(key)) return;
    const k = this.kinds.get(kind)!;
    if (k.local?.(id)) return;
    this.known.set(key, json);
    try {
      // Applied first: a document the owner refuses never reaches the store (nor the next start).
      await k.apply(id, doc);
      if (doc === null) await this.store!.deleteAdmin(kind, id);
      else await this.store!.putAdmin(kind, id, doc);
      this.metrics.applied.inc({ kind });
      this.log.debug('config change from another node applied', { kind, id, removed: doc === null });
    } catch (err) {
      this.metrics.failed.inc({ kind });
      this.log.error('config change from another node could not be applied', { kind, id, err });
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || !this.kv || this.closed) return;
    this.flushScheduled = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    const kv = this.kv;
    if (!kv) return;
    for (const [key, change] of [...this.pending]) {
      try {
        if (change.doc === null) await kv.delete(key);
        else await kv.put(key, JSON.stringify(change.doc));
        // Changed again meanwhile: the newer one goes next.
        if (this.pending.get(key) === change) this.pending.delete(key);
        this.metrics.sent.inc({ kind: change.kind });
      } catch (err) {
        this.metrics.sendFailures.inc();
        this.log.warn('config change not yet written to the cluster; retried', { kind: change.kind, id: change.id, err: (err as Error).message });
        if (!this.retryTimer && !this.closed) {
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.scheduleFlush();
          }, RETRY_MS);
        }
        return;
      }
    }
    if (this.pending.size > 0) this.scheduleFlush();
  }
}

/** A document as JSON with its object keys sorted: the same however a store ordered them (a
 * PostgreSQL jsonb column does not keep the order it was given). */
function canonical(doc: unknown): string {
  return JSON.stringify(doc ?? null, (_k, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** A key of the bucket: kind and id as base64url tokens (KV keys allow [-_=./a-zA-Z0-9]). */
function keyOf(kind: string, id: string): string {
  return `${Buffer.from(kind, 'utf8').toString('base64url')}.${Buffer.from(id, 'utf8').toString('base64url')}`;
}

function unkey(key: string): { kind: string; id: string } | null {
  const dot = key.indexOf('.');
  if (dot <= 0 || dot === key.length - 1 || key.indexOf('.', dot + 1) !== -1) return null;
  return { kind: Buffer.from(key.slice(0, dot), 'base64url').toString('utf8'), id: Buffer.from(key.slice(dot + 1), 'base64url').toString('utf8') };
}

/**
 * The admin store as the managers see it: putAdmin and deleteAdmin of a replicated kind also
 * tell `sync`, once stored. Every other method is the store's own.
 */
export function replicatingStore(store: Store, sync: ConfigSync): Store {
  const putAdmin: Store['putAdmin'] = async (kind, id, doc) => {
    await store.putAdmin(kind, id, doc);
    sync.changed(kind, id, doc);
  };
  const deleteAdmin: Store['deleteAdmin'] = async (kind, id) => {
    const removed = await store.deleteAdmin(kind, id);
    sync.changed(kind, id, null);
    return removed;
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'putAdmin') return putAdmin;
      if (prop === 'deleteAdmin') return deleteAdmin;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
