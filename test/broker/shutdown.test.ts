// Graceful shutdown end to end: supervisor.shutdown() sends v5 clients DISCONNECT 0x8B (Server
// shutting down) and closes v3 clients' connections, on every worker.
// needs: broker
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

test('shutdown sends every v5 client DISCONNECT 0x8B and closes every v3.1.1 and v3.1 client [MQTT-4.13.2-1]', async () => {
  const broker = await startBroker();
  const v5 = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => RawClient.connect(broker.url, { protocolVersion: 5, clientId: `sd5-${i}` })));
  const v4 = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => RawClient.connect(broker.url, { protocolVersion: 4, clientId: `sd4-${i}` })));
  const v3 = await RawClient.connect(broker.url, { protocolVersion: 3, clientId: `sd3` });
  const perWorker = (await broker.supervisor.collectStats()).map((s) => s.connectionsCurrent);
  assert.equal(perWorker.reduce((a, b) => a + b, 0), 13);
  await broker.supervisor.shutdown();
  for (const { client } of v5) {
    const d = await client.next('disconnect', 2000);
    assert.equal(d.reasonCode, 0x8b);
    await client.waitClosed(2000);
  }
  for (const { client } of [...v4, v3]) {
    await client.waitClosed(2000);
    // v3 has no server DISCONNECT: nothing but the close.
    assert.deepEqual(client.packets, []);
  }
});

test('after shutdown the port accepts no more MQTT connections', async () => {
  const broker = await startBroker();
  await broker.supervisor.shutdown();
  let refused = false;
  try {
    const { client } = await RawClient.connect(broker.url, { protocolVersion: 4, clientId: 'late' });
    client.destroy();
  } catch {
    refused = true;
  }
  assert.ok(refused, 'a client connected after shutdown');
});
