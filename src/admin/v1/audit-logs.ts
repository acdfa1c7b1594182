// GET /api/v1/audit-logs: the audit log of both APIs, newest first, paged, filtered by user,
// action, resource (and its id), organization, project and time range. SystemAdmins read it all;
// an OrganizationAdmin its organization's entries, a ProjectAdmin its project's; Users none
// (403). There is no route that changes or deletes an entry.
import { Type } from '@sinclair/typebox';

import { DomainError } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, type Route } from '../http.ts';
import { isSystem } from '../../platform/scope.ts';
import { pageOf } from '../schema.ts';
import { FILTER, TIME_FILTER, callerOf, listQuery, timeOf, v1 } from './common.ts';

export function auditRoutes(ctx: AdminContext): Route[] {
  return [v1({
    method: 'GET',
    path: '/audit-logs',
    tag: 'platform-audit-logs',
    summary: 'Audit log entries, newest first, paged ({data,total,page,size}); reads=false leaves out reads (action read, audited with audit.reads only); filters: username, action, resource, resourceId, organizationId, projectId, from, to (ISO 8601 or ms)',
    query: listQuery({ reads: Type.Optional(Type.Boolean({ description: 'false: leave out reads (action read, audited only with audit.reads); default true' })), username: FILTER, action: FILTER, resource: FILTER, resourceId: FILTER, organizationId: FILTER, projectId: FILTER, from: TIME_FILTER, to: TIME_FILTER }),
    async handler(req) {
      const c = callerOf(req);
      const q = req.queryValues;
      if (c.role === 'User') throw new DomainError('FORBIDDEN', `User ${c.username} may not read the audit log`);
      let { organizationId, projectId } = q;
      if (!isSystem(c)) {
        if (organizationId !== undefined && organizationId !== c.organizationId) return json({ data: [], total: 0, ...pageOf(q) });
        organizationId = c.organizationId ?? undefined;
        if (c.role === 'ProjectAdmin') {
          if (projectId !== undefined && projectId !== c.projectId) return json({ data: [], total: 0, ...pageOf(q) });
          projectId = c.projectId ?? undefined;
        }
      }
      const { page, size } = pageOf(q);
      // What was written until now is in the answer.
      await ctx.audit.flush();
      const { entries, total } = await ctx.audit.query({
        username: q.username, action: q.action, resource: q.resource, resourceId: q.resourceId,
        organizationId, projectId, from: timeOf(q.from, 'from'), to: timeOf(q.to, 'to'), offset: (page - 1) * size, limit: size,
      }, q.reads ?? true);
      return json({ data: entries.map((e) => ({ ...e, time: new Date(e.time).toISOString() })), total, page, size });
    },
  })];
}
