// MEMORY store: everything in Maps inside this process, nothing survives a restart. Changes apply
// synchronously, so calls are applied in the order they are made and every Promise resolves at
// once. Values are copied in and out so callers never share mutable state with the store.
//
// The audit log is an array kept in (time, id) order, so a time range is found by binary search
// and pruning cuts its head. It grows until pruned: its memory is bounded only by the caller's
// retention (pruneAudit), as the data of every other backend is by its disk.
import { checkAuditQuery, checkPruneBefore, compareAudit, decodeAudit, encodeAudit, matchesAudit, type EncodedAuditEntry } from '../audit.ts';
import { StoreError } from '../errors.ts';
import { NEVER_EXPIRES } from '../types.ts';
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

const copyMessage = (m: StoredMessage): StoredMessage => ({
  ...m,
  payload: Buffer.from(m.payload),
  properties: m.properties === null ? null : Buffer.from(m.properties),
});

const copySession = (s: StoredSession): StoredSession => ({
  ...s,
  will: s.will === null ? null : { ...s.will, message: { ...s.will.message, payload: Buffer.from(s.will.message.payload), properties: s.will.message.properties === null ? null : Buffer.from(s.will.message.properties) } },
});

const copyDelivery = (d: StoredDelivery): StoredDelivery => ({ ...d, subscriptionIds: [...d.subscriptionIds] });

export class MemoryStore implements Store {
  readonly kind = 'MEMORY' as const;
  private closed = false;
  private readonly sessions = new Map<string, StoredSession>();
  /** clientId -> filter -> subscription. */
  private readonly subscriptions = new Map<string, Map<string, StoredSubscription>>();
  private readonly messages = new Map<bigint, StoredMessage>();
  /** How many deliveries and retained entries refer to each message. */
  private readonly refs = new Map<bigint, number>();
  /** clientId -> messageId -> delivery. */
  private readonly deliveries = new Map<string, Map<bigint, StoredDelivery>>();
  private readonly incomingQos2 = new Map<string, Set<number>>();
  /** topic -> message id. */
  private readonly retained = new Map<string, bigint>();
  /** kind -> id -> JSON text. */
  private readonly admin = new Map<AdminKind, Map<string, string>>();
  /** Audit entries in ascending (time, id) order; before/after as JSON text. */
  private readonly audit: EncodedAuditEntry[] = [];
  private readonly auditIds = new Set<string>();

  async open(): Promise<void> {
    this.check();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  async saveSession(session: StoredSession): Promise<void> {
    this.check();
    this.sessions.set(session.clientId, copySession(session));
  }

  async deleteSession(clientId: string): Promise<void> {
    this.check();
    this.dropSession(clientId);
  }

  async loadSessions(): Promise<StoredSession[]> {
    this.check();
    return [...this.sessions.values()].map(copySession);
  }

  async addSubscription(sub: StoredSubscription): Promise<void> {
    this.check();
    let subs = this.subscriptions.get(sub.clientId);
    if (!subs) this.subscriptions.set(sub.clientId, (subs = new Map()));
    subs.set(sub.filter, { ...sub });
  }

  async removeSubscription(clientId: string, filter: string): Promise<void> {
    this.check();
    const subs = this.subscriptions.get(clientId);
    if (!subs) return;
    subs.delete(filter);
    if (subs.size === 0) this.subscriptions.delete(clientId);
  }

  async loadSubscriptions(clientId?: string): Promise<StoredSubscription[]> {
    this.check();
    const lists = clientId === undefined ? [...this.subscriptions.values()] : [this.subscriptions.get(clientId) ?? new Map()];
    return lists.flatMap((subs) => [...subs.values()].map((s) => ({ ...s })));
  }

  async addMessage(message: StoredMessage, deliveries: Omit<StoredDelivery, 'messageId' | 'state' | 'packetId'>[]): Promise<void> {
    this.check();
    this.putMessage(message);
    for (const d of deliveries) {
      let mine = this.deliveries.get(d.clientId);
      if (!mine) this.deliveries.set(d.clientId, (mine = new Map()));
      if (!mine.has(message.id)) this.ref(message.id, 1);
      mine.set(message.id, copyDelivery({ ...d, messageId: message.id, state: 'queued', packetId: 0 }));
    }
    this.collect(message.id);
  }

  async updateDelivery(clientId: string, messageId: bigint, state: DeliveryState, packetId: number): Promise<void> {
    this.check();
    const d = this.deliveries.get(clientId)?.get(messageId);
    if (!d) return;
    d.state = state;
    d.packetId = packetId;
  }

  async removeDelivery(clientId: string, messageId: bigint): Promise<void> {
    this.check();
    this.dropDelivery(clientId, messageId);
  }

  async loadDeliveries(clientId: string): Promise<LoadedDelivery[]> {
    this.check();
    const mine = [...(this.deliveries.get(clientId)?.values() ?? [])];
    mine.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    return mine.map((d) => ({ ...copyDelivery(d), message: copyMessage(this.messages.get(d.messageId)!) }));
  }

  async addIncomingQos2(clientId: string, packetId: number): Promise<void> {
    this.check();
    let ids = this.incomingQos2.get(clientId);
    if (!ids) this.incomingQos2.set(clientId, (ids = new Set()));
    ids.add(packetId);
  }

  async removeIncomingQos2(clientId: string, packetId: number): Promise<void> {
    this.check();
    const ids = this.incomingQos2.get(clientId);
    if (!ids) return;
    ids.delete(packetId);
    if (ids.size === 0) this.incomingQos2.delete(clientId);
  }

  async loadIncomingQos2(clientId: string): Promise<number[]> {
    this.check();
    return [...(this.incomingQos2.get(clientId) ?? [])];
  }

  async setRetained(topic: string, message: StoredMessage): Promise<void> {
    this.check();
    this.putMessage(message);
    const previous = this.retained.get(topic);
    this.retained.set(topic, message.id);
    this.ref(message.id, 1);
    if (previous !== undefined) this.ref(previous, -1);
  }

  async deleteRetained(topic: string): Promise<void> {
    this.check();
    const id = this.retained.get(topic);
    if (id === undefined) return;
    this.retained.delete(topic);
    this.ref(id, -1);
  }

  async loadRetained(): Promise<StoredRetained[]> {
    this.check();
    return [...this.retained].map(([topic, id]) => ({ topic, message: copyMessage(this.messages.get(id)!) }));
  }

  async deleteExpired(now: number): Promise<{ sessions: string[]; messages: number }> {
    this.check();
    const expired = new Set<bigint>();
    for (const m of this.messages.values()) if (m.expiresAt !== 0 && m.expiresAt <= now) expired.add(m.id);
    for (const [topic, id] of this.retained) if (expired.has(id)) this.retained.delete(topic);
    for (const [clientId, mine] of this.deliveries) {
      for (const id of mine.keys()) if (expired.has(id)) mine.delete(id);
      if (mine.size === 0) this.deliveries.delete(clientId);
    }
    for (const id of expired) {
      this.messages.delete(id);
      this.refs.delete(id);
    }
    const sessions: string[] = [];
    for (const s of [...this.sessions.values()]) {
      if (s.disconnectedAt === null || s.expiryInterval === NEVER_EXPIRES) continue;
      if (s.disconnectedAt + s.expiryInterval * 1000 <= now) {
        this.dropSession(s.clientId);
        sessions.push(s.clientId);
      }
    }
    return { sessions, messages: expired.size };
  }

  async putAdmin(kind: AdminKind, id: string, doc: unknown): Promise<void> {
    this.check();
    let docs = this.admin.get(kind);
    if (!docs) this.admin.set(kind, (docs = new Map()));
    docs.set(id, JSON.stringify(doc));
  }

  async getAdmin<T = unknown>(kind: AdminKind, id: string): Promise<T | undefined> {
    this.check();
    const text = this.admin.get(kind)?.get(id);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  async deleteAdmin(kind: AdminKind, id: string): Promise<boolean> {
    this.check();
    return this.admin.get(kind)?.delete(id) ?? false;
  }

  async listAdmin<T = unknown>(kind: AdminKind): Promise<{ id: string; doc: T }[]> {
    this.check();
    return [...(this.admin.get(kind) ?? [])].map(([id, text]) => ({ id, doc: JSON.parse(text) as T }));
  }

  async stats(): Promise<StoreStats> {
    this.check();
    let deliveries = 0;
    for (const mine of this.deliveries.values()) deliveries += mine.size;
    return { sessions: this.sessions.size, messages: this.messages.size, deliveries, retained: this.retained.size };
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    this.check();
    for (const e of encodeAudit(entries)) {
      if (this.auditIds.has(e.id)) continue;
      this.auditIds.add(e.id);
      const last = this.audit[this.audit.length - 1];
      // Entries mostly arrive in time order: appended; a late one is inserted in its place.
      if (last === undefined || compareAudit(last, e) <= 0) this.audit.push(e);
      else this.audit.splice(this.auditIndex((x) => compareAudit(x, e) <= 0), 0, e);
    }
  }

  async queryAudit(q: AuditQuery): Promise<{ entries: AuditEntry[]; total: number }> {
    this.check();
    checkAuditQuery(q);
    const lo = q.from === undefined ? 0 : this.auditIndex((x) => x.time < q.from!);
    const hi = q.to === undefined ? this.audit.length : this.auditIndex((x) => x.time <= q.to!);
    const entries: AuditEntry[] = [];
    let total = 0;
    for (let i = hi - 1; i >= lo; i--) {
      const e = this.audit[i];
      if (!matchesAudit(e, q)) continue;
      if (total >= q.offset && entries.length < q.limit) entries.push(decodeAudit(e));
      total++;
    }
    return { entries, total };
  }

  async pruneAudit(before: number): Promise<number> {
    this.check();
    checkPruneBefore(before);
    const removed = this.audit.splice(0, this.auditIndex((x) => x.time < before));
    for (const e of removed) this.auditIds.delete(e.id);
    return removed.length;
  }

  /** The first index of the audit array whose entry fails `before` (which holds for a prefix). */
  private auditIndex(before: (e: EncodedAuditEntry) => boolean): number {
    let lo = 0;
    let hi = this.audit.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(this.audit[mid])) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private check(): void {
    if (this.closed) throw new StoreError('STORE_CLOSED', 'the memory store is closed');
  }

  /** Stores the message unless a message with its id is already there (stored once). */
  private putMessage(message: StoredMessage): void {
    if (this.messages.has(message.id)) return;
    this.messages.set(message.id, copyMessage(message));
    this.refs.set(message.id, 0);
  }

  private ref(id: bigint, delta: number): void {
    this.refs.set(id, (this.refs.get(id) ?? 0) + delta);
    this.collect(id);
  }

  /** Drops the message when nothing refers to it any more. */
  private collect(id: bigint): void {
    if ((this.refs.get(id) ?? 0) > 0) return;
    this.refs.delete(id);
    this.messages.delete(id);
  }

  private dropDelivery(clientId: string, messageId: bigint): void {
    const mine = this.deliveries.get(clientId);
    if (!mine?.delete(messageId)) return;
    if (mine.size === 0) this.deliveries.delete(clientId);
    this.ref(messageId, -1);
  }

  private dropSession(clientId: string): void {
    this.sessions.delete(clientId);
    this.subscriptions.delete(clientId);
    this.incomingQos2.delete(clientId);
    for (const messageId of [...(this.deliveries.get(clientId)?.keys() ?? [])]) this.dropDelivery(clientId, messageId);
  }
}
