// /api/v1/auth (sign in, who am I) and /api/v1/users: the control platform's users. They are the
// admin API's user records: an admin is the platform's SystemAdmin; tenant users
// (OrganizationAdmin, ProjectAdmin, User) belong to an organization and, for some, a project, and
// may use /api/v1 only. A SystemAdmin manages every user; an OrganizationAdmin its organization's
// (not SystemAdmins); a ProjectAdmin its project's Users; everyone reads and changes their own
// password and email.
import { DomainError } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import type { StoredAdminUser } from '../auth.ts';
import { json, ok, type Route } from '../http.ts';
import { PLATFORM_ROLES, isSystem, platformRole, type Caller, type PlatformRole } from '../../platform/scope.ts';
import { PlatformError, conflict, invalid } from '../../platform/errors.ts';
import { asInput, only } from '../../platform/fields.ts';
import { callerOf, contains, list, note, onlyQuery, v1 } from './common.ts';

const USERNAME = /^[A-Za-z0-9._@-]{1,64}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

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
  const placement = (b: Record<string, unknown>, role: PlatformRole, before?: StoredAdminUser): { organizationId: string | null; projectId: string | null } => {
    if (role === 'SystemAdmin') {
      if (b.organizationId != null || b.projectId != null) throw invalid('organizationId', 'a SystemAdmin belongs to no organization');
      return { organizationId: null, projectId: null };
    }
    const organizationId = b.organizationId === undefined ? before?.organizationId ?? null : b.organizationId;
    if (typeof organizationId !== 'string' || !platform.tenants.organization(organizationId)) throw invalid('organizationId', `a ${role} needs an existing organization`);
    let projectId = b.projectId === undefined ? before?.projectId ?? null : b.projectId;
    if (role === 'OrganizationAdmin') projectId = null;
    if (projectId !== null) {
      const p = typeof projectId === 'string' ? platform.tenants.project(projectId) : undefined;
      if (!p || p.organizationId !== organizationId) throw invalid('projectId', 'no such project in the organization');
    } else if (role === 'ProjectAdmin') throw invalid('projectId', 'a ProjectAdmin needs a project');
    return { organizationId, projectId: projectId as string | null };
  };
  const storedRole = (r: PlatformRole) => (r === 'SystemAdmin' ? 'admin' : r);
  const password = (b: Record<string, unknown>, required: boolean): string | undefined => {
    const v = b.password;
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v.length < 8 || v.length > 1024) throw invalid('password', 'at least 8 characters');
    return v;
  };
  const email = (b: Record<string, unknown>, fallback: string): string => {
    const v = b.email;
    if (v === undefined || v === null || v === '') return v === '' ? '' : fallback;
    if (typeof v !== 'string' || !EMAIL.test(v)) throw invalid('email', 'expected an e-mail address');
    return v;
  };
  const roleOf = (b: Record<string, unknown>, fallback?: PlatformRole): PlatformRole => {
    const v = b.role ?? fallback;
    if (typeof v !== 'string' || !PLATFORM_ROLES.includes(v as PlatformRole)) throw invalid('role', `must be one of ${PLATFORM_ROLES.join(', ')}`);
    return v as PlatformRole;
  };

  return [
    v1({
      method: 'POST',
      path: '/auth/login',
      access: 'public',
      tag: 'platform-auth',
      summary: 'Sign in to the control platform: {accessToken, tokenType: "Bearer", expiresIn (seconds), user}. Admins are SystemAdmins; viewers have no platform role (403). Failed sign-ins lock out like /public/login',
      body: { type: 'object', required: ['username', 'password'], properties: { username: { type: 'string' }, password: { type: 'string' } } },
      async handler(req) {
        const b = asInput(req.body);
        const username = typeof b.username === 'string' ? b.username : '';
        const pass = typeof b.password === 'string' ? b.password : '';
        if (username === '') throw invalid('username', 'is required');
        if (pass === '') throw invalid('password', 'is required');
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
      handler(req) {
        const c = callerOf(req);
        const q = req.query;
        onlyQuery(q, ['username', 'role', 'organizationId', 'projectId']);
        const items = ctx.auth.records().filter((u) => sees(c, u)).map(view)
          .filter((u) => contains(u.username, q.get('username')) && (!q.get('role') || u.role === q.get('role')) && (!q.get('organizationId') || u.organizationId === q.get('organizationId')) && (!q.get('projectId') || u.projectId === q.get('projectId')))
          .sort((a, b) => a.createTime.localeCompare(b.createTime));
        return list(q, items);
      },
    }),
    v1({
      method: 'POST',
      path: '/users',
      tag: 'platform-users',
      summary: 'Add a user: {username, password (8+), email?, role, organizationId (tenant roles), projectId (ProjectAdmin; optional for User)}',
      body: { type: 'object', required: ['username', 'password', 'role'], properties: { username: { type: 'string' }, password: { type: 'string' }, email: { type: 'string' }, role: { enum: PLATFORM_ROLES }, organizationId: { type: 'string' }, projectId: { type: 'string' } } },
      async handler(req) {
        const c = callerOf(req);
        const b = asInput(req.body);
        only(b, ['username', 'password', 'email', 'role', 'organizationId', 'projectId']);
        const username = typeof b.username === 'string' ? b.username : '';
        if (!USERNAME.test(username)) throw invalid('username', '1 to 64 of A-Z a-z 0-9 . _ @ -');
        const pass = password(b, true)!;
        const role = roleOf(b);
        if (role === 'SystemAdmin' && !isSystem(c)) throw new PlatformError(403, `${c.role} ${c.username} may not add a SystemAdmin`);
        const where = placement({ ...b, organizationId: b.organizationId ?? (isSystem(c) ? undefined : c.organizationId) }, role);
        if (!mayAssign(c, role, where.organizationId, where.projectId)) {
          if (where.organizationId !== c.organizationId && !isSystem(c)) throw new PlatformError(404, `organization ${String(where.organizationId)} not found`);
          throw new PlatformError(403, `${c.role} ${c.username} may not add a ${role}`);
        }
        if (ctx.auth.has(username)) throw conflict('username', `user ${username} exists`);
        const u = await ctx.auth.addUser(username, pass, storedRole(role), { email: email(b, ''), ...where });
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
      async handler(req) {
        const c = callerOf(req);
        const before = byId(c, req.params.id);
        const b = asInput(req.body);
        only(b, ['username', 'password', 'email', 'role', 'organizationId', 'projectId']);
        if (b.username !== undefined && b.username !== before.username) throw invalid('username', 'cannot be changed');
        const self = before.id === c.id;
        const oldRole = platformRole(before.role)!;
        const role = roleOf(b, oldRole);
        const placementChanges = b.role !== undefined || b.organizationId !== undefined || b.projectId !== undefined;
        if (placementChanges && (role !== oldRole || b.organizationId !== undefined || b.projectId !== undefined)) {
          if (self && !isSystem(c)) throw new PlatformError(403, 'you may not change your own role, organization or project');
        }
        const where = placement(b, role, before);
        if (!self || isSystem(c)) {
          if (!mayAssign(c, oldRole, before.organizationId ?? null, before.projectId ?? null) || !mayAssign(c, role, where.organizationId, where.projectId)) throw new PlatformError(403, `${c.role} ${c.username} may not change user ${before.username} that way`);
        }
        if (oldRole === 'SystemAdmin' && role !== 'SystemAdmin' && ctx.auth.records().filter((u) => u.role === 'admin').length === 1) throw conflict('role', 'the last SystemAdmin cannot change role');
        const after = await ctx.auth.updateUser(before.username, { email: email(b, before.email ?? ''), role: storedRole(role), ...where, password: password(b, false) });
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
