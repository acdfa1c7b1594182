// Brute-force protection of the admin API, end to end: after admin.loginMaxFailures failed
// sign-ins (/public/login or HTTP Basic) from one address or for one username, sign-ins are
// answered 429 with Retry-After, even with the right password; other addresses are unaffected; a
// success resets no other address's counter; a parallel burst gets no more guesses; each lockout
// is logged (address and username, never the password) and counted in /prometheus.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, basic, type AdminBroker } from '../helpers/admin.ts';

const MAX = 3;
const LOCKOUT = 60;

let b: AdminBroker;
const warnings: { msg: string; fields: Record<string, unknown> }[] = [];
before(async () => {
  b = await startAdminBroker({ admin: { loginMaxFailures: MAX, loginWindow: 60, loginLockout: LOCKOUT } });
  const log = b.admin!.context.log;
  const warn = log.warn.bind(log);
  log.warn = (msg, fields) => {
    warnings.push({ msg, fields: fields ?? {} });
    warn(msg, fields);
  };
  for (const name of ['lock-a', 'lock-b', 'lock-c', 'lock-d']) await b.admin!.context.auth.addUser(name, `${name}-password`, 'viewer');
});
after(() => b.stop());

function login(from: string, username: string, password: string) {
  return b.api('POST', '/public/login', { as: 'none', from, body: { username, password } });
}

function assert429(r: { status: number; headers: Headers; json: any }, what: string) {
  assert.equal(r.status, 429, what);
  assert.equal(r.json.error, 'TOO_MANY_REQUESTS');
  const retry = Number(r.headers.get('retry-after'));
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= LOCKOUT, `Retry-After ${r.headers.get('retry-after')}`);
}

test('failed logins from one address lock it: 429 with Retry-After even with the right password; another address still signs in', async () => {
  for (let i = 0; i < MAX; i++) assert.equal((await login('127.0.0.2', `ghost-${i}`, 'guess')).status, 401);
  assert429(await login('127.0.0.2', 'lock-a', 'lock-a-password'), 'right password, locked address');
  assert429(await b.api('GET', '/system/config', { from: '127.0.0.2', authorization: basic('lock-a', 'lock-a-password') }), 'Basic from the locked address');
  assert.equal((await login('127.0.0.3', 'lock-a', 'lock-a-password')).status, 200, 'another address');
});

test('failures for one username from many addresses lock the username', async () => {
  for (let i = 0; i < MAX; i++) assert.equal((await login(`127.0.1.${i + 1}`, 'lock-b', 'wrong')).status, 401);
  assert429(await login('127.0.1.10', 'lock-b', 'lock-b-password'), 'a fresh address, the locked username');
  assert429(await b.api('GET', '/system/config', { from: '127.0.1.11', authorization: basic('lock-b', 'lock-b-password') }), 'Basic for the locked username');
});

test('failed HTTP Basic authentications count like failed logins', async () => {
  for (let i = 0; i < MAX; i++) {
    assert.equal((await b.api('GET', '/system/config', { from: '127.0.2.1', authorization: basic(`ghost-b${i}`, 'guess') })).status, 401);
  }
  assert429(await b.api('GET', '/no/such/path', { from: '127.0.2.1', authorization: basic('lock-c', 'lock-c-password') }), 'Basic, on any path');
  assert429(await login('127.0.2.1', 'lock-c', 'lock-c-password'), 'and /public/login');
});

test("a successful login does not reset another address's counter", async () => {
  for (let i = 0; i < MAX - 1; i++) assert.equal((await login('127.0.3.1', `ghost-c${i}`, 'guess')).status, 401);
  assert.equal((await login('127.0.3.2', 'lock-d', 'lock-d-password')).status, 200);
  assert.equal((await login('127.0.3.1', 'ghost-c-last', 'guess')).status, 401);
  assert429(await login('127.0.3.1', 'lock-d', 'lock-d-password'), 'locked after MAX failures in all');
});

test('a parallel burst of wrong logins gets no more than loginMaxFailures password checks', async () => {
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login('127.0.4.1', `burst-${i}`, 'guess')));
  const statuses = answers.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 401).length, MAX, `statuses: ${statuses.join(' ')}`);
  assert.equal(statuses.filter((s) => s === 429).length, 40 - MAX);
});

test('each lockout is logged (warn, address and username, never the password) and counted in /prometheus', async () => {
  const lockouts = warnings.filter((w) => w.msg === 'admin sign-in locked out');
  assert.ok(lockouts.some((w) => w.fields.address === '127.0.0.2' && w.fields.lockedBy === 'address' && w.fields.username === 'ghost-2'));
  assert.ok(lockouts.some((w) => w.fields.username === 'lock-b' && w.fields.lockedBy === 'username'));
  assert.ok(lockouts.some((w) => w.fields.address === '127.0.2.1' && w.fields.method === 'basic'));
  for (const w of lockouts) assert.ok(!JSON.stringify(w.fields).includes('guess') && !JSON.stringify(w.fields).includes('wrong'), 'no password logged');
  const metrics = (await b.api('GET', '/prometheus')).text;
  const value = (line: string) => Number(metrics.split('\n').find((l) => l.startsWith(line))?.slice(line.length).trim());
  // Login failures: 127.0.0.2, lock-b, 127.0.3.1 (3 each) and the burst (MAX); Basic: 127.0.2.1.
  assert.equal(value('spindle_admin_auth_failures_total{method="login"}'), 3 + 3 + 3 + MAX);
  assert.equal(value('spindle_admin_auth_failures_total{method="basic"}'), 3);
  assert.equal(value('spindle_admin_auth_lockouts_total{kind="address"}'), 4);
  assert.equal(value('spindle_admin_auth_lockouts_total{kind="username"}'), 1);
  assert.match(metrics, /# HELP spindle_admin_auth_tracker_evictions_total /);
});
