// QoS 1/2 across nodes keeps its guarantee: such messages cross through a JetStream stream, their
// publishers are acknowledged once NATS has stored them, and a node takes them from the stream
// when it can route them. So messages acknowledged for a node that was killed right then reach
// its persistent sessions when it is back; QoS 0 keeps to core NATS.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt, { type MqttClient } from 'mqtt';

import { startBroker, connect, end, nextMessages, type TestBroker } from '../helpers/broker.ts';
import { startProcessBroker, tempDir, type ProcessBroker } from '../helpers/process-broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
let a: TestBroker;

before(async () => {
  nats = await TestNats.start();
  a = await startBroker({ nodeName: 'qos-a', cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } });
});

after(async () => {
  await a?.stop();
  await nats?.stop();
});

/** Resolves once a message published on `pub` reaches `sub` (the interest crossed). Each probe
 * is numbered and only the last one sent ends the wait: the earlier ones, which arrive before it
 * (one publisher, in order), are then all in, and none comes later among the test's messages. */
async function interestKnown(pub: MqttClient, sub: MqttClient, topic: string): Promise<void> {
  let sent = 0;
  let arrived = -1;
  const onMessage = (t: string, payload: Buffer) => {
    if (t === topic) arrived = Math.max(arrived, Number(payload.toString().slice('probe-'.length)));
  };
  sub.on('message', onMessage);
  try {
    await waitFor(async () => {
      const n = sent++;
      pub.publish(topic, `probe-${n}`, { qos: 0 });
      await waitFor(() => arrived === n, { timeout: 500, interval: 5 }).catch(() => undefined);
      return arrived === n;
    }, { message: 'the interest known on the publisher\'s node' });
  } finally {
    sub.off('message', onMessage);
  }
}

test('QoS 1 and 2 cross through the stream, QoS 0 through core NATS', async () => {
  const b = await startBroker({ nodeName: 'qos-b', cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } });
  try {
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'qos-b' && n.status === 'running'), { message: 'a sees b' });
    const sub = await connect(b.url);
    await sub.subscribeAsync('s/#', { qos: 2 });
    const pub = await connect(a.url);
    await interestKnown(pub, sub, 's/probe');
    const stored = a.cluster!.qos.counters.storedFrames;
    const consumed = b.cluster!.qos.counters.consumedFrames;
    const got = nextMessages(sub, 6);
    for (const qos of [1, 2, 1, 2] as const) await pub.publishAsync('s/x', `q${qos}`, { qos });
    assert.ok(a.cluster!.qos.counters.storedFrames > stored, 'the acknowledged messages were stored by NATS first');
    const stillStored = a.cluster!.qos.counters.storedFrames;
    await pub.publishAsync('s/x', 'q0', { qos: 0 });
    await pub.publishAsync('s/x', 'q0', { qos: 0 });
    const messages = await got;
    assert.deepEqual(messages.map((m) => m.payload).sort(), ['q0', 'q0', 'q1', 'q1', 'q2', 'q2']);
    assert.deepEqual(messages.filter((m) => m.payload !== 'q0').map((m) => m.packet.qos), [1, 2, 1, 2]);
    assert.equal(a.cluster!.qos.counters.storedFrames, stillStored, 'QoS 0 is not stored');
    await waitFor(() => b.cluster!.qos.counters.consumedFrames >= consumed + 1, { message: 'b took the frames from the stream' });
    assert.equal(a.cluster!.qos.counters.storeFailures, 0);
    await end(sub, pub);
  } finally {
    await b.stop();
  }
});

test('messages acknowledged for a node killed right then reach its persistent session when it is back', async () => {
  const dataDir = tempDir();
  const config = {
    nodeName: 'qos-c', dataDir, workers: 2, log: { level: 'info' }, sys: { enabled: false }, admin: { enabled: false },
    mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { port: 0 } }, store: { storeType: 'LOCAL' },
    cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
  };
  let c: ProcessBroker = await startProcessBroker(config);
  try {
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'qos-c' && n.status === 'running'), { message: 'a sees c' });
    const persistent = { clientId: 'qos-dev', clean: false, protocolVersion: 5 as const, properties: { sessionExpiryInterval: 3600 } };
    const dev = await connect(c.url, persistent);
    await dev.subscribeAsync('plant/+/cmd', { qos: 1 });
    const pub = await connect(a.url);
    await interestKnown(pub, dev, 'plant/0/cmd');
    const lost = new Promise<void>((resolve) => dev.once('close', () => resolve()));
    await c.kill('SIGKILL');
    await lost;
    // Published before a notices c is gone (3 s): every PUBACK means NATS has the message.
    const stored = a.cluster!.qos.counters.storedFrames;
    for (let i = 0; i < 5; i++) await pub.publishAsync('plant/1/cmd', `cmd${i}`, { qos: 1 });
    assert.ok(a.cluster!.nodes().find((n) => n.id === 'qos-c')?.status === 'running', 'sent while c was still thought running');
    assert.ok(a.cluster!.qos.counters.storedFrames > stored);

    c = await startProcessBroker(config);
    const received: string[] = [];
    const back = mqtt.connect(c.url, { reconnectPeriod: 0, connectTimeout: 5000, ...persistent });
    back.on('message', (_t, payload) => received.push(payload.toString()));
    const ack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
      back.once('connect', resolve);
      back.once('error', reject);
    });
    assert.equal(ack.sessionPresent, true);
    await waitFor(() => received.length >= 5, { message: `the five messages (got ${JSON.stringify(received)})` });
    assert.deepEqual(received, ['cmd0', 'cmd1', 'cmd2', 'cmd3', 'cmd4']);
    dev.end(true);
    await end(back, pub);
  } finally {
    await c.kill('SIGTERM');
  }
});
