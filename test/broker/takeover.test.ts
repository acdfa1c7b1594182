// Session takeover end to end: a second connection with a client id in use closes the first
// (v5: DISCONNECT 0x8E) and continues or discards the session, also when the two connections
// are on different workers (the session is handed over between threads).
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient, type RawPacket } from '../helpers/raw-client.ts';
import { workerUrls } from '../helpers/worker-ports.ts';

let broker: TestBroker;
/** A URL per worker thread (test hook): where the two connections of a pair land is chosen. */
let onWorker: string[];
before(async () => {
  broker = await startBroker();
  onWorker = await workerUrls(broker);
});
after(async () => { await broker.stop(); });

/** Connects to worker `worker`. */
async function connectOnWorker(protocolVersion: 4 | 5, clientId: string, clean: boolean, worker: number): Promise<{ client: RawClient; connack: RawPacket; worker: number }> {
  const props = protocolVersion === 5 && !clean ? { properties: { sessionExpiryInterval: 300 } } : {};
  const r = await RawClient.connect(onWorker[worker], { protocolVersion, clientId, clean, ...props });
  return { ...r, worker };
}

for (const protocolVersion of [4, 5] as const) {
  for (const clean of [false, true]) {
    test(`v${protocolVersion} ${clean ? 'clean' : 'persistent'}: a second connection with the same client id closes the first${protocolVersion === 5 ? ' with DISCONNECT 0x8E' : ''} and ${clean ? 'discards' : 'continues'} the session, on the same or another worker [MQTT-3.1.4-3] [MQTT-3.2.2-${clean ? 2 : 3}]`, async () => {
      const pub = await connect(broker.url, { protocolVersion, clientId: `to-pub-${protocolVersion}-${clean}` });
      // Every pair of workers, the same one and the other one, in both orders.
      for (const [i, [from, to]] of [[0, 0], [0, 1], [1, 0], [1, 1]].entries()) {
        const id = `to-${protocolVersion}-${clean}-${i}`;
        const topic = `to/${protocolVersion}/${clean}/${i}`;
        const first = await connectOnWorker(protocolVersion, id, false, from);
        first.client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] } as never);
        await first.client.next('suback');

        const second = await connectOnWorker(protocolVersion, id, clean, to);
        const ctx = `attempt ${i}, workers ${first.worker} -> ${second.worker}`;
        if (protocolVersion === 5) {
          const d = await first.client.next('disconnect');
          assert.equal(d.reasonCode, 0x8e, ctx);
        }
        await first.client.waitClosed();
        assert.equal(second.connack.sessionPresent, !clean, ctx);

        // The subscription survives with the session, or went with it.
        await pub.publishAsync(topic, `m${i}`, { qos: 1 });
        await pub.publishAsync(topic, `m${i}`, { qos: 1 });
        if (clean) {
          // Nobody subscribes any more: a marker on a topic the second connection subscribes now
          // arrives after anything the first publish produced, and must be the first to arrive.
          second.client.send({ cmd: 'subscribe', messageId: 2, subscriptions: [{ topic: `${topic}/marker`, qos: 1 }] } as never);
          await second.client.next('suback');
          await pub.publishAsync(`${topic}/marker`, 'marker', { qos: 1 });
          assert.equal((await second.client.next('publish')).topic, `${topic}/marker`, ctx);
        } else {
          assert.equal((await second.client.next('publish')).payload.toString(), `m${i}`, ctx);
        }
        second.client.destroy();
      }
      await end(pub);
    });
  }
}

test('v5: the taken-over session keeps its queued messages across workers [MQTT-3.1.4-3]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'to-q-pub' });
  for (const [i, [from, to]] of [[0, 1], [1, 0], [0, 0]].entries()) {
    const id = `to-q-${i}`;
    const first = await connectOnWorker(5, id, false, from);
    first.client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `toq/${i}`, qos: 1 }] } as never);
    await first.client.next('suback');
    await pub.publishAsync(`toq/${i}`, 'unacked', { qos: 1 });
    const p = await first.client.next('publish');
    // Not acknowledged; the second connection takes over and gets it again with DUP.
    const second = await connectOnWorker(5, id, false, to);
    const again = await second.client.next('publish');
    assert.deepEqual([again.dup, again.messageId, again.payload.toString()], [true, p.messageId, 'unacked'], `attempt ${i}, workers ${first.worker} -> ${second.worker}`);
    second.client.destroy();
    first.client.destroy();
  }
  await end(pub);
});

test('v5: one publisher\'s messages keep their order while its subscriber\'s session moves between workers [MQTT-4.6.0-6]', { timeout: 60_000 }, async () => {
  // The publisher sits on worker 1: what it routed just before the session moved there went to
  // worker 0 (and is forwarded back), what it routes just after is delivered on worker 1 at once.
  const pub = await connect(onWorker[1], { protocolVersion: 5, clientId: 'to-order-pub' });
  const id = 'to-order-sub';
  // Fewer than a session queues (1000): nothing is dropped while it moves.
  const total = 900;
  const arrived: number[] = []; // first deliveries (no DUP), in the order they arrived
  const seen = new Set<number>();
  const first = await connectOnWorker(5, id, false, 1);
  first.client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'to-order/m', qos: 1 }] } as never);
  await first.client.next('suback');
  first.client.destroy();
  let publishing = true;
  const published = (async () => {
    const pending: Promise<unknown>[] = [];
    for (let n = 0; n < total; n++) {
      pending.push(pub.publishAsync('to-order/m', String(n), { qos: 1 }));
      if (n % 5 === 4) await new Promise((r) => setTimeout(r, 5)); // pacing, not a wait: the publishes go on while the session moves
    }
    await Promise.all(pending);
    publishing = false;
  })();
  for (let i = 0; publishing || seen.size < total; i++) {
    const { client } = await connectOnWorker(5, id, false, i % 2);
    const until = Date.now() + 10;
    for (;;) {
      const left = until - Date.now();
      const p = left > 0 ? await client.next('publish', left).catch(() => null) : null;
      if (!p) break;
      const n = Number(p.payload.toString());
      if (!p.dup) arrived.push(n);
      seen.add(n);
      client.send({ cmd: 'puback', messageId: p.messageId } as never);
    }
    client.destroy();
    assert.ok(i < 2000, `all ${total} messages within 2000 connections (got ${seen.size})`);
  }
  await published;
  const outOfOrder = arrived.filter((n, i) => i > 0 && n <= arrived[i - 1]);
  assert.deepEqual(outOfOrder, [], `first deliveries out of order: ${outOfOrder.slice(0, 5).join(', ')}`);
  assert.equal(seen.size, total);
  await end(pub);
});
