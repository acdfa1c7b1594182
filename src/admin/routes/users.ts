// Admin users: list, add, change the password or the role of, and delete the users who may call
// the admin API. Roles: admin (everything) and viewer (read-only routes). A password or role
// change, and a deletion, end the user's tokens.
import { Type } from '@sinclair/typebox';

import { DomainError, conflict, notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import { ROLES } from '../auth.ts';

const USERNAME = Type.String({ pattern: '^[A-Za-z0-9._@-]{1,64}$', 'x-message': '1 to 64 of A-Z a-z 0-9 . _ @ -' });
/** An existing user's name (any the store holds; the pattern applies to new ones). */
const NAME = Type.String({ minLength: 1 });
const PASSWORD = Type.String({ minLength: 8 });
const ROLE = choice(ROLES);

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
    route({
      method: 'POST',
      path: '/api/users/add',
      access: 'write',
      tag: 'users',
      summary: 'Add an admin user',
      body: Type.Object({ username: USERNAME, password: PASSWORD, role: Type.Optional(ROLE) }, strict),
      async handler(req) {
        const { username, password, role = 'viewer' } = req.body;
        if (ctx.auth.has(username)) throw conflict('username', `user ${username} exists`);
        await ctx.auth.addUser(username, password, role);
        return ok({ username, role });
      },
    }),
    route({
      method: 'POST',
      path: '/api/users/password',
      access: 'read',
      tag: 'users',
      summary: "Change a user's password (admins: anyone's; viewers: their own); the user's tokens issued before are refused from then on",
      body: Type.Object({ username: NAME, password: PASSWORD }, strict),
      async handler(req) {
        const { username, password } = req.body;
        if (req.user!.role !== 'admin' && req.user!.username !== username) throw new DomainError('FORBIDDEN', 'a viewer may change only their own password');
        if (!ctx.auth.has(username)) throw notFound(`user ${username} not found`);
        await ctx.auth.setPassword(username, password);
        return ok();
      },
    }),
    route({
      method: 'POST',
      path: '/api/users/role',
      access: 'write',
      tag: 'users',
      summary: "Change a user's role (not the last admin's to viewer); the user's tokens issued before are refused from then on",
      body: Type.Object({ username: NAME, role: ROLE }, strict),
      async handler(req) {
        const { username, role } = req.body;
        if (!ctx.auth.has(username)) throw notFound(`user ${username} not found`);
        const admins = ctx.auth.list().filter((u) => u.role === 'admin');
        if (role !== 'admin' && admins.length === 1 && admins[0].username === username) throw conflict('role', 'the last admin cannot become a viewer');
        await ctx.auth.setRole(username, role);
        return ok({ username, role });
      },
    }),
    route({
      method: 'POST',
      path: '/api/users/delete',
      access: 'write',
      tag: 'users',
      summary: 'Delete an admin user (not the last admin); their tokens are refused from then on, also after a user of the same name is added',
      body: Type.Object({ username: NAME }),
      async handler(req) {
        const { username } = req.body;
        if (!ctx.auth.has(username)) throw notFound(`user ${username} not found`);
        const admins = ctx.auth.list().filter((u) => u.role === 'admin');
        if (admins.length === 1 && admins[0].username === username) throw conflict('username', 'the last admin cannot be deleted');
        await ctx.auth.deleteUser(username);
        return ok();
      },
    }),
  ];
}
