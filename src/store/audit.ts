// The audit log's rules shared by every backend (any thread that holds a store): the limits of an
// entry and of a query, the check that refuses what a backend could not keep (before anything is
// queued, so a bad entry never fails a group-commit batch of other callers' writes), the encoding
// of `before` / `after` as JSON text, and the order entries are answered in.
import { StoreError } from './errors.ts';
import type { AuditEntry, AuditQuery } from './types.ts';

/** UTF-8 bytes each string field may hold at most (MySQL keeps the filtered ones in indexed
 * VARBINARY columns of these sizes); `before` and `after` count their JSON text. */
export const AUDIT_LIMITS = {
  id: 255,
  username: 1024,
  role: 255,
  organizationId: 255,
  projectId: 255,
  action: 255,
  resource: 255,
  resourceId: 1024,
  method: 32,
  path: 8192,
  address: 255,
  json: 65_536,
} as const;

/** Entries one queryAudit call answers at most (its `limit`). */
export const MAX_AUDIT_PAGE = 10_000;

/** Entries one pruning transaction removes at most: a large prune runs as several transactions,
 * so it never holds the store's writer (and everyone's writes behind it) for long. */
export const AUDIT_PRUNE_CHUNK = 10_000;

/** An entry as the backends write it: `before` and `after` as JSON text (null: none). */
export interface EncodedAuditEntry extends Omit<AuditEntry, 'before' | 'after'> {
  before: string | null;
  after: string | null;
}

const REQUIRED = ['id', 'username', 'role', 'action', 'resource', 'method', 'path', 'address'] as const;
const NULLABLE = ['organizationId', 'projectId', 'resourceId'] as const;
const FILTERS = ['username', 'action', 'resource', 'resourceId', 'organizationId', 'projectId'] as const;

function invalid(message: string): StoreError {
  return new StoreError('STORE_INVALID', message);
}

/** Why `value` cannot be kept in string field `field` (PostgreSQL text cannot hold NUL), or undefined. */
function badString(what: string, value: unknown, max: number): StoreError | undefined {
  if (typeof value !== 'string') return invalid(`${what} must be a string`);
  if (value.includes('\u0000')) return invalid(`${what} holds a NUL character`);
  const n = Buffer.byteLength(value);
  return n <= max ? undefined : invalid(`${what} is ${n} bytes, more than the ${max} the audit log keeps`);
}

function isMs(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

function encodeJson(what: string, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new StoreError('STORE_INVALID', `${what} is not JSON-serialisable`, { cause: err });
  }
  if (text === undefined) throw invalid(`${what} is not JSON-serialisable`);
  const n = Buffer.byteLength(text);
  if (n > AUDIT_LIMITS.json) throw invalid(`${what} is ${n} bytes of JSON, more than the ${AUDIT_LIMITS.json} the audit log keeps`);
  return text;
}

/** The entries checked and encoded; throws STORE_INVALID naming the entry and field at fault. */
export function encodeAudit(entries: readonly AuditEntry[]): EncodedAuditEntry[] {
  if (!Array.isArray(entries)) throw invalid('audit entries must be an array');
  return entries.map((e, i) => {
    const at = `audit entry ${i}`;
    if (typeof e !== 'object' || e === null) throw invalid(`${at} must be an object`);
    for (const f of REQUIRED) {
      const bad = badString(`${at} ${f}`, e[f], AUDIT_LIMITS[f]);
      if (bad) throw bad;
    }
    if (e.id === '') throw invalid(`${at} id is empty`);
    for (const f of NULLABLE) {
      const bad = e[f] === null ? undefined : badString(`${at} ${f}`, e[f], AUDIT_LIMITS[f]);
      if (bad) throw bad;
    }
    if (!isMs(e.time) || e.time < 0) throw invalid(`${at} time must be a non-negative integer number of ms`);
    if (!Number.isInteger(e.status) || e.status < 0 || e.status > 999) throw invalid(`${at} status must be an integer in 0..999`);
    return {
      id: e.id,
      time: e.time,
      username: e.username,
      role: e.role,
      organizationId: e.organizationId,
      projectId: e.projectId,
      action: e.action,
      resource: e.resource,
      resourceId: e.resourceId,
      method: e.method,
      path: e.path,
      status: e.status,
      address: e.address,
      before: encodeJson(`${at} before`, e.before),
      after: encodeJson(`${at} after`, e.after),
    };
  });
}

/** An entry read back: JSON text decoded. */
export function decodeAudit(e: EncodedAuditEntry): AuditEntry {
  return {
    ...e,
    before: e.before === null ? null : (JSON.parse(e.before) as unknown),
    after: e.after === null ? null : (JSON.parse(e.after) as unknown),
  };
}

/** Throws STORE_INVALID when the query has a filter of the wrong type or a page out of bounds. */
export function checkAuditQuery(q: AuditQuery): void {
  if (typeof q !== 'object' || q === null) throw invalid('audit query must be an object');
  for (const f of FILTERS) {
    if (q[f] === undefined) continue;
    if (typeof q[f] !== 'string') throw invalid(`audit query ${f} must be a string`);
    if (q[f].includes('\u0000')) throw invalid(`audit query ${f} holds a NUL character`);
  }
  for (const f of ['from', 'to'] as const) {
    if (q[f] !== undefined && !isMs(q[f])) throw invalid(`audit query ${f} must be an integer number of ms`);
  }
  if (!Number.isSafeInteger(q.offset) || q.offset < 0) throw invalid('audit query offset must be a non-negative integer');
  if (!Number.isInteger(q.limit) || q.limit < 0 || q.limit > MAX_AUDIT_PAGE) {
    throw invalid(`audit query limit must be an integer in 0..${MAX_AUDIT_PAGE}`);
  }
}

/** Throws STORE_INVALID unless `before` is an integer number of ms. */
export function checkPruneBefore(before: number): void {
  if (!isMs(before)) throw invalid('audit prune bound must be an integer number of ms');
}

/** Ascending (time, id) with ids compared as UTF-8 bytes, as the SQL backends' binary collations
 * do; queries answer the reverse of this order. */
export function compareAudit(a: { time: number; id: string }, b: { time: number; id: string }): number {
  if (a.time !== b.time) return a.time - b.time;
  if (a.id === b.id) return 0;
  return Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
}

/** Whether an entry matches every filter of the query (time bounds included). */
export function matchesAudit(e: EncodedAuditEntry, q: AuditQuery): boolean {
  for (const f of FILTERS) if (q[f] !== undefined && e[f] !== q[f]) return false;
  return (q.from === undefined || e.time >= q.from) && (q.to === undefined || e.time <= q.to);
}
