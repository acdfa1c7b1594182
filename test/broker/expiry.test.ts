// Message Expiry Interval (MQTT 5.0 section 3.3.2.3.3): an expired message is not delivered,
// queued or retained; a forwarded one carries the time it has left.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

/** Connects and collects from the first packet on: queued messages follow CONNACK at once. */
async function connectCollecting(options: IClientOptions, count: number): Promise<{ client: MqttClient; got: Promise<{ topic: string; payload: string; packet: mqtt.IPublishPacket }[]> }> {
  const client = mqtt.connect(broker.url, { reconnectPeriod: 0, ...options, manualConnect: true });
  const got = nextMessages(client, count);
  client.connect();
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  return { client, got };
}

/** "Nothing more arrives" on `topic`: `pub` publishes a marker there, which must be the next
 * message `sub` gets (anything queued or retained for it was sent before). */
async function markerNext(pub: MqttClient, sub: MqttClient, topic: string): Promise<void> {
  const next = nextMessages(sub, 1);
  await pub.publishAsync(topic, 'marker', { qos: 1 });
  const [m] = await next;
  assert.deepEqual([m.topic, m.payload, m.packet.retain], [topic, 'marker', false], 'nothing before the marker');
}

const persistent = (clientId: string) => ({ protocolVersion: 5 as const, clientId, clean: false, properties: { sessionExpiryInterval: 60 } });

test('a message queued for an offline session expires and is not delivered; one still valid is [MQTT-3.3.2-5]', async () => {
  let sub = await connect(broker.url, persistent('ex-queue-sub'));
  await sub.subscribeAsync('exp/queue', { qos: 1 });
  await sub.endAsync();
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'ex-queue-pub' });
  await pub.publishAsync('exp/queue', 'short', { qos: 1, properties: { messageExpiryInterval: 1 } });
  await pub.publishAsync('exp/queue', 'long', { qos: 1, properties: { messageExpiryInterval: 60 } });
  await pub.publishAsync('exp/queue', 'forever', { qos: 1 });
  // Elapsed time is what is tested: the 1 s Message Expiry Interval must pass.
  await sleep(1300);
  const droppedBefore = (await broker.supervisor.collectStats()).reduce((a, s) => a + s.dropped.expired, 0);
  const again = await connectCollecting(persistent('ex-queue-sub'), 2);
  sub = again.client;
  const got = await again.got;
  assert.deepEqual(got.map((g) => g.payload), ['long', 'forever']);
  await markerNext(pub, sub, 'exp/queue');
  const droppedAfter = (await broker.supervisor.collectStats()).reduce((a, s) => a + s.dropped.expired, 0);
  assert.equal(droppedAfter - droppedBefore, 1);
  await end(sub, pub);
});

test('a forwarded message carries the Message Expiry Interval it has left (lower after waiting in a queue) [MQTT-3.3.2-6]', async () => {
  let sub = await connect(broker.url, persistent('ex-rem-sub'));
  await sub.subscribeAsync('exp/rem', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'ex-rem-pub' });
  // Delivered at once: the whole interval (nothing has elapsed yet, rounded up).
  const live = nextMessages(sub, 1);
  await pub.publishAsync('exp/rem', 'now', { qos: 1, properties: { messageExpiryInterval: 30 } });
  assert.equal((await live)[0].packet.properties?.messageExpiryInterval, 30);
  // Without an interval, none is added.
  const plain = nextMessages(sub, 1);
  await pub.publishAsync('exp/rem', 'plain', { qos: 1 });
  assert.equal((await plain)[0].packet.properties?.messageExpiryInterval, undefined);
  await sub.endAsync();
  await pub.publishAsync('exp/rem', 'later', { qos: 1, properties: { messageExpiryInterval: 30 } });
  // Elapsed time is what is tested: the interval left must show the 2 s spent in the queue.
  await sleep(2100);
  const again = await connectCollecting(persistent('ex-rem-sub'), 1);
  sub = again.client;
  const [m] = await again.got;
  assert.equal(m.payload, 'later');
  const left = m.packet.properties?.messageExpiryInterval;
  assert.ok(left !== undefined && left <= 28 && left >= 25, `remaining interval ${left}`);
  await end(sub, pub);
});

test('a retained message expires: a subscriber after its expiry gets nothing [MQTT-3.3.2-5]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'ex-ret-pub' });
  await pub.publishAsync('exp/ret/short', 'gone', { qos: 1, retain: true, properties: { messageExpiryInterval: 1 } });
  await pub.publishAsync('exp/ret/long', 'kept', { qos: 1, retain: true, properties: { messageExpiryInterval: 30 } });
  // Elapsed time is what is tested: the 1 s expiry must pass (and show in the interval left).
  await sleep(2100);
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'ex-ret-sub' });
  const w = nextMessages(sub, 1);
  await sub.subscribeAsync('exp/ret/+', { qos: 1 });
  const [m] = await w;
  assert.equal(m.topic, 'exp/ret/long');
  assert.equal(m.packet.retain, true);
  const left = m.packet.properties?.messageExpiryInterval;
  assert.ok(left !== undefined && left <= 28 && left >= 25, `retained message has ${left} s left`);
  await markerNext(pub, sub, 'exp/ret/short');
  // A v3.1.1 subscriber is not sent the expired retained message either.
  const v4 = await connect(broker.url, { protocolVersion: 4, clientId: 'ex-ret-v4' });
  const w4 = nextMessages(v4, 1);
  await v4.subscribeAsync('exp/ret/+', { qos: 1 });
  assert.equal((await w4)[0].topic, 'exp/ret/long');
  await markerNext(pub, v4, 'exp/ret/short');
  await end(pub, sub, v4);
});
