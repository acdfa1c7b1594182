// Outbox unit tests on the in-memory engine: a client that does not take what is written gets no
// more QoS 0 (dropped, counted as slow_consumer) and its QoS 1 waits in the session queue until the
// connection drains.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { startEngine } from '../helpers/engine.ts';

const e = startEngine();
after(() => e.close());

test('over the outbound limit: QoS 0 dropped and counted, QoS 1 queued, then drained in order', async () => {
  const sub = e.client();
  await sub.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 's', clean: true, keepalive: 60 });
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'o/#', qos: 1 }] });
  const pub = e.client();
  await pub.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'p', clean: true, keepalive: 60 });
  sub.writable = false;
  await pub.send(
    { cmd: 'publish', topic: 'o/0', payload: Buffer.from('zero'), qos: 0 },
    { cmd: 'publish', topic: 'o/1', payload: Buffer.from('one'), qos: 1, messageId: 1 },
    { cmd: 'publish', topic: 'o/2', payload: Buffer.from('two'), qos: 1, messageId: 2 },
  );
  const stats = e.workers[0].stats;
  assert.equal(stats.dropped.slowConsumer, 1);
  assert.equal(sub.packets('publish').length, 0);
  assert.equal(sub.session?.queue.length, 2);
  assert.ok(sub.congestedCount >= 1, 'the connection was told (slow-consumer timer)');
  sub.writable = true;
  e.workers[0].host.outbox.drain(sub.session!);
  assert.deepEqual(sub.packets('publish').map((p) => p.payload.toString()), ['one', 'two']);
});
