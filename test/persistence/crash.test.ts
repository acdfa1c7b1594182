// Nothing acknowledged is lost: a persistent subscriber is offline, a publisher sends QoS 1
// messages, the broker is killed with SIGKILL in the middle, restarted on the same data, and the
// subscriber gets every message the broker had acknowledged, in the publisher's order.
// needs: broker, postgresql
import { test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { connect } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { startProcessBroker, freePort, tempDir } from '../helpers/process-broker.ts';
import { pgSchema } from '../store/databases.ts';

async function crashAndRecover(store: Record<string, unknown>): Promise<void> {
  const port = await freePort();
  const config = {
    workers: 2,
    dataDir: tempDir(),
    log: { level: 'info' }, // 'spindle started' is how the test knows it listens
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    sys: { enabled: false },
    store,
  };
  let broker = await startProcessBroker(config);
  try {
    // The persistent subscriber subscribes, then goes away.
    const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'crash-sub', clean: false, properties: { sessionExpiryInterval: 3600 } });
    await sub.subscribeAsync('crash/#', { qos: 1 });
    await sub.endAsync();

    // The publisher keeps 20 QoS 1 messages in flight; the broker dies after 300 are acknowledged.
    const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'crash-pub' });
    pub.on('error', () => {}); // the broker is killed under it: errors are expected from here on
    const acked: number[] = [];
    let seq = 0;
    let killed = false;
    await new Promise<void>((resolve) => {
      const sendNext = (): void => {
        if (killed) return;
        const n = seq++;
        pub.publish(`crash/${n % 3}`, String(n), { qos: 1 }, (err) => {
          if (err || killed) return;
          acked.push(n);
          if (acked.length === 300) {
            killed = true;
            void broker.kill('SIGKILL').then(() => resolve());
            return;
          }
          sendNext();
        });
      };
      for (let i = 0; i < 20; i++) sendNext();
    });
    pub.end(true);
    assert.ok(acked.length >= 300);

    broker = await startProcessBroker(config);
    const again = mqtt.connect(broker.url, { protocolVersion: 5, clientId: 'crash-sub', clean: false, properties: { sessionExpiryInterval: 3600 }, reconnectPeriod: 0 });
    const received: number[] = [];
    again.on('message', (_t, payload) => received.push(Number(payload.toString())));
    const present = await new Promise<boolean>((resolve, reject) => {
      again.once('connect', (connack) => resolve(connack.sessionPresent));
      again.once('error', reject);
    });
    assert.ok(present, 'the persistent session survived the crash');
    // Collect until every acknowledged message is there (unacknowledged ones may follow or not).
    const missingNow = () => {
      const got = new Set(received);
      return acked.filter((n) => !got.has(n));
    };
    await waitFor(() => missingNow().length === 0, { timeout: 30_000, interval: 50, message: 'every acknowledged message redelivered' })
      .catch((err: Error) => assert.fail(`${err.message}: missing ${JSON.stringify(missingNow())} (received ${received.length})`));
    await again.endAsync();
    const missing = missingNow();
    assert.deepEqual(missing, [], `acknowledged but not delivered (received ${received.length})`);
    // In order per publisher: first deliveries ascend (QoS 1 may repeat one, never reorder).
    const firsts = received.filter((n, i) => received.indexOf(n) === i);
    for (let i = 1; i < firsts.length; i++) assert.ok(firsts[i] > firsts[i - 1], `out of order at ${i}: ${firsts[i - 1]} then ${firsts[i]}`);
  } finally {
    await broker.kill('SIGKILL');
  }
}

test('LOCAL: every acknowledged QoS 1 message survives SIGKILL, in order', async () => {
  await crashAndRecover({ storeType: 'LOCAL' });
});

test('POSTGRESQL: every acknowledged QoS 1 message survives SIGKILL, in order', async () => {
  // Its own schema, so reruns start empty.
  const schema = await pgSchema('crash');
  try {
    await crashAndRecover(schema.store);
  } finally {
    await schema.drop();
  }
});
