// Keep alive end to end: a silent client is closed after one and a half keep alive periods
// (v5: DISCONNECT 0x8D), PINGREQ keeps it open, and limits.maxKeepalive caps the client's keep
// alive (v5: Server Keep Alive in CONNACK).
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

let broker: TestBroker;
let capped: TestBroker;
before(async () => {
  broker = await startBroker();
  capped = await startBroker({ limits: { maxKeepalive: 1 } });
});
after(async () => { await Promise.all([broker.stop(), capped.stop()]); });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: a client that sends nothing is closed after 1.5 x keepalive${protocolVersion === 5 ? ' with DISCONNECT 0x8D' : ''} [MQTT-3.1.2-22]`, async () => {
    const { client, connack } = await RawClient.connect(broker.url, { protocolVersion, clientId: `ka-${protocolVersion}`, keepalive: 1 });
    assert.equal(connack.properties?.serverKeepAlive, undefined);
    const start = Date.now();
    if (protocolVersion === 5) {
      const d = await client.next('disconnect', 4000);
      assert.equal(d.reasonCode, 0x8d);
    }
    await client.waitClosed(4000);
    const elapsed = Date.now() - start;
    // Not before one and a half times the keepalive (some slack for timers), not much after.
    assert.ok(elapsed >= 1400 && elapsed < 2600, `closed after ${elapsed} ms`);
  });

  test(`v${protocolVersion}: PINGREQ within the keepalive keeps the connection open [MQTT-3.1.2-23] [MQTT-3.12.4-1]`, async () => {
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `ka-ping-${protocolVersion}`, keepalive: 1 });
    for (let i = 0; i < 4; i++) {
      // Elapsed time is what is tested: silent for most of the 1 s keepalive, then a PINGREQ.
      await sleep(700);
      client.send({ cmd: 'pingreq' });
      await client.next('pingresp');
    }
    assert.equal(client.closed, false);
    client.destroy();
  });

  test(`v${protocolVersion}: limits.maxKeepalive below the client's keepalive is enforced${protocolVersion === 5 ? ' and sent as Server Keep Alive' : ''} [MQTT-3.2.2-21] [MQTT-3.1.2-22]`, async () => {
    const { client, connack } = await RawClient.connect(capped.url, { protocolVersion, clientId: `ka-cap-${protocolVersion}`, keepalive: 60 });
    if (protocolVersion === 5) assert.equal(connack.properties?.serverKeepAlive, 1);
    const start = Date.now();
    if (protocolVersion === 5) {
      const d = await client.next('disconnect', 4000);
      assert.equal(d.reasonCode, 0x8d);
    }
    await client.waitClosed(4000);
    const elapsed = Date.now() - start;
    assert.ok(elapsed >= 1400 && elapsed < 2600, `closed after ${elapsed} ms`);
  });
}

test('v5: keepalive 0 with limits.maxKeepalive set gets Server Keep Alive and is enforced [MQTT-3.2.2-21]', async () => {
  const { client, connack } = await RawClient.connect(capped.url, { protocolVersion: 5, clientId: 'ka-zero', keepalive: 0 });
  assert.equal(connack.properties?.serverKeepAlive, 1);
  const d = await client.next('disconnect', 4000);
  assert.equal(d.reasonCode, 0x8d);
  await client.waitClosed();
});

test('v5: a keepalive under the cap is kept, without Server Keep Alive [MQTT-3.2.2-22]', async () => {
  const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'ka-under', keepalive: 30 });
  assert.equal(connack.properties?.serverKeepAlive, undefined);
  assert.equal((await client.collect(1700)).length, 0);
  assert.equal(client.closed, false);
  client.destroy();
});
