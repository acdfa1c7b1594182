// A control-platform application's per-client rate limit (its licence's clientRateLimit), end to
// end with mqtt.js: each client of the application is throttled past it (nothing lost, no faster
// than the bucket), the organization's licence gives it to applications without their own, a
// change applies at the next CONNECT, and a bad limit is refused naming its field.
// needs: broker
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt, { type MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker, type ApiResponse } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, end, nextMessages } from '../helpers/broker.ts';
import { WAIT_MS } from '../helpers/wait.ts';

let b: AdminBroker;
let token: string;

function v1(method: string, p: string, body?: unknown): Promise<ApiResponse> {
  return b.api(method, `/api/v1${p}`, { body, authorization: `Bearer ${token}`, headers: method === 'GET' ? {} : { 'content-type': 'application/json' } });
}

function ok(r: ApiResponse): any {
  assert.equal(r.status, 200, r.text);
  return r.json?.data;
}

function connectAs(username: string, password: string): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(b.url, { username, password, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: WAIT_MS });
    c.once('connect', () => resolve(c));
    c.once('error', (err) => { c.end(true); reject(err); });
  });
}

/** ms until `count` QoS 1 messages published at once by `pub` reached `sub`, all and in order. */
async function burst(pub: MqttClient, sub: MqttClient, topic: string, count: number): Promise<number> {
  const got = nextMessages(sub, count);
  const start = Date.now();
  for (let i = 0; i < count; i++) void pub.publishAsync(topic, String(i), { qos: 1 });
  const messages = await got;
  assert.deepEqual(messages.map((m) => m.payload), Array.from({ length: count }, (_, i) => String(i)));
  return Date.now() - start;
}

before(async () => {
  b = await startAdminBroker();
  const r = await b.api('POST', '/api/v1/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD }, as: 'none' });
  assert.equal(r.status, 200, r.text);
  token = r.json.accessToken;
});
after(async () => { await b?.stop(); });

test('a licence\'s clientRateLimit throttles each client of the application; the organization\'s applies to those without one', async () => {
  const org = ok(await v1('POST', '/organizations', { name: 'rl-org' }));
  const project = ok(await v1('POST', '/projects', { organizationId: org.id, name: 'p' }));
  const app = ok(await v1('POST', '/applications', { projectId: project.id, name: 'limited' }));
  const bad = await v1('POST', '/licenses', { applicationId: app.id, clientRateLimit: { messagesBurst: 2 } });
  assert.equal(bad.status, 400, bad.text);
  assert.match(bad.text, /clientRateLimit\.messagesBurst/);
  const licence = ok(await v1('POST', '/licenses', { applicationId: app.id, clientRateLimit: { messagesPerSecond: 10, messagesBurst: 2 } }));
  assert.deepEqual(licence.clientRateLimit, { messagesPerSecond: 10, messagesBurst: 2 });

  const topic = 'rl-org/p/limited/t';
  let sub = await connectAs(app.appKey, app.appSecret);
  let pub = await connectAs(app.appKey, app.appSecret);
  await sub.subscribeAsync(topic, { qos: 1 });
  // 12 messages, burst 2, 10 per second: no sooner than 1 s.
  const slow = await burst(pub, sub, topic, 12);
  assert.ok(slow >= 950, `12 messages in ${slow} ms; the bucket allows no less than 1000`);
  const rows = ok(await b.api('GET', '/api/rate-limits')).endpoints;
  assert.ok(rows.find((e: { id: string }) => e.id === 'tcp').throttled.messages >= 5, JSON.stringify(rows));
  await end(sub, pub);

  // Without its own, the application takes the organization's; a change applies at the next CONNECT.
  ok(await v1('PUT', `/licenses/${licence.id}`, { clientRateLimit: null }));
  ok(await v1('POST', '/licenses', { organizationId: org.id, clientRateLimit: { messagesPerSecond: 5000 } }));
  sub = await connectAs(app.appKey, app.appSecret);
  pub = await connectAs(app.appKey, app.appSecret);
  await sub.subscribeAsync(topic, { qos: 1 });
  const tcpRow = async () => ok(await b.api('GET', '/api/rate-limits')).endpoints.find((e: { id: string }) => e.id === 'tcp');
  const throttledBefore = (await tcpRow()).throttled.messages;
  await burst(pub, sub, topic, 12);
  const row = await tcpRow();
  assert.equal(row.throttled.messages, throttledBefore, 'not throttled at the organization\'s 5000/s');
  assert.equal(row.ownLimitClients, 2, 'both clients carry the organization licence\'s limit');
  await end(sub, pub);
});
