// Bearer tokens are bound to the user record: its immutable id (`sub`) and credential version
// (`ver`). A password change, a role change and a deletion end a user's tokens, and a user
// re-created under the same name does not inherit them. HS256 only. Users stored before records
// had ids keep working and get an id and a version at start.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { SignJWT, decodeJwt } from 'jose';
import { Registry } from 'prom-client';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD } from '../helpers/broker.ts';
import { AdminAuth } from '../../src/admin/auth.ts';
import { AuthMetrics } from '../../src/admin/auth-metrics.ts';
import { hashPassword } from '../../src/auth/password.ts';
import { createLogger } from '../../src/log/index.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker();
});
after(() => b.stop());

async function login(username: string, password: string): Promise<string> {
  const r = await b.api('POST', '/public/login', { as: 'none', body: { username, password } });
  assert.equal(r.status, 200, `login as ${username}`);
  return r.json.token;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test('a token names the user record by id and version, not by name', async () => {
  await b.api('POST', '/api/users/add', { body: { username: 'tok-claims', password: 'tok-claims-pw', role: 'viewer' } });
  const claims = decodeJwt(await login('tok-claims', 'tok-claims-pw'));
  assert.match(String(claims.sub), /^[0-9a-f-]{36}$/);
  assert.notEqual(claims.sub, 'tok-claims');
  assert.equal(claims.ver, 1);
  assert.equal(claims.role, undefined, 'the role comes from the record, not the token');
});

test('a password change ends the tokens issued before it; new ones work', async () => {
  await b.api('POST', '/api/users/add', { body: { username: 'tok-pw', password: 'first-password', role: 'viewer' } });
  const old = await login('tok-pw', 'first-password');
  assert.equal((await b.api('GET', '/system/config', bearer(old))).status, 200);
  const change = await b.api('POST', '/api/users/password', { authorization: `Bearer ${old}`, body: { username: 'tok-pw', password: 'second-password' } });
  assert.equal(change.status, 200);
  assert.equal((await b.api('GET', '/system/config', bearer(old))).status, 401, 'the old token is refused');
  const fresh = await login('tok-pw', 'second-password');
  assert.equal(decodeJwt(fresh).ver, 2);
  assert.equal((await b.api('GET', '/system/config', bearer(fresh))).status, 200);
});

test('a token of a deleted user does not work for a user re-created under that name, whatever its role', async () => {
  await b.api('POST', '/api/users/add', { body: { username: 'tok-again', password: 'tok-again-pw', role: 'admin' } });
  const old = await login('tok-again', 'tok-again-pw');
  assert.equal((await b.api('GET', '/api/users', bearer(old))).status, 200);
  assert.equal((await b.api('POST', '/api/users/delete', { body: { username: 'tok-again' } })).status, 200);
  assert.equal((await b.api('GET', '/system/config', bearer(old))).status, 401);
  for (const role of ['viewer', 'admin']) {
    await b.api('POST', '/api/users/add', { body: { username: 'tok-again', password: 'tok-again-pw', role } });
    assert.equal((await b.api('GET', '/system/config', bearer(old))).status, 401, `re-created as ${role}`);
    assert.equal((await b.api('POST', '/api/users/delete', { body: { username: 'tok-again' } })).status, 200);
  }
});

test('a role change ends the tokens issued before it', async () => {
  await b.api('POST', '/api/users/add', { body: { username: 'tok-role', password: 'tok-role-pw', role: 'admin' } });
  const old = await login('tok-role', 'tok-role-pw');
  const r = await b.api('POST', '/api/users/role', { body: { username: 'tok-role', role: 'viewer' } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.data, { username: 'tok-role', role: 'viewer' });
  assert.equal((await b.api('GET', '/system/config', bearer(old))).status, 401);
  const fresh = await login('tok-role', 'tok-role-pw');
  assert.equal((await b.api('GET', '/system/config', bearer(fresh))).status, 200);
  assert.equal((await b.api('GET', '/api/users', bearer(fresh))).status, 403, 'now a viewer');
  assert.equal((await b.api('POST', '/api/users/role', { body: { username: 'admin', role: 'viewer' } })).status, 409, 'the last admin stays one');
  assert.equal((await b.api('POST', '/api/users/role', { body: { username: 'nobody', role: 'viewer' } })).status, 404);
  assert.equal((await b.api('POST', '/api/users/role', { body: { username: 'tok-role', role: 'root' } })).json.field, 'role');
});

test('only HS256 with the broker secret: alg none, HS512 with the right secret, another secret, a token naming a username are 401', async () => {
  const secret = Buffer.from((await b.admin!.context.store.getAdmin<{ key: string }>('admin-secret', 'jwt'))!.key, 'base64url');
  const now = Math.floor(Date.now() / 1000);
  const good = decodeJwt(await login('admin', ADMIN_PASSWORD));
  const sign = (alg: string, key: Uint8Array, sub = good.sub!) => new SignJWT({ ver: good.ver }).setProtectedHeader({ alg }).setSubject(sub).setIssuedAt(now).setExpirationTime(now + 60).sign(key);
  assert.equal((await b.api('GET', '/system/config', bearer(await sign('HS256', secret)))).status, 200, 'the control: a token made here with the right secret works');
  assert.equal((await b.api('GET', '/system/config', bearer(await sign('HS512', secret)))).status, 401);
  assert.equal((await b.api('GET', '/system/config', bearer(await sign('HS256', Buffer.alloc(32, 7))))).status, 401);
  assert.equal((await b.api('GET', '/system/config', bearer(await sign('HS256', secret, 'admin')))).status, 401, 'sub is an id, not a username');
  const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: good.sub, ver: good.ver, iat: now, exp: now + 60 })).toString('base64url')}.`;
  assert.equal((await b.api('GET', '/system/config', bearer(none))).status, 401);
  const noVersion = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(good.sub!).setIssuedAt(now).setExpirationTime(now + 60).sign(secret);
  assert.equal((await b.api('GET', '/system/config', bearer(noVersion))).status, 401, 'a token without ver');
});

test('users stored without id and tokenVersion keep working: given both at start, and kept', async () => {
  const store = new MemoryStore();
  await store.open();
  const passwordHash = await hashPassword('legacy-password');
  await store.putAdmin('admin-user', 'legacy', { username: 'legacy', passwordHash, role: 'admin', createTime: '2024-01-01T00:00:00.000Z' });
  const log = createLogger({ level: 'error', name: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
  const options = { username: 'admin', password: 'unused-password', tokenLifetime: 60, limits: { maxFailures: 10, windowMs: 60_000, lockoutMs: 60_000 } };
  const auth = new AdminAuth(store, options, log, new AuthMetrics(new Registry()));
  await auth.init();
  const stored = await store.getAdmin<{ id: string; tokenVersion: number; passwordHash: string }>('admin-user', 'legacy');
  assert.match(stored!.id, /^[0-9a-f-]{36}$/);
  assert.equal(stored!.tokenVersion, 1);
  assert.equal(stored!.passwordHash, passwordHash);
  assert.equal(auth.has('admin'), false, 'no first admin is created beside an existing user');
  const user = await auth.login('legacy', 'legacy-password', '127.0.0.1');
  const pick = (u: { username: string; role: string } | null) => (u ? { username: u.username, role: u.role } : null);
  assert.deepEqual(pick(user), { username: 'legacy', role: 'admin' });
  const { token } = await auth.issue(user!);
  assert.deepEqual(pick(await auth.authenticate(`Bearer ${token}`, '127.0.0.1')), { username: 'legacy', role: 'admin' });
  const again = new AdminAuth(store, options, log, new AuthMetrics(new Registry()));
  await again.init();
  assert.deepEqual(pick(await again.authenticate(`Bearer ${token}`, '127.0.0.1')), { username: 'legacy', role: 'admin' }, 'the id is kept across a restart');
  await store.close();
});
