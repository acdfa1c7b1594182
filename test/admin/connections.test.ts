// Connections: the paged list across workers with its filters, close (the session ends, v5 gets
// DISCONNECT 0x98, the will goes out), down (the session stays, the will goes out), runtime,
// /api/check and /api/close, with real MQTT clients.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { hashPassword } from '../../src/auth/index.ts';

let b: AdminBroker;
before(async () => {
  const hash = await hashPassword('pw', 'bcrypt', 4);
  b = await startAdminBroker({ auth: { users: ['odd-user', 'even-user', 'u1'].map((username) => ({ username, password: hash })) } });
});
after(() => b.stop());

const WRITE_ROUTES = ['/mqtt/connection/close', '/mqtt/connection/down', '/api/close'];
const READ_ROUTES = ['/mqtt/connection', '/api/mqtt/connection', '/mqtt/connection/runtime', '/api/check'];

test('every connection route needs credentials (401); a viewer may read (not 403) but not kick (403)', async () => {
  for (const path of [...WRITE_ROUTES, ...READ_ROUTES]) {
    assert.equal((await b.api('POST', path, { body: { clientId: 'x' }, as: 'none' })).status, 401, path);
  }
  for (const path of WRITE_ROUTES) assert.equal((await b.api('POST', path, { body: { clientId: 'x' }, as: 'viewer' })).status, 403, path);
  assert.equal((await b.api('POST', '/mqtt/connection', { body: {}, as: 'viewer' })).status, 200);
});

test('/mqtt/connection lists clients of both workers, pages them, filters by client id and username', async () => {
  const clients: MqttClient[] = [];
  for (let i = 0; i < 6; i++) clients.push(await connect(b.url, { clientId: `list-${i}`, username: i % 2 ? 'odd-user' : 'even-user', password: 'pw', protocolVersion: i === 0 ? 5 : 4 }));
  const all = await b.api('POST', '/mqtt/connection', { body: { clientId: 'list-', size: 4 } });
  assert.equal(all.status, 200);
  assert.equal(all.json.total, 6);
  assert.equal(all.json.page, 1);
  assert.equal(all.json.size, 4);
  assert.equal(all.json.data.length, 4);
  const page2 = await b.api('POST', '/mqtt/connection', { body: { clientId: 'list-', size: 4, page: 2 } });
  assert.equal(page2.json.data.length, 2);
  const ids = [...all.json.data, ...page2.json.data].map((c: { clientId: string }) => c.clientId).sort();
  assert.deepEqual(ids, ['list-0', 'list-1', 'list-2', 'list-3', 'list-4', 'list-5']);
  const c0 = [...all.json.data, ...page2.json.data].find((c: { clientId: string }) => c.clientId === 'list-0');
  assert.equal(c0.username, 'even-user');
  assert.equal(c0.ip, '127.0.0.1');
  assert.equal(typeof c0.port, 'number');
  assert.ok(Date.parse(c0.connectTime) <= Date.now());
  assert.ok(Date.parse(c0.lastActivity) >= Date.parse(c0.connectTime) - 1000);
  assert.equal(c0.protocolVersion, 5);
  assert.equal(c0.endpointPort, b.ports.tcp);
  const odd = await b.api('POST', '/mqtt/connection', { body: { username: 'ODD' } });
  assert.deepEqual(odd.json.data.map((c: { clientId: string }) => c.clientId).sort(), ['list-1', 'list-3', 'list-5']);
  const exact = await b.api('POST', '/mqtt/connection', { body: { clientId: 'list-4' } });
  assert.equal(exact.json.total, 1);
  const none = await b.api('POST', '/mqtt/connection', { body: { clientId: 'no-such-client' } });
  assert.deepEqual(none.json, { data: [], total: 0, page: 1, size: 20 });
  // The port-keyed variant filters by the endpoint port.
  const byPort = await b.api('POST', '/api/mqtt/connection', { body: { clientId: 'list-', port: b.ports.tcp } });
  assert.equal(byPort.json.total, 6);
  const otherPort = await b.api('POST', '/api/mqtt/connection', { body: { clientId: 'list-', port: b.ports.ws } });
  assert.equal(otherPort.json.total, 0);
  await end(...clients);
});

test('connection query: bad fields are 400 naming the field', async () => {
  const cases: [string, unknown, string][] = [
    ['/mqtt/connection', { page: 0 }, 'page'],
    ['/mqtt/connection', { size: 1001 }, 'size'],
    ['/mqtt/connection', { size: 'x' }, 'size'],
    ['/mqtt/connection', { clientId: 5 }, 'clientId'],
    ['/mqtt/connection', { port: 1883 }, 'port'],
    ['/api/mqtt/connection', { port: 70000 }, 'port'],
    ['/mqtt/connection', [], 'body'],
  ];
  for (const [path, body, field] of cases) {
    const r = await b.api('POST', path, { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field);
  }
});

test('close: a v5 client gets DISCONNECT 0x98, its will goes out, and its persistent session is gone', async () => {
  const watcher = await connect(b.url, { clientId: 'close-watcher' });
  await watcher.subscribeAsync('will/close', { qos: 1 });
  const c = await connect(b.url, { clientId: 'close-me', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 3600 }, will: { topic: 'will/close', payload: Buffer.from('gone'), qos: 1, retain: false } });
  await c.subscribeAsync('close/t', { qos: 1 });
  const disconnect = new Promise<number | undefined>((resolve) => c.once('disconnect', (p) => resolve(p.reasonCode)));
  const gone = closeOf(c);
  const will = nextMessages(watcher, 1);
  const r = await b.api('POST', '/mqtt/connection/close', { body: { clientId: 'close-me' } });
  assert.equal(r.status, 200);
  assert.equal(r.json.code, 200);
  assert.equal(await disconnect, 0x98);
  await gone;
  assert.equal((await will)[0].payload, 'gone');
  assert.equal((await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'close-me' } })).status, 404);
  const again = await connect(b.url, { clientId: 'close-me', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 3600 } });
  assert.equal(await sessionPresentOf(again), false);
  await end(again, watcher);
  assert.equal((await b.api('POST', '/mqtt/connection/close', { body: { clientId: 'close-me' } })).status, 200, 'an offline session can be closed too');
  assert.equal((await b.api('POST', '/mqtt/connection/close', { body: { clientId: 'close-me' } })).status, 404);
});

test('/api/close closes a v3 client and ends its session; unknown clients are 404', async () => {
  const c = await connect(b.url, { clientId: 'api-close', clean: false });
  const gone = closeOf(c);
  const r = await b.api('POST', '/api/close', { body: { clientId: 'api-close' } });
  assert.equal(r.status, 200);
  await gone;
  const again = await connect(b.url, { clientId: 'api-close', clean: false });
  assert.equal(await sessionPresentOf(again), false);
  await end(again);
  const missing = await b.api('POST', '/api/close', { body: { clientId: 'nobody-here' } });
  assert.equal(missing.status, 404);
  assert.equal(missing.json.error, 'NOT_FOUND');
  const bad = await b.api('POST', '/api/close', { body: {} });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'clientId');
});

test('down: the network connection drops, the will goes out, the persistent session stays', async () => {
  const watcher = await connect(b.url, { clientId: 'down-watcher' });
  await watcher.subscribeAsync('will/down', { qos: 1 });
  const c = await connect(b.url, { clientId: 'down-me', clean: false, will: { topic: 'will/down', payload: Buffer.from('dropped'), qos: 1, retain: false } });
  await c.subscribeAsync('down/t', { qos: 1 });
  const will = nextMessages(watcher, 1);
  const gone = closeOf(c);
  const r = await b.api('POST', '/mqtt/connection/down', { body: { clientId: 'down-me' } });
  assert.equal(r.status, 200);
  assert.equal(r.json.data.sessionKept, true);
  await gone;
  assert.equal((await will)[0].payload, 'dropped');
  const rt = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'down-me' } });
  assert.equal(rt.status, 200);
  assert.equal(rt.json.data.connected, false);
  assert.deepEqual(rt.json.data.subscriptions.map((s: { topic: string }) => s.topic), ['down/t']);
  // Not connected now: down is 404.
  assert.equal((await b.api('POST', '/mqtt/connection/down', { body: { clientId: 'down-me' } })).status, 404);
  const again = await connect(b.url, { clientId: 'down-me', clean: false });
  assert.equal(await sessionPresentOf(again), true);
  const got = nextMessages(again, 1);
  await b.api('POST', '/api/publish', { body: { topic: 'down/t', payload: 'still subscribed', qos: 1 } });
  assert.equal((await got)[0].payload, 'still subscribed');
  await end(again, watcher);
  await b.api('POST', '/mqtt/connection/close', { body: { clientId: 'down-me' } });
});

test('runtime: subscriptions, keepalive, counters, queue and in-flight numbers', async () => {
  const c = await connect(b.url, { clientId: 'rt', keepalive: 30, protocolVersion: 5 });
  await c.subscribeAsync('rt/a', { qos: 1, nl: true });
  await c.publishAsync('rt/x', 'hello', { qos: 1 });
  const got = nextMessages(c, 1);
  await b.api('POST', '/api/publish', { body: { topic: 'rt/a', payload: 'x', qos: 1 } });
  await got;
  const r = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'rt' }, as: 'viewer' });
  assert.equal(r.status, 200);
  const d = r.json.data;
  assert.equal(d.connected, true);
  assert.equal(d.keepalive, 30);
  assert.equal(d.protocolVersion, 5);
  assert.equal(typeof d.worker, 'number');
  assert.equal(d.queued, 0);
  assert.equal(typeof d.inflight, 'number');
  assert.deepEqual(d.subscriptions, [{ topic: 'rt/a', qos: 1, noLocal: true, retainAsPublished: false, retainHandling: 0, subscriptionId: null }]);
  assert.ok(d.messagesIn >= 1, 'the PUBLISH from the client');
  assert.ok(d.messagesOut >= 1, 'the delivery to the client');
  assert.ok(d.bytesIn > 0 && d.bytesOut > 0);
  assert.equal((await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'nobody' } })).status, 404);
  assert.equal((await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: '' } })).json.field, 'clientId');
  await end(c);
});

test('/api/check answers the CONNECT as seen, with the will, never the password', async () => {
  const c = await connect(b.url, { clientId: 'chk', username: 'u1', password: 'pw', keepalive: 42, clean: true, protocolVersion: 4, will: { topic: 'will/chk', payload: Buffer.from('bye'), qos: 1, retain: true } });
  const r = await b.api('POST', '/api/check', { body: { clientId: 'chk' }, as: 'viewer' });
  assert.equal(r.status, 200);
  assert.equal(r.json.code, 0);
  assert.equal(r.json.data.length, 1);
  const d = r.json.data[0];
  assert.equal(d.clientId, 'chk');
  assert.equal(d.clientIp, '127.0.0.1');
  assert.equal(typeof d.nodeIp, 'string');
  assert.equal(d.version, '3.1.1');
  assert.equal(d.keepalive, 42);
  assert.equal(d.cleanSession, true);
  assert.deepEqual(d.auth, { username: 'u1' });
  assert.deepEqual({ topic: d.will.topic, qos: d.will.qos, retain: d.will.retain, payload: d.will.payload }, { topic: 'will/chk', qos: 1, retain: true, payload: 'bye' });
  assert.ok(Date.parse(d.timestamp) <= Date.now());
  assert.ok(!r.text.includes('"password"') && !r.text.includes('"pw"'));
  assert.equal((await b.api('POST', '/api/check', { body: { clientId: 'nobody' } })).status, 404);
  assert.equal((await b.api('POST', '/api/check', { body: { clientId: 1 } })).json.field, 'clientId');
  await end(c);
});

/** Resolves when the client's connection closes (listen before the close is caused: a 'close'
 * that already happened is not seen again). */
function closeOf(c: MqttClient): Promise<void> {
  return new Promise((resolve) => c.once('close', () => resolve()));
}

/** The Session Present flag of the CONNACK mqtt.js got (on the 'connect' event it already fired). */
async function sessionPresentOf(c: MqttClient): Promise<boolean> {
  const packet = (c as unknown as { connackPacket?: { sessionPresent?: boolean } }).connackPacket;
  if (packet) return packet.sessionPresent === true;
  throw new Error('no CONNACK recorded');
}
