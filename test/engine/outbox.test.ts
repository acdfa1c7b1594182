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

test('overloaded with shedQos0: QoS 0 to a client with a large backlog is shed and counted; QoS 1, and clients keeping up, are not', async () => {
  const shedding = { on: false, shed: 0 };
  const s = startEngine({ shedding });
  try {
    const slow = s.client();
    await slow.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'slow', clean: true, keepalive: 60 });
    await slow.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'shed/#', qos: 1 }] });
    const quick = s.client();
    await quick.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'quick', clean: true, keepalive: 60 });
    await quick.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'shed/#', qos: 1 }] });
    const pub = s.client();
    await pub.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'shed-pub', clean: true, keepalive: 60 });
    slow.outboundBacklog = 100_000; // over SHED_BACKLOG, still writable
    await pub.send({ cmd: 'publish', topic: 'shed/a', payload: Buffer.from('before'), qos: 0 });
    shedding.on = true;
    await pub.send(
      { cmd: 'publish', topic: 'shed/b', payload: Buffer.from('shed'), qos: 0 },
      { cmd: 'publish', topic: 'shed/c', payload: Buffer.from('kept'), qos: 1, messageId: 1 },
    );
    assert.deepEqual(slow.packets('publish').map((p) => p.payload.toString()), ['before', 'kept']);
    assert.deepEqual(quick.packets('publish').map((p) => p.payload.toString()), ['before', 'shed', 'kept']);
    assert.equal(shedding.shed, 1);
    assert.equal(s.workers[0].stats.dropped.slowConsumer, 1);
  } finally {
    s.close();
  }
});
