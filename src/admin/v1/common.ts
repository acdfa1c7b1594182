// What every /api/v1 route module shares: the caller as the control platform sees it (its role
// and scope), the platform's refusals as HTTP errors, paging and filters from the query string,
// and the audit note a write leaves.
import { PlatformError } from '../../platform/errors.ts';
import { platformRole, type Caller } from '../../platform/scope.ts';
import { AlertRuleError } from '../../platform/alerts/index.ts';
import { HttpError, badRequest, paged, type AdminRequest, type AuditNote, type Reply, type Route } from '../http.ts';

export const V1 = '/api/v1';

/** The signed-in user as a platform caller; 403 for a user without a platform role (a viewer). */
export function callerOf(req: AdminRequest): Caller {
  const u = req.user!;
  const role = platformRole(u.role);
  if (role === null) throw new HttpError(403, `user ${u.username} (${u.role}) has no role on the control platform`);
  return { id: u.id ?? u.username, username: u.username, role, organizationId: u.organizationId ?? null, projectId: u.projectId ?? null };
}

/** The platform's and the alert engine's refusals as the admin API's errors. */
export function toHttp(err: unknown): unknown {
  if (err instanceof PlatformError) return new HttpError(err.status, err.message, err.status === 400 || err.status === 409 ? { field: err.field, error: err.status === 400 ? 'INVALID_PARAMETER' : 'CONFLICT' } : {});
  if (err instanceof AlertRuleError) return new HttpError(400, err.message, { field: err.field, error: 'INVALID_PARAMETER' });
  return err;
}

/** A /api/v1 route: signed-in users (each route checks the caller's scope), errors converted. */
export function v1(route: Omit<Route, 'access' | 'path'> & { path: string; access?: Route['access'] }): Route {
  const handler = route.handler;
  return {
    ...route,
    path: `${V1}${route.path}`,
    access: route.access ?? 'read',
    async handler(req) {
      try {
        return await handler(req);
      } catch (err) {
        throw toHttp(err);
      }
    },
  };
}

/** `page` and `size` of a query string (NOTES: 1-based, size 1..1000, default 20). */
export function pageOf(q: URLSearchParams): { page: number; size: number } {
  const num = (field: string, min: number, max: number, fallback: number) => {
    const v = q.get(field);
    if (v === null || v === '') return fallback;
    if (!/^\d+$/.test(v)) throw badRequest(field, `expected an integer, got ${JSON.stringify(v)}`);
    const n = Number(v);
    if (n < min || n > max) throw badRequest(field, `must be between ${min} and ${max}, got ${n}`);
    return n;
  };
  return { page: num('page', 1, 1_000_000, 1), size: num('size', 1, 1000, 20) };
}

/** A time filter of the query string (ISO 8601 or ms since the epoch). */
export function timeOf(q: URLSearchParams, field: string): number | undefined {
  const v = q.get(field);
  if (v === null || v === '') return undefined;
  const t = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (Number.isNaN(t)) throw badRequest(field, `expected an ISO 8601 time or ms since the epoch, got ${JSON.stringify(v)}`);
  return t;
}

/** 400 for query parameters a list does not know. */
export function onlyQuery(q: URLSearchParams, allowed: readonly string[]): void {
  for (const k of q.keys()) if (k !== 'page' && k !== 'size' && !allowed.includes(k)) throw badRequest(k, 'unknown query parameter');
}

export function list<T>(q: URLSearchParams, items: T[]): Reply {
  const { page, size } = pageOf(q);
  return paged(items, page, size);
}

/** A query flag (true/false). */
export function flagOf(q: URLSearchParams, field: string): boolean | undefined {
  const v = q.get(field);
  if (v === null || v === '') return undefined;
  if (v !== 'true' && v !== 'false') throw badRequest(field, `expected true or false, got ${JSON.stringify(v)}`);
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
