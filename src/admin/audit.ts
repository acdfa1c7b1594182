// AuditLog: every write through the admin API and the control platform's /api/v1 (main thread),
// and every sign-in attempt; reads (GETs, and POSTs marked readOnly such as queries, which the
// console polls) only with audit.reads, as action `read` (AdminServer decides):
// who (user and role), what (action), which resource (kind, id, organization, project), before
// and after where small, when, from which address, and the status answered. Written to the store
// in batches (one per tick); kept `retentionDays` (pruned hourly); never changed or deleted
// through the API. Secrets in bodies (password, secret, token, key...) are replaced by "******",
// and values larger than MAX_VALUE_BYTES by a note of their size.
import { randomUUID } from 'node:crypto';

import { Counter, type Registry } from 'prom-client';

import type { Logger } from '../log/index.ts';
import type { AuditEntry, AuditQuery, Store } from '../store/types.ts';
import type { AdminRequest, Route } from './http.ts';

const MAX_VALUE_BYTES = 4096;
/** The action of an audited read (audit.reads). */
export const READ_ACTION = 'read';
/** Entries read from the store at a time when reads are left out of an answer. */
const READ_SCAN = 1000;
const MAX_FIELD = 256;
const PRUNE_MS = 3_600_000;
const SECRET = /pass|secret|token|key$|^key|credential|private/i;

export class AuditLog {
  private queue: AuditEntry[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly written: Counter;
  private readonly failed: Counter;

  constructor(private readonly store: Store, private readonly log: Logger, registry: Registry, private readonly retentionDays: number) {
    this.written = new Counter({ name: 'spindle_audit_entries_total', help: 'Audit log entries written to the store', registers: [registry] });
    this.failed = new Counter({ name: 'spindle_audit_write_failures_total', help: 'Audit log entries the store refused (logged instead)', registers: [registry] });
    this.timer = setInterval(() => void this.prune(), PRUNE_MS).unref();
  }

  /** Records an answered write, or read (AdminServer calls this). */
  record(req: AdminRequest, route: Route, status: number, read = false): void {
    const n = req.audit ?? {};
    const user = req.user;
    const body = req.body !== null && typeof req.body === 'object' ? req.body as Record<string, unknown> : undefined;
    this.queue.push({
      id: randomUUID(),
      time: Date.now(),
      username: clip(n.username ?? user?.username ?? 'unknown'),
      role: clip(n.role ?? user?.role ?? 'unknown'),
      organizationId: n.organizationId ?? user?.organizationId ?? null,
      projectId: n.projectId ?? null,
      action: clip(n.action ?? (read ? READ_ACTION : actionOf(req.method, route.path))),
      resource: clip(n.resource ?? route.tag),
      resourceId: n.resourceId !== undefined ? (n.resourceId === null ? null : clip(n.resourceId)) : idOf(req, body),
      method: req.method,
      path: clip(req.path, 1024),
      status,
      address: clip(req.remoteAddress),
      before: small(n.before ?? null),
      after: small(n.after !== undefined ? n.after : body !== undefined ? body : null),
    });
    if (this.flushing === null) this.flushing = new Promise((resolve) => setImmediate(() => void this.flush().then(resolve)));
  }

  /** Entries matching `q`; `reads` false leaves out the reads (action `read`): the store is read
   * newest first in chunks of READ_SCAN entries, skipping reads, until the page is full (its cost
   * grows with the page's offset and the reads between). */
  async query(q: AuditQuery, reads = true): Promise<{ entries: AuditEntry[]; total: number }> {
    if (reads) return this.store.queryAudit(q);
    if (q.action === READ_ACTION) return { entries: [], total: 0 };
    if (q.action !== undefined) return this.store.queryAudit(q);
    const all = await this.store.queryAudit({ ...q, offset: 0, limit: 0 });
    const readCount = (await this.store.queryAudit({ ...q, action: READ_ACTION, offset: 0, limit: 0 })).total;
    const total = all.total - readCount;
    const entries: AuditEntry[] = [];
    let skip = q.offset;
    for (let at = 0; entries.length < q.limit && at < all.total; at += READ_SCAN) {
      const chunk = await this.store.queryAudit({ ...q, offset: at, limit: READ_SCAN });
      for (const e of chunk.entries) {
        if (e.action === READ_ACTION) continue;
        if (skip > 0) skip--;
        else if (entries.length < q.limit) entries.push(e);
      }
      if (chunk.entries.length < READ_SCAN) break;
    }
    return { entries, total };
  }

  /** Writes what is queued (also at close). */
  async flush(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    this.flushing = null;
    if (batch.length === 0) return;
    try {
      await this.store.appendAudit(batch);
      this.written.inc(batch.length);
    } catch (err) {
      this.failed.inc(batch.length);
      this.log.error('audit entries could not be stored', { count: batch.length, err, entries: batch.map((e) => `${e.username} ${e.action} ${e.resource} ${e.resourceId ?? ''}`) });
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  private async prune(): Promise<void> {
    try {
      const removed = await this.store.pruneAudit(Date.now() - this.retentionDays * 86_400_000);
      if (removed > 0) this.log.info('audit log pruned', { removed, retentionDays: this.retentionDays });
    } catch (err) {
      this.log.warn('audit log prune failed', { err });
    }
  }
}

/** A verb from the route: the platform's REST methods, the broker API's path ends (add, delete, ...). */
function actionOf(method: string, path: string): string {
  if (path.startsWith('/api/v1/')) return method === 'POST' ? 'create' : method === 'PUT' ? 'update' : method === 'DELETE' ? 'delete' : method.toLowerCase();
  const last = path.slice(path.lastIndexOf('/') + 1);
  if (last === 'add' || last === 'create') return 'create';
  if (last === 'update' || last === 'edit') return 'update';
  if (last === 'delete' || last === 'remove') return 'delete';
  if (last === 'login') return 'login';
  return last || method.toLowerCase();
}

function idOf(req: AdminRequest, body: Record<string, unknown> | undefined): string | null {
  if (req.params.id) return clip(req.params.id);
  for (const k of ['id', 'clientId', 'port', 'username', 'name', 'topic']) {
    const v = body?.[k];
    if (typeof v === 'string' || typeof v === 'number') return clip(String(v));
  }
  return null;
}

function clip(v: string, max = MAX_FIELD): string {
  // eslint-disable-next-line no-control-regex
  const clean = v.replace(/\u0000/g, '');
  return clean.length > max ? clean.slice(0, max) : clean;
}

/** A value for the log: secrets hidden, and a note instead of anything large. */
function small(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  const redacted = redact(v, 0);
  const text = JSON.stringify(redacted);
  if (text === undefined) return null;
  if (Buffer.byteLength(text) > MAX_VALUE_BYTES) return { omitted: `${Buffer.byteLength(text)} bytes` };
  return JSON.parse(text.replace(/\\u0000/g, ''));
}

function redact(v: unknown, depth: number): unknown {
  if (depth > 8 || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => redact(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    out[k] = SECRET.test(k) && k !== 'appKey' && (typeof x === 'string' || typeof x === 'number') ? '******' : redact(x, depth + 1);
  }
  return out;
}
