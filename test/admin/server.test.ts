// The admin server itself: authentication (Basic, Bearer, 401, 403), authentication before
// routing (401 on any non-public path without credentials), the envelope, unknown routes, JSON
// bodies only (415), bad JSON, oversized bodies, and the OpenAPI document.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, basic, VIEWER, type AdminBroker } from '../helpers/admin.ts';
import { ADMIN_PASSWORD } from '../helpers/broker.ts';
import { SignJWT } from 'jose';

let b: AdminBroker;
before(async () => {
  // Wrong credentials are sent on purpose here: no lockout (login-lockout.test.ts tests them).
  b = await startAdminBroker({ admin: { maxBodySize: 2048, tokenLifetime: 60, loginMaxFailures: 0 } });
});
after(() => b.stop());

test('a route needs credentials: 401 with a WWW-Authenticate challenge', async () => {
  const r = await b.api('GET', '/api/users', { as: 'none' });
  assert.equal(r.status, 401);
  assert.equal(r.json.code, 401);
  assert.equal(r.json.error, 'UNAUTHORIZED');
  assert.match(r.headers.get('www-authenticate') ?? '', /^Basic/);
});

test('wrong Basic password and a malformed header are 401', async () => {
  assert.equal((await b.api('GET', '/api/users', { authorization: basic('admin', 'nope') })).status, 401);
  assert.equal((await b.api('GET', '/api/users', { authorization: basic('ghost', 'nope') })).status, 401);
  assert.equal((await b.api('GET', '/api/users', { authorization: 'Basic !!!' })).status, 401);
  assert.equal((await b.api('GET', '/api/users', { authorization: 'Digest x' })).status, 401);
});

test('login answers a token that works as Bearer; a bad one is 401', async () => {
  const login = await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin', password: ADMIN_PASSWORD } });
  assert.equal(login.status, 200);
  assert.equal(typeof login.json.token, 'string');
  const expires = Date.parse(login.json.expires);
  assert.ok(expires > Date.now() + 50_000 && expires <= Date.now() + 61_000, 'lifetime from admin.tokenLifetime');
  const ok = await b.api('GET', '/api/users', { authorization: `Bearer ${login.json.token}` });
  assert.equal(ok.status, 200);
  assert.ok(ok.json.data.some((u: { username: string }) => u.username === 'admin'));
  const tampered = login.json.token.slice(0, -2) + (login.json.token.endsWith('AA') ? 'BB' : 'AA');
  assert.equal((await b.api('GET', '/api/users', { authorization: `Bearer ${tampered}` })).status, 401);
});

test('an expired token, an alg=none token and a token signed with another secret are 401', async () => {
  const now = Math.floor(Date.now() / 1000);
  const other = await new SignJWT({ ver: 1 }).setProtectedHeader({ alg: 'HS256' }).setSubject('admin').setIssuedAt(now).setExpirationTime(now + 60).sign(Buffer.alloc(32, 1));
  assert.equal((await b.api('GET', '/api/users', { authorization: `Bearer ${other}` })).status, 401);
  const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'admin', exp: now + 60 })).toString('base64url')}.`;
  assert.equal((await b.api('GET', '/api/users', { authorization: `Bearer ${none}` })).status, 401);
  const auth = b.admin!.context.auth;
  const old = await auth.issue({ username: 'admin', role: 'admin' }, Date.now() - 120_000);
  assert.equal((await b.api('GET', '/api/users', { authorization: `Bearer ${old.token}` })).status, 401);
});

test('login with a wrong password is 401, without a field 400', async () => {
  assert.equal((await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin', password: 'x' } })).status, 401);
  const r = await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin' } });
  assert.equal(r.status, 400);
  assert.equal(r.json.field, 'password');
});

test('a viewer may read but not write: 403', async () => {
  const read = await b.api('POST', '/api/users/password', { as: 'viewer', body: { username: 'admin', password: 'whatever-long' } });
  assert.equal(read.status, 403);
  const list = await b.api('GET', '/api/users', { as: 'viewer' });
  assert.equal(list.status, 403, 'the user list is admin-only');
  const add = await b.api('POST', '/api/users/add', { as: 'viewer', body: { username: 'x', password: 'long-enough' } });
  assert.equal(add.status, 403);
  assert.equal(add.json.error, 'FORBIDDEN');
});

test('users: add, duplicate 409, bad fields 400, delete, last admin kept', async () => {
  const add = await b.api('POST', '/api/users/add', { body: { username: 'ops', password: 'ops-password', role: 'admin' } });
  assert.equal(add.status, 200);
  assert.equal((await b.api('GET', '/api/users', { authorization: basic('ops', 'ops-password') })).status, 200);
  assert.equal((await b.api('POST', '/api/users/add', { body: { username: 'ops', password: 'ops-password' } })).status, 409);
  const badRole = await b.api('POST', '/api/users/add', { body: { username: 'y', password: 'long-enough', role: 'root' } });
  assert.equal(badRole.status, 400);
  assert.equal(badRole.json.field, 'role');
  const short = await b.api('POST', '/api/users/add', { body: { username: 'y', password: 'short' } });
  assert.equal(short.json.field, 'password');
  assert.equal((await b.api('POST', '/api/users/delete', { body: { username: 'ops' } })).status, 200);
  assert.equal((await b.api('GET', '/api/users', { authorization: basic('ops', 'ops-password') })).status, 401, 'deleted users lose access at once');
  assert.equal((await b.api('POST', '/api/users/delete', { body: { username: 'nobody' } })).status, 404);
  assert.equal((await b.api('POST', '/api/users/delete', { body: { username: 'admin' } })).status, 409);
});

test('a viewer changes their own password', async () => {
  const r = await b.api('POST', '/api/users/password', { as: 'viewer', body: { username: VIEWER.username, password: 'new-viewer-pw' } });
  assert.equal(r.status, 200);
  assert.equal((await b.api('GET', '/public/openapi.json', { authorization: basic(VIEWER.username, 'new-viewer-pw') })).status, 200);
  await b.api('POST', '/api/users/password', { body: { username: VIEWER.username, password: VIEWER.password } });
});

test('without credentials every path that is not a public route is 401, known or not', async () => {
  for (const [method, path] of [['GET', '/no/such/route'], ['GET', '/api/users/add'], ['POST', '/api/nothing'], ['GET', '/public/nothing'], ['DELETE', '/api/users']]) {
    const r = await b.api(method, path, { as: 'none' });
    assert.equal(r.status, 401, `${method} ${path}`);
    assert.match(r.headers.get('www-authenticate') ?? '', /^Basic/);
    const wrong = await b.api(method, path, { authorization: basic('admin', 'wrong-password') });
    assert.equal(wrong.status, 401, `${method} ${path} with wrong credentials`);
  }
  assert.equal((await b.api('GET', '/health', { as: 'none' })).status, 200, 'public routes stay open');
  assert.equal((await b.api('GET', '/public/openapi.json', { as: 'none' })).status, 200);
  const wrongMethod = await b.api('GET', '/public/login', { as: 'none' });
  assert.equal(wrongMethod.status, 405, 'a public path tells its methods to anyone');
});

test('unknown route 404, wrong method 405 with Allow', async () => {
  const r = await b.api('GET', '/no/such/route');
  assert.equal(r.status, 404);
  assert.equal(r.json.error, 'NOT_FOUND');
  const m = await b.api('GET', '/api/users/add');
  assert.equal(m.status, 405);
  assert.equal(m.headers.get('allow'), 'POST');
});

test('a request with a body, and every POST, must be application/json: 415 naming the content-type, nothing changes', async () => {
  const body = JSON.stringify({ username: 'csrf', password: 'long-enough-pw', role: 'admin' });
  for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp']) {
    const r = await b.api('POST', '/api/users/add', { raw: body, headers: { 'content-type': type } });
    assert.equal(r.status, 415, type);
    assert.equal(r.json.error, 'UNSUPPORTED_MEDIA_TYPE');
    assert.ok(r.json.message.includes(JSON.stringify(type)), `the message names ${type}`);
  }
  assert.ok(!b.admin!.context.auth.has('csrf'), 'no user was created');
  const empty = await b.api('POST', '/license/refresh', {});
  assert.equal(empty.status, 415, 'a POST without a body and without a content-type');
  assert.match(empty.json.message, /\(none\)/);
  const login = await b.api('POST', '/public/login', { as: 'none', raw: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }), headers: { 'content-type': 'text/plain' } });
  assert.equal(login.status, 415, 'public routes too');
  const charset = await b.api('POST', '/api/users/add', { raw: body, headers: { 'content-type': 'application/json; charset=utf-8' } });
  assert.equal(charset.status, 200);
  assert.equal((await b.api('POST', '/api/users/delete', { body: { username: 'csrf' } })).status, 200);
});

test('malformed JSON is 400 naming the body; a non-object body is 400', async () => {
  const r = await b.api('POST', '/api/users/add', { raw: '{"username": ' });
  assert.equal(r.status, 400);
  assert.equal(r.json.error, 'INVALID_JSON');
  const arr = await b.api('POST', '/api/users/add', { body: [1, 2] });
  assert.equal(arr.status, 400);
  const unknown = await b.api('POST', '/api/users/add', { body: { username: 'z', password: 'long-enough', rol: 'admin' } });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.json.field, 'rol');
});

test('a body over admin.maxBodySize is 413 and changes nothing', async () => {
  const r = await b.api('POST', '/api/users/add', { body: { username: 'big', password: 'x'.repeat(4096) } });
  assert.equal(r.status, 413);
  assert.equal(r.json.error, 'PAYLOAD_TOO_LARGE');
  assert.ok(!b.admin!.context.auth.has('big'));
});

test('the OpenAPI documents list every route and are public: the broker\'s, and the control platform\'s (/api/v1)', async () => {
  const r = await b.api('GET', '/public/openapi.json', { as: 'none' });
  const v1 = await b.api('GET', '/public/openapi-v1.json', { as: 'none' });
  assert.equal(r.status, 200);
  assert.equal(v1.status, 200);
  assert.equal(r.json.openapi, '3.1.0');
  for (const route of b.admin!.routes) {
    const doc = route.path.startsWith('/api/v1/') ? v1.json : r.json;
    const p = route.path.replace(/:([A-Za-z]+)/g, '{$1}');
    assert.ok(doc.paths[p]?.[route.method.toLowerCase()], `${route.method} ${route.path} documented`);
  }
});
