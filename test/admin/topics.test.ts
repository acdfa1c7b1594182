// Topics: subscribed filters across sessions (online and offline persistent) with subscriber
// counts and lastMessage from retained messages; the subscribers of one filter.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker();
});
after(() => b.stop());

test('topic routes need credentials (401); viewers may read them', async () => {
  for (const path of ['/topic/query', '/topic/connect/query']) {
    assert.equal((await b.api('POST', path, { body: { topic: 'a' }, as: 'none' })).status, 401, path);
  }
  assert.equal((await b.api('POST', '/topic/query', { body: {}, as: 'viewer' })).status, 200);
});

test('/topic/query: filters with subscriber counts, offline persistent sessions included, filtered by a covering filter', async () => {
  const a = await connect(b.url, { clientId: 'tq-a' });
  const c = await connect(b.url, { clientId: 'tq-c', clean: false });
  const d = await connect(b.url, { clientId: 'tq-d' });
  await a.subscribeAsync(['tq/room/+/temp', 'tq/x'], { qos: 1 });
  await c.subscribeAsync(['tq/room/+/temp', 'other/y'], { qos: 0 });
  await d.subscribeAsync('$share/g/tq/room/1/temp', { qos: 0 });
  await end(c); // offline, persistent: still subscribed
  const r = await b.api('POST', '/topic/query', { body: { topic: 'tq/#' } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.data.map((t: { topic: string; subscribers: number }) => [t.topic, t.subscribers]), [
    ['$share/g/tq/room/1/temp', 1],
    ['tq/room/+/temp', 2],
    ['tq/x', 1],
  ]);
  assert.equal(r.json.total, 3);
  for (const t of r.json.data) assert.equal(t.lastMessage, null, 'no retained message yet');
  // A literal topic lists only itself (a shared subscription by its inner filter); a narrower
  // filter does not cover a wider one.
  const literal = await b.api('POST', '/topic/query', { body: { topic: 'tq/x' } });
  assert.deepEqual(literal.json.data.map((t: { topic: string }) => t.topic), ['tq/x']);
  const narrow = await b.api('POST', '/topic/query', { body: { topic: 'tq/room/1/temp' } });
  assert.deepEqual(narrow.json.data.map((t: { topic: string }) => t.topic), ['$share/g/tq/room/1/temp']);
  // Paging.
  const p2 = await b.api('POST', '/topic/query', { body: { topic: 'tq/#', page: 2, size: 2 } });
  assert.deepEqual(p2.json.data.map((t: { topic: string }) => t.topic), ['tq/x']);
  assert.equal(p2.json.total, 3);
  // lastMessage: the newest retained message the filter matches.
  const before = Date.now() - 1000;
  assert.equal((await b.api('POST', '/api/publish', { body: { topic: 'tq/room/5/temp', payload: '21', retain: true } })).status, 200);
  const withRetained = await b.api('POST', '/topic/query', { body: { topic: 'tq/room/+/temp' } });
  const t = withRetained.json.data.find((x: { topic: string }) => x.topic === 'tq/room/+/temp');
  assert.ok(t.lastMessage !== null && Date.parse(t.lastMessage) >= before - 1000 && Date.parse(t.lastMessage) <= Date.now());
  await end(a, d);
  const closeC = await b.api('POST', '/mqtt/connection/close', { body: { clientId: 'tq-c' } });
  assert.equal(closeC.status, 200);
  const after = await b.api('POST', '/topic/query', { body: { topic: 'tq/#' } });
  assert.equal(after.json.total, 0, 'sessions gone: no subscribed filters left');
});

test('/topic/query: a bad filter or field is 400', async () => {
  for (const [body, field] of [[{ topic: 'a/#/b' }, 'topic'], [{ topic: 'a+' }, 'topic'], [{ topic: 3 }, 'topic'], [{ page: -1 }, 'page'], [{ nope: 1 }, 'nope']] as const) {
    const r = await b.api('POST', '/topic/query', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field);
  }
});

test('/topic/connect/query: the clients subscribed to a filter with their options; an empty page when none', async () => {
  const a = await connect(b.url, { clientId: 'tc-a', protocolVersion: 5 });
  const c = await connect(b.url, { clientId: 'tc-b', protocolVersion: 5 });
  await a.subscribeAsync('tc/+', { qos: 2, nl: true, rap: true, rh: 1 });
  await c.subscribeAsync('tc/+', { qos: 0 });
  const r = await b.api('POST', '/topic/connect/query', { body: { topic: 'tc/+' }, as: 'viewer' });
  assert.equal(r.status, 200);
  assert.equal(r.json.total, 2);
  assert.deepEqual(r.json.data[0], { clientId: 'tc-a', connected: true, topic: 'tc/+', qos: 2, noLocal: true, retainAsPublished: true, retainHandling: 1, subscriptionId: null });
  assert.equal(r.json.data[1].clientId, 'tc-b');
  assert.equal(r.json.data[1].qos, 0);
  const page = await b.api('POST', '/topic/connect/query', { body: { topic: 'tc/+', size: 1, page: 2 } });
  assert.deepEqual(page.json.data.map((x: { clientId: string }) => x.clientId), ['tc-b']);
  const none = await b.api('POST', '/topic/connect/query', { body: { topic: 'tc/nobody', page: 2, size: 5 } });
  assert.equal(none.status, 200);
  assert.deepEqual(none.json, { data: [], total: 0, page: 2, size: 5 });
  const missing = await b.api('POST', '/topic/connect/query', { body: {} });
  assert.equal(missing.status, 400);
  assert.equal(missing.json.field, 'topic');
  await end(a, c);
});
