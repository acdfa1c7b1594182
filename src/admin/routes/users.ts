// Admin users: list, add, change the password or the role of, and delete the users who may call
// the admin API. Roles: admin (everything) and viewer (read-only routes). A password or role
// change, and a deletion, end the user's tokens.
import { DomainError, conflict, notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { ROLES } from '../auth.ts';
import { object, oneOf, reqStr, onlyFields } from '../validate.ts';

const USERNAME = /^[A-Za-z0-9._@-]{1,64}$/;

export function userRoutes(ctx: AdminContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/users',
      access: 'write',
      tag: 'users',
      summary: 'List admin users (without password hashes)',
      handler: () => ok(ctx.auth.list()),
    },
    {
      method: 'POST',
      path: '/api/users/add',
      access: 'write',
      tag: 'users',
      summary: 'Add an admin user',
      body: { type: 'object', required: ['username', 'password'], properties: { username: { type: 'string' }, password: { type: 'string', minLength: 8 }, role: { enum: ROLES } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['username', 'password', 'role']);
        const username = reqStr(b, 'username');
        if (!USERNAME.test(username)) throw new DomainError('INVALID_PARAMETER', 'username: 1 to 64 of A-Z a-z 0-9 . _ @ -', { field: 'username' });
        const password = reqStr(b, 'password');
        if (password.length < 8) throw new DomainError('INVALID_PARAMETER', 'password: at least 8 characters', { field: 'password' });
        const role = oneOf(b, 'role', ROLES) ?? 'viewer';
        if (ctx.auth.has(username)) throw conflict('username', `user ${username} exists`);
        await ctx.auth.addUser(username, password, role);
        return ok({ username, role });
      },
    },
    {
      method: 'POST',
      path: '/api/users/password',
      access: 'read',
      tag: 'users',
      summary: "Change a user's password (admins: anyone's; viewers: their own); the user's tokens issued before are refused from then on",
      body: { type: 'object', required: ['username', 'password'], properties: { username: { type: 'string' }, password: { type: 'string', minLength: 8 } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['username', 'password']);
        const username = reqStr(b, 'username');
        const password = reqStr(b, 'password');
        if (password.length < 8) throw new DomainError('INVALID_PARAMETER', 'password: at least 8 characters', { field: 'password' });
        if (req.user!.role !== 'admin' && req.user!.username !== username) throw new DomainError('FORBIDDEN', 'a viewer may change only their own password');
        if (!ctx.auth.has(username)) throw notFound(`user ${username} not found`);
        await ctx.auth.setPassword(username, password);
        return ok();
      },
    },
    {
      method: 'POST',
      path: '/api/users/role',
      access: 'write',
      tag: 'users',
      summary: "Change a user's role (not the last admin's to viewer); the user's tokens issued before are refused from then on",
      body: { type: 'object', required: ['username', 'role'], properties: { username: { type: 'string' }, role: { enum: ROLES } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['username', 'role']);
        const username = reqStr(b, 'username');
        const role = oneOf(b, 'role', ROLES, { required: true })!;
        if (!ctx.auth.has(username)) throw notFound(`user ${username} not found`);
        const admins = ctx.auth.list().filter((u) => u.role === 'admin');
        if (role !== 'admin' && admins.length === 1 && admins[0].username === username) throw conflict('role', 'the last admin cannot become a viewer');
        await ctx.auth.setRole(username, role);
        return ok({ username, role });
      },
    },
    {
      method: 'POST',
      path: '/api/users/delete',
      access: 'write',
      tag: 'users',
      summary: 'Delete an admin user (not the last admin); their tokens are refused from then on, also after a user of the same name is added',
      body: { type: 'object', required: ['username'], properties: { username: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        const username = reqStr(b, 'username');
        if (!ctx.auth.has(username)) throw notFound(`user ${username} not found`);
        const admins = ctx.auth.list().filter((u) => u.role === 'admin');
        if (admins.length === 1 && admins[0].username === username) throw conflict('username', 'the last admin cannot be deleted');
        await ctx.auth.deleteUser(username);
        return ok();
      },
    },
  ];
}
