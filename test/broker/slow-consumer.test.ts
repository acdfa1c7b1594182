// Slow consumers: a subscriber that stops reading. What waits for it is bounded by
// limits.maxOutboundBytes (socket and WebSocket buffers both count); past it QoS 0 is dropped
// and counted as slow_consumer (not as sent), QoS 1 waits in the session queue, and a client that
// stays over the limit for limits.slowConsumerTimeout is closed.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';
import { waitFor } from '../helpers/wait.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ workers: 1, limits: { maxOutboundBytes: 262144, slowConsumerTimeout: 2 } }); });
after(async () => { await broker.stop(); });

async function stats() {
  const [s] = await broker.supervisor.collectStats();
  return s;
}


test('a QoS 0 subscriber that never reads: memory stays bounded, drops are counted as slow_consumer, and it is closed after slowConsumerTimeout', { timeout: 60_000 }, async () => {
  const { client: sub } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'never-reads' });
  sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'slow/#', qos: 0 }] } as never);
  await sub.next('suback');
  sub.socket.pause(); // from now on the client reads nothing
  const before = await stats();
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'fast-pub' });
  const payload = Buffer.alloc(4096, 0x61);
  const total = 10_000; // 40 MB for a client that takes none of it
  for (let i = 0; i < total; i++) {
    pub.publish('slow/x', payload, { qos: 0 });
    if (i % 500 === 499) await pub.publishAsync('slow/marker', 'm', { qos: 1 }); // the broker has taken what came before
  }
  await pub.publishAsync('slow/marker', 'm', { qos: 1 });
  const after = await stats();
  const sent = after.publishSent[0] - before.publishSent[0];
  const dropped = after.dropped.slowConsumer - before.dropped.slowConsumer;
  assert.ok(dropped > 0, 'drops counted');
  // Every QoS 0 delivery is either sent or dropped for the slow consumer (the markers are QoS 1).
  assert.equal(sent + dropped, total + Math.floor(total / 500) + 1 - (after.publishSent[1] - before.publishSent[1]));
  // The memory bound: what was written for the client fits in the limit plus what the kernel's
  // socket buffers took (loopback autotuning, a few MB); everything else was dropped, not buffered.
  // (RSS is not measured: the publisher shares this process.)
  assert.ok(sent * 4100 < 262144 + 16 * 1024 * 1024, `sent ${sent} messages to a client that reads nothing`);
  // Over the limit for slowConsumerTimeout: closed and counted.
  await waitFor(async () => (await stats()).slowConsumerDisconnects > before.slowConsumerDisconnects, { timeout: 10_000, message: 'the slow consumer is closed' });
  sub.destroy();
  await end(pub);
});

test('QoS 1 for a subscriber that does not read waits in its session queue and arrives once it reads again', { timeout: 60_000 }, async () => {
  const { client: sub } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'pauses', properties: { receiveMaximum: 65535 } } as never);
  sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'pause/#', qos: 1 }] } as never);
  await sub.next('suback');
  sub.socket.pause();
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'pause-pub' });
  const payload = Buffer.alloc(4096, 0x62);
  const n = 800; // 3.2 MB: more than the limit; within the session queue (1000)
  await Promise.all(Array.from({ length: n }, (_, i) => pub.publishAsync('pause/x', Buffer.concat([Buffer.from(`${i}:`), payload]), { qos: 1 })));
  // Reading again (within slowConsumerTimeout): everything arrives, in order.
  sub.socket.resume();
  const seen: number[] = [];
  while (seen.length < n) {
    const p = await sub.next('publish', 10_000);
    seen.push(Number(p.payload.toString().split(':')[0]));
    sub.send({ cmd: 'puback', messageId: p.messageId } as never);
  }
  assert.deepEqual(seen, Array.from({ length: n }, (_, i) => i));
  sub.destroy();
  await end(pub);
});
