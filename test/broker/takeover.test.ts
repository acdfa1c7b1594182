// Session takeover end to end: a second connection with a client id in use closes the first
// (v5: DISCONNECT 0x8E) and continues or discards the session, also when the two connections
// are on different workers (the session is handed over between threads).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient, type RawPacket } from '../helpers/raw-client.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function connectionsPerWorker(): Promise<number[]> {
  return (await broker.supervisor.collectStats()).map((s) => s.connectionsCurrent);
}

/** Connects and tells which worker accepted the connection: the one whose count went up, or,
 * when a takeover on the same worker closed the old connection before CONNACK, `sameAs`. */
async function connectOnWorker(protocolVersion: 4 | 5, clientId: string, clean: boolean, sameAs = -1): Promise<{ client: RawClient; connack: RawPacket; worker: number }> {
  const before = await connectionsPerWorker();
  const props = protocolVersion === 5 && !clean ? { properties: { sessionExpiryInterval: 300 } } : {};
  const r = await RawClient.connect(broker.url, { protocolVersion, clientId, clean, ...props });
  const after = await connectionsPerWorker();
  const up = after.findIndex((n, i) => n > before[i]);
  const worker = up === -1 ? sameAs : up;
  assert.notEqual(worker, -1, `no worker counted the connection of ${clientId}: ${before} -> ${after}`);
  return { ...r, worker };
}

for (const protocolVersion of [4, 5] as const) {
  for (const clean of [false, true]) {
    test(`v${protocolVersion} ${clean ? 'clean' : 'persistent'}: a second connection with the same client id closes the first${protocolVersion === 5 ? ' with DISCONNECT 0x8E' : ''} and ${clean ? 'discards' : 'continues'} the session, on the same or another worker [MQTT-3.1.4-3] [MQTT-3.2.2-${clean ? 2 : 3}]`, async () => {
      const pub = await connect(broker.url, { protocolVersion, clientId: `to-pub-${protocolVersion}-${clean}` });
      const seen = new Set<string>();
      for (let i = 0; i < 10; i++) {
        const id = `to-${protocolVersion}-${clean}-${i}`;
        const topic = `to/${protocolVersion}/${clean}/${i}`;
        const first = await connectOnWorker(protocolVersion, id, false);
        first.client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] } as never);
        await first.client.next('suback');

        const second = await connectOnWorker(protocolVersion, id, clean, first.worker);
        seen.add(first.worker === second.worker ? 'same' : 'cross');
        const ctx = `attempt ${i}, workers ${first.worker} -> ${second.worker}`;
        if (protocolVersion === 5) {
          const d = await first.client.next('disconnect');
          assert.equal(d.reasonCode, 0x8e, ctx);
        }
        await first.client.waitClosed();
        assert.equal(second.connack.sessionPresent, !clean, ctx);

        // The subscription survives with the session, or went with it.
        await pub.publishAsync(topic, `m${i}`, { qos: 1 });
        const got = await second.client.collect(200);
        const publishes = got.filter((p) => p.cmd === 'publish');
        if (clean) assert.equal(publishes.length, 0, ctx);
        else assert.deepEqual(publishes.map((p) => p.payload.toString()), [`m${i}`], ctx);
        second.client.destroy();
        await sleep(50);
      }
      // With two workers and SO_REUSEPORT, ten pairs land on different workers at least once.
      assert.ok(seen.has('cross'), `no pair crossed workers: ${[...seen]}`);
      await end(pub);
    });
  }
}

test('v5: the taken-over session keeps its queued messages across workers [MQTT-3.1.4-3]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'to-q-pub' });
  for (let i = 0; i < 10; i++) {
    const id = `to-q-${i}`;
    const first = await connectOnWorker(5, id, false);
    first.client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `toq/${i}`, qos: 1 }] } as never);
    await first.client.next('suback');
    await pub.publishAsync(`toq/${i}`, 'unacked', { qos: 1 });
    const p = await first.client.next('publish');
    // Not acknowledged; the second connection takes over and gets it again with DUP.
    const second = await connectOnWorker(5, id, false, first.worker);
    const again = await second.client.next('publish');
    assert.deepEqual([again.dup, again.messageId, again.payload.toString()], [true, p.messageId, 'unacked'], `attempt ${i}, workers ${first.worker} -> ${second.worker}`);
    second.client.destroy();
    first.client.destroy();
    // Let the closes reach the counters before the next attempt reads them.
    await sleep(50);
  }
  await end(pub);
});
