// Subscriptions made through the admin API: subscribe/unsubscribe on a client's behalf, proxy
// subscriptions (added to every client; kept in the store across a restart), and local
// subscriptions (the broker collects messages itself).
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
before(async () => {
  b = await startAdminBroker();
});
after(() => b.stop());

const WRITES: [string, unknown][] = [
  ['/mqtt/connection/subscribe', { clientId: 'x', topic: 'a' }],
  ['/mqtt/connection/unsubscribe', { clientId: 'x', topic: 'a' }],
  ['/mqtt/proxy/subscribe/add', { topic: 'a' }],
  ['/mqtt/proxy/subscribe/delete', { topic: 'a' }],
  ['/api/local/subscribe', { topic: 'a' }],
  ['/api/local/unsubscribe', { topic: 'a' }],
];

test('subscription routes need credentials (401); writes need the admin role (403)', async () => {
  for (const [p, body] of WRITES) {
    assert.equal((await b.api('POST', p, { body, as: 'none' })).status, 401, p);
    assert.equal((await b.api('POST', p, { body, as: 'viewer' })).status, 403, p);
  }
  assert.equal((await b.api('POST', '/mqtt/proxy/subscribe/status', { body: {}, as: 'none' })).status, 401);
  assert.equal((await b.api('POST', '/mqtt/proxy/subscribe/status', { body: {}, as: 'viewer' })).status, 200);
  assert.equal((await b.api('GET', '/api/local/messages?topic=a', { as: 'none' })).status, 401);
});

test('subscribe on behalf: the client receives matching messages and the retained one; unsubscribe stops them', async () => {
  assert.equal((await b.api('POST', '/api/publish', { body: { topic: 'sob/r', payload: 'old', retain: true, qos: 1 } })).status, 200);
  const c = await connect(b.url, { clientId: 'sob' });
  const retained = nextMessages(c, 1);
  const r = await b.api('POST', '/mqtt/connection/subscribe', { body: { clientId: 'sob', topic: 'sob/+', qos: 1 } });
  assert.equal(r.status, 200);
  assert.equal(r.json.data.topic, 'sob/+');
  assert.equal(r.json.data.qos, 1);
  const [m] = await retained;
  assert.equal(m.payload, 'old');
  assert.equal(m.packet.retain, true);
  const live = nextMessages(c, 1);
  await b.api('POST', '/api/publish', { body: { topic: 'sob/live', payload: 'new', qos: 1 } });
  const [l] = await live;
  assert.equal(l.payload, 'new');
  assert.equal(l.packet.qos, 1);
  const rt = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'sob' } });
  assert.deepEqual(rt.json.data.subscriptions.map((s: { topic: string }) => s.topic), ['sob/+']);
  const un = await b.api('POST', '/mqtt/connection/unsubscribe', { body: { clientId: 'sob', topic: 'sob/+' } });
  assert.equal(un.status, 200);
  // A publisher sends on the unsubscribed topic, then a marker the client subscribed to itself:
  // the marker comes after anything the first message would have produced.
  await c.subscribeAsync('sob-marker', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'sob-pub' });
  const next = nextMessages(c, 1);
  await pub.publishAsync('sob/live', 'again', { qos: 1 });
  await pub.publishAsync('sob-marker', 'marker', { qos: 1 });
  assert.equal((await next)[0].topic, 'sob-marker', 'nothing on sob/+ after the unsubscribe');
  await end(pub);
  assert.equal((await b.api('POST', '/mqtt/connection/unsubscribe', { body: { clientId: 'sob', topic: 'sob/+' } })).status, 404, 'no such subscription');
  await end(c);
  await b.api('POST', '/mqtt/retain/delete', { body: { topic: 'sob/r' } });
});

test('subscribe on behalf: 404 for an unknown client, 400 per bad field', async () => {
  assert.equal((await b.api('POST', '/mqtt/connection/subscribe', { body: { clientId: 'ghost', topic: 'a' } })).status, 404);
  const c = await connect(b.url, { clientId: 'sob-bad' });
  const cases: [unknown, string][] = [
    [{ topic: 'a' }, 'clientId'],
    [{ clientId: 'sob-bad' }, 'topic'],
    [{ clientId: 'sob-bad', topic: 'a/#/b' }, 'topic'],
    [{ clientId: 'sob-bad', topic: '$share/g' }, 'topic'],
    [{ clientId: 'sob-bad', topic: 'a', qos: 5 }, 'qos'],
    [{ clientId: 'sob-bad', topic: 'a', retainHandling: 3 }, 'retainHandling'],
    [{ clientId: 'sob-bad', topic: 'a', noLocal: 'yes' }, 'noLocal'],
  ];
  for (const [body, field] of cases) {
    const r = await b.api('POST', '/mqtt/connection/subscribe', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field, JSON.stringify(body));
  }
  const rt = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'sob-bad' } });
  assert.deepEqual(rt.json.data.subscriptions, [], 'nothing was subscribed');
  await end(c);
});

test('proxy subscriptions: applied to clients connected now and to new ones; status counts; delete stops new ones', async () => {
  const early = await connect(b.url, { clientId: 'px-early' });
  const add = await b.api('POST', '/mqtt/proxy/subscribe/add', { body: { topic: 'px/+/cmd', qos: 1 } });
  assert.equal(add.status, 200);
  assert.equal(add.json.data.topic, 'px/+/cmd');
  assert.equal((await b.api('POST', '/mqtt/proxy/subscribe/add', { body: { topic: 'px/+/cmd', qos: 0 } })).status, 409);
  const late = await connect(b.url, { clientId: 'px-late' });
  // The subscription is added just after CONNACK: wait until the runtime shows it.
  await waitFor(async () => (await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'px-late' } })).json.data.subscriptions.length === 1);
  const got = Promise.all([nextMessages(early, 1), nextMessages(late, 1)]);
  await b.api('POST', '/api/publish', { body: { topic: 'px/dev1/cmd', payload: 'reboot', qos: 1 } });
  for (const [m] of await got) {
    assert.equal(m.payload, 'reboot');
    assert.equal(m.packet.qos, 1);
  }
  const status = await b.api('POST', '/mqtt/proxy/subscribe/status', { body: {} });
  assert.equal(status.status, 200);
  const s = status.json.data.find((x: { topic: string }) => x.topic === 'px/+/cmd');
  assert.equal(s.qos, 1);
  assert.ok(s.applied >= 2, `applied ${s.applied}`);
  assert.ok(s.sessions >= 2, `sessions ${s.sessions}`);
  assert.equal((await b.api('POST', '/mqtt/proxy/subscribe/delete', { body: { topic: 'px/+/cmd' } })).status, 200);
  assert.equal((await b.api('POST', '/mqtt/proxy/subscribe/delete', { body: { topic: 'px/+/cmd' } })).status, 404);
  const after = await connect(b.url, { clientId: 'px-after' });
  // Proxy subscriptions are added in the step that sends CONNACK: once the client's own SUBSCRIBE
  // is answered, any would be there.
  await after.subscribeAsync('px-after/marker', { qos: 0 });
  const rt = await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'px-after' } });
  assert.deepEqual(rt.json.data.subscriptions.map((s: { topic: string }) => s.topic), ['px-after/marker']);
  const status2 = await b.api('POST', '/mqtt/proxy/subscribe/status', { body: {} });
  assert.deepEqual(status2.json.data, []);
  const bad = await b.api('POST', '/mqtt/proxy/subscribe/add', { body: { topic: '#/x' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'topic');
  await end(early, late, after);
});

test('local subscription: the broker collects matching messages, readable over the API; unsubscribe removes it', async () => {
  const add = await b.api('POST', '/api/local/subscribe', { body: { topic: 'loc/#', qos: 1 } });
  assert.equal(add.status, 200);
  assert.equal((await b.api('POST', '/api/local/subscribe', { body: { topic: 'loc/#' } })).status, 409);
  const pub = await connect(b.url, { clientId: 'loc-pub' });
  await pub.publishAsync('loc/a', 'one', { qos: 1 });
  await pub.publishAsync('loc/b', Buffer.from([0xff, 0x00]), { qos: 0 });
  await pub.publishAsync('other/c', 'not matched', { qos: 1 });
  let msgs: { topic: string; payload: string; payloadEncoding?: string; qos: number }[] = [];
  await waitFor(async () => {
    const r = await b.api('GET', `/api/local/messages?topic=${encodeURIComponent('loc/#')}`, { as: 'viewer' });
    msgs = r.json.data.messages;
    return msgs.length === 2;
  });
  assert.deepEqual(msgs.map((m) => [m.topic, m.payload, m.payloadEncoding, m.qos]), [['loc/a', 'one', undefined, 1], ['loc/b', Buffer.from([0xff, 0]).toString('base64'), 'base64', 0]]);
  const limited = await b.api('GET', `/api/local/messages?topic=${encodeURIComponent('loc/#')}&limit=1`);
  assert.deepEqual(limited.json.data.messages.map((m: { topic: string }) => m.topic), ['loc/b'], 'the newest');
  assert.equal(limited.json.data.received, 2);
  const list = await b.api('GET', '/api/local/subscriptions');
  assert.deepEqual(list.json.data.map((l: { topic: string }) => l.topic), ['loc/#']);
  // Not a client: the connection list does not show it.
  const conns = await b.api('POST', '/mqtt/connection', { body: { clientId: 'local' } });
  assert.equal(conns.json.total, 0);
  assert.equal((await b.api('GET', '/api/local/messages?topic=nope')).status, 404);
  assert.equal((await b.api('GET', '/api/local/messages')).json.field, 'topic');
  assert.equal((await b.api('GET', '/api/local/messages?topic=loc/%23&limit=0')).json.field, 'limit');
  assert.equal((await b.api('POST', '/api/local/unsubscribe', { body: { topic: 'loc/#' } })).status, 200);
  assert.equal((await b.api('POST', '/api/local/unsubscribe', { body: { topic: 'loc/#' } })).status, 404);
  assert.equal((await b.api('GET', `/api/local/messages?topic=${encodeURIComponent('loc/#')}`)).status, 404);
  assert.equal((await b.api('POST', '/api/local/subscribe', { body: { topic: 'a/#/b' } })).json.field, 'topic');
  await end(pub);
});

test('proxy and local subscriptions are kept in the store and come back after a restart', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-subs-'));
  const first = await startAdminBroker({ dataDir });
  assert.equal((await first.api('POST', '/mqtt/proxy/subscribe/add', { body: { topic: 'keep/proxy', qos: 1 } })).status, 200);
  assert.equal((await first.api('POST', '/api/local/subscribe', { body: { topic: 'keep/local' } })).status, 200);
  await first.stop();
  const second = await startAdminBroker({ dataDir });
  try {
    const status = await second.api('POST', '/mqtt/proxy/subscribe/status', { body: {} });
    assert.deepEqual(status.json.data.map((p: { topic: string; qos: number }) => [p.topic, p.qos]), [['keep/proxy', 1]]);
    const c = await connect(second.url, { clientId: 'keep-c' });
    await waitFor(async () => (await second.api('POST', '/mqtt/connection/runtime', { body: { clientId: 'keep-c' } })).json.data.subscriptions.length === 1);
    const got = nextMessages(c, 1);
    await second.api('POST', '/api/publish', { body: { topic: 'keep/proxy', payload: 'p' } });
    assert.equal((await got)[0].payload, 'p');
    await second.api('POST', '/api/publish', { body: { topic: 'keep/local', payload: 'l' } });
    await waitFor(async () => (await second.api('GET', '/api/local/messages?topic=keep/local')).json.data?.messages.length === 1);
    await end(c);
  } finally {
    await second.stop();
  }
});

test('a worker that restarts gets the proxy list and its local subscriptions back', async () => {
  // Terminating a worker thread that holds a uWebSockets.js listener aborts Node: no WebSocket here.
  const b = await startAdminBroker({ mqtt: { ws: { enabled: false } } });
  try {
    assert.equal((await b.api('POST', '/mqtt/proxy/subscribe/add', { body: { topic: 'crash/proxy', qos: 0 } })).status, 200);
    const locals = ['crash/l1', 'crash/l2'];
    for (const topic of locals) assert.equal((await b.api('POST', '/api/local/subscribe', { body: { topic } })).status, 200);
    const list = await b.api('GET', '/api/local/subscriptions');
    const onWorker0 = list.json.data.find((l: { topic: string; worker: number }) => locals.includes(l.topic) && l.worker === 0);
    assert.ok(onWorker0, 'local subscriptions are spread over the workers');
    const dead = b.supervisor.workers[0]!;
    await dead.terminate();
    await waitFor(async () => b.supervisor.workers[0] !== dead && b.supervisor.runningWorkers().length === 2, { timeout: 10_000 });
    // Clients on the restarted worker (and the other) get the proxy subscription.
    const clients = await Promise.all([1, 2, 3, 4].map((i) => connect(b.url, { clientId: `crash-c${i}` })));
    for (const c of clients) {
      const id = c.options.clientId!;
      await waitFor(async () => (await b.api('POST', '/mqtt/connection/runtime', { body: { clientId: id } })).json.data?.subscriptions.length === 1);
    }
    // The local subscription of worker 0 collects again.
    await waitFor(async () => {
      await b.api('POST', '/api/publish', { body: { topic: onWorker0.topic, payload: 'after restart' } });
      const r = await b.api('GET', `/api/local/messages?topic=${encodeURIComponent(onWorker0.topic)}`);
      return r.status === 200 && r.json.data.messages.length > 0;
    }, { timeout: 5000 });
    await end(...clients);
  } finally {
    await b.stop();
  }
});
