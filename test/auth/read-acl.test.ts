// End to end: the read side of the ACL (src/auth/acl-scope.ts, Outbox). A wildcard subscription
// that a deny rule intersects is granted, and what it could receive from the denied part is not
// delivered: with auth.acl rules, a Mosquitto ACL file, an HTTP ACL policy and a JWT-like grant
// list, for plain, single-level and shared subscriptions, v5 and v3.1.1, live and retained
// messages, and a persistent session's queue. A subscription the ACL denies entirely is refused.
// needs: broker
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { startAdminBroker } from '../helpers/admin.ts';
import { endpoint, json } from '../policies/helpers.ts';

const brokers: TestBroker[] = [];
after(async () => {
  for (const b of brokers) await b.stop();
});

/** Topics `client` receives until `marker` arrives (in order; QoS 1 keeps the publisher's order). */
function receivedUntil(client: MqttClient, marker: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const got: string[] = [];
    const timer = setTimeout(() => reject(new Error(`no ${marker}; got ${JSON.stringify(got)}`)), 10_000);
    client.on('message', function onMessage(topic) {
      if (topic === marker) {
        clearTimeout(timer);
        client.off('message', onMessage);
        resolve(got);
      } else got.push(topic);
    });
  });
}

/** The SUBACK's codes for `filters` (mqtt.js rejects a SUBACK with a failure code). */
function subackCodes(client: MqttClient, filters: string[]): Promise<number[]> {
  return new Promise((resolve) => {
    client.on('packetreceive', function onPacket(packet) {
      if (packet.cmd !== 'suback') return;
      client.off('packetreceive', onPacket);
      resolve((packet as unknown as { granted: number[] }).granted);
    });
    client.subscribe(filters, { qos: 1 }, () => undefined);
  });
}

const RULES = {
  auth: {
    allowAnonymous: true,
    aclDefault: 'deny',
    acl: [
      { permission: 'deny', action: 'subscribe', topic: 'secret/#', username: 'u' },
      { permission: 'allow', action: 'pubsub', topic: '#' },
    ],
  },
};

for (const protocolVersion of [5, 4] as const) {
  test(`v${protocolVersion} auth.acl: #, +/x and $share/g/# are granted; secret/x is not delivered through them; secret/# is refused`, async () => {
    const b = await startBroker(RULES);
    brokers.push(b);
    const pub = await connect(b.url, { clientId: 'p', username: 'p' });
    const subs: Record<string, MqttClient> = {};
    for (const filter of ['#', '+/x', '$share/g/#']) {
      const c = await connect(b.url, { protocolVersion, clientId: `u-${filter}`, username: 'u' });
      assert.deepEqual(await subackCodes(c, [filter]), [1], filter);
      subs[filter] = c;
    }
    const refused = await connect(b.url, { protocolVersion, clientId: 'u-secret', username: 'u' });
    assert.deepEqual(await subackCodes(refused, ['secret/#', 'secret/x']), protocolVersion === 5 ? [0x87, 0x87] : [0x80, 0x80]);
    // Another user reads secret/x through # (the deny is u's only).
    const other = await connect(b.url, { protocolVersion, clientId: 'v', username: 'v' });
    await other.subscribeAsync('#', { qos: 1 });

    const waits = Object.fromEntries(Object.entries(subs).map(([f, c]) => [f, receivedUntil(c, 'end/x')]));
    const otherGot = receivedUntil(other, 'end/x');
    for (const topic of ['secret/x', 'public/x', 'secret/y/x', 'end/x']) await pub.publishAsync(topic, topic, { qos: 1 });
    assert.deepEqual(await waits['#'], ['public/x']);
    assert.deepEqual(await waits['+/x'], ['public/x']);
    assert.deepEqual(await waits['$share/g/#'], ['public/x']);
    assert.deepEqual(await otherGot, ['secret/x', 'public/x', 'secret/y/x']);
    await end(pub, refused, other, ...Object.values(subs));
  });
}

test('retained messages sent on subscribe are checked the same way', async () => {
  const b = await startBroker(RULES);
  brokers.push(b);
  const pub = await connect(b.url, { clientId: 'p', username: 'p' });
  for (const topic of ['secret/r', 'public/r', 'secret/deep/r']) await pub.publishAsync(topic, topic, { qos: 1, retain: true });
  const u = await connect(b.url, { protocolVersion: 5, clientId: 'u', username: 'u' });
  const got = receivedUntil(u, 'end/r');
  await u.subscribeAsync('#', { qos: 1 });
  await pub.publishAsync('end/r', 'x', { qos: 1 });
  assert.deepEqual(await got, ['public/r']);
  await end(pub, u);
});

test('a persistent session: what was queued while it was away is checked when it is sent; marks are made again on reconnect', async () => {
  const b = await startBroker(RULES);
  brokers.push(b);
  const opts = { protocolVersion: 5 as const, clientId: 'u-persist', username: 'u', clean: false, properties: { sessionExpiryInterval: 600 } };
  const u = await connect(b.url, opts);
  await u.subscribeAsync('#', { qos: 1 });
  await end(u);
  const pub = await connect(b.url, { clientId: 'p', username: 'p' });
  for (const topic of ['secret/q', 'public/q', 'end/q']) await pub.publishAsync(topic, topic, { qos: 1 });
  // The queue is sent right after CONNACK: listen before connecting.
  const back = mqtt.connect(b.url, opts);
  const got = receivedUntil(back, 'end/q');
  assert.deepEqual(await got, ['public/q']);
  await end(back, pub);
});

test('a Mosquitto ACL file: # is granted and secret/x is not delivered through it', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-read-acl-'));
  const aclFile = path.join(dir, 'acl');
  writeFileSync(aclFile, ['user u', 'topic deny secret/#', 'topic readwrite #', 'user p', 'topic readwrite #', ''].join('\n'));
  const b = await startBroker({ auth: { allowAnonymous: true, aclFile } });
  brokers.push(b);
  const pub = await connect(b.url, { clientId: 'p', username: 'p' });
  const u = await connect(b.url, { protocolVersion: 5, clientId: 'u', username: 'u' });
  assert.deepEqual(await subackCodes(u, ['#', 'secret/#']), [1, 0x87]);
  const got = receivedUntil(u, 'end/x');
  for (const topic of ['secret/x', 'public/x', 'end/x']) await pub.publishAsync(topic, topic, { qos: 1 });
  assert.deepEqual(await got, ['public/x']);
  await end(pub, u);
});

test('an HTTP ACL policy: a wildcard it allows is checked per delivered topic, each asked once per connection', async () => {
  const asked: string[] = [];
  const service = await endpoint((r, res) => {
    const body = JSON.parse(r.body) as { action: string; topic: string; username: string };
    if (body.username !== 'u') return json(res, 200, { result: 'allow' });
    asked.push(`${body.action} ${body.topic}`);
    json(res, 200, { result: body.topic.startsWith('secret/') ? 'deny' : 'allow' });
  });
  const b = await startAdminBroker({ auth: { allowAnonymous: true } });
  brokers.push(b);
  const add = await b.api('POST', '/acl/add', { body: { name: 'http-acl', type: 'http', config: { url: `${service.url}/acl` } } });
  assert.equal(add.status, 200, add.text);
  const pub = await connect(b.url, { clientId: 'p', username: 'p' });
  const u = await connect(b.url, { protocolVersion: 5, clientId: 'u', username: 'u' });
  assert.deepEqual(await subackCodes(u, ['#', 'secret/#']), [1, 0x87]);
  const got = receivedUntil(u, 'end/x');
  for (const topic of ['secret/x', 'public/x', 'public/x', 'end/x']) await pub.publishAsync(topic, topic, { qos: 1 });
  assert.deepEqual(await got, ['public/x', 'public/x']);
  assert.deepEqual(asked, ['subscribe #', 'subscribe secret/#', 'subscribe secret/x', 'subscribe public/x', 'subscribe end/x'], 'public/x was asked once (cached)');
  await end(pub, u);
  await service.close();
});
