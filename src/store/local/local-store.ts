// LOCAL store: the zero-setup default. An embedded SQLite database at `${dataDir}/spindle.db`,
// run by the native core (native/core/src/store): WAL mode, synchronous=FULL, one writer thread
// that applies everything queued in one transaction (group commit) and resolves each call only
// after its transaction is durable. Every worker thread of the process that opens the same file
// shares that one native store and writer thread.
//
// Why SQLite: its durability record. Commits are atomic, the write-ahead log makes a commit one
// append plus one fsync, and the engine has been tested for decades against power loss and I/O
// errors at every write; it needs no server and no setup.
//
// Calls go to the native store as tickets; the native side wakes this thread once per committed
// batch and `drain()` hands back the finished tickets, which resolve or reject their Promises here.
import { mkdirSync } from 'node:fs';
import path from 'node:path';

import { LocalStore as NativeLocalStore } from '../../native/index.ts';
import { AUDIT_PRUNE_CHUNK, checkAuditQuery, checkPruneBefore, decodeAudit, encodeAudit } from '../audit.ts';
import { StoreError, type StoreErrorCode } from '../errors.ts';
import type {
  AdminKind,
  AuditEntry,
  AuditQuery,
  DeliveryState,
  LoadedDelivery,
  Store,
  StoredDelivery,
  StoredMessage,
  StoredRetained,
  StoredSession,
  StoredSubscription,
  StoreStats,
} from '../types.ts';

export interface LocalStoreOptions {
  /** Directory of the database file (created if missing). */
  dataDir: string;
  /** File name inside dataDir; default spindle.db. */
  fileName?: string;
  /** FULL (default): a resolved write survives power loss. NORMAL: survives a process crash only. */
  synchronous?: 'FULL' | 'NORMAL';
}

type Native = InstanceType<typeof NativeLocalStore>;

const STATES: DeliveryState[] = ['queued', 'inflight', 'pubrel'];
const STATE_CODE: Record<DeliveryState, number> = { queued: 0, inflight: 1, pubrel: 2 };
const CODES = new Set<string>(['STORE_UNAVAILABLE', 'STORE_IO', 'STORE_CLOSED', 'STORE_MIGRATION', 'STORE_INVALID']);

function storeError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : String(err);
  return new StoreError(typeof code === 'string' && CODES.has(code) ? (code as StoreErrorCode) : 'STORE_IO', message, { cause: err });
}

/** How a ticket's result is read: kind 1 results are fetched with the matching take* method. */
type Take<T> = (native: Native, ticket: number) => T;

interface Waiter {
  resolve: (value: any) => void;
  reject: (err: unknown) => void;
  take: Take<unknown> | null;
}

type NativeMessage = { id: bigint; topic: string; payload: Buffer; qos: number; retain: boolean; properties?: Buffer | null; expiresAt: number };

function toMessage(m: NativeMessage): StoredMessage {
  return { id: m.id, topic: m.topic, payload: m.payload, qos: m.qos as 0 | 1 | 2, retain: m.retain, properties: m.properties ?? null, expiresAt: m.expiresAt };
}

const takeSessions: Take<StoredSession[]> = (n, t) =>
  n.takeSessions(t).map((s) => ({
    clientId: s.clientId,
    expiryInterval: s.expiryInterval,
    disconnectedAt: s.disconnectedAt ?? null,
    username: s.username ?? null,
    will: s.will
      ? {
          message: { topic: s.will.topic, payload: s.will.payload, qos: s.will.qos as 0 | 1 | 2, retain: s.will.retain, properties: s.will.properties ?? null },
          delay: s.will.delay,
          expiryInterval: s.will.expiryInterval,
        }
      : null,
  }));
const takeSubscriptions: Take<StoredSubscription[]> = (n, t) => n.takeSubscriptions(t);
const takeDeliveries: Take<LoadedDelivery[]> = (n, t) =>
  n.takeDeliveries(t).map((d) => ({
    clientId: d.clientId,
    messageId: d.messageId,
    seq: d.seq,
    state: STATES[d.state],
    packetId: d.packetId,
    qos: d.qos as 0 | 1 | 2,
    retain: d.retain,
    subscriptionIds: d.subscriptionIds,
    message: toMessage(d.message),
  }));
const takePacketIds: Take<number[]> = (n, t) => n.takePacketIds(t);
const takeRetained: Take<StoredRetained[]> = (n, t) => n.takeRetained(t).map((r) => ({ topic: r.topic, message: toMessage(r.message) }));
const takeExpired: Take<{ sessions: string[]; messages: number }> = (n, t) => n.takeExpired(t);
const takeAdmin: Take<unknown> = (n, t) => {
  const doc = n.takeAdmin(t);
  return doc === undefined || doc === null ? undefined : JSON.parse(doc);
};
const takeBool: Take<boolean> = (n, t) => n.takeBool(t);
const takeAdminList: Take<{ id: string; doc: unknown }[]> = (n, t) => n.takeAdminList(t).map((d) => ({ id: d.id, doc: JSON.parse(d.doc) }));
const takeStats: Take<StoreStats> = (n, t) => n.takeStats(t);
const takeAudit: Take<{ entries: AuditEntry[]; total: number }> = (n, t) => {
  const page = n.takeAudit(t);
  return {
    total: page.total,
    entries: page.entries.map((e) =>
      decodeAudit({
        ...e,
        organizationId: e.organizationId ?? null,
        projectId: e.projectId ?? null,
        resourceId: e.resourceId ?? null,
        before: e.before ?? null,
        after: e.after ?? null,
      }),
    ),
  };
};
const takeCount: Take<number> = (n, t) => n.takeCount(t);

export class LocalStore implements Store {
  readonly kind = 'LOCAL' as const;
  readonly file: string;
  private native: Native | null = null;
  private closed = false;
  private readonly waiters = new Map<number, Waiter>();

  constructor(private readonly options: LocalStoreOptions) {
    this.file = path.join(options.dataDir, options.fileName ?? 'spindle.db');
  }

  async open(): Promise<void> {
    if (this.native) return;
    try {
      mkdirSync(this.options.dataDir, { recursive: true });
      this.native = NativeLocalStore.open(this.file, () => this.drain(), this.options.synchronous ?? 'FULL');
    } catch (err) {
      throw storeError(err);
    }
    this.closed = false;
  }

  async close(): Promise<void> {
    if (!this.native || this.closed) return;
    this.closed = true;
    const native = this.native;
    await this.call(() => native.close(), null);
  }

  private drain(): void {
    const native = this.native;
    if (!native) return;
    const done = native.drain();
    for (let i = 0; i < done.length; i += 2) {
      const ticket = done[i];
      const kind = done[i + 1];
      const w = this.waiters.get(ticket);
      if (!w) continue;
      this.waiters.delete(ticket);
      if (kind === 0) {
        w.resolve(undefined);
        continue;
      }
      try {
        w.resolve(w.take ? w.take(native, ticket) : native.takeVoid(ticket));
      } catch (err) {
        w.reject(storeError(err));
      }
    }
  }

  /** Queues one native operation; resolves with its (taken) result once durable. */
  private call<T>(submit: (native: Native) => number, take: Take<T> | null): Promise<T> {
    const native = this.native;
    if (!native) return Promise.reject(new StoreError('STORE_CLOSED', 'the store is not open'));
    if (this.closed && take !== null) return Promise.reject(new StoreError('STORE_CLOSED', 'the store is closed'));
    let ticket: number;
    try {
      ticket = submit(native);
    } catch (err) {
      return Promise.reject(storeError(err));
    }
    return new Promise<T>((resolve, reject) => {
      this.waiters.set(ticket, { resolve, reject, take });
    });
  }

  private write(submit: (native: Native) => number): Promise<void> {
    if (this.closed) return Promise.reject(new StoreError('STORE_CLOSED', 'the store is closed'));
    return this.call(submit, null);
  }

  saveSession(s: StoredSession): Promise<void> {
    const will = s.will
      ? {
          topic: s.will.message.topic,
          payload: s.will.message.payload,
          qos: s.will.message.qos,
          retain: s.will.message.retain,
          properties: s.will.message.properties ?? undefined,
          expiryInterval: s.will.expiryInterval,
          delay: s.will.delay,
        }
      : undefined;
    return this.write((n) =>
      n.saveSession({
        clientId: s.clientId,
        expiryInterval: s.expiryInterval,
        disconnectedAt: s.disconnectedAt ?? undefined,
        username: s.username ?? undefined,
        will,
      }),
    );
  }

  deleteSession(clientId: string): Promise<void> {
    return this.write((n) => n.deleteSession(clientId));
  }

  loadSessions(): Promise<StoredSession[]> {
    return this.call((n) => n.loadSessions(), takeSessions);
  }

  addSubscription(sub: StoredSubscription): Promise<void> {
    return this.write((n) => n.addSubscription(sub.clientId, sub.filter, sub.options, sub.subscriptionId));
  }

  removeSubscription(clientId: string, filter: string): Promise<void> {
    return this.write((n) => n.removeSubscription(clientId, filter));
  }

  loadSubscriptions(clientId?: string): Promise<StoredSubscription[]> {
    return this.call((n) => n.loadSubscriptions(clientId), takeSubscriptions);
  }

  addMessage(m: StoredMessage, deliveries: Omit<StoredDelivery, 'messageId' | 'state' | 'packetId'>[]): Promise<void> {
    // flat, read by index natively: [clientId, seq, qos | retain << 2, subscriptionIds] per delivery
    const flat: unknown[] = new Array(deliveries.length * 4);
    for (let i = 0, j = 0; i < deliveries.length; i++, j += 4) {
      const d = deliveries[i];
      flat[j] = d.clientId;
      flat[j + 1] = d.seq;
      flat[j + 2] = d.qos | (d.retain ? 4 : 0);
      flat[j + 3] = d.subscriptionIds.length === 0 ? null : d.subscriptionIds;
    }
    return this.write((n) => n.addMessage(m.id, m.topic, m.payload, m.qos, m.retain, m.properties ?? undefined, m.expiresAt, flat));
  }

  updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void> {
    const code = STATE_CODE[state];
    if (code === undefined) return Promise.reject(new StoreError('STORE_INVALID', `unknown delivery state ${String(state)}`));
    return this.write((n) => n.updateDelivery(clientId, messageId, code, packetId));
  }

  removeDelivery(clientId: string, messageId: bigint): Promise<void> {
    return this.write((n) => n.removeDelivery(clientId, messageId));
  }

  loadDeliveries(clientId: string): Promise<LoadedDelivery[]> {
    return this.call((n) => n.loadDeliveries(clientId), takeDeliveries);
  }

  addIncomingQos2(clientId: string, packetId: number): Promise<void> {
    return this.write((n) => n.addIncomingQos2(clientId, packetId));
  }

  removeIncomingQos2(clientId: string, packetId: number): Promise<void> {
    return this.write((n) => n.removeIncomingQos2(clientId, packetId));
  }

  loadIncomingQos2(clientId: string): Promise<number[]> {
    return this.call((n) => n.loadIncomingQos2(clientId), takePacketIds);
  }

  setRetained(topic: string, m: StoredMessage): Promise<void> {
    return this.write((n) =>
      n.setRetained(topic, { id: m.id, topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, properties: m.properties ?? undefined, expiresAt: m.expiresAt }),
    );
  }

  deleteRetained(topic: string): Promise<void> {
    return this.write((n) => n.deleteRetained(topic));
  }

  loadRetained(): Promise<StoredRetained[]> {
    return this.call((n) => n.loadRetained(), takeRetained);
  }

  deleteExpired(now: number): Promise<{ sessions: string[]; messages: number }> {
    return this.call((n) => n.deleteExpired(now), takeExpired);
  }

  putAdmin(kind: AdminKind, id: string, doc: unknown): Promise<void> {
    let text: string;
    try {
      text = JSON.stringify(doc);
    } catch (err) {
      return Promise.reject(new StoreError('STORE_INVALID', `admin document ${kind}/${id} is not JSON-serialisable`, { cause: err }));
    }
    if (text === undefined) return Promise.reject(new StoreError('STORE_INVALID', `admin document ${kind}/${id} is not JSON-serialisable`));
    return this.write((n) => n.putAdmin(kind, id, text));
  }

  getAdmin<T = unknown>(kind: AdminKind, id: string): Promise<T | undefined> {
    return this.call((n) => n.getAdmin(kind, id), takeAdmin) as Promise<T | undefined>;
  }

  deleteAdmin(kind: AdminKind, id: string): Promise<boolean> {
    return this.call((n) => n.deleteAdmin(kind, id), takeBool);
  }

  listAdmin<T = unknown>(kind: AdminKind): Promise<{ id: string; doc: T }[]> {
    return this.call((n) => n.listAdmin(kind), takeAdminList) as Promise<{ id: string; doc: T }[]>;
  }

  stats(): Promise<StoreStats> {
    return this.call((n) => n.stats(), takeStats);
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    let rows;
    try {
      rows = encodeAudit(entries).map((e) => ({
        ...e,
        organizationId: e.organizationId ?? undefined,
        projectId: e.projectId ?? undefined,
        resourceId: e.resourceId ?? undefined,
        before: e.before ?? undefined,
        after: e.after ?? undefined,
      }));
    } catch (err) {
      return Promise.reject(storeError(err));
    }
    return this.write((n) => n.appendAudit(rows));
  }

  queryAudit(q: AuditQuery): Promise<{ entries: AuditEntry[]; total: number }> {
    try {
      checkAuditQuery(q);
    } catch (err) {
      return Promise.reject(storeError(err));
    }
    const { username, action, resource, resourceId, organizationId, projectId, from, to, offset, limit } = q;
    return this.call((n) => n.queryAudit({ username, action, resource, resourceId, organizationId, projectId, from, to, offset, limit }), takeAudit);
  }

  /** One transaction per AUDIT_PRUNE_CHUNK entries removed, so other writes go in between. */
  async pruneAudit(before: number): Promise<number> {
    checkPruneBefore(before);
    let removed = 0;
    for (;;) {
      const n = await this.call((native) => native.pruneAudit(before, AUDIT_PRUNE_CHUNK), takeCount);
      removed += n;
      if (n < AUDIT_PRUNE_CHUNK) return removed;
    }
  }
}
