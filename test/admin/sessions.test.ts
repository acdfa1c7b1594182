// Session messages: the queued messages of an offline persistent session are listed (paged,
// payload text or base64) and cleared, in memory and in the store (a restart brings none back).
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
const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-sessions-'));
before(async () => {
  b = await startAdminBroker({ dataDir });
});
after(() => b.stop());

test('session routes need credentials (401); clear needs the admin role (403)', async () => {
  assert.equal((await b.api('POST', '/mqtt/session/query', { body: { clientId: 'x' }, as: 'none' })).status, 401);
  assert.equal((await b.api('POST', '/mqtt/session/clear', { body: { clientId: 'x' }, as: 'none' })).status, 401);
  assert.equal((await b.api('POST', '/mqtt/session/clear', { body: { clientId: 'x' }, as: 'viewer' })).status, 403);
});

test('query shows the queued messages of an offline persistent session; clear empties it, also in the store', async () => {
  const c = await connect(b.url, { clientId: 'sq', clean: false });
  await c.subscribeAsync('sq/#', { qos: 1 });
  await end(c);
  const before = Date.now() - 1000;
  for (let i = 0; i < 3; i++) {
    assert.equal((await b.api('POST', '/api/publish', { body: { topic: `sq/${i}`, payload: `m${i}`, qos: 1 } })).status, 200);
  }
  await b.api('POST', '/api/publish', { body: { topic: 'sq/bin', payload: Buffer.from([0xc3, 0x28]).toString('base64'), payload_encoding: 'base64', qos: 2, retain: false } });
  const r = await b.api('POST', '/mqtt/session/query', { body: { clientId: 'sq' }, as: 'viewer' });
  assert.equal(r.status, 200);
  assert.equal(r.json.total, 4);
  assert.equal(r.json.page, 1);
  assert.deepEqual(r.json.data.map((m: { topic: string; payload: string; qos: number }) => [m.topic, m.payload, m.qos]), [
    ['sq/0', 'm0', 1], ['sq/1', 'm1', 1], ['sq/2', 'm2', 1], ['sq/bin', Buffer.from([0xc3, 0x28]).toString('base64'), 1],
  ]);
  const m0 = r.json.data[0];
  assert.equal(m0.clientId, 'sq');
  assert.equal(m0.retain, false);
  assert.equal(m0.state, 'queued');
  assert.equal(typeof m0.id, 'string');
  assert.ok(Date.parse(m0.time) >= before && Date.parse(m0.time) <= Date.now() + 1000);
  assert.equal(r.json.data[3].payloadEncoding, 'base64');
  const page = await b.api('POST', '/mqtt/session/query', { body: { clientId: 'sq', page: 2, size: 3 } });
  assert.deepEqual(page.json.data.map((m: { topic: string }) => m.topic), ['sq/bin']);
  assert.equal(page.json.total, 4);

  const clear = await b.api('POST', '/mqtt/session/clear', { body: { clientId: 'sq' } });
  assert.equal(clear.status, 200);
  assert.equal(clear.json.data.removed, 4);
  const empty = await b.api('POST', '/mqtt/session/query', { body: { clientId: 'sq' } });
  assert.equal(empty.json.total, 0);
  assert.deepEqual(empty.json.data, []);
  // The store agrees: the deliveries are gone there too.
  await waitFor(async () => (await b.supervisor.openedStore!.loadDeliveries('sq')).length === 0);
  const back = await connect(b.url, { clientId: 'sq', clean: false });
  // A marker on its subscription, published after it is back: queued messages would come first.
  const next = nextMessages(back, 1);
  const pub = await connect(b.url, { clientId: 'sq-marker' });
  await pub.publishAsync('sq/marker', 'marker', { qos: 1 });
  assert.equal((await next)[0].payload, 'marker', 'the cleared messages are not delivered');
  await end(back, pub);
});

test('session routes: 404 for an unknown client, 400 per bad field', async () => {
  assert.equal((await b.api('POST', '/mqtt/session/query', { body: { clientId: 'nobody' } })).status, 404);
  assert.equal((await b.api('POST', '/mqtt/session/clear', { body: { clientId: 'nobody' } })).status, 404);
  for (const [p, body, field] of [
    ['/mqtt/session/query', {}, 'clientId'],
    ['/mqtt/session/query', { clientId: 'a', size: 0 }, 'size'],
    ['/mqtt/session/query', { clientId: 'a', page: 'one' }, 'page'],
    ['/mqtt/session/clear', { clientId: 4 }, 'clientId'],
  ] as const) {
    const r = await b.api('POST', p, { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field);
  }
});
