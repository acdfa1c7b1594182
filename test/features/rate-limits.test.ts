// Per-client inbound rate limits, end to end with mqtt.js: a client publishing faster than its
// endpoint's limit is throttled (every message arrives, in order, no sooner than the token bucket
// allows, and the throttle is counted), over TCP (messages per second) and WebSocket (bytes per
// second); a user's own limit (auth.users[].rateLimit, as an authenticator gives it) beats the
// endpoint's; an endpoint's total limit, set at run time, holds across two clients; a bad limit
// is refused naming its field.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { hashPassword } from '../../src/auth/index.ts';
import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { freePort } from '../helpers/process-broker.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({
    workers: 2,
    mqtt: {
      rateLimit: { messagesPerSecond: 20, messagesBurst: 5, bytesPerSecond: 3000, bytesBurst: 1000 },
    },
    auth: {
      allowAnonymous: true,
      users: [
        { username: 'fast', password: await hashPassword('fast-pw', 'bcrypt', 4), rateLimit: { messagesPerSecond: 5000 } },
        { username: 'slower', password: await hashPassword('slower-pw', 'bcrypt', 4), rateLimit: { messagesPerSecond: 10, messagesBurst: 1 } },
      ],
    },
  });
});
after(async () => { await b?.stop(); });

/** Publishes `count` QoS 1 messages at once (mqtt.js writes them as fast as it can) and answers
 * the ms until the subscriber had them all, checking they came whole and in order. */
async function timedBurst(pub: MqttClient, sub: MqttClient, topic: string, count: number, payload: (i: number) => string): Promise<number> {
  await sub.subscribeAsync(topic, { qos: 1 });
  const got = nextMessages(sub, count);
  const start = Date.now();
  const acks = Array.from({ length: count }, (_, i) => pub.publishAsync(topic, payload(i), { qos: 1 }));
  const messages = await got;
  const elapsed = Date.now() - start;
  await Promise.all(acks);
  assert.deepEqual(messages.map((m) => m.payload), Array.from({ length: count }, (_, i) => payload(i)), 'every message arrives, in order');
  return elapsed;
}

async function throttledCount(endpoint: string, kind: string): Promise<number> {
  const r = await b.api('GET', '/api/rate-limits');
  assert.equal(r.status, 200, r.text);
  const row = r.json.data.endpoints.find((e: { id: string }) => e.id === endpoint);
  assert.ok(row, `endpoint ${endpoint} in ${r.text}`);
  return row.throttled[kind];
}

async function prometheus(): Promise<string> {
  const r = await b.api('GET', '/prometheus');
  assert.equal(r.status, 200);
  return r.text;
}

test('a TCP client over its endpoint\'s message rate is throttled: nothing lost, no faster than the bucket', async () => {
  const before = await throttledCount('tcp', 'messages');
  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    // 45 messages, burst 5, 20 per second: the last one no sooner than 40 / 20 = 2 s.
    const elapsed = await timedBurst(pub, sub, 'rl/tcp', 45, (i) => `m${i}`);
    assert.ok(elapsed >= 1950, `45 messages took ${elapsed} ms, the bucket allows no less than 2000`);
    assert.ok(elapsed < 15_000, `45 messages took ${elapsed} ms: throttled far below the limit`);
  } finally {
    await end(sub, pub);
  }
  const after = await throttledCount('tcp', 'messages');
  assert.ok(after - before >= 30, `the throttles are counted (${before} -> ${after})`);
  assert.match(await prometheus(), /spindle_rate_limit_throttled_total\{endpoint="tcp",kind="messages"\} [1-9]\d*/);
});

test('a WebSocket client over its endpoint\'s byte rate is throttled: nothing lost, no faster than the bucket', async () => {
  const before = await throttledCount('ws', 'bytes');
  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.wsUrl, { protocolVersion: 4 });
  try {
    // 20 PUBLISH packets of 300 bytes (2 + 2 + 5 topic + 2 id + 289 payload): 6000 bytes, burst
    // 1000, 3000 per second: no sooner than 5000 / 3000 = 1.67 s (messages alone: 0.75 s).
    const payload = (i: number) => `${String(i).padStart(3, '0')}${'x'.repeat(286)}`;
    const elapsed = await timedBurst(pub, sub, 'rl/ws', 20, payload);
    assert.ok(elapsed >= 1600, `20 packets of 300 bytes took ${elapsed} ms, the bucket allows no less than 1667`);
  } finally {
    await end(sub, pub);
  }
  assert.ok((await throttledCount('ws', 'bytes')) > before, 'the byte throttles are counted');
});

test('a user\'s own rate limit beats its endpoint\'s, both ways', async () => {
  const sub = await connect(b.url, { protocolVersion: 5 });
  const fast = await connect(b.url, { protocolVersion: 5, username: 'fast', password: 'fast-pw' });
  const slower = await connect(b.url, { protocolVersion: 4, username: 'slower', password: 'slower-pw' });
  try {
    const before = await throttledCount('tcp', 'messages');
    // The endpoint would take 4 s for 85; the user's 5000 per second takes them at once.
    const quick = await timedBurst(fast, sub, 'rl/fast', 85, (i) => `f${i}`);
    assert.ok(quick < 3500, `the user with 5000/s sent 85 in ${quick} ms`);
    assert.equal(await throttledCount('tcp', 'messages'), before, 'the fast user was never throttled');
    // The endpoint would take 11 at once (burst 5 and 20/s: 0.3 s); the user's 10/s, burst 1: 1 s.
    const slow = await timedBurst(slower, sub, 'rl/slower', 11, (i) => `s${i}`);
    assert.ok(slow >= 950, `the user with 10/s sent 11 in ${slow} ms, its bucket allows no less than 1000`);
  } finally {
    await end(sub, fast, slower);
  }
});

test('an endpoint\'s total limit, set at run time, holds across two clients; a bad limit names its field', async () => {
  const port = await freePort();
  const id = 'rl-total';
  let r = await b.api('POST', '/endpoints/add', { body: { id, port, enableAuth: false } });
  assert.equal(r.status, 200, r.text);
  r = await b.api('POST', '/endpoints/update', { body: { id, rateLimit: { messagesBurst: 5 } } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /rateLimit\.messagesBurst/);
  r = await b.api('POST', '/endpoints/update', { body: { id, totalRateLimit: { messagesPerSecond: 20, messagesBurst: 5 } } });
  assert.equal(r.status, 200, r.text);
  const url = `mqtt://127.0.0.1:${port}`;
  const sub = await connect(b.url, { protocolVersion: 5 });
  const a = await connect(url, { protocolVersion: 5 });
  const c = await connect(url, { protocolVersion: 5 });
  try {
    await sub.subscribeAsync('rl/total/#', { qos: 1 });
    const got = nextMessages(sub, 50);
    const start = Date.now();
    // 25 each, at once: 50 in all, burst 5, 20 per second together: no sooner than 2.25 s.
    const acks = [];
    for (let i = 0; i < 25; i++) acks.push(a.publishAsync('rl/total/a', `a${i}`, { qos: 1 }), c.publishAsync('rl/total/c', `c${i}`, { qos: 1 }));
    const messages = await got;
    const elapsed = Date.now() - start;
    await Promise.all(acks);
    for (const who of ['a', 'c']) {
      assert.deepEqual(messages.filter((m) => m.topic === `rl/total/${who}`).map((m) => m.payload), Array.from({ length: 25 }, (_, i) => `${who}${i}`));
    }
    assert.ok(elapsed >= 2200, `50 messages of two clients took ${elapsed} ms, the total allows no less than 2250`);
  } finally {
    await end(sub, a, c);
  }
  assert.ok((await throttledCount(id, 'total_messages')) > 0, 'the total\'s throttles are counted');
  r = await b.api('GET', '/api/rate-limits');
  const row = r.json.data.endpoints.find((e: { id: string }) => e.id === id);
  assert.deepEqual(row.totalRateLimit, { messagesPerSecond: 20, messagesBurst: 5 });
  assert.equal(row.rateLimit, null);
});

test('the overload debug switch is off unless overload.debugBusy is on', async () => {
  const r = await b.api('POST', '/api/overload/debug/busy', { body: { totalMs: 100, blockMs: 10 } });
  assert.equal(r.status, 403, r.text);
  assert.match(r.text, /overload\.debugBusy/);
});
