// Publish and subscribe end to end with mqtt.js, MQTT 3.1.1 and 5.0, at every QoS, with the
// publisher and subscriber on different workers.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

for (const protocolVersion of [4, 5] as const) {
  for (const qos of [0, 1, 2] as const) {
    test(`v${protocolVersion} QoS ${qos}: messages arrive in order, whichever worker each client is on [MQTT-4.6.0-5]`, async () => {
      // Several subscribers: the kernel spreads connections over both workers.
      const subs = await Promise.all([1, 2, 3, 4].map((i) => connect(broker.url, { protocolVersion, clientId: `sub-${protocolVersion}-${qos}-${i}` })));
      await Promise.all(subs.map((s) => s.subscribeAsync(`ps/${protocolVersion}/${qos}/#`, { qos })));
      const pub = await connect(broker.url, { protocolVersion, clientId: `pub-${protocolVersion}-${qos}` });
      const waits = subs.map((s) => nextMessages(s, 20));
      for (let i = 0; i < 20; i++) await pub.publishAsync(`ps/${protocolVersion}/${qos}/x`, `m${i}`, { qos });
      for (const got of await Promise.all(waits)) {
        assert.deepEqual(got.map((g) => g.payload), Array.from({ length: 20 }, (_, i) => `m${i}`));
        assert.ok(got.every((g) => g.packet.qos === qos));
      }
      await end(pub, ...subs);
    });
  }
}

test('v5 and v3.1.1 clients exchange messages; the lower QoS of message and subscription wins [MQTT-3.8.4-8]', async () => {
  const v5 = await connect(broker.url, { protocolVersion: 5, clientId: 'mix-v5' });
  const v4 = await connect(broker.url, { protocolVersion: 4, clientId: 'mix-v4' });
  await v5.subscribeAsync('mix/+', { qos: 1 });
  await v4.subscribeAsync('mix/+', { qos: 0 });
  const w5 = nextMessages(v5, 1);
  const w4 = nextMessages(v4, 1);
  await v4.publishAsync('mix/a', 'hello', { qos: 2 });
  const [[m5], [m4]] = await Promise.all([w5, w4]);
  assert.equal(m5.payload, 'hello');
  assert.equal(m5.packet.qos, 1);
  assert.equal(m4.packet.qos, 0);
  await end(v5, v4);
});

test('a WebSocket client (subprotocol mqtt) talks to a TCP client [MQTT-6.0.0-3]', async () => {
  const ws = await connect(broker.wsUrl, { protocolVersion: 5, clientId: 'ws-client' });
  const tcp = await connect(broker.url, { protocolVersion: 4, clientId: 'tcp-client' });
  await ws.subscribeAsync('ws/in', { qos: 1 });
  await tcp.subscribeAsync('ws/out', { qos: 1 });
  const toWs = nextMessages(ws, 1);
  const toTcp = nextMessages(tcp, 1);
  await tcp.publishAsync('ws/in', 'to ws', { qos: 1 });
  await ws.publishAsync('ws/out', 'to tcp', { qos: 1 });
  assert.equal((await toWs)[0].payload, 'to ws');
  assert.equal((await toTcp)[0].payload, 'to tcp');
  await end(ws, tcp);
});

test('a large message (1 MB) crosses workers intact', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'big-sub' });
  await sub.subscribeAsync('big', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'big-pub' });
  const payload = Buffer.alloc(1000 * 1000, 0x5a);
  const w = nextMessages(sub, 1);
  await pub.publishAsync('big', payload, { qos: 1 });
  assert.equal((await w)[0].packet.payload.length, payload.length);
  await end(sub, pub);
});
