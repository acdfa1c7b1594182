// needs: broker
// The audit log records writes and sign-in attempts, not reads: the console's polls (GETs, and
// POSTs that only query such as /mqtt/connection or /rule/runtime) wrote a third of the entries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' } });
});
after(() => b.stop());

async function entries() {
  return (await b.admin!.context.audit.query({ offset: 0, limit: 1000 })).entries;
}

async function answered(method: string, path: string, body?: unknown): Promise<void> {
  const r = await b.api(method, path, body === undefined ? {} : { body });
  assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
}

test('GET polls and POST queries add no audit entry; a write and a sign-in attempt do', async () => {
  const at = (await entries()).length;
  // What the console polls every 2 seconds, GETs and POST reads, twice.
  for (let round = 0; round < 2; round++) {
    await answered('GET', '/monitor/dashboard');
    await answered('GET', '/endpoints/list');
    await answered('POST', '/mqtt/connection', { page: 1, size: 20 });
    await answered('POST', '/mqtt/retain/query', {});
    await answered('POST', '/rule/query', {});
    await answered('POST', '/script/query', {});
    await answered('POST', '/command/query', {});
    await answered('POST', '/script/check', { content: 'function convert(t, p) { return p; }' });
  }
  await answered('POST', '/api/users/add', { username: 'audited-write', password: 'audited-password', role: 'viewer' });
  const written = await waitFor(async () => (await entries()).find((e) => e.resourceId === 'audited-write'), { message: 'the write is in the audit log' });
  assert.equal(written.action, 'create');
  assert.equal(written.method, 'POST');
  assert.deepEqual((await entries()).slice(at).map((e) => `${e.method} ${e.path}`), ['POST /api/users/add'], 'only the write, none of the reads answered before it');

  const failed = await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin', password: 'wrong-password' } });
  assert.equal(failed.status, 401);
  const login = await waitFor(async () => (await entries()).find((e) => e.action === 'login_failed' && e.username === 'admin'), { message: 'the failed sign-in is in the audit log' });
  assert.equal(login.status, 401);
});

test('every POST route named like a read (query, runtime, check, test, validate, sql, status) is marked readOnly', () => {
  const reads = /\/(query|runtime|check|test|validate|validate-config|sql|status|info|connection|encrypt)$/;
  // Side effects a person should find in the log: a notification sent by a channel test.
  const audited = new Set(['/api/v1/notification-channels/:id/test', '/api/users/password']);
  const unmarked = b.admin!.routes
    .filter((r) => r.method === 'POST' && reads.test(r.path) && !audited.has(r.path) && !r.readOnly)
    .map((r) => r.path);
  assert.deepEqual(unmarked, []);
  const marked = b.admin!.routes.filter((r) => r.readOnly).map((r) => `${r.method} ${r.path}`);
  assert.ok(marked.length >= 25, `${marked.length} routes marked readOnly`);
  assert.deepEqual(marked.filter((m) => !m.startsWith('POST ')), [], 'only POSTs are marked (GETs are never written)');
});
