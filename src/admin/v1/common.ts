// What every /api/v1 route module shares: the caller as the control platform sees it (its role
// and scope), paging and filters from the query string,
// and the audit note a write leaves.
import { DomainError, invalid } from '../../errors/domain-error.ts';
import { platformRole, type Caller } from '../../platform/scope.ts';
import { paged, type AdminRequest, type AuditNote, type Reply, type Route } from '../http.ts';

export const V1 = '/api/v1';

/** The signed-in user as a platform caller; 403 for a user without a platform role (a viewer). */
export function callerOf(req: AdminRequest): Caller {
  const u = req.user!;
  const role = platformRole(u.role);
  if (role === null) throw new DomainError('FORBIDDEN', `user ${u.username} (${u.role}) has no role on the control platform`);
  return { id: u.id ?? u.username, username: u.username, role, organizationId: u.organizationId ?? null, projectId: u.projectId ?? null };
}

/** A /api/v1 route: signed-in users (each route checks the caller's scope). */
export function v1(route: Omit<Route, 'access' | 'path'> & { path: string; access?: Route['access'] }): Route {
  return { ...route, path: `${V1}${route.path}`, access: route.access ?? 'read' };
}

/** `page` and `size` of a query string (NOTES: 1-based, size 1..1000, default 20). */
export function pageOf(q: URLSearchParams): { page: number; size: number } {
  const num = (field: string, min: number, max: number, fallback: number) => {
    const v = q.get(field);
    if (v === null || v === '') return fallback;
    if (!/^\d+$/.test(v)) throw invalid(field, `expected an integer, got ${JSON.stringify(v)}`);
    const n = Number(v);
    if (n < min || n > max) throw invalid(field, `must be between ${min} and ${max}, got ${n}`);
    return n;
  };
  return { page: num('page', 1, 1_000_000, 1), size: num('size', 1, 1000, 20) };
}

/** A time filter of the query string (ISO 8601 or ms since the epoch). */
export function timeOf(q: URLSearchParams, field: string): number | undefined {
  const v = q.get(field);
  if (v === null || v === '') return undefined;
  const t = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (Number.isNaN(t)) throw invalid(field, `expected an ISO 8601 time or ms since the epoch, got ${JSON.stringify(v)}`);
  return t;
}

/** 400 for query parameters a list does not know. */
export function onlyQuery(q: URLSearchParams, allowed: readonly string[]): void {
  for (const k of q.keys()) if (k !== 'page' && k !== 'size' && !allowed.includes(k)) throw invalid(k, 'unknown query parameter');
}

export function list<T>(q: URLSearchParams, items: T[]): Reply {
  const { page, size } = pageOf(q);
  return paged(items, page, size);
}

/** A query flag (true/false). */
export function flagOf(q: URLSearchParams, field: string): boolean | undefined {
  const v = q.get(field);
  if (v === null || v === '') return undefined;
  if (v !== 'true' && v !== 'false') throw invalid(field, `expected true or false, got ${JSON.stringify(v)}`);
  return v === 'true';
}

/** Records what a write did, for the audit log. */
export function note(req: AdminRequest, n: AuditNote): void {
  req.audit = { ...req.audit, ...n };
}

/** Text filter: case-insensitive substring. */
export function contains(value: string | null | undefined, wanted: string | null): boolean {
  return wanted === null || wanted === '' || (value ?? '').toLowerCase().includes(wanted.toLowerCase());
}
