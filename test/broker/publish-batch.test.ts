// Supervisor.publishBatch: the path inbound bridges publish through. Messages arrive in order to
// subscribers on every worker, a persistent session offline gets its QoS 1 copies from the store,
// and retained messages are kept; the answer counts the subscriptions each went to.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { startBroker, connect, end, nextMessages, type TestBroker } from '../helpers/broker.ts';

let b: TestBroker;
before(async () => {
  b = await startBroker({ store: { storeType: 'LOCAL' } });
});
after(() => b.stop());

const text = (s: string) => new Uint8Array(Buffer.from(s));

test('a batch is delivered in order, counted per message, and QoS 1 reaches an offline persistent session', async () => {
  const live = await connect(b.url, { clientId: 'batch-live', protocolVersion: 5 });
  await live.subscribeAsync('batch/#', { qos: 1 });
  const durable = await connect(b.url, { clientId: 'batch-durable', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 600 } });
  await durable.subscribeAsync('batch/q1', { qos: 1 });
  await end(durable);

  const got = nextMessages(live, 3);
  const matched = await b.supervisor.publishBatch([
    { topic: 'batch/a', payload: text('one'), qos: 0, retain: false, expiresAt: 0, props: null },
    { topic: 'batch/q1', payload: text('two'), qos: 1, retain: false, expiresAt: 0, props: null },
    { topic: 'batch/r', payload: text('three'), qos: 1, retain: true, expiresAt: 0, props: null },
  ]);
  assert.deepEqual(matched, [1, 2, 1]);
  assert.deepEqual((await got).map((m) => [m.topic, m.payload]), [['batch/a', 'one'], ['batch/q1', 'two'], ['batch/r', 'three']]);
  await end(live);

  // Listening before CONNACK: the queued message may come right behind it.
  const back = mqtt.connect(b.url, { clientId: 'batch-durable', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 600 }, reconnectPeriod: 0 });
  const queued = nextMessages(back, 1);
  assert.deepEqual((await queued).map((m) => [m.topic, m.payload]), [['batch/q1', 'two']]);
  const later = await connect(b.url, { clientId: 'batch-later' });
  const retained = nextMessages(later, 1);
  await later.subscribeAsync('batch/r');
  assert.deepEqual((await retained).map((m) => [m.topic, m.payload, m.packet.retain]), [['batch/r', 'three', true]]);
  await end(back, later);
});
