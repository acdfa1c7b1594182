// What every /api/v1 route module shares: the caller as the control platform sees it (its role
// and scope), paging and filters from the query string,
// and the audit note a write leaves.
import { Type, type TSchema } from '@sinclair/typebox';

import { DomainError, invalid } from '../../errors/domain-error.ts';
import { platformRole, type Caller } from '../../platform/scope.ts';
import { paged, type AdminRequest, type AuditNote, type Reply, type Route } from '../http.ts';
import { PAGING, pageOf, route, type TypedRoute } from '../schema.ts';

export const V1 = '/api/v1';

/** The signed-in user as a platform caller; 403 for a user without a platform role (a viewer). */
export function callerOf(req: AdminRequest): Caller {
  const u = req.user!;
  const role = platformRole(u.role);
  if (role === null) throw new DomainError('FORBIDDEN', `user ${u.username} (${u.role}) has no role on the control platform`);
  return { id: u.id ?? u.username, username: u.username, role, organizationId: u.organizationId ?? null, projectId: u.projectId ?? null };
}

/** A /api/v1 route: signed-in users (each route checks the caller's scope). */
export function v1<B extends TSchema | undefined = undefined, Q extends TSchema | undefined = undefined>(
  r: Omit<TypedRoute<B, Q>, 'access' | 'path'> & { path: string; access?: Route['access'] },
): Route {
  return route({ ...r, path: `${V1}${r.path}`, access: r.access ?? 'read' } as TypedRoute<B, Q>);
}

/** The query of a list: its filters (each optional) and paging; any other parameter is refused. */
export function listQuery<P extends Record<string, TSchema>>(filters: P) {
  return Type.Object({ ...filters, ...PAGING }, { additionalProperties: false });
}

/** A text filter of a list query. */
export const FILTER = Type.Optional(Type.String());
/** A time filter of a list query: ISO 8601 or ms since the epoch (read with timeOf). */
export const TIME_FILTER = Type.Optional(Type.String({ description: 'ISO 8601 or ms since the epoch' }));

/** A time filter's value (ISO 8601 or ms since the epoch). */
export function timeOf(v: string | undefined, field: string): number | undefined {
  if (v === undefined) return undefined;
  const t = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (Number.isNaN(t)) throw invalid(field, `expected an ISO 8601 time or ms since the epoch, got ${JSON.stringify(v)}`);
  return t;
}

export function list<T>(q: { page?: number; size?: number }, items: T[]): Reply {
  const { page, size } = pageOf(q);
  return paged(items, page, size);
}

/** `?cascade=true` of a delete. */
export const CASCADE = Type.Object({ cascade: Type.Optional(Type.Boolean({ description: 'true: what belongs to it goes too' })) });

/** Records what a write did, for the audit log. */
export function note(req: AdminRequest, n: AuditNote): void {
  req.audit = { ...req.audit, ...n };
}

/** Text filter: case-insensitive substring. */
export function contains(value: string | null | undefined, wanted: string | null | undefined): boolean {
  return wanted === null || wanted === undefined || wanted === '' || (value ?? '').toLowerCase().includes(wanted.toLowerCase());
}
