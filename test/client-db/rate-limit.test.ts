// A built-in client's own rate limit, or its role's, over its endpoint's: a client with none
// publishes at its endpoint's rate; one whose role has a slower limit is held to it; one with its
// own limit beats its role's. Every message arrives, in order; the throttles are counted. A burst
// without its rate is refused naming the field.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ workers: 2, auth: { allowAnonymous: true }, mqtt: { rateLimit: { messagesPerSecond: 1000 } } });
  const role = await b.api('POST', '/api/client-db/roles', { body: { name: 'slow', rules: [{ action: 'all', permission: 'allow', topic: 'rl/#' }], rateLimit: { messagesPerSecond: 10, messagesBurst: 1 } } });
  assert.equal(role.status, 200, role.text);
  const free = await b.api('POST', '/api/client-db/roles', { body: { name: 'free', rules: [{ action: 'all', permission: 'allow', topic: 'rl/#' }] } });
  assert.equal(free.status, 200, free.text);
  for (const [username, roles, rateLimit] of [
    ['by-role', [{ name: 'slow' }], undefined],
    ['own', [{ name: 'slow' }], { messagesPerSecond: 5000 }],
    ['endpoint', [{ name: 'free' }], undefined],
  ] as const) {
    const r = await b.api('POST', '/api/client-db/clients', { body: { username, password: `${username}-pw`, roles, ...(rateLimit ? { rateLimit } : {}) } });
    assert.equal(r.status, 200, r.text);
  }
});
after(async () => { await b?.stop(); });

/** ms for `count` QoS 1 messages from `pub` to reach a subscriber, whole and in order. */
async function burst(pub: MqttClient, topic: string, count: number): Promise<number> {
  const sub = await connect(b.url, { protocolVersion: 5, username: 'endpoint', password: 'endpoint-pw' });
  await sub.subscribeAsync(topic, { qos: 1 });
  const got = nextMessages(sub, count);
  const start = Date.now();
  const acks = Array.from({ length: count }, (_, i) => pub.publishAsync(topic, `m${i}`, { qos: 1 }));
  const messages = await got;
  const elapsed = Date.now() - start;
  await Promise.all(acks);
  assert.deepEqual(messages.map((m) => m.payload), Array.from({ length: count }, (_, i) => `m${i}`));
  await end(sub);
  return elapsed;
}

async function throttled(): Promise<number> {
  const r = await b.api('GET', '/api/rate-limits');
  return r.json.data.endpoints.find((e: { id: string }) => e.id === 'tcp').throttled.messages;
}

test("a role's rate limit holds its clients; a client's own limit beats it", async () => {
  const before = await throttled();
  const slow = await connect(b.url, { protocolVersion: 5, username: 'by-role', password: 'by-role-pw' });
  // 21 messages, burst 1, 10 per second: the last no sooner than 2 s.
  const held = await burst(slow, 'rl/role', 21);
  assert.ok(held >= 1950, `21 messages took ${held} ms; the role's bucket allows no less than 2000`);
  assert.ok(await throttled() - before >= 10, 'the throttles are counted');
  const own = await connect(b.url, { protocolVersion: 5, username: 'own', password: 'own-pw' });
  const fast = await burst(own, 'rl/own', 21);
  assert.ok(fast < held / 2, `the client's own limit (5000/s) beats its role's: ${fast} ms against ${held} ms`);
  await end(slow, own);
});

test('a burst without its rate is refused naming the field', async () => {
  const r = await b.api('PUT', '/api/client-db/clients/own', { body: { rateLimit: { messagesBurst: 5 } } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /rateLimit\.messagesBurst/);
  const role = await b.api('PUT', '/api/client-db/roles/slow', { body: { rateLimit: null } });
  assert.equal(role.status, 200, role.text);
  assert.equal(role.json.data?.rateLimit ?? role.json.rateLimit, undefined, 'null takes the limit away');
});
