// /api/v1/auth (sign in, who am I) and /api/v1/users: the control platform's users. They are the
// admin API's user records: an admin is the platform's SystemAdmin; tenant users
// (OrganizationAdmin, ProjectAdmin, User) belong to an organization and, for some, a project, and
// may use /api/v1 only. A SystemAdmin manages every user; an OrganizationAdmin its organization's
// (not SystemAdmins); a ProjectAdmin its project's Users; everyone reads and changes their own
// password and email.
import { Type } from '@sinclair/typebox';

import { DomainError } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import type { StoredAdminUser } from '../auth.ts';
import { json, ok, type Route } from '../http.ts';
import { PLATFORM_ROLES, isSystem, platformRole, type Caller, type PlatformRole } from '../../platform/scope.ts';
import { PlatformError, conflict, invalid } from '../../platform/errors.ts';
import { choice, orNull } from '../../schema/check.ts';
import { FILTER, callerOf, contains, list, listQuery, note, v1 } from './common.ts';

const USER_FIELDS = {
  username: Type.String({ pattern: '^[A-Za-z0-9._@-]{1,64}$', 'x-message': '1 to 64 of A-Z a-z 0-9 . _ @ -' }),
  password: Type.String({ minLength: 8, maxLength: 1024 }),
  email: Type.Optional(orNull(Type.String({ pattern: '^$|^[^\\s@]{1,64}@[^\\s@]{1,255}$', 'x-message': 'expected an e-mail address', description: 'empty: none; null or absent: unchanged' }))),
  role: choice(PLATFORM_ROLES),
  organizationId: Type.Optional(orNull(Type.String({ description: 'tenant roles: an existing organization' }))),
  projectId: Type.Optional(orNull(Type.String({ description: 'ProjectAdmin: a project of the organization; optional for User' }))),
};
const ADD_USER = Type.Object(USER_FIELDS, { additionalProperties: false });
const CHANGE_USER = Type.Object(
  { ...Type.Partial(Type.Object(USER_FIELDS)).properties, username: Type.Optional(Type.String({ description: 'cannot change: the same name, or absent' })) },
  { additionalProperties: false },
);

type Placement = { organizationId?: string | null; projectId?: string | null };

export interface PlatformUserView {
  id: string;
  username: string;
  email: string;
  role: PlatformRole;
  organizationId: string | null;
  projectId: string | null;
  createTime: string;
}

function view(u: StoredAdminUser): PlatformUserView {
  return { id: u.id, username: u.username, email: u.email ?? '', role: platformRole(u.role)!, organizationId: u.organizationId ?? null, projectId: u.projectId ?? null, createTime: u.createTime };
}

/** Whether the caller sees user `u` (404 otherwise). */
function sees(c: Caller, u: StoredAdminUser): boolean {
  if (platformRole(u.role) === null) return false; // a viewer is not a platform user
  if (isSystem(c) || u.id === c.id) return true;
  if (c.role === 'User' || u.role === 'admin' || u.organizationId !== c.organizationId) return false;
  return c.role === 'OrganizationAdmin' || (c.role === 'ProjectAdmin' && u.projectId === c.projectId);
}

/** Whether the caller may give a user `role` in `organizationId` / `projectId`. */
function mayAssign(c: Caller, role: PlatformRole, organizationId: string | null, projectId: string | null): boolean {
  if (isSystem(c)) return true;
  if (organizationId !== c.organizationId || role === 'SystemAdmin') return false;
  if (c.role === 'OrganizationAdmin') return true;
  return c.role === 'ProjectAdmin' && role === 'User' && projectId === c.projectId;
}

export function platformAuthRoutes(ctx: AdminContext): Route[] {
  const platform = ctx.platform;
  const byId = (c: Caller, id: string): StoredAdminUser => {
    const u = ctx.auth.recordById(id);
    if (!u || !sees(c, u)) throw new PlatformError(404, `user ${id} not found`);
    return u;
  };
  /** The organization and project of a tenant user, checked. */
  const placement = (b: Placement, role: PlatformRole, before?: StoredAdminUser): { organizationId: string | null; projectId: string | null } => {
    if (role === 'SystemAdmin') {
      if (b.organizationId != null || b.projectId != null) throw invalid('organizationId', 'a SystemAdmin belongs to no organization');
      return { organizationId: null, projectId: null };
    }
    const organizationId = b.organizationId === undefined ? before?.organizationId ?? null : b.organizationId;
    if (organizationId === null || !platform.tenants.organization(organizationId)) throw invalid('organizationId', `a ${role} needs an existing organization`);
    let projectId = b.projectId === undefined ? before?.projectId ?? null : b.projectId;
    if (role === 'OrganizationAdmin') projectId = null;
    if (projectId !== null) {
      const p = platform.tenants.project(projectId);
      if (!p || p.organizationId !== organizationId) throw invalid('projectId', 'no such project in the organization');
    } else if (role === 'ProjectAdmin') throw invalid('projectId', 'a ProjectAdmin needs a project');
    return { organizationId, projectId };
  };
  const storedRole = (r: PlatformRole) => (r === 'SystemAdmin' ? 'admin' : r);

  return [
    v1({
      method: 'POST',
      path: '/auth/login',
      access: 'public',
      tag: 'platform-auth',
      summary: 'Sign in to the control platform: {accessToken, tokenType: "Bearer", expiresIn (seconds), user}. Admins are SystemAdmins; viewers have no platform role (403). Failed sign-ins lock out like /public/login',
      body: Type.Object({ username: Type.String({ minLength: 1 }), password: Type.String({ minLength: 1 }) }),
      async handler(req) {
        const { username, password: pass } = req.body;
        note(req, { action: 'login_failed', resource: 'session', resourceId: username, username, role: 'unknown' });
        const user = await ctx.auth.login(username, pass, req.remoteAddress);
        if (!user) throw new DomainError('UNAUTHORIZED', 'wrong username or password');
        const role = platformRole(user.role);
        note(req, { action: 'login', role: role ?? user.role, organizationId: user.organizationId ?? null, projectId: user.projectId ?? null });
        if (role === null) throw new DomainError('FORBIDDEN', `user ${username} (${user.role}) has no role on the control platform`);
        const { token, expiresIn } = await ctx.auth.issue(user);
        return json({ accessToken: token, tokenType: 'Bearer', expiresIn, user: view(ctx.auth.record(username)!) });
      },
    }),
    v1({
      method: 'GET',
      path: '/auth/me',
      tag: 'platform-auth',
      summary: 'The signed-in user: {id, username, email, role, organizationId, projectId}',
      handler(req) {
        const c = callerOf(req);
        const u = ctx.auth.record(c.username);
        if (!u) throw new DomainError('UNAUTHORIZED', 'user gone');
        return json(view(u));
      },
    }),
    v1({
      method: 'GET',
      path: '/users',
      tag: 'platform-users',
      summary: 'Users in the caller\'s scope, paged; filters: username (contains), role, organizationId, projectId',
      query: listQuery({ username: FILTER, role: Type.Optional(choice(PLATFORM_ROLES)), organizationId: FILTER, projectId: FILTER }),
      handler(req) {
        const c = callerOf(req);
        const q = req.queryValues;
        const items = ctx.auth.records().filter((u) => sees(c, u)).map(view)
          .filter((u) => contains(u.username, q.username) && (!q.role || u.role === q.role) && (!q.organizationId || u.organizationId === q.organizationId) && (!q.projectId || u.projectId === q.projectId))
          .sort((a, b) => a.createTime.localeCompare(b.createTime));
        return list(q, items);
      },
    }),
    v1({
      method: 'POST',
      path: '/users',
      tag: 'platform-users',
      summary: 'Add a user: {username, password (8+), email?, role, organizationId (tenant roles), projectId (ProjectAdmin; optional for User)}',
      body: ADD_USER,
      async handler(req) {
        const c = callerOf(req);
        const b = req.body;
        const { username, password: pass, role } = b;
        if (role === 'SystemAdmin' && !isSystem(c)) throw new PlatformError(403, `${c.role} ${c.username} may not add a SystemAdmin`);
        const where = placement({ ...b, organizationId: b.organizationId ?? (isSystem(c) ? undefined : c.organizationId) }, role);
        if (!mayAssign(c, role, where.organizationId, where.projectId)) {
          if (where.organizationId !== c.organizationId && !isSystem(c)) throw new PlatformError(404, `organization ${String(where.organizationId)} not found`);
          throw new PlatformError(403, `${c.role} ${c.username} may not add a ${role}`);
        }
        if (ctx.auth.has(username)) throw conflict('username', `user ${username} exists`);
        const u = await ctx.auth.addUser(username, pass, storedRole(role), { email: b.email ?? '', ...where });
        note(req, { resource: 'user', resourceId: u.id, organizationId: where.organizationId, projectId: where.projectId, after: view(u) });
        return ok(view(u));
      },
    }),
    v1({
      method: 'GET',
      path: '/users/:id',
      tag: 'platform-users',
      summary: 'One user',
      handler(req) {
        return ok(view(byId(callerOf(req), req.params.id)));
      },
    }),
    v1({
      method: 'PUT',
      path: '/users/:id',
      tag: 'platform-users',
      summary: 'Change a user: email, password, role, organizationId, projectId (a role or password change ends the user\'s tokens). Users change their own email and password only',
      body: CHANGE_USER,
      async handler(req) {
        const c = callerOf(req);
        const before = byId(c, req.params.id);
        const b = req.body;
        if (b.username !== undefined && b.username !== before.username) throw invalid('username', 'cannot be changed');
        const self = before.id === c.id;
        const oldRole = platformRole(before.role)!;
        const role = b.role ?? oldRole;
        const placementChanges = b.role !== undefined || b.organizationId !== undefined || b.projectId !== undefined;
        if (placementChanges && (role !== oldRole || b.organizationId !== undefined || b.projectId !== undefined)) {
          if (self && !isSystem(c)) throw new PlatformError(403, 'you may not change your own role, organization or project');
        }
        const where = placement(b, role, before);
        if (!self || isSystem(c)) {
          if (!mayAssign(c, oldRole, before.organizationId ?? null, before.projectId ?? null) || !mayAssign(c, role, where.organizationId, where.projectId)) throw new PlatformError(403, `${c.role} ${c.username} may not change user ${before.username} that way`);
        }
        if (oldRole === 'SystemAdmin' && role !== 'SystemAdmin' && ctx.auth.records().filter((u) => u.role === 'admin').length === 1) throw conflict('role', 'the last SystemAdmin cannot change role');
        const after = await ctx.auth.updateUser(before.username, { email: b.email ?? before.email ?? '', role: storedRole(role), ...where, password: b.password });
        note(req, { resource: 'user', resourceId: after.id, organizationId: after.organizationId ?? null, projectId: after.projectId ?? null, before: view(before), after: view(after) });
        return ok(view(after));
      },
    }),
    v1({
      method: 'DELETE',
      path: '/users/:id',
      tag: 'platform-users',
      summary: 'Delete a user (not the last SystemAdmin); their tokens die with them',
      async handler(req) {
        const c = callerOf(req);
        const u = byId(c, req.params.id);
        if (u.id === c.id) throw new PlatformError(409, 'you may not delete yourself', 'id');
        if (!mayAssign(c, platformRole(u.role)!, u.organizationId ?? null, u.projectId ?? null)) throw new PlatformError(403, `${c.role} ${c.username} may not delete user ${u.username}`);
        if (u.role === 'admin' && ctx.auth.records().filter((x) => x.role === 'admin').length === 1) throw conflict('id', 'the last SystemAdmin cannot be deleted');
        await ctx.auth.deleteUser(u.username);
        note(req, { resource: 'user', resourceId: u.id, organizationId: u.organizationId ?? null, projectId: u.projectId ?? null, before: view(u) });
        return ok(view(u));
      },
    }),
  ];
}
