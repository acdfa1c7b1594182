// POST /public/login: a signed token for a user's name and password (spec 4.11).
import type { AdminContext } from '../context.ts';
import { HttpError, json, type Route } from '../http.ts';
import { object, reqStr } from '../validate.ts';

export function loginRoutes(ctx: AdminContext): Route[] {
  return [{
    method: 'POST',
    path: '/public/login',
    access: 'public',
    tag: 'public',
    summary: 'Sign in: answers {token, expires}; send the token as "Authorization: Bearer <token>". 429 with Retry-After after admin.loginMaxFailures failures from the address or for the username within admin.loginWindow',
    body: { type: 'object', required: ['username', 'password'], properties: { username: { type: 'string' }, password: { type: 'string' } } },
    async handler(req) {
      const b = object(req.body);
      const username = reqStr(b, 'username');
      const password = reqStr(b, 'password');
      // The audit log records sign-ins, failed ones too.
      req.audit = { action: 'login_failed', resource: 'session', resourceId: username.slice(0, 256), username: username.slice(0, 256), role: 'unknown' };
      const user = await ctx.auth.login(username, password, req.remoteAddress);
      if (!user) throw new HttpError(401, 'wrong username or password');
      req.audit = { ...req.audit, action: 'login', role: user.role, organizationId: user.organizationId ?? null };
      const { token, expires } = await ctx.auth.issue(user);
      return json({ token, expires });
    },
  }];
}
