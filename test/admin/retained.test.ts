// Retained messages: query by filter (paged, payload text or base64, receive time) and delete,
// also from the store (a restart does not bring a deleted one back).
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-retained-'));
before(async () => {
  b = await startAdminBroker({ dataDir });
});
after(() => b.stop());

test('retained routes need credentials (401); delete needs the admin role (403)', async () => {
  assert.equal((await b.api('POST', '/mqtt/retain/query', { body: {}, as: 'none' })).status, 401);
  assert.equal((await b.api('POST', '/mqtt/retain/delete', { body: { topic: 'a' }, as: 'none' })).status, 401);
  assert.equal((await b.api('POST', '/mqtt/retain/delete', { body: { topic: 'a' }, as: 'viewer' })).status, 403);
  assert.equal((await b.api('POST', '/mqtt/retain/query', { body: {}, as: 'viewer' })).status, 200);
});

test('query: retained messages of a client and of the API, by filter, paged, with time', async () => {
  const before = Date.now() - 1000;
  const c = await connect(b.url, { clientId: 'ret-pub' });
  await c.publishAsync('ret/a/1', 'one', { qos: 1, retain: true });
  await c.publishAsync('ret/a/2', Buffer.from([0xff, 0xfe]), { qos: 0, retain: true });
  await c.publishAsync('ret/b', 'bee', { qos: 2, retain: true });
  await end(c);
  await b.api('POST', '/api/publish', { body: { topic: 'ret/api', payload: 'via http', qos: 1, retain: true } });
  const r = await b.api('POST', '/mqtt/retain/query', { body: { topic: 'ret/a/+' } });
  assert.equal(r.status, 200);
  assert.equal(r.json.total, 2);
  assert.deepEqual(r.json.data.map((m: { topic: string; qos: number; payload: string; payloadEncoding?: string }) => [m.topic, m.qos, m.payload, m.payloadEncoding]), [
    ['ret/a/1', 1, 'one', undefined],
    ['ret/a/2', 0, Buffer.from([0xff, 0xfe]).toString('base64'), 'base64'],
  ]);
  for (const m of r.json.data) assert.ok(Date.parse(m.time) >= before && Date.parse(m.time) <= Date.now(), m.time);
  const all = await b.api('POST', '/mqtt/retain/query', { body: { topic: 'ret/#', size: 3 } });
  assert.equal(all.json.total, 4);
  assert.deepEqual(all.json.data.map((m: { topic: string }) => m.topic), ['ret/a/1', 'ret/a/2', 'ret/api']);
  const p2 = await b.api('POST', '/mqtt/retain/query', { body: { topic: 'ret/#', size: 3, page: 2 } });
  assert.deepEqual(p2.json.data.map((m: { topic: string }) => m.topic), ['ret/b']);
  const everything = await b.api('POST', '/mqtt/retain/query', { body: {} });
  assert.equal(everything.json.total, 4, 'no filter: every retained message');
  const none = await b.api('POST', '/mqtt/retain/query', { body: { topic: 'nothing/here' } });
  assert.deepEqual(none.json, { data: [], total: 0, page: 1, size: 20 });
});

test('delete: the retained message is gone for new subscribers and from the store; 404 when absent', async () => {
  await b.api('POST', '/api/publish', { body: { topic: 'ret/del', payload: 'bye', qos: 1, retain: true } });
  await waitFor(async () => (await b.supervisor.openedStore!.loadRetained()).some((r) => r.topic === 'ret/del'));
  const r = await b.api('POST', '/mqtt/retain/delete', { body: { topic: 'ret/del' } });
  assert.equal(r.status, 200);
  assert.equal(r.json.code, 200);
  const sub = await connect(b.url, { clientId: 'ret-sub' });
  const next = nextMessages(sub, 1);
  await sub.subscribeAsync('ret/del', { qos: 1 });
  // A live marker on the same topic comes after the retained message the SUBSCRIBE would get.
  const marker = await connect(b.url, { clientId: 'ret-marker' });
  await marker.publishAsync('ret/del', 'marker', { qos: 1 });
  await end(marker);
  const [first] = await next;
  assert.deepEqual([first.payload, first.packet.retain], ['marker', false], 'no retained message after the delete');
  await end(sub);
  assert.equal((await b.supervisor.openedStore!.loadRetained()).some((x) => x.topic === 'ret/del'), false);
  const again = await b.api('POST', '/mqtt/retain/delete', { body: { topic: 'ret/del' } });
  assert.equal(again.status, 404);
  assert.equal(again.json.error, 'NOT_FOUND');
  // Others are untouched.
  const keep = await connect(b.url, { clientId: 'ret-keep' });
  const got = nextMessages(keep, 1);
  await keep.subscribeAsync('ret/b', { qos: 1 });
  assert.equal((await got)[0].payload, 'bee');
  await end(keep);
});

test('retained routes: 400 per bad field', async () => {
  for (const [p, body, field] of [
    ['/mqtt/retain/query', { topic: 'a/#/b' }, 'topic'],
    ['/mqtt/retain/query', { size: 5000 }, 'size'],
    ['/mqtt/retain/query', { what: 1 }, 'what'],
    ['/mqtt/retain/delete', {}, 'topic'],
    ['/mqtt/retain/delete', { topic: 'a/+' }, 'topic'],
    ['/mqtt/retain/delete', { topic: '' }, 'topic'],
  ] as const) {
    const r = await b.api('POST', p, { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field);
  }
});
