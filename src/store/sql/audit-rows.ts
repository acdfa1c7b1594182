// The audit log's SQL shared by the PostgreSQL and MySQL backends (table spindle_audit_log): its
// columns, the row written for an entry, the entry decoded from a row read back, and the SELECT,
// COUNT and pruning DELETE of a query, written in the SQL both dialects read; a dialect supplies
// only its bind placeholder ($1 or ?).
import { decodeAudit, type EncodedAuditEntry } from '../audit.ts';
import type { AuditEntry, AuditQuery } from '../types.ts';
import { text, type Row } from './rows.ts';

export const AUDIT_COLUMNS = [
  'id', 'time', 'username', 'role', 'organization_id', 'project_id', 'action', 'resource', 'resource_id',
  'method', 'path', 'status', 'address', 'before_json', 'after_json',
] as const;

export function auditRow(e: EncodedAuditEntry) {
  return {
    id: e.id,
    time: e.time,
    username: e.username,
    role: e.role,
    organization_id: e.organizationId,
    project_id: e.projectId,
    action: e.action,
    resource: e.resource,
    resource_id: e.resourceId,
    method: e.method,
    path: e.path,
    status: e.status,
    address: e.address,
    before_json: e.before,
    after_json: e.after,
  } satisfies Record<(typeof AUDIT_COLUMNS)[number], unknown>;
}

export type AuditRow = ReturnType<typeof auditRow>;

const nullableText = (v: unknown): string | null => (v === null || v === undefined ? null : text(v));

/** An entry from a row (mysql2 returns the VARBINARY columns as Buffers, BIGINT as strings). */
export function toAuditEntry(r: Row): AuditEntry {
  return decodeAudit({
    id: text(r.id),
    time: Number(r.time),
    username: text(r.username),
    role: text(r.role),
    organizationId: nullableText(r.organization_id),
    projectId: nullableText(r.project_id),
    action: text(r.action),
    resource: text(r.resource),
    resourceId: nullableText(r.resource_id),
    method: text(r.method),
    path: text(r.path),
    status: Number(r.status),
    address: text(r.address),
    before: nullableText(r.before_json),
    after: nullableText(r.after_json),
  });
}

/** The statements of one audit query: the page (newest first) and the count of every match. */
export interface AuditStatements {
  select: string;
  selectParams: unknown[];
  count: string;
  countParams: unknown[];
}

const FILTER_COLUMNS = [
  ['username', 'username'],
  ['action', 'action'],
  ['resource', 'resource'],
  ['resourceId', 'resource_id'],
  ['organizationId', 'organization_id'],
  ['projectId', 'project_id'],
] as const;

/** `placeholder(n)` is the dialect's n-th (1-based) bind parameter. */
export function auditStatements(q: AuditQuery, placeholder: (n: number) => string): AuditStatements {
  const terms: string[] = [];
  const params: unknown[] = [];
  const bind = (term: string, value: unknown) => {
    params.push(value);
    terms.push(`${term} ${placeholder(params.length)}`);
  };
  for (const [field, column] of FILTER_COLUMNS) if (q[field] !== undefined) bind(`${column} =`, q[field]);
  if (q.from !== undefined) bind('time >=', q.from);
  if (q.to !== undefined) bind('time <=', q.to);
  const where = terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`;
  const n = params.length;
  return {
    select: `SELECT ${AUDIT_COLUMNS.join(', ')} FROM spindle_audit_log${where}
             ORDER BY time DESC, id DESC LIMIT ${placeholder(n + 1)} OFFSET ${placeholder(n + 2)}`,
    selectParams: [...params, q.limit, q.offset],
    count: `SELECT COUNT(*) AS total FROM spindle_audit_log${where}`,
    countParams: params,
  };
}
