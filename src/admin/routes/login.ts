// POST /public/login: a signed token for a user's name and password (spec 4.11).
import { Type } from '@sinclair/typebox';

import { DomainError } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { route } from '../schema.ts';
import { clearedCookie, sessionCookie } from '../console/session-cookie.ts';

export function loginRoutes(ctx: AdminContext): Route[] {
  return [route({
    method: 'POST',
    path: '/public/login',
    access: 'public',
    tag: 'public',
    summary: 'Sign in: answers {token, expires}; send the token as "Authorization: Bearer <token>". With cookie: true (the web console) the token is also set as an HttpOnly, SameSite=Strict session cookie (Secure over HTTPS), which the API and /api/live then accept in place of the header. 429 with Retry-After after admin.loginMaxFailures failures from the address or for the username within admin.loginWindow',
    body: Type.Object({ username: Type.String({ minLength: 1 }), password: Type.String({ minLength: 1 }), cookie: Type.Optional(Type.Boolean({ default: false })) }),
    async handler(req) {
      const { username, password, cookie = false } = req.body;
      // The audit log records sign-ins, failed ones too.
      req.audit = { action: 'login_failed', resource: 'session', resourceId: username.slice(0, 256), username: username.slice(0, 256), role: 'unknown' };
      const user = await ctx.auth.login(username, password, req.remoteAddress);
      if (!user) throw new DomainError('UNAUTHORIZED', 'wrong username or password');
      req.audit = { ...req.audit, action: 'login', role: user.role, organizationId: user.organizationId ?? null };
      const { token, expires } = await ctx.auth.issue(user);
      const reply = json({ token, expires });
      // Secure over HTTPS: the browser then never sends it over plain HTTP.
      if (cookie) reply.headers = { 'set-cookie': sessionCookie(token, expires, req.secure), 'cache-control': 'no-store' };
      return reply;
    },
  }), {
    method: 'POST',
    path: '/public/logout',
    access: 'public',
    tag: 'public',
    summary: 'Sign out of the web console: the session cookie is cleared (a token given out stays valid until it expires)',
    handler: (req) => {
      const reply = ok();
      reply.headers = { 'set-cookie': clearedCookie(req.secure) };
      return reply;
    },
  }, {
    method: 'GET',
    path: '/api/session',
    access: 'read',
    tag: 'public',
    summary: 'Who is signed in: {username, role} (the web console asks at start)',
    handler: (req) => ok({ username: req.user!.username, role: req.user!.role }),
  }];
}
