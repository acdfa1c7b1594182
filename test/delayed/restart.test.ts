// Delayed messages survive a restart of a LOCAL process broker: accepted (PUBACK) before a
// SIGKILL, published when due after it starts again on the same data; one that fell due while
// the broker was down is published at once.
// needs: broker
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startProcessBroker, freePort, tempDir } from '../helpers/process-broker.ts';

test('LOCAL: delayed messages accepted before a SIGKILL are published when due after a restart', async () => {
  const port = await freePort();
  const config = {
    workers: 2,
    dataDir: tempDir(),
    log: { level: 'info' },
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    sys: { enabled: false },
    store: { storeType: 'LOCAL' },
  };
  let broker = await startProcessBroker(config);
  try {
    // A persistent session: what fires while it is away is kept for it.
    const subscriber = { protocolVersion: 5 as const, clientId: 'delayed-restart-sub', clean: false, properties: { sessionExpiryInterval: 3600 } };
    const first = await connect(broker.url, subscriber);
    await first.subscribeAsync('after/#', { qos: 1 });
    await end(first);
    const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'delayed-restart-pub' });
    await pub.publishAsync('$delayed/1/after/soon', 'soon', { qos: 1, properties: { userProperties: { from: 'before' } } });
    await pub.publishAsync('$delayed/6/after/later', 'later', { qos: 2 });
    await end(pub);
    await broker.kill('SIGKILL');
    const downAt = Date.now();

    broker = await startProcessBroker(config);
    const sub = await connect(broker.url, subscriber);
    const [soon, later] = await nextMessages(sub, 2);
    assert.equal(soon.topic, 'after/soon');
    assert.deepEqual({ ...soon.packet.properties?.userProperties }, { from: 'before' });
    assert.equal(later.topic, 'after/later');
    assert.equal(later.payload, 'later');
    assert.ok(Date.now() - downAt < 20_000);
    await end(sub);
  } finally {
    await broker.kill('SIGTERM');
  }
});
